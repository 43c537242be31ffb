/*
 * test_client_msgpool.c — the client's pool of received-message storage
 * (unit tests): messages carry their fields, freed blocks are reused by
 * size class, frees from other threads while the owner allocates, messages
 * that outlive the pool's owner, blocks above the largest class, and
 * nothing left with the allocator once everything is released.
 */
// labels: threads
#include "test.h"

#include "client/client_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A counting allocator under the pool. */
static atomic_long live;

static void *count_malloc(size_t n, void *ud) {
    (void)ud;
    atomic_fetch_add(&live, 1);
    return malloc(n);
}

static void count_free(void *p, void *ud) {
    (void)ud;
    if (p != NULL) {
        atomic_fetch_sub(&live, 1);
    }
    free(p);
}

static void *count_calloc(size_t n, size_t m, void *ud) {
    (void)ud;
    atomic_fetch_add(&live, 1);
    return calloc(n, m);
}

static void *count_realloc(void *p, size_t n, void *ud) {
    (void)ud;
    if (p == NULL) {
        atomic_fetch_add(&live, 1);
    }
    return realloc(p, n);
}

static const rift_mem counting = {NULL, count_malloc, count_free, count_calloc,
                                  count_realloc};

static rift_frame_msg fields(const char *subject, const char *reply,
                             const uint8_t *payload, size_t len) {
    rift_frame_msg f = {subject, strlen(subject),
                        reply,   reply ? strlen(reply) : 0,
                        payload, len};
    return f;
}

RIFT_TEST(messages_carry_fields_and_blocks_are_reused) {
    atomic_store(&live, 0);
    rift_msgpool *p;
    CHECK_OK(rift_msgpool_new(&p, &counting));
    uint8_t payload[64];
    memset(payload, 0x2a, sizeof(payload));
    rift_frame_msg f = fields("bench.x", "_INBOX.1", payload, sizeof(payload));
    rift_msg *m;
    CHECK_OK(rift_msgpool_msg(p, &m, &f));
    size_t len;
    CHECK_EQ_STR(rift_msg_subject(m, &len), "bench.x");
    CHECK_EQ_INT(len, 7);
    CHECK_EQ_STR(rift_msg_reply(m, &len), "_INBOX.1");
    const uint8_t *pl = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(pl, len, payload, sizeof(payload));
    long after_first = atomic_load(&live);
    rift_msg_unref(m);
    /* The block went back to the pool, not the allocator, and comes back
     * for the next message of its class. */
    CHECK_EQ_INT(atomic_load(&live), after_first);
    rift_msg *m2;
    CHECK_OK(rift_msgpool_msg(p, &m2, &f));
    CHECK(m2 == m);
    CHECK_EQ_INT(atomic_load(&live), after_first);
    /* Another class, and one above the largest. */
    static uint8_t big[20000];
    rift_frame_msg fm = fields("a", NULL, big, 900);
    rift_frame_msg fb = fields("a", NULL, big, sizeof(big));
    rift_msg *m3, *m4;
    CHECK_OK(rift_msgpool_msg(p, &m3, &fm));
    CHECK_OK(rift_msgpool_msg(p, &m4, &fb));
    CHECK(rift_msg_reply(m4, &len) == NULL && len == 0);
    rift_msg_payload(m4, &len);
    CHECK_EQ_INT(len, sizeof(big));
    rift_msg_unref(m2);
    rift_msg_unref(m3);
    rift_msg_unref(m4);
    rift_msgpool_close(p);
    CHECK_EQ_INT(atomic_load(&live), 0);
}

RIFT_TEST(messages_outlive_the_owner) {
    atomic_store(&live, 0);
    rift_msgpool *p;
    CHECK_OK(rift_msgpool_new(&p, &counting));
    uint8_t payload[8] = "payload";
    rift_frame_msg f = fields("a.b", NULL, payload, sizeof(payload));
    static uint8_t big[10000];
    rift_frame_msg fb = fields("a.b", NULL, big, sizeof(big));
    rift_msg *kept[3], *spare;
    CHECK_OK(rift_msgpool_msg(p, &kept[0], &f));
    CHECK_OK(rift_msgpool_msg(p, &kept[1], &fb));
    CHECK_OK(rift_msgpool_msg(p, &kept[2], &f));
    CHECK_OK(rift_msgpool_msg(p, &spare, &f));
    rift_msg_unref(spare); /* on the shared list when the owner goes */
    rift_msgpool_close(p);
    CHECK(atomic_load(&live) > 0);
    size_t len;
    const uint8_t *pl = rift_msg_payload(kept[0], &len);
    CHECK_EQ_MEM(pl, len, payload, sizeof(payload));
    rift_msg_unref(kept[0]);
    rift_msg_unref(kept[1]);
    CHECK(atomic_load(&live) > 0);
    rift_msg_unref(kept[2]); /* the last one frees the pool */
    CHECK_EQ_INT(atomic_load(&live), 0);
}

/* ---- Frees from other threads ---- */

#define XMSGS 200000
#define XRING 1024

typedef struct xfer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rift_msg *ring[XRING];
    size_t head, count;
    bool done;
    size_t freed;
    bool bad;
} xfer;

static void *freer(void *arg) {
    xfer *x = arg;
    for (;;) {
        pthread_mutex_lock(&x->mu);
        while (x->count == 0 && !x->done) {
            pthread_cond_wait(&x->cv, &x->mu);
        }
        if (x->count == 0) {
            pthread_mutex_unlock(&x->mu);
            return NULL;
        }
        rift_msg *m = x->ring[x->head];
        x->head = (x->head + 1) % XRING;
        x->count--;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        size_t len;
        const uint8_t *pl = rift_msg_payload(m, &len);
        x->bad |= len < 4 || pl[0] != pl[len - 1];
        rift_msg_unref(m);
        x->freed++;
    }
}

RIFT_TEST(frees_from_another_thread_while_the_owner_allocates) {
    atomic_store(&live, 0);
    rift_msgpool *p;
    CHECK_OK(rift_msgpool_new(&p, &counting));
    xfer x;
    memset(&x, 0, sizeof(x));
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, freer, &x));
    static uint8_t payload[3000];
    for (size_t i = 0; i < XMSGS; i++) {
        /* Sizes across the three classes. */
        size_t len = 4 + (i * 131) % (sizeof(payload) - 4);
        memset(payload, (int)(i & 0xff), len);
        rift_frame_msg f = fields("x.y", NULL, payload, len);
        rift_msg *m;
        CHECK_OK(rift_msgpool_msg(p, &m, &f));
        pthread_mutex_lock(&x.mu);
        while (x.count == XRING) {
            pthread_cond_wait(&x.cv, &x.mu);
        }
        x.ring[(x.head + x.count) % XRING] = m;
        x.count++;
        pthread_cond_broadcast(&x.cv);
        pthread_mutex_unlock(&x.mu);
    }
    pthread_mutex_lock(&x.mu);
    x.done = true;
    pthread_cond_broadcast(&x.cv);
    pthread_mutex_unlock(&x.mu);
    pthread_join(t, NULL);
    CHECK_EQ_INT(x.freed, XMSGS);
    CHECK(!x.bad);
    /* Blocks were recycled: far fewer allocations than messages. */
    CHECK(atomic_load(&live) < XMSGS / 10);
    rift_msgpool_close(p);
    CHECK_EQ_INT(atomic_load(&live), 0);
    pthread_cond_destroy(&x.cv);
    pthread_mutex_destroy(&x.mu);
}

/* The owner closes while another thread is still freeing. */
static void *late_freer(void *arg) {
    rift_msg **msgs = arg;
    for (size_t i = 0; i < 5000; i++) {
        rift_msg_unref(msgs[i]);
    }
    return NULL;
}

RIFT_TEST(close_races_with_frees) {
    for (int round = 0; round < 20; round++) {
        atomic_store(&live, 0);
        rift_msgpool *p;
        CHECK_OK(rift_msgpool_new(&p, &counting));
        static rift_msg *msgs[5000];
        uint8_t payload[100];
        memset(payload, 1, sizeof(payload));
        rift_frame_msg f = fields("r", NULL, payload, sizeof(payload));
        for (size_t i = 0; i < 5000; i++) {
            CHECK_OK(rift_msgpool_msg(p, &msgs[i], &f));
        }
        pthread_t t;
        CHECK_OK(pthread_create(&t, NULL, late_freer, msgs));
        rift_msgpool_close(p);
        pthread_join(t, NULL);
        CHECK_EQ_INT(atomic_load(&live), 0);
    }
}
