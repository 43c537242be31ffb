/*
 * cycle.h — one write cycle of a stage (store layer, cycle.c): its bytes
 * to the files through the vfs, in the crash-consistency order stated in
 * cycle.c and writer.c. Runs on the writer thread without the lock
 * (writer-owned fields), except where a comment says "under lock".
 */
#ifndef RIFT_STORE_CYCLE_H
#define RIFT_STORE_CYCLE_H

#include "store/stream_types.h"

/* Writes and, as the stage needs, syncs all of |io|. 0 or the error. */
int rift_cycle_write(rift_stream *st, rift_stage *io, rift_error *err);
/* Writes only |io|'s appends to existing segments (no sync). */
int rift_cycle_write_extents(rift_stream *st, rift_stage *io, rift_error *err);
/* Writes |f|'s appends and state events, no sync, for a caller that
 * writes its own stage (writer.c, write_inline). Under lock. */
int rift_cycle_write_unsynced(rift_stream *st, rift_stage *f, rift_error *err);
/* fdatasync (|data_only|) or fsync of |fd|, counted; |path| for errors. */
int rift_cycle_sync_fd(rift_stream *st, int fd, bool data_only,
                       const char *path, rift_error *err);
/* The one segment a synced stage only appends to, or NULL. */
rift_seg *rift_cycle_simple_stage(rift_stream *st, const rift_stage *io);
/* Records of |io| are in the OS now. Under lock. */
void rift_cycle_mark_flushed(rift_stream *st, const rift_stage *io);
/* Closes and frees the segments on |io|'s dead list. */
void rift_cycle_free_dead(rift_stream *st, rift_stage *io);

#endif /* RIFT_STORE_CYCLE_H */
