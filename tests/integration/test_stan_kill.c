/*
 * test_stan_kill.c — riftd with a file store (sync_on_write) killed with
 * SIGKILL under nats.c's streaming client: during synchronous publishing
 * every PubAck'd message is there after the restart, and during acks a
 * durable resumes at its position with only unacknowledged messages
 * redelivered (flagged), none lost. The same client connection carries
 * on after the restart: its publishes, pings and acks use the session
 * riftd restored (its old conn_id, subscription inbox and ack inbox).
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "riftd_fix.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NMSG 600

static bool start_riftd(riftd_fix *f, int port) {
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "return {\n"
             "  data_dir = 'data',\n"
             "  messaging = { principals = { { name = 'stan',\n"
             "    token_env = 'RIFT_TEST_TOKEN',\n"
             "    publish = { '_STAN.>', '_INBOX.>' },\n"
             "    subscribe = { '_INBOX.>', '_STAN.>' } } } },\n"
             "  nats = { listen = '127.0.0.1:%d', anonymous = 'stan',\n"
             "           allow_plaintext = true },\n"
             "  streaming = { store = 'file', sync_on_write = true },\n"
             "}\n",
             port);
    return riftd_fix_init(f, cfg) && riftd_fix_start(f, NULL);
}

static void kill9(riftd_fix *f) {
    rift_proc_kill(&f->p); /* SIGKILL */
    f->running = false;
}

static atomic_int lost; /* the client's connection-lost handler ran */

static void on_lost(stanConnection *sc, const char *text, void *closure) {
    (void)sc;
    (void)closure;
    fprintf(stderr, "connection lost: %s\n", text);
    atomic_fetch_add(&lost, 1);
}

/* A client that reconnects at once and pings every second, tolerating
 * the seconds riftd is down. */
static stanConnection *connect_client(int port, const char *id) {
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", port);
    stanConnOptions *o = NULL;
    natsOptions *no = NULL;
    stanConnection *sc = NULL;
    bool ok =
        natsOptions_Create(&no) == NATS_OK &&
        natsOptions_SetURL(no, url) == NATS_OK &&
        natsOptions_SetMaxReconnect(no, 1000000) == NATS_OK &&
        natsOptions_SetReconnectBufSize(no, 64 << 20) == NATS_OK &&
        natsOptions_SetReconnectWait(no, 50) == NATS_OK &&
        stanConnOptions_Create(&o) == NATS_OK &&
        stanConnOptions_SetNATSOptions(o, no) == NATS_OK &&
        stanConnOptions_SetPubAckWait(o, 2000) == NATS_OK &&
        stanConnOptions_SetPings(o, 1, 30) == NATS_OK &&
        stanConnOptions_SetConnectionLostHandler(o, on_lost, NULL) == NATS_OK;
    if (ok && stanConnection_Connect(&sc, "test-cluster", id, o) != NATS_OK) {
        fprintf(stderr, "connect: %s\n", nats_GetLastError(NULL));
        sc = NULL;
    }
    stanConnOptions_Destroy(o);
    natsOptions_Destroy(no);
    return sc;
}

/* ---- Pings seen by a plain NATS subscriber ---- */

static atomic_int pings;

static void on_ping(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                    void *closure) {
    (void)nc;
    (void)sub;
    (void)closure;
    atomic_fetch_add(&pings, 1);
    natsMsg_Destroy(m);
}

static int pings_target;

static bool pings_reached(void *arg) {
    (void)arg;
    return atomic_load(&pings) >= pings_target;
}

/* ---- Publishing ---- */

typedef struct publisher {
    stanConnection *sc;
    atomic_bool stop;
    atomic_int acked, failed;
    bool ok[NMSG + 1];
} publisher;

static void *publish_main(void *arg) {
    publisher *p = arg;
    for (int i = 1; i <= NMSG && !atomic_load(&p->stop); i++) {
        char d[16];
        int n = snprintf(d, sizeof d, "p%d", i);
        natsStatus st = stanConnection_Publish(p->sc, "k9", d, n);
        if (st == NATS_OK) {
            p->ok[i] = true;
            atomic_fetch_add(&p->acked, 1);
        } else if (atomic_fetch_add(&p->failed, 1) < 3) {
            fprintf(stderr, "publish p%d: %s: %s\n", i, natsStatus_GetText(st),
                    nats_GetLastError(NULL));
        }
    }
    return NULL;
}

static publisher *cur_pub;
static int acked_target;

static bool acked_reached(void *arg) {
    (void)arg;
    return atomic_load(&cur_pub->acked) >= acked_target;
}

/* ---- Receiving ---- */

typedef struct receiver {
    pthread_mutex_t mu;
    int times[NMSG + 1];    /* receipts per sequence */
    bool unflagged_again;   /* a repeat without redelivered=true */
    bool present[NMSG + 1]; /* by the index in the payload */
    int total, distinct;
} receiver;

static receiver rcv;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    (void)closure;
    uint64_t seq = stanMsg_GetSequence(msg);
    char d[32] = {0};
    int len = stanMsg_GetDataLength(msg);
    if (len > 0 && len < (int)sizeof d) {
        memcpy(d, stanMsg_GetData(msg), (size_t)len);
    }
    int idx = d[0] == 'p' ? atoi(d + 1) : 0;
    stanSubscription_AckMsg(sub, msg); /* before the count: see stan_fix.c */
    pthread_mutex_lock(&rcv.mu);
    if (seq >= 1 && seq <= NMSG) {
        if (rcv.times[seq]++ == 0) {
            rcv.distinct++;
        } else if (!stanMsg_IsRedelivered(msg)) {
            rcv.unflagged_again = true;
        }
    }
    if (idx >= 1 && idx <= NMSG) {
        rcv.present[idx] = true;
    }
    rcv.total++;
    pthread_mutex_unlock(&rcv.mu);
    stanMsg_Destroy(msg);
}

static int distinct_target;

static bool distinct_reached(void *arg) {
    (void)arg;
    pthread_mutex_lock(&rcv.mu);
    bool ok = rcv.distinct >= distinct_target;
    pthread_mutex_unlock(&rcv.mu);
    return ok;
}

static publisher *acked_pub;

static bool all_acked_present(void *arg) {
    (void)arg;
    int missing = 0;
    pthread_mutex_lock(&rcv.mu);
    for (int i = 1; i <= NMSG; i++) {
        missing += acked_pub->ok[i] && !rcv.present[i];
    }
    pthread_mutex_unlock(&rcv.mu);
    return missing == 0;
}

static stanSubscription *subscribe_all(stanConnection *sc, const char *ch,
                                       const char *durable, int inflight) {
    stanSubOptions *so = NULL;
    stanSubscription *sub = NULL;
    if (stanSubOptions_Create(&so) != NATS_OK) {
        return NULL;
    }
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetMaxInflight(so, inflight);
    stanSubOptions_SetAckWait(so, 30000); /* redelivery after restart is not
                                           * this: it is at once */
    if (durable) {
        stanSubOptions_SetDurableName(so, durable);
    }
    if (stanConnection_Subscribe(&sub, sc, ch, on_msg, NULL, so) != NATS_OK) {
        sub = NULL;
    }
    stanSubOptions_Destroy(so);
    return sub;
}

RIFT_TEST(kill9_during_synced_publishing_loses_no_acked_message) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    riftd_fix f;
    CHECK(start_riftd(&f, port));
    atomic_store(&lost, 0);
    stanConnection *sc = connect_client(port, "k9-pub");
    CHECK(sc != NULL);
    natsConnection *nc = NULL;
    natsSubscription *ps = NULL;
    CHECK(stanConnection_GetNATSConnection(sc, &nc) == NATS_OK);
    CHECK(natsConnection_Subscribe(&ps, nc, "_STAN.discover.test-cluster.pings",
                                   on_ping, NULL) == NATS_OK);
    static publisher p;
    memset(&p, 0, sizeof p);
    p.sc = sc;
    cur_pub = &p;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, publish_main, &p) == 0);
    acked_target = 40;
    CHECK(rift_test_wait_until(acked_reached, NULL, 20000));
    kill9(&f);
    int at_kill = atomic_load(&p.acked);
    CHECK(riftd_fix_start(&f, NULL));
    /* The same client publishes again: riftd knows its conn_id. */
    acked_target = at_kill + 40;
    bool resumed = rift_test_wait_until(acked_reached, NULL, 60000);
    atomic_store(&p.stop, true);
    pthread_join(t, NULL);
    printf("acked %d (%d at the kill), failed %d, connection lost %d\n",
           atomic_load(&p.acked), at_kill, atomic_load(&p.failed),
           atomic_load(&lost));
    CHECK(resumed);
    /* And its pings are answered, not refused (the handler would run). */
    pings_target = atomic_load(&pings) + 2;
    CHECK(rift_test_wait_until(pings_reached, NULL, 10000));
    CHECK_EQ_INT(atomic_load(&lost), 0);

    /* Every PubAck'd message is in the channel. */
    memset(&rcv, 0, sizeof rcv);
    pthread_mutex_init(&rcv.mu, NULL);
    stanSubscription *sub = subscribe_all(sc, "k9", NULL, 1024);
    CHECK(sub != NULL);
    /* (The channel may also hold publishes whose PubAck the kill lost.) */
    acked_pub = &p;
    bool all = rift_test_wait_until(all_acked_present, NULL, 20000);
    pthread_mutex_lock(&rcv.mu);
    for (int i = 1; i <= NMSG; i++) {
        if (p.ok[i] && !rcv.present[i]) {
            printf("PubAck'd p%d is missing\n", i);
        }
    }
    pthread_mutex_unlock(&rcv.mu);
    CHECK(all);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    natsSubscription_Destroy(ps);
    stanConnection_ReleaseNATSConnection(sc);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000); /* libnats' global state */
}

static void on_pub_ack(const char *guid, const char *error, void *closure) {
    (void)guid;
    atomic_int *n = closure;
    if (!error) {
        atomic_fetch_add(n, 1);
    }
}

static atomic_int async_acked;

static bool all_published(void *arg) {
    (void)arg;
    return atomic_load(&async_acked) >= NMSG;
}

RIFT_TEST(kill9_during_acks_redelivers_only_unacknowledged) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    riftd_fix f;
    CHECK(start_riftd(&f, port));
    atomic_store(&lost, 0);
    stanConnection *sc = connect_client(port, "k9-ack");
    CHECK(sc != NULL);
    atomic_store(&async_acked, 0);
    for (int i = 1; i <= NMSG; i++) {
        char d[16];
        int n = snprintf(d, sizeof d, "p%d", i);
        CHECK(stanConnection_PublishAsync(sc, "k9a", d, n, on_pub_ack,
                                          &async_acked) == NATS_OK);
    }
    CHECK(rift_test_wait_until(all_published, NULL, 30000));
    memset(&rcv, 0, sizeof rcv);
    pthread_mutex_init(&rcv.mu, NULL);
    const int inflight = 8;
    stanSubscription *sub = subscribe_all(sc, "k9a", "k9dur", inflight);
    CHECK(sub != NULL);
    distinct_target = 100;
    CHECK(rift_test_wait_until(distinct_reached, NULL, 20000));
    kill9(&f);
    pthread_mutex_lock(&rcv.mu);
    int before = rcv.distinct;
    pthread_mutex_unlock(&rcv.mu);
    CHECK(riftd_fix_start(&f, NULL));
    /* The restored durable carries on on the same subscription: the rest
     * arrives, with no waiting for the 30 s ack wait. */
    distinct_target = NMSG;
    bool all = rift_test_wait_until(distinct_reached, NULL, 20000);
    pthread_mutex_lock(&rcv.mu);
    int repeats = rcv.total - rcv.distinct;
    bool unflagged = rcv.unflagged_again;
    int distinct = rcv.distinct;
    pthread_mutex_unlock(&rcv.mu);
    printf("received %d before the kill, %d distinct in all, %d "
           "redelivered\n",
           before, distinct, repeats);
    CHECK(all);
    CHECK(before < NMSG); /* the kill came mid-stream */
    CHECK(!unflagged);
    /* Only what was unacknowledged at the kill comes again: at most the
     * max in flight, plus acks sent but not yet durable (one fetch's). */
    CHECK(repeats <= 3 * inflight);
    CHECK_EQ_INT(atomic_load(&lost), 0);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000); /* libnats' global state */
}
