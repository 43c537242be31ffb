/*
 * publisher.c — publishers of the Rift client (client layer): dedicated
 * ordered publishers (publish without waiting, publish_confirmed, flush)
 * and the client's shared publisher behind rift_client_publish.
 *
 * Batching. Publishing threads encode each frame (header, then the
 * payload copied behind it) straight into a chain of 64 KiB blocks under
 * the publisher's mutex and publish how far the block is filled
 * (`committed`, a release store). The first frame after a hand-off posts
 * one flush closure to the client thread (the `kick` flag); the closure
 * walks the chain without the mutex, hands everything committed by then
 * to the stream as pinned chunks (no further copy) and moves on, so a
 * burst of messages costs one wakeup and one stream write, not one per
 * message, and the client thread never waits for a publishing thread
 * (on a shared CPU, a publisher preempted inside its critical section
 * used to stall the client thread on the mutex, and back).
 *
 * Blocks are reference-counted: the chain holds one reference until the
 * client thread has moved past the block, every chunk the stream holds
 * one; the last goes back to a per-client pool (pub_block.c). Buffered plus
 * unacknowledged bytes are bounded by RIFT_CLIENT_PUB_WINDOW: beyond it
 * publishing threads wait for acknowledgements, and are woken once the
 * window is down to RIFT_CLIENT_PUB_RESUME, so a full window costs a
 * wakeup per megabytes, not per acknowledgement.
 *
 * Answers. PUBLISH_ACK and PING register a waiter in stream order; each
 * OK from the server completes the oldest waiter (the server processes a
 * stream's frames strictly in order). One timer on the client thread
 * watches the oldest waiter's deadline.
 *
 * Failure. Any server ERROR, stream end, write failure or missed deadline
 * makes the publisher unusable for good (§6.2): every waiter gets the
 * error; if nobody was waiting, the next call reports it; every later call
 * gets "publisher closed or a previous operation was cancelled". Local
 * checks run before any of this and never affect the publisher.
 */
#include "client/client_internal.h"
#include "client/pub_block.h"


#include <errno.h>
#include <string.h>

struct rift_pub_waiter {
    rift_pub_waiter *next;
    rift_tstamp deadline;
    bool done;
    int rc;
    rift_error err;
};

/* Chunks handed to the stream per write call. */
#define WRITE_BATCH 32
static void timer_fired(rift_timer *t, void *arg);

/* ---- References ---- */

static rift_publisher *pub_new(rift_client *c, bool shared) {
    rift_publisher *p = rift_calloc(c->mem, 1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    if (rift_client_cond_init(&p->room) != 0) {
        rift_free(c->mem, p);
        return NULL;
    }
    if (rift_client_cond_init(&p->done) != 0) {
        pthread_cond_destroy(&p->room);
        rift_free(c->mem, p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->c = c;
    p->shared = shared;
    atomic_init(&p->refs, 1);
    atomic_init(&p->first, NULL);
    atomic_init(&p->buffered, 0);
    atomic_init(&p->kick, false);
    atomic_init(&p->failed_flag, false);
    atomic_init(&p->nwaiters, 0);
    atomic_init(&p->inflight, 0);
    atomic_init(&p->blocked, 0);
    rift_timer_init(c->loop, &p->timer, timer_fired, p);
    if (!shared) {
        rift_client_ref(c);
    }
    return p;
}

void rift_client_pub_unref(rift_publisher *p) {
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    rift_client *c = p->c;
    rift_pub_chain_free(p->cons != NULL ? p->cons : atomic_load(&p->first));
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    bool shared = p->shared;
    rift_free(c->mem, p);
    if (!shared) {
        rift_client_unref(c);
    }
}

static void pub_ref(rift_publisher *p) {
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

/* ---- Failure (under p->mu) ---- */

static void waiter_complete(rift_pub_waiter *w, int rc, const rift_error *e) {
    w->rc = rc;
    if (rc != 0) {
        rift_error_copy(&w->err, e);
    }
    w->done = true;
}

static void fail_locked(rift_publisher *p, const rift_error *e) {
    if (p->failed) {
        return;
    }
    p->failed = true;
    atomic_store(&p->failed_flag, true);
    rift_error_copy(&p->fail, e);
    for (rift_pub_waiter *w = p->wq_head; w != NULL;) {
        rift_pub_waiter *next = w->next;
        waiter_complete(w, e->code, e);
        p->reported = true;
        w = next;
    }
    p->wq_head = p->wq_tail = NULL;
    atomic_store(&p->nwaiters, 0);
    pthread_cond_broadcast(&p->done);
    pthread_cond_broadcast(&p->room);
}

/* The error a call on a failed publisher returns: the failure itself the
 * first time nobody saw it, then "publisher closed ...". */
static int failed_rc(rift_publisher *p, rift_error *err) {
    if (!p->reported) {
        p->reported = true;
        rift_error_copy(err, &p->fail);
        return p->fail.code;
    }
    return rift_error_set(err, RIFT_ERR_UNUSABLE, "%s",
                          RIFT_CLIENT_ERR_UNUSABLE);
}

/* ---- Client thread ---- */

static void attach_stream(void *owner, rift_client_stream *cs) {
    rift_publisher *p = owner;
    cs->kind = RIFT_CS_PUB;
    cs->u.pub = p;
    p->cs = cs;
    pub_ref(p);
}

void rift_client_pub_fail(rift_publisher *p, const rift_error *e, bool reset) {
    pthread_mutex_lock(&p->mu);
    fail_locked(p, e);
    pthread_mutex_unlock(&p->mu);
    rift_timer_stop(&p->timer);
    rift_client_stream *cs = p->cs;
    if (cs == NULL) {
        return;
    }
    p->cs = NULL;
    if (reset) {
        rift_client_stream_abort(cs);
    } else {
        cs->kind = RIFT_CS_NONE;
        cs->u.pub = NULL;
    }
    rift_client_pub_unref(p); /* the stream's reference */
}

static void fail_text(rift_publisher *p, int code, const char *text) {
    rift_error e;
    rift_error_set(&e, code, "%s", text);
    rift_client_pub_fail(p, &e, true);
}

/* Re-arms the deadline timer for the oldest waiter (under p->mu). */
static void arm_locked(rift_publisher *p) {
    if (p->wq_head == NULL) {
        rift_timer_stop(&p->timer);
    } else if (rift_timer_start(&p->timer, p->wq_head->deadline) != 0) {
        /* No memory for the timer heap: the deadline cannot be kept, so
         * give up now rather than wait without one. */
        rift_error e;
        rift_error_set(&e, RIFT_ERR_NOMEM, "out of memory");
        fail_locked(p, &e);
    }
}

static void timer_fired(rift_timer *t, void *arg) {
    rift_publisher *p = arg;
    (void)t;
    pthread_mutex_lock(&p->mu);
    bool expired = p->wq_head != NULL && p->wq_head->deadline <= rift_now_ns();
    if (!expired) {
        arm_locked(p);
    }
    pthread_mutex_unlock(&p->mu);
    if (expired) {
        fail_text(p, RIFT_ERR_TIMEOUT, RIFT_CLIENT_ERR_TIMEOUT);
    }
}

/* Client thread: collects the committed bytes of the chain not handed
 * over yet into |ch| (at most |max| chunks, each holding a reference to
 * its block), moving past finished blocks. Returns the chunk count and
 * adds the bytes to *bytes. */
static size_t chain_take(rift_publisher *p, rift_quic_chunk *ch, size_t max,
                         size_t *bytes) {
    size_t n = 0;
    rift_pub_block *b = p->cons;
    if (b == NULL) {
        if ((b = atomic_load_explicit(&p->first, memory_order_acquire)) ==
            NULL) {
            return 0;
        }
        p->cons = b;
        p->cons_off = 0;
    }
    while (n < max) {
        rift_pub_block *next =
            atomic_load_explicit(&b->next, memory_order_acquire);
        /* Read after `next`: once the block has a successor its committed
         * size is final. */
        size_t end = atomic_load_explicit(&b->committed, memory_order_acquire);
        if (end > p->cons_off) {
            atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
            ch[n].data = b->data + p->cons_off;
            ch[n].len = end - p->cons_off;
            ch[n].release = rift_pub_block_unref;
            ch[n].owner = b;
            *bytes += end - p->cons_off;
            n++;
            p->cons_off = end;
        }
        if (next == NULL) {
            break;
        }
        p->cons = next;
        p->cons_off = 0;
        rift_pub_block_unref(b); /* the chain's reference */
        b = next;
    }
    return n;
}

/* Client thread: starts the deadline timer for the oldest waiter if it
 * is not running. */
static void arm_waiters(rift_publisher *p) {
    if (atomic_load(&p->nwaiters) > 0 && !rift_timer_active(&p->timer)) {
        pthread_mutex_lock(&p->mu);
        if (!p->failed && p->wq_head != NULL) {
            arm_locked(p);
        }
        pthread_mutex_unlock(&p->mu);
    }
}

/* Hands everything committed so far to the stream. */
static void flush_cb(void *arg, int status) {
    rift_publisher *p = arg;
    rift_client *c = p->c;
    rift_client_stream *cs = p->cs;
    /* Cleared before looking at the chain, with a full fence that pairs
     * with the publishing threads' one: a frame committed after the look
     * finds the flag clear and posts again. */
    atomic_store_explicit(&p->kick, false, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    bool dead = cs == NULL || status != 0 || c->dead || p->stopped ||
                atomic_load(&p->failed_flag);
    int rc = 0;
    for (;;) {
        rift_quic_chunk ch[WRITE_BATCH];
        size_t bytes = 0;
        size_t n = chain_take(p, ch, WRITE_BATCH, &bytes);
        if (n == 0) {
            break;
        }
        atomic_fetch_sub_explicit(&p->buffered, bytes, memory_order_relaxed);
        if (!dead && rc == 0) {
            rc = rift_quic_stream_write(cs->qs, ch, n, false);
            if (rc == 0) {
                continue;
            }
        }
        /* Nothing can be written (any more): a stopped stream waits for
         * the server's ERROR and FIN on the read side. All or nothing:
         * these chunks' references are still ours. */
        for (size_t i = 0; i < n; i++) {
            rift_pub_block_unref(ch[i].owner);
        }
    }
    if (dead) {
        if (cs != NULL && status == 0 && !c->dead && p->stopped) {
            /* Nothing more is written, and the server's ERROR and FIN
             * may never come: a frame queued after STOP_SENDING still
             * needs its waiter's deadline. */
            arm_waiters(p);
        }
        rift_client_pub_unref(p);
        return;
    }
    if (rc != 0) {
        if (rc == RIFT_ERR_NOMEM) {
            fail_text(p, rc, "out of memory");
        } else {
            fail_text(p, RIFT_ERR_CLOSED, RIFT_CLIENT_ERR_CLOSED);
        }
    } else {
        atomic_store(&p->inflight, rift_quic_stream_unacked(cs->qs));
        arm_waiters(p);
    }
    rift_client_pub_unref(p); /* the post's reference */
}

void rift_client_pub_frame(rift_client_stream *cs, const uint8_t *body,
                           size_t len) {
    rift_publisher *p = cs->u.pub;
    rift_error e;
    int rc;
    if (body[0] == RIFT_OP_ERROR) {
        rc = rift_client_error_from_frame(body, len, &e);
        rift_client_pub_fail(p, &e, true);
        return;
    }
    if (body[0] != RIFT_OP_OK) {
        fail_text(p, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_OPCODE);
        return;
    }
    if ((rc = rift_frame_decode_empty(body + 1, len - 1, &e)) != 0) {
        rift_client_pub_fail(p, &e, true);
        return;
    }
    pthread_mutex_lock(&p->mu);
    rift_pub_waiter *w = p->wq_head;
    if (w != NULL) {
        p->wq_head = w->next;
        if (p->wq_head == NULL) {
            p->wq_tail = NULL;
        }
        waiter_complete(w, 0, NULL);
        atomic_fetch_sub(&p->nwaiters, 1);
        arm_locked(p);
    }
    pthread_mutex_unlock(&p->mu);
    if (w != NULL) {
        /* After unlocking, so the woken thread does not block on the
         * mutex at once; the publisher outlives this (the stream holds a
         * reference). */
        pthread_cond_broadcast(&p->done);
    }
    if (w == NULL) {
        /* An OK nobody asked for. */
        fail_text(p, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_OPCODE);
    }
}

void rift_client_pub_read_end(rift_client_stream *cs, bool reset) {
    (void)reset;
    fail_text(cs->u.pub, RIFT_ERR_CLOSED, RIFT_CLIENT_ERR_CLOSED);
}

void rift_client_pub_stopped(rift_client_stream *cs) {
    rift_publisher *p = cs->u.pub;
    if (cs->read_end) {
        fail_text(p, RIFT_ERR_CLOSED, RIFT_CLIENT_ERR_CLOSED);
        return;
    }
    /* The server writes ERROR and FIN before STOP_SENDING; wait for them
     * (bounded by the waiters' deadlines) so the caller gets its text. */
    p->stopped = true;
}

void rift_client_pub_acked(rift_client_stream *cs, uint64_t unacked) {
    rift_publisher *p = cs->u.pub;
    /* Lock-free unless somebody waits for room: acks are frequent and the
     * publishing threads hold the mutex for every message. Store, then
     * load `blocked` (both sequentially consistent): a publisher announces
     * itself in `blocked` before its last look at `inflight`, so either it
     * sees this value or this thread sees it and wakes it under the mutex
     * it holds until it sleeps. */
    atomic_store(&p->inflight, unacked);
    if (atomic_load(&p->blocked) > 0 &&
        unacked + atomic_load(&p->buffered) <= RIFT_CLIENT_PUB_RESUME) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->room);
        pthread_mutex_unlock(&p->mu);
    }
}

static void close_cb(void *arg, int status) {
    rift_publisher *p = arg;
    (void)status;
    rift_error e;
    rift_error_set(&e, RIFT_ERR_UNUSABLE, "%s", RIFT_CLIENT_ERR_UNUSABLE);
    rift_client_pub_fail(p, &e, true);
    rift_client_pub_unref(p);
}

/* ---- Publishing threads ---- */

/* Room for |need| more bytes at the end of the chain (under p->mu). */
static uint8_t *reserve_locked(rift_publisher *p, size_t need) {
    rift_pub_block *b = p->tail;
    if (b != NULL && b->cap - b->used >= need) {
        return b->data + b->used;
    }
    size_t cap = RIFT_MAX(need, (size_t)RIFT_CLIENT_PUB_BLOCK);
    rift_pub_block *nb = rift_pub_block_get(p->c, cap);
    if (nb == NULL) {
        return NULL;
    }
    /* Linked after the old tail's last commit (release): whoever sees
     * the link sees the old tail's final size. */
    if (b != NULL) {
        atomic_store_explicit(&b->next, nb, memory_order_release);
    } else {
        atomic_store_explicit(&p->first, nb, memory_order_release);
    }
    p->tail = nb;
    return nb->data;
}

static bool over_window(rift_publisher *p, size_t need) {
    uint64_t used = atomic_load(&p->buffered) + atomic_load(&p->inflight);
    return used > 0 && used + need > RIFT_CLIENT_PUB_WINDOW;
}

/* Waits (under p->mu) until |need| bytes fit in the window. */
static int wait_room_locked(rift_publisher *p, size_t need, rift_error *err,
                            bool *post_reset, bool *held) {
    struct timespec ts;
    bool have_deadline = false;
    while (!p->failed && over_window(p, need)) {
        if (!have_deadline) {
            rift_client_deadline_ts(&ts, p->c->op_timeout_ns);
            have_deadline = true;
        }
        if (!*held) {
            /* Blocked threads keep the publisher alive across a
             * concurrent rift_publisher_close, which wakes them. */
            pub_ref(p);
            *held = true;
        }
        atomic_fetch_add(&p->blocked, 1);
        int r = 0;
        if (over_window(p, need)) {
            r = pthread_cond_timedwait(&p->room, &p->mu, &ts);
        }
        atomic_fetch_sub(&p->blocked, 1);
        if (r == ETIMEDOUT && !p->failed) {
            rift_error e;
            rift_error_set(&e, RIFT_ERR_TIMEOUT, "%s", RIFT_CLIENT_ERR_TIMEOUT);
            fail_locked(p, &e);
            *post_reset = true;
        }
    }
    if (p->failed) {
        return failed_rc(p, err);
    }
    return 0;
}

/* Encodes PING, or a PUBLISH / PUBLISH_ACK header with its payload copied
 * behind it, into |dst| (|need| bytes). Negative when a string does not
 * fit the protocol. */
static rift_ssize encode_frame(uint8_t *dst, size_t need, uint8_t opcode,
                               const char *subject, size_t subject_len,
                               const char *reply, size_t reply_len,
                               const uint8_t *payload, size_t payload_len) {
    if (opcode == RIFT_OP_PING) {
        return rift_frame_encode_ping(dst, need);
    }
    rift_ssize n = rift_frame_encode_msg_header(
        dst, need, opcode, subject, subject_len, reply, reply_len, payload_len);
    if (n > 0 && payload_len > 0) {
        memcpy(dst + n, payload, payload_len);
    }
    return n;
}

/* Under p->mu: |w| waits for the OK of the frame just queued (stream
 * order), until its deadline. */
static void add_waiter_locked(rift_publisher *p, rift_pub_waiter *w) {
    w->next = NULL;
    w->done = false;
    w->deadline = rift_now_ns() + p->c->op_timeout_ns;
    if (p->wq_tail != NULL) {
        p->wq_tail->next = w;
    } else {
        p->wq_head = w;
    }
    p->wq_tail = w;
    atomic_fetch_add(&p->nwaiters, 1);
}

/* Under p->mu, with the kick flag just taken: posts the flush closure.
 * If the client is gone the publisher fails (completing |w| with the same
 * error); without a waiter the error is reported here. */
static int kick_locked(rift_publisher *p, rift_pub_waiter *w, rift_error *err) {
    pub_ref(p);
    rift_error e;
    int rc = rift_client_post(p->c, flush_cb, p, &e);
    if (rc != 0) {
        atomic_fetch_sub_explicit(&p->refs, 1, memory_order_relaxed);
        atomic_store(&p->kick, false);
        fail_locked(p, &e); /* completes |w| with the same error */
        if (w == NULL) {
            p->reported = true;
            rift_error_copy(err, &e);
        }
    }
    return rc;
}

/* Queues one frame (PUBLISH, PUBLISH_ACK or PING) and, with |w|, waits for
 * its OK. Subjects were validated by the caller. */
static int enqueue(rift_publisher *p, uint8_t opcode, const char *subject,
                   size_t subject_len, const char *reply, size_t reply_len,
                   const uint8_t *payload, size_t payload_len,
                   rift_pub_waiter *w, rift_error *err) {
    rift_client *c = p->c;
    size_t need =
        opcode == RIFT_OP_PING
            ? RIFT_FRAME_PREFIX_BYTES + 1
            : RIFT_FRAME_MSG_HEADER_SIZE(subject_len, reply_len) + payload_len;
    bool post_reset = false;
    bool held = w != NULL;
    int rc;
    if (held) {
        pub_ref(p);
    }
    pthread_mutex_lock(&p->mu);
    if ((rc = wait_room_locked(p, need, err, &post_reset, &held)) != 0) {
        goto out;
    }
    uint8_t *dst = reserve_locked(p, need);
    if (dst == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    rift_ssize n = encode_frame(dst, need, opcode, subject, subject_len, reply,
                                reply_len, payload, payload_len);
    if (n < 0) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                            RIFT_CLIENT_ERR_STRING);
        goto out;
    }
    rift_pub_block *tail = p->tail;
    tail->used += need;
    atomic_fetch_add_explicit(&p->buffered, need, memory_order_relaxed);
    if (w != NULL) {
        add_waiter_locked(p, w);
    }
    atomic_store_explicit(&tail->committed, tail->used, memory_order_release);
    /* Pairs with the fence in flush_cb: either it sees this frame, or
     * this thread sees the flag clear and posts. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&p->kick, memory_order_relaxed) &&
        !atomic_exchange(&p->kick, true)) {
        rc = kick_locked(p, w, err);
    }
    if (w != NULL) {
        /* The client thread's timer ends the wait at the deadline; this
         * bound, a second later, only keeps the call's promise when that
         * thread cannot get to it (a callback that blocks it). */
        struct timespec ts;
        rift_client_deadline_ts(&ts, c->op_timeout_ns + (uint64_t)RIFT_SEC);
        while (!w->done) {
            if (pthread_cond_timedwait(&p->done, &p->mu, &ts) == ETIMEDOUT &&
                !w->done && !p->failed) {
                rift_error e;
                rift_error_set(&e, RIFT_ERR_TIMEOUT, "%s",
                               RIFT_CLIENT_ERR_TIMEOUT);
                fail_locked(p, &e); /* completes |w| */
                post_reset = true;
            }
        }
        rc = w->rc;
        if (rc != 0) {
            rift_error_copy(err, &w->err);
        }
    }
out:
    pthread_mutex_unlock(&p->mu);
    if (post_reset) {
        /* The client thread resets the stream; nothing to do if the
         * client is gone (its teardown detached everything). */
        pub_ref(p);
        if (rift_client_post(c, close_cb, p, NULL) != 0) {
            rift_client_pub_unref(p);
        }
    }
    if (held) {
        rift_client_pub_unref(p);
    }
    return rc;
}

static int publish_waiting(rift_publisher *p, uint8_t opcode,
                           const char *subject, size_t subject_len,
                           const char *reply, size_t reply_len,
                           const uint8_t *payload, size_t payload_len,
                           rift_error *err) {
    rift_pub_waiter w;
    memset(&w, 0, sizeof(w));
    return enqueue(p, opcode, subject, subject_len, reply, reply_len, payload,
                   payload_len, &w, err);
}

/* ---- Public: dedicated publishers ---- */

int rift_client_publisher_open(rift_client *c, rift_publisher **pp,
                               rift_error *err) {
    rift_publisher *p = pub_new(c, false);
    if (p == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_client_call call;
    memset(&call, 0, sizeof(call));
    call.c = c;
    call.kind = RIFT_CALL_PUBLISHER;
    call.attach = attach_stream;
    call.owner = p;
    call.timeout_ns = c->op_timeout_ns;
    int rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        rift_client_pub_unref(p);
        return rc;
    }
    *pp = p;
    return 0;
}

int rift_publisher_publish(rift_publisher *p, const char *subject,
                           size_t subject_len, const char *reply,
                           size_t reply_len, const uint8_t *payload,
                           size_t payload_len, rift_error *err) {
    int rc = rift_client_check_publish(subject, subject_len, reply, reply_len,
                                       payload_len, err);
    if (rc != 0) {
        return rc;
    }
    return enqueue(p, RIFT_OP_PUBLISH, subject, subject_len, reply, reply_len,
                   payload, payload_len, NULL, err);
}

int rift_publisher_publish_confirmed(rift_publisher *p, const char *subject,
                                     size_t subject_len, const char *reply,
                                     size_t reply_len, const uint8_t *payload,
                                     size_t payload_len, rift_error *err) {
    int rc = rift_client_check_publish(subject, subject_len, reply, reply_len,
                                       payload_len, err);
    if (rc != 0) {
        return rc;
    }
    return publish_waiting(p, RIFT_OP_PUBLISH_ACK, subject, subject_len, reply,
                           reply_len, payload, payload_len, err);
}

int rift_publisher_flush(rift_publisher *p, rift_error *err) {
    return publish_waiting(p, RIFT_OP_PING, NULL, 0, NULL, 0, NULL, 0, err);
}

void rift_publisher_close(rift_publisher *p) {
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        rift_error e;
        rift_error_set(&e, RIFT_ERR_UNUSABLE, "%s", RIFT_CLIENT_ERR_UNUSABLE);
        fail_locked(p, &e);
        p->reported = true;
    }
    pthread_mutex_unlock(&p->mu);
    pub_ref(p);
    if (rift_client_post(p->c, close_cb, p, NULL) != 0) {
        rift_client_pub_unref(p);
    }
    rift_client_pub_unref(p);
}

/* ---- Public: the shared publisher ---- */

/* Returns the shared publisher with a reference for the caller, opening a
 * new stream when there is none or the last one failed. */
static int shared_get(rift_client *c, rift_publisher **pp, rift_error *err) {
    int rc = 0;
    pthread_mutex_lock(&c->shared_mu);
    rift_publisher *p = c->shared;
    if (p != NULL) {
        pthread_mutex_lock(&p->mu);
        bool failed = p->failed;
        pthread_mutex_unlock(&p->mu);
        if (failed) {
            c->shared = NULL;
            rift_publisher_close(p);
            p = NULL;
        }
    }
    if (p == NULL) {
        if ((p = pub_new(c, true)) == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        rift_client_call call;
        memset(&call, 0, sizeof(call));
        call.c = c;
        call.kind = RIFT_CALL_PUBLISHER;
        call.attach = attach_stream;
        call.owner = p;
        call.timeout_ns = c->op_timeout_ns;
        if ((rc = rift_client_call_run(&call, err)) != 0) {
            rift_client_pub_unref(p);
            goto out;
        }
        c->shared = p;
    }
    pub_ref(p);
    *pp = p;
out:
    pthread_mutex_unlock(&c->shared_mu);
    return rc;
}

int rift_client_publish_with_reply(rift_client *c, const char *subject,
                                   size_t subject_len, const char *reply,
                                   size_t reply_len, const uint8_t *payload,
                                   size_t payload_len, rift_error *err) {
    int rc = rift_client_check_publish(subject, subject_len, reply, reply_len,
                                       payload_len, err);
    if (rc != 0) {
        return rc;
    }
    rift_publisher *p;
    if ((rc = shared_get(c, &p, err)) != 0) {
        return rc;
    }
    rc = publish_waiting(p, RIFT_OP_PUBLISH_ACK, subject, subject_len, reply,
                         reply_len, payload, payload_len, err);
    rift_client_pub_unref(p);
    return rc;
}

int rift_client_publish(rift_client *c, const char *subject, size_t subject_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_error *err) {
    return rift_client_publish_with_reply(c, subject, subject_len, NULL, 0,
                                          payload, payload_len, err);
}
