/*
 * spin.c — slow paths of the broker's short-section lock and the futex
 * wrappers (broker layer). See spin.h.
 */
#include "broker/spin.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Polls of a held lock before napping: with a pause of 10-140 cycles (by
 * CPU model) a few hundred nanoseconds to a few microseconds, longer than
 * any section the lock guards takes while its holder runs. */
#define SPIN_POLLS 128

/* Naps double from the first to the last length: a holder that comes back
 * soon is noticed soon, one preempted for a whole time slice (about a
 * millisecond) costs a handful of wake-ups, and the added latency stays a
 * fraction of the time the holder was away. */
#define NAP_FIRST_NS 2000
#define NAP_LAST_NS  128000

void rift_spin_lock_slow(rift_spin *l) {
    int64_t nap_ns = NAP_FIRST_NS;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0) {
            if (atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0) {
                return;
            }
        } else if (i < SPIN_POLLS) {
            rift_cpu_relax();
        } else {
            /* Returns at once if the lock was dropped meanwhile. */
            rift_futex_wait(&l->v, 1, nap_ns);
            nap_ns = RIFT_MIN(nap_ns * 2, NAP_LAST_NS);
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
