/*
 * buf.c — growable byte buffers and element rings (common layer).
 */
#include "common/buf.h"

#include <sys/mman.h>

/* Index rings of big streams reach hundreds of MB. First touches of 4 KiB
 * pages dominate building them (page faults are costly, in VMs above all),
 * so large rings ask for transparent huge pages where the system allows
 * it. Advice only: failure changes nothing. */
static void advise_huge(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = 2u << 20;
    if (size < 4 * huge) {
        return;
    }
    uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)p + size) & ~(huge - 1);
    if (end > start) {
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#else
    (void)p;
    (void)size;
#endif
}

void rift_sbuf_free(rift_sbuf *b) {
    rift_free(b->mem, b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

int rift_sbuf_reserve(rift_sbuf *b, size_t extra) {
    if (b->cap - b->len >= extra) {
        return 0;
    }
    if (extra > SIZE_MAX / 2 - b->len) {
        return RIFT_ERR_NOMEM;
    }
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        cap *= 2;
    }
    uint8_t *p = rift_realloc(b->mem, b->data, cap);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void rift_sbuf_reset(rift_sbuf *b, size_t keep) {
    if (b->cap > keep) {
        rift_sbuf_free(b);
    }
    b->len = 0;
}

void rift_ring_init(rift_ring *r, size_t esize, const rift_mem *mem) {
    r->data = NULL;
    r->esize = esize;
    r->cap = 0;
    r->head = 0;
    r->len = 0;
    r->mem = mem;
}

void rift_ring_free(rift_ring *r) {
    rift_free(r->mem, r->data);
    r->data = NULL;
    r->cap = 0;
    r->head = 0;
    r->len = 0;
}

int rift_ring_reserve(rift_ring *r, size_t n) {
    if (r->cap - r->len >= n) {
        return 0;
    }
    size_t ncap = r->cap ? r->cap : 16;
    while (ncap - r->len < n) {
        if (ncap > SIZE_MAX / 2 / r->esize) {
            return RIFT_ERR_NOMEM;
        }
        ncap *= 2;
    }
    if (r->head + r->len <= r->cap) {
        /* Not wrapped: realloc keeps every index valid, and for large
         * blocks it remaps pages instead of copying them (recovery grows
         * the index to millions of entries). */
        uint8_t *nd = rift_realloc(r->mem, r->data, ncap * r->esize);
        if (nd == NULL) {
            return RIFT_ERR_NOMEM;
        }
        advise_huge(nd, ncap * r->esize);
        r->data = nd;
        r->cap = ncap;
        return 0;
    }
    uint8_t *nd = rift_malloc(r->mem, ncap * r->esize);
    if (nd == NULL) {
        return RIFT_ERR_NOMEM;
    }
    advise_huge(nd, ncap * r->esize);
    /* Unwrap into the new storage (at most two runs) so head becomes 0. */
    if (r->len > 0) {
        size_t first = RIFT_MIN(r->len, r->cap - r->head);
        memcpy(nd, r->data + r->head * r->esize, first * r->esize);
        memcpy(nd + first * r->esize, r->data, (r->len - first) * r->esize);
    }
    rift_free(r->mem, r->data);
    r->data = nd;
    r->cap = ncap;
    r->head = 0;
    return 0;
}

void *rift_ring_push(rift_ring *r) {
    if (r->len == r->cap && rift_ring_reserve(r, 1) != 0) {
        return NULL;
    }
    void *e = r->data + ((r->head + r->len) & (r->cap - 1)) * r->esize;
    memset(e, 0, r->esize);
    r->len++;
    return e;
}
