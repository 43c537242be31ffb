/*
 * push.h — push delivery over a durable consumer (store layer): a consumer
 * that hands out up to N unacknowledged records per member, with ack wait
 * and redelivery, for protocols whose subscribers are pushed to (NATS
 * Streaming today; a native push consumer later).
 *
 * It adds no state to the consumer's durable state: cursor, pending set,
 * delivery counts and ack wait stay the consumer's (rift_consumer_fetch,
 * rift_consumer_ack). What it adds lives in memory and is rebuilt after a
 * restart: the members (one for a plain subscription, several for a queue
 * group), each with its own max-in-flight and pending count, the owner of
 * each pending sequence, and when the next ack wait expires.
 *
 * Delivery rules (those of NATS Streaming): new records go to the member
 * with the fewest pending among those below their max-in-flight, and stop
 * when every member is full; a redelivery (ack wait expired) is forced
 * past max-in-flight, to its previous member when still there, else to
 * the member with the fewest pending. Order is the consumer's: expired
 * deliveries ascending, then new ones.
 *
 * Threading: a rift_push is used by one thread at a time (its owner's
 * event loop); the deliver callback runs on that thread inside
 * rift_push_pump. The consumer may be shared with other users.
 */
#ifndef RIFT_STORE_PUSH_H
#define RIFT_STORE_PUSH_H

#include "common/common.h"
#include "rift/stream.h"

typedef struct rift_push rift_push;

/* Hands one record to |member| (rift_push_add_member's pointer). A nonzero
 * return is logged by nobody and ignored: the record stays pending and is
 * redelivered after the ack wait, as if the push had been lost. */
typedef int (*rift_push_deliver_fn)(void *ctx, void *member,
                                    const rift_delivery *d);

typedef struct rift_push_settings {
    /** Borrowed; must outlive the push. Its ack wait is the push's. */
    rift_consumer *consumer;
    rift_push_deliver_fn deliver;
    void *ctx;
    const rift_mem *mem;
} rift_push_settings;

/* rift_push_new: RIFT_ERR_INVALID_ARGUMENT (no consumer or callback),
 * RIFT_ERR_NOMEM, or the consumer's info errors. */
int rift_push_new(rift_push **pp, const rift_push_settings *s, rift_error *err);
void rift_push_del(rift_push *p);

/* rift_push_add_member adds a receiver with |max_in_flight| (>= 1; above
 * 65,536 counts as 65,536). RIFT_ERR_NOMEM. */
int rift_push_add_member(rift_push *p, void *member, uint32_t max_in_flight,
                         rift_error *err);

/* rift_push_remove_member removes |member|; its pending records stay
 * pending in the consumer. When members remain they are due at once
 * (rift_consumer_expire): the next pump redelivers them to the others,
 * forced past max-in-flight, each to the member with the fewest pending
 * (NATS Streaming spreads a leaving queue member's over the rest); with
 * none left they wait for the next member and their ack wait. */
void rift_push_remove_member(rift_push *p, void *member);

size_t rift_push_member_count(const rift_push *p);

/* rift_push_set_ack_wait changes the ack wait of the push and of its
 * consumer (rift_consumer_set_ack_wait: in memory), for a subscriber
 * resumed with another one. Errors: those of rift_consumer_set_ack_wait. */
int rift_push_set_ack_wait(rift_push *p, uint64_t ack_wait_ms, rift_error *err);

/* Pending records attributed to |member| (0 when unknown). */
uint32_t rift_push_member_pending(const rift_push *p, const void *member);

/* rift_push_ack acknowledges |sequence| in the consumer (asynchronously:
 * durable at the consumer's next sync) and frees its member's slot.
 * Errors: those of rift_consumer_ack_async (RIFT_ERR_INVALID_ACK for a
 * sequence not pending). */
int rift_push_ack(rift_push *p, uint64_t sequence, rift_error *err);

/* rift_push_pump delivers what is due at |now_ms| (a monotonic clock in
 * milliseconds): expired deliveries and, while members have room, new
 * records. Blocks for the consumer's fetch (one sync on a synced stream
 * when something was delivered). Returns the number delivered or an
 * error of rift_consumer_fetch. */
rift_ssize rift_push_pump(rift_push *p, uint64_t now_ms, rift_error *err);

/* rift_push_pump_async is rift_push_pump for an owner that must not wait
 * for the disk (a protocol server's loop): the fetch is submitted with
 * the _async contract of rift_consumer_fetch_bytes_async (at most about
 * |max_bytes| of payload) into |out|, whose records are assigned to
 * members at once but handed to nobody yet: once the fetch is durable
 * (*|completed| true on return, else |cb| with status 0) the owner calls
 * rift_push_deliver(|out|) and frees it; on a failed completion it only
 * frees it (the records stay pending and are redelivered after the ack
 * wait). At most one pump of a push may be in flight. Returns the number
 * of records in |out| or an error of the fetch. */
rift_ssize rift_push_pump_async(rift_push *p, uint64_t now_ms,
                                uint64_t max_bytes, rift_batch *out,
                                bool *completed, rift_stream_done_cb cb,
                                void *user_data, rift_error *err);

/* rift_push_deliver hands every record of |b| (an rift_push_pump_async
 * batch) to the member it was assigned to, skipping those whose member
 * left meanwhile (they stay pending). */
void rift_push_deliver(rift_push *p, const rift_batch *b);

/* rift_push_wants_pump: true when a pump at |now_ms| may deliver
 * something (a member has room, or an ack wait has expired). A member
 * with room pumps on every call; the owner calls it when records may have
 * arrived, and at rift_push_next_due_ms. */
bool rift_push_wants_pump(const rift_push *p, uint64_t now_ms);

/* rift_push_adopt_pending: the consumer has pending deliveries that no
 * member of this push made (an earlier push's, or a fetch's): they are
 * due one ack wait from |now_ms| at the latest, so a pump then takes
 * them (to the member with the fewest pending, forced). */
void rift_push_adopt_pending(rift_push *p, uint64_t now_ms);

/* When the next ack wait expires (monotonic ms), UINT64_MAX if never. */
uint64_t rift_push_next_due_ms(const rift_push *p);

#endif /* RIFT_STORE_PUSH_H */
