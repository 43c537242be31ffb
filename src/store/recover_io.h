/*
 * recover_io.h — helpers every part of recovery shares (store layer,
 * recover_io.c): error texts that name the file and offset, paths in the
 * stream directory, truncation, and the report's torn-tail entries.
 * Used by recover_segments.c and recover.c only.
 */
#ifndef RIFT_STORE_RECOVER_IO_H
#define RIFT_STORE_RECOVER_IO_H

#include "store/stream_types.h"

/* RIFT_ERR_IO: "|what| |path|: <os error of rc>". */
int rift_recover_io_error(rift_error *err, const char *what, const char *path,
                          int rc);
/* RIFT_ERR_STORAGE: the corruption |why| in |path| at |off|. */
int rift_recover_corrupt(rift_error *err, const char *why, const char *path,
                         uint64_t off);
/* Whether this open may change files (normal open and repair). */
bool rift_recover_writable(const rift_stream *st);
/* |dir|/|name|, allocated; NULL when out of memory. */
char *rift_recover_join(rift_stream *st, const char *name);
/* Truncates |fd| (|path|) to |size| bytes and syncs it. */
int rift_recover_truncate(rift_stream *st, int fd, const char *path,
                          uint64_t len, rift_error *err);
/* Reports a torn tail of |path| at |off| (logged, counted). */
void rift_recover_note_torn(rift_stream *st, const char *path, uint64_t off);
/* Counts |bytes| cut from the files. */
void rift_recover_note_cut(rift_stream *st, uint64_t bytes);

#endif /* RIFT_STORE_RECOVER_IO_H */
