/*
 * test_client_ext.c — the C client's calls of the protocol extensions
 * (docs/protocol-v1.md "Extensions") against the server: the probe,
 * consumer open with a start position and resume, info, delete, the
 * waiting fetch woken by a publish, all for a principal without control
 * rights, and isolation from another identity.
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>
#include <stdatomic.h>

static bool connect_as(srvfix *f, const char *identity, rift_client **pc) {
    char addr[64], token[128];
    if (rift_server_address(f->srv, addr, sizeof(addr), NULL) != 0) {
        return false;
    }
    snprintf(token, sizeof(token), "%s-token-0123456789abcdef0123456789",
             identity);
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = token;
    rift_error err;
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return false;
    }
    return true;
}

typedef struct cfix {
    srvfix f;
    rift_stream *events;
    rift_server_stream list[1];
} cfix;

static bool cfix_up(cfix *s) {
    if (!fix_init(&s->f, NULL)) {
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *ev[] = {"game.>"};
    ss.subjects = ev;
    ss.subjects_count = 1;
    if (rift_stream_new(&s->events, &ss, NULL) != 0) {
        return false;
    }
    s->list[0] = (rift_server_stream){"events", 6, s->events};
    s->f.settings.streams = s->list;
    s->f.settings.stream_count = 1;
    return fix_start(&s->f);
}

static void cfix_down(cfix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->events);
    fix_fini(&s->f);
}

static int publish(cfix *s, const char *payload) {
    return rift_stream_publish(s->events, "game.a", 6, NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               NULL);
}

RIFT_TEST(probe_open_info_delete) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c, *o;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(connect_as(&s.f, "other_plugin", &o));
    bool yes = false;
    char features[128];
    CHECK_OK(rift_client_extensions(c, &yes, features, sizeof(features), NULL));
    CHECK(yes);
    CHECK(strstr(features, "fetch-wait") != NULL);
    CHECK_OK(publish(&s, "one"));
    CHECK_OK(publish(&s, "two"));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.a";
    cfg.filter_len = 6;
    cfg.start = RIFT_START_LAST_RECEIVED;
    rift_client_consumer_info info;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "w", 1, &cfg, &info,
                                           NULL));
    CHECK(info.created);
    CHECK_EQ_U64(info.start_sequence, 2);
    CHECK_EQ_INT(info.config.start, RIFT_START_LAST_RECEIVED);
    CHECK_EQ_STR(info.filter, "game.a");
    /* Resume with another start: ignored. */
    cfg.start = RIFT_START_FIRST;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "w", 1, &cfg, &info,
                                           NULL));
    CHECK(!info.created);
    CHECK_EQ_INT(info.config.start, RIFT_START_LAST_RECEIVED);
    cfg.max_ack_pending = 7;
    rift_error err;
    CHECK_EQ_INT(
        rift_client_consumer_open_ext(c, "events", 6, "w", 1, &cfg, NULL, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "invalid messaging configuration: consumer already "
                           "exists with different max_ack_pending");
    CHECK_OK(
        rift_client_consumer_get_info(c, "events", 6, "w", 1, &info, NULL));
    CHECK_EQ_U64(info.next_sequence, 2);
    /* The other identity sees nothing. */
    CHECK_EQ_INT(
        rift_client_consumer_get_info(o, "events", 6, "w", 1, &info, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    CHECK_EQ_INT(rift_client_consumer_delete(o, "events", 6, "w", 1, &err),
                 RIFT_ERR_REMOTE);
    CHECK_OK(rift_client_consumer_delete(c, "events", 6, "w", 1, NULL));
    CHECK_EQ_INT(
        rift_client_consumer_get_info(c, "events", 6, "w", 1, &info, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    rift_client_del(c);
    rift_client_del(o);
    cfix_down(&s);
}

typedef struct later {
    cfix *s;
    int delay_ms;
} later;

static void *publish_later(void *arg) {
    later *l = arg;
    struct timespec ts = {0, (long)l->delay_ms * 1000000L};
    nanosleep(&ts, NULL); /* the point is that the fetch waits meanwhile */
    (void)publish(l->s, "late");
    return NULL;
}

RIFT_TEST(fetch_wait_returns_on_publish_or_after_the_wait) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c;
    CHECK(connect_as(&s.f, "plugin", &c));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.>";
    cfg.filter_len = 6;
    cfg.start = RIFT_START_NEW_ONLY;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "w", 1, &cfg, NULL,
                                           NULL));
    rift_client_delivery d[4];
    size_t n = 9;
    rift_error err;
    CHECK_EQ_INT(
        rift_client_fetch_wait(c, "events", 6, "w", 1, 4, 0, d, &n, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "fetch wait must be 1..120000 ms");
    uint64_t t0 = rift_now_ns();
    CHECK_OK(
        rift_client_fetch_wait(c, "events", 6, "w", 1, 4, 200, d, &n, NULL));
    CHECK_EQ_INT(n, 0);
    CHECK(rift_now_ns() - t0 >= 190u * 1000000u);
    later l = {&s, 150};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, publish_later, &l) == 0);
    t0 = rift_now_ns();
    CHECK_OK(
        rift_client_fetch_wait(c, "events", 6, "w", 1, 4, 30000, d, &n, NULL));
    uint64_t took_ms = (rift_now_ns() - t0) / 1000000u;
    pthread_join(th, NULL);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_U64(d[0].sequence, 1);
    CHECK_MSG(took_ms < 5000, "took %llu ms", (unsigned long long)took_ms);
    rift_msg_unref(d[0].msg);
    rift_client_del(c);
    cfix_down(&s);
}

/* ---- A stream of the stream source (riftd: a STAN channel) ---- */

typedef struct chan_source {
    rift_stream *st;
    atomic_int acquired, released;
} chan_source;

static rift_stream *chan_acquire(void *ud, const char *name, size_t len,
                                 void **token) {
    chan_source *cs = ud;
    if (len != 4 || memcmp(name, "chan", 4) != 0) {
        return NULL;
    }
    atomic_fetch_add(&cs->acquired, 1);
    *token = cs;
    return cs->st;
}

static void chan_release(void *ud, void *token, bool appended) {
    chan_source *cs = ud;
    (void)appended;
    if (token == cs) {
        atomic_fetch_add(&cs->released, 1);
    }
}

/* The server releases a pin when it frees the op, just after the answer:
 * wait for that, bounded. */
static bool pins_balance(chan_source *cs) {
    for (int i = 0; i < 5000; i++) {
        if (atomic_load(&cs->released) == atomic_load(&cs->acquired)) {
            return true;
        }
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

typedef struct chan_later {
    rift_stream *st;
    int delay_ms;
} chan_later;

static void *chan_publish_later(void *arg) {
    chan_later *l = arg;
    struct timespec ts = {0, (long)l->delay_ms * 1000000L};
    nanosleep(&ts, NULL); /* the point is that the fetch waits meanwhile */
    (void)rift_stream_publish(l->st, "game.c", 6, NULL, 0,
                              (const uint8_t *)"ch", 2, NULL, NULL);
    return NULL;
}

/* A waiting fetch on a source stream holds its pin while parked, is woken
 * by a publish from another thread (the first waiter installs the append
 * watch), times out on a quiet one, and every pin is released. */
RIFT_TEST(fetch_wait_on_a_source_stream) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    chan_source cs = {0};
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subj[] = {"game.>"};
    ss.subjects = subj;
    ss.subjects_count = 1;
    CHECK_OK(rift_stream_new(&cs.st, &ss, NULL));
    f.settings.stream_source =
        (rift_server_stream_source){chan_acquire, chan_release, &cs};
    CHECK(fix_start(&f));
    rift_client *c;
    CHECK(connect_as(&f, "plugin", &c));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.>";
    cfg.filter_len = 6;
    cfg.start = RIFT_START_NEW_ONLY;
    rift_client_consumer_info info;
    CHECK_OK(
        rift_client_consumer_open_ext(c, "chan", 4, "w", 1, &cfg, &info, NULL));
    CHECK_OK(rift_client_consumer_get_info(c, "chan", 4, "w", 1, &info, NULL));
    rift_client_delivery d[4];
    size_t n = 9;
    CHECK_OK(rift_client_fetch_wait(c, "chan", 4, "w", 1, 4, 100, d, &n, NULL));
    CHECK_EQ_INT(n, 0);
    CHECK(pins_balance(&cs));
    for (int round = 0; round < 2; round++) { /* the watch comes back */
        chan_later l = {cs.st, 150};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, chan_publish_later, &l) == 0);
        uint64_t t0 = rift_now_ns();
        CHECK_OK(rift_client_fetch_wait(c, "chan", 4, "w", 1, 4, 30000, d, &n,
                                        NULL));
        uint64_t took_ms = (rift_now_ns() - t0) / 1000000u;
        pthread_join(th, NULL);
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_U64(d[0].sequence, (uint64_t)round + 1);
        CHECK_MSG(took_ms < 5000, "took %llu ms", (unsigned long long)took_ms);
        rift_msg_unref(d[0].msg);
        CHECK(pins_balance(&cs));
    }
    CHECK_OK(rift_client_consumer_delete(c, "chan", 4, "w", 1, NULL));
    rift_error err;
    CHECK_EQ_INT(
        rift_client_fetch_wait(c, "nochan", 6, "w", 1, 4, 100, d, &n, &err),
        RIFT_ERR_REMOTE);
    CHECK(pins_balance(&cs));
    CHECK_EQ_INT(atomic_load(&cs.acquired), 6);
    rift_client_del(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(cs.st);
    fix_fini(&f);
}
