/*
 * client.c — the Rift client's connection (client layer): settings,
 * address resolution, the client thread and its loop, connect and AUTH,
 * the QUIC callbacks that route stream events to calls, publishers and
 * subscriptions, and teardown. See client_internal.h for the threading
 * and lifetime rules.
 */
#include "client/client_internal.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
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

void rift_client_settings_default(rift_client_settings *s) {
    memset(s, 0, sizeof(*s));
    s->connect_timeout_ms = 30000;
    s->op_timeout_ms = 30000;
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
    cs->next = c->streams;
    if (c->streams != NULL) {
        c->streams->prev = cs;
    }
    c->streams = cs;
    *pcs = cs;
    return 0;
}

static void stream_free(rift_client_stream *cs) {
    rift_client *c = cs->c;
    if (cs->prev != NULL) {
        cs->prev->next = cs->next;
    } else {
        c->streams = cs->next;
    }
    if (cs->next != NULL) {
        cs->next->prev = cs->prev;
    }
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

/* ---- Connect ---- */

static void connect_complete(rift_client *c, int rc, const rift_error *e) {
    pthread_mutex_lock(&c->mu);
    if (!c->connect_done) {
        c->connect_done = true;
        c->connect_rc = rc;
        if (rc != 0) {
            rift_error_copy(&c->connect_err, e);
        }
        pthread_cond_signal(&c->connect_cond);
    }
    pthread_mutex_unlock(&c->mu);
    rift_timer_stop(&c->connect_timer);
}

static void connect_timeout(rift_timer *t, void *arg) {
    rift_client *c = arg;
    (void)t;
    rift_error e;
    rift_error_set(&e, RIFT_ERR_TIMEOUT, "%s", RIFT_CLIENT_ERR_TIMEOUT);
    connect_complete(c, e.code, &e);
    if (c->conn != NULL && !c->dead) {
        rift_quic_conn_close(c->conn, 0, RIFT_CLIENT_ERR_SHUTDOWN,
                             strlen(RIFT_CLIENT_ERR_SHUTDOWN));
    }
}

static void on_handshake(rift_quic_conn *conn, void *ud) {
    rift_client *c = ud;
    rift_client_stream *cs;
    rift_error e;
    (void)conn;
    int rc = rift_client_stream_open(c, RIFT_CS_AUTH, NULL, &cs);
    if (rc != 0) {
        rift_error_set(&e, RIFT_ERR_CONNECTION, "cannot open the auth stream");
        connect_complete(c, e.code, &e);
        return;
    }
    uint8_t buf[RIFT_FRAME_AUTH_MAX_BYTES + RIFT_FRAME_PREFIX_BYTES];
    rift_ssize n =
        rift_frame_encode_auth(buf, sizeof(buf), c->token, c->token_len);
    explicit_bzero(c->token, c->token_len);
    rift_quic_chunk ch = {buf, n > 0 ? (size_t)n : 0, NULL, NULL};
    rc = n < 0 ? (int)n : rift_quic_stream_write(cs->qs, &ch, 1, true);
    explicit_bzero(buf, sizeof(buf));
    if (rc != 0) {
        rift_error_set(&e, RIFT_ERR_CLOSED, "%s", RIFT_CLIENT_ERR_CLOSED);
        connect_complete(c, e.code, &e);
    }
}

static void auth_frame(rift_client_stream *cs, const uint8_t *body,
                       size_t len) {
    rift_client *c = cs->c;
    rift_error e;
    int rc = rift_client_expect_ok(body, len, &e);
    cs->kind = RIFT_CS_NONE; /* the auth stream is done either way */
    if (rc == 0) {
        c->authed = true;
    }
    connect_complete(c, rc, &e);
}

/* ---- QUIC callbacks ---- */

static void fail_owner(rift_client_stream *cs, const rift_error *e) {
    switch (cs->kind) {
    case RIFT_CS_AUTH:
        cs->kind = RIFT_CS_NONE;
        connect_complete(cs->c, e->code, e);
        break;
    case RIFT_CS_CALL:
        rift_client_call_finish(cs->u.call, e->code, e);
        break;
    case RIFT_CS_PUB:
        rift_client_pub_fail(cs->u.pub, e, true);
        break;
    case RIFT_CS_SUB:
        rift_client_sub_fail(cs->u.sub, e, true);
        break;
    case RIFT_CS_NONE:
        break;
    }
    cs->kind = RIFT_CS_NONE;
}

static void closed_error(rift_error *e) {
    rift_error_set(e, RIFT_ERR_CLOSED, "%s", RIFT_CLIENT_ERR_CLOSED);
}

/* Hands one complete frame to the stream's owner. Returns true when the
 * owner keeps the frame's flow-control bytes (a queued subscription
 * message); they are credited back when the application takes it. */
static bool dispatch(rift_client_stream *cs, const rift_frame_body *b) {
    switch (cs->kind) {
    case RIFT_CS_AUTH:
        auth_frame(cs, b->data, b->len);
        return false;
    case RIFT_CS_CALL:
        rift_client_call_frame(cs, b);
        return false;
    case RIFT_CS_PUB:
        rift_client_pub_frame(cs, b->data, b->len);
        return false;
    case RIFT_CS_SUB:
        return rift_client_sub_frame(cs, b);
    case RIFT_CS_NONE:
        break;
    }
    return false;
}

static void on_stream_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                           bool fin, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    uint64_t credit = 0;
    size_t off = 0;
    while (off < len && cs->kind != RIFT_CS_NONE) {
        rift_frame_body b;
        rift_error e;
        rift_ssize n =
            rift_frame_reader_feed(&cs->rd, data + off, len - off, &b, &e);
        if (n < 0) {
            fail_owner(cs, &e);
            break;
        }
        off += (size_t)n;
        if (b.data != NULL && !dispatch(cs, &b)) {
            credit += RIFT_FRAME_PREFIX_BYTES + b.len;
        }
    }
    if (cs->kind == RIFT_CS_SUB) {
        rift_client_sub_flush(cs->u.sub);
    }
    /* Bytes of a detached stream (and the tail after a failure) are not
     * anybody's: give them back at once. The transport never credits more
     * than it delivered. */
    credit += len - off;
    rift_client_stream_credit(cs, credit);
    if (fin) {
        cs->fin = cs->read_end = true;
        if (cs->kind != RIFT_CS_NONE) {
            rift_error e;
            closed_error(&e);
            fail_owner(cs, &e);
        }
    }
}

static void on_stream_reset(rift_quic_stream *s, uint64_t code, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    (void)code;
    cs->read_end = true;
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_read_end(cs, true);
    } else if (cs->kind != RIFT_CS_NONE) {
        rift_error e;
        closed_error(&e);
        fail_owner(cs, &e);
    }
}

static void on_stream_stopped(rift_quic_stream *s, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    /* Calls and subscriptions learn the outcome from the read side (the
     * server writes ERROR and FIN before it stops a stream). */
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_stopped(cs);
    }
}

static void on_stream_acked(rift_quic_stream *s, uint64_t unacked, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_acked(cs, unacked);
    }
}

static void on_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                            void *ud) {
    rift_client_stream *cs = ud;
    rift_client *c = cs->c;
    (void)s;
    (void)code_set;
    (void)code;
    cs->qs = NULL;
    if (cs->kind != RIFT_CS_NONE && c->conn != NULL &&
        !rift_quic_conn_is_established(c->conn)) {
        /* The connection is ending: conn_closed follows with the reason,
         * which is what the owner should report. */
        return;
    }
    if (cs->kind != RIFT_CS_NONE) {
        rift_error e;
        closed_error(&e);
        fail_owner(cs, &e);
    }
    stream_free(cs);
}

static void close_error(const rift_quic_close_info *ci, rift_error *e) {
    const char *reason = (const char *)ci->reason;
    int len = (int)RIFT_MIN(ci->reason_len, (size_t)RIFT_ERROR_TEXT_MAX);
    switch (ci->kind) {
    case RIFT_QUIC_CLOSE_PEER_APP:
        if (len > 0) {
            rift_error_set(
                e, ci->code == 1 ? RIFT_ERR_PERMISSION : RIFT_ERR_CONNECTION,
                "%.*s", len, reason);
        } else {
            rift_error_set(
                e, ci->code == 1 ? RIFT_ERR_PERMISSION : RIFT_ERR_CONNECTION,
                "%s", ci->detail);
        }
        break;
    case RIFT_QUIC_CLOSE_LOCAL_APP:
        if (len > 0) {
            rift_error_set(e, RIFT_ERR_CONNECTION, "%.*s", len, reason);
        } else {
            rift_error_set(e, RIFT_ERR_CONNECTION, "%s",
                           RIFT_CLIENT_ERR_SHUTDOWN);
        }
        break;
    default:
        rift_error_set(e, ci->error != 0 ? ci->error : RIFT_ERR_CONNECTION,
                       "%s", ci->detail);
        break;
    }
}

/* Client thread: fails everything still attached and every call waiting
 * for a stream, with |e|. Streams must have no QUIC handle any more. */
static void fail_all(rift_client *c, const rift_error *e) {
    while (c->streams != NULL) {
        rift_client_stream *cs = c->streams;
        cs->qs = NULL;
        fail_owner(cs, e);
        stream_free(cs);
    }
    while (c->open_head != NULL) {
        rift_client_call_finish(c->open_head, e->code, e);
    }
}

static void on_conn_closed(rift_quic_conn *conn, const rift_quic_close_info *ci,
                           void *ud) {
    rift_client *c = ud;
    (void)conn;
    rift_error e;
    close_error(ci, &e);
    c->dead = true;
    /* Dead before anyone waiting hears about it: a caller woken by the
     * failure below must see rift_client_is_connected false. */
    pthread_mutex_lock(&c->mu);
    c->conn_dead = true;
    rift_error_copy(&c->conn_err, &e);
    pthread_mutex_unlock(&c->mu);
    fail_all(c, &e);
    connect_complete(c, e.code, &e);
}

static void on_streams_available(rift_quic_conn *conn, void *ud) {
    (void)conn;
    rift_client_calls_retry_open(ud);
}

static const rift_quic_callbacks client_cbs = {
    .handshake_done = on_handshake,
    .conn_closed = on_conn_closed,
    .stream_data = on_stream_data,
    .stream_reset = on_stream_reset,
    .stream_stopped = on_stream_stopped,
    .stream_acked = on_stream_acked,
    .stream_close = on_stream_close,
    .streams_available = on_streams_available,
};

/* ---- Thread and teardown ---- */

static void *client_thread(void *arg) {
    rift_client *c = arg;
    rift_loop_run(c->loop);
    return NULL;
}

/* Client thread (or the closing thread once the loop has stopped): ends
 * every operation, sends CONNECTION_CLOSE(0, "client closed") and frees
 * the endpoint, then stops the loop. */
static void teardown(void *arg, int status) {
    rift_client *c = arg;
    (void)status;
    rift_error e;
    rift_error_set(&e, RIFT_ERR_CONNECTION, "%s", RIFT_CLIENT_ERR_SHUTDOWN);
    connect_complete(c, e.code, &e);
    /* Owners reset their streams; the endpoint then goes without further
     * callbacks, so the stream records are freed here. */
    while (c->streams != NULL) {
        rift_client_stream *cs = c->streams;
        fail_owner(cs, &e);
        stream_free(cs);
    }
    while (c->open_head != NULL) {
        rift_client_call_finish(c->open_head, e.code, &e);
    }
    c->dead = true;
    rift_quic_endpoint_del(c->ep);
    c->ep = NULL;
    c->conn = NULL;
    pthread_mutex_lock(&c->mu);
    if (!c->conn_dead) {
        c->conn_dead = true;
        rift_error_copy(&c->conn_err, &e);
    }
    pthread_mutex_unlock(&c->mu);
    rift_loop_stop(c->loop);
}

static void client_shutdown(rift_client *c) {
    pthread_mutex_lock(&c->mu);
    bool first = !c->closing;
    c->closing = true;
    pthread_mutex_unlock(&c->mu);
    if (!first) {
        return;
    }
    if (c->thread_started) {
        /* Posted after `closing` was set, so it is the last closure the
         * loop runs: everything posted earlier completes first. */
        if (rift_loop_post(c->loop, teardown, c) != 0) {
            rift_loop_stop(c->loop);
            pthread_join(c->thread, NULL);
            c->thread_started = false;
            teardown(c, 0);
            return;
        }
        pthread_join(c->thread, NULL);
        c->thread_started = false;
    } else {
        teardown(c, 0);
    }
}

/* ---- Address ---- */

static int resolve(const char *address, struct sockaddr_storage *ss,
                   socklen_t *len, rift_error *err) {
    char host[256];
    const char *port;
    size_t hlen;
    if (address[0] == '[') {
        const char *end = strchr(address, ']');
        if (end == NULL || end[1] != ':') {
            goto bad;
        }
        hlen = (size_t)(end - address - 1);
        memcpy(host, address + 1, RIFT_MIN(hlen, sizeof(host) - 1));
        port = end + 2;
    } else {
        const char *colon = strrchr(address, ':');
        if (colon == NULL || strchr(address, ':') != colon) {
            goto bad;
        }
        hlen = (size_t)(colon - address);
        memcpy(host, address, RIFT_MIN(hlen, sizeof(host) - 1));
        port = colon + 1;
    }
    if (hlen == 0 || hlen >= sizeof(host) || port[0] == '\0') {
        goto bad;
    }
    host[hlen] = '\0';
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid server address %s: %s", address,
                              rc != 0 ? gai_strerror(rc) : "no address");
    }
    /* Prefer IPv4: "localhost" usually lists ::1 first, while servers
     * (riftd's development default among them) often listen on 127.0.0.1
     * only, and a UDP handshake to nobody only ends at the deadline. */
    const struct addrinfo *pick = res;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    }
    memcpy(ss, pick->ai_addr, pick->ai_addrlen);
    *len = pick->ai_addrlen;
    freeaddrinfo(res);
    return 0;
bad:
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "invalid server address %s: expected HOST:PORT",
                          address);
}

/* ---- Public: connect and close ---- */

int rift_client_new(rift_client **pc, const rift_client_settings *s,
                    rift_error *err) {
    if (pc == NULL || s == NULL || s->address == NULL || s->ca_file == NULL ||
        s->server_name == NULL || s->token == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "address, CA file, server name and token are "
                              "required");
    }
    size_t token_len = strlen(s->token);
    int rc = rift_client_check_string(s->token, token_len, err);
    if (rc != 0) {
        return rc;
    }
    struct sockaddr_storage addr;
    socklen_t addrlen = 0;
    if ((rc = resolve(s->address, &addr, &addrlen, err)) != 0) {
        return rc;
    }
    rift_client *c = rift_calloc(s->mem, 1, sizeof(*c));
    if (c == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    c->mem = s->mem;
    atomic_init(&c->refs, 1);
    uint64_t op_ms = s->op_timeout_ms ? s->op_timeout_ms : 30000;
    uint64_t conn_ms = s->connect_timeout_ms ? s->connect_timeout_ms : 30000;
    c->op_timeout_ns = (uint64_t)op_ms * 1000000u;
    c->connect_timeout_ns = (uint64_t)conn_ms * 1000000u;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->shared_mu, NULL);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_cond_init(&c->connect_cond, NULL);
    c->token = rift_strndup(c->mem, s->token, token_len);
    c->token_len = token_len;
    if (c->token == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail_loop;
    }
    if (rift_msgpool_new(&c->msgs, c->mem) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail_loop;
    }
    if ((rc = rift_loop_new(&c->loop, c->mem)) != 0) {
        rift_error_set(err, rc, "cannot create the client loop: %s",
                       rift_strerror(rc));
        goto fail_loop;
    }

    rift_quic_settings qs;
    rift_quic_settings_default_client(&qs);
    qs.ca_file = s->ca_file;
    qs.server_name = s->server_name;
    /* Our own deadline covers handshake and AUTH; the transport's must
     * not fire first. */
    qs.handshake_timeout = c->connect_timeout_ns + 1000000000u;
    qs.mem = c->mem;
    if ((rc = rift_quic_client_new(&c->ep, c->loop, (struct sockaddr *)&addr,
                                   addrlen, &qs, &client_cbs, c, err)) != 0) {
        goto fail_ep;
    }
    c->conn = rift_quic_client_conn(c->ep);
    rift_quic_endpoint_local_addr(c->ep, &c->local, &c->local_len);
    rift_timer_init(c->loop, &c->connect_timer, connect_timeout, c);
    if ((rc = rift_timer_start(&c->connect_timer,
                               rift_now_ns() + c->connect_timeout_ns)) != 0) {
        rift_error_set(err, rc, "out of memory");
        goto fail_thread;
    }

    /* The client thread must not take the application's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&c->thread, NULL, client_thread, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        rc = rift_error_set(err, -rc, "cannot start the client thread: %s",
                            strerror(rc));
        goto fail_thread;
    }
    c->thread_started = true;

    pthread_mutex_lock(&c->mu);
    while (!c->connect_done) {
        pthread_cond_wait(&c->connect_cond, &c->mu);
    }
    rc = c->connect_rc;
    rift_error_copy(err, rc != 0 ? &c->connect_err : NULL);
    pthread_mutex_unlock(&c->mu);
    if (rc != 0) {
        client_shutdown(c);
        rift_client_unref(c);
        return rc;
    }
    *pc = c;
    return 0;

fail_thread:
    rift_timer_stop(&c->connect_timer);
    rift_quic_endpoint_del(c->ep);
    c->ep = NULL;
fail_ep:
    c->closing = true;
fail_loop:
    rift_client_unref(c);
    return rc;
}

void rift_client_del(rift_client *c) {
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->shared_mu);
    rift_publisher *shared = c->shared;
    c->shared = NULL;
    pthread_mutex_unlock(&c->shared_mu);
    client_shutdown(c);
    if (shared != NULL) {
        rift_client_pub_unref(shared);
    }
    rift_client_unref(c);
}

void rift_client_local_addr(const rift_client *c, struct sockaddr_storage *ss,
                            socklen_t *len) {
    memcpy(ss, &c->local, sizeof(*ss));
    *len = c->local_len;
}

bool rift_client_is_connected(rift_client *c) {
    pthread_mutex_lock(&c->mu);
    bool ok = !c->closing && !c->conn_dead;
    pthread_mutex_unlock(&c->mu);
    return ok;
}
