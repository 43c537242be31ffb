/*
 * pmap.c — open-addressing pointer table keyed by precomputed hashes
 * (common layer). See pmap.h.
 */
#include "common/pmap.h"

#include <string.h>

void rift_pmap_init(rift_pmap *m) {
    m->slots = NULL;
    m->mask = 0;
    m->len = 0;
}

void rift_pmap_free(rift_pmap *m, const rift_mem *mem) {
    rift_free(mem, m->slots);
    rift_pmap_init(m);
}

static void place(rift_pmap_slot *slots, size_t mask, uint64_t hash,
                  void *item) {
    size_t i = (size_t)hash & mask;
    while (slots[i].item != NULL) {
        i = (i + 1) & mask;
    }
    slots[i].hash = hash;
    slots[i].item = item;
}

static int grow(rift_pmap *m, const rift_mem *mem) {
    size_t cap = m->slots ? (m->mask + 1) * 2 : 16;
    if (cap > SIZE_MAX / sizeof(rift_pmap_slot)) {
        return RIFT_ERR_NOMEM;
    }
    rift_pmap_slot *slots = rift_calloc(mem, cap, sizeof(*slots));
    if (slots == NULL) {
        return RIFT_ERR_NOMEM;
    }
    if (m->slots != NULL) {
        for (size_t i = 0; i <= m->mask; i++) {
            if (m->slots[i].item != NULL) {
                place(slots, cap - 1, m->slots[i].hash, m->slots[i].item);
            }
        }
        rift_free(mem, m->slots);
    }
    m->slots = slots;
    m->mask = cap - 1;
    return 0;
}

int rift_pmap_insert(rift_pmap *m, const rift_mem *mem, uint64_t hash,
                     void *item) {
    if (m->slots == NULL || (m->len + 1) * 2 > m->mask + 1) {
        int rc = grow(m, mem);
        if (rc != 0) {
            return rc;
        }
    }
    place(m->slots, m->mask, hash, item);
    m->len++;
    return 0;
}

void rift_pmap_remove(rift_pmap *m, uint64_t hash, const void *item) {
    if (m->slots == NULL) {
        return;
    }
    size_t i = (size_t)hash & m->mask;
    while (m->slots[i].item != item) {
        if (m->slots[i].item == NULL) {
            return; /* not present: a caller bug, but harmless */
        }
        i = (i + 1) & m->mask;
    }
    /* Backward shift: pull later members of the probe run into the hole
     * unless their home slot lies cyclically after the hole. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->slots[j].item == NULL) {
            break;
        }
        size_t home = (size_t)m->slots[j].hash & m->mask;
        bool movable =
            (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].item = NULL;
    m->slots[i].hash = 0;
    m->len--;
}
