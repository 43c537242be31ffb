/*
 * loop.c — the epoll event loop (net layer): fd watchers, a timer heap
 * whose earliest deadline is the epoll wait's timeout (epoll_pwait2,
 * nanoseconds), an eventfd-driven post queue and signalfd watchers. See
 * loop.h for the contract.
 */
#include "net/loop.h"

#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MAX_EVENTS 64

typedef struct post_node {
    struct post_node *next;
    rift_post_cb cb;
    void *arg;
} post_node;

struct rift_loop {
    const rift_mem *mem;
    int epfd;

    /* Events of the iteration being dispatched; rift_io_stop clears the
     * entries of a stopped watcher so no callback reaches freed memory. */
    struct epoll_event events[MAX_EVENTS];
    int nevents;
    int cur_event;

    /* Timer heap, ordered by (deadline, seq). */
    rift_timer **heap;
    size_t heap_len;
    size_t heap_cap;
    uint64_t next_seq;

    /* Cross-thread post queue. */
    rift_io wake_io;
    int wakefd;
    pthread_mutex_t post_lock;
    post_node *post_head;
    post_node *post_tail;
    bool wake_pending; /* an eventfd write is outstanding (under lock) */
    /* A callback of this loop posted to it (loop thread only): the post
     * runs after this iteration's events, with no eventfd write. */
    bool self_posted;
    atomic_bool stop;
};

/* The loop this thread is running (inside rift_loop_run_once). */
static _Thread_local rift_loop *tls_running;

/* The timer slack is per thread; set it once in every thread that runs a
 * loop. The default 50 µs slack would blur ngtcp2's pacing deadlines. */
static _Thread_local bool slack_set;

static void set_timer_slack(void) {
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        slack_set = true;
    }
}

/* ---- Timer heap ---- */

static bool timer_less(const rift_timer *a, const rift_timer *b) {
    if (a->deadline != b->deadline) {
        return a->deadline < b->deadline;
    }
    return a->seq < b->seq;
}

static void heap_set(rift_loop *loop, size_t i, rift_timer *t) {
    loop->heap[i] = t;
    t->heap_index = i;
}

static void heap_up(rift_loop *loop, size_t i) {
    rift_timer *t = loop->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_less(t, loop->heap[parent])) {
            break;
        }
        heap_set(loop, i, loop->heap[parent]);
        i = parent;
    }
    heap_set(loop, i, t);
}

static void heap_down(rift_loop *loop, size_t i) {
    rift_timer *t = loop->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const rift_timer *best = t;
        if (l < loop->heap_len && timer_less(loop->heap[l], best)) {
            m = l;
            best = loop->heap[l];
        }
        if (r < loop->heap_len && timer_less(loop->heap[r], best)) {
            m = r;
        }
        if (m == i) {
            break;
        }
        heap_set(loop, i, loop->heap[m]);
        i = m;
    }
    heap_set(loop, i, t);
}

static void heap_remove(rift_loop *loop, rift_timer *t) {
    size_t i = t->heap_index;
    rift_timer *last = loop->heap[--loop->heap_len];
    t->heap_index = SIZE_MAX;
    if (last == t) {
        return;
    }
    heap_set(loop, i, last);
    if (i > 0 && timer_less(last, loop->heap[(i - 1) / 2])) {
        heap_up(loop, i);
    } else {
        heap_down(loop, i);
    }
}

void rift_timer_init(rift_loop *loop, rift_timer *timer, rift_timer_cb cb,
                     void *arg) {
    memset(timer, 0, sizeof(*timer));
    timer->loop = loop;
    timer->heap_index = SIZE_MAX;
    timer->cb = cb;
    timer->arg = arg;
}

int rift_timer_start(rift_timer *timer, rift_tstamp deadline) {
    rift_loop *loop = timer->loop;
    if (timer->heap_index != SIZE_MAX) {
        /* Reschedule in place: no allocation, O(log n). */
        timer->deadline = deadline;
        timer->seq = loop->next_seq++;
        heap_up(loop, timer->heap_index);
        heap_down(loop, timer->heap_index);
        return 0;
    }
    if (loop->heap_len == loop->heap_cap) {
        size_t cap = loop->heap_cap ? loop->heap_cap * 2 : 64;
        rift_timer **h =
            rift_realloc(loop->mem, loop->heap, cap * sizeof(*loop->heap));
        if (h == NULL) {
            return RIFT_ERR_NOMEM;
        }
        loop->heap = h;
        loop->heap_cap = cap;
    }
    timer->deadline = deadline;
    timer->seq = loop->next_seq++;
    loop->heap[loop->heap_len] = timer;
    timer->heap_index = loop->heap_len++;
    heap_up(loop, timer->heap_index);
    return 0;
}

void rift_timer_stop(rift_timer *timer) {
    if (timer->heap_index != SIZE_MAX) {
        heap_remove(timer->loop, timer);
    }
}

bool rift_timer_active(const rift_timer *timer) {
    return timer->heap_index != SIZE_MAX;
}

/* epoll_pwait2 (Linux 5.11) waits with nanosecond resolution; without it
 * the wait rounds up to milliseconds and timers fire up to 1 ms late. */
static atomic_bool no_pwait2;

/* Waits for events until |deadline| (monotonic ns; one in the past polls,
 * UINT64_MAX waits without limit). The earliest timer is the deadline: no
 * timerfd to reprogram (timerfd_settime and the read of its expiry were two
 * syscalls per deadline change, which in a paravirtualised guest cost
 * several µs each). */
static int wait_events(rift_loop *loop, rift_tstamp deadline) {
    struct timespec ts, *pts = NULL;
    int64_t left = -1;
    if (deadline != UINT64_MAX) {
        rift_tstamp now = rift_now_ns();
        left = deadline > now ? (int64_t)(deadline - now) : 0;
        ts.tv_sec = (time_t)(left / 1000000000);
        ts.tv_nsec = (long)(left % 1000000000);
        pts = &ts;
    }
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        int n = epoll_pwait2(loop->epfd, loop->events, MAX_EVENTS, pts, NULL);
        if (n >= 0 || errno != ENOSYS) {
            return n;
        }
        atomic_store(&no_pwait2, true);
    }
    int ms = -1;
    if (left >= 0) {
        int64_t m = (left + 999999) / 1000000;
        ms = m > 1000000000 ? 1000000000 : (int)m;
    }
    return epoll_wait(loop->epfd, loop->events, MAX_EVENTS, ms);
}

/* Runs every timer that is due. Timers (re)started by these callbacks get a
 * newer sequence number and wait for the next iteration, so a timer that
 * keeps rescheduling itself in the past cannot starve the loop. */
static void run_timers(rift_loop *loop) {
    rift_tstamp now = rift_now_ns();
    uint64_t limit = loop->next_seq;
    while (loop->heap_len > 0) {
        rift_timer *t = loop->heap[0];
        if (t->deadline > now || t->seq >= limit) {
            break;
        }
        heap_remove(loop, t);
        t->cb(t, t->arg);
    }
}

static int io_start(rift_loop *loop, rift_io *io, int fd, uint32_t epoll_events,
                    unsigned events, rift_io_cb cb, void *arg);

/* ---- Post queue ---- */

static void run_posts(rift_loop *loop, int status) {
    pthread_mutex_lock(&loop->post_lock);
    post_node *n = loop->post_head;
    loop->post_head = loop->post_tail = NULL;
    loop->wake_pending = false;
    pthread_mutex_unlock(&loop->post_lock);
    while (n != NULL) {
        post_node *next = n->next;
        n->cb(n->arg, status);
        rift_free(loop->mem, n);
        n = next;
    }
}

/* The eventfd is watched edge-triggered: every write is a new edge, so
 * its counter is never read back (one syscall less per wakeup). */
static void on_wake(rift_io *io, unsigned events, void *arg) {
    rift_loop *loop = arg;
    (void)io;
    (void)events;
    run_posts(loop, 0);
}

static void wake(rift_loop *loop) {
    uint64_t one = 1;
    ssize_t r;
    do {
        r = write(loop->wakefd, &one, sizeof(one));
    } while (r < 0 && errno == EINTR);
}

int rift_loop_post(rift_loop *loop, rift_post_cb cb, void *arg) {
    post_node *n = rift_malloc(loop->mem, sizeof(*n));
    if (n == NULL) {
        return RIFT_ERR_NOMEM;
    }
    n->next = NULL;
    n->cb = cb;
    n->arg = arg;
    pthread_mutex_lock(&loop->post_lock);
    if (loop->post_tail) {
        loop->post_tail->next = n;
    } else {
        loop->post_head = n;
    }
    loop->post_tail = n;
    if (tls_running == loop) {
        /* Posted by one of the loop's own callbacks (a completion that
         * starts the next call): the loop runs it before it sleeps again,
         * so the eventfd write and the extra wake-up are not needed. */
        loop->self_posted = true;
    } else if (!loop->wake_pending) {
        /* Wake under the lock: once the loop can see the node, its
         * callback may end the loop's owner (a server waiting for its
         * last store completion deletes the loop), so the poster must be
         * done with the loop by then. Only the first post of a batch pays
         * the write. */
        loop->wake_pending = true;
        wake(loop);
    }
    pthread_mutex_unlock(&loop->post_lock);
    return 0;
}

void rift_loop_stop(rift_loop *loop) {
    atomic_store(&loop->stop, true);
    wake(loop);
}

/* ---- Loop ---- */

int rift_loop_new(rift_loop **ploop, const rift_mem *mem) {
    int rv;
    rift_loop *loop = rift_calloc(mem, 1, sizeof(*loop));
    if (loop == NULL) {
        return RIFT_ERR_NOMEM;
    }
    loop->mem = mem;
    loop->wakefd = -1;
    atomic_init(&loop->stop, false);
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epfd < 0) {
        rv = -errno;
        goto fail_epoll;
    }
    loop->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->wakefd < 0) {
        rv = -errno;
        goto fail_eventfd;
    }
    if (pthread_mutex_init(&loop->post_lock, NULL) != 0) {
        rv = RIFT_ERR_NOMEM;
        goto fail_mutex;
    }
    rv = io_start(loop, &loop->wake_io, loop->wakefd, EPOLLIN | EPOLLET,
                  RIFT_IO_READ, on_wake, loop);
    if (rv != 0) {
        goto fail_io;
    }
    set_timer_slack();
    *ploop = loop;
    return 0;

fail_io:
    pthread_mutex_destroy(&loop->post_lock);
fail_mutex:
    close(loop->wakefd);
fail_eventfd:
    close(loop->epfd);
fail_epoll:
    rift_free(mem, loop);
    return rv;
}

void rift_loop_del(rift_loop *loop) {
    if (loop == NULL) {
        return;
    }
    /* Closures may post again while cleaning up; drain until empty. */
    for (;;) {
        pthread_mutex_lock(&loop->post_lock);
        bool empty = loop->post_head == NULL;
        pthread_mutex_unlock(&loop->post_lock);
        if (empty) {
            break;
        }
        run_posts(loop, RIFT_ERR_CLOSED);
    }
    /* Forget the timers still scheduled so their structs read inactive. */
    for (size_t i = 0; i < loop->heap_len; i++) {
        loop->heap[i]->heap_index = SIZE_MAX;
    }
    rift_free(loop->mem, loop->heap);
    pthread_mutex_destroy(&loop->post_lock);
    close(loop->wakefd);
    close(loop->epfd);
    rift_free(loop->mem, loop);
}

rift_tstamp rift_loop_now(const rift_loop *loop) {
    (void)loop;
    return rift_now_ns();
}

static void dispatch(rift_loop *loop) {
    for (loop->cur_event = 0; loop->cur_event < loop->nevents;
         loop->cur_event++) {
        struct epoll_event *ev = &loop->events[loop->cur_event];
        rift_io *io = ev->data.ptr;
        if (io == NULL) {
            continue; /* stopped by an earlier callback of this batch */
        }
        unsigned got = 0;
        if (ev->events & EPOLLIN) {
            got |= RIFT_IO_READ;
        }
        if (ev->events & EPOLLOUT) {
            got |= RIFT_IO_WRITE;
        }
        if (ev->events & (EPOLLERR | EPOLLHUP)) {
            got |= RIFT_IO_ERROR;
        }
        io->cb(io, got, io->arg);
    }
    loop->nevents = 0;
    loop->cur_event = 0;
}

int rift_loop_run_once(rift_loop *loop, int64_t timeout_ns) {
    set_timer_slack();
    rift_tstamp deadline = UINT64_MAX;
    if (timeout_ns >= 0) {
        deadline = rift_now_ns() + (rift_tstamp)timeout_ns;
    }
    if (loop->heap_len > 0 && loop->heap[0]->deadline < deadline) {
        deadline = loop->heap[0]->deadline;
    }
    if (loop->self_posted) {
        deadline = 0; /* posted from the last iteration's timers: poll */
    }
    int n = wait_events(loop, deadline);
    if (n < 0) {
        if (errno == EINTR) {
            return 0;
        }
        return -errno;
    }
    rift_loop *outer = tls_running;
    tls_running = loop;
    loop->nevents = n;
    dispatch(loop);
    /* Own posts before the timers: a write they make is flushed by a
     * zero-delay timer in this same pass. Posts they make in turn wait
     * for the next iteration, which then does not block. */
    if (loop->self_posted) {
        loop->self_posted = false;
        run_posts(loop, 0);
    }
    run_timers(loop);
    tls_running = outer;
    return 0;
}

int rift_loop_run(rift_loop *loop) {
    while (!atomic_exchange(&loop->stop, false)) {
        int rv = rift_loop_run_once(loop, -1);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

/* ---- File descriptor watchers ---- */

static uint32_t to_epoll(unsigned events) {
    uint32_t e = 0;
    if (events & RIFT_IO_READ) {
        e |= EPOLLIN;
    }
    if (events & RIFT_IO_WRITE) {
        e |= EPOLLOUT;
    }
    return e;
}

static int io_start(rift_loop *loop, rift_io *io, int fd, uint32_t epoll_events,
                    unsigned events, rift_io_cb cb, void *arg) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = epoll_events;
    ev.data.ptr = io;
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return -errno;
    }
    io->loop = loop;
    io->fd = fd;
    io->events = events;
    io->cb = cb;
    io->arg = arg;
    io->active = true;
    return 0;
}

int rift_io_start(rift_loop *loop, rift_io *io, int fd, unsigned events,
                  rift_io_cb cb, void *arg) {
    if (fd < 0 || cb == NULL || (events & ~(RIFT_IO_READ | RIFT_IO_WRITE))) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    return io_start(loop, io, fd, to_epoll(events), events, cb, arg);
}

int rift_io_update(rift_io *io, unsigned events) {
    if (!io->active) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    if (events == io->events) {
        return 0;
    }
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = to_epoll(events);
    ev.data.ptr = io;
    if (epoll_ctl(io->loop->epfd, EPOLL_CTL_MOD, io->fd, &ev) != 0) {
        return -errno;
    }
    io->events = events;
    return 0;
}

void rift_io_stop(rift_io *io) {
    if (!io->active) {
        return;
    }
    rift_loop *loop = io->loop;
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->active = false;
    /* At most MAX_EVENTS entries: clearing pending ones is cheap. */
    for (int i = loop->cur_event + 1; i < loop->nevents; i++) {
        if (loop->events[i].data.ptr == io) {
            loop->events[i].data.ptr = NULL;
        }
    }
}

/* ---- Signals ---- */

static void on_signalfd(rift_io *io, unsigned events, void *arg) {
    rift_signal *sig = arg;
    (void)io;
    (void)events;
    for (;;) {
        struct signalfd_siginfo si;
        ssize_t r = read(sig->fd, &si, sizeof(si));
        if (r != (ssize_t)sizeof(si)) {
            break;
        }
        sig->cb(sig, (int)si.ssi_signo, sig->arg);
        if (!sig->io.active) {
            break; /* stopped from the callback; the fd is closed */
        }
    }
}

int rift_signal_start(rift_loop *loop, rift_signal *sig, const int *signums,
                      size_t n, rift_signal_cb cb, void *arg) {
    if (n == 0 || cb == NULL) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < n; i++) {
        if (sigaddset(&set, signums[i]) != 0) {
            return RIFT_ERR_INVALID_ARGUMENT;
        }
    }
    int rv = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rv != 0) {
        return -rv;
    }
    memset(sig, 0, sizeof(*sig));
    sig->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sig->fd < 0) {
        return -errno;
    }
    sig->cb = cb;
    sig->arg = arg;
    rv = rift_io_start(loop, &sig->io, sig->fd, RIFT_IO_READ, on_signalfd, sig);
    if (rv != 0) {
        close(sig->fd);
        sig->fd = -1;
        return rv;
    }
    return 0;
}

void rift_signal_stop(rift_signal *sig) {
    if (!sig->io.active) {
        return;
    }
    rift_io_stop(&sig->io);
    close(sig->fd);
    sig->fd = -1;
}
