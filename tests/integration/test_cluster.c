/*
 * test_cluster.c — riftd nodes joined by a NATS cluster (integration
 * tests, docs/cluster.md): three nats-servers with routes and three riftd
 * on loopback. Cross-node pub/sub exactly once (none twice on the
 * publishing node), wildcards, a queue group with a member on every node
 * (each message to exactly one), request/reply and no-responders across
 * nodes, a stalled subscriber that slows nobody and keeps its node on the
 * backbone, a backbone killed -9 and restarted (events, status, traffic
 * resumes), riftd starting with its backbone down, RSS bounded, NATS
 * headers carried between NATS clients on two nodes (HMSG, payload only to
 * Rift v1) and a foreign backbone publisher dropped.
 * Subscription interest crosses routes asynchronously: every check first
 * probes until the path carries traffic, never sleeps.
 */
// labels: threads slow
#include "cluster_client.h"
#include "cluster_fix.h"
#include "natsraw.h"
#include "rift/client.h"
#include "test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_MS 20000

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * RIFT_SEC + ts.tv_nsec;
}

/* Publishes |probe| on |subject| through |c| until every one of |subs|
 * has received one (the interest crossed the routes). */
static bool probe(rift_client *c, const char *subject, rift_client_sub **subs,
                  size_t n) {
    bool seen[8] = {false};
    size_t have = 0;
    int64_t end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (have < n && now_ns() < end) {
        if (!cl_pub(c, subject, "probe")) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            char buf[64];
            while (cl_next(subs[i], seen[i] ? 1 : 50, buf, sizeof buf)) {
                if (!seen[i] && strcmp(buf, "probe") == 0) {
                    seen[i] = true;
                    have++;
                }
            }
        }
    }
    return have == n;
}

/* Reads |s| until the payload |marker|; false when it does not come. */
static bool until_marker(rift_client_sub *s, const char *marker) {
    char buf[64];
    while (cl_next(s, 10000, buf, sizeof buf)) {
        if (strcmp(buf, marker) == 0) {
            return true;
        }
    }
    return false;
}

/* Counts messages "m<i>" (i < n) up to |marker|: every one exactly once,
 * nothing else but probes. */
static bool exactly_once(rift_client_sub *s, size_t n, const char *marker) {
    unsigned char *seen = calloc(n, 1);
    char buf[64];
    size_t got = 0, dup = 0, other = 0;
    bool end = false;
    while (!end && cl_next(s, 10000, buf, sizeof buf)) {
        unsigned i;
        if (strcmp(buf, marker) == 0) {
            end = true;
        } else if (sscanf(buf, "m%u", &i) == 1 && i < n) {
            dup += seen[i]++ > 0;
            got++;
        } else if (strcmp(buf, "probe") != 0) {
            other++;
        }
    }
    free(seen);
    if (!end || got != n || dup || other) {
        fprintf(stderr, "  got %zu of %zu, %zu duplicates, %zu others%s\n", got,
                n, dup, other, end ? "" : ", no end marker");
    }
    return end && got == n && dup == 0 && other == 0;
}

/* ---- A responder thread on one node ---- */

typedef struct responder {
    rift_client *c;
    rift_client_sub *s;
    atomic_bool stop;
    pthread_t t;
} responder;

static void *respond(void *arg) {
    responder *r = arg;
    while (!atomic_load(&r->stop)) {
        rift_msg *m = NULL;
        rift_error err = {0};
        if (rift_client_sub_recv(r->s, 100 * RIFT_MSEC, &m, &err) != 0) {
            continue;
        }
        size_t rlen, plen;
        const char *reply = rift_msg_reply(m, &rlen);
        const uint8_t *p = rift_msg_payload(m, &plen);
        if (rlen > 0) {
            char out[128];
            int n = snprintf(out, sizeof out, "re:%.*s", (int)plen,
                             (const char *)p);
            (void)rift_client_publish(r->c, reply, rlen, (const uint8_t *)out,
                                      (size_t)n, &err);
        }
        rift_msg_unref(m);
    }
    return NULL;
}

static int request(rift_client *c, const char *subject, const char *payload,
                   int ms, char *out, size_t cap, rift_error *err) {
    rift_msg *m = NULL;
    int rc = rift_client_request(c, subject, strlen(subject),
                                 (const uint8_t *)payload, strlen(payload),
                                 ms * RIFT_MSEC, &m, err);
    if (rc == 0) {
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        snprintf(out, cap, "%.*s", (int)len, (const char *)p);
        rift_msg_unref(m);
    }
    return rc;
}

/* ---- Live traffic across the three nodes ---- */

RIFT_TEST(live_traffic_across_nodes) {
    cluster_fix f;
    bool up = cluster_fix_start(&f);
    CHECK(up);
    if (!up) {
        cluster_fix_stop(&f);
        return;
    }
    rift_client *c1 = f.n[0].c, *c2 = f.n[1].c, *c3 = f.n[2].c;

    /* Pub/sub: a local and remote subscribers, literal and wildcards. */
    rift_client_sub *s[4] = {
        cl_sub(c1, "orders.*", NULL), cl_sub(c3, "orders.*", NULL),
        cl_sub(c3, "orders.created", NULL), cl_sub(c2, "orders.>", NULL)};
    CHECK(s[0] && s[1] && s[2] && s[3]);
    CHECK(probe(c1, "orders.created", s, 4));
    CHECK(cl_pub(c1, "orders.created", "start"));
    for (size_t i = 0; i < 4; i++) {
        CHECK(until_marker(s[i], "start"));
    }
    enum {
        N = 200
    };
    for (unsigned i = 0; i < N; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%u", i);
        CHECK(cl_pub(c1, "orders.created", p));
    }
    CHECK(cl_pub(c1, "orders.created", "end"));
    for (size_t i = 0; i < 4; i++) {
        CHECK_MSG(exactly_once(s[i], N, "end"), "subscriber %zu", i);
    }
    for (size_t i = 0; i < 4; i++) {
        rift_client_sub_close(s[i]);
    }

    /* A queue group with a member on every node: each message to one. */
    rift_client_sub *q[3] = {cl_sub(c1, "jobs.*", "workers"),
                             cl_sub(c2, "jobs.*", "workers"),
                             cl_sub(c3, "jobs.*", "workers")};
    CHECK(q[0] && q[1] && q[2]);
    CHECK(probe(c2, "jobs.run", q, 3));
    for (size_t i = 0; i < 3; i++) { /* probes still in flight */
        char buf[64];
        while (cl_next(q[i], 200, buf, sizeof buf)) {
        }
    }
    enum {
        Q = 3000
    };
    for (unsigned i = 0; i < Q; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%u", i);
        CHECK(cl_pub(i % 2 ? c1 : c3, "jobs.run", p));
    }
    unsigned char *seen = calloc(Q, 1);
    size_t got = 0, dup = 0, per[3] = {0};
    int64_t end = now_ns() + 30 * RIFT_SEC;
    while (got < Q && now_ns() < end) {
        for (size_t i = 0; i < 3; i++) {
            char buf[64];
            unsigned k;
            while (cl_next(q[i], 20, buf, sizeof buf)) {
                if (sscanf(buf, "m%u", &k) == 1 && k < Q) {
                    dup += seen[k]++ > 0;
                    got += seen[k] == 1;
                    per[i]++;
                }
            }
        }
    }
    /* Then whatever a duplicate would be would have had time to come. */
    for (size_t i = 0; i < 3; i++) {
        char buf[64];
        unsigned k;
        while (cl_next(q[i], 300, buf, sizeof buf)) {
            if (sscanf(buf, "m%u", &k) == 1 && k < Q) {
                dup += seen[k]++ > 0;
                per[i]++;
            }
        }
    }
    free(seen);
    CHECK_EQ_INT((long long)got, Q);
    CHECK_EQ_INT((long long)dup, 0);
    CHECK_EQ_INT((long long)(per[0] + per[1] + per[2]), Q);
    CHECK_MSG(per[0] > 0 && per[1] > 0 && per[2] > 0, "members got %zu %zu %zu",
              per[0], per[1], per[2]);
    for (size_t i = 0; i < 3; i++) {
        rift_client_sub_close(q[i]);
    }

    /* Request/reply across nodes, and no-responders from the backbone. */
    responder r = {.c = c2, .s = cl_sub(c2, "svc.echo", NULL)};
    CHECK(r.s != NULL);
    atomic_init(&r.stop, false);
    CHECK(pthread_create(&r.t, NULL, respond, &r) == 0);
    char out[128];
    rift_error err = {0};
    int rc = -1;
    end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (rc != 0 && now_ns() < end) {
        rc = request(c1, "svc.echo", "ping", 1000, out, sizeof out, &err);
    }
    CHECK_EQ_INT(rc, 0);
    for (int i = 0; i < 20; i++) {
        char p[16], want[32];
        snprintf(p, sizeof p, "q%d", i);
        snprintf(want, sizeof want, "re:q%d", i);
        CHECK_EQ_INT(request(i % 2 ? c1 : c3, "svc.echo", p, 5000, out,
                             sizeof out, &err),
                     0);
        CHECK_EQ_STR(out, want);
    }
    int64_t t0 = now_ns();
    rc = request(c1, "svc.nobody", "x", 10000, out, sizeof out, &err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err.text, "no responders") != NULL, "got: %s", err.text);
    CHECK_MSG(now_ns() - t0 < 5 * RIFT_SEC, "no-responders took long");
    atomic_store(&r.stop, true);
    pthread_join(r.t, NULL);
    rift_client_sub_close(r.s);

    /* A NATS client on r1 and QUIC clients on r3, both ways; then a NATS
     * request nobody in the cluster answers: the backbone's 503. */
    natsraw_fix nf = {.port = f.n[0].nats_port};
    snprintf(nf.host, sizeof nf.host, "127.0.0.1");
    natsraw *nc = natsraw_connect(&nf, 0, NULL, 0);
    CHECK(nc != NULL);
    CHECK(natsraw_hello(nc, RIFTD_FIX_TOKEN,
                        ",\"headers\":true,\"no_responders\":true"));
    CHECK(natsraw_send(nc, "SUB mixed.a 1\r\n", 0) && natsraw_ping(nc));
    bool crossed = false;
    end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (!crossed && now_ns() < end) {
        CHECK(cl_pub(c3, "mixed.a", "from-quic"));
        crossed = natsraw_expect(nc, "from-quic", 200);
    }
    CHECK_MSG(crossed, "QUIC on r3 -> NATS on r1");
    rift_client_sub *mb = cl_sub(c3, "mixed.b", NULL);
    CHECK(mb != NULL);
    crossed = false;
    end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (!crossed && now_ns() < end) {
        CHECK(natsraw_send(nc, "PUB mixed.b 9\r\nfrom-nats\r\n", 0));
        crossed =
            cl_next(mb, 200, out, sizeof out) && strcmp(out, "from-nats") == 0;
    }
    CHECK_MSG(crossed, "NATS on r1 -> QUIC on r3");
    rift_client_sub_close(mb);
    CHECK(natsraw_send(nc,
                       "SUB _INBOX.nr.* 2\r\nPUB svc.nobody _INBOX.nr.1 "
                       "1\r\nx\r\n",
                       0));
    CHECK_MSG(natsraw_expect(nc, "HMSG _INBOX.nr.1 2", 10000),
              "no 503 through the NATS listener");
    CHECK(natsraw_expect(nc, "NATS/1.0 503", 1000));
    natsraw_close(nc);

    /* Status: node, backbone, server; echoes were dropped on r1. */
    json_t *cl = cluster_fix_cluster(&f, 0);
    CHECK(cl != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "node")), "r1");
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "backbone")), "up");
    const char *server = json_string_value(json_object_get(cl, "server"));
    CHECK(server != NULL && strstr(server, "127.0.0.1") != NULL);
    CHECK(json_integer_value(json_object_get(json_object_get(cl, "messages"),
                                             "echoes_dropped")) > 0);
    json_decref(cl);

    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        long riftd = cluster_fix_rss_kib(f.n[i].r.p.pid);
        long ns = cluster_fix_rss_kib(f.n[i].ns.pid);
        CHECK_MSG(riftd > 0 && riftd < 1024 * 1024, "riftd r%d RSS %ld KiB",
                  i + 1, riftd);
        CHECK_MSG(ns > 0 && ns < 256 * 1024, "nats-server n%d RSS %ld KiB",
                  i + 1, ns);
    }
    CHECK(cluster_fix_stop(&f));
}

/* ---- NATS headers across nodes ---- */

static natsraw *nats_client(const cluster_fix *f, int i) {
    natsraw_fix nf = {.port = f->n[i].nats_port};
    snprintf(nf.host, sizeof nf.host, "127.0.0.1");
    natsraw *c = natsraw_connect(&nf, 0, NULL, 0);
    if (c != NULL && !natsraw_hello(c, RIFTD_FIX_TOKEN, ",\"headers\":true")) {
        natsraw_close(c);
        c = NULL;
    }
    return c;
}

/* The HPUB (or HMSG, with |sid|) line for |hdr| + |payload|. */
static void hline(char *out, size_t cap, const char *op, const char *subject,
                  const char *sid, const char *reply, const char *hdr,
                  const char *payload) {
    snprintf(out, cap, "%s %s%s%s%s%s %zu %zu\r\n%s%s\r\n", op, subject,
             sid ? " " : "", sid ? sid : "", reply ? " " : "",
             reply ? reply : "", strlen(hdr), strlen(hdr) + strlen(payload),
             hdr, payload);
}

RIFT_TEST(nats_headers_cross_nodes) {
    cluster_fix f;
    bool up = cluster_fix_start(&f);
    CHECK(up);
    if (!up) {
        cluster_fix_stop(&f);
        return;
    }
    natsraw *a = nats_client(&f, 0), *b = nats_client(&f, 2);
    CHECK(a != NULL && b != NULL);
    if (a == NULL || b == NULL) {
        natsraw_close(a);
        natsraw_close(b);
        cluster_fix_stop(&f);
        return;
    }
    /* HPUB on r1 reaches a NATS subscriber on r3 as HMSG with the very
     * same header block, and a Rift v1 subscriber on r3 with the payload
     * only. */
    static const char hdr[] = "NATS/1.0\r\nX-Trace: abc\r\nX-Two: 2\r\n\r\n";
    rift_client_sub *v1 = cl_sub(f.n[2].c, "hdr.x", NULL);
    CHECK(v1 != NULL);
    CHECK(natsraw_send(b, "SUB hdr.x 1\r\n", 0) && natsraw_ping(b));
    char hpub[256], hmsg[256], out[64];
    hline(hpub, sizeof hpub, "HPUB", "hdr.x", NULL, NULL, hdr, "hello");
    hline(hmsg, sizeof hmsg, "HMSG", "hdr.x", "1", NULL, hdr, "hello");
    bool crossed = false;
    int64_t end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (!crossed && now_ns() < end) {
        CHECK(natsraw_send(a, hpub, 0));
        crossed = natsraw_expect(b, hmsg, 200);
    }
    CHECK_MSG(crossed, "HMSG with the same headers on r3");
    CHECK(cl_next(v1, 10000, out, sizeof out));
    CHECK_EQ_STR(out, "hello");
    /* Without headers it stays MSG: no rift block leaks in. */
    CHECK(natsraw_send(a, "PUB hdr.x 5\r\nplain\r\n", 0));
    CHECK(natsraw_expect(b, "MSG hdr.x 1 5\r\nplain\r\n", 10000));

    /* A request with headers from r1, answered with headers on r3: both
     * directions keep their blocks. */
    static const char rhdr[] = "NATS/1.0\r\nX-Reply: yes\r\n\r\n";
    CHECK(natsraw_send(b, "SUB svc.h 2\r\n", 0) && natsraw_ping(b));
    CHECK(natsraw_send(a, "SUB _INBOX.hq.* 3\r\n", 0) && natsraw_ping(a));
    hline(hpub, sizeof hpub, "HPUB", "svc.h", NULL, "_INBOX.hq.1", hdr, "q");
    hline(hmsg, sizeof hmsg, "HMSG", "svc.h", "2", "_INBOX.r1.hq.1", hdr, "q");
    crossed = false;
    end = now_ns() + (int64_t)PROBE_MS * RIFT_MSEC;
    while (!crossed && now_ns() < end) {
        CHECK(natsraw_send(a, hpub, 0));
        crossed = natsraw_expect(b, hmsg, 200);
    }
    CHECK_MSG(crossed, "request with headers on r3");
    hline(hpub, sizeof hpub, "HPUB", "_INBOX.r1.hq.1", NULL, NULL, rhdr, "r");
    hline(hmsg, sizeof hmsg, "HMSG", "_INBOX.hq.1", "3", NULL, rhdr, "r");
    CHECK(natsraw_send(b, hpub, 0));
    CHECK_MSG(natsraw_expect(a, hmsg, 10000), "reply with headers on r1");

    /* A foreign publisher straight on the backbone is not a riftd: its
     * message is dropped and counted, the path keeps working. */
    natsraw_fix nf = {.port = f.n[1].client_port};
    snprintf(nf.host, sizeof nf.host, "127.0.0.1");
    natsraw *raw = natsraw_connect(&nf, 0, NULL, 0);
    CHECK(raw != NULL && natsraw_hello(raw, "x", ""));
    CHECK(natsraw_send(raw, "PUB rift.hdr.x 4\r\njunk\r\n", 0) &&
          natsraw_ping(raw));
    natsraw_close(raw);
    CHECK(natsraw_send(a, "PUB hdr.x 3\r\nend\r\n", 0));
    CHECK(until_marker(v1, "end"));
    CHECK(natsraw_expect(b, "MSG hdr.x 1 3\r\nend\r\n", 10000));
    CHECK_MSG(!natsraw_has(b, "junk"), "a foreign message was delivered");
    json_t *cl = cluster_fix_cluster(&f, 2);
    CHECK(json_integer_value(json_object_get(cl, "errors")) > 0);
    json_decref(cl);

    rift_client_sub_close(v1);
    natsraw_close(a);
    natsraw_close(b);
    CHECK(cluster_fix_stop(&f));
}

/* ---- A stalled subscriber ---- */

RIFT_TEST(stalled_subscriber_slows_nobody) {
    cluster_fix f;
    bool up = cluster_fix_start(&f);
    CHECK(up);
    if (!up) {
        cluster_fix_stop(&f);
        return;
    }
    rift_client *c1 = f.n[0].c, *c2 = f.n[1].c, *c3 = f.n[2].c;
    /* r2's subscriber never reads; r3's reads everything. */
    rift_client_sub *stalled = cl_sub(c2, "flood.x", NULL);
    rift_client_sub *reader = cl_sub(c3, "flood.x", NULL);
    CHECK(stalled && reader);
    rift_client_sub *both[2] = {stalled, reader};
    CHECK(probe(c1, "flood.x", both, 2));
    CHECK(cl_pub(c1, "flood.x", "start"));
    CHECK(until_marker(reader, "start"));
    enum {
        N = 20000
    };
    char payload[600];
    memset(payload, 'x', sizeof payload - 1);
    payload[sizeof payload - 1] = '\0';
    rift_publisher *p = NULL;
    rift_error err = {0};
    CHECK_OK(rift_client_publisher_open(c1, &p, &err));
    int64_t t0 = now_ns();
    for (unsigned i = 0; i < N; i++) {
        int n = snprintf(payload, 16, "m%u", i);
        payload[n] = ' ';
        CHECK_OK(rift_publisher_publish(p, "flood.x", 7, NULL, 0,
                                        (const uint8_t *)payload,
                                        sizeof payload - 1, &err));
    }
    CHECK_OK(rift_publisher_flush(p, &err));
    rift_publisher_close(p);
    CHECK(cl_pub(c1, "flood.x", "end"));
    size_t got = 0;
    char buf[64];
    bool end = false;
    while (!end && cl_next(reader, 10000, buf, sizeof buf)) {
        unsigned k;
        if (strcmp(buf, "end") == 0) {
            end = true;
        } else if (sscanf(buf, "m%u", &k) == 1) {
            got++;
        }
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    fprintf(stderr, "  %zu of %u messages to r3 in %.2f s (r2 stalled)\n", got,
            N, secs);
    CHECK(end);
    CHECK_EQ_INT((long long)got, N);
    /* r2 is still on the backbone, never cut off, and still routes. */
    json_t *cl = cluster_fix_cluster(&f, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "backbone")), "up");
    CHECK_EQ_INT(json_integer_value(json_object_get(cl, "reconnects")), 0);
    json_decref(cl);
    rift_client_sub *fresh = cl_sub(c2, "after.stall", NULL);
    CHECK(fresh != NULL);
    CHECK(probe(c1, "after.stall", &fresh, 1));
    rift_client_sub_close(fresh);
    rift_client_sub_close(stalled);
    rift_client_sub_close(reader);
    CHECK(cluster_fix_stop(&f));
}

/* ---- The backbone killed and restarted ---- */

static bool event_state(rift_client_sub *ev, const char *state) {
    char buf[512];
    int64_t end = now_ns() + 30 * RIFT_SEC;
    char want[64];
    snprintf(want, sizeof want, "\"state\":\"%s\"", state);
    while (now_ns() < end) {
        rift_msg *m = NULL;
        rift_error err = {0};
        if (rift_client_sub_recv(ev, 1000 * RIFT_MSEC, &m, &err) != 0) {
            continue;
        }
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        snprintf(buf, sizeof buf, "%.*s", (int)len, (const char *)p);
        rift_msg_unref(m);
        if (strstr(buf, want) != NULL) {
            return true;
        }
    }
    return false;
}

RIFT_TEST(backbone_killed_and_restarted) {
    cluster_fix f;
    bool up = cluster_fix_start(&f);
    CHECK(up);
    if (!up) {
        cluster_fix_stop(&f);
        return;
    }
    rift_client *c1 = f.n[0].c, *c2 = f.n[1].c;
    rift_client_sub *ev = cl_sub(c2, "rift.events.cluster", NULL);
    rift_client_sub *remote = cl_sub(c2, "news.*", NULL);
    CHECK(ev && remote);
    CHECK(probe(c1, "news.a", &remote, 1));

    cluster_fix_ns_kill(&f, 1);
    CHECK(event_state(ev, "down"));
    CHECK(rift_proc_wait_text(&f.n[1].r.p, true, "lost backbone",
                              RIFT_PROC_WAIT_MS));
    json_t *cl = cluster_fix_cluster(&f, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "backbone")), "down");
    json_decref(cl);
    /* Local traffic on r2 goes on without its backbone. */
    rift_client_sub *local = cl_sub(c2, "local.x", NULL);
    CHECK(local != NULL);
    CHECK(cl_pub(c2, "local.x", "still here"));
    char buf[64];
    CHECK(cl_next(local, 10000, buf, sizeof buf));
    CHECK_EQ_STR(buf, "still here");
    rift_client_sub_close(local);

    CHECK(cluster_fix_ns_start(&f, 1));
    CHECK(event_state(ev, "up"));
    CHECK(probe(c1, "news.a", &remote, 1));
    cl = cluster_fix_cluster(&f, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "backbone")), "up");
    CHECK(json_integer_value(json_object_get(cl, "reconnects")) >= 1);
    json_decref(cl);
    rift_client_sub_close(ev);
    rift_client_sub_close(remote);
    CHECK(cluster_fix_stop(&f));
}

/* ---- riftd starts while its backbone is down ---- */

RIFT_TEST(start_with_backbone_down) {
    int port = cluster_fix_free_port();
    CHECK(port > 0);
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "return {\n  log = 'info',\n  messaging = {\n"
             "    listen = '127.0.0.1:0', certificate = 'tls/server.pem',\n"
             "    private_key = 'tls/server.key',\n"
             "    principals = { { name = 'app', token_env = "
             "'RIFT_TEST_TOKEN',\n"
             "      publish = { '>' }, subscribe = { '>' }, control = true } "
             "} },\n"
             "  cluster = { node = 'solo',\n"
             "    nats = { servers = { 'nats://u:secret@127.0.0.1:%d' } } },\n"
             "}\n",
             port);
    riftd_fix r;
    CHECK(riftd_fix_init(&r, cfg));
    CHECK(riftd_fix_start(&r, NULL));
    CHECK(rift_proc_wait_text(&r.p, true, "retrying", RIFT_PROC_WAIT_MS));
    rift_client *c = NULL;
    CHECK(riftd_fix_connect(&r, RIFTD_FIX_TOKEN, &c));
    rift_client_sub *s = cl_sub(c, "a.b", NULL);
    CHECK(s != NULL);
    CHECK(cl_pub(c, "a.b", "local"));
    char buf[64];
    CHECK(cl_next(s, 10000, buf, sizeof buf));
    CHECK_EQ_STR(buf, "local");
    json_t *v = riftd_fix_control(c, "status", "{}", NULL);
    json_t *cl = json_object_get(json_object_get(v, "data"), "cluster");
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "node")), "solo");
    CHECK_EQ_STR(json_string_value(json_object_get(cl, "backbone")), "down");
    json_decref(v);
    /* The log never shows the password. */
    char *log = rift_proc_read(r.p.err);
    CHECK(log != NULL && strstr(log, "secret") == NULL);
    free(log);
    rift_client_sub_close(s);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&r), 0);
    riftd_fix_free(&r);
}
