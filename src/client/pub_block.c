/*
 * pub_block.c — the 64 KiB blocks publishers encode their frames into
 * (client layer), and the client's pool of spare ones: recycled instead
 * of freed (a freed block usually goes back to the kernel and faults in
 * again), carved from huge-page chunks once a client publishes fast.
 * publisher.c explains how the blocks travel.
 */
#include "client/pub_block.h"

#include "common/slab.h" /* huge-page chunks for blocks */

/* Spare standard blocks a client keeps for reuse (1 MiB), not counting
 * carved ones, which are always kept. */
#define POOL_MAX 16u
/* Standard blocks out before new ones are carved from huge-page chunks:
 * a client that publishes little never maps a 2 MiB chunk. */
#define CARVE_AFTER 4u
/* Bytes a carved block takes in its chunk (cache-line multiple). */
#define CARVE_STRIDE                                                           \
 ((sizeof(rift_pub_block) + RIFT_CLIENT_PUB_BLOCK + 63u) & ~(size_t)63u)

/* A standard block carved from the client's huge-page chunks (pool_mu
 * held), or NULL when their budget is spent or mapping fails. A
 * publisher that outruns the network keeps its whole 8 MiB window
 * buffered, 128 blocks: from malloc that is 2,048 page faults of ~20 us
 * on the benchmark VMs for every process that publishes fast, from
 * chunks 4 to 5. */
static rift_pub_block *carve(rift_client *c) {
    if (c->npub_chunks == 0 ||
        (c->pub_carved + 1) * CARVE_STRIDE > RIFT_SLAB_HUGE) {
        if (c->npub_chunks == RIFT_CLIENT_PUB_CHUNKS) {
            return NULL;
        }
        void *chunk = rift_slab_map_huge(RIFT_SLAB_HUGE);
        if (chunk == NULL) {
            return NULL;
        }
        c->pub_chunks[c->npub_chunks++] = chunk;
        c->pub_carved = 0;
    }
    uint8_t *base = c->pub_chunks[c->npub_chunks - 1];
    rift_pub_block *b =
        (rift_pub_block *)(base + c->pub_carved++ * CARVE_STRIDE);
    b->c = c;
    b->cap = RIFT_CLIENT_PUB_BLOCK;
    b->carved = true;
    return b;
}

/* A block from the client's pool, or a new one; |cap| is at least a
 * standard block. */
rift_pub_block *rift_pub_block_get(rift_client *c, size_t cap) {
    rift_pub_block *b = NULL;
    bool std = cap == RIFT_CLIENT_PUB_BLOCK;
    if (std) {
        /* Steady publishing recycles blocks instead of paying malloc's
         * page faults: a freed 64 KiB block usually goes back to the
         * kernel (heap trim) and every reuse faults it in again. */
        pthread_mutex_lock(&c->pool_mu);
        b = c->pool;
        if (b != NULL) {
            c->pool = atomic_load_explicit(&b->next, memory_order_relaxed);
            c->npool -= !b->carved;
        } else if (c->mem == NULL && c->pub_out >= CARVE_AFTER) {
            b = carve(c);
        }
        c->pub_out++;
        pthread_mutex_unlock(&c->pool_mu);
    }
    if (b == NULL) {
        b = rift_malloc(c->mem, sizeof(*b) + cap);
        if (b == NULL) {
            if (std) {
                pthread_mutex_lock(&c->pool_mu);
                c->pub_out--;
                pthread_mutex_unlock(&c->pool_mu);
            }
            return NULL;
        }
        b->c = c;
        b->cap = cap;
        b->carved = false;
    }
    atomic_init(&b->next, NULL);
    atomic_init(&b->refs, 1);
    atomic_init(&b->committed, 0);
    b->used = 0;
    return b;
}

void rift_pub_block_unref(void *owner) {
    rift_pub_block *b = owner;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    rift_client *c = b->c;
    if (b->cap == RIFT_CLIENT_PUB_BLOCK) {
        pthread_mutex_lock(&c->pool_mu);
        c->pub_out--;
        if (b->carved || c->npool < POOL_MAX) {
            atomic_store_explicit(&b->next, c->pool, memory_order_relaxed);
            c->pool = b;
            c->npool += !b->carved;
            b = NULL;
        }
        pthread_mutex_unlock(&c->pool_mu);
    }
    if (b != NULL) {
        rift_free(c->mem, b);
    }
}

/* Drops the chain's reference of every block from |b| on. */
void rift_pub_chain_free(rift_pub_block *b) {
    while (b != NULL) {
        rift_pub_block *next =
            atomic_load_explicit(&b->next, memory_order_acquire);
        rift_pub_block_unref(b);
        b = next;
    }
}

void rift_client_pool_free(rift_client *c) {
    while (c->pool != NULL) {
        rift_pub_block *b = c->pool;
        c->pool = atomic_load_explicit(&b->next, memory_order_relaxed);
        if (!b->carved) {
            rift_free(c->mem, b);
        }
    }
    c->npool = 0;
    /* Every block is back by now (the client outlives its blocks). */
    for (size_t i = 0; i < c->npub_chunks; i++) {
        rift_slab_unmap_huge(c->pub_chunks[i], RIFT_SLAB_HUGE);
    }
    c->npub_chunks = 0;
}
