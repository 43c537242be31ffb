/*
 * stage.h — the writer's staging area as callers fill it (store layer,
 * stage.c): encoded records placed in segments (rolling to a new one when
 * full), state events, snapshots of the whole state, segments retention
 * emptied. Under the stream lock; nothing here writes a file or wakes a
 * thread — writer.c takes a filled stage and cycle.c writes it.
 */
#ifndef RIFT_STORE_STAGE_H
#define RIFT_STORE_STAGE_H

#include "store/stream_types.h"

void rift_stage_init(rift_stage *s, const rift_mem *mem);
void rift_stage_free(rift_stage *s);
bool rift_stage_empty(const rift_stage *s);
/* Empties |s| after its cycle, keeping modest buffers for the next. */
void rift_stage_reset(rift_stage *s);
/* Stages |len| record bytes in the active segment (rolling when full) and
 * returns where to write them, with the segment offset in *|off|. */
uint8_t *rift_stage_record(rift_stream *st, size_t len, uint32_t *off,
                           rift_error *err);
/* The state buffer of the stage being filled, after a snapshot check. */
rift_sbuf *rift_stage_state_buf(rift_stream *st);
/* Ends a staged state event: accounts its size, maybe snapshots. */
void rift_stage_state_done(rift_stream *st, size_t before);
/* Replaces the staged state with a full snapshot. Under lock. */
int rift_stage_snapshot(rift_stream *st);
/* Moves segments that retention emptied to the dead list. Under lock. */
void rift_stage_drop_segments(rift_stream *st);

#endif /* RIFT_STORE_STAGE_H */
