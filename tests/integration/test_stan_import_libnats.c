/*
 * test_stan_import_libnats.c — `rift stan import` end to end: the rift CLI
 * imports a nats-streaming-server file store (written from the original's
 * format by tests/support/stanfs_fixture.c), then the STAN service runs on
 * the imported streaming dir behind the NATS face and a real STAN client
 * (nats.c's streaming API) reads it: deliverAllAvailable returns the
 * messages with their original sequences and timestamps, and a durable
 * resumes where it was — its unacknowledged message redelivered first,
 * then the ones it had not been sent. Once on the in-process service, once
 * on riftd started with `streaming = { store = 'file' }` over the
 * imported data_dir/streaming.
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "natsraw.h"
#include "procs.h"
#include "riftd_fix.h"
#include "stan/stan.h"
#include "subject/acl.h"
#include "stanfs_fixture.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 10000

/* The principal STAN clients act as (anonymous): _STAN.> and _INBOX.>. */
static rift_identity stan_id;

static void stan_principal(rift_nats_settings *s) {
    static const char *const grants[] = {"_STAN.>", "_INBOX.>"};
    rift_identity_init(&stan_id, NULL);
    (void)rift_identity_set_name(&stan_id, "stan", 4);
    (void)rift_identity_set_token(
        &stan_id, "stan-token-0123456789abcdefghijklmnopqrstuvwxyz", 47);
    for (size_t i = 0; i < 2; i++) {
        (void)rift_identity_allow_publish(&stan_id, grants[i],
                                          strlen(grants[i]));
        (void)rift_identity_allow_subscribe(&stan_id, grants[i],
                                            strlen(grants[i]));
    }
    s->identities = &stan_id;
    s->identity_count = 1;
    s->anonymous = "stan";
}

typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t seqs[64];
    int64_t ts[64];
    bool redelivered[64];
    size_t n;
} seen;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    seen *s = closure;
    stanSubscription_AckMsg(sub, msg); /* before the count: see stan_fix.c */
    pthread_mutex_lock(&s->mu);
    if (s->n < 64) {
        s->seqs[s->n] = stanMsg_GetSequence(msg);
        s->ts[s->n] = stanMsg_GetTimestamp(msg);
        s->redelivered[s->n] = stanMsg_IsRedelivered(msg);
        s->n++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    stanMsg_Destroy(msg);
}

static bool wait_n(seen *s, size_t n) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    while (s->n < n && rc == 0) {
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &dl);
    }
    bool ok = s->n >= n;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void seen_init(seen *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

RIFT_TEST(imported_store_serves_stan_clients) {
    const char *cli = rift_proc_cli();
    CHECK_MSG(cli[0], "RIFT_TEST_CLI is not set (the rift CLI is built "
                      "with the tests)");
    char *root = rift_test_tmpdir();
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/nss", root);
    snprintf(dst, sizeof dst, "%s/streaming", root);
    CHECK_OK(stanfs_write_standard(src));

    const char *args[] = {"stan", "import", src, "--to", dst, NULL};
    char *out = NULL, *err = NULL;
    int rc = rift_proc_run(cli, root, args, NULL, &out, &err);
    CHECK_MSG(rc == 0, "rift stan import: %d: %s", rc, err ? err : "");
    CHECK(strstr(out, "channel imp:x: 10 messages (sequences 5..14), 2 "
                      "durables") != NULL);
    CHECK(strstr(out, "imported:      2 channels, 13 messages, 2 durable "
                      "consumers") != NULL);
    CHECK(strstr(out, "cluster id:    test-cluster") != NULL);
    free(out);
    free(err);
    /* Again: refused, exit 1. */
    rc = rift_proc_run(cli, root, args, NULL, NULL, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK(strstr(err, "refusing to overwrite") != NULL);
    free(err);
    const char *usage[] = {"stan", "import", src, NULL};
    CHECK_EQ_INT(rift_proc_run(cli, root, usage, NULL, NULL, NULL), 2);

    natsraw_fix nf;
    CHECK_OK(natsraw_start(&nf, stan_principal));
    rift_identity_free(&stan_id);
    rift_stan_settings ss;
    rift_stan_settings_default(&ss);
    ss.dir = dst;
    rift_stan *svc = NULL;
    CHECK_OK(rift_stan_start(&svc, nf.broker, &ss, NULL));
    char url[128];
    snprintf(url, sizeof url, "nats://%s:%d", nf.host, nf.port);
    stanConnOptions *o = NULL;
    CHECK(stanConnOptions_Create(&o) == NATS_OK);
    CHECK(stanConnOptions_SetURL(o, url) == NATS_OK);
    stanConnection *sc = NULL;
    CHECK(stanConnection_Connect(&sc, "test-cluster", "c1", o) == NATS_OK);
    stanConnOptions_Destroy(o);

    /* Everything, with the original sequences and timestamps. */
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    seen all;
    seen_init(&all);
    stanSubscription *sub = NULL;
    CHECK(stanConnection_Subscribe(&sub, sc, "imp:x", on_msg, &all, so) ==
          NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&all, 10));
    for (size_t i = 0; i < 10; i++) {
        CHECK_EQ_U64(all.seqs[i], 5 + i);
        CHECK_EQ_U64(all.ts[i], STANFS_TS_NS(5 + i));
    }
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);

    /* The durable: 7 again (redelivered), then 9..14. */
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_SetDurableName(so, "dur@1");
    stanSubOptions_SetManualAckMode(so, true);
    seen dur;
    seen_init(&dur);
    CHECK(stanConnection_Subscribe(&sub, sc, "imp:x", on_msg, &dur, so) ==
          NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&dur, 7));
    CHECK_EQ_U64(dur.seqs[0], 7);
    CHECK(dur.redelivered[0]);
    for (size_t i = 1; i < 7; i++) {
        CHECK_EQ_U64(dur.seqs[i], 8 + i);
        CHECK(!dur.redelivered[i]);
    }
    stanSubscription_Close(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    rift_stan_stop(svc);
    natsraw_stop(&nf);
    nats_CloseAndWait(5000);
    rift_test_rmdir(root);
}

RIFT_TEST(riftd_serves_the_imported_streaming_dir) {
    const char *cli = rift_proc_cli();
    CHECK_MSG(cli[0], "RIFT_TEST_CLI is not set");
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
    char src[1024], data[1024], dst[1100];
    snprintf(src, sizeof src, "%s/nss", f.dir);
    snprintf(data, sizeof data, "%s/data", f.dir);
    snprintf(dst, sizeof dst, "%s/streaming", data);
    CHECK_OK(stanfs_write_standard(src));
    CHECK_OK(mkdir(data, 0700));
    const char *args[] = {"stan", "import", src, "--to", dst, NULL};
    CHECK_EQ_INT(rift_proc_run(cli, f.dir, args, NULL, NULL, NULL), 0);
    CHECK(riftd_fix_start(&f, NULL));

    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", port);
    stanConnOptions *o = NULL;
    CHECK(stanConnOptions_Create(&o) == NATS_OK);
    CHECK(stanConnOptions_SetURL(o, url) == NATS_OK);
    stanConnection *sc = NULL;
    CHECK(stanConnection_Connect(&sc, "test-cluster", "c1", o) == NATS_OK);
    stanConnOptions_Destroy(o);
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_SetDurableName(so, "dur@1");
    seen dur;
    seen_init(&dur);
    stanSubscription *sub = NULL;
    CHECK(stanConnection_Subscribe(&sub, sc, "imp:x", on_msg, &dur, so) ==
          NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&dur, 7));
    CHECK_EQ_U64(dur.seqs[0], 7);
    CHECK(dur.redelivered[0]);
    CHECK_EQ_U64(dur.seqs[1], 9);
    CHECK_EQ_U64(dur.seqs[6], 14);
    CHECK_EQ_U64(dur.ts[6], STANFS_TS_NS(14));
    stanSubscription_Close(sub);
    stanSubscription_Destroy(sub);
    /* The next publish continues the imported sequence. */
    CHECK(stanConnection_Publish(sc, "imp:x", "new", 3) == NATS_OK);
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_StartWithLastReceived(so);
    seen last;
    seen_init(&last);
    CHECK(stanConnection_Subscribe(&sub, sc, "imp:x", on_msg, &last, so) ==
          NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&last, 1));
    CHECK_EQ_U64(last.seqs[0], 15);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000);
}
