/*
 * sendq.h — a QUIC stream's send queue (quic layer).
 *
 * ngtcp2 keeps pointers to the stream data it was given and re-reads them
 * for retransmission until acked_stream_data_offset covers them, so queued
 * bytes must never move. The queue is a ring of (pointer, length, release)
 * entries; the bytes live elsewhere and stay pinned:
 *   - referenced chunks point into buffers the caller owns through a
 *     refcount (a rift_msg payload, say); |release|(|owner|) is called once
 *     when the queue is done with them — acked, truncated or cleared;
 *   - copied chunks go into 16 KiB copy blocks owned by the queue
 *     (refcounted by the entries using them); consecutive copies into the
 *     same block merge into one entry, so many small frames cost one vec.
 * The entry ring itself may be reallocated: ngtcp2 never sees it.
 *
 * Offsets: acked <= sent <= end. Bytes below |acked| are released, bytes
 * in [acked, sent) were handed to ngtcp2, bytes in [sent, end) are not
 * sent yet.
 */
#ifndef RIFT_QUIC_SENDQ_H
#define RIFT_QUIC_SENDQ_H

#include "rift/rift.h"

#include <ngtcp2/ngtcp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*rift_release_fn)(void *owner);

typedef struct rift_sendq_entry {
    const uint8_t *data;
    size_t len;
    rift_release_fn release; /* NULL: nothing to release */
    void *owner;
} rift_sendq_entry;

typedef struct rift_sendq_block rift_sendq_block;

typedef struct rift_sendq {
    const rift_mem *mem;
    rift_sendq_entry *ring;
    size_t cap;  /* power of two, or 0 */
    size_t head; /* ring index of the oldest entry */
    size_t count;
    size_t head_acked; /* bytes of the head entry already acked */
    uint64_t acked;
    uint64_t sent;
    uint64_t end;
    size_t sent_idx;       /* entry (relative to head) holding |sent|; == count
                              when everything is sent */
    size_t sent_off;       /* offset of |sent| inside that entry */
    rift_sendq_block *blk; /* current copy block, or NULL */
    rift_sendq_block *spare; /* a free standard block kept for reuse */
} rift_sendq;

/* Size of a copy block; a copy larger than half of it gets its own. */
#define RIFT_SENDQ_BLOCK 16384
/* Size of a queue's first copy block (see rift_sendq_reserve). */
#define RIFT_SENDQ_FIRST_BLOCK 256

void rift_sendq_init(rift_sendq *q, const rift_mem *mem);

/** rift_sendq_clear releases every entry (sent or not) and the ring. */
void rift_sendq_clear(rift_sendq *q);

/**
 * rift_sendq_reserve makes room for |entries| more entries and |copy|
 * more copied bytes, so that the appends that follow cannot fail.
 * Errors: RIFT_ERR_NOMEM (nothing changed).
 */
int rift_sendq_reserve(rift_sendq *q, size_t entries, size_t copy);

/** Appends a copy of |data| (after rift_sendq_reserve covered it). */
void rift_sendq_append_copy(rift_sendq *q, const uint8_t *data, size_t len);

/** Appends a pinned reference (after rift_sendq_reserve covered it). */
void rift_sendq_append_ref(rift_sendq *q, const uint8_t *data, size_t len,
                           rift_release_fn release, void *owner);

/**
 * rift_sendq_peek fills up to |max| vecs with unsent data from |sent| on
 * and returns how many; *total gets their byte count. When *total equals
 * rift_sendq_unsent the vecs cover everything left (FIN may ride along).
 */
size_t rift_sendq_peek(const rift_sendq *q, ngtcp2_vec *v, size_t max,
                       uint64_t *total);

/** rift_sendq_consume marks |n| bytes from |sent| on as handed over. */
void rift_sendq_consume(rift_sendq *q, size_t n);

/** rift_sendq_ack releases everything below |offset| + |len|. Acks come in
 * order without overlap (ngtcp2's guarantee). */
void rift_sendq_ack(rift_sendq *q, uint64_t offset, uint64_t len);

/** rift_sendq_truncate drops every unsent byte (the stream's write side
 * died): end becomes sent. Sent bytes stay pinned until cleared. */
void rift_sendq_truncate(rift_sendq *q);

static inline uint64_t rift_sendq_unsent(const rift_sendq *q) {
    return q->end - q->sent;
}

static inline uint64_t rift_sendq_unacked(const rift_sendq *q) {
    return q->end - q->acked;
}

#endif /* RIFT_QUIC_SENDQ_H */
