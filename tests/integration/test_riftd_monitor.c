/*
 * test_riftd_monitor.c — riftd's HTTP monitoring listener end to end
 * (integration tests): /healthz, /status and /metrics over a real socket,
 * the numbers following traffic, 404/405, no token and no server path in
 * any view, --check naming the listener, and the configuration errors
 * (bad address, address in use) as one line and exit 1.
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'admin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { '>' }, subscribe = { '>' }, control = true },\n"
    "    },\n"
    "    streams = { jobs = { subjects = { 'jobs.>' },\n"
    "                         storage_path = 'stream-data' } },\n"
    "  },\n"
    "  monitor = { listen = '127.0.0.1:0' },\n"
    "}\n";

/* The port of the "monitor HTTP on 127.0.0.1:PORT" log line, or 0. */
static int monitor_port(riftd_fix *f) {
    static const char tag[] = "monitor HTTP on 127.0.0.1:";
    if (!rift_proc_wait_text(&f->p, true, tag, RIFT_PROC_WAIT_MS)) {
        return 0;
    }
    char *log = rift_proc_read(f->p.err);
    const char *at = log ? strstr(log, tag) : NULL;
    int port = at ? atoi(at + sizeof(tag) - 1) : 0;
    free(log);
    return port;
}

typedef struct http_answer {
    int code;
    char head[1024];
    char *body; /* free() */
} http_answer;

/* One HTTP/1.0 request; reads until the server closes. */
static bool http(int port, const char *method, const char *path,
                 http_answer *a) {
    memset(a, 0, sizeof(*a));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    char req[256];
    int n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: x\r\n\r\n",
                     method, path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return false;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    ssize_t r;
    while (buf != NULL && (r = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)r;
        if (len == cap) {
            break;
        }
    }
    close(fd);
    if (buf == NULL) {
        return false;
    }
    buf[len] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (sep == NULL || sscanf(buf, "HTTP/1.%*d %d", &a->code) != 1) {
        free(buf);
        return false;
    }
    size_t hl = (size_t)(sep - buf);
    memcpy(a->head, buf, hl < sizeof(a->head) - 1 ? hl : sizeof(a->head) - 1);
    a->body = strdup(sep + 4);
    free(buf);
    return a->body != NULL;
}

static json_t *get_json(int port, const char *path, int want_code) {
    http_answer a;
    if (!http(port, "GET", path, &a)) {
        return NULL;
    }
    json_t *v = NULL;
    if (a.code == want_code && strstr(a.head, "application/json") != NULL) {
        v = json_loads(a.body, 0, NULL);
    }
    free(a.body);
    return v;
}

RIFT_TEST(monitor_serves_health_status_and_metrics) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    int port = monitor_port(&f);
    CHECK(port > 0);

    json_t *h = get_json(port, "/healthz", 200);
    CHECK(h != NULL);
    CHECK(strcmp(json_string_value(json_object_get(h, "status")), "ok") == 0);
    json_decref(h);

    /* Traffic the views must count: three stream records. */
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    for (int i = 0; i < 3; i++) {
        rift_stored st;
        CHECK_OK(rift_client_stream_publish(c, "jobs", 4, "jobs.a", 6, NULL, 0,
                                            (const uint8_t *)"work", 4, &st,
                                            &err));
    }

    json_t *s = get_json(port, "/status", 200);
    CHECK(s != NULL);
    json_t *conns = json_object_get(s, "connections");
    CHECK_EQ_INT(json_integer_value(json_object_get(conns, "authenticated")),
                 1);
    json_t *jobs = json_array_get(json_object_get(s, "streams"), 0);
    CHECK(strcmp(json_string_value(json_object_get(jobs, "name")), "jobs") ==
          0);
    CHECK_EQ_INT(json_integer_value(json_object_get(jobs, "messages")), 3);
    CHECK(json_is_array(json_object_get(jobs, "consumer_names")));
    /* The configuration by file name only. */
    CHECK(strcmp(json_string_value(json_object_get(s, "config")), "rift.lua") ==
          0);
    json_decref(s);

    http_answer a;
    CHECK(http(port, "GET", "/metrics", &a));
    CHECK_EQ_INT(a.code, 200);
    CHECK(strstr(a.head, "text/plain; version=0.0.4") != NULL);
    CHECK(strstr(a.body, "\nrift_stream_messages{stream=\"jobs\"} 3\n"));
    CHECK(strstr(a.body, "\nrift_connections_authenticated 1\n"));
    CHECK(
        strstr(a.body, "\nrift_identity_connections{identity=\"admin\"} 1\n"));
    CHECK(strstr(a.body, "\nrift_remote_messages_in_total 3\n"));
    free(a.body);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(monitor_views_carry_no_secret_and_no_path) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    int port = monitor_port(&f);
    CHECK(port > 0);
    static const char *const paths[] = {"/", "/healthz", "/status", "/metrics",
                                        "/nope"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(paths); i++) {
        http_answer a;
        CHECK(http(port, "GET", paths[i], &a));
        CHECK_MSG(strstr(a.body, RIFTD_FIX_TOKEN) == NULL, "token in %s",
                  paths[i]);
        CHECK_MSG(strstr(a.body, f.dir) == NULL, "server path in %s: %s",
                  paths[i], a.body);
        CHECK_MSG(strstr(a.body, "RIFT_TEST_TOKEN") == NULL,
                  "token variable in %s", paths[i]);
        free(a.body);
    }
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(monitor_refuses_other_methods_and_paths) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    int port = monitor_port(&f);
    CHECK(port > 0);
    http_answer a;
    CHECK(http(port, "POST", "/status", &a));
    CHECK_EQ_INT(a.code, 405);
    free(a.body);
    CHECK(http(port, "DELETE", "/healthz", &a));
    CHECK_EQ_INT(a.code, 405);
    free(a.body);
    json_t *e = get_json(port, "/status/x", 404);
    CHECK(e != NULL);
    CHECK(strcmp(json_string_value(json_object_get(e, "error")),
                 "unknown path") == 0);
    json_decref(e);
    /* HEAD answers with the headers only. */
    CHECK(http(port, "HEAD", "/healthz", &a));
    CHECK_EQ_INT(a.code, 200);
    CHECK_EQ_INT(strlen(a.body), 0);
    free(a.body);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(monitor_check_names_the_listener) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    const char *args[] = {"-c", "rift.lua", "--check", NULL};
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN, NULL};
    char *out = NULL;
    CHECK_EQ_INT(rift_proc_run(rift_proc_riftd(), f.dir, args, env, &out, NULL),
                 0);
    CHECK(out != NULL && strstr(out, "monitor: http://127.0.0.1:0 ") != NULL);
    free(out);
    riftd_fix_free(&f);
}

/* riftd with |cfg| must exit 1 before serving, printing |text|. */
static bool refused_with(const char *cfg, const char *text) {
    riftd_fix f;
    if (!riftd_fix_init(&f, cfg)) {
        return false;
    }
    const char *args[] = {"-c", "rift.lua", NULL};
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN, NULL};
    char *errtext = NULL;
    int rc = rift_proc_run(rift_proc_riftd(), f.dir, args, env, NULL, &errtext);
    bool ok = rc == 1 && errtext != NULL && strstr(errtext, text) != NULL;
    if (!ok) {
        fprintf(stderr, "  exit %d, stderr: %s\n", rc,
                errtext ? errtext : "(none)");
    }
    free(errtext);
    riftd_fix_free(&f);
    return ok;
}

RIFT_TEST(monitor_configuration_errors) {
    CHECK(refused_with("return { monitor = { listen = 'localhost:80' } }",
                       "monitor.listen: expected an ip:port socket address"));
    CHECK(
        refused_with("return { monitor = 8222 }", "monitor: expected a table"));
    CHECK(refused_with("return { monitor = { port = 1 } }", "monitor.port"));
    /* An address in use: bound here first. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    CHECK(fd >= 0);
    CHECK_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
    CHECK_OK(listen(fd, 1));
    CHECK_OK(getsockname(fd, (struct sockaddr *)&sa, &sl));
    char cfg[256], want[96];
    snprintf(cfg, sizeof(cfg),
             "return { monitor = { listen = '127.0.0.1:%u' } }",
             ntohs(sa.sin_port));
    snprintf(want, sizeof(want), "cannot bind monitor listener 127.0.0.1:%u",
             ntohs(sa.sin_port));
    bool ok = refused_with(cfg, want);
    close(fd);
    CHECK(ok);
}
