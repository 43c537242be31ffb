/*
 * spin.c — slow paths of the broker's short-section lock and the futex
 * wrappers (broker layer). See spin.h.
 */
#include "broker/spin.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Polls of a held lock before sleeping on it: with a pause of 10–140
 * cycles (by CPU model) a few hundred nanoseconds to a few microseconds,
 * longer than any section the lock guards takes when its holder runs.
 * Past that the holder is most likely preempted and the waiter is better
 * off asleep. */
#define SPIN_POLLS 64

void rift_spin_lock_slow(rift_spin *l) {
    for (unsigned i = 0; i < SPIN_POLLS; i++) {
        unsigned v = atomic_load_explicit(&l->v, memory_order_relaxed);
        if (v == 0) {
            if (atomic_compare_exchange_weak_explicit(
                    &l->v, &v, 1, memory_order_acquire, memory_order_relaxed)) {
                return;
            }
        } else if (v == 2) {
            break; /* others already sleep: queue behind them */
        }
        rift_cpu_relax();
    }
    /* Taken with 2, not 1, whenever we may have slept: another waiter may
     * still be asleep, and our unlock must wake it. */
    while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0) {
        rift_futex_wait(&l->v, 2, -1);
    }
}

void rift_spin_wake(rift_spin *l) {
    rift_futex_wake(&l->v);
}

void rift_futex_wait(atomic_uint *word, unsigned expected, int64_t timeout_ns) {
    struct timespec ts, *pts = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000LL);
        ts.tv_nsec = (long)(timeout_ns % 1000000000LL);
        pts = &ts;
    }
    /* FUTEX_WAIT checks the value atomically against a wake-up, so a wake
     * between our check and the sleep is not lost. */
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected, pts,
            NULL, 0);
}

void rift_futex_wake(atomic_uint *word) {
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
