/*
 * spin.h — the broker's short-section lock and the futex a receiver sleeps
 * on (broker layer).
 *
 * The lock guards a handful of instructions (push or pop one pointer,
 * maybe an eventfd write on an empty-to-non-empty transition), never a
 * wait. Taking it free costs one compare-and-swap, dropping it one atomic
 * exchange: the price of a plain spinlock, less than a pthread mutex's call.
 * A waiter spins briefly (the holder is normally running and about to let
 * go), then sleeps on the lock word itself (futex): when the holder has
 * been preempted — a busy machine, other processes on every core — waiters
 * no longer burn their time slices spinning or yielding to whatever else
 * runs, and the holder gets the CPU back sooner. Sleeping receivers wait
 * on a separate futex word (wseq in internal.h).
 */
#ifndef RIFT_BROKER_SPIN_H
#define RIFT_BROKER_SPIN_H

#include "common/common.h"

#include <stdatomic.h>

/* v: 0 free, 1 held, 2 held and a waiter may be asleep on it. */
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
void rift_spin_wake(rift_spin *l);

static inline void rift_spin_init(rift_spin *l) {
    atomic_init(&l->v, 0);
}

static inline void rift_spin_lock(rift_spin *l) {
    unsigned free_v = 0;
    if (RIFT_LIKELY(atomic_compare_exchange_strong_explicit(
            &l->v, &free_v, 1, memory_order_acquire, memory_order_relaxed))) {
        return;
    }
    rift_spin_lock_slow(l);
}

static inline void rift_spin_unlock(rift_spin *l) {
    if (RIFT_UNLIKELY(
            atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)) {
        rift_spin_wake(l);
    }
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
