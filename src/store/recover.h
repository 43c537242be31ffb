/*
 * recover.h — reading a stream directory into a stream (store layer,
 * recover.c): the stream object comes in empty and leaves holding what
 * the files say (segments, index, holes, consumers), with torn tails cut
 * and, in repair mode, corruption cut. It starts no thread and calls no
 * stream operation: stream.c and reopen.c call it, never the reverse.
 */
#ifndef RIFT_STORE_RECOVER_H
#define RIFT_STORE_RECOVER_H

#include "store/stream_types.h"

/* Recovers the directory into |st| (file storage). */
int rift_recover(rift_stream *st, rift_error *err);

#endif /* RIFT_STORE_RECOVER_H */
