/*
 * test_stan_views.c — riftd's NATS Streaming channels as streams of its
 * one stream namespace, and the clientsz/channelsz/serverz views
 * (integration tests, nats.c's STAN client against a real riftd):
 *   - a channel is listed by `streams` and `stream.info`; a STAN publish
 *     is fetched by a Rift v1 consumer; a Rift v1 STREAM_PUBLISH reaches a
 *     STAN subscriber; the rift side's publish grants apply;
 *   - after a scenario (a client, two channels, a durable with pending, a
 *     queue subscriber) the control commands and the /streaming views show the
 *     original's fields with the right values, and an offline durable.
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "riftd_fix.h"
#include "test.h"

#include "common/common.h"
#include "stan/stan_connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* admin: the rift side (QUIC, control); stan: anonymous NATS clients,
 * whose grants cover the STAN subjects only. */
static bool start(riftd_fix *f, int nats_port) {
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "return {\n"
             "  messaging = {\n"
             "    listen = '127.0.0.1:0',\n"
             "    certificate = 'tls/server.pem',\n"
             "    private_key = 'tls/server.key',\n"
             "    principals = {\n"
             "      { name = 'admin', token_env = 'RIFT_TEST_TOKEN',\n"
             "        publish = { '>' }, subscribe = { '>' }, control = true "
             "},\n"
             "      { name = 'stan', token_env = 'RIFT_TEST_TOKEN2',\n"
             "        publish = { '_STAN.>', '_INBOX.>' },\n"
             "        subscribe = { '_INBOX.>', '_STAN.acks.>' } } } },\n"
             "  nats = { listen = '127.0.0.1:%d', anonymous = 'stan',\n"
             "           allow_plaintext = true },\n"
             "  streaming = { },\n"
             "  monitor = { listen = '127.0.0.1:0' },\n"
             "}\n",
             nats_port);
    return riftd_fix_init(f, cfg) && riftd_fix_start(f, NULL);
}

/* ---- What a STAN subscriber got ---- */

typedef struct got {
    pthread_mutex_t mu;
    uint64_t seqs[16];
    char data[16][32];
    size_t n;
    bool ack;
} got;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    got *g = closure;
    pthread_mutex_lock(&g->mu);
    if (g->ack) { /* before the count: see stan_fix.c */
        stanSubscription_AckMsg(sub, msg);
    }
    if (g->n < 16) {
        int len = stanMsg_GetDataLength(msg);
        snprintf(g->data[g->n], sizeof g->data[0], "%.*s", len,
                 stanMsg_GetData(msg));
        g->seqs[g->n++] = stanMsg_GetSequence(msg);
    }
    pthread_mutex_unlock(&g->mu);
    stanMsg_Destroy(msg);
}

typedef struct want {
    got *g;
    size_t n;
} want;

static bool got_enough(void *arg) {
    want *w = arg;
    pthread_mutex_lock(&w->g->mu);
    bool ok = w->g->n >= w->n;
    pthread_mutex_unlock(&w->g->mu);
    return ok;
}

static bool wait_got(got *g, size_t n) {
    want w = {g, n};
    return rift_test_wait_until(got_enough, &w, 10000);
}

/* A subscription: |durable| and |queue| may be NULL; manual acks with
 * |max_inflight| and |ack_wait_ms| unless g->ack. */
static stanSubscription *subscribe(stanConnection *sc, const char *channel,
                                   const char *durable, const char *queue,
                                   int max_inflight, int64_t ack_wait_ms,
                                   got *g) {
    stanSubOptions *so = NULL;
    stanSubscription *sub = NULL;
    if (stanSubOptions_Create(&so) != NATS_OK) {
        return NULL;
    }
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetMaxInflight(so, max_inflight);
    stanSubOptions_SetAckWait(so, ack_wait_ms);
    if (durable != NULL) {
        stanSubOptions_SetDurableName(so, durable);
    }
    natsStatus s =
        queue != NULL
            ? stanConnection_QueueSubscribe(&sub, sc, channel, queue, on_msg, g,
                                            so)
            : stanConnection_Subscribe(&sub, sc, channel, on_msg, g, so);
    stanSubOptions_Destroy(so);
    return s == NATS_OK ? sub : NULL;
}

/* ---- Control answers ---- */

/* The "data" of a successful control answer (a new reference) or NULL. */
static json_t *control(rift_client *c, const char *cmd, const char *payload) {
    json_t *a = riftd_fix_control(c, cmd, payload, NULL);
    json_t *d = NULL;
    if (a != NULL && json_is_true(json_object_get(a, "ok"))) {
        d = json_incref(json_object_get(a, "data"));
    } else if (a != NULL) {
        fprintf(stderr, "%s: %s\n", cmd,
                json_string_value(json_object_get(a, "error")));
    }
    json_decref(a);
    return d;
}

static json_int_t jint(const json_t *o, const char *key) {
    return json_integer_value(json_object_get(o, key));
}

static const char *jstr(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static bool jtrue(const json_t *o, const char *key) {
    return json_is_true(json_object_get(o, key));
}

/* The element of array |a| whose |key| is |value|. */
static json_t *find_by(const json_t *a, const char *key, const char *value) {
    size_t i;
    json_t *el;
    json_array_foreach((json_t *)a, i, el) {
        if (strcmp(jstr(el, key), value) == 0) {
            return el;
        }
    }
    return NULL;
}

/* ---- HTTP ---- */

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

/* GET |path| over HTTP/1.0; the body parsed when the status is |code|. */
static json_t *http_json(int port, const char *path, int code) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    ssize_t r = write(fd, req, (size_t)n);
    while (buf != NULL && r == n && len < cap &&
           (r = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)r;
        r = n;
    }
    close(fd);
    json_t *v = NULL;
    int got_code = 0;
    if (buf != NULL) {
        buf[len] = '\0';
        char *body = strstr(buf, "\r\n\r\n");
        if (body != NULL && sscanf(buf, "HTTP/1.%*d %d", &got_code) == 1 &&
            got_code == code) {
            v = json_loads(body + 4, 0, NULL);
        }
    }
    if (v == NULL) {
        fprintf(stderr, "GET %s: status %d, wanted %d\n", path, got_code, code);
    }
    free(buf);
    return v;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

RIFT_TEST(channel_is_a_stream_both_ways) {
    int nport = rift_test_free_tcp_port();
    CHECK(nport > 0);
    riftd_fix f;
    CHECK(start(&f, nport));
    stanConnection *sc = stan_fix_connect(nport, "bridge");
    CHECK(sc != NULL);
    CHECK(stanConnection_Publish(sc, "orders", "one", 3) == NATS_OK);
    CHECK(stanConnection_Publish(sc, "orders", "two", 3) == NATS_OK);

    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    /* Listed with the streams, and shown by stream.info. */
    json_t *d = control(c, "streams", "{}");
    CHECK(d != NULL);
    json_t *e = find_by(json_object_get(d, "streams"), "name", "orders");
    CHECK(e != NULL);
    CHECK(jtrue(e, "channel"));
    CHECK_EQ_STR(jstr(e, "storage"), "memory");
    CHECK_EQ_INT(jint(e, "messages"), 2);
    CHECK_EQ_INT(jint(e, "first_seq"), 1);
    CHECK_EQ_INT(jint(e, "last_seq"), 2);
    json_decref(d);
    d = control(c, "stream.info", "{\"name\":\"orders\"}");
    CHECK(d != NULL);
    CHECK_EQ_INT(jint(d, "messages"), 2);
    CHECK_EQ_STR(
        json_string_value(json_array_get(json_object_get(d, "subjects"), 0)),
        "orders");
    json_decref(d);
    /* A channel that does not exist is not created by a lookup. */
    d = riftd_fix_control(c, "stream.info", "{\"name\":\"nochannel\"}", NULL);
    CHECK(d != NULL && json_is_false(json_object_get(d, "ok")));
    json_decref(d);

    /* STAN publish -> Rift v1 consumer. */
    rift_error err = {0};
    CHECK_OK(
        rift_client_consumer_open(c, "orders", 6, "reader", 6, NULL, &err));
    rift_client_delivery dl[8];
    size_t n = 0;
    CHECK_OK(rift_client_fetch(c, "orders", 6, "reader", 6, 8, dl, &n, &err));
    CHECK_EQ_INT((int)n, 2);
    size_t plen;
    const uint8_t *p = rift_msg_payload(dl[0].msg, &plen);
    CHECK_EQ_MEM(p, plen, "one", 3);
    CHECK_EQ_U64(dl[1].sequence, 2);
    for (size_t i = 0; i < n; i++) {
        CHECK_OK(
            rift_client_ack(c, "orders", 6, "reader", 6, dl[i].sequence, &err));
        rift_msg_unref(dl[i].msg);
    }

    /* Rift v1 STREAM_PUBLISH -> STAN subscriber, woken at once. */
    got g = {PTHREAD_MUTEX_INITIALIZER, .ack = true};
    stanSubscription *sub = subscribe(sc, "orders", NULL, NULL, 16, 30000, &g);
    CHECK(sub != NULL);
    CHECK(wait_got(&g, 2));
    double t0 = now_s();
    rift_stored st;
    CHECK_OK(rift_client_stream_publish(c, "orders", 6, "orders", 6, NULL, 0,
                                        (const uint8_t *)"from-rift", 9, &st,
                                        &err));
    CHECK_EQ_U64(st.sequence, 3);
    CHECK(wait_got(&g, 3));
    printf("rift publish to STAN delivery: %.1f ms\n", (now_s() - t0) * 1e3);
    CHECK_EQ_U64(g.seqs[2], 3);
    CHECK_EQ_STR(g.data[2], "from-rift");

    /* The rift side's grants apply as for any stream: 'stan' may not
     * publish on "orders". */
    rift_client *limited;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &limited));
    int rc = rift_client_stream_publish(limited, "orders", 6, "orders", 6, NULL,
                                        0, (const uint8_t *)"x", 1, NULL, &err);
    CHECK_EQ_INT(rc, RIFT_ERR_PERMISSION);
    rift_client_del(limited);
    /* A subject outside the channel's is the stream's usual refusal. */
    rc = rift_client_stream_publish(c, "orders", 6, "other", 5, NULL, 0,
                                    (const uint8_t *)"x", 1, NULL, &err);
    CHECK(rc != 0);

    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000);
}

/* Checks the durable on "a" as channelsz shows it. */
static void check_durable(const json_t *s) {
    CHECK_EQ_STR(jstr(s, "client_id"), "viewer");
    CHECK_EQ_STR(jstr(s, "durable_name"), "dur");
    CHECK(jtrue(s, "is_durable"));
    CHECK(!jtrue(s, "is_offline"));
    CHECK(json_object_get(s, "queue_name") == NULL);
    CHECK_EQ_INT(jint(s, "max_inflight"), 2);
    CHECK_EQ_INT(jint(s, "ack_wait"), 30);
    CHECK_EQ_INT(jint(s, "last_sent"), 2);
    CHECK_EQ_INT(jint(s, "pending_count"), 2);
    CHECK(jtrue(s, "is_stalled"));
    CHECK(strlen(jstr(s, "inbox")) > 0);
    CHECK(strncmp(jstr(s, "ack_inbox"), "_STAN.acks.", 11) == 0);
}

RIFT_TEST(views_show_clients_channels_and_pending) {
    int nport = rift_test_free_tcp_port();
    CHECK(nport > 0);
    riftd_fix f;
    CHECK(start(&f, nport));
    int mport = monitor_port(&f);
    CHECK(mport > 0);
    stanConnection *sc = stan_fix_connect(nport, "viewer");
    CHECK(sc != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(stanConnection_Publish(sc, "a", "abcd", 4) == NATS_OK);
    }
    CHECK(stanConnection_Publish(sc, "b", "xy", 2) == NATS_OK);
    /* A durable that acknowledges nothing: two pending, stalled. */
    got ga = {PTHREAD_MUTEX_INITIALIZER, .ack = false};
    stanSubscription *dur = subscribe(sc, "a", "dur", NULL, 2, 30000, &ga);
    CHECK(dur != NULL);
    CHECK(wait_got(&ga, 2));
    got gb = {PTHREAD_MUTEX_INITIALIZER, .ack = true};
    stanSubscription *qs = subscribe(sc, "b", NULL, "workers", 5, 10000, &gb);
    CHECK(qs != NULL);
    CHECK(wait_got(&gb, 1));

    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    json_t *d = control(c, "streaming.server", "{}");
    CHECK(d != NULL);
    CHECK_EQ_STR(jstr(d, "cluster_id"), "test-cluster");
    CHECK_EQ_STR(jstr(d, "store"), "MEMORY");
    CHECK_EQ_INT(jint(d, "clients"), 1);
    CHECK_EQ_INT(jint(d, "channels"), 2);
    CHECK_EQ_INT(jint(d, "subscriptions"), 2);
    CHECK_EQ_INT(jint(d, "total_msgs"), 4);
    json_decref(d);

    d = control(c, "streaming.clients", "{}");
    CHECK(d != NULL);
    CHECK_EQ_INT(jint(d, "total"), 1);
    json_t *cl = json_array_get(json_object_get(d, "clients"), 0);
    CHECK_EQ_STR(jstr(cl, "id"), "viewer");
    CHECK(strncmp(jstr(cl, "hb_inbox"), "_INBOX.", 7) == 0);
    CHECK_EQ_INT(jint(cl, "subscriptions_count"), 2);
    json_t *by = json_object_get(cl, "subscriptions");
    CHECK_EQ_INT((int)json_array_size(json_object_get(by, "a")), 1);
    CHECK_EQ_INT((int)json_array_size(json_object_get(by, "b")), 1);
    json_decref(d);

    d = control(c, "streaming.channels", "{}");
    CHECK(d != NULL);
    CHECK_EQ_INT(jint(d, "count"), 2);
    json_t *chs = json_object_get(d, "channels");
    json_t *a = find_by(chs, "name", "a");
    json_t *b = find_by(chs, "name", "b");
    CHECK(a != NULL && b != NULL);
    CHECK_EQ_INT(jint(a, "msgs"), 3);
    CHECK(jint(a, "bytes") >= 12);
    CHECK_EQ_INT(jint(a, "first_seq"), 1);
    CHECK_EQ_INT(jint(a, "last_seq"), 3);
    CHECK_EQ_INT((int)json_array_size(json_object_get(a, "subscriptions")), 1);
    check_durable(json_array_get(json_object_get(a, "subscriptions"), 0));
    json_t *q = json_array_get(json_object_get(b, "subscriptions"), 0);
    CHECK_EQ_STR(jstr(q, "queue_name"), "workers");
    CHECK(!jtrue(q, "is_durable"));
    CHECK_EQ_INT(jint(q, "max_inflight"), 5);
    CHECK_EQ_INT(jint(q, "ack_wait"), 10);
    CHECK_EQ_INT(jint(q, "last_sent"), 1);
    CHECK(!jtrue(q, "is_stalled")); /* its ack may still be on the way */
    json_decref(d);
    d = riftd_fix_control(c, "streaming.channels", "{\"name\":\"zz\"}", NULL);
    CHECK(d != NULL && json_is_false(json_object_get(d, "ok")));
    CHECK_EQ_STR(jstr(d, "error"), "Channel zz not found");
    json_decref(d);

    /* The same on the monitor, with the original's paths and options. */
    d = http_json(mport, "/streaming/serverz", 200);
    CHECK(d != NULL);
    CHECK_EQ_INT(jint(d, "subscriptions"), 2);
    json_decref(d);
    d = http_json(mport, "/streaming/channelsz", 200);
    CHECK(d != NULL);
    CHECK_EQ_STR(
        json_string_value(json_array_get(json_object_get(d, "names"), 0)), "a");
    CHECK(json_object_get(d, "channels") == NULL);
    json_decref(d);
    d = http_json(mport, "/streaming/channelsz?channel=a&subs=1", 200);
    CHECK(d != NULL);
    CHECK_EQ_STR(jstr(d, "name"), "a");
    check_durable(json_array_get(json_object_get(d, "subscriptions"), 0));
    json_decref(d);
    d = http_json(mport, "/streaming/clientsz?client=viewer", 200);
    CHECK(d != NULL);
    CHECK_EQ_STR(jstr(d, "id"), "viewer");
    CHECK(json_object_get(d, "subscriptions") == NULL); /* no subs=1 */
    json_decref(d);
    d = http_json(mport, "/streaming/channelsz?channel=zz", 404);
    CHECK(d != NULL);
    json_decref(d);
    /* /status lists the channels with the streams, consumers named. */
    d = http_json(mport, "/status", 200);
    CHECK(d != NULL);
    json_t *sa = find_by(json_object_get(d, "streams"), "name", "a");
    CHECK(sa != NULL && jtrue(sa, "channel"));
    CHECK_EQ_STR(json_string_value(
                     json_array_get(json_object_get(sa, "consumer_names"), 0)),
                 "d-viewer-dur");
    json_decref(d);

    /* rift stan prints the same. */
    char *out = NULL;
    int rc = rift_proc_run(
        rift_proc_cli(), f.dir,
        (const char *const[]){"stan", "channels", "a", "--server", f.p.address,
                              "--ca", f.ca, "--server-name", "localhost",
                              "--token", RIFTD_FIX_TOKEN, NULL},
        NULL, &out, NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK(out != NULL && strstr(out, "a: 3 messages") != NULL);
    CHECK(strstr(out, "viewer") != NULL && strstr(out, "dur") != NULL);
    CHECK(strstr(out, "stalled") != NULL);
    free(out);
    out = NULL;
    rc = rift_proc_run(rift_proc_cli(), f.dir,
                       (const char *const[]){"stan", "clients", "--server",
                                             f.p.address, "--ca", f.ca,
                                             "--server-name", "localhost",
                                             "--token", RIFTD_FIX_TOKEN, NULL},
                       NULL, &out, NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK(out != NULL && strstr(out, "viewer") != NULL);
    free(out);

    /* Closed, the durable stays as an offline one, its pending kept. */
    CHECK(stanSubscription_Close(dur) == NATS_OK);
    stanSubscription_Destroy(dur);
    d = control(c, "streaming.channels", "{\"name\":\"a\"}");
    CHECK(d != NULL);
    json_t *off = json_array_get(json_object_get(d, "subscriptions"), 0);
    CHECK(off != NULL);
    CHECK(jtrue(off, "is_offline"));
    CHECK(jtrue(off, "is_durable"));
    CHECK_EQ_INT(jint(off, "pending_count"), 2);
    CHECK_EQ_INT(jint(off, "ack_wait"), 30);
    CHECK(strncmp(jstr(off, "consumer"), "d-viewer-dur", 12) == 0);
    json_decref(d);

    stanSubscription_Unsubscribe(qs);
    stanSubscription_Destroy(qs);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    d = control(c, "streaming.clients", "{}");
    CHECK(d != NULL);
    CHECK_EQ_INT(jint(d, "total"), 0);
    json_decref(d);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000);
}
