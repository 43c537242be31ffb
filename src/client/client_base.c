/*
 * client_base.c — what every part of the Rift client stands on (client
 * layer): condition variables on the monotonic clock, the client's
 * references and its destruction, posting to the client thread (or the
 * reason it is gone), and stream records. See client_internal.h for the
 * threading and lifetime rules.
 */
#include "client/client_internal.h"
#include "common/dlist.h"
#include "client/pub_block.h"

#include <string.h>
#include <time.h>

/* ---- Small helpers ---- */

int rift_client_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc != 0) {
        return -rc;
    }
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(cond, &a);
    pthread_condattr_destroy(&a);
    return -rc;
}

void rift_client_deadline_ts(struct timespec *ts, uint64_t timeout_ns) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + timeout_ns % 1000000000u;
    ts->tv_sec += (time_t)(timeout_ns / 1000000000u + ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* ---- References ---- */

void rift_client_ref(rift_client *c) {
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

static void client_destroy(rift_client *c) {
    /* The thread was joined by rift_client_del (or never started), so
     * nothing runs on the loop any more; no posts can be queued because
     * the closing flag stopped them before the teardown post. */
    rift_loop_del(c->loop);
    rift_client_pool_free(c);
    pthread_mutex_destroy(&c->pool_mu);
    rift_msgpool_close(c->msgs);
    if (c->token != NULL) {
        explicit_bzero(c->token, c->token_len);
        rift_free(c->mem, c->token);
    }
    pthread_cond_destroy(&c->connect_cond);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->shared_mu);
    rift_free(c->mem, c);
}

void rift_client_unref(rift_client *c) {
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
        client_destroy(c);
    }
}

/* ---- Cross-thread posting ---- */

/* Under c->mu: why operations cannot run. */
static int dead_error_locked(rift_client *c, rift_error *err) {
    if (c->closing) {
        return rift_error_set(err, RIFT_ERR_CONNECTION, "%s",
                              RIFT_CLIENT_ERR_SHUTDOWN);
    }
    rift_error_copy(err, &c->conn_err);
    return c->conn_err.code;
}

int rift_client_dead_error(rift_client *c, rift_error *err) {
    pthread_mutex_lock(&c->mu);
    int rc = dead_error_locked(c, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int rift_client_post(rift_client *c, rift_post_cb cb, void *arg,
                     rift_error *err) {
    int rc;
    pthread_mutex_lock(&c->mu);
    if (c->closing || c->conn_dead) {
        rc = dead_error_locked(c, err);
    } else if ((rc = rift_loop_post(c->loop, cb, arg)) != 0) {
        rift_error_set(err, rc, "out of memory");
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- Streams ---- */

int rift_client_stream_open(rift_client *c, rift_cs_kind kind, void *owner,
                            rift_client_stream **pcs) {
    if (c->dead || c->conn == NULL || (kind != RIFT_CS_AUTH && !c->authed)) {
        return RIFT_ERR_CLOSED;
    }
    rift_client_stream *cs = rift_calloc(c->mem, 1, sizeof(*cs));
    if (cs == NULL) {
        return RIFT_ERR_NOMEM;
    }
    cs->c = c;
    cs->kind = kind;
    cs->u.call = owner;
    rift_frame_reader_init(&cs->rd, RIFT_FRAME_MAX_BYTES, c->mem);
    int rc = rift_quic_conn_open_stream(c->conn, cs, &cs->qs);
    if (rc != 0) {
        rift_free(c->mem, cs);
        return rc;
    }
    RIFT_DLIST_PUSH(c->streams, cs, prev, next);
    *pcs = cs;
    return 0;
}

void rift_client_stream_free(rift_client_stream *cs) {
    rift_client *c = cs->c;
    RIFT_DLIST_REMOVE(c->streams, cs, prev, next);
    rift_frame_reader_free(&cs->rd);
    rift_free(c->mem, cs);
}

void rift_client_stream_abort(rift_client_stream *cs) {
    if (cs->qs != NULL) {
        rift_quic_stream_shutdown_write(cs->qs, 0);
        rift_quic_stream_shutdown_read(cs->qs, 0);
    }
    cs->kind = RIFT_CS_NONE;
    cs->u.call = NULL;
}

void rift_client_stream_credit(rift_client_stream *cs, uint64_t n) {
    if (cs->qs != NULL && n > 0) {
        rift_quic_stream_consumed(cs->qs, n);
    }
}
