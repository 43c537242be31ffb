/*
 * nats_conn.c — one NATS client connection (nats layer): INFO, the optional
 * TLS 1.3 session (nats_tls.c), reading into the parser, the bounded outbound
 * buffer and its write deadline, the auth and ping timers, and close.
 *
 * A connection is freed only by rift_nats_reap at the end of the loop
 * callback that closed it, so a callback may close any connection while
 * others still hold pointers to it (a drain batch, the dirty list).
 */
#include "nats/nats_internal.h"

#include "subject/quota.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Bytes read per readiness report before other connections get their
 * turn. */
#define READ_BUDGET (16 * NATS_READ_CHUNK)

/* Chunks handed to one writev. */
#define NATS_WRITE_IOV 16

#define MS(x) ((rift_tstamp)(x)*1000000ull)

size_t rift_nats_conn_pending(const nats_conn *c) {
    return c->out.pending;
}

static void mark_dirty(nats_conn *c) {
    if (!c->dirty) {
        c->dirty = true;
        c->dirty_next = c->srv->dirty;
        c->srv->dirty = c;
    }
}

uint8_t *rift_nats_conn_reserve(nats_conn *c, size_t len) {
    return rift_nats_outq_reserve(&c->out, len);
}

void rift_nats_conn_commit(nats_conn *c, size_t n) {
    rift_nats_outq_commit(&c->out, n);
    mark_dirty(c);
}

int rift_nats_conn_send(nats_conn *c, const void *data, size_t len) {
    uint8_t *p = rift_nats_conn_reserve(c, len);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    memcpy(p, data, len);
    rift_nats_conn_commit(c, len);
    return 0;
}

void rift_nats_conn_err(nats_conn *c, const char *text) {
    char line[512];
    int n = snprintf(line, sizeof(line), "-ERR '%s'\r\n", text);
    if (n > 0 && (size_t)n < sizeof(line)) {
        (void)rift_nats_conn_send(c, line, (size_t)n);
    }
}

/* ---- Writing ---- */

static void want(nats_conn *c, bool write) {
    (void)rift_io_update(&c->io, rift_nats_pace_read_mask(c) |
                                     (write ? RIFT_IO_WRITE : 0));
}

/* Writes what it can; false when the connection failed (closed). */
static bool flush(nats_conn *c) {
    if (c->closing || c->handshaking) {
        return !c->closing;
    }
    while (c->out.pending > 0) {
        struct iovec iov[NATS_WRITE_IOV];
        int cnt = rift_nats_outq_iov(&c->out, iov,
                                     c->tls != NULL ? 1 : NATS_WRITE_IOV);
        ssize_t n;
        if (c->tls != NULL) {
            /* One record call per chunk (each sends at most one record).
             * After GNUTLS_E_AGAIN the next call with the same leading
             * bytes completes the record it had started. */
            n = gnutls_record_send(c->tls, iov[0].iov_base, iov[0].iov_len);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
                break;
            }
        } else {
            n = writev(c->fd, iov, cnt);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                break;
            }
        }
        if (n <= 0) {
            rift_nats_conn_close(c, NULL);
            return false;
        }
        rift_nats_outq_consume(&c->out, (size_t)n);
        rift_nats_pace_wrote(c);
    }
    if (c->out.pending == 0) {
        rift_timer_stop(&c->write_timer);
        want(c, false);
        return true;
    }
    want(c, true);
    if (!rift_timer_active(&c->write_timer)) {
        (void)rift_timer_start(&c->write_timer,
                               rift_loop_now(c->srv->loop) +
                                   MS(c->srv->s.write_deadline_ms));
    }
    return true;
}

bool rift_nats_conn_flush(nats_conn *c) {
    return flush(c);
}

void rift_nats_flush_dirty(rift_nats *srv) {
    while (srv->dirty != NULL) {
        nats_conn *c = srv->dirty;
        srv->dirty = c->dirty_next;
        c->dirty = false;
        (void)flush(c);
    }
}

/* ---- Close ---- */

static void drop_counters(nats_conn *c) {
    rift_nats *srv = c->srv;
    atomic_fetch_sub(&srv->n_conns, 1);
    if (c->connected) {
        atomic_fetch_sub(&srv->n_auth, 1);
        if (c->id_index < srv->n_ids) {
            atomic_fetch_sub(&srv->by_identity[c->id_index], 1);
        }
    }
    if (c->quota_taken) {
        rift_quota_give(srv->s.quota, c->quota_slot, RIFT_QUOTA_CONNECTIONS);
        c->quota_taken = false;
    }
}

void rift_nats_conn_close(nats_conn *c, const char *text) {
    if (c->closing) {
        return;
    }
    rift_nats *srv = c->srv;
    if (text != NULL) {
        rift_nats_conn_err(c, text);
        (void)flush(c); /* best effort: the socket may be full */
        if (c->closing) {
            return;
        }
    }
    c->closing = true;
    rift_io_stop(&c->io);
    rift_timer_stop(&c->auth_timer);
    rift_timer_stop(&c->ping_timer);
    rift_timer_stop(&c->write_timer);
    rift_timer_stop(&c->read_timer);
    rift_nats_pace_drop(c);
    /* Subscriptions end when the struct is reaped: a drain batch may still
     * hold their broker handles. */
    rift_nats_claims_release(c);
    drop_counters(c);
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    c->prev = NULL;
    c->next = srv->graveyard;
    srv->graveyard = c;
}

static void conn_free(nats_conn *c) {
    if (c->tls != NULL) {
        gnutls_deinit(c->tls);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    rift_nats_parser_free(&c->parser);
    rift_free(NULL, c->tls_in);
    rift_nats_outq_free(&c->out);
    rift_free(NULL, c);
}

/* Publishes the callback's message counts for rift_nats_get_stats. */
static void add_tally(rift_nats *srv) {
    if (srv->tally.msgs_in > 0) {
        atomic_fetch_add(&srv->msgs_in, srv->tally.msgs_in);
        atomic_fetch_add(&srv->bytes_in, srv->tally.bytes_in);
    }
    if (srv->tally.msgs_out > 0) {
        atomic_fetch_add(&srv->msgs_out, srv->tally.msgs_out);
        atomic_fetch_add(&srv->bytes_out, srv->tally.bytes_out);
    }
    memset(&srv->tally, 0, sizeof(srv->tally));
}

void rift_nats_reap(rift_nats *srv) {
    add_tally(srv);
    /* A closed connection may still be on the dirty list. */
    nats_conn **pp = &srv->dirty;
    while (*pp != NULL) {
        if ((*pp)->closing) {
            (*pp)->dirty = false;
            *pp = (*pp)->dirty_next;
        } else {
            pp = &(*pp)->dirty_next;
        }
    }
    while (srv->graveyard != NULL) {
        nats_conn *c = srv->graveyard;
        srv->graveyard = c->next;
        rift_nats_conn_unsub_all(c);
        conn_free(c);
    }
}

/* ---- Reading ---- */

static void feed(nats_conn *c, const uint8_t *data, size_t len) {
    while (len > 0 && !c->closing) {
        size_t used = 0;
        rift_nats_op op;
        int rc = rift_nats_parse(&c->parser, data, len, &used, &op);
        data += used;
        len -= used;
        if (rc < 0) {
            rift_nats_conn_close(c, rift_nats_parse_error_text(rc));
            return;
        }
        if (rc == 1 && !rift_nats_handle_op(c, &op)) {
            return;
        }
        /* Publications made here do not signal the notifier: move them
         * out before a small broker queue (1,024 messages by default)
         * overflows within one read. */
        if (c->srv->undrained >= NATS_DRAIN_EVERY) {
            rift_nats_drain(c->srv);
        }
    }
}

/* Advances the TLS handshake; false while it is still going (or
 * failed: then the connection is closed). */
static bool handshake(nats_conn *c) {
    int rc = gnutls_handshake(c->tls);
    if (rc == GNUTLS_E_SUCCESS) {
        c->handshaking = false;
        want(c, c->out.pending > 0);
        mark_dirty(c);
        return true;
    }
    if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) {
        want(c, gnutls_record_get_direction(c->tls) == 1);
        return false;
    }
    rift_log(RIFT_LOG_DEBUG, "rift: NATS client %" PRIu64 ": TLS: %s", c->cid,
             gnutls_strerror(rc));
    rift_nats_conn_close(c, NULL);
    return false;
}

static void do_read(nats_conn *c) {
    rift_nats *srv = c->srv;
    size_t budget = READ_BUDGET;
    srv->pressure = false;
    while (!c->closing) {
        if (c->handshaking && !handshake(c)) {
            return;
        }
        ssize_t n;
        if (c->tls != NULL) {
            n = gnutls_record_recv(c->tls, srv->rbuf, sizeof(srv->rbuf));
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
                return;
            }
        } else {
            n = read(c->fd, srv->rbuf, sizeof(srv->rbuf));
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                return;
            }
        }
        if (n <= 0) {
            rift_nats_conn_close(c, NULL);
            return;
        }
        feed(c, srv->rbuf, (size_t)n);
        if (srv->undrained > 0) {
            rift_nats_drain(srv); /* others' publications come by eventfd */
        }
        if (srv->pressure && rift_nats_pace_after_read(c)) {
            return;
        }
        /* A TLS read returns one record (at most 16 KiB) however much is
         * waiting: go on while the session holds more. */
        if (c->tls != NULL ? !rift_nats_tls_buffered(c)
                           : (size_t)n < sizeof(srv->rbuf)) {
            return;
        }
        if ((size_t)n >= budget) {
            /* Other connections' turn. What is left in the socket is
             * reported again; what the session holds is not. */
            if (c->tls != NULL && !c->closing) {
                (void)rift_timer_start(&c->read_timer,
                                       rift_loop_now(srv->loop));
            }
            return;
        }
        budget -= (size_t)n;
    }
}

static void on_io(rift_io *io, unsigned events, void *arg) {
    (void)io;
    nats_conn *c = arg;
    rift_nats *srv = c->srv;
    if (events & (RIFT_IO_READ | RIFT_IO_ERROR)) {
        do_read(c);
    }
    if ((events & RIFT_IO_WRITE) && !c->closing) {
        if (c->handshaking) {
            /* Finished may have come with the first operations, which
             * the read-ahead holds: no readiness will report them. */
            if (handshake(c) && rift_nats_tls_buffered(c)) {
                do_read(c);
            }
        } else {
            (void)flush(c);
        }
    }
    /* Publications made on this thread do not signal the notifier. */
    rift_nats_drain(srv);
    rift_nats_flush_dirty(srv);
    rift_nats_reap(srv);
}

/* ---- Timers ---- */

static void after_timer(rift_nats *srv) {
    rift_nats_flush_dirty(srv);
    rift_nats_reap(srv);
}

static void on_auth_timeout(rift_timer *t, void *arg) {
    (void)t;
    nats_conn *c = arg;
    if (!c->connected) {
        atomic_fetch_add(&c->srv->auth_failures, 1);
        rift_nats_conn_close(c, "Authentication Timeout");
    }
    after_timer(c->srv);
}

static void on_ping(rift_timer *t, void *arg) {
    nats_conn *c = arg;
    rift_nats *srv = c->srv;
    if (c->pings_out >= srv->s.max_pings_out) {
        rift_nats_conn_close(c, "Stale Connection");
    } else {
        c->pings_out++;
        /* Idle since the last ping: give back the output chunks. */
        rift_nats_outq_trim(&c->out);
        (void)rift_nats_conn_send(c, "PING\r\n", 6);
        (void)rift_timer_start(t, rift_loop_now(srv->loop) +
                                      MS(srv->s.ping_interval_ms));
    }
    after_timer(srv);
}

/* Input the TLS session held when do_read gave others their turn, or the
 * end of a fast-producer pause (nats_pace.c). */
static void on_read_again(rift_timer *t, void *arg) {
    (void)t;
    nats_conn *c = arg;
    rift_nats *srv = c->srv;
    rift_nats_pace_resume(c);
    if (!c->closing) {
        do_read(c);
    }
    rift_nats_drain(srv);
    after_timer(srv);
}

static void on_write_deadline(rift_timer *t, void *arg) {
    (void)t;
    nats_conn *c = arg;
    atomic_fetch_add(&c->srv->slow_consumers, 1);
    rift_log(RIFT_LOG_DEBUG,
             "rift: NATS client %" PRIu64 ": write deadline exceeded", c->cid);
    rift_nats_conn_close(c, NULL);
    after_timer(c->srv);
}

/* ---- Accept ---- */

static int send_info(nats_conn *c) {
    rift_nats *srv = c->srv;
    char info[768];
    int n = snprintf(
        info, sizeof(info),
        "INFO {\"server_id\":\"%s\",\"server_name\":\"riftd\","
        "\"version\":\"2.9.0\",\"proto\":1,\"headers\":true,"
        "\"auth_required\":%s,\"tls_required\":%s,\"max_payload\":%zu,"
        "\"client_id\":%" PRIu64 "}\r\n",
        srv->server_id, srv->anonymous == NULL ? "true" : "false",
        srv->cred != NULL ? "true" : "false", srv->s.max_payload, c->cid);
    if (n <= 0 || (size_t)n >= sizeof(info)) {
        return RIFT_ERR_NOMEM;
    }
    if (srv->cred == NULL) {
        return rift_nats_conn_send(c, info, (size_t)n);
    }
    /* Before TLS starts: straight onto a fresh socket, which has room. */
    return write(c->fd, info, (size_t)n) == n ? 0 : RIFT_ERR_IO;
}

static nats_conn *conn_new(rift_nats *srv, int fd) {
    nats_conn *c = rift_calloc(NULL, 1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->srv = srv;
    c->fd = fd;
    c->cid = ++srv->next_cid;
    c->echo = true;
    c->id_index = SIZE_MAX;
    c->quota_slot = SIZE_MAX;
    if (rift_nats_parser_init(&c->parser, NULL, srv->s.max_control_line,
                              srv->s.max_payload) != 0) {
        rift_free(NULL, c);
        return NULL;
    }
    rift_timer_init(srv->loop, &c->auth_timer, on_auth_timeout, c);
    rift_timer_init(srv->loop, &c->ping_timer, on_ping, c);
    rift_timer_init(srv->loop, &c->write_timer, on_write_deadline, c);
    rift_timer_init(srv->loop, &c->read_timer, on_read_again, c);
    return c;
}

void rift_nats_conn_accept(rift_nats *srv, int fd) {
    if (atomic_load(&srv->n_conns) >= srv->s.max_connections) {
        static const char full[] = "-ERR 'maximum connections exceeded'\r\n";
        (void)!write(fd, full, sizeof(full) - 1);
        close(fd);
        atomic_fetch_add(&srv->refused, 1);
        return;
    }
    nats_conn *c = conn_new(srv, fd);
    if (c == NULL) {
        close(fd);
        return;
    }
    atomic_fetch_add(&srv->n_conns, 1);
    atomic_fetch_add(&srv->accepted, 1);
    c->next = srv->conns;
    if (srv->conns != NULL) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    rift_tstamp now = rift_loop_now(srv->loop);
    if (send_info(c) != 0 ||
        (srv->cred != NULL && rift_nats_tls_start(c) != 0) ||
        rift_io_start(srv->loop, &c->io, fd, RIFT_IO_READ, on_io, c) != 0 ||
        rift_timer_start(&c->auth_timer, now + MS(srv->s.auth_timeout_ms)) !=
            0 ||
        rift_timer_start(&c->ping_timer, now + MS(srv->s.ping_interval_ms)) !=
            0) {
        rift_nats_conn_close(c, NULL);
        return;
    }
}
