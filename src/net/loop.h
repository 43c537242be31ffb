/*
 * loop.h — rift's own small event loop (net layer): fd watchers, timers with
 * nanosecond deadlines, a thread-safe "post a closure to the loop" queue,
 * signal watchers, run/stop. This layer is the only place that calls
 * epoll_*; everything above it sees RIFT_IO_* flags.
 *
 * Threading: a loop and all its watchers and timers belong to the thread
 * that runs it. Exceptions: rift_loop_post and rift_loop_stop may be called
 * from any thread (they are how work crosses threads, docs/style.md §8.30).
 *
 * Timers are kept in a binary min-heap (insert, cancel and reschedule are
 * O(log n)); the earliest deadline (CLOCK_MONOTONIC, nanoseconds) is the
 * timeout of the loop's epoll_pwait2, so moving it costs no syscall. The
 * loop sets the thread's timer slack to 1 ns when it is created so
 * deadlines such as ngtcp2's pacing times are honoured to the
 * microsecond. (Kernels before 5.11 lack epoll_pwait2: the wait then
 * rounds up to milliseconds.)
 *
 * Watchers and timers are caller-owned structs (libuv style): the caller
 * keeps them alive while active and may stop them from inside any callback,
 * including their own.
 */
#ifndef RIFT_NET_LOOP_H
#define RIFT_NET_LOOP_H

#include "rift/rift.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rift_loop rift_loop;
typedef struct rift_io rift_io;
typedef struct rift_timer rift_timer;
typedef struct rift_signal rift_signal;

/* ---- Loop ---- */

/**
 * rift_loop_new creates a loop (epoll instance, eventfd). |mem|
 * may be NULL for malloc and must outlive the loop.
 *
 * Errors: RIFT_ERR_NOMEM; -errno from epoll_create1 or
 * eventfd.
 */
int rift_loop_new(rift_loop **ploop, const rift_mem *mem);

/**
 * rift_loop_del destroys the loop. Every closure still queued with
 * rift_loop_post is called with status RIFT_ERR_CLOSED so it can release
 * what it holds; watchers and timers still active are simply forgotten
 * (their structs are the caller's). No other thread may post once this
 * starts. NULL is a no-op.
 */
void rift_loop_del(rift_loop *loop);

/**
 * rift_loop_run runs the loop until rift_loop_stop is called. Returns 0,
 * or -errno when epoll_wait fails for a reason other than EINTR.
 */
int rift_loop_run(rift_loop *loop);

/**
 * rift_loop_run_once waits for events at most |timeout_ns| (0 polls, a
 * negative value waits until something happens, or the earliest timer),
 * dispatches them, runs expired timers and posted closures, and returns.
 * Returns 0 or -errno.
 */
int rift_loop_run_once(rift_loop *loop, int64_t timeout_ns);

/**
 * rift_loop_stop makes rift_loop_run return after the current iteration.
 * Thread-safe; a stop requested while the loop is not running makes the
 * next rift_loop_run return at once.
 */
void rift_loop_stop(rift_loop *loop);

/** rift_loop_now returns the monotonic time in nanoseconds. */
rift_tstamp rift_loop_now(const rift_loop *loop);

/**
 * rift_post_cb runs on the loop thread. |status| is 0, or RIFT_ERR_CLOSED
 * when the loop is being destroyed and the closure must only clean up.
 */
typedef void (*rift_post_cb)(void *arg, int status);

/**
 * rift_loop_post queues |cb|(|arg|, 0) to run on the loop thread soon, in
 * FIFO order with other posts, and wakes the loop. Thread-safe. When it
 * fails, |cb| is never called. The poster is done with |loop| before |cb|
 * can run, so |cb| may end the thread that deletes the loop.
 *
 * Errors: RIFT_ERR_NOMEM.
 */
int rift_loop_post(rift_loop *loop, rift_post_cb cb, void *arg);

/* ---- File descriptor watchers ---- */

#define RIFT_IO_READ  0x1u
#define RIFT_IO_WRITE 0x2u
/* Reported only (never requested): error or hang-up on the fd. */
#define RIFT_IO_ERROR 0x4u

typedef void (*rift_io_cb)(rift_io *io, unsigned events, void *arg);

struct rift_io {
    /* All fields are private to the loop. */
    rift_loop *loop;
    int fd;
    unsigned events;
    rift_io_cb cb;
    void *arg;
    bool active;
};

/**
 * rift_io_start watches |fd| for |events| (RIFT_IO_READ and/or
 * RIFT_IO_WRITE, level-triggered) and calls |cb| with the events that are
 * ready. The fd stays the caller's. |io| must not be active already.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT; -errno from epoll_ctl.
 */
int rift_io_start(rift_loop *loop, rift_io *io, int fd, unsigned events,
                  rift_io_cb cb, void *arg);

/**
 * rift_io_update changes the watched events of an active watcher (0 is
 * allowed and keeps the fd registered but silent). Errors: -errno.
 */
int rift_io_update(rift_io *io, unsigned events);

/**
 * rift_io_stop stops watching; safe from any callback, and a no-op when
 * |io| is not active. Events already collected for |io| in the current
 * iteration are discarded.
 */
void rift_io_stop(rift_io *io);

/* ---- Timers ---- */

typedef void (*rift_timer_cb)(rift_timer *timer, void *arg);

struct rift_timer {
    /* All fields are private to the loop. */
    rift_loop *loop;
    rift_tstamp deadline;
    size_t heap_index; /* SIZE_MAX when not in the heap */
    uint64_t seq;      /* insertion order: FIFO among equal deadlines */
    rift_timer_cb cb;
    void *arg;
};

/** rift_timer_init prepares |timer| for |loop|; it starts inactive. */
void rift_timer_init(rift_loop *loop, rift_timer *timer, rift_timer_cb cb,
                     void *arg);

/**
 * rift_timer_start schedules |timer| to fire once at the absolute
 * monotonic time |deadline| (nanoseconds, the clock of rift_now_ns). A
 * deadline in the past fires on the next iteration. An active timer is
 * rescheduled (which never allocates).
 *
 * Errors: RIFT_ERR_NOMEM (growing the heap; the timer stays inactive).
 */
int rift_timer_start(rift_timer *timer, rift_tstamp deadline);

/** rift_timer_stop cancels |timer|; a no-op when it is not active. */
void rift_timer_stop(rift_timer *timer);

/** rift_timer_active returns true while |timer| is scheduled. */
bool rift_timer_active(const rift_timer *timer);

/* ---- Signals ---- */

typedef void (*rift_signal_cb)(rift_signal *sig, int signum, void *arg);

struct rift_signal {
    /* All fields are private to the loop. */
    rift_io io;
    int fd;
    rift_signal_cb cb;
    void *arg;
};

/**
 * rift_signal_start blocks |signums| in the calling thread and delivers
 * them to |cb| on the loop through a signalfd. Process-directed signals
 * reach the signalfd only if every thread blocks them: call this (or block
 * the signals) in the main thread before starting other threads.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT; -errno from pthread_sigmask, signalfd
 * or epoll_ctl.
 */
int rift_signal_start(rift_loop *loop, rift_signal *sig, const int *signums,
                      size_t n, rift_signal_cb cb, void *arg);

/**
 * rift_signal_stop stops the watcher and closes its signalfd. The signals
 * stay blocked. A no-op when not started.
 */
void rift_signal_stop(rift_signal *sig);

#endif /* RIFT_NET_LOOP_H */
