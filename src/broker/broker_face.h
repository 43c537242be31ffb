/*
 * broker_face.h — what the other librift layers may use of the broker
 * beyond its public header (broker layer). Nothing else of the broker's
 * insides (broker_internal.h and the files it includes) is theirs to see.
 *
 * Messages on a foreign allocator: the C client builds every received
 * MESSAGE or DELIVERY as a rift_msg on its own pool (src/client/msgpool.c),
 * so that rift_msg_unref returns the block there.
 *
 * A per-thread cache of message blocks, for a thread that both creates and
 * drops most of the messages it handles: the protocol server's thread
 * publishes every remote PUBLISH and drops those messages once their
 * MESSAGE frames are written or acknowledged.
 *
 * A burst to a subscriber that falls behind queues hundreds of thousands
 * of messages. Made with the C allocator, every 4 KiB of them costs a page
 * fault (about 20 us each on the VMs rift is benchmarked on, more than the
 * rest of a message's processing), on the first burst and again whenever
 * the allocator has handed the memory back. Blocks come instead from the
 * thread's slab (common/slab.h): 2 MiB huge-page chunks, faulted in once
 * each, kept mapped and reused hottest first.
 *
 * Only messages made with the C library allocator (a broker without a
 * rift_mem) use it, and only on a thread that enabled it; any thread may
 * drop them. Builds with AddressSanitizer leave it off so use-after-free
 * stays detectable.
 */
#ifndef RIFT_BROKER_BROKER_FACE_H
#define RIFT_BROKER_BROKER_FACE_H

#include "rift/broker.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- Messages ---- */

/*
 * rift_msg_alloc builds a broker-owned message with |refs| references
 * (the caller guarantees nobody else sees it yet). NULL on OOM.
 */
rift_msg *rift_msg_alloc(const rift_mem *mem, size_t refs, const char *subject,
                         size_t subject_len, const char *reply,
                         size_t reply_len, const uint8_t *payload,
                         size_t payload_len);

/* ---- Per-thread block cache ---- */

/* Enables the calling thread's cache, with at most |max_bytes| of slab
 * chunks (blocks in use or free); messages beyond it use the allocator. */
void rift_msg_cache_enable(size_t max_bytes);

/* Unmaps the calling thread's chunks that hold no message; the cache stays
 * enabled. */
void rift_msg_cache_trim(void);

/* Disables the calling thread's cache; chunks go as their last messages
 * are dropped. */
void rift_msg_cache_disable(void);

/* ---- Bridge: a backbone joining several brokers (src/cluster/) ---- */

/*
 * A bridge carries the broker's traffic to other brokers (docs/cluster.md).
 * With one set, a local publish goes to the local plain subscribers, then
 * to |forward|; queue groups are served only through the backbone, which
 * picks one member cluster-wide and hands the message back with
 * rift_broker_publish_bridged. |interest| follows the registry.
 */
typedef struct rift_broker_bridge {
    void *ud;
    /* A plain subscription (queue NULL) or a member of |queue| on
     * |pattern| came (+1) or went (-1). Runs under the broker's write
     * lock: it must not call into the broker. */
    void (*interest)(void *ud, const char *pattern, size_t pattern_len,
                     const char *queue, size_t queue_len, int delta);
    /* A publish made on this broker (any face), after local routing, under
     * the read lock; |local| is the number of local deliveries. |headers|
     * is the NATS header block the publish carried (msg_ext.h), NULL with
     * headers_len 0 for none. True when the backbone took it
     * (rift_publish_report.forwarded). */
    bool (*forward)(void *ud, const char *subject, size_t subject_len,
                    const char *reply, size_t reply_len, const uint8_t *headers,
                    size_t headers_len, const uint8_t *payload,
                    size_t payload_len, size_t local);
} rift_broker_bridge;

/*
 * rift_broker_set_bridge installs |br| (borrowed until replaced; NULL
 * removes it) and replays every registered subscription to its |interest|
 * as +1, so the order of start-up does not matter.
 */
void rift_broker_set_bridge(rift_broker *b, const rift_broker_bridge *br);

/* Which local subscriptions a message from the backbone is for. */
typedef struct rift_bridge_target {
    const char *pattern; /* plain subscriptions with exactly this pattern */
    size_t pattern_len;
    const char *queue; /* else: one member of this group */
    size_t queue_len;
    /* Neither: every matching plain subscription (replies to inboxes). */
    bool no_responders; /* the message is a no-responders status */
    /* A NATS header block the message carries (NULL: none); the message
     * gets it as its block behind a zero origin (msg_ext.h), so NATS
     * subscribers see HMSG and protocol v1 ones the payload only. */
    const uint8_t *headers;
    size_t headers_len;
} rift_bridge_target;

/*
 * rift_broker_publish_bridged delivers a message that came from the
 * backbone to the local subscriptions |t| names; it is never forwarded
 * again. Validation and errors as rift_broker_publish.
 */
int rift_broker_publish_bridged(rift_broker *b, const rift_bridge_target *t,
                                const char *subject, size_t subject_len,
                                const char *reply, size_t reply_len,
                                const uint8_t *payload, size_t payload_len,
                                rift_publish_report *report, rift_error *err);

/* rift_msg_no_responders: the message stands for "nobody on the backbone
 * answered" (a NATS 503 status), not for a reply. */
bool rift_msg_no_responders(const rift_msg *msg);

#endif /* RIFT_BROKER_BROKER_FACE_H */
