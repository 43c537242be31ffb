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

#endif /* RIFT_BROKER_BROKER_FACE_H */
