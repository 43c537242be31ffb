/*
 * test_stan_nats_server.c — `streaming.nats_server`: riftd (no NATS
 * listener of its own) serves NATS Streaming through a real nats-server
 * 2.9, and nats.c's streaming API connects to that nats-server: connect,
 * publish sync and async, start positions, durable resume, queue group,
 * ack-wait redelivery, close; heartbeats and the duplicate-ID probe
 * through the server; a flood; a client whose service stopped gets PubAck
 * timeouts; the service survives a nats-server restart; an unreachable
 * server, refused credentials and a TLS server that does not verify fail
 * riftd's start with a clear error;
 * --check shows the transport; no text ever carries the password.
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */
#include "stan_fix.h"

#include "nats_fix.h"
#include "riftd_fix.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLUSTER "test-cluster"
#define WAIT_MS 10000

typedef struct fixture {
    nats_fix ns; /* nats-server: alice (riftd) and bob (the client) */
    riftd_fix rd;
    char client_url[256];
} fixture;

/* riftd's configuration: the streaming table only, through |ns_url|. */
static bool riftd_config(char *out, size_t cap, const char *ns_url) {
    int n =
        snprintf(out, cap,
                 "return {\n"
                 "  log = 'info',\n"
                 "  streaming = { nats_server = '%s',\n"
                 "    heartbeat = { interval_ms = 1000, fail_count = 3 } },\n"
                 "}\n",
                 ns_url);
    return n > 0 && (size_t)n < cap;
}

static bool fx_start(fixture *fx) {
    memset(fx, 0, sizeof *fx);
    fx->ns.target = NATS_FIX_NATS_SERVER;
    fx->ns.plaintext = true;
    if (!nats_fix_start(&fx->ns)) {
        return false;
    }
    char ns_url[256], cfg[1024];
    snprintf(ns_url, sizeof ns_url, "nats://alice:%s@127.0.0.1:%d",
             NATS_FIX_ALICE_TOKEN, fx->ns.port);
    snprintf(fx->client_url, sizeof fx->client_url,
             "nats://bob:%s@127.0.0.1:%d", NATS_FIX_BOB_TOKEN, fx->ns.port);
    return riftd_config(cfg, sizeof cfg, ns_url) &&
           riftd_fix_init(&fx->rd, cfg) && riftd_fix_start(&fx->rd, NULL);
}

static void fx_stop(fixture *fx) {
    if (fx->rd.running) {
        (void)riftd_fix_stop(&fx->rd);
    }
    riftd_fix_free(&fx->rd);
    nats_fix_free(&fx->ns);
    /* One test per process: release libnats' global state (threads, and
     * what LeakSanitizer would report). */
    nats_CloseAndWait(5000);
}

static stanConnection *connect_as(fixture *fx, const char *id,
                                  int64_t pub_ack_wait_ms) {
    stanConnOptions *o = NULL;
    stanConnection *sc = NULL;
    natsStatus s = stanConnOptions_Create(&o);
    if (s == NATS_OK) {
        s = stanConnOptions_SetURL(o, fx->client_url);
    }
    if (s == NATS_OK && pub_ack_wait_ms) {
        s = stanConnOptions_SetPubAckWait(o, pub_ack_wait_ms);
    }
    if (s == NATS_OK) {
        s = stanConnection_Connect(&sc, CLUSTER, id, o);
    }
    stanConnOptions_Destroy(o);
    if (s != NATS_OK) {
        fprintf(stderr, "  connect %s: %s\n", id, natsStatus_GetText(s));
        return NULL;
    }
    return sc;
}

static int pub(stanConnection *sc, const char *ch, int from, int to) {
    for (int i = from; i <= to; i++) {
        char d[16];
        int n = snprintf(d, sizeof d, "m%d", i);
        natsStatus s = stanConnection_Publish(sc, ch, d, n);
        if (s != NATS_OK) {
            fprintf(stderr, "  publish %s #%d: %s\n", ch, i,
                    natsStatus_GetText(s));
            return -1;
        }
    }
    return 0;
}

typedef struct acks {
    pthread_mutex_t mu;
    int ok, failed, want;
    char last_error[128];
} acks;

static void on_ack(const char *guid, const char *error, void *closure) {
    (void)guid;
    acks *a = closure;
    pthread_mutex_lock(&a->mu);
    if (error) {
        a->failed++;
        snprintf(a->last_error, sizeof a->last_error, "%s", error);
    } else {
        a->ok++;
    }
    pthread_mutex_unlock(&a->mu);
}

static bool acks_done(void *arg) {
    acks *a = arg;
    pthread_mutex_lock(&a->mu);
    bool done = a->ok + a->failed >= a->want;
    pthread_mutex_unlock(&a->mu);
    return done;
}

/* first_delivered subscribes |ch| from mode 0 all, 1 last received, 2
 * sequence |seq|, 3 new only (then publishes one message) and returns the
 * first sequence delivered (0: none within WAIT_MS). */
static uint64_t first_delivered(stanConnection *sc, const char *ch, int mode,
                                uint64_t seq) {
    stanSubOptions *so = NULL;
    if (stanSubOptions_Create(&so) != NATS_OK) {
        return 0;
    }
    if (mode == 0) {
        stanSubOptions_DeliverAllAvailable(so);
    } else if (mode == 1) {
        stanSubOptions_StartWithLastReceived(so);
    } else if (mode == 2) {
        stanSubOptions_StartAtSequence(so, seq);
    }
    seen s;
    seen_init(&s, true);
    stanSubscription *sub = NULL;
    natsStatus st = stanConnection_Subscribe(&sub, sc, ch, on_msg, &s, so);
    stanSubOptions_Destroy(so);
    if (st != NATS_OK) {
        return 0;
    }
    (void)stanSubscription_SetOnCompleteCB(sub, on_complete, &s);
    if (mode == 3) {
        (void)pub(sc, ch, 100, 100); /* the only one it may get */
    }
    uint64_t first = wait_n(&s, 1) ? s.seqs[0] : 0;
    unsubscribe_wait(sub, &s); /* |s| is about to go out of scope */
    return first;
}

RIFT_TEST(publish_and_start_positions) {
    fixture fx;
    CHECK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "ns-pub", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "orders", 1, 5));
    acks a = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 20, ""};
    for (int i = 0; i < 20; i++) {
        CHECK(stanConnection_PublishAsync(sc, "orders", "async", 5, on_ack,
                                          &a) == NATS_OK);
    }
    CHECK(rift_test_wait_until(acks_done, &a, WAIT_MS));
    CHECK_EQ_INT(a.ok, 20);
    CHECK_EQ_U64(first_delivered(sc, "orders", 0, 0), 1);
    CHECK_EQ_U64(first_delivered(sc, "orders", 1, 0), 25);
    CHECK_EQ_U64(first_delivered(sc, "orders", 2, 24), 24);
    CHECK_EQ_U64(first_delivered(sc, "orders", 3, 0), 26); /* new only */
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

RIFT_TEST(durable_resume_and_queue_group) {
    fixture fx;
    CHECK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "ns-dur", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "d", 1, 3));
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetDurableName(so, "keeper");
    seen s;
    seen_init(&s, true);
    stanSubscription *sub = NULL;
    CHECK(stanConnection_Subscribe(&sub, sc, "d", on_msg, &s, so) == NATS_OK);
    CHECK(wait_n(&s, 3));
    CHECK(stanSubscription_Close(sub) == NATS_OK); /* keeps the durable */
    stanSubscription_Destroy(sub);
    CHECK_OK(pub(sc, "d", 4, 5));
    seen s2;
    seen_init(&s2, true);
    CHECK(stanConnection_Subscribe(&sub, sc, "d", on_msg, &s2, so) == NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&s2, 2));
    CHECK_EQ_U64(s2.seqs[0], 4);
    CHECK_EQ_U64(s2.seqs[1], 5);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);

    seen q; /* both members record here */
    seen_init(&q, true);
    stanSubscription *m1 = NULL, *m2 = NULL;
    CHECK(stanConnection_QueueSubscribe(&m1, sc, "q", "workers", on_msg, &q,
                                        NULL) == NATS_OK);
    CHECK(stanConnection_QueueSubscribe(&m2, sc, "q", "workers", on_msg, &q,
                                        NULL) == NATS_OK);
    CHECK_OK(pub(sc, "q", 1, 10));
    CHECK(wait_n(&q, 10));
    bool dup = false, got[11] = {false};
    for (size_t i = 0; i < q.n; i++) {
        dup |= q.seqs[i] < 1 || q.seqs[i] > 10 || got[q.seqs[i]];
        if (q.seqs[i] >= 1 && q.seqs[i] <= 10) {
            got[q.seqs[i]] = true;
        }
    }
    CHECK(!dup);
    CHECK_EQ_U64(q.n, 10);
    stanSubscription_Unsubscribe(m1);
    stanSubscription_Unsubscribe(m2);
    stanSubscription_Destroy(m1);
    stanSubscription_Destroy(m2);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

RIFT_TEST(ack_wait_redelivery_and_close) {
    fixture fx;
    CHECK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "ns-redeliver", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "r", 1, 2));
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetAckWait(so, 1000);
    stanSubOptions_SetMaxInflight(so, 1);
    seen r;
    seen_init(&r, false);
    stanSubscription *rs = NULL;
    CHECK(stanConnection_Subscribe(&rs, sc, "r", on_msg, &r, so) == NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&r, 2));
    CHECK_EQ_U64(r.seqs[0], 1);
    CHECK(!r.redelivered[0]);
    CHECK_EQ_U64(r.seqs[1], 1); /* max in flight 1: the same one again */
    CHECK(r.redelivered[1]);
    stanSubscription_Unsubscribe(rs);
    stanSubscription_Destroy(rs);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    /* Closed: the same client ID connects again at once (the service
     * forgot it; a live duplicate would be refused). */
    sc = connect_as(&fx, "ns-redeliver", 0);
    CHECK(sc != NULL);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

/* The STAN client learns of a stopped service by its PubAcks timing out:
 * nats-server is still there, nobody answers. */
RIFT_TEST(stopped_service_times_out_publishes) {
    fixture fx;
    CHECK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "ns-orphan", 1000);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "o", 1, 1));
    CHECK_EQ_INT(riftd_fix_stop(&fx.rd), 0);
    fx.rd.running = false;
    natsStatus s = stanConnection_Publish(sc, "o", "late", 4);
    CHECK_MSG(s == NATS_TIMEOUT, "publish: %s", natsStatus_GetText(s));
    acks a = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 1, ""};
    CHECK(stanConnection_PublishAsync(sc, "o", "late", 4, on_ack, &a) ==
          NATS_OK);
    CHECK(rift_test_wait_until(acks_done, &a, WAIT_MS));
    CHECK_EQ_INT(a.failed, 1);
    CHECK_MSG(strstr(a.last_error, "timeout") != NULL, "ack error: %s",
              a.last_error);
    /* Close cannot reach the service either; it still frees. */
    (void)stanConnection_Close(sc);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

/* nats-server restarts under the service: libnats reconnects and
 * resubscribes, the service logs both, and a new client is served. */
RIFT_TEST(survives_nats_server_restart) {
    fixture fx;
    CHECK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "ns-before", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "keep", 1, 2));
    stanConnection_Destroy(sc); /* the server goes: no orderly close */
    CHECK(nats_fix_restart(&fx.ns));
    CHECK(rift_proc_wait_text(&fx.rd.p, true,
                              "stan: reconnected to NATS server", WAIT_MS));
    char *log = rift_proc_read(fx.rd.p.err);
    CHECK(log != NULL);
    bool said_disconnect = strstr(log, "stan: disconnected from NATS server "
                                       "nats://***@127.0.0.1:") != NULL;
    bool leaked = strstr(log, NATS_FIX_ALICE_TOKEN) != NULL;
    free(log);
    CHECK(said_disconnect);
    CHECK(!leaked);
    sc = connect_as(&fx, "ns-after", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "keep", 3, 3));
    CHECK_EQ_U64(first_delivered(sc, "keep", 1, 0),
                 3); /* memory store kept 1-3 */
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

/* start_fails: riftd in |rd| exits non-zero, having said it cannot
 * connect to 127.0.0.1:|port| (credentials masked) because of |reason|
 * (NULL: any), without |secret| anywhere. */
static bool start_fails(riftd_fix *rd, const char *scheme, int port,
                        const char *secret, const char *reason) {
    const char *args[] = {"-c", "rift.lua", NULL};
    if (!rift_proc_start(&rd->p, rift_proc_riftd(), rd->dir, "riftd", args,
                         NULL, NULL, 0)) {
        return false;
    }
    int status = rift_proc_wait(&rd->p, RIFT_PROC_WAIT_MS);
    char *log = rift_proc_read(rd->p.err);
    char want[128];
    snprintf(want, sizeof want,
             "streaming.nats_server: cannot connect to "
             "%s://***@127.0.0.1:%d: ",
             scheme, port);
    bool said = log && strstr(log, want) != NULL &&
                (!reason || strstr(log, reason) != NULL);
    bool leaked = log && strstr(log, secret) != NULL;
    if (!said || leaked || status == 0) {
        fprintf(stderr, "  riftd (status %d) said:\n%s\n", status,
                log ? log : "(no log)");
    }
    free(log);
    return status != 0 && said && !leaked;
}

/* Nothing listens: riftd refuses to start, says why, hides the password;
 * --check (which connects nowhere) shows the transport. */
RIFT_TEST(unreachable_server_fails_start) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    char url[128], cfg[1024];
    snprintf(url, sizeof url, "nats://alice:hunter2-secret@127.0.0.1:%d", port);
    CHECK(riftd_config(cfg, sizeof cfg, url));
    riftd_fix rd;
    CHECK(riftd_fix_init(&rd, cfg));
    const char *check[] = {"--check", "-c", "rift.lua", NULL};
    char *out = NULL, *err = NULL;
    int rc = rift_proc_run(rift_proc_riftd(), rd.dir, check, NULL, &out, &err);
    CHECK_MSG(rc == 0, "--check: %s%s", out ? out : "", err ? err : "");
    char want[128];
    snprintf(want, sizeof want,
             "streaming: transport=nats_server nats://***@127.0.0.1:%d "
             "(libnats)",
             port);
    CHECK_MSG(strstr(out, want) != NULL, "--check said:\n%s", out);
    CHECK(strstr(out, "hunter2") == NULL);
    free(out);
    free(err);

    CHECK(start_fails(&rd, "nats", port, "hunter2", NULL));
    riftd_fix_free(&rd);
    nats_CloseAndWait(5000);
}

/* nats-server refuses riftd's password: the same clear start failure. */
RIFT_TEST(refused_credentials_fail_start) {
    nats_fix ns;
    memset(&ns, 0, sizeof ns);
    ns.target = NATS_FIX_NATS_SERVER;
    ns.plaintext = true;
    CHECK(nats_fix_start(&ns));
    char url[128], cfg[1024];
    snprintf(url, sizeof url, "nats://alice:wrong-secret-pw@127.0.0.1:%d",
             ns.port);
    CHECK(riftd_config(cfg, sizeof cfg, url));
    riftd_fix rd;
    CHECK(riftd_fix_init(&rd, cfg));
    bool failed = start_fails(&rd, "nats", ns.port, "wrong-secret-pw",
                              "Authentication Violation");
    riftd_fix_free(&rd);
    nats_fix_free(&ns);
    nats_CloseAndWait(5000);
    CHECK(failed);
}

typedef struct hb_count {
    pthread_mutex_t mu;
    int n;
} hb_count;

static void on_hb_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                        void *closure) {
    (void)nc;
    (void)sub;
    hb_count *h = closure;
    pthread_mutex_lock(&h->mu);
    h->n++;
    pthread_mutex_unlock(&h->mu);
    natsMsg_Destroy(msg);
}

static bool four_replies(void *arg) {
    hb_count *h = arg;
    pthread_mutex_lock(&h->mu);
    bool ok = h->n >= 4;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* The service's heartbeats and the duplicate-ID probe travel through the
 * NATS server: a plain NATS subscriber sees the client answer four rounds
 * (interval 1 s, fail_count 3: a client whose answers were lost would be
 * closed by then), the client still publishes, and a second connect with
 * its ID is refused because the probe reached it. */
RIFT_TEST(heartbeats_and_duplicate_probe) {
    fixture fx;
    CHECK(fx_start(&fx));
    natsConnection *nc = NULL;
    CHECK(natsConnection_ConnectTo(&nc, fx.client_url) == NATS_OK);
    hb_count h = {PTHREAD_MUTEX_INITIALIZER, 0};
    natsSubscription *hs = NULL;
    CHECK(natsConnection_Subscribe(&hs, nc, "_STAN.hb." CLUSTER ".>",
                                   on_hb_reply, &h) == NATS_OK);
    CHECK(natsConnection_Flush(nc) == NATS_OK);
    stanConnection *sc = connect_as(&fx, "ns-alive", 0);
    CHECK(sc != NULL);
    CHECK(rift_test_wait_until(four_replies, &h, WAIT_MS));
    CHECK_OK(pub(sc, "hb", 1, 1));

    stanConnOptions *o = NULL;
    CHECK(stanConnOptions_Create(&o) == NATS_OK);
    CHECK(stanConnOptions_SetURL(o, fx.client_url) == NATS_OK);
    stanConnection *dup = NULL;
    natsStatus s = stanConnection_Connect(&dup, CLUSTER, "ns-alive", o);
    stanConnOptions_Destroy(o);
    const char *text = nats_GetLastError(NULL);
    CHECK(s != NATS_OK);
    CHECK_MSG(text && strstr(text, "stan: clientID already registered"),
              "second connect: %s", text ? text : "(no text)");

    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    natsSubscription_Destroy(hs);
    natsConnection_Destroy(nc);
    fx_stop(&fx);
}

/* A flood of garbage on the publish subject (no replies asked) goes
 * through the bounded queue or is dropped; either way riftd stays up and
 * serves the next client. */
RIFT_TEST(flood_then_serves) {
    fixture fx;
    CHECK(fx_start(&fx));
    natsConnection *nc = NULL;
    CHECK(natsConnection_ConnectTo(&nc, fx.client_url) == NATS_OK);
    char junk[512];
    memset(junk, 0xff, sizeof junk);
    for (int i = 0; i < 100000; i++) {
        CHECK(natsConnection_Publish(nc, "_STAN.pub." CLUSTER ".flood", junk,
                                     (int)sizeof junk) == NATS_OK);
    }
    CHECK(natsConnection_Flush(nc) == NATS_OK);
    natsConnection_Destroy(nc);
    stanConnection *sc = connect_as(&fx, "ns-after-flood", 0);
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "calm", 1, 3));
    CHECK_EQ_U64(first_delivered(sc, "calm", 0, 0), 1);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
}

/* tls:// verifies the server against the system CA bundle: nats-server
 * with the tests' private CA is refused, not trusted blindly. */
RIFT_TEST(tls_verifies_the_server) {
    nats_fix ns;
    memset(&ns, 0, sizeof ns);
    ns.target = NATS_FIX_NATS_SERVER;
    CHECK(nats_fix_start(&ns)); /* TLS */
    char url[160], cfg[1024];
    snprintf(url, sizeof url, "tls://alice:%s@127.0.0.1:%d",
             NATS_FIX_ALICE_TOKEN, ns.port);
    CHECK(riftd_config(cfg, sizeof cfg, url));
    riftd_fix rd;
    CHECK(riftd_fix_init(&rd, cfg));
    bool failed = start_fails(&rd, "tls", ns.port, NATS_FIX_ALICE_TOKEN,
                              "SSL Error (TLS: is the server's certificate");
    riftd_fix_free(&rd);
    nats_fix_free(&ns);
    nats_CloseAndWait(5000);
    CHECK(failed);
}
