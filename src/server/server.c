/*
 * server.c — the protocol server's public API (server layer): settings
 * validation, the server thread and its event loop, start and stop, and
 * statistics. See include/rift/server.h.
 *
 * The server thread runs one rift_loop that owns the QUIC endpoint, every
 * connection and stream record, and the notifier of every remote
 * subscription. Other threads reach it only through rift_loop_post (stop,
 * stats) and the shared fields guarded by |lock|.
 */
#include "server/handlers.h"
#include "server/stream_record.h"

#include "broker/broker_face.h"

#include "subject/name.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long stop waits for connections to close. */
#define STOP_GRACE_NS 2000000000ull
/* How often stop checks whether they did. */
#define STOP_POLL_NS 1000000ull

/* ---- Settings ---- */

void rift_server_settings_default(rift_server_settings *s) {
    memset(s, 0, sizeof(*s));
    s->max_connections = 1024;
    s->max_streams_per_connection = 128;
    s->handshake_timeout_ms = 5000;
    s->io_timeout_ms = 30000;
}

static void free_identities(rift_identity *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rift_identity_free(&ids[i]);
    }
}

/* Builds internal identities from the public ones (for validation and the
 * auth table). */
static int make_identities(const rift_server_settings *s, const rift_mem *mem,
                           rift_identity *ids, rift_error *err) {
    for (size_t i = 0; i < s->identity_count; i++) {
        rift_identity_init(&ids[i], mem);
    }
    for (size_t i = 0; i < s->identity_count; i++) {
        const rift_server_identity *in = &s->identities[i];
        rift_identity *id = &ids[i];
        int rc = 0;
        if (in->name != NULL) {
            rc = rift_identity_set_name(id, in->name, in->name_len);
        }
        if (rc == 0 && in->token != NULL) {
            rc = rift_identity_set_token(id, in->token, in->token_len);
        }
        for (size_t k = 0; rc == 0 && k < in->publish_count; k++) {
            const char *p = in->publish[k] ? in->publish[k] : "";
            rc = rift_identity_allow_publish(id, p, strlen(p));
        }
        for (size_t k = 0; rc == 0 && k < in->subscribe_count; k++) {
            const char *p = in->subscribe[k] ? in->subscribe[k] : "";
            rc = rift_identity_allow_subscribe(id, p, strlen(p));
        }
        id->control = in->control;
        if (rc != 0) {
            return rift_error_set(err, rc, "out of memory");
        }
    }
    return 0;
}

static void server_free(rift_server *srv) {
    rift_srv_streams_free(srv);
    rift_auth_table_free(&srv->auth);
    rift_free(srv->mem, srv->quota_slots);
    rift_free(srv->mem, srv->cert_file);
    rift_free(srv->mem, srv->key_file);
    pthread_cond_destroy(&srv->cond);
    pthread_mutex_destroy(&srv->sig_lock);
    pthread_mutex_destroy(&srv->lock);
    rift_free(srv->mem, srv);
}

/* Checks the settings in the order of the messages a caller sees first
 * (identities and limits, served streams, certificate files) and builds
 * the auth table from the identities. */
static int validate_and_build_auth(rift_server *srv,
                                   const rift_server_settings *settings,
                                   rift_error *err) {
    const rift_mem *mem = srv->mem;
    int rc;
    rift_identity *ids = NULL;
    if (settings->identity_count > 0) {
        ids = rift_calloc(mem, settings->identity_count, sizeof(*ids));
        if (ids == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    if ((rc = make_identities(settings, mem, ids, err)) != 0) {
        goto out;
    }
    rift_auth_settings as;
    rift_auth_settings_default(&as);
    as.identities = ids;
    as.nidentities = settings->identity_count;
    as.max_connections = settings->max_connections;
    as.max_streams_per_connection = settings->max_streams_per_connection;
    as.handshake_timeout_ms = settings->handshake_timeout_ms;
    as.io_timeout_ms = settings->io_timeout_ms;
    if ((rc = rift_auth_settings_validate(&as, err)) != 0) {
        goto out;
    }
    if ((rc = rift_srv_streams_copy(srv, settings, err)) != 0) {
        goto out;
    }
    if (settings->cert_file == NULL || settings->key_file == NULL) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                            "invalid argument: certificate and private key "
                            "files are required");
        goto out;
    }
    if ((rc = rift_auth_table_init(&srv->auth, ids, settings->identity_count,
                                   mem)) != 0) {
        rift_error_set(err, rc, "%s", rift_strerror(rc));
    }
out:
    if (ids != NULL) {
        free_identities(ids, settings->identity_count);
        rift_free(mem, ids);
    }
    return rc;
}

/* The quota slots of the auth entries, the certificate paths and the
 * scalar settings. */
static int copy_settings(rift_server *srv, const rift_server_settings *settings,
                         rift_error *err) {
    const rift_mem *mem = srv->mem;
    srv->quota = settings->quota;
    srv->quota_slots =
        rift_calloc(mem, srv->auth.count + 1, sizeof(*srv->quota_slots));
    if (srv->quota_slots == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < srv->auth.count; i++) {
        const rift_identity *id = &srv->auth.entries[i].identity;
        srv->quota_slots[i] =
            rift_quota_find(srv->quota, id->name, id->name_len);
    }
    srv->cert_file =
        rift_strndup(mem, settings->cert_file, strlen(settings->cert_file));
    srv->key_file =
        rift_strndup(mem, settings->key_file, strlen(settings->key_file));
    if (srv->cert_file == NULL || srv->key_file == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    srv->max_connections = settings->max_connections;
    srv->max_streams = settings->max_streams_per_connection;
    srv->handshake_ns = settings->handshake_timeout_ms * 1000000u;
    srv->io_ns = settings->io_timeout_ms * 1000000u;
    srv->retry = settings->retry;
    if (settings->static_secret != NULL) {
        memcpy(srv->secret, settings->static_secret, sizeof(srv->secret));
        srv->has_secret = true;
    }
    return 0;
}

int rift_server_new(rift_server **psrv, rift_broker *broker,
                    const rift_server_settings *settings, rift_error *err) {
    if (settings == NULL || broker == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid argument: a broker and settings are "
                              "required");
    }
    const rift_mem *mem = settings->mem;
    rift_server *srv = rift_calloc(mem, 1, sizeof(*srv));
    if (srv == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    srv->mem = mem;
    srv->broker = broker;
    pthread_mutex_init(&srv->lock, NULL);
    pthread_mutex_init(&srv->sig_lock, NULL);
    pthread_cond_init(&srv->cond, NULL);
    atomic_init(&srv->store_inflight, 0);
    atomic_init(&srv->done_head, NULL);

    int rc = validate_and_build_auth(srv, settings, err);
    if (rc == 0) {
        rc = copy_settings(srv, settings, err);
    }
    if (rc != 0) {
        server_free(srv);
        return rc;
    }
    *psrv = srv;
    return 0;
}

/* ---- Addresses ---- */

static int parse_addr(const char *s, struct sockaddr_storage *ss,
                      socklen_t *len, rift_error *err) {
    char host[64];
    const char *port;
    memset(ss, 0, sizeof(*ss));
    if (s == NULL) {
        goto bad;
    }
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (end == NULL || end[1] != ':' ||
            (size_t)(end - s - 1) >= sizeof(host)) {
            goto bad;
        }
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon == NULL || (size_t)(colon - s) >= sizeof(host)) {
            goto bad;
        }
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        port = colon + 1;
    }
    char *endp;
    errno = 0;
    unsigned long p = strtoul(port, &endp, 10);
    if (*port == '\0' || *endp != '\0' || errno != 0 || p > 65535) {
        goto bad;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (s[0] != '[' && inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)p);
        *len = sizeof(*s4);
        return 0;
    }
    if (s[0] == '[' && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)p);
        *len = sizeof(*s6);
        return 0;
    }
bad:
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "invalid listen address: %s (expected IP:PORT)",
                          s ? s : "(null)");
}

int rift_server_local_addr(rift_server *srv, struct sockaddr_storage *ss,
                           socklen_t *len, rift_error *err) {
    pthread_mutex_lock(&srv->lock);
    int rc = RIFT_ERR_CLOSED;
    if (srv->run == SRV_RUNNING) {
        memcpy(ss, &srv->addr, sizeof(*ss));
        *len = srv->addrlen;
        rc = 0;
    }
    pthread_mutex_unlock(&srv->lock);
    return rc == 0 ? 0 : rift_error_set(err, rc, "server is not running");
}

int rift_server_address(rift_server *srv, char *buf, size_t cap,
                        rift_error *err) {
    struct sockaddr_storage ss;
    socklen_t len;
    int rc = rift_server_local_addr(srv, &ss, &len, err);
    if (rc != 0) {
        return rc;
    }
    char host[INET6_ADDRSTRLEN];
    int n;
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
        n = snprintf(buf, cap, "[%s]:%u", host, ntohs(s6->sin6_port));
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
        n = snprintf(buf, cap, "%s:%u", host, ntohs(s4->sin_port));
    }
    if (n < 0 || (size_t)n >= cap) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "address buffer too small");
    }
    return 0;
}

bool rift_server_is_running(rift_server *srv) {
    pthread_mutex_lock(&srv->lock);
    bool r = srv->run == SRV_RUNNING &&
             !atomic_load_explicit(&srv->thread_ended, memory_order_acquire);
    pthread_mutex_unlock(&srv->lock);
    return r;
}

/* ---- Server thread ---- */

/* Every SRV_MSG_CACHE_IDLE_NS: a period without remote publications
 * gives the cached message blocks back to the allocator. */
static void cache_timer_cb(rift_timer *t, void *arg) {
    rift_server *srv = arg;
    if (srv->c.msgs_in == srv->cache_msgs_in) {
        rift_msg_cache_trim();
    }
    srv->cache_msgs_in = srv->c.msgs_in;
    rift_timer_start(t, rift_loop_now(srv->loop) + SRV_MSG_CACHE_IDLE_NS);
}

static void *thread_main(void *arg) {
    rift_server *srv = arg;
    /* This thread polls the notifier after every batch of remote
     * publications (rift_srv_rx_batch_done). */
    rift_notifier_set_owner(srv->notifier);
    /* Remote publications are made and dropped here: keep their blocks
     * (broker/broker_face.h). */
    rift_msg_cache_enable(SRV_MSG_CACHE_BYTES);
    rift_timer_init(srv->loop, &srv->cache_timer, cache_timer_cb, srv);
    srv->cache_msgs_in = srv->c.msgs_in;
    rift_timer_start(&srv->cache_timer,
                     rift_loop_now(srv->loop) + SRV_MSG_CACHE_IDLE_NS);
    (void)rift_loop_run(srv->loop);
    rift_timer_stop(&srv->cache_timer);
    rift_msg_cache_disable();
    atomic_store_explicit(&srv->thread_ended, true, memory_order_release);
    return NULL;
}

/* Everything the server thread owns, after the thread has stopped (or
 * before it started). Records still alive belong to connections that did
 * not finish closing within the grace period: the endpoint goes first
 * (sending them a last CONNECTION_CLOSE and releasing queued chunks), then
 * the records. */
static void teardown(rift_server *srv) {
    rift_quic_endpoint_del(srv->ep);
    srv->ep = NULL;
    while (srv->all != NULL) {
        srv_stream *ss = srv->all;
        ss->qs = NULL;
        rift_srv_stream_free(ss);
    }
    while (srv->conns != NULL) {
        srv_conn *c = srv->conns;
        if (c->state == SC_READY) {
            srv->id_conns[c->id_index]--;
            srv->c.authenticated--;
        }
        rift_srv_conn_quota_give(c);
        srv->c.connections--;
        c->refs = 1;
        rift_srv_conn_unref(c);
    }
    if (srv->loop != NULL) {
        rift_timer_stop(&srv->stop_timer);
        rift_io_stop(&srv->notify_io);
    }
    rift_notifier_del(srv->notifier);
    srv->notifier = NULL;
    /* No publisher may post a fetch wake-up to a loop being deleted. */
    rift_srv_streams_watch(srv, false);
    rift_loop_del(srv->loop);
    srv->loop = NULL;
    rift_free(srv->mem, srv->scratch);
    srv->scratch = NULL;
    rift_free(srv->mem, srv->id_conns);
    srv->id_conns = NULL;
}

/* The event loop, the stop timer and the notifier other threads wake the
 * server thread with. */
static int start_loop(rift_server *srv, rift_error *err) {
    int rc;
    if ((rc = rift_loop_new(&srv->loop, srv->mem)) != 0) {
        rift_error_set(err, rc, "cannot create event loop: %s",
                       rift_strerror(rc));
        return rc;
    }
    rift_timer_init(srv->loop, &srv->stop_timer, NULL, srv);
    rift_srv_streams_watch(srv, true);
    if ((rc = rift_notifier_new(&srv->notifier, srv->mem, NULL)) != 0) {
        rift_error_set(err, rc, "cannot create notifier: %s",
                       rift_strerror(rc));
        return rc;
    }
    if ((rc = rift_io_start(srv->loop, &srv->notify_io,
                            rift_notifier_fd(srv->notifier), RIFT_IO_READ,
                            rift_srv_notify_cb, srv)) != 0) {
        rift_error_set(err, rc, "cannot watch notifier: %s", rift_strerror(rc));
        return rc;
    }
    return 0;
}

/* The QUIC endpoint bound to ss; records the address it got. */
static int start_quic(rift_server *srv, const struct sockaddr_storage *ss,
                      socklen_t sslen, rift_error *err) {
    int rc;
    rift_quic_settings qs;
    rift_quic_settings_default(&qs);
    qs.handshake_timeout = srv->handshake_ns;
    qs.max_streams_bidi = srv->max_streams;
    qs.max_connections = srv->max_connections;
    qs.cert_file = srv->cert_file;
    qs.key_file = srv->key_file;
    qs.static_secret = srv->has_secret ? srv->secret : NULL;
    qs.retry = srv->retry;
    qs.mem = srv->mem;
    if ((rc = rift_quic_server_new(&srv->ep, srv->loop,
                                   (const struct sockaddr *)ss, sslen, &qs,
                                   &rift_srv_callbacks, srv, err)) != 0) {
        return rc;
    }
    rift_quic_endpoint_local_addr(srv->ep, &srv->addr, &srv->addrlen);
    return 0;
}

/* The server thread takes no process signals: they belong to the
 * application (riftd watches them with a signalfd). */
static int start_thread(rift_server *srv, rift_error *err) {
    sigset_t all, old;
    sigfillset(&all);
    atomic_store_explicit(&srv->thread_ended, false, memory_order_relaxed);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&srv->thread, NULL, thread_main, srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return rift_error_set(err, -rc, "cannot start server thread: %s",
                              strerror(rc));
    }
    return 0;
}

int rift_server_start(rift_server *srv, const char *address, rift_error *err) {
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    int rc = parse_addr(address, &ss, &sslen, err);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&srv->lock);
    if (srv->run == SRV_RUNNING) {
        pthread_mutex_unlock(&srv->lock);
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "server already running");
    }
    srv->c = srv->last;
    srv->stopping = false;
    srv->drain_count = 0;
    srv->drain_every =
        rift_broker_get_settings(srv->broker)->subscription_capacity / 4;
    srv->drain_every = RIFT_MAX(RIFT_MIN(srv->drain_every, 256), 1);
    srv->id_conns =
        rift_calloc(srv->mem, srv->auth.count + 1, sizeof(uint64_t));
    srv->scratch = rift_malloc(srv->mem, SRV_SCRATCH_BYTES);
    if (srv->id_conns == NULL || srv->scratch == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = start_loop(srv, err)) != 0 ||
        (rc = start_quic(srv, &ss, sslen, err)) != 0 ||
        (rc = start_thread(srv, err)) != 0) {
        goto fail;
    }
    srv->run = SRV_RUNNING;
    pthread_mutex_unlock(&srv->lock);
    return 0;

fail:
    teardown(srv);
    pthread_mutex_unlock(&srv->lock);
    return rc;
}

/* ---- Stop ---- */

static bool stop_done(rift_server *srv) {
    return srv->conns == NULL &&
           atomic_load_explicit(&srv->store_inflight, memory_order_acquire) ==
               0;
}

static void stop_timer_cb(rift_timer *t, void *arg) {
    rift_server *srv = arg;
    (void)t;
    rift_tstamp now = rift_loop_now(srv->loop);
    if (stop_done(srv) || (now >= srv->stop_deadline &&
                           atomic_load_explicit(&srv->store_inflight,
                                                memory_order_acquire) == 0)) {
        /* Durable-stream completions post to this loop, so it outlives
         * every one of them, even past the grace period. */
        rift_loop_stop(srv->loop);
        return;
    }
    rift_timer_start(&srv->stop_timer, now + STOP_POLL_NS);
}

static void stop_cb(void *arg, int status) {
    rift_server *srv = arg;
    if (status != 0) {
        return;
    }
    srv->stopping = true;
    /* Requests waiting for a reply on streams already gone would keep
     * their connection records until their timeouts: end them now. */
    for (srv_stream *ss = srv->all, *next; ss; ss = next) {
        next = ss->next;
        if (ss->state == SS_BUSY && ss->inbox != NULL) {
            rift_srv_fail(ss, RIFT_ERR_CLOSED, "server shutdown");
        }
    }
    rift_quic_endpoint_shutdown(srv->ep, 0, "server shutdown",
                                strlen("server shutdown"));
    srv->stop_deadline = rift_loop_now(srv->loop) + STOP_GRACE_NS;
    rift_timer_init(srv->loop, &srv->stop_timer, stop_timer_cb, srv);
    rift_timer_start(&srv->stop_timer, 0);
}

static void save_counters(rift_server *srv) {
    srv->last = srv->c;
    /* Nothing is live once stopped. */
    srv->last.connections = srv->last.authenticated = 0;
    srv->last.streams = srv->last.subscriptions = 0;
    if (srv->ep != NULL) {
        rift_quic_endpoint_stats st;
        rift_quic_endpoint_get_stats(srv->ep, &st);
        srv->last_refused += st.conns_refused;
    }
}

void rift_server_stop(rift_server *srv) {
    if (srv == NULL) {
        return;
    }
    pthread_mutex_lock(&srv->lock);
    if (srv->run != SRV_RUNNING) {
        pthread_mutex_unlock(&srv->lock);
        return;
    }
    if (rift_loop_post(srv->loop, stop_cb, srv) != 0) {
        rift_loop_stop(srv->loop); /* out of memory: stop abruptly */
    }
    pthread_join(srv->thread, NULL);
    save_counters(srv);
    teardown(srv);
    srv->run = SRV_STOPPED;
    pthread_mutex_unlock(&srv->lock);
}

void rift_server_del(rift_server *srv) {
    if (srv == NULL) {
        return;
    }
    rift_server_stop(srv);
    server_free(srv);
}

/* ---- Stats ---- */

typedef struct stats_req {
    rift_server *srv;
    srv_counters c;
    uint64_t *id_conns;
    uint64_t refused;
    bool done;
} stats_req;

static void stats_cb(void *arg, int status) {
    stats_req *req = arg;
    rift_server *srv = req->srv;
    if (status == 0) {
        req->c = srv->c;
        memcpy(req->id_conns, srv->id_conns,
               srv->auth.count * sizeof(uint64_t));
        rift_quic_endpoint_stats st;
        rift_quic_endpoint_get_stats(srv->ep, &st);
        req->refused = st.conns_refused;
    }
    rift_srv_post_done(srv, &req->done);
}

int rift_srv_post_wait(rift_server *srv, rift_post_cb cb, void *arg,
                       bool *done) {
    /* A loop that ended on its own runs no posts: waiting would hang. */
    if (srv->run != SRV_RUNNING ||
        atomic_load_explicit(&srv->thread_ended, memory_order_acquire)) {
        return RIFT_ERR_CLOSED;
    }
    if (rift_loop_post(srv->loop, cb, arg) != 0) {
        return RIFT_ERR_NOMEM;
    }
    pthread_mutex_lock(&srv->sig_lock);
    while (!*done) {
        pthread_cond_wait(&srv->cond, &srv->sig_lock);
    }
    pthread_mutex_unlock(&srv->sig_lock);
    return 0;
}

void rift_srv_post_done(rift_server *srv, bool *done) {
    pthread_mutex_lock(&srv->sig_lock);
    *done = true;
    pthread_cond_broadcast(&srv->cond);
    pthread_mutex_unlock(&srv->sig_lock);
}

int rift_server_get_stats(rift_server *srv, rift_server_stats *st,
                          rift_error *err) {
    memset(st, 0, sizeof(*st));
    size_t n = srv->auth.count;
    /* One block: the identity array, then their names. */
    size_t names = 0;
    for (size_t i = 0; i < n; i++) {
        names += srv->auth.entries[i].identity.name_len + 1;
    }
    uint64_t *id_conns = rift_calloc(srv->mem, n + 1, sizeof(uint64_t));
    rift_server_identity_stats *ids =
        rift_malloc(srv->mem, (n + 1) * sizeof(*ids) + names);
    if (id_conns == NULL || ids == NULL) {
        rift_free(srv->mem, id_conns);
        rift_free(srv->mem, ids);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    stats_req req = {.srv = srv, .id_conns = id_conns};
    /* |lock| keeps stop from running meanwhile; the loop answers under
     * |sig_lock| only, so it never waits for |lock|. */
    pthread_mutex_lock(&srv->lock);
    uint64_t refused = srv->last_refused;
    if (rift_srv_post_wait(srv, stats_cb, &req, &req.done) == 0) {
        refused += req.refused;
    } else {
        req.c = srv->last;
    }
    pthread_mutex_unlock(&srv->lock);

    st->connections = req.c.connections;
    st->authenticated = req.c.authenticated;
    st->connections_accepted = req.c.accepted;
    st->connections_refused = refused;
    st->auth_failures = req.c.auth_failures;
    st->streams = req.c.streams;
    st->subscriptions = req.c.subscriptions;
    st->msgs_in = req.c.msgs_in;
    st->bytes_in = req.c.bytes_in;
    st->msgs_out = req.c.msgs_out;
    st->bytes_out = req.c.bytes_out;
    st->slow_consumers = req.c.slow_consumers;
    st->queued_bytes = req.c.queued;
    st->conn_queued_peak = req.c.conn_queued_peak;
    char *p = (char *)(ids + n + 1);
    for (size_t i = 0; i < n; i++) {
        const rift_identity *id = &srv->auth.entries[i].identity;
        memcpy(p, id->name, id->name_len);
        p[id->name_len] = '\0';
        ids[i].name = p;
        ids[i].connections = id_conns[i];
        p += id->name_len + 1;
    }
    st->identity_count = n;
    st->identities = ids;
    st->priv_mem_ = srv->mem;
    rift_free(srv->mem, id_conns);
    return 0;
}

void rift_server_stats_free(rift_server_stats *st) {
    if (st == NULL) {
        return;
    }
    rift_free(st->priv_mem_, st->identities);
    memset(st, 0, sizeof(*st));
}
