/*
 * reopen.h — getting a file stream going again after a failed write
 * (store layer, reopen.c): above the writer and recovery, below the
 * stream and consumer operations that call it first.
 */
#ifndef RIFT_STORE_REOPEN_H
#define RIFT_STORE_REOPEN_H

#include "store/stream_types.h"

/* At the start of a public operation (not on the writer thread, without
 * the lock): after a failed write, gives the stream its on-disk state back
 * (once per failure), and after a lack of space lets writes be tried again
 * once the back-off has passed. */
void rift_stream_revive_if_due(rift_stream *st);

#endif /* RIFT_STORE_REOPEN_H */
