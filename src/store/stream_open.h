/*
 * stream_open.h — a stream's lifetime inside the store (store layer,
 * stream.c): opening in a mode (the offline verify and repair of
 * offline.c use the recovery alone) and dropping a reference (consumer
 * handles hold one).
 */
#ifndef RIFT_STORE_STREAM_OPEN_H
#define RIFT_STORE_STREAM_OPEN_H

#include "store/stream_types.h"

void rift_stream_unref(rift_stream *st);
/* Opens in |mode| (verify and repair use the recovery alone). */
int rift_stream_new_mode(rift_stream **pstream,
                         const rift_stream_settings *settings,
                         rift_open_mode mode, rift_store_report *report,
                         rift_error *err);

#endif /* RIFT_STORE_STREAM_OPEN_H */
