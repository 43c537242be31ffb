/*
 * slab.h — per-thread slabs of small message blocks in 2 MiB huge-page
 * chunks (common layer), behind the broker's message block cache
 * (broker/broker_face.h).
 *
 * A thread that enabled its slab carves blocks of 32-byte size classes out
 * of chunks it maps itself, 2 MiB aligned and advised as transparent huge
 * pages: the first burst after start takes one fault per 2 MiB instead of
 * one per 4 KiB (each costs ~20 us on the VMs rift is benchmarked on, so a
 * backlog of a million small messages cost the server ~0.8 s of faults).
 * Freed blocks are reused by their owner hottest first. Any thread may
 * free a block: one freed elsewhere is handed back to the owner under a
 * lock, and a chunk whose owner has disabled its slab is unmapped by
 * whichever thread frees its last block.
 */
#ifndef RIFT_COMMON_SLAB_H
#define RIFT_COMMON_SLAB_H

#include <stdbool.h>
#include <stddef.h>

/* Largest block a slab serves; larger ones are the caller's business. */
#define RIFT_SLAB_MAX 512

/* Enables the calling thread's slab with at most |max_bytes| of chunks
 * (rounded down to whole chunks); a no-op when it is already enabled. */
void rift_slab_enable(size_t max_bytes);

/* A block of at least |size| bytes from the calling thread's slab, or NULL
 * (slab disabled, |size| over RIFT_SLAB_MAX, chunk budget spent, or no
 * memory): the caller then uses the C allocator. */
void *rift_slab_alloc(size_t size);

/* Returns |block| (from rift_slab_alloc on any thread) to its slab. Any
 * thread. */
void rift_slab_free(void *block);

/* Unmaps the calling thread's chunks that hold no block in use. */
void rift_slab_trim(void);

/* Disables the calling thread's slab: chunks without blocks in use are
 * unmapped now, the others when their last block is freed. */
void rift_slab_disable(void);

/* Size of the huge pages the slab and rift_slab_map_huge map. */
#define RIFT_SLAB_HUGE ((size_t)2 << 20)

/* Maps |bytes| (a multiple of RIFT_SLAB_HUGE) of zeroed memory aligned
 * and advised as transparent huge pages, for other large buffers that
 * would otherwise fault in by 4 KiB; NULL when mapping fails. Any thread;
 * release with rift_slab_unmap_huge. */
void *rift_slab_map_huge(size_t bytes);

void rift_slab_unmap_huge(void *p, size_t bytes);

#endif /* RIFT_COMMON_SLAB_H */
