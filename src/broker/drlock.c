/*
 * drlock.c — the distributed reader/writer lock of the broker registry
 * (broker layer). See drlock.h for the protocol.
 */
#include "broker/drlock.h"

#include <time.h>

_Thread_local rift_drlock_tls rift_drlock_cache
    __attribute__((tls_model("initial-exec")));

static atomic_uint_fast64_t next_id = 1;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void slot_init(rift_drlock_slot *s) {
    atomic_init(&s->busy, 0);
    atomic_init(&s->msgs_in, 0);
    atomic_init(&s->bytes_in, 0);
    s->next = NULL;
}

void rift_drlock_init(rift_drlock *l, const rift_mem *mem) {
    atomic_init(&l->writer, 0);
    pthread_mutex_init(&l->wlock, NULL);
    atomic_init(&l->slots, NULL);
    l->nslots = 0;
    l->mem = mem;
    l->id = atomic_fetch_add(&next_id, 1);
    slot_init(&l->overflow);
}

void rift_drlock_free(rift_drlock *l) {
    rift_drlock_slot *s = atomic_load(&l->slots);
    while (s != NULL) {
        rift_drlock_slot *next = s->next;
        rift_free(l->mem, s);
        s = next;
    }
    atomic_store(&l->slots, NULL);
    pthread_mutex_destroy(&l->wlock);
}

rift_drlock_slot *rift_drlock_slot_slow(rift_drlock *l) {
    /* A thread that switched between brokers: find the slot it had. The
     * list only grows while the lock lives, so walking it needs no lock.
     * A slot whose thread has exited is adopted by a later thread with the
     * same id, which keeps every slot single-writer. */
    pthread_t self = pthread_self();
    rift_drlock_slot *s;
    for (s = atomic_load_explicit(&l->slots, memory_order_acquire); s != NULL;
         s = s->next) {
        if (pthread_equal(s->owner, self)) {
            goto found;
        }
    }
    pthread_mutex_lock(&l->wlock);
    s = &l->overflow;
    if (l->nslots < RIFT_DRLOCK_MAX_SLOTS) {
        rift_drlock_slot *n = rift_calloc(l->mem, 1, sizeof(*n));
        if (n != NULL) {
            slot_init(n);
            n->owner = self;
            n->next = atomic_load_explicit(&l->slots, memory_order_relaxed);
            atomic_store_explicit(&l->slots, n, memory_order_release);
            l->nslots++;
            s = n;
        }
    }
    pthread_mutex_unlock(&l->wlock);
found:
    rift_drlock_cache.id = l->id;
    rift_drlock_cache.slot = s;
    return s;
}

rift_drlock_slot *rift_drlock_rdlock_slow(rift_drlock *l, rift_drlock_slot *s) {
    bool own = s != &l->overflow;
    for (;;) {
        if (own) {
            atomic_store_explicit(&s->busy, 0, memory_order_release);
        }
        /* A writer holds wlock for its whole critical section: queue
         * behind it instead of spinning. */
        pthread_mutex_lock(&l->wlock);
        pthread_mutex_unlock(&l->wlock);
        if (own) {
            atomic_exchange_explicit(&s->busy, 1, memory_order_seq_cst);
        } else {
            atomic_fetch_add_explicit(&s->busy, 1, memory_order_seq_cst);
        }
        if (atomic_load_explicit(&l->writer, memory_order_seq_cst) == 0) {
            return s;
        }
        if (!own) {
            atomic_fetch_sub_explicit(&s->busy, 1, memory_order_release);
        }
    }
}

static void wait_idle(rift_drlock_slot *s) {
    /* Read sections are short: a reader still busy after a few hundred
     * nanoseconds has probably been preempted. The writer then sleeps
     * between polls instead of yielding: a yield would hand its core to
     * whatever else is runnable for a whole time slice, or, on an idle
     * core, return at once and burn it. Readers take no wake-up path (it
     * would cost every publish a fence), so the wait polls, doubling from
     * a few microseconds; writers are rare (subscribe, unsubscribe). */
    long pause_ns = 2000;
    for (unsigned i = 0;
         atomic_load_explicit(&s->busy, memory_order_seq_cst) != 0; i++) {
        if (i < 64) {
            cpu_relax();
        } else {
            struct timespec ts = {0, pause_ns};
            nanosleep(&ts, NULL);
            pause_ns = RIFT_MIN(pause_ns * 2, 256000L);
        }
    }
}

void rift_drlock_wrlock(rift_drlock *l) {
    pthread_mutex_lock(&l->wlock);
    atomic_store_explicit(&l->writer, 1, memory_order_seq_cst);
    for (rift_drlock_slot *s =
             atomic_load_explicit(&l->slots, memory_order_acquire);
         s != NULL; s = s->next) {
        wait_idle(s);
    }
    wait_idle(&l->overflow);
}

void rift_drlock_wrunlock(rift_drlock *l) {
    atomic_store_explicit(&l->writer, 0, memory_order_release);
    pthread_mutex_unlock(&l->wlock);
}

void rift_drlock_sum(rift_drlock *l, uint64_t *msgs, uint64_t *bytes) {
    uint64_t m =
        atomic_load_explicit(&l->overflow.msgs_in, memory_order_relaxed);
    uint64_t b =
        atomic_load_explicit(&l->overflow.bytes_in, memory_order_relaxed);
    for (rift_drlock_slot *s =
             atomic_load_explicit(&l->slots, memory_order_acquire);
         s != NULL; s = s->next) {
        m += atomic_load_explicit(&s->msgs_in, memory_order_relaxed);
        b += atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
    }
    *msgs = m;
    *bytes = b;
}
