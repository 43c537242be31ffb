/*
 * push_stream.c — push consumers over the wire (server layer): PUSH_OPEN
 * (34) turns its stream into a push stream that carries DELIVERY frames
 * of one consumer, never more than max_in_flight unacknowledged, and
 * reads the client's PUSH_ACK (35) frames on the same stream.
 *
 * Reference: docs/protocol-v1.md "Extensions" (E.2, E.3 PUSH_OPEN and
 * PUSH_ACK). The engine is the store's (store/push.h), the one the NATS
 * Streaming service delivers with: one push per stream here, with the
 * stream as its only member. Its fetches go through
 * rift_push_pump_async, so the loop never waits for a sync: the records
 * are written once their delivery state is durable, as a fetch's are.
 *
 * Bounded memory: a pump is asked for only while the stream has less
 * than SRV_SEND_LOW unacknowledged and its connection has room, and each
 * loads at most SRV_FETCH_BYTES of payload, so a client that stops
 * reading pins about SRV_SEND_HIGH on its stream (then its write deadline
 * ends the stream), whatever its max_in_flight and however many ack waits
 * pass: redeliveries wait for room like the rest.
 *
 * Lifetime: a srv_push outlives its stream record while a fetch is in
 * the store or a wake-up from the stream's append watch is posted; the
 * last of them frees it. Everything runs on the server loop thread except
 * on_append (a publisher's thread) and fetch_done (the stream's writer).
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext_push.h"
#include "common/dlist.h"
#include "store/push.h"
#include "subject/acl.h"

#include <string.h>
#include <time.h>

struct srv_push {
    rift_server *srv;
    srv_stream *ss; /* NULL once the stream record let go */
    srv_pin pin;    /* released last */
    rift_stream *st;
    rift_consumer *consumer;
    rift_push *push;
    char stream[RIFT_NAME_MAX + 1];
    size_t stream_len;
    char name[RIFT_NAME_MAX + 1]; /* the client's consumer name */
    size_t name_len;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    /* The stream's append watch and whether its wake-up is posted. */
    rift_stream_watch watch;
    bool watching;
    atomic_bool wake_posted;
    /* The ack-wait timer (rift_push_next_due_ms). */
    rift_timer timer;
    /* The fetch in the store: its batch and result. */
    bool in_store;
    rift_batch batch;
    int status;
    rift_error err;
    /* The batch being handed out (deliver's zero-copy chunks), and the
     * pumps and deliveries running: |ps| is not freed under them. */
    struct push_batch *cur;
    unsigned busy;
    /* No record to take at the last pump, and nothing since that could
     * bring one (a publish, an ack): pump again only for redeliveries. */
    bool starved;
    struct srv_push *prev, *next; /* srv->pushes */
};

/* A delivered batch kept alive while its large payloads are queued
 * zero-copy on the stream. */
typedef struct push_batch {
    rift_server *srv;
    rift_batch batch;
    size_t refs;
} push_batch;

static void pump(srv_push *ps);

/* ---- Lifetime ---- */

static uint64_t now_ms(const rift_server *srv) {
    return rift_loop_now(srv->loop) / 1000000u;
}

static void push_free(srv_push *ps) {
    rift_server *srv = ps->srv;
    RIFT_DLIST_REMOVE(srv->pushes, ps, prev, next);
    rift_timer_stop(&ps->timer);
    rift_batch_free(&ps->batch);
    rift_push_del(ps->push);
    rift_consumer_close(ps->consumer);
    rift_srv_unpin(srv, &ps->pin, false); /* last: the consumer is its */
    rift_free(srv->mem, ps);
}

/* Frees |ps| once its stream, its fetch and its wake-up are all gone. */
static void maybe_free(srv_push *ps) {
    if (ps->ss == NULL && !ps->in_store && ps->busy == 0 &&
        !atomic_load_explicit(&ps->wake_posted, memory_order_acquire)) {
        push_free(ps);
    }
}

/* The stream record lets go (srv_op_hooks.drop): the push stops; the
 * consumer keeps its durable state (what was delivered and not acked is
 * redelivered to the next push or fetch after its ack wait). */
static void push_drop(srv_stream *ss) {
    srv_push *ps = ss->push;
    if (ps == NULL) {
        return;
    }
    ss->push = NULL;
    ss->op = NULL;
    ps->ss = NULL;
    rift_timer_stop(&ps->timer);
    if (ps->watching) {
        /* Once this returns on_append is not running: the flag then says
         * whether a wake-up is still on its way. */
        rift_stream_watch_remove(ps->st, &ps->watch);
        ps->watching = false;
    }
    maybe_free(ps);
}

static const srv_op_hooks push_hooks = {push_drop, NULL};

/* ---- Wake-ups ---- */

static void wake_cb(void *arg, int status) {
    srv_push *ps = arg;
    atomic_store_explicit(&ps->wake_posted, false, memory_order_release);
    if (ps->ss == NULL || status != 0) {
        maybe_free(ps);
        return;
    }
    ps->starved = false;
    pump(ps);
}

/* A publisher's thread, under the stream's lock: post one wake-up. */
static void on_append(void *arg) {
    srv_push *ps = arg;
    if (!atomic_exchange_explicit(&ps->wake_posted, true,
                                  memory_order_acq_rel) &&
        rift_loop_post(ps->srv->loop, wake_cb, ps) != 0) {
        /* Out of memory: the next publish tries again. */
        atomic_store_explicit(&ps->wake_posted, false, memory_order_release);
    }
}

static void timer_cb(rift_timer *t, void *arg) {
    (void)t;
    pump(arg);
}

static void arm_timer(srv_push *ps) {
    uint64_t due = rift_push_next_due_ms(ps->push);
    if (due == UINT64_MAX) {
        rift_timer_stop(&ps->timer);
        return;
    }
    rift_timer_start(&ps->timer, (rift_tstamp)due * 1000000u);
}

/* ---- Writing deliveries ---- */

static void batch_unref(void *arg) {
    push_batch *pb = arg;
    if (--pb->refs == 0) {
        rift_batch_free(&pb->batch);
        rift_free(pb->srv->mem, pb);
    }
}

/* The engine's deliver callback (inside rift_push_deliver): one DELIVERY
 * frame, the subscribe ACL re-checked as for a fetch. Large payloads go
 * zero-copy from the batch being handed out (ps->cur). */
static int deliver(void *ctx, void *member, const rift_delivery *d) {
    srv_push *ps = ctx;
    push_batch *pb = ps->cur;
    srv_stream *ss = member;
    if (ss->state != SS_PUSH || ss->qs == NULL) {
        return RIFT_ERR_CLOSED; /* stays pending: redelivered later */
    }
    rift_server *srv = ps->srv;
    const rift_record *r = &d->record;
    rift_error err;
    if (rift_identity_can_subscribe(ss->conn->id, r->subject, r->subject_len,
                                    &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return err.code;
    }
    uint8_t *hdr = srv->scratch;
    rift_ssize h = rift_frame_encode_delivery_header(
        hdr, SRV_SCRATCH_BYTES, r->sequence, r->timestamp_ms, d->delivery_count,
        r->subject, r->subject_len, r->reply, r->reply_len, r->payload_len);
    if (h < 0) {
        rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE,
                      "payload exceeds 1 MiB transport limit");
        return (int)h;
    }
    rift_quic_chunk ch[2];
    size_t n = 1;
    if (r->payload_len <= SRV_COPY_PAYLOAD_MAX &&
        (size_t)h + r->payload_len <= SRV_SCRATCH_BYTES) {
        if (r->payload_len > 0) {
            memcpy(hdr + h, r->payload, r->payload_len);
        }
        ch[0] = (rift_quic_chunk){hdr, (size_t)h + r->payload_len, NULL, NULL};
    } else {
        ch[0] = (rift_quic_chunk){hdr, (size_t)h, NULL, NULL};
        ch[1] = (rift_quic_chunk){r->payload, r->payload_len, batch_unref, pb};
        pb->refs++;
        n = 2;
    }
    if (rift_srv_write(ss, ch, n, false) != 0) {
        if (n == 2) {
            pb->refs--;
        }
        rift_srv_write_failed(ss);
        return RIFT_ERR_CLOSED;
    }
    srv->c.msgs_out++;
    srv->c.bytes_out += r->payload_len;
    return 0;
}

/* Writes the durable batch in ps->batch and lets go of it. */
static void write_batch(srv_push *ps) {
    push_batch *pb = rift_calloc(ps->srv->mem, 1, sizeof(*pb));
    if (pb == NULL) {
        /* Nothing written: the records stay pending and come again after
         * their ack wait. */
        rift_batch_free(&ps->batch);
        return;
    }
    pb->srv = ps->srv;
    pb->batch = ps->batch;
    pb->refs = 1;
    ps->batch = (rift_batch){0};
    ps->cur = pb;
    rift_push_deliver(ps->push, &pb->batch);
    ps->cur = NULL;
    batch_unref(pb);
}

/* ---- Pumping ---- */

static void pump(srv_push *ps);

/* A fetch came back durable: write it, then pump on. */
static void pump_with_batch(srv_push *ps) {
    ps->busy++;
    write_batch(ps);
    ps->busy--;
    pump(ps);
}

/* The stream's writer thread (or a sync helper): back to the loop. */
static void fetch_post(void *arg, int status) {
    srv_push *ps = arg;
    atomic_fetch_sub_explicit(&ps->srv->store_inflight, 1,
                              memory_order_release);
    ps->in_store = false;
    if (ps->ss == NULL || status != 0 || ps->status != 0) {
        rift_batch_free(&ps->batch);
        if (ps->ss != NULL && status == 0) {
            rift_srv_fail_err(ps->ss, &ps->err);
        }
        maybe_free(ps);
        return;
    }
    pump_with_batch(ps);
}

static void fetch_done(void *user_data, int status, const rift_error *err) {
    srv_push *ps = user_data;
    ps->status = status;
    if (status != 0) {
        if (err != NULL) {
            rift_error_copy(&ps->err, err);
        } else {
            rift_error_set(&ps->err, status, "%s", rift_strerror(status));
        }
    }
    /* As the store ops do: the loop must get it back, keep trying. */
    while (rift_loop_post(ps->srv->loop, fetch_post, ps) != 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Pumps while the stream has room and the engine has something: each
 * durable batch is written at once, one fetch at a time in the store. */
static void pump_on(srv_push *ps) {
    rift_server *srv = ps->srv;
    while (ps->ss != NULL && !ps->in_store) {
        srv_stream *ss = ps->ss;
        if (ss->state != SS_PUSH || ss->qs == NULL) {
            return;
        }
        if (rift_quic_stream_unacked(ss->qs) >= SRV_SEND_LOW ||
            rift_srv_conn_full(ss)) {
            return; /* resumed by this stream's or the connection's ACKs */
        }
        uint64_t now = now_ms(srv);
        if (ps->starved && rift_push_next_due_ms(ps->push) > now) {
            arm_timer(ps);
            return;
        }
        rift_error err;
        bool completed = false;
        atomic_fetch_add_explicit(&srv->store_inflight, 1,
                                  memory_order_relaxed);
        rift_ssize n =
            rift_push_pump_async(ps->push, now, SRV_FETCH_BYTES, &ps->batch,
                                 &completed, fetch_done, ps, &err);
        /* A record dropped after max_deliver publishes its advisory on
         * this thread: have it drained. */
        srv->drain_count++;
        if (n < 0 || completed) {
            atomic_fetch_sub_explicit(&srv->store_inflight, 1,
                                      memory_order_relaxed);
        }
        if (n < 0) {
            rift_batch_free(&ps->batch);
            rift_srv_fail_err(ss, &err);
            return;
        }
        arm_timer(ps);
        if (!completed) {
            ps->in_store = true; /* fetch_post writes it and pumps on */
            return;
        }
        if (n == 0) {
            rift_batch_free(&ps->batch);
            ps->starved = true;
            return;
        }
        write_batch(ps);
    }
}

/* A failed write inside a pump lets the stream record go, which would
 * free |ps| under it: it is freed here instead, once the pump is out. */
static void pump(srv_push *ps) {
    ps->busy++;
    pump_on(ps);
    ps->busy--;
    maybe_free(ps);
}

void rift_srv_push_resume(srv_stream *ss) {
    if (ss->push != NULL) {
        pump(ss->push);
    }
}

/* ---- PUSH_OPEN ---- */

static bool push_busy(const rift_server *srv, const rift_stream *st,
                      const char *scoped) {
    for (const srv_push *p = srv->pushes; p != NULL; p = p->next) {
        if (p->ss != NULL && p->st == st &&
            memcmp(p->scoped, scoped, RIFT_SCOPED_CONSUMER_LEN) == 0) {
            return true;
        }
    }
    return false;
}

/* The subscribe check of E.3 PUSH_OPEN once the consumer is found (its
 * pending count in *|pending|); 0 or the stream failed. */
static int check_consumer(srv_stream *ss, rift_consumer *c, size_t *pending) {
    rift_error err;
    rift_consumer_info info;
    if (rift_consumer_get_info(c, &info, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return err.code;
    }
    const char *filter = info.config.filter != NULL ? info.config.filter : ">";
    size_t filter_len = info.config.filter != NULL ? info.config.filter_len : 1;
    if (rift_identity_can_subscribe(ss->conn->id, filter, filter_len, &err) !=
        0) {
        rift_srv_fail_err(ss, &err);
        return err.code;
    }
    *pending = info.pending;
    return 0;
}

static void push_open(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_server *srv = ss->conn->srv;
    rift_error err;
    rift_frame_push_open f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_push_open(fields, len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (f.max_in_flight == 0 || f.max_in_flight > RIFT_EXT_MAX_IN_FLIGHT) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_IN_FLIGHT);
        return;
    }
    if (f.ack_wait_ms > RIFT_EXT_MAX_ACK_WAIT_MS) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_ACK_WAIT);
        return;
    }
    if (rift_srv_backend_serves(srv, f.stream, f.stream_len)) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "push consumers are not offered on replicated streams");
        return;
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    rift_consumer *c = NULL;
    if (rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN, &c,
                                 &err) != 0) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail_err(ss, &err);
        return;
    }
    size_t pending = 0;
    if (check_consumer(ss, c, &pending) != 0) {
        rift_consumer_close(c);
        rift_srv_unpin(srv, &pin, false);
        return;
    }
    if (push_busy(srv, st, scoped)) {
        rift_consumer_close(c);
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_PUSH_BUSY);
        return;
    }
    srv_push *ps = rift_calloc(srv->mem, 1, sizeof(*ps));
    if (ps == NULL) {
        rift_consumer_close(c);
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    ps->srv = srv;
    ps->pin = pin;
    ps->st = st;
    ps->consumer = c;
    memcpy(ps->stream, f.stream, f.stream_len);
    ps->stream_len = f.stream_len;
    memcpy(ps->name, f.name, f.name_len);
    ps->name_len = f.name_len;
    memcpy(ps->scoped, scoped, sizeof(ps->scoped));
    atomic_init(&ps->wake_posted, false);
    rift_timer_init(srv->loop, &ps->timer, timer_cb, ps);
    RIFT_DLIST_PUSH(srv->pushes, ps, prev, next);
    rift_push_settings s = {c, deliver, ps, srv->mem};
    if (rift_push_new(&ps->push, &s, &err) != 0 ||
        rift_push_add_member(ps->push, ss, f.max_in_flight, &err) != 0 ||
        (f.ack_wait_ms != 0 &&
         rift_push_set_ack_wait(ps->push, f.ack_wait_ms, &err) != 0)) {
        push_free(ps);
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (pending > 0) {
        /* An earlier push's (or fetch's) deliveries: due within one ack
         * wait, and this push must look then. */
        rift_push_adopt_pending(ps->push, now_ms(srv));
    }
    (void)rift_consumer_set_label(c, f.name, f.name_len, NULL);
    ps->ss = ss;
    ss->push = ps;
    ss->op = &push_hooks;
    ss->state = SS_PUSH;
    /* The client ends the push with FIN, STOP_SENDING or a reset: the
     * transport must report a STOP_SENDING when it arrives. */
    rift_quic_stream_watch_stop(ss->qs);
    ps->watch.fn = on_append;
    ps->watch.arg = ps;
    rift_stream_watch_add(st, &ps->watch);
    ps->watching = true;
    if (rift_srv_write_ok(ss, false) != 0) {
        rift_srv_write_failed(ss);
        return;
    }
    pump(ps);
}

/* ---- PUSH_ACK, on the push stream ---- */

static bool same(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* One frame read on a push stream. Returns false once the stream failed. */
static bool push_frame(srv_stream *ss, const rift_frame_body *body) {
    srv_push *ps = ss->push;
    if (body->data[0] != RIFT_OP_PUSH_ACK) {
        rift_srv_fail(ss, RIFT_ERR_PROTOCOL, RIFT_EXT_ERR_PUSH_OPCODE);
        return false;
    }
    rift_error err;
    rift_frame_push_ack f;
    if (rift_frame_decode_push_ack(body->data + 1, body->len - 1, &f, &err) !=
        0) {
        rift_srv_fail_err(ss, &err);
        return false;
    }
    if (!same(f.stream, f.stream_len, ps->stream, ps->stream_len) ||
        !same(f.name, f.name_len, ps->name, ps->name_len)) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_ACK_OTHER);
        return false;
    }
    /* A sequence not pending (acked twice, acked after a redelivery
     * elsewhere) is no error of the push: there is nothing to settle. */
    int rc = rift_push_ack(ps->push, f.sequence, &err);
    if (rc != 0 && rc != RIFT_ERR_INVALID_ACK) {
        rift_srv_fail_err(ss, &err);
        return false;
    }
    ps->starved = false; /* room again, and under max_ack_pending */
    return true;
}

void rift_srv_push_data(srv_stream *ss, const uint8_t *data, size_t len,
                        bool fin) {
    size_t off = 0;
    while (off < len && ss->state == SS_PUSH) {
        rift_frame_body body;
        rift_error err;
        rift_ssize n = rift_frame_reader_feed(&ss->reader, data + off,
                                              len - off, &body, &err);
        if (n < 0) {
            rift_srv_fail_err(ss, &err);
            break;
        }
        off += (size_t)n;
        if (body.data != NULL && !push_frame(ss, &body)) {
            break;
        }
    }
    if (ss->qs != NULL && off > 0) {
        rift_quic_stream_consumed(ss->qs, off);
    }
    if (ss->state != SS_PUSH) {
        return;
    }
    if (fin) {
        /* The client is done: the push ends with our FIN. */
        rift_srv_finish(ss);
        return;
    }
    pump(ss->push);
}

void rift_srv_push_op(srv_stream *ss, const srv_frame *f) {
    if (f->opcode == RIFT_OP_PUSH_OPEN) {
        push_open(ss, f->fields, f->len);
        return;
    }
    rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_ACK_OUTSIDE);
}
