/*
 * test_client_ext_push.c — the C client's push consumer
 * (rift/client_push.h, docs/protocol-v1.md E.5): deliveries in order on
 * the client thread, acks from the callback and from another thread
 * letting more through, max_in_flight honoured, the local checks and the
 * server's texts, and no callback once rift_client_push_close returned.
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>
#include <time.h>

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
    return rift_client_new(pc, &s, NULL) == 0;
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

/* What a push callback saw. */
typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ack; /* ack every delivery from the callback */
    int n, ended;
    uint64_t seqs[64];
    uint32_t counts[64];
    char text[sizeof(((rift_error *)0)->text)];
} seen;

static void on_push(void *arg, rift_client_push *p, int status,
                    const rift_client_delivery *d, const rift_error *err) {
    seen *s = arg;
    pthread_mutex_lock(&s->mu);
    if (status == 0) {
        if (s->n < 64) {
            s->seqs[s->n] = d->sequence;
            s->counts[s->n] = d->delivery_count;
        }
        s->n++;
        rift_msg_unref(d->msg);
        if (s->ack) {
            (void)rift_client_push_ack(p, d->sequence, NULL);
        }
    } else {
        s->ended++;
        snprintf(s->text, sizeof(s->text), "%s", err->text);
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Waits up to |ms| for |n| deliveries; true when they came. */
static bool await_n(seen *s, int n, int ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    while (s->n < n && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0) {
    }
    bool ok = s->n >= n;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static int count_of(seen *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void seen_init(seen *s, bool ack) {
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->ack = ack;
}

static bool publish_n(rift_client *c, int n) {
    for (int i = 0; i < n; i++) {
        if (rift_client_stream_publish(c, "events", 6, "game.a", 6, NULL, 0,
                                       (const uint8_t *)"x", 1, NULL,
                                       NULL) != 0) {
            return false;
        }
    }
    return true;
}

static bool open_consumer(rift_client *c, const char *name) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.>";
    cfg.filter_len = 6;
    return rift_client_consumer_open(c, "events", 6, name, strlen(name), &cfg,
                                     NULL) == 0;
}

RIFT_TEST(push_delivers_in_order_acked_from_the_callback) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(publish_n(c, 10));
    CHECK(open_consumer(c, "p"));
    seen got;
    seen_init(&got, true);
    rift_client_push_config cfg;
    rift_client_push_config_default(&cfg);
    CHECK_EQ_INT(cfg.max_in_flight, 1024);
    cfg.max_in_flight = 2;
    rift_client_push *p = NULL;
    rift_error err;
    CHECK_OK(rift_client_push_open(c, "events", 6, "p", 1, &cfg, on_push, &got,
                                   &p, &err));
    CHECK(await_n(&got, 10, 10000));
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_U64(got.seqs[i], (uint64_t)i + 1);
        CHECK_EQ_INT(got.counts[i], 1);
    }
    /* Records published later come by themselves. */
    CHECK(publish_n(c, 2));
    CHECK(await_n(&got, 12, 10000));
    rift_client_push_close(p);
    int after = count_of(&got);
    CHECK(publish_n(c, 2));
    /* The stream publish round trips came back: a push still running
     * would have had them; none came after the close. */
    rift_client_consumer_info info;
    CHECK_OK(
        rift_client_consumer_get_info(c, "events", 6, "p", 1, &info, NULL));
    CHECK_EQ_INT(count_of(&got), after);
    CHECK_EQ_INT(got.ended, 0);
    rift_client_del(c);
    cfix_down(&s);
}

RIFT_TEST(push_honours_max_in_flight_and_acks_from_any_thread) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c, *o;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(connect_as(&s.f, "other_plugin", &o));
    CHECK(publish_n(c, 6));
    CHECK(open_consumer(c, "q"));
    seen got;
    seen_init(&got, false);
    rift_client_push_config cfg = {3, 0};
    rift_client_push *p = NULL;
    rift_error err;
    CHECK_OK(rift_client_push_open(c, "events", 6, "q", 1, &cfg, on_push, &got,
                                   &p, &err));
    CHECK(await_n(&got, 3, 10000));
    CHECK(!await_n(&got, 4, 300));
    CHECK_OK(rift_client_push_ack(p, 1, &err));
    CHECK(await_n(&got, 4, 10000));
    CHECK_EQ_U64(got.seqs[3], 4);
    CHECK_OK(rift_client_push_ack(p, 2, &err));
    CHECK_OK(rift_client_push_ack(p, 3, &err));
    CHECK(await_n(&got, 6, 10000));
    /* The server's texts and the local checks. */
    rift_client_push *x = NULL;
    CHECK_EQ_INT(rift_client_push_open(c, "events", 6, "q", 1, &cfg, on_push,
                                       &got, &x, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer already has a push stream");
    CHECK_EQ_INT(rift_client_push_open(o, "events", 6, "q", 1, &cfg, on_push,
                                       &got, &x, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    rift_client_push_config bad = {0, 0};
    CHECK_EQ_INT(rift_client_push_open(c, "events", 6, "q", 1, &bad, on_push,
                                       &got, &x, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "push max_in_flight must be 1..65535");
    rift_client_push_close(p);
    rift_client_del(o);
    rift_client_del(c);
    cfix_down(&s);
}

RIFT_TEST(push_end_is_reported_once) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(open_consumer(c, "e"));
    seen got;
    seen_init(&got, false);
    rift_client_push *p = NULL;
    CHECK_OK(rift_client_push_open(c, "events", 6, "e", 1, NULL, on_push, &got,
                                   &p, NULL));
    /* The server going away ends the push with the connection's reason. */
    rift_server_del(s.f.srv);
    s.f.srv = NULL;
    pthread_mutex_lock(&got.mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    while (got.ended == 0 &&
           pthread_cond_timedwait(&got.cv, &got.mu, &until) == 0) {
    }
    pthread_mutex_unlock(&got.mu);
    CHECK_EQ_INT(got.ended, 1);
    rift_error err;
    CHECK(rift_client_push_ack(p, 1, &err) != 0);
    rift_client_push_close(p);
    rift_client_del(c);
    cfix_down(&s);
}
