/*
 * client.c — the Rift client's connection lifecycle (client layer):
 * settings, address resolution, connect (the loop, the QUIC endpoint, the
 * client thread, waiting for AUTH), close and teardown. What the
 * transport reports is handled in client_events.c, the common ground in
 * client_base.c. See client_internal.h for the threading and lifetime
 * rules.
 */
#include "client/client_internal.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <string.h>
#include <time.h>

void rift_client_settings_default(rift_client_settings *s) {
    memset(s, 0, sizeof(*s));
    s->connect_timeout_ms = 30000;
    s->op_timeout_ms = 30000;
}

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
    rift_client_connect_complete(c, e.code, &e);
    /* Owners reset their streams; the endpoint then goes without further
     * callbacks, so the stream records are freed here. */
    rift_client_fail_all(c, &e, false);
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

/* A client record with its token copy, message pool and loop. A failure
 * after the record exists releases it. */
static int client_new(rift_client **pc, const rift_client_settings *s,
                      size_t token_len, rift_error *err) {
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
    int rc;
    if (c->token == NULL || rift_msgpool_new(&c->msgs, c->mem) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    } else if ((rc = rift_loop_new(&c->loop, c->mem)) != 0) {
        rift_error_set(err, rc, "cannot create the client loop: %s",
                       rift_strerror(rc));
    } else {
        *pc = c;
        return 0;
    }
    rift_client_unref(c);
    return rc;
}

/* The QUIC endpoint and its connection to |addr|, and the connect
 * deadline. */
static int open_transport(rift_client *c, const rift_client_settings *s,
                          const struct sockaddr_storage *addr,
                          socklen_t addrlen, rift_error *err) {
    rift_quic_settings qs;
    rift_quic_settings_default_client(&qs);
    qs.ca_file = s->ca_file;
    qs.server_name = s->server_name;
    /* Our own deadline covers handshake and AUTH; the transport's must
     * not fire first. */
    qs.handshake_timeout = c->connect_timeout_ns + 1000000000u;
    qs.mem = c->mem;
    int rc =
        rift_quic_client_new(&c->ep, c->loop, (const struct sockaddr *)addr,
                             addrlen, &qs, &rift_client_quic_callbacks, c, err);
    if (rc != 0) {
        return rc;
    }
    c->conn = rift_quic_client_conn(c->ep);
    rift_quic_endpoint_local_addr(c->ep, &c->local, &c->local_len);
    rift_timer_init(c->loop, &c->connect_timer, rift_client_connect_timeout, c);
    if ((rc = rift_timer_start(&c->connect_timer,
                               rift_now_ns() + c->connect_timeout_ns)) != 0) {
        rift_error_set(err, rc, "out of memory");
        rift_quic_endpoint_del(c->ep);
        c->ep = NULL;
    }
    return rc;
}

/* Starts the client thread, which must not take the application's
 * signals. */
static int start_thread(rift_client *c, rift_error *err) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->thread, NULL, client_thread, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return rift_error_set(err, -rc, "cannot start the client thread: %s",
                              strerror(rc));
    }
    c->thread_started = true;
    return 0;
}

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
    rift_client *c = NULL;
    if ((rc = client_new(&c, s, token_len, err)) != 0) {
        return rc;
    }
    if ((rc = open_transport(c, s, &addr, addrlen, err)) != 0) {
        c->closing = true;
        rift_client_unref(c);
        return rc;
    }
    if ((rc = start_thread(c, err)) != 0) {
        rift_timer_stop(&c->connect_timer);
        rift_quic_endpoint_del(c->ep);
        c->ep = NULL;
        c->closing = true;
        rift_client_unref(c);
        return rc;
    }
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
