/*
 * cidmap.c — keyed open-addressing hash map of connection IDs (quic
 * layer). See cidmap.h.
 */
#include "quic/cidmap.h"

#include "common/common.h"

#include <string.h>

int rift_cidmap_init(rift_cidmap *m, const rift_mem *mem) {
    memset(m, 0, sizeof(*m));
    m->mem = mem;
    if (rift_random(m->seed, sizeof(m->seed)) != 0) {
        return RIFT_ERR_IO;
    }
    return 0;
}

void rift_cidmap_free(rift_cidmap *m) {
    rift_free(m->mem, m->slots);
    m->slots = NULL;
    m->cap = m->len = 0;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* A keyed hash over at most 20 bytes: each 8-byte word is folded through
 * a strong 64-bit mixer seeded with the secret. Not a MAC, but without the
 * seed an attacker cannot aim DCIDs at one bucket chain. */
static uint64_t hash(const rift_cidmap *m, const uint8_t *cid, size_t len) {
    uint64_t h = m->seed[0] ^ (uint64_t)len;
    size_t i = 0;
    while (i < len) {
        uint64_t w = 0;
        size_t k = len - i < 8 ? len - i : 8;
        memcpy(&w, cid + i, k);
        h = mix(h ^ w ^ m->seed[1]);
        i += k;
    }
    return mix(h);
}

static bool cid_eq(const rift_cid *c, const uint8_t *cid, size_t len) {
    return c->len == len && memcmp(c->data, cid, len) == 0;
}

static int grow(rift_cidmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    rift_cidmap_entry *slots = rift_calloc(m->mem, cap, sizeof(*slots));
    if (slots == NULL) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        rift_cidmap_entry *e = &m->slots[i];
        if (e->value == NULL) {
            continue;
        }
        size_t j = hash(m, e->cid.data, e->cid.len) & (cap - 1);
        while (slots[j].value != NULL) {
            j = (j + 1) & (cap - 1);
        }
        slots[j] = *e;
    }
    rift_free(m->mem, m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int rift_cidmap_put(rift_cidmap *m, const uint8_t *cid, size_t len,
                    void *value) {
    if (len > RIFT_CID_MAX || value == NULL) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    if ((m->len + 1) * 2 > m->cap) {
        int rv = grow(m);
        if (rv != 0) {
            return rv;
        }
    }
    size_t j = hash(m, cid, len) & (m->cap - 1);
    while (m->slots[j].value != NULL) {
        if (cid_eq(&m->slots[j].cid, cid, len)) {
            m->slots[j].value = value;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j].cid.len = (uint8_t)len;
    memcpy(m->slots[j].cid.data, cid, len);
    m->slots[j].value = value;
    m->len++;
    return 0;
}

void *rift_cidmap_get(const rift_cidmap *m, const uint8_t *cid, size_t len) {
    if (m->cap == 0 || len > RIFT_CID_MAX) {
        return NULL;
    }
    size_t j = hash(m, cid, len) & (m->cap - 1);
    while (m->slots[j].value != NULL) {
        if (cid_eq(&m->slots[j].cid, cid, len)) {
            return m->slots[j].value;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

bool rift_cidmap_del(rift_cidmap *m, const uint8_t *cid, size_t len,
                     const void *value) {
    if (m->cap == 0 || len > RIFT_CID_MAX) {
        return false;
    }
    size_t mask = m->cap - 1;
    size_t j = hash(m, cid, len) & mask;
    while (m->slots[j].value != NULL) {
        if (cid_eq(&m->slots[j].cid, cid, len)) {
            break;
        }
        j = (j + 1) & mask;
    }
    if (m->slots[j].value == NULL ||
        (value != NULL && m->slots[j].value != value)) {
        return false;
    }
    /* Backward-shift deletion: pull later members of the probe run into
     * the hole when their home slot allows it, so lookups never need
     * tombstones. */
    size_t hole = j;
    size_t k = (j + 1) & mask;
    while (m->slots[k].value != NULL) {
        size_t home = hash(m, m->slots[k].cid.data, m->slots[k].cid.len) & mask;
        /* Move k into the hole unless its home lies cyclically in
         * (hole, k]. */
        bool in_range =
            hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
        if (!in_range) {
            m->slots[hole] = m->slots[k];
            hole = k;
        }
        k = (k + 1) & mask;
    }
    memset(&m->slots[hole], 0, sizeof(m->slots[hole]));
    m->len--;
    return true;
}
