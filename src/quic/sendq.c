/*
 * sendq.c — pinned send queue of a QUIC stream (quic layer). See sendq.h.
 */
#include "quic/sendq.h"

#include "common/common.h"

#include <string.h>

struct rift_sendq_block {
    const rift_mem *mem;
    rift_sendq *q; /* owning queue: a freed standard block becomes its spare */
    size_t refs;   /* entries using it, plus one while it is current */
    size_t used;
    size_t cap;
    uint8_t data[];
};

/* A stream that streams keeps recycling blocks: the one freed by an ack is
 * kept as the queue's spare, so the steady state allocates nothing (and
 * takes no page faults from a trimmed heap). */
static void block_unref(void *owner) {
    rift_sendq_block *b = owner;
    if (--b->refs > 0) {
        return;
    }
    if (b->q != NULL && b->q->spare == NULL && b->cap == RIFT_SENDQ_BLOCK) {
        b->used = 0;
        b->q->spare = b;
        return;
    }
    rift_free(b->mem, b);
}

void rift_sendq_init(rift_sendq *q, const rift_mem *mem) {
    memset(q, 0, sizeof(*q));
    q->mem = mem;
}

static rift_sendq_entry *at(const rift_sendq *q, size_t i) {
    return &q->ring[(q->head + i) & (q->cap - 1)];
}

static void release(rift_sendq_entry *e) {
    if (e->release) {
        e->release(e->owner);
    }
}

void rift_sendq_clear(rift_sendq *q) {
    for (size_t i = 0; i < q->count; i++) {
        release(at(q, i));
    }
    if (q->blk) {
        block_unref(q->blk);
    }
    if (q->spare) {
        rift_free(q->mem, q->spare);
    }
    rift_free(q->mem, q->ring);
    const rift_mem *mem = q->mem;
    rift_sendq_init(q, mem);
}

int rift_sendq_reserve(rift_sendq *q, size_t entries, size_t copy) {
    if (q->count + entries > q->cap) {
        size_t cap = q->cap ? q->cap : 16;
        while (cap < q->count + entries) {
            cap *= 2;
        }
        rift_sendq_entry *ring = rift_malloc(q->mem, cap * sizeof(*ring));
        if (ring == NULL) {
            return RIFT_ERR_NOMEM;
        }
        for (size_t i = 0; i < q->count; i++) {
            ring[i] = *at(q, i);
        }
        rift_free(q->mem, q->ring);
        q->ring = ring;
        q->cap = cap;
        q->head = 0;
    }
    if (copy > 0 && (q->blk == NULL || q->blk->cap - q->blk->used < copy)) {
        /* A queue that never held a byte gets a small first block: most
         * streams are operations answered once with a few bytes (OK,
         * STORED, an ERROR), and a 16 KiB block each for hundreds of
         * acknowledgements in flight made the heap grow and shrink around
         * them, a page fault per 4 KiB every time (half the server's CPU
         * in the fetch+ack benchmark). A stream that goes on writing moves
         * to standard blocks with its second. */
        size_t std = q->end == 0 ? RIFT_SENDQ_FIRST_BLOCK : RIFT_SENDQ_BLOCK;
        size_t cap = copy > std ? copy : std;
        rift_sendq_block *b;
        if (cap == RIFT_SENDQ_BLOCK && q->spare != NULL) {
            b = q->spare;
            q->spare = NULL;
        } else if ((b = rift_malloc(q->mem, sizeof(*b) + cap)) == NULL) {
            return RIFT_ERR_NOMEM;
        }
        b->mem = q->mem;
        b->q = q;
        b->refs = 1;
        b->used = 0;
        b->cap = cap;
        if (q->blk) {
            block_unref(q->blk);
        }
        q->blk = b;
    }
    return 0;
}

static void push(rift_sendq *q, const uint8_t *data, size_t len,
                 rift_release_fn rel, void *owner) {
    rift_sendq_entry *e = at(q, q->count);
    e->data = data;
    e->len = len;
    e->release = rel;
    e->owner = owner;
    q->count++;
    q->end += len;
}

void rift_sendq_append_copy(rift_sendq *q, const uint8_t *data, size_t len) {
    if (len == 0) {
        return;
    }
    rift_sendq_block *b = q->blk;
    uint8_t *dst = b->data + b->used;
    memcpy(dst, data, len);
    b->used += len;
    if (q->count > 0) {
        rift_sendq_entry *last = at(q, q->count - 1);
        if (last->owner == b && last->release == block_unref &&
            last->data + last->len == dst) {
            /* Merge: the bytes are contiguous in the same block. If the
             * entry was fully sent, |sent| now points into it. */
            if (q->sent_idx == q->count) {
                q->sent_idx = q->count - 1;
                q->sent_off = last->len;
            }
            last->len += len;
            q->end += len;
            return;
        }
    }
    b->refs++;
    push(q, dst, len, block_unref, b);
}

void rift_sendq_append_ref(rift_sendq *q, const uint8_t *data, size_t len,
                           rift_release_fn rel, void *owner) {
    if (len == 0) {
        if (rel) {
            rel(owner);
        }
        return;
    }
    push(q, data, len, rel, owner);
}

size_t rift_sendq_peek(const rift_sendq *q, ngtcp2_vec *v, size_t max,
                       uint64_t *total) {
    size_t n = 0;
    uint64_t sum = 0;
    for (size_t i = q->sent_idx; i < q->count && n < max; i++) {
        const rift_sendq_entry *e = at(q, i);
        size_t skip = i == q->sent_idx ? q->sent_off : 0;
        v[n].base = (uint8_t *)e->data + skip;
        v[n].len = e->len - skip;
        sum += v[n].len;
        n++;
    }
    *total = sum;
    return n;
}

void rift_sendq_consume(rift_sendq *q, size_t n) {
    q->sent += n;
    while (n > 0 && q->sent_idx < q->count) {
        const rift_sendq_entry *e = at(q, q->sent_idx);
        size_t left = e->len - q->sent_off;
        if (n < left) {
            q->sent_off += n;
            return;
        }
        n -= left;
        q->sent_idx++;
        q->sent_off = 0;
    }
}

void rift_sendq_ack(rift_sendq *q, uint64_t offset, uint64_t len) {
    uint64_t upto = offset + len;
    if (upto > q->sent) {
        upto = q->sent; /* defensive: never release unsent bytes */
    }
    while (q->acked < upto && q->count > 0) {
        rift_sendq_entry *e = at(q, 0);
        size_t left = e->len - q->head_acked;
        if (upto - q->acked < left) {
            q->head_acked += (size_t)(upto - q->acked);
            q->acked = upto;
            return;
        }
        q->acked += left;
        release(e);
        q->head = (q->head + 1) & (q->cap - 1);
        q->count--;
        q->head_acked = 0;
        if (q->sent_idx > 0) {
            q->sent_idx--;
        } else {
            q->sent_off = 0;
        }
    }
}

void rift_sendq_truncate(rift_sendq *q) {
    size_t keep = q->sent_idx;
    if (q->sent_idx < q->count && q->sent_off > 0) {
        at(q, q->sent_idx)->len = q->sent_off;
        keep++;
    }
    for (size_t i = keep; i < q->count; i++) {
        release(at(q, i));
    }
    q->count = keep;
    q->sent_idx = keep;
    q->sent_off = 0;
    q->end = q->sent;
    /* A copy block may still be current: later copies can't go to a dead
     * stream anyway, so drop it. */
    if (q->blk) {
        block_unref(q->blk);
        q->blk = NULL;
    }
}
