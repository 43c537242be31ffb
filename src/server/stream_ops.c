/*
 * stream_ops.c — retained-stream opcodes of the protocol server (server
 * layer): STREAM_PUBLISH (10), CONSUMER_OPEN (12), CONSUMER_FETCH (13) and
 * ACK (15), each a one-shot operation on its stream.
 *
 * Reference: docs/protocol-v1.md §2.9 (validation order and texts: the
 * permission check before the stream lookup, consumer names validated and
 * scoped as soon as they are decoded, STORED only past the durability
 * boundary, fetch committed before any DELIVERY and each record re-checked
 * against the subscribe ACL), §3.5 (scoped names), §4 (the store).
 *
 * The store's _async calls return at once; when the operation still has
 * to reach the disk, its completion arrives on the stream's writer thread
 * and is pushed onto the server's completion list (srv->done_head), which
 * the loop drains, so fsync never runs on the loop.
 * Until then the stream record is SS_BUSY and keeps its permit; if the
 * client goes away meanwhile the completion only cleans up.
 *
 * A fetch is answered in portions: the store loads records up to
 * SRV_FETCH_BYTES of payload at a time (committing their delivery state
 * first, as every fetch does), the server writes them while the stream
 * has less than SRV_SEND_HIGH unacknowledged and the connection has room
 * in its budget (SRV_CONN_HIGH), and asks for the next portion once the
 * previous one is written and acknowledged below SRV_SEND_LOW. So a
 * client that asks for 256 records of 1 MiB and does not read pins about
 * two portions per stream, not 256 MiB read back from disk.
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext.h"
#include "codec/wire.h"
#include "common/dlist.h"
#include "rift/stream.h"
#include "subject/acl.h"
#include "subject/name.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char text_payload[] = "payload exceeds 1 MiB transport limit";
static const char text_unknown[] = "unknown stream";

/* ---- The table of served streams ---- */

static int cmp_stream(const void *a, const void *b) {
    const srv_stream_entry *x = a, *y = b;
    size_t n = RIFT_MIN(x->name_len, y->name_len);
    int c = memcmp(x->name, y->name, n);
    if (c != 0) {
        return c;
    }
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

int rift_srv_streams_copy(rift_server *srv, const rift_server_settings *s,
                          rift_error *err) {
    srv->stream_source = s->stream_source;
    srv->stream_admin = s->stream_admin;
    srv->stream_backend = s->stream_backend;
    if (s->stream_count == 0) {
        return 0;
    }
    srv->streams =
        rift_calloc(srv->mem, s->stream_count, sizeof(*srv->streams));
    if (srv->streams == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->stream_count; i++) {
        const rift_server_stream *in = &s->streams[i];
        if (in->name == NULL || in->stream == NULL ||
            !rift_name_valid(in->name, in->name_len)) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "invalid stream name");
        }
        srv_stream_entry *e = &srv->streams[srv->nstreams];
        e->name = rift_strndup(srv->mem, in->name, in->name_len);
        if (e->name == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        e->name_len = in->name_len;
        e->stream = in->stream;
        e->watch.srv = srv;
        e->watch.stream = in->stream;
        atomic_init(&e->watch.wake_posted, false);
        srv->nstreams++;
    }
    qsort(srv->streams, srv->nstreams, sizeof(*srv->streams), cmp_stream);
    for (size_t i = 1; i < srv->nstreams; i++) {
        if (cmp_stream(&srv->streams[i - 1], &srv->streams[i]) == 0) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "invalid stream name");
        }
    }
    return 0;
}

static srv_stream_entry *find_entry(const rift_server *srv, const char *name,
                                    size_t len) {
    srv_stream_entry key = {.name = (char *)(uintptr_t)name, .name_len = len};
    /* No table at all without configured streams (bsearch wants one). */
    return srv->nstreams == 0 ? NULL
                              : bsearch(&key, srv->streams, srv->nstreams,
                                        sizeof(*srv->streams), cmp_stream);
}

/* The table first (its streams win), then the stream source, whose
 * stream is pinned in |pin| until unpin. */
static rift_stream *find_stream(const rift_server *srv, const char *name,
                                size_t len, srv_pin *pin) {
    const srv_stream_entry *e = find_entry(srv, name, len);
    *pin = (srv_pin){NULL, false};
    if (e != NULL) {
        return e->stream;
    }
    const rift_server_stream_source *src = &srv->stream_source;
    rift_stream *st =
        src->acquire ? src->acquire(src->ud, name, len, &pin->token) : NULL;
    pin->held = st != NULL;
    return st;
}

void rift_srv_unpin(rift_server *srv, srv_pin *pin, bool appended) {
    if (pin->held) {
        pin->held = false;
        srv->stream_source.release(srv->stream_source.ud, pin->token, appended);
    }
}

/* ---- Waiting fetches (CONSUMER_FETCH_WAIT) ---- */

/*
 * A waiting fetch whose first portion came back empty parks on
 * srv->fetch_waiters with a timer at its deadline; it costs nothing while
 * idle. Every publish to a served stream (from this server, riftd's Lua,
 * NATS Streaming or any in-process user) runs append_watch on the
 * publisher's thread, which posts at most one wake-up per stream to the
 * loop until the loop has taken it; the wake-up re-submits every fetch
 * parked on that stream. One that still finds nothing (another worker was
 * faster, or the record does not match its filter) parks again; the timer
 * answers OK with no record. A table stream's watch is installed while
 * the server runs; a stream of the stream source (a STAN channel, whose
 * STAN publishes wake it the same way) gets one only while some waiting
 * fetch holds its pin and waits on it (srv_watch, server_internal.h).
 */

static void fetch_submit(srv_stream *ss, srv_store_op *op);
static void fetch_write(srv_stream *ss, srv_store_op *op);

static void unpark(srv_store_op *op) {
    if (!op->parked) {
        return;
    }
    op->parked = false;
    RIFT_DLIST_REMOVE(op->srv->fetch_waiters, op, wprev, wnext);
}

static void park(srv_store_op *op) {
    if (!op->parked) {
        op->parked = true;
        RIFT_DLIST_PUSH(op->srv->fetch_waiters, op, wprev, wnext);
    }
}

static void append_watch(void *arg);

static void watch_free(srv_watch *w) {
    rift_free(w->srv->mem, w);
}

/* The watch a waiting fetch on |st| waits on: its table entry's, or the
 * source stream's (made and installed by the first waiter; the op holds
 * the stream's pin meanwhile). NULL when out of memory: the fetch then
 * answers at once, like a plain fetch. */
static srv_watch *watch_join(rift_server *srv, srv_stream_entry *e,
                             rift_stream *st) {
    if (e != NULL) {
        return &e->watch;
    }
    srv_watch *w = srv->source_watches;
    while (w != NULL && w->stream != st) {
        w = w->next;
    }
    if (w == NULL) {
        w = rift_calloc(srv->mem, 1, sizeof(*w));
        if (w == NULL) {
            return NULL;
        }
        w->srv = srv;
        w->stream = st;
        w->source = true;
        atomic_init(&w->wake_posted, false);
        RIFT_DLIST_PUSH(srv->source_watches, w, prev, next);
        w->hooked = true;
        rift_stream_set_append_watch(st, append_watch, w);
    }
    w->users++;
    return w;
}

/* |op| stops waiting (answered, timed out or freed; before its pin goes):
 * the last waiter on a source stream removes that stream's watch. */
static void watch_leave(srv_store_op *op) {
    srv_watch *w = op->watch;
    op->watch = NULL;
    if (w == NULL || !w->source || --w->users > 0) {
        return;
    }
    RIFT_DLIST_REMOVE(w->srv->source_watches, w, prev, next);
    if (w->hooked) {
        /* Once this returns append_watch is not running: the flag says
         * whether a wake-up is still posted. */
        rift_stream_set_append_watch(w->stream, NULL, w);
        w->hooked = false;
    }
    if (atomic_load_explicit(&w->wake_posted, memory_order_acquire)) {
        w->dead = true; /* that wake-up frees it */
    } else {
        watch_free(w);
    }
}

static void wait_timer_cb(rift_timer *t, void *arg) {
    srv_store_op *op = arg;
    (void)t;
    if (!op->parked || op->ss == NULL) {
        /* Back in the store after a wake-up: if that portion is empty
         * too, the completion answers OK instead of parking again. */
        watch_leave(op);
        return;
    }
    unpark(op);
    watch_leave(op);
    op->more = false;
    fetch_write(op->ss, op); /* nothing to write: OK and the end */
}

static void wake_cb(void *arg, int status) {
    srv_watch *w = arg;
    atomic_store_explicit(&w->wake_posted, false, memory_order_release);
    if (w->dead) {
        watch_free(w); /* its last waiter left meanwhile */
        return;
    }
    if (status != 0) {
        return; /* the loop is going away */
    }
    rift_server *srv = w->srv;
    /* Take this stream's waiters off first: a fetch that completes at
     * once may park again, which must not be seen by this walk (nor |w|
     * touched after it: the last waiter leaving frees a source watch). */
    srv_store_op *list = NULL;
    for (srv_store_op *op = srv->fetch_waiters, *next; op != NULL; op = next) {
        next = op->wnext;
        if (op->watch == w) {
            unpark(op);
            RIFT_DLIST_PUSH(list, op, wprev, wnext);
        }
    }
    while (list != NULL) {
        srv_store_op *op = list;
        RIFT_DLIST_REMOVE(list, op, wprev, wnext);
        op->more = true;
        fetch_submit(op->ss, op);
    }
}

static void append_watch(void *arg) {
    srv_watch *w = arg;
    if (!atomic_exchange_explicit(&w->wake_posted, true,
                                  memory_order_acq_rel) &&
        rift_loop_post(w->srv->loop, wake_cb, w) != 0) {
        /* Out of memory: the next publish tries again; the waiters'
         * timers answer meanwhile. */
        atomic_store_explicit(&w->wake_posted, false, memory_order_release);
    }
}

void rift_srv_streams_watch(rift_server *srv, bool on) {
    for (size_t i = 0; i < srv->nstreams; i++) {
        srv_watch *w = &srv->streams[i].watch;
        w->srv = srv;
        w->stream = srv->streams[i].stream;
        rift_stream_set_append_watch(w->stream, on ? append_watch : NULL, w);
    }
    /* Stopping: waiters still in the store keep their source watches
     * (freed when they are), but no publisher posts any more. */
    for (srv_watch *w = srv->source_watches; !on && w != NULL; w = w->next) {
        if (w->hooked) {
            rift_stream_set_append_watch(w->stream, NULL, w);
            w->hooked = false;
        }
    }
}

void rift_srv_streams_free(rift_server *srv) {
    for (size_t i = 0; i < srv->nstreams; i++) {
        rift_free(srv->mem, srv->streams[i].name);
    }
    rift_free(srv->mem, srv->streams);
    srv->streams = NULL;
    srv->nstreams = 0;
}

/* ---- Operation records ---- */

static void store_detach(srv_stream *ss);

/* How the stream record lets go of a durable-stream operation: detached
 * (freed unless it is in the store, whose completion frees it then). */
static const srv_op_hooks store_hooks = {store_detach,
                                         rift_srv_store_in_flight};

static void portion_unref(void *arg) {
    srv_portion *p = arg;
    if (p == NULL || --p->refs > 0) {
        return;
    }
    if (p->backend_priv != NULL) {
        rift_srv_backend_batch_free(p->srv, p);
    }
    rift_batch_free(&p->batch);
    rift_free(p->srv->mem, p);
}

srv_store_op *rift_srv_op_new(srv_stream *ss, uint8_t opcode) {
    rift_server *srv = ss->conn->srv;
    srv_store_op *op = rift_calloc(srv->mem, 1, sizeof(*op));
    if (op == NULL) {
        return NULL;
    }
    op->srv = srv;
    op->ss = ss;
    op->opcode = opcode;
    ss->store_op = op;
    ss->op = &store_hooks;
    /* Nothing more is read from the stream; the operation owns it. */
    ss->state = SS_BUSY;
    return op;
}

srv_op_names *rift_srv_op_names(srv_store_op *op) {
    if (op->names == NULL) {
        op->names = rift_calloc(op->srv->mem, 1, sizeof(*op->names));
    }
    return op->names;
}

/* Keeps the text of |op|'s failure |status|: |err|'s, or rift_strerror's
 * when there is none. Out of memory for the copy leaves op->err NULL and
 * the strerror text stands in. */
static void keep_error(srv_store_op *op, int status, const rift_error *err) {
    op->status = status;
    if (op->err == NULL) {
        op->err = rift_malloc(op->srv->mem, sizeof(*op->err));
    }
    if (op->err == NULL) {
        return;
    }
    if (err != NULL) {
        rift_error_copy(op->err, err);
    } else {
        rift_error_set(op->err, status, "%s", rift_strerror(status));
    }
}

static void op_free(srv_store_op *op) {
    unpark(op);
    watch_leave(op); /* before the pin: a source watch is on its stream */
    if (op->wait_timer_set) {
        rift_timer_stop(&op->wait_timer);
    }
    if (op->quota_consumer && op->status != 0) {
        rift_quota_give(op->srv->quota, op->quota_slot, RIFT_QUOTA_CONSUMERS);
    }
    if (op->quota_release && op->status == 0 && op->srv->quota != NULL) {
        rift_quota_give(op->srv->quota, op->quota_slot, RIFT_QUOTA_CONSUMERS);
    }
    portion_unref(op->portion);
    rift_consumer_close(op->consumer);
    /* Last: the consumer belongs to the pinned stream. */
    rift_srv_unpin(op->srv, &op->pin,
                   op->opcode == RIFT_OP_STREAM_PUBLISH && op->status == 0);
    rift_free(op->srv->mem, op->err);
    rift_free(op->srv->mem, op->names);
    rift_free(op->srv->mem, op->backend_out);
    if (op->backend_list != NULL) {
        const rift_server_stream_backend *b = &op->srv->stream_backend;
        b->batch_free(b->ud, op->backend_list);
    }
    rift_free(op->srv->mem, op);
}

static void store_detach(srv_stream *ss) {
    srv_store_op *op = ss->store_op;
    if (op == NULL) {
        return;
    }
    ss->store_op = NULL;
    op->ss = NULL;
    if (ss->extra > 0) {
        ss->extra = 0;
        rift_srv_account(ss);
    }
    if (!op->in_store) {
        op_free(op);
    }
}

void rift_srv_store_abandon(srv_stream *ss) {
    srv_store_op *op = ss->store_op;
    /* A backend fetch's op keeps CONSUMER_FETCH's opcode; the backend
     * knows which of its jobs wait. */
    if (op == NULL || !op->backend || !op->in_store ||
        (op->opcode != RIFT_OP_CONSUMER_FETCH &&
         op->opcode != RIFT_OP_CONSUMER_FETCH_WAIT)) {
        return;
    }
    const rift_server_stream_backend *b = &op->srv->stream_backend;
    if (b->abandon != NULL) {
        b->abandon(b->ud, op);
    }
}

bool rift_srv_store_in_flight(const srv_stream *ss) {
    return ss->store_op != NULL && ss->store_op->in_store;
}

/* Completes |op| on the loop thread: writes the response (when its stream
 * is still there) and drops the code's reference. */
static void complete(srv_store_op *op);

/* Hands one completed op back on the loop thread (|status| != 0: the
 * loop is going away). */
static void op_returned(srv_store_op *op, int status) {
    rift_server *srv = op->srv;
    atomic_fetch_sub_explicit(&srv->store_inflight, 1, memory_order_release);
    op->in_store = false;
    if (status != 0) {
        /* The loop is going away: nobody is waiting for an answer. */
        if (op->ss != NULL) {
            store_detach(op->ss);
        } else {
            op_free(op);
        }
        return;
    }
    complete(op);
}

/* The loop's drain of srv->done_head: takes the whole list at once (a
 * push after this posts the next drain) and completes it in the order
 * the ops were pushed. */
static void drain_done(void *arg, int status) {
    rift_server *srv = arg;
    srv_store_op *lifo =
        atomic_exchange_explicit(&srv->done_head, NULL, memory_order_acquire);
    srv_store_op *fifo = NULL;
    while (lifo != NULL) {
        srv_store_op *next = lifo->done_next;
        lifo->done_next = fifo;
        fifo = lifo;
        lifo = next;
    }
    /* Nothing of |srv| after the last op: it may let the loop stop. */
    while (fifo != NULL) {
        srv_store_op *next = fifo->done_next;
        fifo->done_next = NULL;
        op_returned(fifo, status);
        fifo = next;
    }
}

/* Runs on the stream's writer thread: hand the result to the loop. */
void rift_srv_op_done_cb(void *user_data, int status, const rift_error *err) {
    srv_store_op *op = user_data;
    rift_server *srv = op->srv;
    if (status != 0) {
        keep_error(op, status, err);
    } else {
        op->status = 0;
    }
    srv_store_op *head =
        atomic_load_explicit(&srv->done_head, memory_order_relaxed);
    do {
        op->done_next = head;
    } while (!atomic_compare_exchange_weak_explicit(&srv->done_head, &head, op,
                                                    memory_order_release,
                                                    memory_order_relaxed));
    if (head != NULL) {
        /* A drain is posted and has not taken the list yet: it takes
         * this op too. After the push the op is the loop's; the server
         * may be gone once it is drained. */
        return;
    }
    /* rift_loop_post only fails for lack of memory; the loop must get the
     * op back (it keeps running until every submitted op returned), and
     * no other push posts for this list, so keep trying. */
    while (rift_loop_post(srv->loop, drain_done, srv) != 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The common tail of a submission: |rc| is what the _async call returned,
 * |completed| what it set (true: done now, done_cb will not run). */
void rift_srv_op_submitted(srv_store_op *op, int rc, bool completed,
                           const rift_error *err) {
    rift_server *srv = op->srv;
    if (rc == 0 && !completed) {
        op->in_store = true;
        /* The completion will be posted, typically after an fdatasync:
         * longer than the usual ACK hold, and a bare ACK meanwhile would
         * cost both sides a packet and a wake-up. STORED or OK carries
         * the ACK instead. */
        if (op->ss != NULL && op->ss->qs != NULL) {
            rift_quic_conn_answer_later(rift_quic_stream_conn(op->ss->qs));
        }
        return;
    }
    atomic_fetch_sub_explicit(&srv->store_inflight, 1, memory_order_relaxed);
    if (rc == 0) {
        op->status = 0;
    } else {
        keep_error(op, rc, err);
    }
    complete(op);
}

/* ---- Responses ---- */

static void write_stored(srv_stream *ss, const rift_stored *st) {
    uint8_t buf[RIFT_FRAME_PREFIX_BYTES + 17];
    rift_ssize n = rift_frame_encode_stored(buf, sizeof(buf), st->sequence,
                                            st->timestamp_ms);
    rift_quic_chunk ch = {buf, (size_t)n, NULL, NULL};
    (void)rift_srv_write(ss, &ch, 1, false);
}

static void fetch_submit(srv_stream *ss, srv_store_op *op);

/* Writes the DELIVERY frames of the current portion (re-checking the
 * subscribe ACL for each, §2.9 CONSUMER_FETCH 5) while the stream and its
 * connection have room, then asks for the next portion or ends with OK.
 * Resumed by rift_srv_fetch_resume when it had to stop. */
static void fetch_write(srv_stream *ss, srv_store_op *op) {
    rift_server *srv = ss->conn->srv;
    const rift_identity *id = ss->conn->id;
    rift_batch *b = op->portion != NULL ? &op->portion->batch : NULL;
    while (b != NULL && op->next < b->count) {
        if (rift_quic_stream_unacked(ss->qs) >= SRV_SEND_HIGH ||
            rift_srv_conn_full(ss)) {
            return;
        }
        const rift_delivery *d = &b->items[op->next];
        const rift_record *r = &d->record;
        rift_error err;
        if (rift_identity_can_subscribe(id, r->subject, r->subject_len, &err) !=
            0) {
            rift_srv_fail(ss, err.code, err.text);
            return;
        }
        uint8_t *hdr = srv->scratch;
        rift_ssize h = rift_frame_encode_delivery_header(
            hdr, SRV_SCRATCH_BYTES, r->sequence, r->timestamp_ms,
            d->delivery_count, r->subject, r->subject_len, r->reply,
            r->reply_len, r->payload_len);
        if (h < 0) {
            rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE, text_payload);
            return;
        }
        rift_quic_chunk ch[2];
        size_t n = 1;
        if (r->payload_len <= SRV_COPY_PAYLOAD_MAX &&
            (size_t)h + r->payload_len <= SRV_SCRATCH_BYTES) {
            if (r->payload_len > 0) {
                memcpy(hdr + h, r->payload, r->payload_len);
            }
            ch[0] =
                (rift_quic_chunk){hdr, (size_t)h + r->payload_len, NULL, NULL};
        } else {
            /* Zero-copy from the portion, kept alive by the chunk. */
            ch[0] = (rift_quic_chunk){hdr, (size_t)h, NULL, NULL};
            ch[1] = (rift_quic_chunk){r->payload, r->payload_len, portion_unref,
                                      op->portion};
            op->portion->refs++;
            n = 2;
        }
        op->next++;
        op->unwritten -= r->payload_len;
        ss->extra = op->unwritten; /* now queued on the stream instead */
        if (rift_srv_write(ss, ch, n, false) != 0) {
            if (n == 2) {
                op->portion->refs--;
            }
            rift_srv_finish(ss); /* the peer is gone; finish quietly */
            return;
        }
        srv->c.msgs_out++;
        srv->c.bytes_out += r->payload_len;
    }
    if (op->more) {
        /* The next portion once this one is mostly acknowledged. */
        if (rift_quic_stream_unacked(ss->qs) >= SRV_SEND_LOW ||
            rift_srv_conn_full(ss)) {
            return;
        }
        fetch_submit(ss, op);
        return;
    }
    (void)rift_srv_write_ok(ss, false);
    rift_srv_finish(ss);
}

void rift_srv_fetch_resume(srv_stream *ss) {
    srv_store_op *op = ss->store_op;
    if (op != NULL && !op->in_store && !op->parked &&
        (op->opcode == RIFT_OP_CONSUMER_FETCH ||
         op->opcode == RIFT_OP_CONSUMER_FETCH_WAIT) &&
        ss->qs != NULL) {
        fetch_write(ss, op);
    }
}

/* A portion came back committed: account for it and write it. */
static void fetch_portion_done(srv_stream *ss, srv_store_op *op) {
    rift_batch *b = &op->portion->batch;
    if (op->backend) {
        /* Its records arrived with the completion, not at submission. */
        op->unwritten = 0;
        for (size_t i = 0; i < b->count; i++) {
            op->unwritten += b->items[i].record.payload_len;
        }
        ss->extra = op->unwritten;
        rift_srv_account(ss);
    }
    if (b->count == 0 && op->delivered == 0 && op->watch != NULL) {
        park(op); /* a publish or the deadline takes it up again */
        return;
    }
    op->delivered += b->count;
    op->left -= RIFT_MIN(op->left, b->count);
    op->more = b->count > 0 && op->left > 0 && op->unwritten >= SRV_FETCH_BYTES;
    fetch_write(ss, op);
}

static void complete(srv_store_op *op) {
    op->in_store = false;
    srv_stream *ss = op->ss;
    if (ss == NULL) {
        op_free(op);
        return;
    }
    if (ss->state != SS_BUSY) {
        /* It ended meanwhile (a deadline of an earlier write). */
        store_detach(ss);
        if (ss->qs == NULL) {
            rift_srv_stream_free(ss);
        }
        return;
    }
    if (op->status != 0 && op->fail_answer != NULL) {
        op->fail_answer(ss, op); /* fails the stream, which frees the op */
        return;
    }
    if (op->status != 0) {
        /* The error path frees the op: keep its text. */
        rift_error err;
        if (op->err != NULL) {
            rift_error_copy(&err, op->err);
        } else {
            rift_error_set(&err, op->status, "%s", rift_strerror(op->status));
        }
        int code = err.code ? err.code : op->status;
        rift_srv_fail(ss, code, err.text);
        return;
    }
    if (ss->qs == NULL) {
        rift_srv_finish(ss); /* frees the op and the record */
        return;
    }
    rift_server *srv = ss->conn->srv;
    switch (op->opcode) {
    case RIFT_OP_STREAM_PUBLISH:
        srv->c.msgs_in++;
        srv->c.bytes_in += op->payload_len;
        write_stored(ss, &op->stored);
        break;
    case RIFT_OP_CONSUMER_FETCH:
    case RIFT_OP_CONSUMER_FETCH_WAIT:
        fetch_portion_done(ss, op);
        return;
    default: /* CONSUMER_OPEN, ACK; the extensions write their own */
        if (op->answer != NULL) {
            op->answer(ss, op);
        } else {
            (void)rift_srv_write_ok(ss, false);
        }
        break;
    }
    rift_srv_finish(ss); /* frees the op */
}

/* ---- Opcodes ---- */

/* CONSUMER_OPEN's answer, OK, after labelling the consumer with the
 * client's name (stored, so CONSUMER_LIST can name it back). */
static void open_answer(srv_stream *ss, srv_store_op *op) {
    (void)rift_consumer_set_label(op->consumer, op->names->name,
                                  op->names->name_len, NULL);
    (void)rift_srv_write_ok(ss, false);
}

/* Scopes a consumer name (§3.5) once its field was decoded: the original
 * validates it before decoding anything after it. Returns 0 or fails the
 * stream. */
int rift_srv_scope_name(srv_stream *ss, unsigned decoded, const char *name,
                        size_t len, int decode_rc, const rift_error *derr,
                        char out[RIFT_SCOPED_CONSUMER_SIZE]) {
    rift_error err;
    if (decoded >= 2 &&
        rift_identity_consumer_name(ss->conn->id, name, len, out, &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return err.code;
    }
    if (decode_rc != 0) {
        rift_srv_fail(ss, derr->code, derr->text);
        return decode_rc;
    }
    return 0;
}

rift_stream *rift_srv_lookup_stream(srv_stream *ss, const char *name,
                                    size_t len, srv_pin *pin) {
    rift_stream *st = find_stream(ss->conn->srv, name, len, pin);
    if (st == NULL) {
        rift_srv_fail(ss, RIFT_ERR_UNKNOWN_STREAM, text_unknown);
    }
    return st;
}

static void stream_publish(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_error err;
    rift_frame_stream_publish f;
    if (rift_frame_decode_stream_publish(fields, len, &f, &err) != 0 ||
        rift_subject_validate_literal(f.subject, f.subject_len, &err) != 0 ||
        (f.reply_len > 0 &&
         rift_subject_validate_literal(f.reply, f.reply_len, &err) != 0)) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    if (f.payload_len > RIFT_FRAME_MAX_PAYLOAD) {
        rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE, text_payload);
        return;
    }
    /* Permission comes before the stream lookup. */
    if (rift_identity_can_publish(ss->conn->id, f.subject, f.subject_len,
                                  f.reply, f.reply_len, &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    if (rift_srv_backend_serves(ss->conn->srv, f.stream, f.stream_len)) {
        rift_srv_backend_publish(ss, f.stream, f.stream_len, f.subject,
                                 f.subject_len, f.reply, f.reply_len, f.payload,
                                 f.payload_len);
        return;
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    srv_store_op *op = rift_srv_op_new(ss, RIFT_OP_STREAM_PUBLISH);
    if (op == NULL) {
        rift_srv_unpin(ss->conn->srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin;
    op->payload_len = f.payload_len;
    atomic_fetch_add_explicit(&op->srv->store_inflight, 1,
                              memory_order_relaxed);
    bool completed = false;
    int rc = rift_stream_publish_async(
        st, f.subject, f.subject_len, f.reply, f.reply_len, f.payload,
        f.payload_len, &op->stored, &completed, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, completed, &err);
}

static void consumer_open(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_error err;
    rift_frame_consumer_open f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_consumer_open(fields, len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (rift_identity_can_subscribe(ss->conn->id, f.filter, f.filter_len,
                                    &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    if (f.ack_wait_ms == 0 || f.ack_wait_ms > 3600000 ||
        f.max_ack_pending == 0 || f.max_ack_pending > 65536) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, "invalid consumer limits");
        return;
    }
    /* One configuration for the store and a host's stream backend. */
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = f.filter;
    cfg.filter_len = f.filter_len;
    cfg.start = RIFT_START_SEQUENCE;
    cfg.start_sequence = f.start_sequence;
    cfg.ack_wait_ms = f.ack_wait_ms;
    cfg.max_ack_pending = f.max_ack_pending;
    if (rift_srv_backend_serves(ss->conn->srv, f.stream, f.stream_len)) {
        rift_srv_backend_open(ss, f.stream, f.stream_len, scoped, f.name,
                              f.name_len, &cfg, false);
        return;
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    /* Only a consumer this open creates counts against the identity's
     * share (reopening one's own is free). */
    rift_server *srv = ss->conn->srv;
    size_t slot = srv->quota_slots[ss->conn->id_index];
    rift_consumer *existing = NULL;
    bool counted = false;
    if (srv->quota != NULL &&
        rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN,
                                 &existing, NULL) != 0) {
        if (rift_quota_take(srv->quota, slot, RIFT_QUOTA_CONSUMERS, &err) !=
            0) {
            rift_srv_unpin(srv, &pin, false);
            rift_srv_fail(ss, err.code, err.text);
            return;
        }
        counted = true;
    }
    rift_consumer_close(existing);
    srv_store_op *op = rift_srv_op_new(ss, RIFT_OP_CONSUMER_OPEN);
    if (op == NULL) {
        if (counted) {
            rift_quota_give(srv->quota, slot, RIFT_QUOTA_CONSUMERS);
        }
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin;
    op->quota_consumer = counted;
    op->quota_slot = slot;
    op->answer = open_answer;
    srv_op_names *nm = rift_srv_op_names(op);
    if (nm == NULL) {
        op->status = RIFT_ERR_NOMEM; /* op_free gives pin and quota back */
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory"); /* frees op */
        return;
    }
    memcpy(nm->name, f.name, f.name_len);
    nm->name_len = f.name_len;
    atomic_fetch_add_explicit(&op->srv->store_inflight, 1,
                              memory_order_relaxed);
    bool completed = false;
    rc = rift_stream_consumer_open_async(st, scoped, RIFT_SCOPED_CONSUMER_LEN,
                                         &cfg, &op->consumer, &completed,
                                         rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, completed, &err);
}

/* Stream lookup (pinned in |pin|, its stream in *|stp|) then consumer
 * lookup, for FETCH and ACK. */
static rift_consumer *find_consumer(srv_stream *ss, const char *stream,
                                    size_t stream_len, const char *scoped,
                                    srv_pin *pin, rift_stream **stp) {
    rift_stream *st = rift_srv_lookup_stream(ss, stream, stream_len, pin);
    *stp = st;
    if (st == NULL) {
        return NULL;
    }
    rift_consumer *c;
    rift_error err;
    if (rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN, &c,
                                 &err) != 0) {
        rift_srv_unpin(ss->conn->srv, pin, false);
        rift_srv_fail(ss, err.code, err.text);
        return NULL;
    }
    return c;
}

/* CONSUMER_FETCH, and CONSUMER_FETCH_WAIT when |wait_ms| > 0: looks the
 * consumer up and asks for the first portion. */
static void start_fetch(srv_stream *ss, const char *stream, size_t stream_len,
                        const char *scoped, uint32_t limit, uint32_t wait_ms) {
    if (rift_srv_backend_serves(ss->conn->srv, stream, stream_len)) {
        /* A backend's fetch waits in the backend (its first portion). */
        srv_store_op *bop = rift_srv_backend_fetch_op(ss, stream, stream_len,
                                                      scoped, limit, wait_ms);
        if (bop != NULL) {
            fetch_write(ss, bop);
        }
        return;
    }
    srv_pin pin;
    rift_stream *st;
    rift_consumer *c = find_consumer(ss, stream, stream_len, scoped, &pin, &st);
    if (c == NULL) {
        return;
    }
    srv_store_op *op = rift_srv_op_new(
        ss, wait_ms > 0 ? RIFT_OP_CONSUMER_FETCH_WAIT : RIFT_OP_CONSUMER_FETCH);
    if (op == NULL) {
        rift_consumer_close(c);
        rift_srv_unpin(ss->conn->srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    /* A waiting fetch keeps the pin while parked: until it is answered. */
    op->pin = pin;
    op->consumer = c;
    op->left = limit;
    op->more = true; /* nothing loaded yet: the first portion */
    if (wait_ms > 0) {
        rift_server *srv = op->srv;
        op->watch = watch_join(srv, find_entry(srv, stream, stream_len), st);
        rift_timer_init(srv->loop, &op->wait_timer, wait_timer_cb, op);
        op->wait_timer_set = true;
        rift_timer_start(&op->wait_timer, rift_loop_now(srv->loop) +
                                              (rift_tstamp)wait_ms * 1000000u);
    }
    fetch_write(ss, op);
}

static void consumer_fetch(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_error err;
    rift_frame_consumer_fetch f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_consumer_fetch(fields, len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (f.limit == 0 || f.limit > RIFT_FRAME_MAX_FETCH) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "fetch limit must be 1..256");
        return;
    }
    start_fetch(ss, f.stream, f.stream_len, scoped, f.limit, 0);
}

void rift_srv_fetch_wait(srv_stream *ss, const srv_frame *fr) {
    rift_error err;
    rift_frame_fetch_wait f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_fetch_wait(fr->fields, fr->len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (f.limit == 0 || f.limit > RIFT_FRAME_MAX_FETCH) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "fetch limit must be 1..256");
        return;
    }
    if (f.max_wait_ms == 0 || f.max_wait_ms > RIFT_EXT_MAX_WAIT_MS) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_WAIT);
        return;
    }
    start_fetch(ss, f.stream, f.stream_len, scoped, f.limit, f.max_wait_ms);
}

/* Asks the store for the next portion: at most op->left records, loaded
 * up to SRV_FETCH_BYTES of payload. Every portion commits its delivery
 * state before anything of it is written (§9): its records go out only
 * once that is durable. */
static void fetch_submit(srv_stream *ss, srv_store_op *op) {
    rift_server *srv = op->srv;
    rift_error err;
    srv_portion *p = rift_calloc(srv->mem, 1, sizeof(*p));
    if (p == NULL) {
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    p->srv = srv;
    p->refs = 1;
    portion_unref(op->portion);
    op->portion = p;
    op->next = 0;
    atomic_fetch_add_explicit(&srv->store_inflight, 1, memory_order_relaxed);
    if (op->backend) {
        op->unwritten = 0; /* counted when the records arrive */
        int brc = rift_srv_backend_fetch(op, p, &err);
        rift_srv_op_submitted(op, brc, false, &err);
        return;
    }
    bool completed = false;
    int rc = rift_consumer_fetch_bytes_async(
        op->consumer, op->left, SRV_FETCH_BYTES, &p->batch, &completed,
        rift_srv_op_done_cb, op, &err);
    /* A record dropped after max_deliver publishes its advisory on this
     * thread (riftd's rift.events.consumer): have it drained. */
    srv->drain_count++;
    /* The store filled the batch at once: its records are pinned from
     * now on, whether or not the completion is still to come. */
    op->unwritten = 0;
    for (size_t i = 0; i < p->batch.count; i++) {
        op->unwritten += p->batch.items[i].record.payload_len;
    }
    ss->extra = op->unwritten;
    rift_srv_account(ss);
    rift_srv_op_submitted(op, rc, completed, &err);
}

static void ack(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_error err;
    rift_frame_ack f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_ack(fields, len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (rift_srv_backend_serves(ss->conn->srv, f.stream, f.stream_len)) {
        rift_srv_backend_ack(ss, f.stream, f.stream_len, scoped, f.sequence);
        return;
    }
    srv_pin pin;
    rift_stream *st;
    rift_consumer *c =
        find_consumer(ss, f.stream, f.stream_len, scoped, &pin, &st);
    if (c == NULL) {
        return;
    }
    srv_store_op *op = rift_srv_op_new(ss, RIFT_OP_ACK);
    if (op == NULL) {
        rift_consumer_close(c);
        rift_srv_unpin(ss->conn->srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin;
    op->consumer = c;
    atomic_fetch_add_explicit(&op->srv->store_inflight, 1,
                              memory_order_relaxed);
    bool completed = false;
    rc = rift_consumer_ack_async(c, f.sequence, &completed, rift_srv_op_done_cb,
                                 op, &err);
    rift_srv_op_submitted(op, rc, completed, &err);
}

void rift_srv_stream_op(srv_stream *ss, const srv_frame *f) {
    const uint8_t *fields = f->fields;
    size_t len = f->len;
    switch (f->opcode) {
    case RIFT_OP_STREAM_PUBLISH:
        stream_publish(ss, fields, len);
        break;
    case RIFT_OP_CONSUMER_OPEN:
        consumer_open(ss, fields, len);
        break;
    case RIFT_OP_CONSUMER_FETCH:
        consumer_fetch(ss, fields, len);
        break;
    default:
        ack(ss, fields, len);
        break;
    }
}
