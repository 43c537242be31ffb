/*
 * host.c — the plugin host's threads (lua layer): a pool of workers that
 * run plugins from a run queue, one plugin per worker at a time, and take
 * turns as the poller (leader/follower): the poller sleeps on the broker
 * notifier shared by every plugin subscription and on a wake eventfd, with
 * the next timer as its timeout. Also the timer heap, hold/release for
 * reloads and the compatibility subscriptions (drained by the poller into
 * the queues of every state with message handlers). Events and status are
 * in host_status.c.
 *
 * Nothing spins: the poller blocks in ppoll until a subscription goes from
 * empty to ready, a timer is due or another thread wakes it; other idle
 * workers block on a condition variable.
 */
#include "lua/host_internal.h"

#include "common/dlist.h"

#include <errno.h>
#include <lauxlib.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define POLL_BATCH 64

/* ---- Run queue (host->lock held) ---- */

static bool has_work(const rift_lua_plugin *p) {
    return p->vm != NULL &&
           (p->ready_head != NULL || p->due_head != NULL || p->cq_len > 0);
}

static void wake_poller(rift_plugin_host *h);

/* Appends |p| to the run queue (host->lock held). */
static void enqueue(rift_plugin_host *h, rift_lua_plugin *p) {
    p->sched = RIFT_LUA_QUEUED;
    RIFT_DLIST_APPEND(h->rq_head, h->rq_tail, p, rq_prev, rq_next);
}

/* Makes sure a worker will run |p|: an idle one, or the poller, which is
 * woken from ppoll when it sleeps there (host->lock held). */
static void schedule(rift_plugin_host *h, rift_lua_plugin *p) {
    if (p->held > 0 || p->sched != RIFT_LUA_IDLE || p->vm == NULL) {
        return;
    }
    enqueue(h, p);
    pthread_cond_signal(&h->work_cv);
    if (h->in_poll && !h->poll_woken) {
        h->poll_woken = true;
        wake_poller(h);
    }
}

static void unqueue(rift_plugin_host *h, rift_lua_plugin *p) {
    RIFT_DLIST_REMOVE_TAILED(h->rq_head, h->rq_tail, p, rq_prev, rq_next);
    p->sched = RIFT_LUA_IDLE;
}

void rift_plugin_host_lock(rift_plugin_host *h) {
    pthread_mutex_lock(&h->lock);
}

void rift_plugin_host_unlock(rift_plugin_host *h) {
    pthread_mutex_unlock(&h->lock);
}

void rift_plugin_host_hold(rift_plugin_host *h, rift_lua_plugin *p) {
    atomic_fetch_add_explicit(&p->hold_pending, 1, memory_order_relaxed);
    pthread_mutex_lock(&h->lock);
    p->held++;
    while (p->sched == RIFT_LUA_ACTIVE) {
        pthread_cond_wait(&h->idle_cv, &h->lock);
    }
    atomic_fetch_sub_explicit(&p->hold_pending, 1, memory_order_relaxed);
    if (p->sched == RIFT_LUA_QUEUED) {
        unqueue(h, p);
    }
    pthread_mutex_unlock(&h->lock);
}

void rift_plugin_host_release(rift_plugin_host *h, rift_lua_plugin *p) {
    pthread_mutex_lock(&h->lock);
    p->held--;
    if (p->held == 0 && has_work(p)) {
        schedule(h, p);
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- Ready and due lists (host->lock held) ---- */

static void ready_push(rift_lua_plugin *p, rift_lua_binding *b) {
    b->on_ready = true;
    b->ready_next = NULL;
    if (p->ready_tail != NULL) {
        p->ready_tail->ready_next = b;
    } else {
        p->ready_head = b;
    }
    p->ready_tail = b;
}

static void ready_remove(rift_lua_plugin *p, rift_lua_binding *b) {
    rift_lua_binding *prev = NULL;
    for (rift_lua_binding *x = p->ready_head; x != NULL; x = x->ready_next) {
        if (x == b) {
            if (prev != NULL) {
                prev->ready_next = b->ready_next;
            } else {
                p->ready_head = b->ready_next;
            }
            if (p->ready_tail == b) {
                p->ready_tail = prev;
            }
            break;
        }
        prev = x;
    }
    b->on_ready = false;
    b->ready_next = NULL;
}

rift_lua_binding *rift_plugin_host_pop_ready(rift_plugin_host *h,
                                             rift_lua_plugin *p) {
    pthread_mutex_lock(&h->lock);
    rift_lua_binding *b = p->ready_head;
    if (b != NULL) {
        p->ready_head = b->ready_next;
        if (p->ready_head == NULL) {
            p->ready_tail = NULL;
        }
        b->on_ready = false;
        b->ready_next = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    return b;
}

void rift_plugin_host_push_ready(rift_plugin_host *h, rift_lua_binding *b) {
    pthread_mutex_lock(&h->lock);
    if (!b->on_ready && !b->closed) {
        ready_push(b->plugin, b);
    }
    pthread_mutex_unlock(&h->lock);
}

static void due_remove(rift_lua_plugin *p, rift_lua_timer *t) {
    rift_lua_timer *prev = NULL;
    for (rift_lua_timer *x = p->due_head; x != NULL; x = x->due_next) {
        if (x == t) {
            if (prev != NULL) {
                prev->due_next = t->due_next;
            } else {
                p->due_head = t->due_next;
            }
            if (p->due_tail == t) {
                p->due_tail = prev;
            }
            break;
        }
        prev = x;
    }
    t->on_due = false;
    t->due_next = NULL;
}

rift_lua_timer *rift_plugin_host_pop_due(rift_plugin_host *h,
                                         rift_lua_plugin *p) {
    pthread_mutex_lock(&h->lock);
    rift_lua_timer *t = p->due_head;
    if (t != NULL) {
        p->due_head = t->due_next;
        if (p->due_head == NULL) {
            p->due_tail = NULL;
        }
        t->on_due = false;
        t->due_next = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    return t;
}

rift_msg *rift_plugin_host_pop_compat(rift_plugin_host *h, rift_lua_plugin *p) {
    pthread_mutex_lock(&h->lock);
    rift_msg *m = NULL;
    if (p->cq_len > 0) {
        m = p->cq[p->cq_head];
        p->cq[p->cq_head] = NULL;
        p->cq_head = (p->cq_head + 1) % p->cq_cap;
        p->cq_len--;
    }
    pthread_mutex_unlock(&h->lock);
    return m;
}

/* Drops every queued compatibility message of |p| (host->lock held);
 * returns how many. */
static size_t compat_flush(rift_lua_plugin *p) {
    size_t n = p->cq_len;
    while (p->cq_len > 0) {
        rift_msg_unref(p->cq[p->cq_head]);
        p->cq[p->cq_head] = NULL;
        p->cq_head = (p->cq_head + 1) % p->cq_cap;
        p->cq_len--;
    }
    return n;
}

void rift_plugin_host_compat_flush(rift_plugin_host *h, rift_lua_plugin *p) {
    pthread_mutex_lock(&h->lock);
    compat_flush(p);
    pthread_mutex_unlock(&h->lock);
}

/* ---- Timer heap (host->lock held) ---- */

static void heap_set(rift_plugin_host *h, size_t i, rift_lua_timer *t) {
    h->heap[i] = t;
    t->heap_idx = i;
}

static void heap_up(rift_plugin_host *h, size_t i) {
    rift_lua_timer *t = h->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->heap[parent]->due <= t->due) {
            break;
        }
        heap_set(h, i, h->heap[parent]);
        i = parent;
    }
    heap_set(h, i, t);
}

static void heap_down(rift_plugin_host *h, size_t i) {
    rift_lua_timer *t = h->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->heap_len) {
            break;
        }
        if (c + 1 < h->heap_len && h->heap[c + 1]->due < h->heap[c]->due) {
            c++;
        }
        if (t->due <= h->heap[c]->due) {
            break;
        }
        heap_set(h, i, h->heap[c]);
        i = c;
    }
    heap_set(h, i, t);
}

static void heap_remove(rift_plugin_host *h, rift_lua_timer *t) {
    size_t i = t->heap_idx;
    t->heap_idx = SIZE_MAX;
    h->heap_len--;
    if (i == h->heap_len) {
        return;
    }
    heap_set(h, i, h->heap[h->heap_len]);
    heap_up(h, i);
    heap_down(h, h->heap[i]->heap_idx);
}

static void wake_poller(rift_plugin_host *h) {
    (void)eventfd_write(h->wake_fd, 1);
}

void rift_plugin_host_wake(rift_plugin_host *h) {
    pthread_mutex_lock(&h->lock);
    if (h->in_poll && !h->poll_woken) {
        h->poll_woken = true;
        wake_poller(h);
    }
    pthread_mutex_unlock(&h->lock);
}

void rift_plugin_host_arm_timer(rift_plugin_host *h, rift_lua_timer *t) {
    pthread_mutex_lock(&h->lock);
    if (h->heap_len == h->heap_cap) {
        /* Growth cannot be refused here (timers are capped per plugin, so
         * the heap stays small); on failure the timer fires at the next
         * poller turn instead, through the due list. */
        size_t cap = h->heap_cap ? h->heap_cap * 2 : 64;
        rift_lua_timer **nh = rift_realloc(h->mem, h->heap, cap * sizeof(*nh));
        if (nh == NULL) {
            if (!t->on_due) {
                t->on_due = true;
                t->due_next = NULL;
                rift_lua_plugin *p = t->plugin;
                if (p->due_tail != NULL) {
                    p->due_tail->due_next = t;
                } else {
                    p->due_head = t;
                }
                p->due_tail = t;
                schedule(h, p);
            }
            pthread_mutex_unlock(&h->lock);
            return;
        }
        h->heap = nh;
        h->heap_cap = cap;
    }
    heap_set(h, h->heap_len++, t);
    heap_up(h, t->heap_idx);
    /* A sleeping poller must shorten its timeout; a poller to come reads
     * the heap anyway. */
    if (t->heap_idx == 0 && h->in_poll && !h->poll_woken) {
        h->poll_woken = true;
        wake_poller(h);
    }
    pthread_mutex_unlock(&h->lock);
}

void rift_plugin_host_disarm_timer(rift_plugin_host *h, rift_lua_timer *t) {
    pthread_mutex_lock(&h->lock);
    if (t->heap_idx != SIZE_MAX) {
        heap_remove(h, t);
    }
    if (t->on_due) {
        due_remove(t->plugin, t);
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- Subscriptions ---- */

void rift_plugin_host_close_sub(rift_plugin_host *h, rift_lua_binding *b) {
    pthread_mutex_lock(&h->lock);
    if (b->sub != NULL) {
        rift_sub_close(b->sub);
        b->sub = NULL;
    }
    b->closed = true;
    if (b->on_ready && b->plugin != NULL) {
        ready_remove(b->plugin, b);
    }
    pthread_mutex_unlock(&h->lock);
}

/* The original's slow-consumer rule for Lua subscriptions (§7.1): log,
 * drop what was queued, subscribe again. Lost messages are not replayed.
 * host->lock held: the new subscription is in place before the poller
 * can see it. */
static void resubscribe_locked(rift_plugin_host *h, rift_lua_binding *b) {
    rift_log(RIFT_LOG_WARN,
             "messaging Lua subscription %s exceeded its queue; dropped "
             "pending messages and resubscribing",
             b->pattern);
    rift_sub_options o = {
        .queue = b->queue,
        .queue_len = b->queue != NULL ? strlen(b->queue) : 0,
        .notifier = h->notifier,
        .user_data = b,
    };
    rift_error err;
    if (b->sub != NULL) {
        rift_sub_close(b->sub);
        b->sub = NULL;
    }
    if (rift_broker_subscribe(h->broker, b->pattern, strlen(b->pattern), &o,
                              &b->sub, &err) != 0) {
        b->sub = NULL;
        rift_log(RIFT_LOG_ERROR, "messaging Lua subscription %s: %s",
                 b->pattern, err.text);
    }
}

void rift_plugin_host_resubscribe(rift_plugin_host *h, rift_lua_binding *b) {
    pthread_mutex_lock(&h->lock);
    resubscribe_locked(h, b);
    pthread_mutex_unlock(&h->lock);
}

/* Subscribes under host->lock, so b->sub is set before the poller can
 * map the new subscription to |b|. */
int rift_plugin_host_subscribe(rift_plugin_host *h, rift_lua_binding *b,
                               rift_error *err) {
    rift_sub_options o = {
        .queue = b->queue,
        .queue_len = b->queue != NULL ? strlen(b->queue) : 0,
        .notifier = h->notifier,
        .user_data = b,
    };
    pthread_mutex_lock(&h->lock);
    int rc = rift_broker_subscribe(h->broker, b->pattern, strlen(b->pattern),
                                   &o, &b->sub, err);
    if (rc != 0) {
        b->sub = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

bool rift_plugin_host_add_compat_target(rift_plugin_host *h, rift_lua_vm *vm) {
    pthread_mutex_lock(&h->lock);
    bool ok = h->n_compat > 0;
    rift_lua_plugin *p = vm->plugin;
    if (ok && p->vm == vm && p->cq == NULL) {
        p->cq = rift_calloc(h->mem, h->sub_capacity, sizeof(*p->cq));
        p->cq_cap = p->cq != NULL ? h->sub_capacity : 0;
        p->cq_head = p->cq_len = 0;
    }
    if (ok && p->vm == vm && p->cq != NULL) {
        p->compat_target = true;
    }
    pthread_mutex_unlock(&h->lock);
    return ok;
}

/* ---- Dispatcher ---- */

/* Hands one message of a compatibility subscription to every state with
 * message handlers (host->lock held). A full queue is the plugin's slow
 * consumer: its pending messages are dropped, as the original drops a
 * slow subscription's queue. */
static void compat_deliver(rift_plugin_host *h, rift_lua_binding *cb,
                           rift_msg *msg) {
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
        if (!p->compat_target || p->vm == NULL || p->cq_cap == 0) {
            continue;
        }
        if (p->cq_len == p->cq_cap) {
            size_t n = compat_flush(p);
            atomic_fetch_add_explicit(&p->dropped, n, memory_order_relaxed);
            cb->dropped += n;
            rift_log(RIFT_LOG_WARN,
                     "messaging Lua subscription %s exceeded its queue; "
                     "dropped pending messages and resubscribing",
                     cb->pattern);
        }
        p->cq[(p->cq_head + p->cq_len) % p->cq_cap] = rift_msg_ref(msg);
        p->cq_len++;
        schedule(h, p);
    }
}

/* Drains up to a quantum of one compatibility subscription (host->lock
 * held). Returns true when it may hold more. */
static bool compat_drain(rift_plugin_host *h, rift_lua_binding *b) {
    for (int i = 0; i < RIFT_LUA_QUANTUM; i++) {
        if (b->sub == NULL) {
            return false;
        }
        rift_msg *msg;
        int rc = rift_sub_recv(b->sub, 0, &msg, NULL);
        if (rc == RIFT_ERR_AGAIN || rc == RIFT_ERR_CLOSED) {
            return false;
        }
        if (rc == RIFT_ERR_SLOW_CONSUMER) {
            /* The broker discarded an unknown number: count one for every
             * state that would have received them. */
            for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
                if (p->compat_target) {
                    atomic_fetch_add_explicit(&p->dropped, 1,
                                              memory_order_relaxed);
                }
            }
            resubscribe_locked(h, b);
            continue;
        }
        if (rc != 0) {
            return false;
        }
        compat_deliver(h, b, msg);
        rift_msg_unref(msg);
    }
    return true;
}

static void on_ready(rift_plugin_host *h, rift_sub *sub) {
    rift_lua_binding *b = rift_sub_user_data(sub);
    if (b == NULL || b->closed || b->on_ready) {
        return;
    }
    if (b->kind == RIFT_LUA_BIND_COMPAT) {
        b->on_ready = true;
        return;
    }
    ready_push(b->plugin, b);
    schedule(h, b->plugin);
}

/* Moves |t| (taken off the heap) to its plugin's due list and schedules
 * the plugin (host->lock held). */
static void make_due(rift_plugin_host *h, rift_lua_timer *t) {
    rift_lua_plugin *p = t->plugin;
    if (!t->on_due) {
        t->on_due = true;
        t->due_next = NULL;
        if (p->due_tail != NULL) {
            p->due_tail->due_next = t;
        } else {
            p->due_head = t;
        }
        p->due_tail = t;
    }
    schedule(h, p);
}

static void fire_timers(rift_plugin_host *h, rift_tstamp now) {
    while (h->heap_len > 0 && h->heap[0]->due <= now) {
        rift_lua_timer *t = h->heap[0];
        heap_remove(h, t);
        make_due(h, t);
    }
}

void rift_plugin_host_timer_now(rift_plugin_host *h, rift_lua_timer *t) {
    pthread_mutex_lock(&h->lock);
    if (t->heap_idx != SIZE_MAX) {
        heap_remove(h, t);
        make_due(h, t);
    }
    pthread_mutex_unlock(&h->lock);
}

/*
 * One polling turn (host->lock held, the caller is the poller): due timers
 * and compatibility queues, then, unless work is already waiting, sleep in
 * ppoll until a subscription gets ready, the next timer is due or another
 * thread wakes us; then map what became ready to plugins and schedule
 * them.
 */
static void poll_turn(rift_plugin_host *h) {
    rift_sub *subs[POLL_BATCH];
    struct pollfd fds[2];
    nfds_t nfds = 0;
    fds[nfds].fd = h->wake_fd;
    fds[nfds++].events = POLLIN;
    if (h->notifier != NULL) {
        fds[nfds].fd = rift_notifier_fd(h->notifier);
        fds[nfds++].events = POLLIN;
    }
    rift_tstamp now = rift_now_ns();
    fire_timers(h, now);
    bool more = false;
    for (size_t i = 0; i < h->n_compat; i++) {
        rift_lua_binding *b = h->compat[i];
        if (b->on_ready) {
            b->on_ready = compat_drain(h, b);
            more = more || b->on_ready;
        }
    }
    struct timespec ts, *tsp = NULL;
    if (more || h->rq_head != NULL || h->stopping) {
        ts.tv_sec = 0;
        ts.tv_nsec = 0;
        tsp = &ts;
    } else if (h->heap_len > 0) {
        uint64_t wait = h->heap[0]->due > now ? h->heap[0]->due - now : 0;
        ts.tv_sec = (time_t)(wait / 1000000000u);
        ts.tv_nsec = (long)(wait % 1000000000u);
        tsp = &ts;
    }
    h->in_poll = true;
    pthread_mutex_unlock(&h->lock);
    (void)ppoll(fds, nfds, tsp, NULL);
    if (fds[0].revents & POLLIN) {
        eventfd_t v;
        (void)eventfd_read(h->wake_fd, &v);
    }
    pthread_mutex_lock(&h->lock);
    h->in_poll = false;
    h->poll_woken = false;
    if (h->notifier != NULL) {
        /* Mapping a subscription to its binding happens under the lock
         * that every close takes, so none of these is freed yet. */
        size_t n;
        do {
            n = rift_notifier_poll(h->notifier, subs, POLL_BATCH);
            for (size_t i = 0; i < n; i++) {
                on_ready(h, subs[i]);
            }
        } while (n == POLL_BATCH);
    }
    fire_timers(h, rift_now_ns());
}

/* ---- Workers ---- */

/*
 * Leader/follower: an idle worker with nothing queued becomes the poller;
 * when its turn yields work it runs the first plugin itself (no hand-over
 * to another thread on the request/reply path) and signals an idle worker
 * to take over the polling.
 */
static void *worker_main(void *arg) {
    rift_plugin_host *h = arg;
    bool ran = false;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        /* Poll when idle, and also between two runs when nobody else
         * polls: a plugin that always has work must not starve the
         * others' readiness and timers (the turn does not sleep then). */
        if (!h->polling && (h->rq_head == NULL || ran)) {
            h->polling = true;
            poll_turn(h);
            h->polling = false;
            ran = false;
            if (h->rq_head != NULL) {
                pthread_cond_signal(&h->work_cv);
            }
            continue;
        }
        if (h->rq_head != NULL) {
            rift_lua_plugin *p = h->rq_head;
            unqueue(h, p);
            p->sched = RIFT_LUA_ACTIVE;
            pthread_mutex_unlock(&h->lock);
            rift_lua_plugin_run(p);
            pthread_mutex_lock(&h->lock);
            ran = true;
            p->sched = RIFT_LUA_IDLE;
            if (p->held > 0) {
                pthread_cond_broadcast(&h->idle_cv);
            } else if (has_work(p)) {
                /* This thread comes back for it: no wake-up needed. */
                enqueue(h, p);
            }
            continue;
        }
        ran = false;
        pthread_cond_wait(&h->work_cv, &h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* ---- Lifecycle ---- */

void rift_plugin_host_settings_default(rift_plugin_host_settings *s) {
    memset(s, 0, sizeof(*s));
}

static void stop_threads(rift_plugin_host *h) {
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_broadcast(&h->work_cv);
    pthread_mutex_unlock(&h->lock);
    wake_poller(h);
    for (size_t i = 0; i < h->n_workers; i++) {
        pthread_join(h->workers[i], NULL);
    }
    h->n_workers = 0;
}

int rift_plugin_host_new(rift_plugin_host **phost, rift_broker *broker,
                         const rift_plugin_host_settings *settings,
                         rift_error *err) {
    rift_plugin_host_settings defaults;
    if (settings == NULL) {
        rift_plugin_host_settings_default(&defaults);
        settings = &defaults;
    }
    const rift_mem *mem = settings->mem;
    rift_plugin_host *h = rift_calloc(mem, 1, sizeof(*h));
    if (h == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    h->mem = mem;
    h->broker = broker;
    h->settings = *settings;
    if (h->settings.max_failures == 0) {
        h->settings.max_failures = RIFT_PLUGIN_DEFAULT_MAX_FAILURES;
    }
    size_t workers = settings->workers;
    if (workers == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        workers = n > 0 ? (size_t)n : 1;
    }
    h->sub_capacity =
        broker != NULL ? rift_broker_get_settings(broker)->subscription_capacity
                       : 1024;
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->apply_lock, NULL);
    pthread_cond_init(&h->work_cv, NULL);
    pthread_cond_init(&h->idle_cv, NULL);
    h->wake_fd = -1;
    int rc;
    h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->wake_fd < 0) {
        rc = rift_error_set(err, -errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    if (broker != NULL &&
        (rc = rift_notifier_new(&h->notifier, mem, NULL)) != 0) {
        rift_error_set(err, rc, "notifier: %s", rift_strerror(rc));
        goto fail;
    }
    h->workers = rift_calloc(mem, workers, sizeof(*h->workers));
    if (h->workers == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < workers; i++) {
        if ((rc = pthread_create(&h->workers[i], NULL, worker_main, h)) != 0) {
            rc = rift_error_set(err, -rc, "pthread_create: %s", strerror(rc));
            goto fail;
        }
        h->n_workers++;
    }
    *phost = h;
    return 0;
fail:
    stop_threads(h);
    rift_notifier_del(h->notifier);
    if (h->wake_fd >= 0) {
        close(h->wake_fd);
    }
    rift_free(mem, h->workers);
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->apply_lock);
    pthread_cond_destroy(&h->work_cv);
    pthread_cond_destroy(&h->idle_cv);
    rift_free(mem, h);
    return rc;
}

void rift_plugin_host_del(rift_plugin_host *h) {
    if (h == NULL) {
        return;
    }
    stop_threads(h);
    /* The threads are gone: this thread owns every plugin now. */
    rift_plugin_host_remove_all(h);
    rift_notifier_del(h->notifier);
    close(h->wake_fd);
    rift_free(h->mem, h->workers);
    rift_free(h->mem, h->heap);
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->apply_lock);
    pthread_cond_destroy(&h->work_cv);
    pthread_cond_destroy(&h->idle_cv);
    rift_free(h->mem, h);
}
