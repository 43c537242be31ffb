/*
 * recover_segments.h — recovering the segment files into the index
 * (store layer, recover_segments.c), for recover.c.
 */
#ifndef RIFT_STORE_RECOVER_SEGMENTS_H
#define RIFT_STORE_RECOVER_SEGMENTS_H

#include "store/stream_types.h"

/* Scans the segments |bases| (ascending, |n| of them) into the index,
 * cutting a torn tail (and in a repair the log at the first bad record);
 * stops at the first segment that ends the walk. 0 or the error. */
int rift_recover_segments(rift_stream *st, const uint64_t *bases, size_t n,
                          rift_error *err);
/* Closes and frees a segment object (the file stays). */
void rift_recover_close_seg(rift_stream *st, rift_seg *s);
/* Whether the state log holds a hole covering [from, to). */
bool rift_recover_logged_hole(const rift_stream *st, uint64_t from,
                              uint64_t to);

#endif /* RIFT_STORE_RECOVER_SEGMENTS_H */
