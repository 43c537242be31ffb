/*
 * test_broker_threads.c — the broker under concurrency (broker layer):
 * several publisher threads, subscriber threads blocking in recv, a queue
 * group served by two threads, subscription churn, concurrent requests,
 * slow-consumer accounting across publishers, broker_del waking blocked
 * receivers. Run under TSan in CI.
 */
// labels: threads
#include "rift/broker.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>

enum {
    NPUB = 3,
    PER_PUB = 4000,
    NSUBJ = 4
};

typedef struct payload {
    uint32_t pub;
    uint32_t seq;
} payload;

typedef struct pub_arg {
    rift_broker *b;
    uint32_t id;
    atomic_int *go;
    int failures;
} pub_arg;

static void *publisher(void *arg) {
    pub_arg *a = arg;
    while (!atomic_load(a->go)) {
    }
    for (uint32_t i = 0; i < PER_PUB; i++) {
        char subj[16];
        int n = snprintf(subj, sizeof(subj), "t.%u", i % NSUBJ);
        payload p = {a->id, i};
        if (rift_broker_publish(a->b, subj, (size_t)n, NULL, 0,
                                (const uint8_t *)&p, sizeof(p), NULL,
                                NULL) != 0) {
            a->failures++;
        }
    }
    return NULL;
}

typedef struct sub_arg {
    rift_sub *s;
    atomic_int *remaining; /* shared by queue-group members */
    size_t got;
    int order_errors;
    int recv_errors;
    uint32_t next[NPUB]; /* next expected seq per publisher (plain) */
    bool check_order;
} sub_arg;

static void *subscriber(void *arg) {
    sub_arg *a = arg;
    while (atomic_load(a->remaining) > 0) {
        rift_msg *m;
        int rc = rift_sub_recv(a->s, 20000000LL, &m, NULL);
        if (rc == RIFT_ERR_AGAIN) {
            continue;
        }
        if (rc != 0) {
            a->recv_errors++;
            break;
        }
        payload p;
        size_t len;
        memcpy(&p, rift_msg_payload(m, &len), sizeof(p));
        if (a->check_order) {
            /* Per publisher, a subscriber sees messages in publish order;
             * gaps only where the subject does not match. */
            if (p.pub >= NPUB || p.seq < a->next[p.pub]) {
                a->order_errors++;
            } else {
                a->next[p.pub] = p.seq + 1;
            }
        }
        rift_msg_unref(m);
        a->got++;
        atomic_fetch_sub(a->remaining, 1);
    }
    return NULL;
}

typedef struct churn_arg {
    rift_broker *b;
    atomic_int *stop;
    int errors;
    size_t rounds;
} churn_arg;

/* Subscribes and unsubscribes overlapping patterns while traffic flows,
 * so publishers race registry writers and cache invalidation. */
static void *churner(void *arg) {
    churn_arg *a = arg;
    static const char *pats[] = {"t.*", "t.1", "t.>", ">", "t.2", "*.3"};
    while (!atomic_load(a->stop)) {
        rift_sub *s[6];
        for (int i = 0; i < 6; i++) {
            rift_sub_options o = {0};
            if (i % 2 == 1) {
                o.queue = "churn";
                o.queue_len = 5;
            }
            if (rift_broker_subscribe(a->b, pats[i], strlen(pats[i]), &o, &s[i],
                                      NULL) != 0) {
                a->errors++;
                s[i] = NULL;
            }
        }
        for (int i = 0; i < 6; i++) {
            rift_msg *m;
            int rc;
            while (s[i] && (rc = rift_sub_recv(s[i], 0, &m, NULL)) == 0) {
                rift_msg_unref(m);
            }
            rift_sub_close(s[i]);
        }
        a->rounds++;
    }
    return NULL;
}

RIFT_TEST(concurrent_publish_subscribe_churn) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.subscription_capacity = NPUB * PER_PUB + 16; /* nobody goes slow */
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));

    const int total = NPUB * PER_PUB;
    atomic_int rem_all, rem_t0, rem_gt, rem_group;
    atomic_init(&rem_all, total);
    atomic_init(&rem_t0, total / NSUBJ);
    atomic_init(&rem_gt, total);
    atomic_init(&rem_group, total);
    sub_arg subs[5];
    memset(subs, 0, sizeof(subs));
    rift_sub_options q = {.queue = "workers", .queue_len = 7};
    CHECK_OK(rift_broker_subscribe(b, "t.*", 3, NULL, &subs[0].s, NULL));
    subs[0].remaining = &rem_all;
    CHECK_OK(rift_broker_subscribe(b, "t.0", 3, NULL, &subs[1].s, NULL));
    subs[1].remaining = &rem_t0;
    CHECK_OK(rift_broker_subscribe(b, "t.>", 3, NULL, &subs[2].s, NULL));
    subs[2].remaining = &rem_gt;
    CHECK_OK(rift_broker_subscribe(b, "t.*", 3, &q, &subs[3].s, NULL));
    CHECK_OK(rift_broker_subscribe(b, ">", 1, &q, &subs[4].s, NULL));
    subs[3].remaining = subs[4].remaining = &rem_group;
    for (int i = 0; i < 3; i++) {
        subs[i].check_order = true;
    }

    atomic_int go, stop;
    atomic_init(&go, 0);
    atomic_init(&stop, 0);
    pthread_t st_t[5], pub_t[NPUB], churn_t;
    for (int i = 0; i < 5; i++) {
        CHECK_OK(pthread_create(&st_t[i], NULL, subscriber, &subs[i]));
    }
    churn_arg ca = {.b = b, .stop = &stop};
    CHECK_OK(pthread_create(&churn_t, NULL, churner, &ca));
    pub_arg pa[NPUB];
    for (uint32_t i = 0; i < NPUB; i++) {
        pa[i] = (pub_arg){.b = b, .id = i, .go = &go};
        CHECK_OK(pthread_create(&pub_t[i], NULL, publisher, &pa[i]));
    }
    atomic_store(&go, 1);
    for (int i = 0; i < NPUB; i++) {
        pthread_join(pub_t[i], NULL);
        CHECK_EQ_INT(pa[i].failures, 0);
    }
    for (int i = 0; i < 5; i++) {
        pthread_join(st_t[i], NULL);
    }
    atomic_store(&stop, 1);
    pthread_join(churn_t, NULL);
    CHECK_EQ_INT(ca.errors, 0);
    CHECK(ca.rounds > 0);

    CHECK_EQ_INT(subs[0].got, total);
    CHECK_EQ_INT(subs[1].got, total / NSUBJ);
    CHECK_EQ_INT(subs[2].got, total);
    CHECK_EQ_INT(subs[3].got + subs[4].got, total);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(subs[i].order_errors, 0);
        CHECK_EQ_INT(subs[i].recv_errors, 0);
        rift_sub_close(subs[i].s);
    }
    rift_broker_stats stats;
    rift_broker_get_stats(b, &stats);
    CHECK_EQ_U64(stats.msgs_in, (uint64_t)total);
    CHECK_EQ_U64(stats.subscriptions, 0);
    CHECK_EQ_U64(stats.slow_consumers, 0);
    rift_broker_del(b);
}

typedef struct slow_arg {
    rift_broker *b;
    size_t slow, delivered;
} slow_arg;

static void *slow_pub(void *arg) {
    slow_arg *a = arg;
    for (int i = 0; i < 2000; i++) {
        rift_publish_report r;
        if (rift_broker_publish(a->b, "s", 1, NULL, 0, NULL, 0, &r, NULL) ==
            0) {
            a->slow += r.slow_consumers;
            a->delivered += r.delivered;
        }
    }
    return NULL;
}

RIFT_TEST(slow_consumer_counted_once_across_publishers) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.subscription_capacity = 8;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));
    rift_sub *s;
    CHECK_OK(rift_broker_subscribe(b, "s", 1, NULL, &s, NULL));
    slow_arg a[3] = {{.b = b}, {.b = b}, {.b = b}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OK(pthread_create(&t[i], NULL, slow_pub, &a[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
    }
    CHECK_EQ_INT(a[0].slow + a[1].slow + a[2].slow, 1);
    CHECK_EQ_INT(a[0].delivered + a[1].delivered + a[2].delivered, 8);
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_SLOW_CONSUMER);
    rift_sub_close(s);
    rift_broker_del(b);
}

typedef struct blocked_arg {
    rift_sub *s;
    int rc;
} blocked_arg;

static void *blocked_recv(void *arg) {
    blocked_arg *a = arg;
    rift_msg *m;
    a->rc = rift_sub_recv(a->s, -1, &m, NULL);
    return NULL;
}

RIFT_TEST(broker_del_wakes_blocked_receivers) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    blocked_arg a[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        CHECK_OK(rift_broker_subscribe(b, "never", 5, NULL, &a[i].s, NULL));
        a[i].rc = 1;
        CHECK_OK(pthread_create(&t[i], NULL, blocked_recv, &a[i]));
    }
    rift_broker_del(b);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(a[i].rc, RIFT_ERR_CLOSED);
        rift_sub_close(a[i].s);
    }
}

typedef struct svc_arg {
    rift_broker *b;
    rift_sub *s;
    int served;
} svc_arg;

static void *service(void *arg) {
    svc_arg *a = arg;
    rift_msg *m;
    while (rift_sub_recv(a->s, -1, &m, NULL) == 0) {
        size_t plen, rlen;
        const uint8_t *p = rift_msg_payload(m, &plen);
        const char *reply = rift_msg_reply(m, &rlen);
        if (reply != NULL) {
            rift_broker_publish(a->b, reply, rlen, NULL, 0, p, plen, NULL,
                                NULL);
        }
        rift_msg_unref(m);
        a->served++;
    }
    return NULL;
}

typedef struct req_arg {
    rift_broker *b;
    uint32_t id;
    int ok, bad;
} req_arg;

static void *requester(void *arg) {
    req_arg *a = arg;
    for (uint32_t i = 0; i < 300; i++) {
        payload p = {a->id, i};
        rift_msg *reply;
        if (rift_broker_request(a->b, "svc", 3, (const uint8_t *)&p, sizeof(p),
                                10000000000LL, &reply, NULL) != 0) {
            a->bad++;
            continue;
        }
        size_t len;
        const uint8_t *r = rift_msg_payload(reply, &len);
        if (len == sizeof(p) && memcmp(r, &p, sizeof(p)) == 0) {
            a->ok++;
        } else {
            a->bad++;
        }
        rift_msg_unref(reply);
    }
    return NULL;
}

RIFT_TEST(concurrent_requests_through_queue_group) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    svc_arg svc[2];
    pthread_t svc_t[2], req_t[3];
    rift_sub_options q = {.queue = "svc", .queue_len = 3};
    for (int i = 0; i < 2; i++) {
        svc[i] = (svc_arg){.b = b};
        CHECK_OK(rift_broker_subscribe(b, "svc", 3, &q, &svc[i].s, NULL));
        CHECK_OK(pthread_create(&svc_t[i], NULL, service, &svc[i]));
    }
    req_arg req[3];
    for (uint32_t i = 0; i < 3; i++) {
        req[i] = (req_arg){.b = b, .id = i};
        CHECK_OK(pthread_create(&req_t[i], NULL, requester, &req[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(req_t[i], NULL);
        CHECK_EQ_INT(req[i].ok, 300);
        CHECK_EQ_INT(req[i].bad, 0);
    }
    CHECK_EQ_INT(rift_broker_subscription_count(b), 2);
    rift_broker_del(b); /* ends the service threads with CLOSED */
    for (int i = 0; i < 2; i++) {
        pthread_join(svc_t[i], NULL);
        rift_sub_close(svc[i].s);
    }
    CHECK_EQ_INT(svc[0].served + svc[1].served, 900);
    CHECK(svc[0].served > 0 && svc[1].served > 0);
}

typedef struct spread_arg {
    rift_broker *b;
    uint32_t id;
    int failures;
} spread_arg;

/* Publishes over more distinct subjects than the match cache holds, so
 * misses, admission, stack-built results and garbage reclaim all race. */
static void *spread_publisher(void *arg) {
    spread_arg *a = arg;
    for (uint32_t i = 0; i < 6000; i++) {
        char subj[32];
        int n = snprintf(subj, sizeof(subj), "c.%u.%u", (i * 7 + a->id) % 6000,
                         a->id);
        if (rift_broker_publish(a->b, subj, (size_t)n, NULL, 0,
                                (const uint8_t *)"x", 1, NULL, NULL) != 0) {
            a->failures++;
        }
    }
    return NULL;
}

typedef struct cache_churn_arg {
    rift_broker *b;
    atomic_int *stop;
    int errors;
} cache_churn_arg;

static void *cache_churner(void *arg) {
    cache_churn_arg *a = arg;
    unsigned k = 0;
    while (!atomic_load(a->stop)) {
        char lit[32];
        snprintf(lit, sizeof(lit), "c.%u.0", k++ % 6000);
        const char *pats[] = {lit, "c.*.1", "c.>"};
        rift_sub *s[3];
        for (int i = 0; i < 3; i++) {
            if (rift_broker_subscribe(a->b, pats[i], strlen(pats[i]), NULL,
                                      &s[i], NULL) != 0) {
                a->errors++;
                s[i] = NULL;
            }
        }
        for (int i = 0; i < 3; i++) {
            rift_sub_close(s[i]);
        }
    }
    return NULL;
}

RIFT_TEST(concurrent_cache_misses_and_churn) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.subscription_capacity = 3 * 6000 + 16;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));
    rift_sub *all;
    CHECK_OK(rift_broker_subscribe(b, "c.*.*", 5, NULL, &all, NULL));
    atomic_int stop;
    atomic_init(&stop, 0);
    cache_churn_arg ca = {.b = b, .stop = &stop};
    pthread_t churn, pubs[3];
    CHECK_OK(pthread_create(&churn, NULL, cache_churner, &ca));
    spread_arg sa[3];
    for (uint32_t i = 0; i < 3; i++) {
        sa[i] = (spread_arg){.b = b, .id = i};
        CHECK_OK(pthread_create(&pubs[i], NULL, spread_publisher, &sa[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(pubs[i], NULL);
        CHECK_EQ_INT(sa[i].failures, 0);
    }
    atomic_store(&stop, 1);
    pthread_join(churn, NULL);
    CHECK_EQ_INT(ca.errors, 0);
    CHECK_EQ_INT(rift_sub_pending(all), 3 * 6000);
    rift_sub_close(all);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
}
