/*
 * call.c — one-shot operations of the Rift client (client layer): request,
 * stream publish, consumer open, fetch and ack, plus the two calls that
 * open long-lived streams (subscribe, publisher).
 *
 * A call lives on the caller's stack. The caller encodes the frame header,
 * posts the call to the client thread and waits on the call's condition
 * variable; the client thread opens a stream (or queues the call until the
 * server grants more streams), writes header and payload (copied: they are
 * borrowed only for the call) with FIN, reads the answer, and completes
 * the call exactly once — answer, server ERROR, stream end, connection end
 * or the call's deadline timer, whichever comes first. After completing it
 * the client thread never touches the call again.
 */
#include "client/client_internal.h"
#include "codec/frame_ext.h"

#include <string.h>

/* ---- Client thread ---- */

static void open_queue_remove(rift_client *c, rift_client_call *call) {
    rift_client_call **pp = &c->open_head;
    rift_client_call *prev = NULL;
    while (*pp != NULL && *pp != call) {
        prev = *pp;
        pp = &(*pp)->next_open;
    }
    if (*pp == call) {
        *pp = call->next_open;
        if (c->open_tail == call) {
            c->open_tail = prev;
        }
    }
    call->next_open = NULL;
    call->queued = false;
}

static void frame_release(void *owner) {
    rift_client_frame *f = owner;
    rift_free(f->mem, f);
}

/* Client thread: runs an asynchronous call's callback and frees it. */
static void async_complete(rift_client_call *call, int rc,
                           const rift_error *e) {
    const rift_mem *mem = call->c->mem;
    rift_client *c = call->c;
    switch (call->kind) {
    case RIFT_CALL_STREAM_PUBLISH:
        call->fn.stored(call->fn_arg, rc, rc == 0 ? &call->stored : NULL,
                        rc == 0 ? NULL : e);
        break;
    case RIFT_CALL_FETCH:
        call->fn.fetched(call->fn_arg, rc, call->out, rc == 0 ? call->nmsgs : 0,
                         rc == 0 ? NULL : e);
        break;
    case RIFT_CALL_STREAM_INFO:
        call->fn.sinfo(call->fn_arg, rc, rc == 0 ? call->sinfo : NULL,
                       rc == 0 ? NULL : e);
        break;
    case RIFT_CALL_CONSUMER_INFO:
        call->fn.cinfo(call->fn_arg, rc, rc == 0 ? call->info : NULL,
                       rc == 0 ? NULL : e);
        break;
    case RIFT_CALL_CONSUMER_LIST:
        call->fn.listed(call->fn_arg, rc, rc == 0 ? call->entries : NULL,
                        rc == 0 ? call->nentries : 0, rc == 0 && call->more,
                        rc == 0 ? NULL : e);
        rift_client_consumer_list_free(call->entries);
        break;
    default:
        call->fn.done(call->fn_arg, rc, rc == 0 ? NULL : e);
        break;
    }
    if (call->frame != NULL) {
        frame_release(call->frame);
    }
    rift_free(mem, call);
    rift_client_unref(c); /* the call's reference */
}

void rift_client_call_finish(rift_client_call *call, int rc,
                             const rift_error *e) {
    rift_client *c = call->c;
    rift_timer_stop(&call->timer);
    if (call->queued) {
        open_queue_remove(c, call);
    }
    rift_client_stream *cs = call->cs;
    call->cs = NULL;
    if (cs != NULL && cs->kind == RIFT_CS_CALL && cs->u.call == call) {
        if (rc != 0) {
            rift_client_stream_abort(cs);
        } else {
            /* Like the original dropping its receive half after the
             * answer: STOP_SENDING(0) unless the FIN already came. */
            cs->kind = RIFT_CS_NONE;
            cs->u.call = NULL;
            if (!cs->read_end && cs->qs != NULL) {
                rift_quic_stream_shutdown_read(cs->qs, 0);
            }
        }
    }
    if (rc != 0) {
        rift_msg_unref(call->msg);
        call->msg = NULL;
        for (size_t i = 0; i < call->nmsgs; i++) {
            rift_msg_unref(call->out[i].msg);
            call->out[i].msg = NULL;
        }
        call->nmsgs = 0;
    }
    if (call->async) {
        async_complete(call, rc, e);
        return;
    }
    /* Signal under the lock: the caller destroys the condition variable
     * as soon as it sees `done`. */
    pthread_mutex_lock(&c->mu);
    call->rc = rc;
    if (rc != 0 && e != NULL) {
        rift_error_copy(call->err, e);
    } else if (rc != 0) {
        rift_error_set(call->err, rc, "%s", rift_strerror(rc));
    }
    call->done = true;
    pthread_cond_signal(&call->cond);
    pthread_mutex_unlock(&c->mu);
}

static void finish_text(rift_client_call *call, int code, const char *text) {
    rift_error e;
    rift_error_set(&e, code, "%s", text);
    rift_client_call_finish(call, code, &e);
}

static void finish_dead(rift_client_call *call) {
    rift_error e;
    int rc = rift_client_dead_error(call->c, &e);
    if (rc == 0) {
        rc = rift_error_set(&e, RIFT_ERR_CONNECTION, "%s",
                            RIFT_CLIENT_ERR_SHUTDOWN);
    }
    rift_client_call_finish(call, rc, &e);
}

/* Opens the call's stream and writes its frame. RIFT_ERR_AGAIN means no
 * stream credit: the caller queues the call. */
static int try_open(rift_client_call *call) {
    rift_client *c = call->c;
    rift_client_stream *cs;
    int rc = rift_client_stream_open(c, RIFT_CS_CALL, call, &cs);
    if (rc == RIFT_ERR_AGAIN) {
        return rc;
    }
    if (rc != 0) {
        if (rc == RIFT_ERR_NOMEM) {
            finish_text(call, rc, "out of memory");
        } else {
            finish_dead(call);
        }
        return 0;
    }
    call->cs = cs;
    if (call->kind == RIFT_CALL_PUBLISHER) {
        call->attach(call->owner, cs);
        call->cs = NULL;
        rift_client_call_finish(call, 0, NULL);
        return 0;
    }
    if (call->frame != NULL) {
        /* An asynchronous call's own copy goes to the stream as it is. */
        rift_quic_chunk ch = {call->frame->data, call->frame->len,
                              frame_release, call->frame};
        rc = rift_quic_stream_write(cs->qs, &ch, 1, call->fin);
        if (rc == 0) {
            call->frame = NULL;
        }
    } else {
        rift_quic_chunk ch[2] = {
            {call->hdr, call->hdr_len, NULL, NULL},
            {call->payload, call->payload_len, NULL, NULL},
        };
        rc = rift_quic_stream_write(cs->qs, ch, call->payload_len > 0 ? 2 : 1,
                                    call->fin);
    }
    if (rc == RIFT_ERR_NOMEM) {
        finish_text(call, rc, "out of memory");
    } else if (rc != 0) {
        finish_text(call, RIFT_ERR_CLOSED, RIFT_CLIENT_ERR_CLOSED);
    }
    return 0;
}

static void call_timeout(rift_timer *t, void *arg) {
    (void)t;
    finish_text(arg, RIFT_ERR_TIMEOUT, RIFT_CLIENT_ERR_TIMEOUT);
}

static void call_start(void *arg, int status) {
    rift_client_call *call = arg;
    rift_client *c = call->c;
    if (status != 0 || c->dead) {
        finish_dead(call);
        return;
    }
    if (rift_timer_start(&call->timer, rift_now_ns() + call->timeout_ns) != 0) {
        finish_text(call, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    if (try_open(call) == RIFT_ERR_AGAIN) {
        call->queued = true;
        call->next_open = NULL;
        if (c->open_tail != NULL) {
            c->open_tail->next_open = call;
        } else {
            c->open_head = call;
        }
        c->open_tail = call;
    }
}

void rift_client_calls_retry_open(rift_client *c) {
    while (c->open_head != NULL) {
        rift_client_call *call = c->open_head;
        c->open_head = call->next_open;
        if (c->open_head == NULL) {
            c->open_tail = NULL;
        }
        call->queued = false;
        call->next_open = NULL;
        if (try_open(call) == RIFT_ERR_AGAIN) {
            call->queued = true;
            call->next_open = c->open_head;
            c->open_head = call;
            if (c->open_tail == NULL) {
                c->open_tail = call;
            }
            return;
        }
    }
}

static void unexpected(rift_client_call *call) {
    finish_text(call, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_OPCODE);
}

/* A MESSAGE or DELIVERY body as a message; takes the reader's assembly
 * buffer when the body is in it. */
static int build_msg(rift_client_stream *cs, const rift_frame_body *b,
                     const rift_frame_msg *f, rift_msg **pm) {
    uint8_t *detached = b->assembled ? rift_frame_reader_detach(&cs->rd) : NULL;
    return rift_client_msg_build(pm, cs->c->mem, cs->c->msgs, f, detached);
}

static void fetch_frame(rift_client_stream *cs, rift_client_call *call,
                        const rift_frame_body *b) {
    rift_error e;
    int rc;
    if (b->data[0] == RIFT_OP_OK) {
        rc = rift_frame_decode_empty(b->data + 1, b->len - 1, &e);
        rift_client_call_finish(call, rc, &e);
        return;
    }
    if (b->data[0] != RIFT_OP_DELIVERY) {
        unexpected(call);
        return;
    }
    if (call->nmsgs >= call->limit) {
        finish_text(call, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_FETCH);
        return;
    }
    rift_frame_delivery d;
    if ((rc = rift_frame_decode_delivery(b->data + 1, b->len - 1, &d, &e)) !=
        0) {
        rift_client_call_finish(call, rc, &e);
        return;
    }
    rift_frame_msg f = {d.subject,   d.subject_len, d.reply,
                        d.reply_len, d.payload,     d.payload_len};
    rift_client_delivery *out = &call->out[call->nmsgs];
    if (build_msg(cs, b, &f, &out->msg) != 0) {
        finish_text(call, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    out->sequence = d.sequence;
    out->timestamp_ms = d.timestamp_ms;
    out->delivery_count = d.delivery_count;
    call->nmsgs++;
}

void rift_client_call_frame(rift_client_stream *cs, const rift_frame_body *b) {
    rift_client_call *call = cs->u.call;
    const uint8_t *body = b->data;
    size_t len = b->len;
    rift_error e;
    int rc;
    if (body[0] == RIFT_OP_ERROR) {
        rc = rift_client_error_from_frame(body, len, &e);
        if (call->kind == RIFT_CALL_EXT_HELLO && rc == RIFT_ERR_REMOTE &&
            strcmp(e.text, RIFT_FRAME_ERR_OPCODE) == 0) {
            /* A v1 server: the probe's answer, not a failure. */
            call->ext_none = true;
            rc = 0;
        }
        rift_client_call_finish(call, rc, &e);
        return;
    }
    switch (call->kind) {
    case RIFT_CALL_REQUEST: {
        if (body[0] != RIFT_OP_MESSAGE) {
            unexpected(call);
            return;
        }
        rift_frame_msg f;
        if ((rc = rift_frame_decode_msg(body + 1, len - 1, &f, &e)) != 0) {
            rift_client_call_finish(call, rc, &e);
            return;
        }
        if (build_msg(cs, b, &f, &call->msg) != 0) {
            finish_text(call, RIFT_ERR_NOMEM, "out of memory");
            return;
        }
        rift_client_call_finish(call, 0, NULL);
        return;
    }
    case RIFT_CALL_STREAM_PUBLISH: {
        if (body[0] != RIFT_OP_STORED) {
            unexpected(call);
            return;
        }
        rift_frame_stored st;
        rc = rift_frame_decode_stored(body + 1, len - 1, &st, &e);
        if (rc == 0) {
            call->stored.sequence = st.sequence;
            call->stored.timestamp_ms = st.timestamp_ms;
        }
        rift_client_call_finish(call, rc, &e);
        return;
    }
    case RIFT_CALL_FETCH:
        fetch_frame(cs, call, b);
        return;
    case RIFT_CALL_SUBSCRIBE:
    case RIFT_CALL_PUSH:
        rc = rift_client_expect_ok(body, len, &e);
        if (rc == 0) {
            /* From here on the stream delivers MESSAGE frames, possibly
             * in the very chunk that carried this OK. */
            call->attach(call->owner, cs);
            call->cs = NULL;
        }
        rift_client_call_finish(call, rc, &e);
        return;
    case RIFT_CALL_EXT_HELLO:
    case RIFT_CALL_CONSUMER_INFO:
    case RIFT_CALL_CONSUMER_LIST:
        if (body[0] != (call->kind == RIFT_CALL_EXT_HELLO ? RIFT_OP_EXT_INFO
                        : call->kind == RIFT_CALL_CONSUMER_INFO
                            ? RIFT_OP_CONSUMER_INFO
                            : RIFT_OP_CONSUMER_LIST_RESULT)) {
            unexpected(call);
            return;
        }
        rc = rift_client_ext_answer(call, body, len, &e);
        rift_client_call_finish(call, rc, &e);
        return;
    case RIFT_CALL_STREAM_INFO:
        rc = rift_client_stream_answer(call, body, len, &e);
        rift_client_call_finish(call, rc, &e);
        return;
    case RIFT_CALL_CONSUMER_OPEN:
    case RIFT_CALL_ACK:
    case RIFT_CALL_PUBLISHER:
        rc = rift_client_expect_ok(body, len, &e);
        rift_client_call_finish(call, rc, &e);
        return;
    }
}

/* ---- Calling thread ---- */

int rift_client_call_run(rift_client_call *call, rift_error *err) {
    rift_client *c = call->c;
    call->done = false;
    call->cs = NULL;
    call->queued = false;
    call->next_open = NULL;
    if (pthread_cond_init(&call->cond, NULL) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    /* rift_client_del from another thread ends this wait ("client
     * closed"); the reference keeps the client, its mutex above all,
     * alive until this thread is done with it. */
    rift_client_ref(c);
    /* Only sets fields: the client thread starts the timer. */
    rift_timer_init(c->loop, &call->timer, call_timeout, call);
    int rc;
    call->err = err;
    pthread_mutex_lock(&c->mu);
    if (c->closing || c->conn_dead) {
        rc = c->closing
                 ? rift_error_set(err, RIFT_ERR_CONNECTION, "%s",
                                  RIFT_CLIENT_ERR_SHUTDOWN)
                 : (rift_error_copy(err, &c->conn_err), c->conn_err.code);
    } else if ((rc = rift_loop_post(c->loop, call_start, call)) != 0) {
        rift_error_set(err, rc, "out of memory");
    } else {
        /* The client thread writes |err| (under c->mu) on failure. */
        while (!call->done) {
            pthread_cond_wait(&call->cond, &c->mu);
        }
        rc = call->rc;
    }
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&call->cond);
    rift_client_unref(c);
    return rc;
}

void rift_client_call_init(rift_client_call *call, rift_client *c,
                           rift_call_kind kind, const uint8_t *hdr,
                           rift_ssize n) {
    memset(call, 0, sizeof(*call));
    call->c = c;
    call->kind = kind;
    call->hdr = hdr;
    call->hdr_len = (size_t)n;
    call->fin = true;
    call->timeout_ns = c->op_timeout_ns;
}

/* Maps an encoder failure to the original client's texts. */
static int encode_error(rift_ssize n, rift_error *err) {
    if (n == RIFT_ERR_PAYLOAD_TOO_LARGE) {
        return rift_error_set(err, (int)n, "%s", RIFT_CLIENT_ERR_FRAME);
    }
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                          RIFT_CLIENT_ERR_STRING);
}

/* The checks and header encoding each stream call shares with its
 * asynchronous twin: the header length in |hdr|, or a negative error code
 * with |err| set. */
static rift_ssize encode_stream_publish(uint8_t *hdr, const char *stream,
                                        size_t stream_len, const char *subject,
                                        size_t subject_len, const char *reply,
                                        size_t reply_len, size_t payload_len,
                                        rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    if (rc != 0 ||
        (rc = rift_client_check_publish(subject, subject_len, reply, reply_len,
                                        payload_len, err)) != 0) {
        return rc;
    }
    rift_ssize n = rift_frame_encode_stream_publish_header(
        hdr, RIFT_FRAME_HEADER_MAX, stream, stream_len, subject, subject_len,
        reply, reply_len, payload_len);
    return n < 0 ? encode_error(n, err) : n;
}

/* A stream and consumer name pair, checked as every consumer call does. */
static int check_consumer(const char *stream, size_t stream_len,
                          const char *name, size_t name_len, rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    return rc != 0 ? rc : rift_client_check_string(name, name_len, err);
}

static rift_ssize encode_fetch(uint8_t *hdr, const char *stream,
                               size_t stream_len, const char *name,
                               size_t name_len, uint32_t limit,
                               rift_error *err) {
    int rc = check_consumer(stream, stream_len, name, name_len, err);
    if (rc != 0) {
        return rc;
    }
    if (limit == 0 || limit > RIFT_FRAME_MAX_FETCH) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "fetch limit must be 1..256");
    }
    rift_ssize n = rift_frame_encode_consumer_fetch(
        hdr, RIFT_FRAME_HEADER_MAX, stream, stream_len, name, name_len, limit);
    return n < 0 ? encode_error(n, err) : n;
}

static rift_ssize encode_ack(uint8_t *hdr, const char *stream,
                             size_t stream_len, const char *name,
                             size_t name_len, uint64_t sequence,
                             rift_error *err) {
    int rc = check_consumer(stream, stream_len, name, name_len, err);
    if (rc != 0) {
        return rc;
    }
    rift_ssize n = rift_frame_encode_ack(hdr, RIFT_FRAME_HEADER_MAX, stream,
                                         stream_len, name, name_len, sequence);
    return n < 0 ? encode_error(n, err) : n;
}

int rift_client_request(rift_client *c, const char *subject, size_t subject_len,
                        const uint8_t *payload, size_t payload_len,
                        int64_t timeout_ns, rift_msg **preply,
                        rift_error *err) {
    /* The wire carries whole milliseconds: round up, so a positive wait
     * never becomes 0; 0 and negative fail the 1..120000 ms check. */
    uint64_t timeout_ms =
        timeout_ns <= 0 ? 0
                        : ((uint64_t)timeout_ns + RIFT_MSEC - 1) / RIFT_MSEC;
    int rc = rift_client_check_request_timeout(timeout_ms, err);
    if (rc != 0 || (rc = rift_client_check_publish(subject, subject_len, NULL,
                                                   0, payload_len, err)) != 0) {
        return rc;
    }
    uint8_t hdr[RIFT_FRAME_PREFIX_BYTES + 1 + 4 + 2 + RIFT_FRAME_MAX_SUBJECT];
    rift_ssize n =
        rift_frame_encode_request_header(hdr, sizeof(hdr), (uint32_t)timeout_ms,
                                         subject, subject_len, payload_len);
    if (n < 0) {
        return encode_error(n, err);
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_REQUEST, hdr, n);
    call.payload = payload;
    call.payload_len = payload_len;
    call.timeout_ns =
        (timeout_ms + RIFT_CLIENT_REQUEST_GRACE_MS) * (uint64_t)1000000u;
    rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        return rc;
    }
    *preply = call.msg;
    return 0;
}

int rift_client_stream_publish(rift_client *c, const char *stream,
                               size_t stream_len, const char *subject,
                               size_t subject_len, const char *reply,
                               size_t reply_len, const uint8_t *payload,
                               size_t payload_len, rift_stored *stored,
                               rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_stream_publish(hdr, stream, stream_len, subject, subject_len,
                              reply, reply_len, payload_len, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_STREAM_PUBLISH, hdr, n);
    call.payload = payload;
    call.payload_len = payload_len;
    int rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        return rc;
    }
    if (stored != NULL) {
        *stored = call.stored;
    }
    return 0;
}

int rift_client_consumer_open(rift_client *c, const char *stream,
                              size_t stream_len, const char *name,
                              size_t name_len,
                              const rift_consumer_config *config,
                              rift_error *err) {
    rift_consumer_config cfg;
    if (config != NULL) {
        cfg = *config;
    } else {
        rift_consumer_config_default(&cfg);
    }
    if (cfg.filter == NULL || cfg.filter_len == 0) {
        cfg.filter = ">";
        cfg.filter_len = 1;
    }
    int rc;
    if ((rc = check_consumer(stream, stream_len, name, name_len, err)) != 0 ||
        (rc = rift_client_check_string(cfg.filter, cfg.filter_len, err)) != 0) {
        return rc;
    }
    if (cfg.ack_wait_ms > UINT32_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "ack wait too large");
    }
    if (cfg.start != RIFT_START_SEQUENCE) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_ARGUMENT,
            "start position must be RIFT_START_SEQUENCE over the wire");
    }
    if (cfg.max_deliver != 0) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_ARGUMENT,
            "max_deliver needs rift_client_consumer_open_ext");
    }
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = rift_frame_encode_consumer_open(
        hdr, sizeof(hdr), stream, stream_len, name, name_len, cfg.filter,
        cfg.filter_len, cfg.start_sequence, (uint32_t)cfg.ack_wait_ms,
        cfg.max_ack_pending);
    if (n < 0) {
        return encode_error(n, err);
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_CONSUMER_OPEN, hdr, n);
    return rift_client_call_run(&call, err);
}

int rift_client_fetch(rift_client *c, const char *stream, size_t stream_len,
                      const char *name, size_t name_len, uint32_t limit,
                      rift_client_delivery *out, size_t *count,
                      rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_fetch(hdr, stream, stream_len, name, name_len, limit, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_FETCH, hdr, n);
    call.out = out;
    call.limit = limit;
    int rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        return rc;
    }
    *count = call.nmsgs;
    return 0;
}

int rift_client_ack(rift_client *c, const char *stream, size_t stream_len,
                    const char *name, size_t name_len, uint64_t sequence,
                    rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ack(hdr, stream, stream_len, name, name_len, sequence, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_ACK, hdr, n);
    return rift_client_call_run(&call, err);
}

/* ---- Asynchronous calls ---- */

int rift_client_call_submit(rift_client_call *call, rift_error *err) {
    rift_client *c = call->c;
    rift_timer_init(c->loop, &call->timer, call_timeout, call);
    /* The call holds the client until its callback has run, so a callback
     * that arrives during teardown never outlives it. */
    rift_client_ref(c);
    int rc = rift_client_post(c, call_start, call, err);
    if (rc != 0) {
        if (call->frame != NULL) {
            frame_release(call->frame);
        }
        rift_free(c->mem, call);
        rift_client_unref(c);
    }
    return rc;
}

rift_client_call *rift_client_call_async_new(rift_client *c,
                                             rift_call_kind kind, size_t extra,
                                             const uint8_t *hdr, size_t hdr_len,
                                             const uint8_t *payload,
                                             size_t payload_len,
                                             rift_error *err) {
    rift_client_call *call = rift_calloc(c->mem, 1, sizeof(*call) + extra);
    rift_client_frame *f =
        rift_malloc(c->mem, sizeof(*f) + hdr_len + payload_len);
    if (call == NULL || f == NULL) {
        rift_free(c->mem, call);
        rift_free(c->mem, f);
        rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->mem = c->mem;
    f->len = hdr_len + payload_len;
    memcpy(f->data, hdr, hdr_len);
    if (payload_len > 0) {
        memcpy(f->data + hdr_len, payload, payload_len);
    }
    call->c = c;
    call->kind = kind;
    call->async = true;
    call->frame = f;
    call->fin = true;
    call->timeout_ns = c->op_timeout_ns;
    return call;
}

int rift_client_call_submit_ok(rift_client *c, const uint8_t *hdr, rift_ssize n,
                               rift_client_done_cb cb, void *arg,
                               rift_error *err) {
    if (n < 0) {
        return (int)n;
    }
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_ACK, 0, hdr, (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->fn.done = cb;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}

int rift_client_stream_publish_async(rift_client *c, const char *stream,
                                     size_t stream_len, const char *subject,
                                     size_t subject_len, const char *reply,
                                     size_t reply_len, const uint8_t *payload,
                                     size_t payload_len,
                                     rift_client_stored_cb done, void *arg,
                                     rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_stream_publish(hdr, stream, stream_len, subject, subject_len,
                              reply, reply_len, payload_len, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call *call =
        rift_client_call_async_new(c, RIFT_CALL_STREAM_PUBLISH, 0, hdr,
                                   (size_t)n, payload, payload_len, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->fn.stored = done;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}

int rift_client_ack_async(rift_client *c, const char *stream, size_t stream_len,
                          const char *name, size_t name_len, uint64_t sequence,
                          rift_client_done_cb done, void *arg,
                          rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ack(hdr, stream, stream_len, name, name_len, sequence, err);
    return rift_client_call_submit_ok(c, hdr, n, done, arg, err);
}

int rift_client_fetch_async(rift_client *c, const char *stream,
                            size_t stream_len, const char *name,
                            size_t name_len, uint32_t limit,
                            rift_client_fetched_cb done, void *arg,
                            rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_fetch(hdr, stream, stream_len, name, name_len, limit, err);
    if (n < 0) {
        return (int)n;
    }
    /* The deliveries array lives behind the call. */
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_FETCH, limit * sizeof(rift_client_delivery), hdr,
        (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->out = (rift_client_delivery *)(call + 1);
    call->limit = limit;
    call->fn.fetched = done;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}
