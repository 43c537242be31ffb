/*
 * record.h — in-memory records and fetched batches (store layer,
 * record.c): the bottom of the store, above the formats. Nothing here
 * knows about streams.
 */
#ifndef RIFT_STORE_RECORD_H
#define RIFT_STORE_RECORD_H

#include "rift/stream.h"
#include "common/common.h"
#include <stdatomic.h>

/* An immutable, refcounted record: the cache, fetch results and replay
 * results share it. data holds subject NUL reply NUL payload. */
typedef struct rift_srec {
    atomic_uint refs;
    uint16_t subject_len;
    uint16_t reply_len;
    uint32_t payload_len;
    uint64_t seq;
    uint64_t ts;
    char data[];
} rift_srec;

rift_srec *rift_srec_new(const rift_mem *mem, const char *subject,
                         size_t subject_len, const char *reply,
                         size_t reply_len, const uint8_t *payload,
                         size_t payload_len);
void rift_srec_unref(const rift_mem *mem, rift_srec *r);

static inline rift_srec *rift_srec_ref(rift_srec *r) {
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

static inline const uint8_t *rift_srec_payload(const rift_srec *r) {
    return (const uint8_t *)r->data + r->subject_len + 1 + r->reply_len + 1;
}

/* Builds a batch from |n| records (references taken over) and their
 * delivery counts. 0 or RIFT_ERR_NOMEM (the references are then dropped). */
int rift_batch_build(rift_batch *out, const rift_mem *mem, rift_srec **recs,
                     const uint32_t *counts, size_t n);

#endif /* RIFT_STORE_RECORD_H */
