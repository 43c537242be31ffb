/*
 * subscription.c — subscriptions of the Rift client (client layer): the
 * receive queue between the client thread (which decodes MESSAGE frames)
 * and the application (blocking receive with timeout, or an eventfd for
 * its own event loop).
 *
 * Flow control: a queued message keeps the stream's flow-control bytes it
 * arrived with. They are returned to the server (rift_quic_stream_consumed)
 * only when the application takes the message, in batches of
 * RIFT_CLIENT_CREDIT_BATCH bytes, so the queue is bounded by the stream
 * window (2 MiB) and a slow reader pushes back on the server, as a quinn
 * RecvStream that is not read does in the original.
 */
#include "client/client_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static bool deliver_locked(rift_client_sub *s);

static void sub_ref(rift_client_sub *s) {
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void rift_client_sub_unref(rift_client_sub *s) {
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    rift_client *c = s->c;
    rift_client_ring_free(&s->pend);
    rift_client_ring_free(&s->q);
    if (s->efd >= 0) {
        close(s->efd);
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    rift_free(c->mem, s);
    rift_client_unref(c);
}

/* Makes the eventfd readable (under s->mu). */
static void efd_raise(rift_client_sub *s) {
    if (s->efd >= 0) {
        uint64_t one = 1;
        ssize_t r;
        do {
            r = write(s->efd, &one, sizeof(one));
        } while (r < 0 && errno == EINTR);
    }
}

/* Drains the eventfd (under s->mu). */
static void efd_clear(rift_client_sub *s) {
    if (s->efd >= 0) {
        uint64_t v;
        ssize_t r;
        do {
            r = read(s->efd, &v, sizeof(v));
        } while (r < 0 && errno == EINTR);
    }
}

/* ---- Client thread ---- */

void rift_client_sub_attach(rift_client_sub *s, rift_client_stream *cs) {
    cs->kind = RIFT_CS_SUB;
    cs->u.sub = s;
    s->cs = cs;
    sub_ref(s);
}

void rift_client_sub_fail(rift_client_sub *s, const rift_error *e, bool reset) {
    pthread_mutex_lock(&s->mu);
    deliver_locked(s); /* messages that came before the failure */
    if (!s->failed) {
        s->failed = true;
        rift_error_copy(&s->fail, e);
        if (s->q.count == 0) {
            efd_raise(s);
        }
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->mu);
    rift_client_stream *cs = s->cs;
    if (cs == NULL) {
        return;
    }
    s->cs = NULL;
    if (reset) {
        rift_client_stream_abort(cs);
    } else {
        cs->kind = RIFT_CS_NONE;
        cs->u.sub = NULL;
    }
    rift_client_sub_unref(s); /* the stream's reference */
}

static void fail_text(rift_client_sub *s, int code, const char *text) {
    rift_error e;
    rift_error_set(&e, code, "%s", text);
    rift_client_sub_fail(s, &e, true);
}

bool rift_client_sub_frame(rift_client_stream *cs, const rift_frame_body *b) {
    rift_client_sub *s = cs->u.sub;
    rift_error e;
    int rc;
    if (b->data[0] == RIFT_OP_ERROR) {
        rc = rift_client_error_from_frame(b->data, b->len, &e);
        rift_client_sub_fail(s, &e, true);
        return false;
    }
    if (b->data[0] != RIFT_OP_MESSAGE) {
        fail_text(s, RIFT_ERR_PROTOCOL, RIFT_CLIENT_ERR_OPCODE);
        return false;
    }
    rift_frame_msg f;
    if ((rc = rift_frame_decode_msg(b->data + 1, b->len - 1, &f, &e)) != 0) {
        rift_client_sub_fail(s, &e, true);
        return false;
    }
    uint8_t *detached = b->assembled ? rift_frame_reader_detach(&cs->rd) : NULL;
    rift_client_entry entry = {NULL,
                               (uint32_t)(RIFT_FRAME_PREFIX_BYTES + b->len)};
    if (rift_client_msg_build(&entry.msg, cs->c->mem, cs->c->msgs, &f,
                              detached) != 0) {
        fail_text(s, RIFT_ERR_NOMEM, "out of memory");
        return false;
    }
    /* Collected here and handed over once per QUIC callback: one lock and
     * at most one wakeup for a whole batch of messages. */
    if (rift_client_ring_push(&s->pend, entry) != 0) {
        rift_msg_unref(entry.msg);
        fail_text(s, RIFT_ERR_NOMEM, "out of memory");
        return false;
    }
    return true;
}

/* Moves the collected messages to the queue (under s->mu). Returns true
 * when a sleeping receiver must be signalled (after unlocking). */
static bool deliver_locked(rift_client_sub *s) {
    if (s->pend.count == 0) {
        return false;
    }
    bool was_empty = s->q.count == 0;
    if (rift_client_ring_move(&s->q, &s->pend) != 0) {
        /* Out of memory: the batch is lost, so the subscription cannot
         * go on in order. */
        rift_client_ring_free(&s->pend);
        if (!s->failed) {
            s->failed = true;
            rift_error_set(&s->fail, RIFT_ERR_NOMEM, "out of memory");
            efd_raise(s);
            pthread_cond_broadcast(&s->cond);
        }
        return false;
    }
    if (!was_empty) {
        return false;
    }
    /* Receivers only sleep on an empty queue: one wakeup per transition;
     * a woken receiver passes it on (recv). */
    if (!s->failed) {
        efd_raise(s);
    }
    return s->waiters > 0;
}

void rift_client_sub_flush(rift_client_sub *s) {
    if (s->pend.count == 0) {
        return;
    }
    pthread_mutex_lock(&s->mu);
    bool wake = deliver_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (wake) {
        /* After unlocking, so the receiver does not block on the mutex at
         * once; the subscription outlives this (the stream holds a
         * reference). */
        pthread_cond_signal(&s->cond);
    }
}

static void credit_cb(void *arg, int status) {
    rift_client_sub *s = arg;
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->credit;
    s->credit = 0;
    s->credit_posted = false;
    pthread_mutex_unlock(&s->mu);
    if (status == 0 && s->cs != NULL) {
        rift_client_stream_credit(s->cs, n);
    }
    rift_client_sub_unref(s);
}

static void close_cb(void *arg, int status) {
    rift_client_sub *s = arg;
    (void)status;
    /* Cancellation is STOP_SENDING(0) (the only thing the server watches)
     * plus RESET_STREAM(0), as the original's drop. */
    fail_text(s, RIFT_ERR_CLOSED, "subscription closed");
    rift_client_sub_unref(s);
}

/* ---- Application threads ---- */

int rift_client_subscribe(rift_client *c, const char *pattern,
                          size_t pattern_len, const char *queue,
                          size_t queue_len, rift_client_sub **psub,
                          rift_error *err) {
    int rc;
    if ((rc = rift_client_check_string(pattern, pattern_len, err)) != 0 ||
        (rc = rift_client_check_string(queue, queue_len, err)) != 0) {
        return rc;
    }
    uint8_t hdr[RIFT_FRAME_PREFIX_BYTES + 1 + 2 * (2 + RIFT_FRAME_MAX_STRING)];
    rift_ssize n = rift_frame_encode_subscribe(hdr, sizeof(hdr), pattern,
                                               pattern_len, queue, queue_len);
    if (n < 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_CLIENT_ERR_STRING);
    }
    rift_client_sub *s = rift_calloc(c->mem, 1, sizeof(*s));
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (rift_client_cond_init(&s->cond) != 0) {
        rift_free(c->mem, s);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->c = c;
    s->efd = -1;
    rift_client_ring_init(&s->q, c->mem);
    rift_client_ring_init(&s->pend, c->mem);
    atomic_init(&s->refs, 1);
    rift_client_ref(c);

    rift_client_call call;
    memset(&call, 0, sizeof(call));
    call.c = c;
    call.kind = RIFT_CALL_SUBSCRIBE;
    call.hdr = hdr;
    call.hdr_len = (size_t)n;
    call.sub = s;
    call.timeout_ns = c->op_timeout_ns;
    if ((rc = rift_client_call_run(&call, err)) != 0) {
        rift_client_sub_unref(s);
        return rc;
    }
    *psub = s;
    return 0;
}

int rift_client_sub_recv(rift_client_sub *s, int64_t timeout_ns,
                         rift_msg **pmsg, rift_error *err) {
    struct timespec ts;
    bool have_deadline = false;
    int rc;
    /* Held for the call, so rift_client_sub_close from another thread
     * wakes this one instead of freeing the subscription under it. */
    sub_ref(s);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        rift_client_entry e;
        if (rift_client_ring_pop(&s->q, &e)) {
            s->credit += e.wire_len;
            bool post = s->credit >= RIFT_CLIENT_CREDIT_BATCH &&
                        !s->credit_posted && !s->failed;
            if (post) {
                s->credit_posted = true;
            }
            bool next = false;
            if (s->q.count == 0 && !s->failed) {
                efd_clear(s);
            } else if (s->q.count > 0 && s->waiters > 0) {
                next = true; /* wake the next receiver */
            }
            pthread_mutex_unlock(&s->mu);
            if (next) {
                pthread_cond_signal(&s->cond);
            }
            if (post) {
                sub_ref(s);
                if (rift_client_post(s->c, credit_cb, s, NULL) != 0) {
                    rift_client_sub_unref(s);
                }
            }
            *pmsg = e.msg;
            rc = 0;
            break;
        }
        if (s->failed) {
            rift_error_copy(err, &s->fail);
            rc = s->fail.code;
            pthread_mutex_unlock(&s->mu);
            break;
        }
        int r = 0;
        if (timeout_ns == 0) {
            r = ETIMEDOUT;
        } else {
            s->waiters++;
            if (timeout_ns < 0) {
                pthread_cond_wait(&s->cond, &s->mu);
            } else {
                if (!have_deadline) {
                    rift_client_deadline_ts(&ts, (uint64_t)timeout_ns);
                    have_deadline = true;
                }
                r = pthread_cond_timedwait(&s->cond, &s->mu, &ts);
            }
            s->waiters--;
        }
        if (r == ETIMEDOUT && s->q.count == 0 && !s->failed) {
            pthread_mutex_unlock(&s->mu);
            rc = rift_error_set(err, RIFT_ERR_AGAIN, "%s",
                                rift_strerror(RIFT_ERR_AGAIN));
            break;
        }
    }
    rift_client_sub_unref(s);
    return rc;
}

int rift_client_sub_fd(rift_client_sub *s) {
    pthread_mutex_lock(&s->mu);
    int fd = s->efd;
    if (fd < 0) {
        fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fd < 0) {
            fd = -errno;
        } else {
            s->efd = fd;
            if (s->q.count > 0 || s->failed) {
                efd_raise(s);
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return fd;
}

size_t rift_client_sub_pending(rift_client_sub *s) {
    pthread_mutex_lock(&s->mu);
    size_t n = s->q.count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void rift_client_sub_close(rift_client_sub *s) {
    if (s == NULL) {
        return;
    }
    /* Wake receivers in other threads now; the client thread then cancels
     * the stream. */
    pthread_mutex_lock(&s->mu);
    if (!s->failed) {
        s->failed = true;
        rift_error_set(&s->fail, RIFT_ERR_CLOSED, "subscription closed");
        if (s->q.count == 0) {
            efd_raise(s);
        }
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->mu);
    sub_ref(s);
    if (rift_client_post(s->c, close_cb, s, NULL) != 0) {
        rift_client_sub_unref(s);
    }
    rift_client_sub_unref(s);
}
