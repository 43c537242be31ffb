/*
 * retained.h — the retained records of a stream (store layer,
 * retained.c): the index [first_seq, last_seq] with its holes, the record
 * cache, records found corrupt, retention by count, bytes and age, and
 * reading a record back from its segment. Under the stream lock (or
 * single-threaded during recovery). Below the writer: the writer thread
 * trims the cache and runs age retention through these functions.
 */
#ifndef RIFT_STORE_RETAINED_H
#define RIFT_STORE_RETAINED_H

#include "store/record.h"
#include "store/stream_types.h"

uint64_t rift_stream_now(const rift_stream *st);
/* Frees a segment object (not the file). */
void rift_seg_free(rift_stream *st, rift_seg *s);
/* |seq|, or the end of the hole holding it. */
uint64_t rift_stream_past_hole(const rift_stream *st, uint64_t seq);
/* The sequence of the newest retained record, 0 when there is none. */
uint64_t rift_stream_newest(const rift_stream *st);
/* Drops the first retained record from the index (not the cache). */
void rift_stream_pop_front(rift_stream *st);
/* Moves first_seq past the holes it reached, and drops them. */
void rift_stream_skip_holes(rift_stream *st);
/* Appends the hole [from, to) (above every record). 0 or NOMEM. */
int rift_stream_add_hole(rift_stream *st, uint64_t from, uint64_t to);
/* Evicts by count, bytes and age; raises consumers and hands emptied
 * segments to the stage. Under lock. */
void rift_stream_retain(rift_stream *st, uint64_t now);
/* Evicts every retained record (a purge) with the same consequences;
 * first_seq becomes last_seq + 1. Under lock. */
void rift_stream_evict_all(rift_stream *st);
/* Drops cached records already in the OS beyond the cache budget. */
void rift_stream_cache_trim(rift_stream *st);
/* The timestamp of retained record |seq| (cache or trailer); false when
 * it cannot be read. */
bool rift_stream_ts(rift_stream *st, uint64_t seq, uint64_t *ts);
/* rift_stream_load's answer for a record that is corrupt on disk (it is
 * logged once and callers skip it); errors are negative. */
#define RIFT_LOAD_CORRUPT 1
/* Loads the record |seq| (retained): 0 with a new reference,
 * RIFT_LOAD_CORRUPT, or an error. Texts name the sequence, never a path. */
int rift_stream_load(rift_stream *st, uint64_t seq, rift_srec **out,
                     rift_error *err);

#endif /* RIFT_STORE_RETAINED_H */
