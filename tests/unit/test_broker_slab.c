/*
 * test_broker_slab.c — the per-thread slab of message blocks (unit tests):
 * nothing while disabled or above the largest class, hottest-first reuse
 * by class, the chunk budget, frees from other threads while the owner
 * allocates, blocks that outlive their owner's slab, trimming around
 * blocks in use, and messages of a thread with the message cache enabled
 * dropped on another thread.
 */
// labels: threads
#include "test.h"

#include "broker/msg_cache.h"
#include "broker/slab.h"

#include "rift/broker.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

RIFT_TEST(disabled_or_too_large_gives_nothing) {
    CHECK(rift_slab_alloc(16) == NULL);
    rift_slab_enable(4 * MIB);
    CHECK(rift_slab_alloc(RIFT_SLAB_MAX + 1) == NULL);
    void *b = rift_slab_alloc(RIFT_SLAB_MAX);
    CHECK(b != NULL);
    memset(b, 0xa5, RIFT_SLAB_MAX);
    rift_slab_free(b);
    rift_slab_disable();
    CHECK(rift_slab_alloc(16) == NULL);
}

RIFT_TEST(blocks_are_reused_hottest_first_by_class) {
    rift_slab_enable(8 * MIB);
    void *a = rift_slab_alloc(1);
    void *b = rift_slab_alloc(32); /* same class as 1 byte */
    void *c = rift_slab_alloc(33); /* the next class: another chunk */
    CHECK(a != NULL && b != NULL && c != NULL);
    CHECK(a != b);
    CHECK_EQ_INT((uintptr_t)a % 32, 0);
    CHECK_EQ_INT((uintptr_t)c % 32, 0);
    CHECK_EQ_INT((uintptr_t)b - (uintptr_t)a, 32);
    CHECK(((uintptr_t)a ^ (uintptr_t)c) >= 2 * MIB);
    rift_slab_free(a);
    rift_slab_free(b);
    CHECK(rift_slab_alloc(20) == b);
    CHECK(rift_slab_alloc(20) == a);
    rift_slab_free(a);
    rift_slab_free(b);
    rift_slab_free(c);
    rift_slab_disable();
}

RIFT_TEST(the_chunk_budget_bounds_the_slab) {
    rift_slab_enable(2 * MIB); /* one chunk */
    size_t n = 0;
    void *first = rift_slab_alloc(512), *last = first;
    while (last != NULL) {
        n++;
        void *b = rift_slab_alloc(512);
        if (b != NULL) {
            last = b;
        } else {
            break;
        }
    }
    /* The chunk header takes the first 64 bytes. */
    CHECK_EQ_INT(n, (2 * MIB - 64) / 512);
    CHECK(rift_slab_alloc(32) == NULL); /* another class needs a chunk */
    rift_slab_free(last);
    CHECK(rift_slab_alloc(512) == last);
    for (size_t i = 0; i < n; i++) {
        rift_slab_free((uint8_t *)first + i * 512);
    }
    rift_slab_disable();
}

typedef struct batch {
    void **blocks;
    size_t n;
} batch;

static void *free_all(void *arg) {
    batch *bt = arg;
    for (size_t i = 0; i < bt->n; i++) {
        rift_slab_free(bt->blocks[i]);
    }
    return NULL;
}

static int by_address(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (void *const *)a;
    uintptr_t y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

RIFT_TEST(blocks_freed_elsewhere_return_to_the_owner) {
    enum {
        N = 20000
    };
    static void *blocks[N];
    rift_slab_enable(16 * MIB);
    for (size_t i = 0; i < N; i++) {
        blocks[i] = rift_slab_alloc(100);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], (int)i, 100);
    }
    /* Another thread frees half while this one keeps allocating. */
    batch bt = {blocks, N / 2};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, free_all, &bt), 0);
    static void *more[N];
    for (size_t i = 0; i < N; i++) {
        more[i] = rift_slab_alloc(100);
        CHECK(more[i] != NULL);
    }
    pthread_join(t, NULL);
    /* Every block the other thread freed comes back before a new one is
     * carved: some already did while it was freeing, the rest now. */
    static void *extra[N / 2];
    for (size_t i = 0; i < N / 2; i++) {
        extra[i] = rift_slab_alloc(100);
        CHECK(extra[i] != NULL);
    }
    qsort(blocks, N / 2, sizeof(*blocks), by_address);
    size_t back = 0;
    for (size_t i = 0; i < N; i++) {
        back += bsearch(&more[i], blocks, N / 2, sizeof(*blocks), by_address) !=
                NULL;
    }
    for (size_t i = 0; i < N / 2; i++) {
        back += bsearch(&extra[i], blocks, N / 2, sizeof(*blocks),
                        by_address) != NULL;
    }
    CHECK_EQ_INT(back, N / 2);
    for (size_t i = N / 2; i < N; i++) {
        rift_slab_free(blocks[i]);
    }
    for (size_t i = 0; i < N; i++) {
        rift_slab_free(more[i]);
    }
    for (size_t i = 0; i < N / 2; i++) {
        rift_slab_free(extra[i]);
    }
    rift_slab_disable();
}

typedef struct owner_run {
    void **blocks;
    size_t n;
    bool ok;
} owner_run;

/* Allocates on its own slab, disables it and exits: the blocks live on. */
static void *owner_main(void *arg) {
    owner_run *o = arg;
    rift_slab_enable(8 * MIB);
    o->ok = true;
    for (size_t i = 0; i < o->n; i++) {
        o->blocks[i] = rift_slab_alloc(i % 2 ? 64 : 300);
        o->ok = o->ok && o->blocks[i] != NULL;
        if (o->blocks[i] != NULL) {
            memset(o->blocks[i], 0x5a, 64);
        }
    }
    /* Some freed by the owner, some never. */
    for (size_t i = 0; i < o->n; i += 4) {
        rift_slab_free(o->blocks[i]);
        o->blocks[i] = NULL;
    }
    rift_slab_disable();
    return NULL;
}

RIFT_TEST(blocks_outlive_their_owner) {
    enum {
        N = 5000
    };
    static void *blocks[N];
    owner_run o = {blocks, N, false};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, owner_main, &o), 0);
    pthread_join(t, NULL);
    CHECK(o.ok);
    /* Still mapped and intact; the last free of each chunk unmaps it (and
     * the last chunk frees the slab: LeakSanitizer checks in dev). */
    for (size_t i = 0; i < N; i++) {
        if (blocks[i] != NULL) {
            CHECK_EQ_INT(((uint8_t *)blocks[i])[63], 0x5a);
            rift_slab_free(blocks[i]);
        }
    }
}

RIFT_TEST(trim_keeps_chunks_with_blocks_in_use) {
    rift_slab_enable(8 * MIB);
    void *keep = rift_slab_alloc(200);
    void *drop = rift_slab_alloc(40);
    CHECK(keep != NULL && drop != NULL);
    memset(keep, 0x33, 200);
    rift_slab_free(drop);
    rift_slab_trim(); /* unmaps drop's chunk, not keep's */
    CHECK_EQ_INT(((uint8_t *)keep)[199], 0x33);
    void *b = rift_slab_alloc(40); /* a fresh chunk */
    CHECK(b != NULL);
    memset(b, 0, 40);
    void *k2 = rift_slab_alloc(200); /* carved after keep */
    CHECK_EQ_INT((uintptr_t)k2 - (uintptr_t)keep, 224);
    rift_slab_free(b);
    rift_slab_free(k2);
    rift_slab_free(keep);
    rift_slab_trim();
    rift_slab_disable();
}

static void *unref_all(void *arg) {
    batch *bt = arg;
    for (size_t i = 0; i < bt->n; i++) {
        rift_msg_unref(bt->blocks[i]);
    }
    return NULL;
}

RIFT_TEST(cached_messages_dropped_on_another_thread) {
    enum {
        N = 1000
    };
    static void *msgs[N];
    rift_msg_cache_enable(4 * MIB);
    static uint8_t payload[2000];
    memset(payload, 7, sizeof(payload));
    for (size_t i = 0; i < N; i++) {
        /* Every tenth is above the slab's largest block. */
        rift_msg *m;
        CHECK_OK(rift_msg_new(&m, NULL, "a.b", 3, NULL, 0, payload,
                              i % 10 == 0 ? sizeof(payload) : 64, NULL));
        msgs[i] = m;
    }
    batch bt = {msgs, N};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, unref_all, &bt), 0);
    pthread_join(t, NULL);
    /* The owner gets the blocks back and makes messages from them. */
    rift_msg *m;
    CHECK_OK(rift_msg_new(&m, NULL, "a.c", 3, "r", 1, payload, 64, NULL));
    size_t len;
    CHECK_EQ_STR(rift_msg_subject(m, &len), "a.c");
    CHECK_EQ_STR(rift_msg_reply(m, &len), "r");
    const uint8_t *p = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(p, len, payload, 64);
    rift_msg_unref(m);
    rift_msg_cache_disable();
}
