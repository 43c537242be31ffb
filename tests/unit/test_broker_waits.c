/*
 * test_broker_waits.c — threads that wait on the broker's locks sleep
 * once the wait outlasts a short spin, instead of spinning or yielding
 * until the holder comes back (broker layer). On a machine whose cores are
 * busy with other work a preempted holder would otherwise make every
 * waiter burn its time slices. "Sleeping" is read from the kernel: the
 * waiter's state in /proc/self/task/<tid>/stat is S, where a spinner or a
 * sched_yield() loop stays R. Mutual exclusion is checked too (and by
 * TSan in CI).
 */
// labels: threads
#include "broker/drlock.h"
#include "broker/spin.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long a waiter may take to be seen asleep; generous for a loaded
 * machine, and never reached when the waiter does sleep. */
#define ASLEEP_WITHIN_NS 10000000000ULL

/* thread_state returns the state letter of thread |tid| ('?' if unread). */
static char thread_state(pid_t tid) {
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return '?';
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "tid (comm) S ...": comm may hold spaces, so look after the last ')'. */
    char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p[2] : '?';
}

/* await_asleep polls until thread |tid| is seen sleeping. */
static bool await_asleep(pid_t tid) {
    rift_tstamp until = rift_now_ns() + ASLEEP_WITHIN_NS;
    while (rift_now_ns() < until) {
        if (thread_state(tid) == 'S') {
            return true;
        }
        usleep(1000);
    }
    return false;
}

typedef struct waiter {
    rift_spin *lock;
    rift_drlock *rw;
    atomic_int tid;
    atomic_int inside; /* set once the waiter holds the lock */
} waiter;

static void *spin_waiter(void *arg) {
    waiter *w = arg;
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    rift_spin_lock(w->lock);
    atomic_store(&w->inside, 1);
    rift_spin_unlock(w->lock);
    return NULL;
}

static pid_t await_tid(waiter *w) {
    while (atomic_load(&w->tid) == 0) {
        usleep(100);
    }
    return (pid_t)atomic_load(&w->tid);
}

RIFT_TEST(spin_waiter_sleeps_while_holder_is_away) {
    rift_spin lock;
    rift_spin_init(&lock);
    waiter w = {.lock = &lock};
    rift_spin_lock(&lock);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, spin_waiter, &w));
    pid_t tid = await_tid(&w);
    CHECK_MSG(await_asleep(tid), "the waiter never slept (state %c)",
              thread_state(tid));
    CHECK_EQ_INT(atomic_load(&w.inside), 0);
    rift_spin_unlock(&lock);
    pthread_join(t, NULL);
    CHECK_EQ_INT(atomic_load(&w.inside), 1);
    /* The sleeper's unlock left the lock free. */
    rift_spin_lock(&lock);
    rift_spin_unlock(&lock);
    CHECK_EQ_INT(atomic_load(&lock.v), 0);
}

typedef struct counting {
    rift_spin lock;
    uint64_t n; /* plain on purpose: the lock must order it */
} counting;

static void *count_up(void *arg) {
    counting *c = arg;
    for (int i = 0; i < 20000; i++) {
        rift_spin_lock(&c->lock);
        c->n++;
        if ((i & 255) == 0) {
            usleep(50); /* a holder away long enough for waiters to sleep */
        }
        rift_spin_unlock(&c->lock);
    }
    return NULL;
}

RIFT_TEST(spin_lock_excludes_with_sleeping_waiters) {
    static counting c;
    rift_spin_init(&c.lock);
    c.n = 0;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        CHECK_OK(pthread_create(&t[i], NULL, count_up, &c));
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    CHECK_EQ_U64(c.n, 4 * 20000);
    CHECK_EQ_INT(atomic_load(&c.lock.v), 0);
}

static void *drlock_writer(void *arg) {
    waiter *w = arg;
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    rift_drlock_wrlock(w->rw);
    atomic_store(&w->inside, 1);
    rift_drlock_wrunlock(w->rw);
    return NULL;
}

RIFT_TEST(drlock_writer_sleeps_while_reader_is_away) {
    rift_drlock rw;
    rift_drlock_init(&rw, NULL);
    waiter w = {.rw = &rw};
    rift_drlock_slot *slot = rift_drlock_rdlock(&rw);
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, drlock_writer, &w));
    pid_t tid = await_tid(&w);
    CHECK_MSG(await_asleep(tid), "the writer never slept (state %c)",
              thread_state(tid));
    CHECK_EQ_INT(atomic_load(&w.inside), 0);
    rift_drlock_rdunlock(&rw, slot);
    pthread_join(t, NULL);
    CHECK_EQ_INT(atomic_load(&w.inside), 1);
    rift_drlock_free(&rw);
}
