/*
 * spin.h — the broker's short-section lock and the futex a receiver sleeps
 * on (broker layer).
 *
 * The lock guards a handful of instructions (push or pop one pointer,
 * maybe an eventfd write on an empty-to-non-empty transition), never a
 * wait, so it is a test-and-test-and-set spinlock: one atomic exchange to
 * take it, a plain release store to drop it, against two atomic operations
 * and a call for a pthread mutex (a futex lock whose unlock must learn
 * whether to wake someone costs every section a second atomic operation:
 * 13 ns more per message in bench/broker). A waiter polls briefly; past
 * that the holder has most likely been preempted (other processes on
 * every core), and the waiter sleeps on the lock word in short timed
 * naps instead of spinning or yielding, so it neither burns its time
 * slice nor hands its core to whatever else runs. Unlock never wakes
 * anybody: a napping waiter notices the free lock when its nap ends.
 * Sleeping receivers wait on a separate futex word (wseq in internal.h).
 */
#ifndef RIFT_BROKER_SPIN_H
#define RIFT_BROKER_SPIN_H

#include "common/common.h"

#include <stdatomic.h>

typedef struct rift_spin {
    atomic_uint v;
} rift_spin;

static inline void rift_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void rift_spin_lock_slow(rift_spin *l);

static inline void rift_spin_init(rift_spin *l) {
    atomic_init(&l->v, 0);
}

static inline void rift_spin_lock(rift_spin *l) {
    if (RIFT_LIKELY(atomic_exchange_explicit(&l->v, 1, memory_order_acquire) ==
                    0)) {
        return;
    }
    rift_spin_lock_slow(l);
}

static inline void rift_spin_unlock(rift_spin *l) {
    atomic_store_explicit(&l->v, 0, memory_order_release);
}

/*
 * rift_futex_wait sleeps while *|word| == |expected|, at most |timeout_ns|
 * (negative: no limit). Returns early on a wake-up, a signal or a changed
 * value; callers re-check their condition.
 */
void rift_futex_wait(atomic_uint *word, unsigned expected, int64_t timeout_ns);

/* rift_futex_wake wakes one sleeper of |word|. */
void rift_futex_wake(atomic_uint *word);

#endif /* RIFT_BROKER_SPIN_H */
