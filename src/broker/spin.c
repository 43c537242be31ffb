/*
 * spin.c — slow paths of the subscription spinlock and the futex wrappers
 * (broker layer). See spin.h.
 */
#include "broker/spin.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void rift_spin_lock_slow(rift_spin *l) {
    for (;;) {
        for (unsigned i = 0;
             atomic_load_explicit(&l->v, memory_order_relaxed) != 0; i++) {
            if (i < 128) {
                rift_cpu_relax();
            } else {
                sched_yield();
            }
        }
        if (atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0) {
            return;
        }
    }
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
