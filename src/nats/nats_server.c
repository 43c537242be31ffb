/*
 * nats_server.c — the NATS listener's object and thread (nats layer): settings,
 * the principals' token table, TLS credentials, the listening socket, the
 * loop thread that owns every connection and the notifier of every NATS
 * subscription, stop, and statistics. See nats.h.
 */
#include "nats/nats_internal.h"

#include "broker/broker_face.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connections accepted per readiness report. */
#define ACCEPT_BURST 64
/* The thread's message-block cache (broker/broker_face.h): NATS publishes are
 * made here and, without subscribers, dropped at once; the C allocator
 * would give their memory back and fault it in again for every burst. */
#define MSG_CACHE_BYTES   (256u * 1024u * 1024u)
#define MSG_CACHE_IDLE_NS (10ull * 1000000000ull)

void rift_nats_settings_default(rift_nats_settings *s) {
    memset(s, 0, sizeof(*s));
    s->max_payload = 1048576;
    s->max_pending = 64u << 20;
    s->max_control_line = 4096;
    s->ping_interval_ms = 120000;
    s->max_pings_out = 2;
    s->auth_timeout_ms = 2000;
    s->write_deadline_ms = 10000;
    s->max_connections = 1024;
    s->producer_pause_ms = 10;
}

static int check(const rift_nats_settings *s, rift_error *err) {
    if (s->max_payload == 0 || s->max_pending < s->max_payload ||
        s->max_control_line < 64 || s->ping_interval_ms == 0 ||
        s->auth_timeout_ms == 0 || s->write_deadline_ms == 0 ||
        s->max_connections == 0 || s->addr_len == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "invalid NATS listener settings");
    }
    bool found = s->anonymous == NULL;
    for (size_t i = 0; !found && i < s->identity_count; i++) {
        found = strcmp(s->identities[i].name, s->anonymous) == 0;
    }
    if (!found) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.anonymous: no principal named %s",
                              s->anonymous);
    }
    return 0;
}

static int load_tls(rift_nats *n, rift_error *err) {
    const rift_nats_settings *s = &n->s;
    if (s->cert_file == NULL) {
        return 0;
    }
    if (gnutls_certificate_allocate_credentials(&n->cred) != 0) {
        n->cred = NULL;
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = gnutls_certificate_set_x509_key_file(
        n->cred, s->cert_file, s->key_file, GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
        return rift_error_set(err, RIFT_ERR_TLS,
                              "nats.tls: cannot load the certificate and "
                              "key: %s",
                              gnutls_strerror(rc));
    }
    /* TLS 1.3 only, as the QUIC face. */
    if (gnutls_priority_init(&n->prio, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL) !=
        0) {
        n->prio = NULL;
        return rift_error_set(err, RIFT_ERR_TLS, "nats.tls: bad priorities");
    }
    return 0;
}

static int copy_ids(rift_nats *n, const rift_nats_settings *s) {
    n->ids = rift_calloc(NULL, s->identity_count + 1, sizeof(*n->ids));
    n->names = rift_calloc(NULL, s->identity_count + 1, sizeof(*n->names));
    n->by_identity =
        rift_calloc(NULL, s->identity_count + 1, sizeof(*n->by_identity));
    if (n->ids == NULL || n->names == NULL || n->by_identity == NULL) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->identity_count; i++) {
        if (rift_identity_copy(&n->ids[i], &s->identities[i], NULL, true) !=
            0) {
            return RIFT_ERR_NOMEM;
        }
        n->n_ids = i + 1;
    }
    int rc = rift_auth_table_init(&n->auth, n->ids, n->n_ids, NULL);
    for (size_t i = 0; rc == 0 && i < n->n_ids; i++) {
        /* The table's copy and |ids| keep the same order. */
        n->names[i] = n->auth.entries[i].identity.name;
    }
    return rc;
}

int rift_nats_new(rift_nats **pn, rift_broker *broker,
                  const rift_nats_settings *s, rift_error *err) {
    *pn = NULL;
    int rc = check(s, err);
    if (rc != 0) {
        return rc;
    }
    rift_nats *n = rift_calloc(NULL, 1, sizeof(*n));
    if (n == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    n->broker = broker;
    n->s = *s;
    n->lfd = -1;
    n->listen_text = rift_strndup(NULL, s->listen ? s->listen : "",
                                  strlen(s->listen ? s->listen : ""));
    n->anonymous = s->anonymous == NULL
                       ? NULL
                       : rift_strndup(NULL, s->anonymous, strlen(s->anonymous));
    n->s.identities = NULL;
    n->s.cert_file = NULL; /* not kept: loaded below */
    uint8_t rnd[12];
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    if (n->listen_text == NULL ||
        (s->anonymous != NULL && n->anonymous == NULL) || copy_ids(n, s) != 0 ||
        rift_random(rnd, sizeof(rnd)) != 0) {
        rift_nats_del(n);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    n->server_id[0] = 'N';
    for (size_t i = 0; i < sizeof(rnd) && i + 1 < sizeof(n->server_id) - 1;
         i++) {
        n->server_id[i + 1] = digits[rnd[i] & 31];
    }
    n->s.cert_file = s->cert_file;
    if ((rc = load_tls(n, err)) != 0) {
        rift_nats_del(n);
        return rc;
    }
    n->s.cert_file = n->s.key_file = NULL;
    *pn = n;
    return 0;
}

/* ---- The loop thread ---- */

static void after(rift_nats *n) {
    rift_nats_drain(n);
    rift_nats_flush_dirty(n);
    rift_nats_reap(n);
}

static void on_accept(rift_io *io, unsigned events, void *arg) {
    (void)io;
    (void)events;
    rift_nats *n = arg;
    for (int i = 0; i < ACCEPT_BURST; i++) {
        int fd = accept4(n->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
                rift_log(RIFT_LOG_WARN, "rift: NATS accept: %s",
                         strerror(errno));
            }
            break;
        }
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        rift_nats_conn_accept(n, fd);
    }
    after(n);
}

static void on_notify(rift_io *io, unsigned events, void *arg) {
    (void)io;
    (void)events;
    after(arg);
}

/* Unmaps idle cache chunks after a quiet period. */
static void cache_timer_cb(rift_timer *t, void *arg) {
    rift_nats *n = arg;
    uint64_t in = atomic_load(&n->msgs_in);
    if (in == n->cache_msgs_in) {
        rift_msg_cache_trim();
    }
    n->cache_msgs_in = in;
    (void)rift_timer_start(t, rift_loop_now(n->loop) + MSG_CACHE_IDLE_NS);
}

static void *thread_main(void *arg) {
    rift_nats *n = arg;
    rift_notifier_set_owner(n->notifier);
    rift_msg_cache_enable(MSG_CACHE_BYTES);
    rift_timer_init(n->loop, &n->cache_timer, cache_timer_cb, n);
    (void)rift_timer_start(&n->cache_timer,
                           rift_loop_now(n->loop) + MSG_CACHE_IDLE_NS);
    if (rift_loop_run(n->loop) != 0) {
        rift_log(RIFT_LOG_ERROR, "rift: NATS listener loop failed");
    }
    rift_timer_stop(&n->cache_timer);
    rift_msg_cache_disable();
    atomic_store(&n->running, false);
    return NULL;
}

static int bind_listener(rift_nats *n, rift_error *err) {
    int one = 1;
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    n->lfd = socket(n->s.addr.ss_family,
                    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (n->lfd < 0 ||
        setsockopt(n->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(n->lfd, (const struct sockaddr *)&n->s.addr, n->s.addr_len) != 0 ||
        listen(n->lfd, 512) != 0 ||
        getsockname(n->lfd, (struct sockaddr *)&bound, &blen) != 0) {
        int e = errno;
        return rift_error_set(err, -e, "cannot bind NATS listener %s: %s",
                              n->listen_text, strerror(e));
    }
    char host[INET6_ADDRSTRLEN] = "";
    if (bound.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&bound;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        snprintf(n->address, sizeof(n->address), "[%s]:%u", host,
                 ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&bound;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(n->address, sizeof(n->address), "%s:%u", host,
                 ntohs(a->sin_port));
    }
    return 0;
}

int rift_nats_start(rift_nats *n, rift_error *err) {
    int rc = bind_listener(n, err);
    if (rc != 0) {
        return rc;
    }
    if ((rc = rift_loop_new(&n->loop, NULL)) != 0 ||
        (rc = rift_notifier_new(&n->notifier, NULL, NULL)) != 0 ||
        (rc = rift_io_start(n->loop, &n->lio, n->lfd, RIFT_IO_READ, on_accept,
                            n)) != 0 ||
        (rc = rift_io_start(n->loop, &n->nio, rift_notifier_fd(n->notifier),
                            RIFT_IO_READ, on_notify, n)) != 0) {
        return rift_error_set(err, rc, "cannot start NATS listener %s",
                              n->listen_text);
    }
    atomic_store(&n->running, true);
    if (pthread_create(&n->thread, NULL, thread_main, n) != 0) {
        atomic_store(&n->running, false);
        return rift_error_set(err, RIFT_ERR_NOMEM,
                              "cannot start NATS listener thread");
    }
    n->started = true;
    return 0;
}

const char *rift_nats_address(const rift_nats *n) {
    return n->address;
}

bool rift_nats_running(const rift_nats *n) {
    return atomic_load(&n->running);
}

/* On the loop thread: close every connection, then end the loop. */
static void shutdown_cb(void *arg, int status) {
    rift_nats *n = arg;
    (void)status;
    while (n->conns != NULL) {
        rift_nats_conn_close(n->conns, NULL);
    }
    rift_nats_reap(n);
    rift_loop_stop(n->loop);
}

void rift_nats_del(rift_nats *n) {
    if (n == NULL) {
        return;
    }
    if (n->started) {
        if (rift_loop_post(n->loop, shutdown_cb, n) != 0) {
            rift_loop_stop(n->loop);
        }
        pthread_join(n->thread, NULL);
    }
    /* Without the thread (never started, or already past its loop). */
    while (n->conns != NULL) {
        rift_nats_conn_close(n->conns, NULL);
    }
    rift_nats_reap(n);
    rift_nats_claims_free(n);
    rift_loop_del(n->loop);
    rift_notifier_del(n->notifier);
    if (n->lfd >= 0) {
        close(n->lfd);
    }
    if (n->prio != NULL) {
        gnutls_priority_deinit(n->prio);
    }
    if (n->cred != NULL) {
        gnutls_certificate_free_credentials(n->cred);
    }
    rift_auth_table_free(&n->auth);
    for (size_t i = 0; n->ids != NULL && i < n->n_ids; i++) {
        rift_identity_free(&n->ids[i]);
    }
    rift_free(NULL, n->ids);
    rift_free(NULL, n->names);
    rift_free(NULL, (void *)n->by_identity);
    rift_free(NULL, n->listen_text);
    rift_free(NULL, n->anonymous);
    rift_free(NULL, n);
}

int rift_nats_get_stats(const rift_nats *n, rift_nats_stats *st) {
    memset(st, 0, sizeof(*st));
    rift_nats *m = (rift_nats *)n; /* atomics are read, never written */
    st->connections = atomic_load(&m->n_conns);
    st->authenticated = atomic_load(&m->n_auth);
    st->accepted = atomic_load(&m->accepted);
    st->refused = atomic_load(&m->refused);
    st->auth_failures = atomic_load(&m->auth_failures);
    st->slow_consumers = atomic_load(&m->slow_consumers);
    st->producer_pauses = atomic_load(&m->producer_pauses);
    st->msgs_in = atomic_load(&m->msgs_in);
    st->bytes_in = atomic_load(&m->bytes_in);
    st->msgs_out = atomic_load(&m->msgs_out);
    st->bytes_out = atomic_load(&m->bytes_out);
    st->names = n->names;
    st->identity_count = n->n_ids;
    st->by_identity = rift_calloc(NULL, n->n_ids + 1, sizeof(uint64_t));
    if (st->by_identity == NULL) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n->n_ids; i++) {
        st->by_identity[i] = atomic_load(&m->by_identity[i]);
    }
    return 0;
}
