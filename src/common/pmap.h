/*
 * pmap.h — an open-addressing table of pointers keyed by a precomputed
 * 64-bit hash (common layer). The caller owns the items and supplies the
 * equality test; the table stores (hash, item) pairs in one array so a
 * probe touches one cache line. Linear probing, load factor at most 1/2,
 * deletion by backward shift (no tombstones), so lookups stay O(1) under
 * churn. Not thread-safe: the broker serialises writers with its lock.
 */
#ifndef RIFT_COMMON_PMAP_H
#define RIFT_COMMON_PMAP_H

#include "common/common.h"

typedef struct rift_pmap_slot {
    uint64_t hash;
    void *item; /* NULL = empty */
} rift_pmap_slot;

typedef struct rift_pmap {
    rift_pmap_slot *slots;
    size_t mask; /* capacity - 1; capacity is a power of two or 0 */
    size_t len;
} rift_pmap;

/* rift_pmap_init makes an empty table (no allocation until insert). */
void rift_pmap_init(rift_pmap *m);

/* rift_pmap_free releases the slot array (not the items). */
void rift_pmap_free(rift_pmap *m, const rift_mem *mem);

/*
 * rift_pmap_insert adds |item| under |hash| (no duplicate check), growing
 * the table when it would pass half full. 0 or RIFT_ERR_NOMEM.
 */
int rift_pmap_insert(rift_pmap *m, const rift_mem *mem, uint64_t hash,
                     void *item);

/* rift_pmap_remove removes |item| (which must be present under |hash|). */
void rift_pmap_remove(rift_pmap *m, uint64_t hash, const void *item);

/*
 * Lookup is a macro-free inline loop the caller writes with these two
 * helpers, so the equality test inlines:
 *
 *     for (size_t i = rift_pmap_first(m, h); m->slots && m->slots[i].item;
 *          i = rift_pmap_next(m, i))
 *         if (m->slots[i].hash == h && equal(m->slots[i].item, key)) ...
 */
static inline size_t rift_pmap_first(const rift_pmap *m, uint64_t hash) {
    return (size_t)hash & m->mask;
}

static inline size_t rift_pmap_next(const rift_pmap *m, size_t i) {
    return (i + 1) & m->mask;
}

#endif /* RIFT_COMMON_PMAP_H */
