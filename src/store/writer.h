/*
 * writer.h — the per-stream writer thread, its sync helpers and group
 * commit (store layer, writer.c): callers finish a staged mutation with
 * rift_writer_commit and wait for (or are called back with) its
 * generation; the writer swaps the stage out and has cycle.c write it.
 */
#ifndef RIFT_STORE_WRITER_H
#define RIFT_STORE_WRITER_H

#include "store/stream_types.h"

int rift_writer_start(rift_stream *st, rift_error *err);
/* Drains and stops the writer (close). */
void rift_writer_stop(rift_stream *st);
/* Wakes the writer after staging. Under lock. */
void rift_writer_kick(rift_stream *st);
/*
 * Finishes a mutation under lock: an async call registers |cb|, or sets
 * *|done| (which it must pass, initialized false) when nothing remains to
 * wait for and |cb| will not run; a blocking one gets in *|wait| the
 * generation to wait for with rift_writer_wait once it has released the
 * lock (0: nothing to wait for) and passes NULL |done|. Returns 0 or an
 * error.
 */
int rift_writer_commit(rift_stream *st, bool staged, rift_stream_done_cb cb,
                       void *user_data, bool blocking, uint64_t *wait,
                       bool *done, rift_error *err);
/* As rift_writer_commit for an already staged generation |ticket|. */
int rift_writer_commit_ticket(rift_stream *st, uint64_t ticket,
                              rift_stream_done_cb cb, void *user_data,
                              bool blocking, uint64_t *wait, bool *done,
                              rift_error *err);
/* Waits, without the stream lock, until generation |ticket| is
 * acknowledged (synced, or for an unsynced stream written): 0 or the
 * poison error. 0 for |ticket| 0. */
int rift_writer_wait(rift_stream *st, uint64_t ticket, rift_error *err);
/* Makes room for one completion so registering one cannot fail later. */
int rift_writer_reserve(rift_stream *st, rift_error *err);
/* True on the writer thread of |st| (blocking calls are refused). */
bool rift_writer_is_self(const rift_stream *st);
/* The poison error for later operations. */
int rift_writer_poisoned(rift_stream *st, rift_error *err);
/* Fails with the stream's closed or poisoned error, else 0. */
int rift_stream_check_usable(rift_stream *st, rift_error *err);

/* Ends a public _async call: on success stores |done| in *|completed|
 * (which may be NULL); returns |rc|. */
static inline int rift_async_result(int rc, bool done, bool *completed) {
    if (rc == 0 && completed != NULL) {
        *completed = done;
    }
    return rc;
}

#endif /* RIFT_STORE_WRITER_H */
