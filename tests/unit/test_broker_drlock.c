/*
 * test_broker_drlock.c — the broker registry's distributed reader/writer
 * lock (broker layer): writers exclude readers, readers see a writer's
 * whole update, per-thread counters add up, and more reader threads than
 * slots fall back to the shared overflow slot. Run under TSan in CI.
 */
// labels: threads
#include "broker/drlock.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

typedef struct shared {
    rift_drlock lock;
    uint64_t a, b; /* writers keep a == b; plain fields on purpose */
    atomic_int stop;
    atomic_int started;
    atomic_int torn;
    atomic_int writes; /* completed writer sections */
    int nthreads;
} shared;

static void *reader(void *arg) {
    shared *s = arg;
    atomic_fetch_add(&s->started, 1);
    /* Wait until every reader thread exists, so they need distinct
     * slots (more than RIFT_DRLOCK_MAX_SLOTS of them). */
    while (atomic_load(&s->started) < s->nthreads && !atomic_load(&s->stop)) {
        sched_yield();
    }
    /* Read only once the writer is running, so the sections overlap even
     * when a loaded scheduler runs the writer late. */
    while (atomic_load(&s->writes) == 0 && !atomic_load(&s->stop)) {
        sched_yield();
    }
    for (int i = 0; i < 200; i++) {
        rift_drlock_slot *slot = rift_drlock_rdlock(&s->lock);
        if (s->a != s->b) {
            atomic_fetch_add(&s->torn, 1);
        }
        rift_drlock_count(&s->lock, slot, 3);
        rift_drlock_rdunlock(&s->lock, slot);
    }
    return NULL;
}

static void *writer(void *arg) {
    shared *s = arg;
    /* At least 100 sections, then until the readers are done. */
    for (int n = 0; n < 100 || !atomic_load(&s->stop); n++) {
        rift_drlock_wrlock(&s->lock);
        s->a++;
        sched_yield(); /* widen the window a reader could slip into */
        s->b++;
        rift_drlock_wrunlock(&s->lock);
        atomic_fetch_add(&s->writes, 1);
    }
    return NULL;
}

static void run(int nreaders) {
    static shared s;
    memset(&s, 0, sizeof(s));
    rift_drlock_init(&s.lock, NULL);
    s.nthreads = nreaders;
    pthread_t w;
    pthread_t *r = calloc((size_t)nreaders, sizeof(*r));
    CHECK(r != NULL);
    CHECK_OK(pthread_create(&w, NULL, writer, &s));
    int created = 0;
    for (int i = 0; i < nreaders; i++) {
        if (pthread_create(&r[i], NULL, reader, &s) != 0) {
            break;
        }
        created++;
    }
    if (created < nreaders) {
        atomic_store(&s.stop, 1); /* release the waiting readers */
    }
    for (int i = 0; i < created; i++) {
        pthread_join(r[i], NULL);
    }
    atomic_store(&s.stop, 1);
    pthread_join(w, NULL);
    free(r);
    CHECK_EQ_INT(created, nreaders);
    CHECK_EQ_INT(atomic_load(&s.torn), 0);
    CHECK(s.a == s.b && s.a > 0);
    uint64_t msgs, bytes;
    rift_drlock_sum(&s.lock, &msgs, &bytes);
    CHECK_EQ_U64(msgs, (uint64_t)nreaders * 200);
    CHECK_EQ_U64(bytes, (uint64_t)nreaders * 600);
    if (nreaders > RIFT_DRLOCK_MAX_SLOTS) {
        CHECK(atomic_load(&s.lock.overflow.msgs_in) > 0);
    }
    rift_drlock_free(&s.lock);
}

RIFT_TEST(writers_exclude_readers) {
    run(4);
}

RIFT_TEST(overflow_slot_beyond_max_threads) {
    run(RIFT_DRLOCK_MAX_SLOTS + 8);
}

RIFT_TEST(one_thread_many_locks) {
    /* A thread alternating between locks keeps one slot per lock. */
    rift_drlock l1, l2;
    rift_drlock_init(&l1, NULL);
    rift_drlock_init(&l2, NULL);
    for (int i = 0; i < 10; i++) {
        rift_drlock_slot *a = rift_drlock_rdlock(&l1);
        rift_drlock_count(&l1, a, 1);
        rift_drlock_rdunlock(&l1, a);
        rift_drlock_slot *b = rift_drlock_rdlock(&l2);
        rift_drlock_count(&l2, b, 2);
        rift_drlock_rdunlock(&l2, b);
    }
    CHECK_EQ_INT(l1.nslots, 1);
    CHECK_EQ_INT(l2.nslots, 1);
    uint64_t m, b;
    rift_drlock_sum(&l2, &m, &b);
    CHECK_EQ_U64(m, 10);
    CHECK_EQ_U64(b, 20);
    rift_drlock_wrlock(&l1);
    rift_drlock_wrunlock(&l1);
    rift_drlock_free(&l1);
    rift_drlock_free(&l2);
}
