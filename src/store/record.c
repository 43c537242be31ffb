/*
 * record.c — in-memory records and the batches handed to callers (store
 * layer). A record is one allocation shared by reference between the
 * stream's cache and every batch holding it, so a fetch copies nothing.
 */
#include "store/record.h"

#include <string.h>

rift_srec *rift_srec_new(const rift_mem *mem, const char *subject,
                         size_t subject_len, const char *reply,
                         size_t reply_len, const uint8_t *payload,
                         size_t payload_len) {
    size_t n = sizeof(rift_srec) + subject_len + 1 + reply_len + 1;
    if (payload_len > SIZE_MAX - n) {
        return NULL;
    }
    rift_srec *r = rift_malloc(mem, n + payload_len);
    if (r == NULL) {
        return NULL;
    }
    atomic_init(&r->refs, 1);
    r->subject_len = (uint16_t)subject_len;
    r->reply_len = (uint16_t)reply_len;
    r->payload_len = (uint32_t)payload_len;
    r->seq = 0;
    r->ts = 0;
    char *p = r->data;
    memcpy(p, subject, subject_len);
    p[subject_len] = '\0';
    p += subject_len + 1;
    if (reply_len > 0) {
        memcpy(p, reply, reply_len);
    }
    p[reply_len] = '\0';
    p += reply_len + 1;
    if (payload_len > 0) {
        memcpy(p, payload, payload_len);
    }
    return r;
}

void rift_srec_unref(const rift_mem *mem, rift_srec *r) {
    if (r != NULL &&
        atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
        rift_free(mem, r);
    }
}

/* The batch's private part: the allocator and the references it holds,
 * followed by the items array in the same allocation. */
typedef struct batch_priv {
    const rift_mem *mem;
    size_t n;
    rift_srec *recs[];
} batch_priv;

int rift_batch_build(rift_batch *out, const rift_mem *mem, rift_srec **recs,
                     const uint32_t *counts, size_t n) {
    size_t head = sizeof(batch_priv) + n * sizeof(rift_srec *);
    head = (head + 15) & ~(size_t)15;
    batch_priv *bp = rift_malloc(mem, head + n * sizeof(rift_delivery));
    if (bp == NULL) {
        for (size_t i = 0; i < n; i++) {
            rift_srec_unref(mem, recs[i]);
        }
        return RIFT_ERR_NOMEM;
    }
    bp->mem = mem;
    bp->n = n;
    rift_delivery *items = (rift_delivery *)((char *)bp + head);
    for (size_t i = 0; i < n; i++) {
        rift_srec *r = recs[i];
        bp->recs[i] = r;
        rift_delivery *d = &items[i];
        d->record.sequence = r->seq;
        d->record.timestamp_ms = r->ts;
        d->record.subject = r->data;
        d->record.subject_len = r->subject_len;
        d->record.reply = r->reply_len ? r->data + r->subject_len + 1 : NULL;
        d->record.reply_len = r->reply_len;
        d->record.payload = rift_srec_payload(r);
        d->record.payload_len = r->payload_len;
        d->delivery_count = counts ? counts[i] : 0;
    }
    out->count = n;
    out->items = items;
    out->priv_ = bp;
    return 0;
}

void rift_batch_free(rift_batch *b) {
    if (b == NULL || b->priv_ == NULL) {
        if (b != NULL) {
            b->count = 0;
            b->items = NULL;
        }
        return;
    }
    batch_priv *bp = b->priv_;
    for (size_t i = 0; i < bp->n; i++) {
        rift_srec_unref(bp->mem, bp->recs[i]);
    }
    rift_free(bp->mem, bp);
    b->count = 0;
    b->items = NULL;
    b->priv_ = NULL;
}
