/*
 * test_loop_threads.c — cross-thread tests of the event loop (net layer):
 * many threads post closures to a loop running on another thread; stop
 * from a foreign thread.
 */
// labels: threads
#include "common/common.h"
#include "net/loop.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

enum {
    POSTERS = 4,
    PER_POSTER = 20000
};

typedef struct shared {
    rift_loop *loop;
    /* Touched only on the loop thread: no lock needed, which is the point
     * of the post queue (TSan checks the hand-over). */
    uint64_t sum;
    uint64_t count;
    int last_seen[POSTERS];
    bool in_order;
    atomic_int done_posters;
} shared;

typedef struct item {
    shared *sh;
    int poster;
    int seq;
} item;

static void on_item(void *arg, int status) {
    item *it = arg;
    shared *sh = it->sh;
    if (status == 0) {
        sh->sum += (uint64_t)it->seq;
        sh->count++;
        /* FIFO per poster. */
        if (it->seq != sh->last_seen[it->poster] + 1) {
            sh->in_order = false;
        }
        sh->last_seen[it->poster] = it->seq;
        if (sh->count == (uint64_t)POSTERS * PER_POSTER) {
            rift_loop_stop(sh->loop);
        }
    }
    free(it);
}

typedef struct poster_arg {
    shared *sh;
    int id;
} poster_arg;

static void *poster(void *arg) {
    poster_arg *pa = arg;
    for (int i = 0; i < PER_POSTER; i++) {
        item *it = malloc(sizeof(*it));
        it->sh = pa->sh;
        it->poster = pa->id;
        it->seq = i;
        while (rift_loop_post(pa->sh->loop, on_item, it) != 0) {
        }
    }
    atomic_fetch_add(&pa->sh->done_posters, 1);
    return NULL;
}

static void *runner(void *arg) {
    shared *sh = arg;
    rift_loop_run(sh->loop);
    return NULL;
}

RIFT_TEST(cross_thread_posts_arrive_in_order) {
    shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.in_order = true;
    for (int i = 0; i < POSTERS; i++) {
        sh.last_seen[i] = -1;
    }
    atomic_init(&sh.done_posters, 0);
    CHECK_OK(rift_loop_new(&sh.loop, NULL));
    pthread_t run, posters[POSTERS];
    poster_arg pa[POSTERS];
    CHECK_OK(pthread_create(&run, NULL, runner, &sh));
    for (int i = 0; i < POSTERS; i++) {
        pa[i].sh = &sh;
        pa[i].id = i;
        CHECK_OK(pthread_create(&posters[i], NULL, poster, &pa[i]));
    }
    for (int i = 0; i < POSTERS; i++) {
        pthread_join(posters[i], NULL);
    }
    pthread_join(run, NULL);
    CHECK_EQ_U64(sh.count, (uint64_t)POSTERS * PER_POSTER);
    CHECK_EQ_U64(sh.sum, (uint64_t)POSTERS * PER_POSTER * (PER_POSTER - 1) / 2);
    CHECK(sh.in_order);
    rift_loop_del(sh.loop);
}

static void *stopper(void *arg) {
    rift_loop_stop(arg);
    return NULL;
}

RIFT_TEST(stop_from_another_thread) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, stopper, loop));
    /* Returns once the foreign stop lands (before or during the run). */
    CHECK_OK(rift_loop_run(loop));
    pthread_join(t, NULL);
    rift_loop_del(loop);
}
