/*
 * monitor.c — the HTTP monitoring listener (daemon layer). See monitor.h.
 *
 * libmicrohttpd does the HTTP (parsing is where hand-written servers get
 * hurt); this file binds the socket itself, so the error names the address
 * and errno and port 0 resolves to a real port, and maps paths to views.
 * One internal thread (epoll) serves every connection, so the view
 * callbacks never run concurrently; connection count, per-address count,
 * idle time and per-connection memory are capped, since the listener
 * needs no authentication.
 */
#include "daemon/monitor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MONITOR_MAX_CONNECTIONS 64u
#define MONITOR_MAX_PER_ADDRESS 16u
#define MONITOR_IDLE_TIMEOUT_S  10u
#define MONITOR_CONN_MEMORY     (32u * 1024u)
#define MONITOR_CONTENT_JSON    "application/json"
#define MONITOR_CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"

struct rift_monitor {
    struct MHD_Daemon *mhd;
    int fd;
    rift_monitor_views views;
    char address[64];
};

/* ---- Responses ---- */

static enum MHD_Result send_body(struct MHD_Connection *conn, unsigned int code,
                                 const char *type, char *body, size_t len) {
    if (body == NULL) {
        static const char oom[] = "{\"error\":\"out of memory\"}";
        body = strdup(oom);
        len = body != NULL ? sizeof(oom) - 1 : 0;
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        type = MONITOR_CONTENT_JSON;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body,
        body != NULL ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ok = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ok;
}

/* Serialises |o| (stolen) with a trailing newline. */
static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned int code,
                                 json_t *o) {
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    char *body = NULL;
    size_t len = 0;
    if (text != NULL) {
        len = strlen(text);
        if ((body = malloc(len + 2)) != NULL) {
            memcpy(body, text, len);
            body[len++] = '\n';
            body[len] = '\0';
        }
        free(text);
    }
    return send_body(conn, code, MONITOR_CONTENT_JSON, body, len);
}

static enum MHD_Result send_error(struct MHD_Connection *conn,
                                  unsigned int code, const char *text) {
    return send_json(conn, code, json_pack("{s:s}", "error", text));
}

/* ---- Views ---- */

static enum MHD_Result view_healthz(rift_monitor *m,
                                    struct MHD_Connection *conn) {
    const char *why = NULL;
    if (m->views.healthy(m->views.user_data, &why)) {
        return send_json(conn, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
    }
    return send_json(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                     json_pack("{s:s,s:s}", "status", "unavailable", "error",
                               why ? why : "not serving"));
}

static enum MHD_Result view_status(rift_monitor *m,
                                   struct MHD_Connection *conn) {
    json_t *st = m->views.status(m->views.user_data);
    if (st == NULL) {
        return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "out of memory");
    }
    return send_json(conn, MHD_HTTP_OK, st);
}

static enum MHD_Result view_metrics(rift_monitor *m,
                                    struct MHD_Connection *conn) {
    json_t *st = m->views.status(m->views.user_data);
    size_t len = 0;
    char *text = st != NULL ? rift_monitor_metrics(st, &len) : NULL;
    json_decref(st);
    if (text == NULL) {
        return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "out of memory");
    }
    return send_body(conn, MHD_HTTP_OK, MONITOR_CONTENT_METRICS, text, len);
}

static enum MHD_Result
view_streaming(rift_monitor *m, struct MHD_Connection *conn, const char *view) {
    const char *only = MHD_lookup_connection_value(
        conn, MHD_GET_ARGUMENT_KIND,
        strcmp(view, "clientsz") == 0 ? "client" : "channel");
    const char *subs =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "subs");
    unsigned code = MHD_HTTP_NOT_FOUND;
    char why[256] = "unknown path";
    json_t *o = NULL;
    if (m->views.streaming != NULL) {
        o = m->views.streaming(
            m->views.user_data, view, only != NULL && only[0] ? only : NULL,
            subs != NULL && strcmp(subs, "1") == 0, &code, why, sizeof(why));
    }
    if (o == NULL) {
        return send_error(conn, code, why);
    }
    return send_json(conn, MHD_HTTP_OK, o);
}

static enum MHD_Result view_index(struct MHD_Connection *conn) {
    return send_json(
        conn, MHD_HTTP_OK,
        json_pack("{s:[s,s,s]}", "paths", "/healthz", "/status", "/metrics"));
}

/* libmicrohttpd's request callback: the whole routing table. A request
 * body is never read (every view is a GET), so the first call answers. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_len, void **req) {
    rift_monitor *m = cls;
    (void)version;
    (void)upload;
    (void)req;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        *upload_len = 0;
        return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                          "only GET and HEAD are served");
    }
    if (strcmp(url, "/healthz") == 0) {
        return view_healthz(m, conn);
    }
    if (strcmp(url, "/status") == 0) {
        return view_status(m, conn);
    }
    if (strcmp(url, "/metrics") == 0) {
        return view_metrics(m, conn);
    }
    if (strcmp(url, "/") == 0) {
        return view_index(conn);
    }
    if (strncmp(url, "/streaming/", 11) == 0) {
        return view_streaming(m, conn, url + 11);
    }
    return send_error(conn, MHD_HTTP_NOT_FOUND, "unknown path");
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    char line[256];
    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    rift_log(RIFT_LOG_DEBUG, "rift: monitor: %s", line);
}

/* ---- Lifecycle ---- */

static void format_address(const struct sockaddr_storage *ss, char *out,
                           size_t cap) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        snprintf(out, cap, "[%s]:%u", host, ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(out, cap, "%s:%u", host, ntohs(a->sin_port));
    }
}

static bool is_loopback(const struct sockaddr_storage *ss) {
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}

static int bind_listener(rift_monitor *m, const rift_config_monitor *cfg,
                         rift_error *err) {
    int one = 1;
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    m->fd = socket(cfg->listen_addr.ss_family,
                   SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (m->fd < 0 ||
        setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(m->fd, (const struct sockaddr *)&cfg->listen_addr,
             cfg->listen_addr_len) != 0 ||
        listen(m->fd, 64) != 0 ||
        getsockname(m->fd, (struct sockaddr *)&bound, &blen) != 0) {
        return rift_error_set(err, RIFT_ERR_IO,
                              "cannot bind monitor listener %s: %s",
                              cfg->listen, strerror(errno));
    }
    format_address(&bound, m->address, sizeof(m->address));
    return 0;
}

int rift_monitor_start(rift_monitor **pm, const rift_config_monitor *cfg,
                       const rift_monitor_views *views, rift_error *err) {
    *pm = NULL;
    rift_monitor *m = rift_calloc(NULL, 1, sizeof(*m));
    if (m == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    m->fd = -1;
    m->views = *views;
    int rc = bind_listener(m, cfg, err);
    if (rc != 0) {
        rift_monitor_stop(m);
        return rc;
    }
    /* ITC: rift_monitor_stop quiesces the daemon first (below). */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (cfg->listen_addr.ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    m->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, m->fd,
        MHD_OPTION_CONNECTION_LIMIT, MONITOR_MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, MONITOR_MAX_PER_ADDRESS,
        MHD_OPTION_CONNECTION_TIMEOUT, MONITOR_IDLE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MONITOR_CONN_MEMORY,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
    if (m->mhd == NULL) {
        rc = rift_error_set(err, RIFT_ERR_IO,
                            "cannot start monitor listener %s", cfg->listen);
        rift_monitor_stop(m);
        return rc;
    }
    if (!is_loopback(&cfg->listen_addr)) {
        rift_log(RIFT_LOG_WARN,
                 "rift: monitor listener %s is not loopback; its views need "
                 "no authentication",
                 m->address);
    }
    *pm = m;
    return 0;
}

const char *rift_monitor_address(const rift_monitor *m) {
    return m->address;
}

void rift_monitor_stop(rift_monitor *m) {
    if (m == NULL) {
        return;
    }
    if (m->mhd != NULL) {
        /* Quiescing hands the listening socket back, so exactly one side
         * closes it whether or not the daemon started. */
        MHD_socket fd = MHD_quiesce_daemon(m->mhd);
        MHD_stop_daemon(m->mhd);
        if (fd != MHD_INVALID_SOCKET && fd != m->fd) {
            close(fd);
        }
    }
    if (m->fd >= 0) {
        close(m->fd);
    }
    rift_free(NULL, m);
}
