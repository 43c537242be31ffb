/*
 * test_loop.c — unit tests of the event loop (net layer): timer ordering,
 * cancel and reschedule, heap consistency under random operations, fd
 * watchers, stopping watchers from callbacks, posts, signals.
 */
#include "common/common.h"
#include "net/loop.h"
#include "test.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct fire_log {
    int order[64];
    int n;
    rift_tstamp at[64];
} fire_log;

typedef struct tctx {
    fire_log *log;
    int id;
} tctx;

static void on_fire(rift_timer *t, void *arg) {
    tctx *c = arg;
    (void)t;
    if (c->log->n < 64) {
        c->log->at[c->log->n] = rift_now_ns();
        c->log->order[c->log->n++] = c->id;
    }
}

static void stop_loop_timer(rift_timer *t, void *arg) {
    (void)t;
    rift_loop_stop(arg);
}

RIFT_TEST(timers_fire_in_deadline_order) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    fire_log log = {0};
    rift_timer t[5], stop;
    tctx c[5];
    rift_tstamp now = rift_now_ns();
    /* Deadlines out of order; 3 and 4 share a deadline (FIFO). */
    rift_tstamp d[5] = {now + 3000000, now + 1000000, now + 2000000,
                        now + 500000, now + 500000};
    for (int i = 0; i < 5; i++) {
        c[i].log = &log;
        c[i].id = i;
        rift_timer_init(loop, &t[i], on_fire, &c[i]);
        CHECK_OK(rift_timer_start(&t[i], d[i]));
    }
    rift_timer_init(loop, &stop, stop_loop_timer, loop);
    CHECK_OK(rift_timer_start(&stop, now + 5000000));
    CHECK_OK(rift_loop_run(loop));
    CHECK_EQ_INT(log.n, 5);
    int want[5] = {3, 4, 1, 2, 0};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(log.order[i], want[i]);
        /* Never early. */
        CHECK(log.at[i] >= d[want[i]]);
    }
    for (int i = 0; i < 5; i++) {
        CHECK(!rift_timer_active(&t[i]));
    }
    rift_loop_del(loop);
}

RIFT_TEST(timer_cancel_and_reschedule) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    fire_log log = {0};
    rift_timer a, b, stop;
    tctx ca = {&log, 1}, cb = {&log, 2};
    rift_tstamp now = rift_now_ns();
    rift_timer_init(loop, &a, on_fire, &ca);
    rift_timer_init(loop, &b, on_fire, &cb);
    rift_timer_init(loop, &stop, stop_loop_timer, loop);
    CHECK_OK(rift_timer_start(&a, now + 1000000));
    CHECK_OK(rift_timer_start(&b, now + 2000000));
    rift_timer_stop(&a);
    rift_timer_stop(&a); /* idempotent */
    CHECK(!rift_timer_active(&a));
    /* Reschedule b later than the stop timer: it must not fire. */
    CHECK_OK(rift_timer_start(&b, now + 10000000000ULL));
    CHECK_OK(rift_timer_start(&stop, now + 3000000));
    CHECK_OK(rift_loop_run(loop));
    CHECK_EQ_INT(log.n, 0);
    CHECK(rift_timer_active(&b));
    rift_loop_del(loop);
    CHECK(!rift_timer_active(&b));
}

RIFT_TEST(overdue_deadline_fires_next_iteration) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    fire_log log = {0};
    rift_timer a, z;
    tctx ca = {&log, 7}, cz = {&log, 8};
    rift_timer_init(loop, &a, on_fire, &ca);
    rift_timer_init(loop, &z, on_fire, &cz);
    CHECK_OK(rift_timer_start(&a, rift_now_ns() - 1000));
    CHECK_OK(rift_timer_start(&z, 0)); /* deadline 0 must not disarm */
    for (int i = 0; i < 10 && log.n < 2; i++) {
        CHECK_OK(rift_loop_run_once(loop, 100000000));
    }
    CHECK_EQ_INT(log.n, 2);
    CHECK_EQ_INT(log.order[0], 8);
    CHECK_EQ_INT(log.order[1], 7);
    rift_loop_del(loop);
}

/* Random starts, stops and reschedules of many timers; they must fire in
 * nondecreasing deadline order and exactly the active ones fire. */
typedef struct rnd_timer {
    rift_timer t;
    rift_tstamp deadline;
    bool fired;
    rift_tstamp *last;
    bool *order_ok;
} rnd_timer;

static void rnd_fire(rift_timer *t, void *arg) {
    rnd_timer *r = arg;
    (void)t;
    if (r->deadline < *r->last) {
        *r->order_ok = false;
    }
    *r->last = r->deadline;
    r->fired = true;
}

RIFT_TEST(timer_heap_random_operations) {
    enum {
        N = 500
    };
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    static rnd_timer timers[N];
    rift_tstamp last = 0;
    bool order_ok = true;
    srand(42);
    rift_tstamp base = rift_now_ns();
    for (int i = 0; i < N; i++) {
        timers[i].last = &last;
        timers[i].order_ok = &order_ok;
        timers[i].fired = false;
        rift_timer_init(loop, &timers[i].t, rnd_fire, &timers[i]);
    }
    for (int op = 0; op < 5000; op++) {
        rnd_timer *r = &timers[rand() % N];
        if (rand() % 4 == 0) {
            rift_timer_stop(&r->t);
        } else {
            r->deadline = base + (rift_tstamp)(rand() % 20000) * 1000;
            CHECK_OK(rift_timer_start(&r->t, r->deadline));
        }
    }
    bool active[N];
    for (int i = 0; i < N; i++) {
        active[i] = rift_timer_active(&timers[i].t);
    }
    while (rift_now_ns() < base + 21000000) {
        CHECK_OK(rift_loop_run_once(loop, 1000000));
    }
    CHECK_OK(rift_loop_run_once(loop, 0));
    CHECK(order_ok);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(timers[i].fired, active[i]);
        CHECK(!rift_timer_active(&timers[i].t));
    }
    rift_loop_del(loop);
}

/* ---- fd watchers ---- */

typedef struct pipe_ctx {
    int rfd;
    int reads;
    rift_io *other; /* stopped from the callback when set */
    int *other_calls;
} pipe_ctx;

static void on_pipe(rift_io *io, unsigned events, void *arg) {
    pipe_ctx *p = arg;
    char buf[16];
    CHECK(events & RIFT_IO_READ);
    ssize_t r = read(p->rfd, buf, sizeof(buf));
    (void)r;
    p->reads++;
    if (p->other) {
        rift_io_stop(p->other);
    }
    rift_io_stop(io);
    rift_loop_stop(io->loop);
}

static void on_other(rift_io *io, unsigned events, void *arg) {
    int *calls = arg;
    (void)io;
    (void)events;
    (*calls)++;
}

RIFT_TEST(io_watcher_and_stop_from_callback) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    int p1[2], p2[2];
    CHECK_OK(pipe(p1));
    CHECK_OK(pipe(p2));
    rift_io a, b;
    int other_calls = 0;
    pipe_ctx pa = {p1[0], 0, &b, &other_calls};
    CHECK_OK(rift_io_start(loop, &a, p1[0], RIFT_IO_READ, on_pipe, &pa));
    CHECK_OK(
        rift_io_start(loop, &b, p2[0], RIFT_IO_READ, on_other, &other_calls));
    /* Both readable in the same iteration: whichever runs first, a stops b
     * and b must then never be called after a. */
    CHECK_EQ_INT(write(p1[1], "x", 1), 1);
    CHECK_EQ_INT(write(p2[1], "y", 1), 1);
    CHECK_OK(rift_loop_run(loop));
    CHECK_EQ_INT(pa.reads, 1);
    CHECK(other_calls <= 1);
    int before = other_calls;
    CHECK_OK(rift_loop_run_once(loop, 1000000));
    CHECK_EQ_INT(other_calls, before);
    CHECK(!a.active && !b.active);
    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
    rift_loop_del(loop);
}

static void on_writable(rift_io *io, unsigned events, void *arg) {
    int *n = arg;
    if (events & RIFT_IO_WRITE) {
        (*n)++;
        CHECK_OK(rift_io_update(io, 0));
    }
}

RIFT_TEST(io_update_events) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    int p[2];
    CHECK_OK(pipe(p));
    rift_io w;
    int n = 0;
    CHECK_OK(rift_io_start(loop, &w, p[1], 0, on_writable, &n));
    CHECK_OK(rift_loop_run_once(loop, 0));
    CHECK_EQ_INT(n, 0);
    CHECK_OK(rift_io_update(&w, RIFT_IO_WRITE));
    CHECK_OK(rift_loop_run_once(loop, 100000000));
    CHECK_EQ_INT(n, 1);
    CHECK_OK(rift_loop_run_once(loop, 0));
    CHECK_EQ_INT(n, 1); /* updated back to 0 from the callback */
    rift_io_stop(&w);
    close(p[0]);
    close(p[1]);
    CHECK_EQ_INT(rift_io_start(loop, &w, -1, RIFT_IO_READ, on_writable, &n),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_loop_del(loop);
}

/* ---- posts ---- */

typedef struct post_ctx {
    int seq[8];
    int n;
    int closed;
} post_ctx;

static post_ctx g_post;

static void post_record(void *arg, int status) {
    int id = (int)(intptr_t)arg;
    if (status == RIFT_ERR_CLOSED) {
        g_post.closed++;
        return;
    }
    g_post.seq[g_post.n++] = id;
}

RIFT_TEST(post_runs_in_fifo_order_and_cancels_on_del) {
    memset(&g_post, 0, sizeof(g_post));
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    for (intptr_t i = 0; i < 4; i++) {
        CHECK_OK(rift_loop_post(loop, post_record, (void *)i));
    }
    CHECK_OK(rift_loop_run_once(loop, 100000000));
    CHECK_EQ_INT(g_post.n, 4);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(g_post.seq[i], i);
    }
    CHECK_OK(rift_loop_post(loop, post_record, (void *)9));
    CHECK_OK(rift_loop_post(loop, post_record, (void *)9));
    rift_loop_del(loop);
    CHECK_EQ_INT(g_post.closed, 2);
    CHECK_EQ_INT(g_post.n, 4);
}

/* A chain of posts made from the loop's own callbacks (a timer, then each
 * post making the next) runs without any eventfd wake-up: every
 * iteration that has one pending polls instead of blocking. */
typedef struct chain_ctx {
    rift_loop *loop;
    int left;
    int ran;
} chain_ctx;

static void chain_post(void *arg, int status) {
    chain_ctx *c = arg;
    if (status != 0) {
        return;
    }
    c->ran++;
    if (--c->left > 0) {
        (void)rift_loop_post(c->loop, chain_post, c);
    }
}

static void chain_timer(rift_timer *t, void *arg) {
    (void)t;
    chain_ctx *c = arg;
    (void)rift_loop_post(c->loop, chain_post, c);
}

RIFT_TEST(posts_from_own_callbacks_run_without_blocking) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    chain_ctx c = {loop, 3, 0};
    rift_timer t;
    rift_timer_init(loop, &t, chain_timer, &c);
    CHECK_OK(rift_timer_start(&t, 0));
    /* Each pass would block for 10 s if a pending own post did not make
     * the wait a poll. */
    rift_tstamp t0 = rift_now_ns();
    for (int i = 0; i < 8 && c.ran < 3; i++) {
        CHECK_OK(rift_loop_run_once(loop, 10000000000));
    }
    CHECK_EQ_INT(c.ran, 3);
    CHECK(rift_now_ns() - t0 < 5000000000ull);
    /* A post from another context still wakes the loop. */
    memset(&g_post, 0, sizeof(g_post));
    CHECK_OK(rift_loop_post(loop, post_record, (void *)7));
    CHECK_OK(rift_loop_run_once(loop, 10000000000));
    CHECK_EQ_INT(g_post.n, 1);
    rift_loop_del(loop);
}

RIFT_TEST(stop_before_run_returns_at_once) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    rift_loop_stop(loop);
    CHECK_OK(rift_loop_run(loop));
    /* The stop was consumed; a timer stops the next run. */
    rift_timer t;
    rift_timer_init(loop, &t, stop_loop_timer, loop);
    CHECK_OK(rift_timer_start(&t, rift_now_ns() + 1000000));
    CHECK_OK(rift_loop_run(loop));
    rift_loop_del(loop);
}

/* ---- signals ---- */

typedef struct sig_ctx {
    int got[4];
    int n;
} sig_ctx;

static void on_sig(rift_signal *sig, int signum, void *arg) {
    sig_ctx *c = arg;
    c->got[c->n++] = signum;
    if (c->n == 2) {
        rift_signal_stop(sig);
        rift_loop_stop(sig->io.loop);
    }
}

RIFT_TEST(signalfd_delivers_signals) {
    rift_loop *loop;
    CHECK_OK(rift_loop_new(&loop, NULL));
    rift_signal sig;
    sig_ctx c = {{0}, 0};
    int signums[] = {SIGUSR1, SIGUSR2};
    CHECK_OK(rift_signal_start(loop, &sig, signums, 2, on_sig, &c));
    CHECK_OK(raise(SIGUSR1));
    CHECK_OK(raise(SIGUSR2));
    CHECK_OK(rift_loop_run(loop));
    CHECK_EQ_INT(c.n, 2);
    CHECK(c.got[0] == SIGUSR1 || c.got[0] == SIGUSR2);
    CHECK(c.got[1] != c.got[0]);
    rift_signal_stop(&sig); /* no-op when already stopped */
    rift_loop_del(loop);
}
