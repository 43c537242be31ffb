/*
 * msg_cache.h — a per-thread cache of message blocks (broker layer), for
 * a thread that both creates and drops most of the messages it handles:
 * the protocol server's thread publishes every remote PUBLISH and drops
 * those messages once their MESSAGE frames are written or acknowledged.
 *
 * A burst to a subscriber that falls behind queues hundreds of thousands
 * of messages; when the queue drains, the C allocator hands the memory
 * back to the kernel and the next burst takes a page fault for every
 * 4 KiB again (about 20 us each on the VMs rift is benchmarked on, more
 * than the rest of a message's processing). Blocks kept here stay mapped
 * and are reused hottest first.
 *
 * Only messages made with the C library allocator (a broker without a
 * rift_mem) use it, and only on a thread that enabled it; a block freed
 * by another thread goes back to the allocator as usual. Builds with
 * AddressSanitizer leave it off so use-after-free stays detectable.
 */
#ifndef RIFT_BROKER_MSG_CACHE_H
#define RIFT_BROKER_MSG_CACHE_H

#include <stddef.h>

/* Enables the calling thread's cache, keeping at most |max_bytes| of
 * freed message blocks. */
void rift_msg_cache_enable(size_t max_bytes);

/* Frees the calling thread's cached blocks; the cache stays enabled. */
void rift_msg_cache_trim(void);

/* Frees the calling thread's cached blocks and disables its cache. */
void rift_msg_cache_disable(void);

#endif /* RIFT_BROKER_MSG_CACHE_H */
