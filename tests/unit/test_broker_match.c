/*
 * test_broker_match.c — the broker's routing index (broker layer): the
 * subject trie against the reference matcher, match-cache invalidation on
 * (un)subscribe, node pruning, queue-group record removal, the pointer
 * table, and the garbage bound under miss-heavy traffic.
 */
#include "broker/broker_internal.h"
#include "common/pmap.h"
#include "broker/sublist.h"
#include "subject/subject.h"
#include "test.h"

#include <stdlib.h>

static int pub(rift_broker *b, const char *subject, rift_publish_report *r) {
    return rift_broker_publish(b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)"p", 1, r, NULL);
}

static size_t drain(rift_sub *s) {
    size_t n = 0;
    rift_msg *m;
    while (rift_sub_recv(s, 0, &m, NULL) == 0) {
        rift_msg_unref(m);
        n++;
    }
    return n;
}

/* ---- Cache invalidation ---- */

RIFT_TEST(subscribe_after_cached_miss_delivers) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *other, *lit, *wild;
    /* A wildcard elsewhere makes misses cacheable (negative entries). */
    CHECK_OK(rift_broker_subscribe(b, "z.*", 3, NULL, &other, NULL));
    rift_publish_report r;
    CHECK_OK(pub(b, "a.b", &r));
    CHECK_OK(pub(b, "a.b", &r)); /* served from the cached miss */
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_OK(rift_broker_subscribe(b, "a.b", 3, NULL, &lit, NULL));
    CHECK_OK(pub(b, "a.b", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_OK(pub(b, "a.c", &r));
    CHECK_OK(pub(b, "a.c", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_OK(rift_broker_subscribe(b, "a.*", 3, NULL, &wild, NULL));
    CHECK_OK(pub(b, "a.c", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_OK(pub(b, "a.b", &r));
    CHECK_EQ_INT(r.delivered, 2);
    CHECK_EQ_INT(drain(lit), 2);
    CHECK_EQ_INT(drain(wild), 2);
    rift_sub_close(other);
    rift_sub_close(lit);
    rift_sub_close(wild);
    rift_broker_del(b);
}

RIFT_TEST(unsubscribe_after_cached_hit_stops_delivery) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *lit, *wild, *q1, *q2;
    CHECK_OK(rift_broker_subscribe(b, "h.x", 3, NULL, &lit, NULL));
    CHECK_OK(rift_broker_subscribe(b, "h.>", 3, NULL, &wild, NULL));
    rift_sub_options o = {.queue = "g", .queue_len = 1};
    CHECK_OK(rift_broker_subscribe(b, "h.x", 3, &o, &q1, NULL));
    CHECK_OK(rift_broker_subscribe(b, "h.*", 3, &o, &q2, NULL));
    rift_publish_report r;
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_EQ_INT(r.delivered, 3);
    rift_sub_close(lit);
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_EQ_INT(r.delivered, 2);
    rift_sub_close(wild);
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_EQ_INT(r.delivered, 1);
    rift_sub_close(q1);
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(b->groups.len, 1);
    rift_sub_close(q2);
    /* The queue-group record goes with its last member (§1.6). */
    CHECK_EQ_INT(b->groups.len, 0);
    CHECK_OK(pub(b, "h.x", &r));
    CHECK_EQ_INT(r.delivered, 0);
    /* Trie nodes are pruned. */
    CHECK_EQ_INT(b->sl.children.len, 0);
    CHECK_EQ_INT(b->sl.nentries, 0);
    rift_broker_del(b);
}

RIFT_TEST(no_subscribers_path_caches_nothing) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *s;
    CHECK_OK(rift_broker_subscribe(b, "only.this", 9, NULL, &s, NULL));
    for (int i = 0; i < 100; i++) {
        char subj[32];
        snprintf(subj, sizeof(subj), "miss.%d", i);
        CHECK_OK(pub(b, subj, NULL));
    }
    size_t used = 0;
    for (size_t i = 0; i < RIFT_CACHE_SLOTS; i++) {
        used += atomic_load(&b->cache[i]) != NULL;
    }
    CHECK_EQ_INT(used, 0);
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(miss_heavy_traffic_keeps_garbage_bounded) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *w;
    CHECK_OK(rift_broker_subscribe(b, "w.*", 3, NULL, &w, NULL));
    for (int i = 0; i < 20000; i++) {
        char subj[32];
        snprintf(subj, sizeof(subj), "w.%d", i);
        rift_publish_report r;
        CHECK_OK(pub(b, subj, &r));
        CHECK_EQ_INT(r.delivered, 1);
        CHECK(b->ngc < RIFT_CACHE_GC_MAX);
        if (i % 512 == 0) {
            drain(w);
        }
    }
    rift_sub_close(w);
    rift_broker_del(b);
}

/* colliding finds a subject "w.<n>" other than |taken| whose cache slot
 * is the same as |taken|'s. */
static void colliding(rift_broker *b, const char *taken, char *out) {
    size_t slot =
        rift_cache_hash(b, taken, strlen(taken)) & (RIFT_CACHE_SLOTS - 1);
    for (int n = 0;; n++) {
        snprintf(out, 32, "w.%d", n);
        if (strcmp(out, taken) != 0 && (rift_cache_hash(b, out, strlen(out)) &
                                        (RIFT_CACHE_SLOTS - 1)) == slot) {
            return;
        }
    }
}

static rift_match *slot_of(rift_broker *b, const char *subject) {
    size_t i =
        rift_cache_hash(b, subject, strlen(subject)) & (RIFT_CACHE_SLOTS - 1);
    return atomic_load(&b->cache[i]);
}

RIFT_TEST(cache_admits_on_second_consecutive_miss) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    /* 100 subscribers: a result too big for the routing stack buffer, so
     * the uncached path goes through a temporary heap block. */
    rift_sub *s[100];
    for (int i = 0; i < 100; i++) {
        CHECK_OK(rift_broker_subscribe(b, "w.*", 3, NULL, &s[i], NULL));
    }
    char other[32];
    colliding(b, "w.a", other);
    rift_publish_report r;
    CHECK_OK(pub(b, "w.a", &r));
    CHECK_EQ_INT(r.delivered, 100);
    rift_match *a = slot_of(b, "w.a");
    CHECK(a != NULL && strcmp(a->subject, "w.a") == 0);
    /* First miss of the colliding subject: routed, not cached. */
    CHECK_OK(pub(b, other, &r));
    CHECK_EQ_INT(r.delivered, 100);
    CHECK(slot_of(b, "w.a") == a);
    /* Second consecutive miss: it takes the slot. */
    CHECK_OK(pub(b, other, &r));
    CHECK_EQ_INT(r.delivered, 100);
    CHECK(strcmp(slot_of(b, other)->subject, other) == 0);
    for (int i = 0; i < 100; i++) {
        CHECK_EQ_INT(drain(s[i]), 3);
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

RIFT_TEST(uncached_queue_results_route_correctly) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *q[40], *plain;
    rift_sub_options o = {0};
    for (int i = 0; i < 40; i++) {
        char name[8];
        snprintf(name, sizeof(name), "g%d", i % 20); /* 20 groups of 2 */
        o.queue = name;
        o.queue_len = strlen(name);
        CHECK_OK(rift_broker_subscribe(b, i % 2 ? "w.*" : ">", i % 2 ? 3 : 1,
                                       &o, &q[i], NULL));
    }
    CHECK_OK(rift_broker_subscribe(b, "w.*", 3, NULL, &plain, NULL));
    char other[32];
    colliding(b, "w.a", other);
    rift_publish_report r;
    CHECK_OK(pub(b, "w.a", &r));
    CHECK_EQ_INT(r.delivered, 21);
    for (int k = 0; k < 4; k++) {
        /* Alternate so |other| never gets admitted: always uncached. */
        CHECK_OK(pub(b, other, &r));
        CHECK_EQ_INT(r.delivered, 21);
        CHECK_OK(pub(b, "w.a", &r));
        CHECK_EQ_INT(r.delivered, 21);
    }
    size_t total = 0;
    for (int i = 0; i < 40; i++) {
        size_t n = drain(q[i]);
        CHECK(n == 4 || n == 5); /* each group of two alternates */
        total += n;
        rift_sub_close(q[i]);
    }
    CHECK_EQ_INT(total, 9 * 20);
    CHECK_EQ_INT(drain(plain), 9);
    rift_sub_close(plain);
    rift_broker_del(b);
}

/* ---- The trie against the reference matcher ---- */

static const char *const toks[] = {"a", "b", "c", "*", ">"};

static size_t random_subject(char *out, bool wildcards, unsigned *seed) {
    size_t n = 1 + (size_t)(rand_r(seed) % 4), len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)rand_r(seed) % (wildcards ? 5 : 3);
        if (k == 4 && i + 1 != n) {
            k = 3; /* '>' only last */
        }
        if (i > 0) {
            out[len++] = '.';
        }
        out[len++] = toks[k][0];
    }
    out[len] = '\0';
    return len;
}

RIFT_TEST(trie_matches_reference_matcher) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    enum {
        NSUB = 120
    };
    rift_sub *subs[NSUB];
    char pats[NSUB][16];
    unsigned seed = 12345;
    for (int i = 0; i < NSUB; i++) {
        size_t len = random_subject(pats[i], true, &seed);
        CHECK_OK(rift_broker_subscribe(b, pats[i], len, NULL, &subs[i], NULL));
    }
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 300; k++) {
            char subj[16];
            size_t len = random_subject(subj, false, &seed);
            size_t want = 0;
            for (int i = 0; i < NSUB; i++) {
                if (subs[i] != NULL &&
                    rift_subject_matches(pats[i], strlen(pats[i]), subj, len)) {
                    want++;
                }
            }
            rift_publish_report r;
            CHECK_OK(pub(b, subj, &r));
            CHECK_MSG(r.delivered == want, "%s: delivered %zu, want %zu", subj,
                      r.delivered, want);
        }
        for (int i = 0; i < NSUB; i++) {
            if (subs[i] != NULL) {
                drain(subs[i]);
            }
        }
        /* Churn: close a third, then resubscribe some with new patterns. */
        for (int i = round; i < NSUB; i += 3) {
            rift_sub_close(subs[i]);
            subs[i] = NULL;
        }
        for (int i = round; i < NSUB; i += 6) {
            size_t len = random_subject(pats[i], true, &seed);
            CHECK_OK(
                rift_broker_subscribe(b, pats[i], len, NULL, &subs[i], NULL));
        }
    }
    for (int i = 0; i < NSUB; i++) {
        rift_sub_close(subs[i]);
    }
    CHECK_EQ_INT(b->sl.children.len, 0);
    rift_broker_del(b);
}

RIFT_TEST(sublist_candidate_order) {
    rift_sublist sl;
    CHECK_OK(rift_sublist_init(&sl, NULL, 42));
    rift_sl_entry e[6];
    const char *pats[6] = {"x.>", "x.y", "*.y", "x.y", ">", "x.*"};
    for (int i = 0; i < 6; i++) {
        memset(&e[i], 0, sizeof(e[i]));
        e[i].seq = (uint64_t)i + 1;
        CHECK_OK(rift_sublist_insert(&sl, pats[i], strlen(pats[i]), &e[i]));
    }
    rift_sl_vec v;
    rift_sl_vec_init(&v, NULL);
    CHECK_EQ_INT(rift_sublist_match(&sl, "x.y", 3, &v), 2);
    CHECK_EQ_INT(v.len, 6);
    /* Exact in registration order, then wildcards in registration order. */
    rift_sl_entry *want[6] = {&e[1], &e[3], &e[0], &e[2], &e[4], &e[5]};
    for (int i = 0; i < 6; i++) {
        CHECK(v.v[i] == want[i]);
    }
    rift_sl_vec_free(&v);
    rift_sublist_remove(&sl, &e[1]);
    rift_sl_vec_init(&v, NULL);
    CHECK_EQ_INT(rift_sublist_match(&sl, "x.y", 3, &v), 1);
    CHECK_EQ_INT(v.len, 5);
    rift_sl_vec_free(&v);
    rift_sublist_free(&sl);
    CHECK(e[0].node == NULL);
}

RIFT_TEST(sublist_many_wildcards_and_deep_subjects) {
    rift_sublist sl;
    CHECK_OK(rift_sublist_init(&sl, NULL, 7));
    /* 100 wildcard entries on one node exceed the vector's inline
     * storage; a 600-token subject exceeds the walk's inline stack. */
    static rift_sl_entry e[100];
    for (int i = 0; i < 100; i++) {
        memset(&e[i], 0, sizeof(e[i]));
        e[i].seq = (uint64_t)(100 - i); /* sorted back by seq */
        CHECK_OK(rift_sublist_insert(&sl, "a.>", 3, &e[i]));
    }
    char deep[1300];
    size_t len = 0;
    for (int i = 0; i < 600; i++) {
        deep[len++] = i ? '.' : 'a';
        if (i) {
            deep[len++] = 'a';
        }
    }
    rift_sl_entry pat;
    memset(&pat, 0, sizeof(pat));
    pat.seq = 1000;
    CHECK_OK(rift_sublist_insert(&sl, deep, len, &pat));
    rift_sl_vec v;
    rift_sl_vec_init(&v, NULL);
    CHECK_EQ_INT(rift_sublist_match(&sl, deep, len, &v), 1);
    CHECK_EQ_INT(v.len, 101);
    CHECK(v.v[0] == &pat);
    for (int i = 1; i < 101; i++) {
        CHECK_EQ_U64(v.v[i]->seq, (uint64_t)i);
    }
    rift_sl_vec_free(&v);
    rift_sublist_remove(&sl, &pat);
    CHECK_EQ_INT(sl.children.len, 2); /* "a" and ">" */
    rift_sublist_free(&sl);
}

/* ---- Pointer table ---- */

static bool contains(const rift_pmap *m, uint64_t h, void *item) {
    if (m->slots == NULL) {
        return false;
    }
    for (size_t i = rift_pmap_first(m, h); m->slots[i].item != NULL;
         i = rift_pmap_next(m, i)) {
        if (m->slots[i].item == item) {
            return true;
        }
    }
    return false;
}

RIFT_TEST(pmap_insert_remove_churn) {
    rift_pmap m;
    rift_pmap_init(&m);
    enum {
        N = 3000
    };
    static char items[N];
    bool present[N] = {false};
    unsigned seed = 99;
    /* Few distinct hashes force long probe runs and wrap-around. */
    for (int step = 0; step < 40000; step++) {
        int i = rand_r(&seed) % N;
        uint64_t h = (uint64_t)(i % 37) * 0x9E3779B97F4A7C15ULL;
        if (present[i]) {
            rift_pmap_remove(&m, h, &items[i]);
            present[i] = false;
        } else {
            CHECK_OK(rift_pmap_insert(&m, NULL, h, &items[i]));
            present[i] = true;
        }
        if (step % 997 == 0) {
            size_t count = 0;
            for (int k = 0; k < N; k++) {
                uint64_t hk = (uint64_t)(k % 37) * 0x9E3779B97F4A7C15ULL;
                CHECK(contains(&m, hk, &items[k]) == present[k]);
                count += present[k];
            }
            CHECK_EQ_INT(m.len, count);
        }
    }
    rift_pmap_free(&m, NULL);
}
