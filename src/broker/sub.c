/*
 * sub.c — a subscription's bounded queue (broker layer): enqueue from any
 * publisher thread, receive with poll / timeout / forever, readiness
 * through a lazily created eventfd or a shared notifier, slow-consumer
 * disconnection (docs/protocol-v1.md §1.7).
 *
 * The queue is a ring of message pointers guarded by sub->lock. It starts
 * empty and doubles on demand up to the subscription's capacity, so a
 * million idle subscriptions cost no ring memory; a ring of 2 MiB or more
 * (a backlog of 262,144 messages) is mapped as huge pages. Publishers
 * wake the
 * receiver only on the empty-to-non-empty transition (or when the
 * subscription turns slow or closed), so a busy queue costs no syscalls.
 */
#include "broker/broker_internal.h"

#include "common/slab.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* How long a receiver that is about to sleep polls the queue first (see
 * spin()), and how much of that is busy polling. Most in-process replies
 * arrive within a few microseconds, while a futex sleep and cross-core
 * wake-up costs tens of microseconds on a loaded VM. The busy part is kept
 * short because on a two-core machine the peer often shares our core and
 * cannot run until we yield; measured on the project's 2-vCPU VM, 300 ns
 * balanced the same-core and cross-core request round trips (1 us made
 * the same-core case 1.5 us slower, 0 the cross-core case noisier). The
 * whole poll is bounded so an idle receiver does not burn a core. */
#define RECV_SPIN_NS 20000
#define RECV_BUSY_NS 300

/* First ring allocation, in slots. */
#define RING_MIN 8

/* Rings of at least this many slots, of a broker on the C allocator, are
 * mapped as transparent huge pages (common/slab.h): a subscriber's backlog of a
 * million messages then faults in 4 huge pages, not 2,048 of 4 KiB, on
 * every burst (each subscription grows its own ring). A power of two, so
 * a ring's size alone says how it was allocated. */
#define RING_HUGE_SLOTS (RIFT_SLAB_HUGE / sizeof(rift_msg *))

static bool ring_huge(const rift_mem *mem, size_t slots) {
    return mem == NULL && slots >= RING_HUGE_SLOTS;
}

static void ring_free(const rift_mem *mem, rift_msg **ring, size_t slots) {
    if (ring_huge(mem, slots)) {
        rift_slab_unmap_huge(ring, slots * sizeof(*ring));
    } else {
        rift_free(mem, ring);
    }
}

static const char text_slow[] =
    "subscriber exceeded its bounded queue and was disconnected";
static const char text_closed[] = "subscription closed";
static const char text_again[] = "operation would block";

/* set_text fills |err| with a static text without printf: the AGAIN path
 * is hot for event loops draining a subscription. */
static int set_text(rift_error *err, int code, const char *text, size_t len) {
    if (err != NULL) {
        err->code = code;
        memcpy(err->text, text, len + 1);
    }
    return code;
}

/* ---- Readiness ---- */

/* wake tells whoever waits on |sub| that it has something to report.
 * Called with sub->lock held; returns true when the caller must wake the
 * sleeping receiver (with rift_futex_wake, after dropping the lock, so the
 * syscall does not lengthen the critical section). The eventfd and the
 * notifier are signalled under the lock so their state cannot race a
 * receiver draining the queue. */
static bool wake(rift_sub *sub) {
    bool sleeper = sub->waiting;
    if (sleeper) {
        atomic_fetch_add_explicit(&sub->wseq, 1, memory_order_relaxed);
    }
    if (sub->efd >= 0 && !sub->efd_set) {
        /* Cannot fail short of counter overflow, which one write per
         * transition never reaches. */
        (void)eventfd_write(sub->efd, 1);
        sub->efd_set = true;
    }
    if (sub->notifier != NULL && !sub->reported) {
        sub->reported = true;
        rift_notifier_push(sub->notifier, sub);
    }
    return sleeper;
}

static void fd_reset(rift_sub *sub) {
    eventfd_t v;
    (void)eventfd_read(sub->efd, &v);
    sub->efd_set = false;
}

int rift_sub_fd(rift_sub *sub) {
    int rc;
    rift_spin_lock(&sub->lock);
    if (sub->efd < 0) {
        sub->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (sub->efd < 0) {
            rc = -errno;
            goto out;
        }
        if (atomic_load_explicit(&sub->count, memory_order_relaxed) > 0 ||
            atomic_load_explicit(&sub->state, memory_order_relaxed) !=
                SUB_OPEN) {
            (void)eventfd_write(sub->efd, 1);
            sub->efd_set = true;
        }
    }
    rc = sub->efd;
out:
    rift_spin_unlock(&sub->lock);
    return rc;
}

size_t rift_sub_pending(const rift_sub *sub) {
    return atomic_load_explicit((atomic_size_t *)&sub->count,
                                memory_order_relaxed);
}

void *rift_sub_user_data(const rift_sub *sub) {
    return sub->user_data;
}

/* ---- Enqueue (publisher side) ---- */

static int ring_grow(rift_sub *sub) {
    size_t limit = 1;
    while (limit < sub->cap) {
        limit <<= 1;
    }
    size_t size = sub->ring_size ? sub->ring_size * 2 : RING_MIN;
    if (size > limit) {
        size = limit;
    }
    /* Grown in place where the allocator can (a large ring is remapped,
     * not copied into fresh pages that each fault in): the slots keep
     * their positions, and those that wrapped round to the front move to
     * just past the old end. The ring is full when it grows. */
    size_t old = sub->ring_size;
    rift_msg **ring;
    if (ring_huge(sub->mem, size)) {
        ring = rift_slab_map_huge(size * sizeof(*ring));
        if (ring == NULL) {
            return RIFT_ERR_NOMEM;
        }
        memcpy(ring, sub->ring, old * sizeof(*ring));
        ring_free(sub->mem, sub->ring, old);
    } else {
        ring = rift_realloc(sub->mem, sub->ring, size * sizeof(*ring));
        if (ring == NULL) {
            return RIFT_ERR_NOMEM;
        }
    }
    if (sub->head > 0) {
        memcpy(ring + old, ring, sub->head * sizeof(*ring));
    }
    sub->ring = ring;
    sub->ring_size = size;
    return 0;
}

int rift_sub_enqueue(rift_sub *sub, rift_msg *msg) {
    bool sleeper = false;
    int rc = ENQ_OK;
    rift_spin_lock(&sub->lock);
    if (atomic_load_explicit(&sub->state, memory_order_relaxed) != SUB_OPEN) {
        rift_spin_unlock(&sub->lock);
        return ENQ_SKIP;
    }
    size_t n = atomic_load_explicit(&sub->count, memory_order_relaxed);
    /* A ring that cannot grow for lack of memory is treated as full: the
     * subscriber is disconnected rather than the publisher blocked. */
    if (n >= sub->cap || (n == sub->ring_size && ring_grow(sub) != 0)) {
        atomic_store_explicit(&sub->state, SUB_SLOW, memory_order_relaxed);
        sleeper = wake(sub);
        rc = ENQ_SLOW;
    } else {
        sub->ring[(sub->head + n) & (sub->ring_size - 1)] = msg;
        atomic_store_explicit(&sub->count, n + 1, memory_order_relaxed);
        sub->msgs_out++;
        sub->bytes_out += msg->payload_len;
        if (n == 0) {
            sleeper = wake(sub);
        }
    }
    rift_spin_unlock(&sub->lock);
    /* The caller holds the broker's read lock, so |sub| stays allocated
     * after the unlock. */
    if (RIFT_UNLIKELY(sleeper)) {
        rift_futex_wake(&sub->wseq);
    }
    return rc;
}

/* ---- Receive (consumer side) ---- */

/* take_ring detaches the queued messages (sub->lock held). */
static void take_ring(rift_sub *sub, rift_msg ***pring, size_t *psize,
                      size_t *phead, size_t *pn) {
    *pring = sub->ring;
    *psize = sub->ring_size;
    *phead = sub->head;
    *pn = atomic_load_explicit(&sub->count, memory_order_relaxed);
    sub->ring = NULL;
    sub->ring_size = 0;
    sub->head = 0;
    atomic_store_explicit(&sub->count, 0, memory_order_relaxed);
}

static void drop_ring(const rift_mem *mem, rift_msg **ring, size_t size,
                      size_t head, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rift_msg_unref(ring[(head + i) & (size - 1)]);
    }
    ring_free(mem, ring, size);
}

void rift_sub_drain_ring(rift_sub *sub) {
    rift_msg **ring;
    size_t size, head, n;
    take_ring(sub, &ring, &size, &head, &n);
    drop_ring(sub->mem, ring, size, head, n);
}

void rift_sub_shut(rift_sub *sub) {
    rift_msg **ring = NULL;
    size_t size = 0, head = 0, n = 0;
    bool sleeper = false;
    rift_spin_lock(&sub->lock);
    if (atomic_load_explicit(&sub->state, memory_order_relaxed) != SUB_CLOSED) {
        atomic_store_explicit(&sub->state, SUB_CLOSED, memory_order_relaxed);
        take_ring(sub, &ring, &size, &head, &n);
        sleeper = wake(sub);
    }
    rift_spin_unlock(&sub->lock);
    if (sleeper) {
        rift_futex_wake(&sub->wseq);
    }
    drop_ring(sub->mem, ring, size, head, n);
}

/* went_slow closes a slow subscription on its consumer's behalf: the
 * queue is discarded and the subscription unregistered (§1.7). Called
 * with sub->lock held; returns with it released. */
static int went_slow(rift_sub *sub, rift_error *err) {
    rift_msg **ring;
    size_t size, head, n;
    atomic_store_explicit(&sub->state, SUB_CLOSED, memory_order_relaxed);
    take_ring(sub, &ring, &size, &head, &n);
    rift_spin_unlock(&sub->lock);
    drop_ring(sub->mem, ring, size, head, n);
    rift_broker_unregister(sub->broker, sub);
    return set_text(err, RIFT_ERR_SLOW_CONSUMER, text_slow,
                    sizeof(text_slow) - 1);
}

static bool ready(rift_sub *sub) {
    return atomic_load_explicit(&sub->count, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&sub->state, memory_order_relaxed) != SUB_OPEN;
}

/*
 * spin polls the queue before the receiver sleeps. First a short busy
 * phase, which catches a reply from a peer running on another core within
 * a microsecond or two; then a phase that yields the CPU between polls,
 * so that a peer which shares this core (the usual case on a loaded
 * two-core machine) gets to run and answer without a futex round trip.
 */
static void spin(rift_sub *sub, rift_tstamp now, rift_tstamp until) {
    rift_tstamp busy_until = RIFT_MIN(now + RECV_BUSY_NS, until);
    for (unsigned i = 1;; i++) {
        if (ready(sub)) {
            return;
        }
        rift_cpu_relax();
        if ((i & 15) == 0 && rift_now_ns() >= busy_until) {
            break;
        }
    }
    while (!ready(sub) && rift_now_ns() < until) {
        sched_yield();
    }
}

/* wait_until sleeps until a publisher signals or |deadline| passes
 * (sub->lock held on entry and on return). */
static void wait_until(rift_sub *sub, rift_tstamp now, rift_tstamp deadline) {
    sub->waiting = true;
    unsigned seq = atomic_load_explicit(&sub->wseq, memory_order_relaxed);
    rift_spin_unlock(&sub->lock);
    rift_futex_wait(&sub->wseq, seq,
                    deadline == UINT64_MAX ? -1 : (int64_t)(deadline - now));
    rift_spin_lock(&sub->lock);
    sub->waiting = false;
}

/*
 * take moves up to |max| queued messages to |out| under one lock
 * acquisition, waiting as rift_sub_recv describes. Returns the count, or
 * a negative error.
 */
static rift_ssize take(rift_sub *sub, int64_t timeout_ns, rift_msg **out,
                       size_t max, rift_error *err) {
    rift_tstamp deadline = 0;
    bool spun = false;
    rift_spin_lock(&sub->lock);
    for (;;) {
        int state = atomic_load_explicit(&sub->state, memory_order_relaxed);
        if (state == SUB_SLOW) {
            return went_slow(sub, err);
        }
        if (state == SUB_CLOSED) {
            rift_spin_unlock(&sub->lock);
            return set_text(err, RIFT_ERR_CLOSED, text_closed,
                            sizeof(text_closed) - 1);
        }
        size_t n = atomic_load_explicit(&sub->count, memory_order_relaxed);
        if (n > 0) {
            size_t k = RIFT_MIN(n, max), mask = sub->ring_size - 1;
            for (size_t i = 0; i < k; i++) {
                out[i] = sub->ring[(sub->head + i) & mask];
            }
            sub->head = (sub->head + k) & mask;
            atomic_store_explicit(&sub->count, n - k, memory_order_relaxed);
            if (n == k) {
                /* Drained: the next message is a fresh transition worth
                 * reporting, and the fd must stop being readable. */
                sub->reported = false;
                if (sub->efd_set) {
                    fd_reset(sub);
                }
            }
            rift_spin_unlock(&sub->lock);
            return (rift_ssize)k;
        }
        rift_tstamp now = timeout_ns != 0 ? rift_now_ns() : 0;
        if (deadline == 0 && timeout_ns != 0) {
            deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
        }
        if (timeout_ns == 0 || now >= deadline) {
            sub->reported = false;
            rift_spin_unlock(&sub->lock);
            return set_text(err, RIFT_ERR_AGAIN, text_again,
                            sizeof(text_again) - 1);
        }
        if (!spun) {
            spun = true;
            rift_spin_unlock(&sub->lock);
            spin(sub, now, RIFT_MIN(now + RECV_SPIN_NS, deadline));
            rift_spin_lock(&sub->lock);
            continue;
        }
        wait_until(sub, now, deadline);
    }
}

int rift_sub_recv(rift_sub *sub, int64_t timeout_ns, rift_msg **pmsg,
                  rift_error *err) {
    rift_ssize n = take(sub, timeout_ns, pmsg, 1, err);
    return n < 0 ? (int)n : 0;
}

rift_ssize rift_sub_recv_batch(rift_sub *sub, int64_t timeout_ns,
                               rift_msg **msgs, size_t max, rift_error *err) {
    if (max == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid argument: empty batch");
    }
    return take(sub, timeout_ns, msgs, max, err);
}

/* ---- Close ---- */

void rift_sub_close(rift_sub *sub) {
    if (sub == NULL) {
        return;
    }
    rift_broker *b = sub->broker;
    /* After this no publisher can reach the subscription: they only find
     * it through the registry, under the broker lock. */
    rift_broker_unregister(b, sub);
    if (sub->notifier != NULL) {
        rift_notifier_forget(sub->notifier, sub);
    }
    rift_sub_drain_ring(sub);
    if (sub->efd >= 0) {
        close(sub->efd);
    }
    rift_free(sub->mem, sub);
    rift_broker_unref(b);
}
