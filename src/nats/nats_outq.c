/*
 * nats_outq.c — the chunked outbound queue of a NATS connection (nats
 * layer); why chunks: nats_outq.h.
 */
#include "nats/nats_outq.h"

#include "common/common.h"

#include <string.h>

struct nats_chunk {
    nats_chunk *next;
    size_t off; /* sent */
    size_t len; /* written */
    size_t cap;
    uint8_t data[];
};

static nats_chunk *chunk_new(nats_outq *q, size_t len) {
    size_t cap = q->tail == NULL && len <= NATS_OUTQ_FIRST_CHUNK
                     ? NATS_OUTQ_FIRST_CHUNK
                     : NATS_OUTQ_CHUNK;
    if (len > cap) {
        cap = len;
    }
    nats_chunk *k;
    if (cap == NATS_OUTQ_CHUNK && q->spare != NULL) {
        k = q->spare;
        q->spare = NULL;
    } else {
        k = rift_malloc(NULL, sizeof(*k) + cap);
        if (k == NULL) {
            return NULL;
        }
        k->cap = cap;
    }
    k->next = NULL;
    k->off = k->len = 0;
    return k;
}

uint8_t *rift_nats_outq_reserve(nats_outq *q, size_t len) {
    nats_chunk *t = q->tail;
    if (t != NULL && t->cap - t->len >= len) {
        return t->data + t->len;
    }
    nats_chunk *k = chunk_new(q, len);
    if (k == NULL) {
        return NULL;
    }
    if (t != NULL) {
        t->next = k;
    } else {
        q->head = k;
    }
    q->tail = k;
    return k->data;
}

void rift_nats_outq_commit(nats_outq *q, size_t n) {
    q->tail->len += n;
    q->pending += n;
}

int rift_nats_outq_iov(const nats_outq *q, struct iovec *iov, int max) {
    int n = 0;
    for (const nats_chunk *k = q->head; k != NULL && n < max; k = k->next) {
        if (k->len > k->off) {
            iov[n].iov_base = (void *)(k->data + k->off);
            iov[n].iov_len = k->len - k->off;
            n++;
        }
    }
    return n;
}

static void release(nats_outq *q, nats_chunk *k) {
    if (k->cap == NATS_OUTQ_CHUNK && q->spare == NULL) {
        q->spare = k;
    } else {
        rift_free(NULL, k);
    }
}

void rift_nats_outq_consume(nats_outq *q, size_t n) {
    q->pending -= n;
    while (q->head != NULL) {
        nats_chunk *k = q->head;
        size_t avail = k->len - k->off;
        if (n < avail) {
            k->off += n;
            return;
        }
        n -= avail;
        if (k == q->tail) {
            /* All sent. A chunk made for one large message goes; a
             * standard one is started over by the next reservation. */
            if (k->cap > NATS_OUTQ_CHUNK) {
                rift_free(NULL, k);
                q->head = q->tail = NULL;
            } else {
                k->off = k->len = 0;
            }
            return;
        }
        q->head = k->next;
        release(q, k);
    }
}

void rift_nats_outq_trim(nats_outq *q) {
    rift_free(NULL, q->spare);
    q->spare = NULL;
    while (q->pending == 0 && q->head != NULL) {
        nats_chunk *k = q->head; /* empty: nothing unsent is freed */
        q->head = k->next;
        rift_free(NULL, k);
    }
    if (q->head == NULL) {
        q->tail = NULL;
    }
}

void rift_nats_outq_free(nats_outq *q) {
    while (q->head != NULL) {
        nats_chunk *k = q->head;
        q->head = k->next;
        rift_free(NULL, k);
    }
    rift_free(NULL, q->spare);
    memset(q, 0, sizeof(*q));
}
