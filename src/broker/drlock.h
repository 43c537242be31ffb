/*
 * drlock.h — a distributed reader/writer lock for the broker's registry
 * (broker layer). Each thread that reads gets its own slot (found through a
 * one-entry thread-local cache), so a reader costs one atomic exchange on
 * a cache line no other thread writes, plus a plain store to unlock; any
 * number of publisher threads route without bouncing a shared line. The
 * slot also carries the thread's publish counters, single-writer, so the
 * statistics need no atomic read-modify-write either.
 *
 * Writers (subscribe, unsubscribe, slow-consumer removal) are serialised by
 * a mutex, raise the writer flag and wait for every busy slot to drain:
 * they cost O(reader threads) and are rare compared with publishes.
 * Readers that find the flag raised step back and block on the writers'
 * mutex, so writers are preferred and cannot starve.
 *
 * Correctness is the classic flag handshake: a reader sets its busy flag
 * then reads the writer flag; a writer sets the writer flag then reads
 * every busy flag; both sides use sequentially consistent operations, so
 * at least one of them sees the other. Data accesses are ordered by the
 * release/acquire pairs on the flags, which TSan understands.
 *
 * Past RIFT_DRLOCK_MAX_SLOTS threads (or when a slot cannot be allocated)
 * readers share one overflow slot with an atomic counter.
 */
#ifndef RIFT_BROKER_DRLOCK_H
#define RIFT_BROKER_DRLOCK_H

#include "common/common.h"

#include <pthread.h>
#include <stdatomic.h>

#define RIFT_DRLOCK_MAX_SLOTS 256

typedef struct rift_drlock_slot {
    atomic_uint busy; /* 1 while the owner reads (a count for overflow) */
    /* Publish counters, written by the owner only (atomic adds on the
     * overflow slot). */
    atomic_uint_fast64_t msgs_in;
    atomic_uint_fast64_t bytes_in;
    pthread_t owner;
    struct rift_drlock_slot *next; /* immutable once published */
    /* Padding keeps two slots' hot fields off one cache line whatever the
     * allocator's alignment. */
    char pad[64];
} rift_drlock_slot;

typedef struct rift_drlock {
    atomic_uint writer;
    pthread_mutex_t wlock;
    _Atomic(rift_drlock_slot *) slots; /* push-only list */
    size_t nslots;                     /* guarded by wlock */
    uint64_t id;                       /* never reused in a process */
    const rift_mem *mem;
    rift_drlock_slot overflow;
} rift_drlock;

typedef struct rift_drlock_tls {
    uint64_t id;
    rift_drlock_slot *slot;
} rift_drlock_tls;

extern _Thread_local rift_drlock_tls rift_drlock_cache
    __attribute__((tls_model("initial-exec")));

void rift_drlock_init(rift_drlock *l, const rift_mem *mem);
/* Frees the slots; no thread may use the lock any more. */
void rift_drlock_free(rift_drlock *l);

rift_drlock_slot *rift_drlock_slot_slow(rift_drlock *l);
rift_drlock_slot *rift_drlock_rdlock_slow(rift_drlock *l, rift_drlock_slot *s);

/* rift_drlock_rdlock enters a read section; pass the result to unlock. */
static inline rift_drlock_slot *rift_drlock_rdlock(rift_drlock *l) {
    rift_drlock_slot *s = RIFT_LIKELY(rift_drlock_cache.id == l->id)
                              ? rift_drlock_cache.slot
                              : rift_drlock_slot_slow(l);
    if (RIFT_LIKELY(s != &l->overflow)) {
        atomic_exchange_explicit(&s->busy, 1, memory_order_seq_cst);
        if (RIFT_LIKELY(
                atomic_load_explicit(&l->writer, memory_order_seq_cst) == 0)) {
            return s;
        }
    }
    return rift_drlock_rdlock_slow(l, s);
}

static inline void rift_drlock_rdunlock(rift_drlock *l, rift_drlock_slot *s) {
    if (RIFT_LIKELY(s != &l->overflow)) {
        atomic_store_explicit(&s->busy, 0, memory_order_release);
    } else {
        atomic_fetch_sub_explicit(&s->busy, 1, memory_order_release);
    }
}

/* rift_drlock_count adds one publication of |bytes| to the slot. */
static inline void rift_drlock_count(rift_drlock *l, rift_drlock_slot *s,
                                     uint64_t bytes) {
    if (RIFT_LIKELY(s != &l->overflow)) {
        atomic_store_explicit(
            &s->msgs_in,
            atomic_load_explicit(&s->msgs_in, memory_order_relaxed) + 1,
            memory_order_relaxed);
        atomic_store_explicit(
            &s->bytes_in,
            atomic_load_explicit(&s->bytes_in, memory_order_relaxed) + bytes,
            memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&s->msgs_in, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->bytes_in, bytes, memory_order_relaxed);
    }
}

/* rift_drlock_sum totals the publish counters of every slot. */
void rift_drlock_sum(rift_drlock *l, uint64_t *msgs, uint64_t *bytes);

void rift_drlock_wrlock(rift_drlock *l);
void rift_drlock_wrunlock(rift_drlock *l);

#endif /* RIFT_BROKER_DRLOCK_H */
