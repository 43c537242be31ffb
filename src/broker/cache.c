/*
 * cache.c — the match cache (broker layer): literal subject -> immutable
 * match result (plain subscribers and queue-group members in candidate
 * order), so a repeated publication costs one hash and one compare instead
 * of a trie walk.
 *
 * Shape: a direct-mapped table of RIFT_CACHE_SLOTS atomic pointers (bounded
 * size; a colliding subject replaces the entry, subject to the admission
 * rule in admit()). Publishers read
 * slots without any lock beyond the broker's read lock. Misses are filled
 * under cache_lock by whichever publisher missed; the entry it replaces
 * may still be in use by another publisher, so it goes on a garbage list
 * that the next writer (who holds the broker write lock, hence excludes
 * every reader) frees. A publisher that sees the list grow past
 * RIFT_CACHE_GC_MAX takes the write lock itself to free it, which bounds
 * memory under miss-heavy traffic with no subscription churn.
 *
 * Invalidation under the broker write lock: a literal pattern can only
 * affect the entry of that very subject, so (un)subscribing one frees at
 * most one slot (request inboxes churn at no cost to other entries); a
 * wildcard pattern bumps the generation counter, which stales every entry
 * at once in O(1). Stale entries are never dereferenced beyond their
 * header and are replaced on the next miss of their slot.
 */
#include "broker/broker_internal.h"

#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_MASK (RIFT_CACHE_SLOTS - 1)

static inline rift_sub *entry_sub(rift_sl_entry *e) {
    return (rift_sub *)((char *)e - offsetof(rift_sub, entry));
}

int rift_cache_init(rift_broker *b) {
    b->cache = rift_malloc(b->mem, RIFT_CACHE_SLOTS * sizeof(*b->cache));
    if (b->cache == NULL) {
        return RIFT_ERR_NOMEM;
    }
    b->last_miss =
        rift_malloc(b->mem, RIFT_CACHE_SLOTS * sizeof(*b->last_miss));
    if (b->last_miss == NULL) {
        rift_free(b->mem, b->cache);
        b->cache = NULL;
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < RIFT_CACHE_SLOTS; i++) {
        atomic_init(&b->cache[i], NULL);
        atomic_init(&b->last_miss[i], 0);
    }
    pthread_mutex_init(&b->cache_lock, NULL);
    b->gen = 1;
    b->gc = NULL;
    b->ngc = 0;
    return 0;
}

void rift_cache_collect(rift_broker *b) {
    while (b->gc != NULL) {
        rift_match *m = b->gc;
        b->gc = m->gc_next;
        rift_free(b->mem, m);
    }
    b->ngc = 0;
}

void rift_cache_free(rift_broker *b) {
    if (b->cache == NULL) {
        return;
    }
    for (size_t i = 0; i < RIFT_CACHE_SLOTS; i++) {
        rift_free(b->mem,
                  atomic_load_explicit(&b->cache[i], memory_order_relaxed));
    }
    rift_cache_collect(b);
    rift_free(b->mem, b->cache);
    rift_free(b->mem, b->last_miss);
    b->cache = NULL;
    b->last_miss = NULL;
    pthread_mutex_destroy(&b->cache_lock);
}

uint64_t rift_cache_hash(const rift_broker *b, const char *s, size_t len) {
    return rift_hash_bytes(s, len, b->seed ^ RIFT_HASH_K3);
}

rift_match *rift_cache_lookup(const rift_broker *b, uint64_t hash,
                              const char *subject, size_t len) {
    rift_match *m = atomic_load_explicit(&b->cache[hash & CACHE_MASK],
                                         memory_order_acquire);
    if (m != NULL && m->hash == hash && m->gen == b->gen &&
        m->subject_len == len && memcmp(m->subject, subject, len) == 0) {
        return m;
    }
    return NULL;
}

void rift_cache_invalidate(rift_broker *b, const char *pattern, size_t len,
                           bool wildcard) {
    if (wildcard) {
        b->gen++;
        return;
    }
    _Atomic(rift_match *) *slot =
        &b->cache[rift_cache_hash(b, pattern, len) & CACHE_MASK];
    rift_match *m = atomic_load_explicit(slot, memory_order_relaxed);
    if (m != NULL && m->subject_len == len &&
        memcmp(m->subject, pattern, len) == 0) {
        /* The write lock excludes every reader: free at once. */
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        rift_free(b->mem, m);
    }
}

/* ---- Building a result ---- */

typedef struct qcand {
    rift_qgroup *group;
    size_t index; /* candidate position: keeps candidate order in a group */
} qcand;

static int by_group(const void *a, const void *b) {
    const qcand *x = a, *y = b;
    if (x->group != y->group) {
        return (uintptr_t)x->group < (uintptr_t)y->group ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * build lays the result out in one block: header, group array, plain and
 * member arrays, subject. The block is |buf| when it fits in |bufsize|
 * bytes, else a heap allocation (*heap set). Queue candidates are sorted by
 * (group, candidate position), which keeps candidate order inside each
 * group; the order between groups is unspecified (§1.5).
 */
static rift_match *build(rift_broker *b, const rift_sl_vec *vec,
                         const char *subject, size_t len, void *buf,
                         size_t bufsize, bool *heap) {
    size_t nplain = 0, nqueue = 0;
    for (size_t i = 0; i < vec->len; i++) {
        if (entry_sub(vec->v[i])->group == NULL) {
            nplain++;
        } else {
            nqueue++;
        }
    }
    qcand qbuf[16];
    qcand *q = qbuf;
    size_t ngroups = 0;
    if (nqueue > RIFT_ARRAY_LEN(qbuf)) {
        q = rift_malloc(b->mem, nqueue * sizeof(*q));
        if (q == NULL) {
            return NULL;
        }
    }
    if (nqueue > 0) {
        size_t k = 0;
        for (size_t i = 0; i < vec->len; i++) {
            rift_qgroup *g = entry_sub(vec->v[i])->group;
            if (g != NULL) {
                q[k++] = (qcand){g, i};
            }
        }
        qsort(q, nqueue, sizeof(*q), by_group);
        for (size_t i = 0; i < nqueue; i++) {
            ngroups += i == 0 || q[i].group != q[i - 1].group;
        }
    }
    size_t size = sizeof(rift_match) + ngroups * sizeof(rift_gmatch) +
                  (nplain + nqueue) * sizeof(rift_sub *) + len + 1;
    rift_match *m = buf;
    *heap = size > bufsize;
    if (*heap && (m = rift_malloc(b->mem, size)) == NULL) {
        goto out;
    }
    char *p = (char *)(m + 1);
    m->groups = (rift_gmatch *)p;
    p += ngroups * sizeof(rift_gmatch);
    m->plain = (rift_sub **)p;
    rift_sub **members = m->plain + nplain;
    p += (nplain + nqueue) * sizeof(rift_sub *);
    m->subject = p;
    memcpy(m->subject, subject, len);
    m->subject[len] = '\0';
    m->subject_len = len;
    m->nplain = nplain;
    m->ngroups = ngroups;
    m->gc_next = NULL;
    m->size = size;

    size_t k = 0;
    for (size_t i = 0; i < vec->len; i++) {
        rift_sub *s = entry_sub(vec->v[i]);
        if (s->group == NULL) {
            m->plain[k++] = s;
        }
    }
    rift_gmatch *gm = m->groups - 1;
    for (size_t i = 0; i < nqueue; i++) {
        if (i == 0 || q[i].group != q[i - 1].group) {
            gm++;
            gm->group = q[i].group;
            gm->n = 0;
            gm->members = members + i;
        }
        gm->members[gm->n++] = entry_sub(vec->v[q[i].index]);
    }
out:
    if (q != qbuf) {
        rift_free(b->mem, q);
    }
    return m;
}

/*
 * admit decides whether a fresh result replaces what its slot holds. An
 * empty or stale slot always takes it; a live entry for another subject is
 * evicted only when this subject also missed the previous time the slot
 * missed. Traffic spread over more subjects than the cache holds then
 * stops churning entries (and the allocator): each miss routes from a
 * stack-built result instead, while a subject published repeatedly still
 * gets in.
 */
static bool admit(rift_broker *b, uint64_t hash) {
    size_t i = hash & CACHE_MASK;
    /* Acquire: another publisher may have just published this entry. */
    rift_match *cur = atomic_load_explicit(&b->cache[i], memory_order_acquire);
    if (cur == NULL || cur->gen != b->gen) {
        return true;
    }
    uint64_t last =
        atomic_exchange_explicit(&b->last_miss[i], hash, memory_order_relaxed);
    return last == hash;
}

int rift_cache_fill(rift_broker *b, uint64_t hash, const char *subject,
                    size_t len, void *buf, size_t bufsize, rift_match **pm,
                    bool *temp, bool *reclaim) {
    rift_sl_vec vec;
    *temp = false;
    *pm = NULL;
    rift_sl_vec_init(&vec, b->mem);
    rift_ssize rc = rift_sublist_match(&b->sl, subject, len, &vec);
    if (rc < 0) {
        rift_sl_vec_free(&vec);
        return (int)rc;
    }
    if (vec.len == 0 && b->sl.nwild == 0) {
        /* Nothing can match and nothing will be cached: the fast path
         * without allocation (§1.5). A literal subscription to this
         * subject would not need to invalidate anything either. */
        return 0;
    }
    bool heap;
    bool cache = admit(b, hash);
    /* A result that goes into the cache is built on the heap directly. */
    rift_match *m =
        build(b, &vec, subject, len, buf, cache ? 0 : bufsize, &heap);
    rift_sl_vec_free(&vec);
    if (m == NULL) {
        return RIFT_ERR_NOMEM;
    }
    m->hash = hash;
    m->gen = b->gen;
    *pm = m;
    if (!cache) {
        *temp = heap;
        return 0;
    }

    _Atomic(rift_match *) *slot = &b->cache[hash & CACHE_MASK];
    pthread_mutex_lock(&b->cache_lock);
    rift_match *old = atomic_load_explicit(slot, memory_order_relaxed);
    atomic_store_explicit(slot, m, memory_order_release);
    if (old != NULL) {
        old->gc_next = b->gc;
        b->gc = old;
        if (++b->ngc >= RIFT_CACHE_GC_MAX) {
            *reclaim = true;
        }
    }
    pthread_mutex_unlock(&b->cache_lock);
    return 0;
}
