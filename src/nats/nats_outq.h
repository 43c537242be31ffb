/*
 * nats_outq.h — one NATS connection's outbound bytes as a queue of chunks
 * (nats layer).
 *
 * One growing buffer had to move its unsent bytes to the front to make
 * room; with a slow reader's backlog of megabytes those moves cost as
 * much as the writes (perf, 1 -> 4 fan-out: memmove beside the kernel's
 * copy at the top of riftd's profile). Chunks are written in place, sent
 * with writev (or one TLS record call per chunk) and freed once sent, so
 * no byte is copied twice and the memory follows the backlog, which
 * nats_deliver.c keeps under max_pending.
 */
#ifndef RIFT_NATS_OUTQ_H
#define RIFT_NATS_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct nats_chunk nats_chunk;

typedef struct nats_outq {
    nats_chunk *head;  /* oldest unsent bytes */
    nats_chunk *tail;  /* where reserve writes */
    nats_chunk *spare; /* one sent standard chunk, reused */
    size_t pending;    /* unsent bytes */
} nats_outq;

/** Standard chunk size; a larger reservation gets a chunk of its own. The
 * first chunk of an idle queue is small, so connections that only ever
 * send PONGs and +OKs stay small. */
#define NATS_OUTQ_CHUNK       65536
#define NATS_OUTQ_FIRST_CHUNK 4096

/** rift_nats_outq_reserve: room for |len| contiguous bytes at the end;
 * NULL when out of memory. Only the next commit makes them pending. */
uint8_t *rift_nats_outq_reserve(nats_outq *q, size_t len);
/** rift_nats_outq_commit: the first |n| reserved bytes are pending. */
void rift_nats_outq_commit(nats_outq *q, size_t n);
/** rift_nats_outq_iov: up to |max| pieces of the unsent bytes, oldest
 * first; the count (0 when nothing is pending). */
int rift_nats_outq_iov(const nats_outq *q, struct iovec *iov, int max);
/** rift_nats_outq_consume: |n| (<= pending) bytes were sent. */
void rift_nats_outq_consume(nats_outq *q, size_t n);
/** rift_nats_outq_trim: frees the spare chunk (an idle connection). */
void rift_nats_outq_trim(nats_outq *q);
/** rift_nats_outq_free: frees every chunk; the queue is empty. */
void rift_nats_outq_free(nats_outq *q);

#endif /* RIFT_NATS_OUTQ_H */
