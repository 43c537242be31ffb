/*
 * pub_block.h — publish blocks and the client's pool of them (client
 * layer, pub_block.c). Publishing threads fill a block under their
 * publisher's mutex; the client thread hands its committed bytes to the
 * stream as pinned chunks, each holding a reference.
 */
#ifndef RIFT_CLIENT_PUB_BLOCK_H
#define RIFT_CLIENT_PUB_BLOCK_H

#include "client/client_internal.h"

struct rift_pub_block {
    /* The next block of the publisher's chain (publishing threads link
     * it, release; the client thread follows it, acquire). In the pool:
     * the next spare. */
    _Atomic(rift_pub_block *) next;
    rift_client *c; /* its pool */
    /* One reference for the chain, one per chunk handed to the stream. */
    atomic_uint refs;
    size_t cap;
    bool carved;             /* part of a chunk, never freed alone */
    size_t used;             /* bytes written (publishing threads, mu) */
    atomic_size_t committed; /* bytes the client thread may hand over */
    uint8_t data[];
};

/* A block from the client's pool, or a new one; |cap| is at least a
 * standard block (RIFT_CLIENT_PUB_BLOCK). NULL without memory. */
rift_pub_block *rift_pub_block_get(rift_client *c, size_t cap);
/* Drops one reference to a block (a rift_quic_chunk release function);
 * the last puts it back into its client's pool or frees it. */
void rift_pub_block_unref(void *owner);
/* Drops the chain's reference of every block from |b| on. */
void rift_pub_chain_free(rift_pub_block *b);

#endif /* RIFT_CLIENT_PUB_BLOCK_H */
