/*
 * push_consumer.c — push consumers of the Rift client (client layer,
 * rift/client_push.h): PUSH_OPEN on a stream of its own, run as a call
 * until the server's OK (call.c, like SUBSCRIBE), then the stream's
 * DELIVERY frames go to the application's callback on the client thread
 * and its acks go back as PUSH_ACK frames on the same stream
 * (docs/protocol-v1.md E.5).
 *
 * Acks come from any thread: they are encoded into a buffer under the
 * push's mutex and one post to the client thread writes whatever
 * gathered meanwhile, so a callback acking every delivery costs one write
 * per QUIC callback, not one per record. Deliveries are credited back to
 * the server at once: the server's max_in_flight bounds what one push
 * may have outstanding.
 *
 * Lifetime: the application's handle and the attached stream each hold a
 * reference, as does every queued post. rift_client_push_close detaches
 * the stream on the client thread (and waits for that, unless it is the
 * client thread), so no callback runs after it returns.
 */
#include "client/client_internal.h"

#include "codec/frame_ext_push.h"

#include <string.h>

struct rift_client_push {
    rift_client *c;
    atomic_int refs;
    rift_client_push_cb cb;
    void *ud;
    char stream[RIFT_FRAME_MAX_STRING];
    size_t stream_len;
    char name[RIFT_FRAME_MAX_STRING];
    size_t name_len;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    /* Under mu: encoded PUSH_ACK frames not yet written, whether a flush
     * is posted, whether the push ended (no more acks), and whether the
     * close reached the client thread. */
    uint8_t *acks;
    size_t acks_len, acks_cap;
    bool ack_posted;
    bool ended;
    bool close_done;
    bool flushed; /* closing: the acks and FIN reached the server */
    /* Client thread. */
    rift_client_stream *cs;
    bool closing; /* closed by the application: no more callbacks */
};

static const char text_ended[] = "push ended";

void rift_client_push_config_default(rift_client_push_config *cfg) {
    cfg->max_in_flight = 1024;
    cfg->ack_wait_ms = 0;
}

static void push_ref(rift_client_push *p) {
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

static void push_unref(rift_client_push *p) {
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    rift_client *c = p->c;
    rift_free(c->mem, p->acks);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    rift_free(c->mem, p);
    rift_client_unref(c);
}

/* ---- Client thread ---- */

/* No acks are taken any more (those gathered are still written by a
 * close). */
static void mark_ended(rift_client_push *p) {
    pthread_mutex_lock(&p->mu);
    p->ended = true;
    pthread_mutex_unlock(&p->mu);
}

static void attach_stream(void *owner, rift_client_stream *cs) {
    rift_client_push *p = owner;
    cs->kind = RIFT_CS_PUSH;
    cs->u.push = p;
    p->cs = cs;
    push_ref(p);
}

/* Detaches the stream (resetting it when |reset|) and drops its
 * reference. */
static void detach(rift_client_push *p, bool reset) {
    rift_client_stream *cs = p->cs;
    if (cs == NULL) {
        return;
    }
    p->cs = NULL;
    if (reset) {
        rift_client_stream_abort(cs);
    } else {
        cs->kind = RIFT_CS_NONE;
        cs->u.push = NULL;
    }
    push_unref(p);
}

static void set_flushed(rift_client_push *p) {
    pthread_mutex_lock(&p->mu);
    p->flushed = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
}

void rift_client_push_fail(rift_client_push *p, const rift_error *e,
                           bool reset) {
    mark_ended(p);
    set_flushed(p);
    if (!p->closing && p->cs != NULL) {
        p->cb(p->ud, p, e->code != 0 ? e->code : RIFT_ERR_CLOSED, NULL, e);
    }
    detach(p, reset);
}

static void fail_text(rift_client_push *p, int code, const char *text) {
    rift_error e;
    rift_error_set(&e, code, "%s", text);
    rift_client_push_fail(p, &e, true);
}

void rift_client_push_frame(rift_client_stream *cs, const rift_frame_body *b) {
    rift_client_push *p = cs->u.push;
    rift_error e;
    if (b->data[0] == RIFT_OP_ERROR) {
        (void)rift_client_error_from_frame(b->data, b->len, &e);
        rift_client_push_fail(p, &e, true);
        return;
    }
    if (b->data[0] != RIFT_OP_DELIVERY) {
        fail_text(p, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_OPCODE);
        return;
    }
    rift_frame_delivery d;
    if (rift_frame_decode_delivery(b->data + 1, b->len - 1, &d, &e) != 0) {
        rift_client_push_fail(p, &e, true);
        return;
    }
    rift_frame_msg f = {d.subject,   d.subject_len, d.reply,
                        d.reply_len, d.payload,     d.payload_len};
    uint8_t *detached = b->assembled ? rift_frame_reader_detach(&cs->rd) : NULL;
    rift_client_delivery out = {NULL, d.sequence, d.timestamp_ms,
                                d.delivery_count};
    if (rift_client_msg_build(&out.msg, cs->c->mem, cs->c->msgs, &f,
                              detached) != 0) {
        fail_text(p, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    if (p->closing) {
        rift_msg_unref(out.msg);
        return;
    }
    p->cb(p->ud, p, 0, &out, NULL);
}

static void ack_frames_release(void *owner) {
    rift_client_frame *f = owner;
    rift_free(f->mem, f);
}

/* Writes the gathered acks on the push stream (client thread). */
static void write_acks(rift_client_push *p) {
    pthread_mutex_lock(&p->mu);
    size_t n = p->acks_len;
    uint8_t *buf = p->acks;
    p->acks = NULL;
    p->acks_len = p->acks_cap = 0;
    pthread_mutex_unlock(&p->mu);
    rift_client *c = p->c;
    if (n > 0 && p->cs != NULL && p->cs->qs != NULL) {
        /* The stream takes a copy (released once acknowledged). */
        rift_client_frame *fr =
            rift_malloc(c->mem, sizeof(rift_client_frame) + n);
        if (fr != NULL) {
            fr->mem = c->mem;
            fr->len = n;
            memcpy(fr->data, buf, n);
            rift_quic_chunk ch = {fr->data, n, ack_frames_release, fr};
            if (rift_quic_stream_write(p->cs->qs, &ch, 1, false) != 0) {
                rift_free(c->mem, fr);
            }
        }
    }
    rift_free(c->mem, buf);
}

static void ack_flush_cb(void *arg, int status) {
    rift_client_push *p = arg;
    pthread_mutex_lock(&p->mu);
    p->ack_posted = false;
    pthread_mutex_unlock(&p->mu);
    if (status == 0) {
        write_acks(p);
    }
    push_unref(p);
}

/* Ends the push from our side: the acks made so far, then FIN, which the
 * server reads after them (a reset would drop them unsent) and answers
 * with its own; the stream stays attached until then, or until the
 * transport reports everything acknowledged (|flushed|). Deliveries
 * still on their way are dropped here and come again after their ack
 * wait. */
static void end_push(rift_client_push *p) {
    p->closing = true;
    write_acks(p);
    if (p->cs == NULL || p->cs->qs == NULL ||
        rift_quic_stream_write(p->cs->qs, NULL, 0, true) != 0) {
        detach(p, true);
        set_flushed(p);
    } else if (rift_quic_stream_unacked(p->cs->qs) == 0) {
        set_flushed(p);
    }
}

void rift_client_push_acked(rift_client_stream *cs, uint64_t unacked) {
    rift_client_push *p = cs->u.push;
    if (p->closing && unacked == 0) {
        set_flushed(p);
    }
}

static void close_cb(void *arg, int status) {
    rift_client_push *p = arg;
    (void)status;
    end_push(p);
    pthread_mutex_lock(&p->mu);
    p->close_done = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    push_unref(p); /* the post's */
}

/* ---- Application threads ---- */

int rift_client_push_open(rift_client *c, const char *stream, size_t stream_len,
                          const char *name, size_t name_len,
                          const rift_client_push_config *cfg,
                          rift_client_push_cb cb, void *user_data,
                          rift_client_push **push, rift_error *err) {
    int rc;
    rift_client_push_config dflt;
    if (cfg == NULL) {
        rift_client_push_config_default(&dflt);
        cfg = &dflt;
    }
    if (cb == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "push: a callback is required");
    }
    if ((rc = rift_client_check_string(stream, stream_len, err)) != 0 ||
        (rc = rift_client_check_string(name, name_len, err)) != 0) {
        return rc;
    }
    if (cfg->max_in_flight == 0 ||
        cfg->max_in_flight > RIFT_EXT_MAX_IN_FLIGHT) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_IN_FLIGHT);
    }
    if (cfg->ack_wait_ms > RIFT_EXT_MAX_ACK_WAIT_MS) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_ACK_WAIT);
    }
    uint8_t
        hdr[RIFT_FRAME_PREFIX_BYTES + 1 + 2 * (2 + RIFT_FRAME_MAX_STRING) + 8];
    rift_frame_push_open f = {stream,   stream_len,         name,
                              name_len, cfg->max_in_flight, cfg->ack_wait_ms,
                              0};
    rift_ssize n = rift_frame_encode_push_open(hdr, sizeof(hdr), &f);
    if (n < 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_CLIENT_ERR_STRING);
    }
    rift_client_push *p = rift_calloc(c->mem, 1, sizeof(*p));
    if (p == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (rift_client_cond_init(&p->cond) != 0) {
        rift_free(c->mem, p);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    p->c = c;
    p->cb = cb;
    p->ud = user_data;
    memcpy(p->stream, stream, stream_len);
    p->stream_len = stream_len;
    memcpy(p->name, name, name_len);
    p->name_len = name_len;
    atomic_init(&p->refs, 1);
    rift_client_ref(c);

    rift_client_call call;
    memset(&call, 0, sizeof(call));
    call.c = c;
    call.kind = RIFT_CALL_PUSH;
    call.hdr = hdr;
    call.hdr_len = (size_t)n;
    call.attach = attach_stream;
    call.owner = p;
    call.timeout_ns = c->op_timeout_ns;
    if ((rc = rift_client_call_run(&call, err)) != 0) {
        push_unref(p);
        return rc;
    }
    *push = p;
    return 0;
}

int rift_client_push_ack(rift_client_push *p, uint64_t sequence,
                         rift_error *err) {
    rift_frame_push_ack f = {p->stream,   p->stream_len, p->name,
                             p->name_len, sequence,      0};
    size_t need =
        RIFT_FRAME_PREFIX_BYTES + 1 + 2 + p->stream_len + 2 + p->name_len + 8;
    pthread_mutex_lock(&p->mu);
    if (p->ended) {
        pthread_mutex_unlock(&p->mu);
        return rift_error_set(err, RIFT_ERR_CLOSED, "%s", text_ended);
    }
    if (p->acks_cap - p->acks_len < need) {
        size_t cap = p->acks_cap ? p->acks_cap * 2 : 1024;
        while (cap - p->acks_len < need) {
            cap *= 2;
        }
        uint8_t *b = rift_realloc(p->c->mem, p->acks, cap);
        if (b == NULL) {
            pthread_mutex_unlock(&p->mu);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        p->acks = b;
        p->acks_cap = cap;
    }
    rift_ssize n = rift_frame_encode_push_ack(p->acks + p->acks_len,
                                              p->acks_cap - p->acks_len, &f);
    if (n > 0) {
        p->acks_len += (size_t)n;
    }
    bool post = !p->ack_posted;
    p->ack_posted = true;
    pthread_mutex_unlock(&p->mu);
    if (!post) {
        return 0;
    }
    push_ref(p);
    int rc = rift_client_post(p->c, ack_flush_cb, p, err);
    if (rc != 0) {
        pthread_mutex_lock(&p->mu);
        p->ack_posted = false;
        pthread_mutex_unlock(&p->mu);
        push_unref(p);
    }
    return rc;
}

void rift_client_push_close(rift_client_push *p) {
    if (p == NULL) {
        return;
    }
    rift_client *c = p->c;
    mark_ended(p);
    if (c->thread_started && pthread_equal(pthread_self(), c->thread)) {
        /* From the callback: nothing else runs on this thread meanwhile. */
        end_push(p);
        push_unref(p);
        return;
    }
    push_ref(p);
    if (rift_client_post(c, close_cb, p, NULL) != 0) {
        /* The connection is gone: its end detached the stream already,
         * on the client thread, after which no callback runs. */
        push_unref(p);
        push_unref(p);
        return;
    }
    pthread_mutex_lock(&p->mu);
    while (!p->close_done) {
        pthread_cond_wait(&p->cond, &p->mu);
    }
    /* The acks made before the close reach the server before it returns
     * (within the operation timeout), so a process may exit right after. */
    struct timespec until;
    rift_client_deadline_ts(&until, c->op_timeout_ns);
    while (!p->flushed &&
           pthread_cond_timedwait(&p->cond, &p->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&p->mu);
    push_unref(p);
}
