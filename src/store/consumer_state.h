/*
 * consumer_state.h — a stream's consumer table, each consumer's pending
 * set, and the CONSUMER/PENDING state events that make them durable
 * (store layer, consumer_state.c). Pure in-memory state, no I/O, no
 * writer: the files above (retention, the writer's snapshots, recovery,
 * the consumer API in consumer.c) all use it. Callers hold the stream
 * lock (or own the stream alone, as recovery does).
 */
#ifndef RIFT_STORE_CONSUMER_STATE_H
#define RIFT_STORE_CONSUMER_STATE_H

#include "store/stream_types.h"

/* The most records one fetch (or one PENDING batch event) carries. */
#define RIFT_CONSUMER_MAX_BATCH 65536u

/* The stored form of a configuration: filter defaulted, the start
 * argument kept only where the mode has one. */
typedef struct rift_consumer_norm {
    const char *filter;
    size_t filter_len;
    uint64_t ack_wait_ms;
    uint32_t max_ack_pending;
    uint8_t mode;
    uint64_t arg;
    uint32_t max_deliver;
} rift_consumer_norm;

/* rift_consumer_fetch_due is rift_consumer_fetch limited to deliveries
 * whose ack wait ran out (or that were given back): the push engine's
 * fetch while every member is at max_in_flight, which must never hand
 * out a first delivery. */
int rift_consumer_fetch_due(rift_consumer *c, size_t limit, rift_batch *out,
                            rift_error *err);
/* rift_consumer_fetch_push_async is the push engine's fetch for an owner
 * that must not wait for the disk (a protocol server's loop): that of
 * rift_consumer_fetch_bytes_async, limited to due deliveries when
 * |due_only|, with the _async contract. */
int rift_consumer_fetch_push_async(rift_consumer *c, size_t limit,
                                   uint64_t max_bytes, bool due_only,
                                   rift_batch *out, bool *completed,
                                   rift_stream_done_cb cb, void *user_data,
                                   rift_error *err);

bool rift_consumer_name_valid(const char *name, size_t len);
/* Normalizes |in| (NULL: the defaults) into |out|; false when a limit,
 * the start mode or the filter is invalid. */
bool rift_consumer_normalize(const rift_consumer_config *in,
                             rift_consumer_norm *out);

/* ---- The table ---- */

rift_consumer *rift_consumer_find(rift_stream *st, const char *name,
                                  size_t len);
rift_consumer *rift_consumer_by_id(rift_stream *st, uint32_t id);
/* Inserts |c| (refs 1, the table's) by name. 0 or NOMEM. */
int rift_consumer_insert(rift_stream *st, rift_consumer *c);
/* Room for one more consumer in the table, so inserting cannot fail. */
int rift_consumer_table_reserve(rift_stream *st);
/* Allocates a consumer, not yet in the table. */
rift_consumer *rift_consumer_alloc(rift_stream *st, const char *name,
                                   size_t name_len, const char *filter,
                                   size_t filter_len);
void rift_consumer_remove(rift_stream *st, rift_consumer *c);
void rift_consumer_unref_locked(rift_consumer *c);

/* ---- Pending set ---- */

/* The |i|th entry (tombstones included), oldest first. */
rift_pend *rift_pend_at(rift_consumer *c, size_t i);
rift_pend *rift_pend_find(rift_consumer *c, uint64_t seq);
int rift_pend_upsert(rift_consumer *c, uint64_t seq, uint64_t delivered_at,
                     uint32_t attempts);
void rift_pend_drop(rift_consumer *c, rift_pend *p);
void rift_pend_trim_below(rift_consumer *c, uint64_t first);
void rift_pend_trim_above(rift_consumer *c, uint64_t last);
/* Drops the pending entries in [from, to). */
void rift_pend_drop_range(rift_consumer *c, uint64_t from, uint64_t to);

/* ---- State events ---- */

/* Appends a full CONSUMER event for |c| to |b|. */
int rift_consumer_encode(const rift_consumer *c, rift_sbuf *b);
/* The CONSUMER event of a consumer just created (no pending set). */
int rift_consumer_encode_new(const rift_consumer *c, rift_sbuf *b);
/* The CONSUMER_LABEL event of |c| (nothing when it has no label). */
int rift_consumer_encode_label(const rift_consumer *c, rift_sbuf *b);
/* Applies one state event (recovery). 0, or -1 with *|why|. */
int rift_consumer_apply_event(rift_stream *st, const uint8_t *body, size_t len,
                              const char **why);

#endif /* RIFT_STORE_CONSUMER_STATE_H */
