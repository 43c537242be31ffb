/*
 * crash_vfs.h — a power-loss simulating rift_vfs for the store tests
 * (tests layer), after SQLite's crash-test VFS. Files live in memory;
 * the model keeps, per file, what the last fdatasync/fsync made durable
 * and the writes and truncations made since, and per directory, the
 * entries the last fsync of that directory made durable and the
 * creations, renames and unlinks made since. A cut powers the "machine"
 * off at a chosen operation (every later call fails with EIO); a restart
 * then decides, from a seed, which volatile changes reached the disk:
 * per file a prefix (or, harshly, any subset) of its writes, the last one
 * possibly torn at a sector boundary or mid-sector, and per directory a
 * prefix of its entry changes (a metadata journal commits in order). The
 * survivors become the durable state the next open recovers from.
 *
 * Truncation is modelled per file (it changes the inode, which
 * fdatasync flushes, like the file size); directory entries are durable
 * only after an fsync of the directory itself, never by a sync of the
 * file (POSIX; this is how a new segment can vanish). Thread-safe (one
 * mutex). Paths are absolute within the model ("/a/b/file").
 */
#ifndef RIFT_TESTS_CRASH_VFS_H
#define RIFT_TESTS_CRASH_VFS_H

#include "store/vfs.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct crash_vfs crash_vfs;

/* How the volatile changes of a cut survive. */
typedef struct crash_policy {
    /* Any subset of a file's unsynced writes survives, not only a prefix
     * in issue order (out-of-order writeback). */
    bool subset;
    /* A torn write keeps its length: the part past the tear reads as
     * zeros or garbage (else the file ends at the tear when the write
     * extended it). */
    bool fill_torn;
} crash_policy;

/* What a restart did with the volatile changes (added to by each). */
typedef struct crash_stats {
    uint64_t cuts;
    uint64_t volatile_writes; /* unsynced writes and truncations at cuts */
    uint64_t kept;
    uint64_t dropped;
    uint64_t torn;
    uint64_t torn_filled; /* of |torn|: zeros or garbage past the tear */
    uint64_t dir_ops;     /* unsynced entry changes at cuts */
    uint64_t dir_ops_lost;
    uint64_t cuts_losing_data; /* cuts that dropped or tore something */
} crash_stats;

crash_vfs *crash_vfs_new(void);
void crash_vfs_free(crash_vfs *c);
const rift_vfs *crash_vfs_table(crash_vfs *c);

/* The |n|th mutating call from now (write, sync, truncate, create,
 * rename, unlink, mkdir; 1-based) cuts the power instead of running (a
 * write may still land, as volatile data). 0 disarms. */
void crash_vfs_arm(crash_vfs *c, uint64_t n);
/* Cuts the power now (no-op when it is off). */
void crash_vfs_power_off(crash_vfs *c);
bool crash_vfs_is_off(crash_vfs *c);
/* Mutating calls since creation (to size the next arm). */
uint64_t crash_vfs_mutations(crash_vfs *c);

/* Powers off if needed, decides with |seed| and |policy| what survives,
 * makes that the durable state and powers on. Descriptors still open are
 * invalidated (close them first: later calls with them fail EBADF). */
void crash_vfs_restart(crash_vfs *c, uint64_t seed, const crash_policy *policy,
                       crash_stats *stats);

/* The clock wall_ms returns (fixed, so records replay identically). */
void crash_vfs_set_now(crash_vfs *c, uint64_t ms);

#endif /* RIFT_TESTS_CRASH_VFS_H */
