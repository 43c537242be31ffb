/*
 * broker_internal.h — the broker's private structures, shared by msg.c, sub.c,
 * notifier.c, cache.c, broker.c and request.c (broker layer). Nothing here
 * is part of the public API.
 *
 * Locking, outermost first (a thread never takes them in another order):
 *   1. broker->lock (drlock.h): readers = publishers routing a message and
 *      statistics; writers = (un)subscribe, slow-consumer removal,
 *      broker_del. It guards the trie, the queue-group table, the registry
 *      links of every subscription and the lifetime of match-cache entries
 *      and of subscriptions themselves (a subscription is freed only after
 *      a writer unregistered it, so a reader never sees a dangling one).
 *   2. broker->cache_lock: fills of the match cache (miss path only).
 *   3. qgroup->lock (spin): a queue group's cursor and members' stamps.
 *   4. sub->lock (spin): a subscription's ring, state, waiter and fd.
 *   5. notifier->lock: a notifier's ready list.
 */
#ifndef RIFT_BROKER_BROKER_INTERNAL_H
#define RIFT_BROKER_BROKER_INTERNAL_H

#include "rift/broker.h"

#include "broker/broker_face.h"
#include "broker/drlock.h"
#include "common/pmap.h"
#include "broker/spin.h"
#include "broker/sublist.h"
#include "common/common.h"

#include <pthread.h>
#include <stdatomic.h>

/* Largest per-subscription queue capacity (ring indexes fit in 32 bits). */
#define RIFT_BROKER_MAX_CAPACITY ((size_t)1 << 30)

/* Match-cache slots (a power of two); see cache.c. */
#define RIFT_CACHE_SLOTS 4096
/* Evicted cache entries waiting for a writer before one is forced. */
#define RIFT_CACHE_GC_MAX 1024

/* ---- Messages ---- */

/* 40 bytes in front of the names: a backlog of small messages is mostly
 * these blocks, and every byte saved is memory a burst need not fault in.
 * The reply (when reply_len > 0) follows the subject; then either the
 * inline payload or, for an external one, its release record (msg.c). */
struct rift_msg {
    atomic_size_t refs;
    const rift_mem *mem;
    const uint8_t *payload;
    size_t payload_len;
    uint32_t subject_len;
    uint32_t reply_len : 30;    /* 0 for none */
    uint32_t external : 1;      /* payload owned elsewhere, released on free */
    uint32_t no_responders : 1; /* a backbone's no-responders status */
    uint32_t ext_len; /* front-end block before the payload (msg_ext.h) */
    char subject[];   /* NUL-terminated */
};

/* The front-end block of a message still to be built: two pieces, kept
 * in this order before the payload (msg_ext.h). */
typedef struct rift_msg_block {
    const uint8_t *part[2];
    size_t len[2];
} rift_msg_block;

/* rift_msg_alloc_ext is rift_msg_alloc with |blk| (NULL: none) before the
 * payload. NULL on OOM or a block over 4 GiB. */
rift_msg *rift_msg_alloc_ext(const rift_mem *mem, size_t refs,
                             const char *subject, size_t subject_len,
                             const char *reply, size_t reply_len,
                             const rift_msg_block *blk, const uint8_t *payload,
                             size_t payload_len);

/* rift_msg_unref_n drops |n| references at once. */
void rift_msg_unref_n(rift_msg *msg, size_t n);

/* ---- Subscriptions ---- */

enum {
    SUB_OPEN = 0,
    SUB_SLOW = 1,
    SUB_CLOSED = 2
};

/* Outcome of rift_sub_enqueue. */
enum {
    ENQ_OK = 0,
    ENQ_SLOW = 1 /* just became slow */,
    ENQ_SKIP = 2
};

typedef struct rift_qgroup rift_qgroup;

struct rift_sub {
    /* Registry part: written under broker->lock (write), read by
     * publishers under broker->lock (read). */
    rift_sl_entry entry;
    rift_broker *broker; /* holds a reference on the broker struct */
    rift_qgroup *group;
    rift_sub *all_prev, *all_next;
    bool registered;
    uint64_t stamp; /* last queue delivery; guarded by group->lock */

    /* Queue part: guarded by lock. state and count are also read without
     * the lock (publisher pre-checks, spinning receivers, pending()). */
    rift_spin lock;
    atomic_uint wseq; /* futex word a sleeping receiver waits on */
    atomic_int state;
    atomic_size_t count;
    rift_msg **ring;
    size_t ring_size; /* a power of two, or 0 before the first message */
    size_t head;
    size_t cap;
    bool waiting;  /* a receiver sleeps (or is about to) on wseq */
    bool reported; /* on the notifier's list since the last AGAIN */
    bool efd_set;  /* efd holds a non-zero count */
    int efd;
    uint64_t msgs_out, bytes_out;

    /* Notifier links: guarded by notifier->lock. */
    rift_notifier *notifier;
    rift_sub *ready_prev, *ready_next;
    bool on_ready;

    void *user_data;
    const rift_mem *mem;
    size_t pattern_len;
    char pattern[];
};

/*
 * rift_sub_enqueue tries to queue |msg| (whose reference the caller has
 * already counted for this subscription). Never blocks beyond sub->lock.
 * Returns ENQ_OK; ENQ_SLOW when the queue was full and the subscription
 * has just been flagged slow; ENQ_SKIP when it was already slow or closed.
 */
int rift_sub_enqueue(rift_sub *sub, rift_msg *msg);

/*
 * rift_sub_shut marks |sub| closed (if open or slow), discards its queue
 * and wakes its receiver, fd and notifier. Used by broker_del.
 */
void rift_sub_shut(rift_sub *sub);

/* Releases the ring and its messages (sub->lock not held, no publisher). */
void rift_sub_drain_ring(rift_sub *sub);

/* ---- Notifier ---- */

struct rift_notifier {
    const rift_mem *mem;
    int efd;
    pthread_mutex_t lock;
    rift_sub *head, *tail;
    bool signalled;
    /* rift_notifier_set_owner: pushes from this thread skip the eventfd. */
    bool has_owner;
    pthread_t owner;
};

/* rift_notifier_push appends |sub| to the ready list (sub->lock held). */
void rift_notifier_push(rift_notifier *n, rift_sub *sub);

/* rift_notifier_forget removes |sub| from the ready list if it is there. */
void rift_notifier_forget(rift_notifier *n, rift_sub *sub);

/* ---- Queue groups ---- */

struct rift_qgroup {
    uint64_t hash;
    rift_spin lock;
    uint64_t cursor;
    size_t nmembers; /* guarded by broker->lock */
    size_t name_len;
    char name[];
};

/* ---- Match cache ---- */

/* The members of one queue group that match a subject, candidate order. */
typedef struct rift_gmatch {
    rift_qgroup *group;
    size_t n;
    rift_sub **members;
} rift_gmatch;

/*
 * A match result: every subscription a literal subject reaches, split into
 * plain subscribers and queue groups, both in candidate order. Immutable
 * once published in a cache slot.
 */
typedef struct rift_match {
    uint64_t hash;
    uint64_t gen;
    size_t subject_len;
    size_t nplain;
    size_t ngroups;
    rift_sub **plain;
    rift_gmatch *groups;
    struct rift_match *gc_next;
    char *subject;
    size_t size; /* bytes of the whole block */
} rift_match;

/* Stack space for a result routed without being cached (see cache.c). */
#define RIFT_MATCH_STACK 512

/* ---- Broker ---- */

struct rift_broker {
    rift_broker_settings settings;
    const rift_mem *mem;
    uint64_t seed;
    atomic_size_t refs; /* the owner plus one per open rift_sub */

    rift_drlock lock;
    bool dead;
    rift_sublist sl;
    rift_pmap groups;
    rift_sub *all_head; /* every registered subscription */
    uint64_t next_seq;
    atomic_size_t nsubs;

    /* Match cache (cache.c). Slots are read without cache_lock under
     * broker->lock (read); gen changes under broker->lock (write). */
    _Atomic(rift_match *) *cache;
    atomic_uint_fast64_t *last_miss; /* per slot: hash of the last miss */
    uint64_t gen;
    pthread_mutex_t cache_lock;
    rift_match *gc; /* evicted entries, freed by the next writer */
    size_t ngc;

    /* Totals of subscriptions already gone, plus slow transitions.
     * Publish counters live in the lock's per-thread slots. */
    uint64_t gone_msgs_out, gone_bytes_out;
    atomic_uint_fast64_t slow_total;

    /* The backbone (rift_broker_set_bridge); changed under the write
     * lock, read under the read lock. */
    const rift_broker_bridge *bridge;
};

/* cache.c */
int rift_cache_init(rift_broker *b);
void rift_cache_free(rift_broker *b);
uint64_t rift_cache_hash(const rift_broker *b, const char *s, size_t len);
rift_match *rift_cache_lookup(const rift_broker *b, uint64_t hash,
                              const char *subject, size_t len);
/*
 * rift_cache_fill computes the match for a validated |subject| under the
 * read lock and, if admitted, caches it. *pm is NULL when nothing can match
 * (the allocation-free path). A result not cached lives in |buf| (|bufsize|
 * bytes, the caller's stack) or, when larger, on the heap with *temp set:
 * the caller frees it after routing. *reclaim is set when the caller
 * should free the cache's garbage under the write lock afterwards.
 */
int rift_cache_fill(rift_broker *b, uint64_t hash, const char *subject,
                    size_t len, void *buf, size_t bufsize, rift_match **pm,
                    bool *temp, bool *reclaim);
/* Under the write lock: forget what a change to |pattern| affects. */
void rift_cache_invalidate(rift_broker *b, const char *pattern, size_t len,
                           bool wildcard);
/* Under the write lock: free evicted entries. */
void rift_cache_collect(rift_broker *b);

/* broker.c */
void rift_broker_unregister(rift_broker *b, rift_sub *sub);
void rift_broker_unref(rift_broker *b);

#endif /* RIFT_BROKER_BROKER_INTERNAL_H */
