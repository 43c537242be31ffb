/*
 * test_stan_riftd.c — riftd with the three-key migration configuration
 * (messaging principals, nats with an anonymous principal, streaming with
 * a file store) serving nats.c's streaming client: it is up for STAN right
 * after spawning, stops with status 0 on SIGTERM, and a durable and every
 * PubAck'd message survive the restart.
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "riftd_fix.h"
#include "test.h"
#include "stan/stan_connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct got {
    pthread_mutex_t mu;
    uint64_t seqs[64];
    size_t n;
} got;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    got *g = closure;
    stanSubscription_AckMsg(sub, msg); /* before the count: see stan_fix.c */
    pthread_mutex_lock(&g->mu);
    if (g->n < 64) {
        g->seqs[g->n++] = stanMsg_GetSequence(msg);
    }
    pthread_mutex_unlock(&g->mu);
    stanMsg_Destroy(msg);
}

static got *wait_target;
static size_t wait_count;

static bool got_enough(void *arg) {
    (void)arg;
    pthread_mutex_lock(&wait_target->mu);
    bool ok = wait_target->n >= wait_count;
    pthread_mutex_unlock(&wait_target->mu);
    return ok;
}

static bool wait_got(got *g, size_t n) {
    wait_target = g;
    wait_count = n;
    return rift_test_wait_until(got_enough, NULL, 10000);
}

static stanSubscription *durable_sub(stanConnection *sc, got *g) {
    stanSubOptions *so = NULL;
    stanSubscription *sub = NULL;
    if (stanSubOptions_Create(&so) != NATS_OK) {
        return NULL;
    }
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetDurableName(so, "audit");
    if (stanConnection_Subscribe(&sub, sc, "orders", on_msg, g, so) !=
        NATS_OK) {
        sub = NULL;
    }
    stanSubOptions_Destroy(so);
    return sub;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

RIFT_TEST(migration_config_serves_and_persists) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "return {\n"
             "  data_dir = 'data',\n"
             "  messaging = { principals = { { name = 'stan',\n"
             "    token_env = 'RIFT_TEST_TOKEN',\n"
             "    publish = { '_STAN.>', '_INBOX.>' },\n"
             "    subscribe = { '_INBOX.>', '_STAN.acks.>' } } } },\n"
             "  nats = { listen = '127.0.0.1:%d', anonymous = 'stan',\n"
             "           allow_plaintext = true },\n"
             "  streaming = { store = 'file' },\n"
             "}\n",
             port);
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    double t0 = now_s();
    CHECK(riftd_fix_start(&f, NULL));
    stanConnection *sc = stan_fix_connect(port, "migrated");
    double ready = now_s() - t0;
    CHECK(sc != NULL);
    printf("spawn to STAN connected: %.3f s\n", ready);
    for (int i = 1; i <= 3; i++) {
        CHECK(stanConnection_Publish(sc, "orders", "x", 1) == NATS_OK);
    }
    got g = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    stanSubscription *sub = durable_sub(sc, &g);
    CHECK(sub != NULL);
    CHECK(wait_got(&g, 3));
    CHECK(stanSubscription_Close(sub) == NATS_OK);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    CHECK(riftd_fix_start(&f, NULL));
    sc = stan_fix_connect(port, "migrated");
    CHECK(sc != NULL);
    CHECK(stanConnection_Publish(sc, "orders", "y", 1) == NATS_OK);
    got g2 = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    sub = durable_sub(sc, &g2);
    CHECK(sub != NULL);
    CHECK(wait_got(&g2, 1));
    CHECK_EQ_U64(g2.seqs[0], 4); /* resumed after the three acknowledged */
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000); /* libnats' global state */
}
