/*
 * buf.h — growable byte buffers, a ring of fixed-size elements, and
 * little-endian field access for the store layer's on-disk formats (common
 * layer). Allocation goes through rift_mem; every failure is
 * RIFT_ERR_NOMEM, never an abort.
 */
#ifndef RIFT_COMMON_BUF_H
#define RIFT_COMMON_BUF_H

#include "common/common.h"

#include <string.h>

/* ---- Little-endian fields ---- */

static inline void rift_put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void rift_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void rift_put_u64(uint8_t *p, uint64_t v) {
    rift_put_u32(p, (uint32_t)v);
    rift_put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t rift_get_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rift_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t rift_get_u64(const uint8_t *p) {
    return (uint64_t)rift_get_u32(p) | ((uint64_t)rift_get_u32(p + 4) << 32);
}

/* ---- Byte buffer ---- */

typedef struct rift_sbuf {
    uint8_t *data;
    size_t len;
    size_t cap;
    const rift_mem *mem;
} rift_sbuf;

static inline void rift_sbuf_init(rift_sbuf *b, const rift_mem *mem) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->mem = mem;
}

void rift_sbuf_free(rift_sbuf *b);

/* Makes room for |extra| more bytes. 0 or RIFT_ERR_NOMEM. */
int rift_sbuf_reserve(rift_sbuf *b, size_t extra);

/* Appends |n| uninitialised bytes and returns them, or NULL (NOMEM). */
static inline uint8_t *rift_sbuf_grow(rift_sbuf *b, size_t n) {
    if (b->cap - b->len < n && rift_sbuf_reserve(b, n) != 0) {
        return NULL;
    }
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

/* Releases the storage when it grew beyond |keep| bytes, else empties. */
void rift_sbuf_reset(rift_sbuf *b, size_t keep);

/* ---- Ring of fixed-size elements (power-of-two capacity) ---- */

typedef struct rift_ring {
    uint8_t *data;
    size_t esize;
    size_t cap;
    size_t head;
    size_t len;
    const rift_mem *mem;
} rift_ring;

void rift_ring_init(rift_ring *r, size_t esize, const rift_mem *mem);
void rift_ring_free(rift_ring *r);

static inline void *rift_ring_at(const rift_ring *r, size_t i) {
    return r->data + ((r->head + i) & (r->cap - 1)) * r->esize;
}

/* Makes room for |n| more elements. 0 or RIFT_ERR_NOMEM. */
int rift_ring_reserve(rift_ring *r, size_t n);

/* Appends one zeroed element and returns it, or NULL (NOMEM). */
void *rift_ring_push(rift_ring *r);

static inline void rift_ring_pop_front(rift_ring *r) {
    r->head = (r->head + 1) & (r->cap - 1);
    r->len--;
}

static inline void rift_ring_pop_back(rift_ring *r) {
    r->len--;
}

/* Drops the first |n| elements. */
static inline void rift_ring_drop_front(rift_ring *r, size_t n) {
    r->head = (r->head + n) & (r->cap - 1);
    r->len -= n;
}

#endif /* RIFT_COMMON_BUF_H */
