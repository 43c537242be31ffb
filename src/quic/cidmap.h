/*
 * cidmap.h — connection ID → value hash map for routing QUIC packets to
 * connections (quic layer). Open addressing with linear probing and
 * backward-shift deletion (no tombstones), power-of-two capacity, load at
 * most 1/2. The hash is keyed with a per-map random seed because clients
 * choose the DCID of their first Initial.
 */
#ifndef RIFT_QUIC_CIDMAP_H
#define RIFT_QUIC_CIDMAP_H

#include "rift/rift.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* QUIC v1 connection IDs are at most 20 bytes. */
#define RIFT_CID_MAX 20

typedef struct rift_cid {
    uint8_t len;
    uint8_t data[RIFT_CID_MAX];
} rift_cid;

typedef struct rift_cidmap_entry {
    rift_cid cid;
    void *value; /* NULL marks an empty slot */
} rift_cidmap_entry;

typedef struct rift_cidmap {
    const rift_mem *mem;
    rift_cidmap_entry *slots;
    size_t cap; /* power of two, or 0 */
    size_t len;
    uint64_t seed[2];
} rift_cidmap;

/** rift_cidmap_init prepares an empty map. Errors: RIFT_ERR_IO (seed). */
int rift_cidmap_init(rift_cidmap *m, const rift_mem *mem);

/** rift_cidmap_free releases the table (not the values). */
void rift_cidmap_free(rift_cidmap *m);

/**
 * rift_cidmap_put maps |cid| (len <= RIFT_CID_MAX) to non-NULL |value|,
 * replacing an existing mapping. O(1) expected.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT; RIFT_ERR_NOMEM (growing).
 */
int rift_cidmap_put(rift_cidmap *m, const uint8_t *cid, size_t len,
                    void *value);

/** rift_cidmap_get returns the value mapped to |cid|, or NULL. */
void *rift_cidmap_get(const rift_cidmap *m, const uint8_t *cid, size_t len);

/** rift_cidmap_del removes |cid| when it maps to |value| (or any value
 * when |value| is NULL). Returns true when something was removed. */
bool rift_cidmap_del(rift_cidmap *m, const uint8_t *cid, size_t len,
                     const void *value);

#endif /* RIFT_QUIC_CIDMAP_H */
