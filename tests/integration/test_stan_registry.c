/*
 * test_stan_registry.c — the STAN service's channels as streams for the
 * rest of riftd (src/stan/registry.c, in process over the broker): lookup
 * finds existing channels only, names come sorted, a record appended from
 * outside STAN is pushed to the channel's subscriber, and a pinned channel
 * outlives max_inactivity until it is released.
 */
// labels: threads
#include "stan/views.h"
#include "stan_cli.h"
#include "test.h"

#include <string.h>

#define CLUSTER "test-cluster"

typedef struct fixture {
    rift_broker *broker;
    rift_stan *svc;
} fixture;

static int fx_start(fixture *fx, const rift_stan_settings *s) {
    if (rift_broker_new(&fx->broker, NULL, NULL) != 0) {
        return -1;
    }
    return rift_stan_start(&fx->svc, fx->broker, s, NULL);
}

static void fx_stop(fixture *fx) {
    rift_stan_stop(fx->svc);
    rift_broker_del(fx->broker);
}

static bool no_channels(void *arg) {
    rift_stan_counts c;
    rift_stan_get_counts(arg, &c);
    return c.channels == 0;
}

RIFT_TEST(lookup_finds_existing_channels_sorted) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx, NULL));
    stan_cli c;
    CHECK_OK(stan_cli_connect(&c, fx.broker, CLUSTER, "names", false));
    CHECK_OK(stan_cli_publish(&c, "zeta", "x"));
    CHECK_OK(stan_cli_publish(&c, "alpha.one", "x"));
    char **names;
    size_t n;
    CHECK_OK(rift_stan_channel_names(fx.svc, &names, &n));
    CHECK_EQ_INT((int)n, 2);
    CHECK_EQ_STR(names[0], "alpha.one");
    CHECK_EQ_STR(names[1], "zeta");
    rift_stan_names_free(names, n);
    void *tok;
    CHECK(rift_stan_channel_acquire(fx.svc, "alpha", 5, &tok) == NULL);
    CHECK(tok == NULL);
    rift_stream *st = rift_stan_channel_acquire(fx.svc, "zeta", 4, &tok);
    CHECK(st != NULL);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 1);
    rift_stream_info_free(&info);
    rift_stan_channel_release(fx.svc, tok, false);
    /* A lookup creates nothing. */
    rift_stan_counts k;
    rift_stan_get_counts(fx.svc, &k);
    CHECK_EQ_INT((int)k.channels, 2);
    stan_cli_vanish(&c);
    fx_stop(&fx);
}

RIFT_TEST(outside_append_reaches_subscriber) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx, NULL));
    stan_cli c;
    CHECK_OK(stan_cli_connect(&c, fx.broker, CLUSTER, "pusher", false));
    stan_cli_sub sub;
    stan_cli_sub_opts o = {.start = RIFT_STAN_NEW_ONLY};
    CHECK_OK(stan_cli_subscribe(&c, "feed", &o, &sub));
    void *tok;
    rift_stream *st = rift_stan_channel_acquire(fx.svc, "feed", 4, &tok);
    CHECK(st != NULL);
    rift_stored stored;
    CHECK_OK(rift_stream_publish(st, "feed", 4, NULL, 0,
                                 (const uint8_t *)"outside", 7, &stored, NULL));
    rift_stan_channel_release(fx.svc, tok, true);
    stan_cli_msg m;
    CHECK_OK(stan_cli_next(&sub, STAN_CLI_TIMEOUT_NS, &m));
    CHECK_EQ_U64(m.sequence, stored.sequence);
    CHECK_EQ_MEM(m.data, m.data_len, "outside", 7);
    CHECK_EQ_STR(m.subject, "feed");
    CHECK_OK(stan_cli_unsubscribe(&c, &sub, "feed", false));
    stan_cli_vanish(&c);
    fx_stop(&fx);
}

RIFT_TEST(pinned_channel_outlives_max_inactivity) {
    rift_stan_settings s;
    rift_stan_settings_default(&s);
    s.limits.max_inactivity_ms = 50;
    fixture fx = {0};
    CHECK_OK(fx_start(&fx, &s));
    stan_cli c;
    CHECK_OK(stan_cli_connect(&c, fx.broker, CLUSTER, "idle", false));
    CHECK_OK(stan_cli_publish(&c, "idle", "x"));
    void *tok;
    rift_stream *st = rift_stan_channel_acquire(fx.svc, "idle", 4, &tok);
    CHECK(st != NULL);
    /* Several sweeps (one per 100 ms tick at most) pass it over. */
    CHECK(!rift_test_wait_until(no_channels, fx.svc, 600));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 1);
    rift_stream_info_free(&info);
    rift_stan_channel_release(fx.svc, tok, false);
    /* Unpinned and idle, it goes. */
    CHECK(rift_test_wait_until(no_channels, fx.svc, 5000));
    CHECK(rift_stan_channel_acquire(fx.svc, "idle", 4, &tok) == NULL);
    stan_cli_vanish(&c);
    fx_stop(&fx);
}
