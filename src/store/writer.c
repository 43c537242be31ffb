/*
 * writer.c — the per-stream writer thread and group commit (store layer).
 *
 * Callers stage encoded records and state events under the stream lock in
 * |fill| and get a ticket, the generation of that stage. The writer swaps
 * |fill| for its empty |io| stage, writes and syncs it without the lock,
 * then marks the generation durable, wakes blocking callers and runs the
 * completion callbacks of async ones. While one cycle's fdatasync runs,
 * the next stage collects everything submitted meanwhile: that is the
 * group commit, and it is why fsync never runs on a caller's thread.
 *
 * Order inside a cycle (crash consistency): segment data, its fdatasync
 * (the previous segment is synced before a new one is written), directory
 * sync for new files, then the state log (or a snapshot replacing it) and
 * its fdatasync, then unlinks of segments retention emptied. State that
 * refers to a record is therefore never durable before the record.
 *
 * Unsynced streams (sync_on_write false) skip the syncs but still
 * acknowledge a mutation only once its bytes were written (pwrite): the
 * writer completes a generation after writing it, and a blocking caller
 * that finds the writer parked writes the stage itself under the lock
 * (write_inline), saving two thread wake-ups per publish.
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Stage buffers larger than this are released after a cycle. */
#define STAGE_KEEP (4u << 20)

static _Thread_local const rift_stream *tls_writer;

/* ---- Stages ---- */

void rift_stage_init(rift_stage *s, const rift_mem *mem) {
    rift_sbuf_init(&s->seg_data, mem);
    rift_ring_init(&s->extents, sizeof(rift_extent), mem);
    rift_sbuf_init(&s->state_data, mem);
    rift_sbuf_init(&s->snapshot, mem);
    s->has_snapshot = false;
    rift_ring_init(&s->dead, sizeof(rift_seg *), mem);
    s->need_sync = false;
    s->full_sync = false;
    s->last_seq = 0;
}

void rift_stage_free(rift_stage *s) {
    rift_sbuf_free(&s->seg_data);
    rift_ring_free(&s->extents);
    rift_sbuf_free(&s->state_data);
    rift_sbuf_free(&s->snapshot);
    rift_ring_free(&s->dead);
}

bool rift_stage_empty(const rift_stage *s) {
    return s->extents.len == 0 && s->state_data.len == 0 && !s->has_snapshot &&
           s->dead.len == 0 && !s->full_sync;
}

static void stage_reset(rift_stage *s) {
    rift_sbuf_reset(&s->seg_data, STAGE_KEEP);
    s->extents.len = 0;
    s->extents.head = 0;
    rift_sbuf_reset(&s->state_data, STAGE_KEEP);
    rift_sbuf_reset(&s->snapshot, 0);
    s->has_snapshot = false;
    s->dead.len = 0;
    s->dead.head = 0;
    s->need_sync = false;
    s->full_sync = false;
    s->last_seq = 0;
    s->nops = 0;
}

/* ---- Staging (callers, under lock) ---- */

uint8_t *rift_writer_stage_record(rift_stream *st, size_t len, uint32_t *off,
                                  rift_error *err) {
    rift_stage *f = &st->fill;
    rift_seg *a = st->segs.len
                      ? *(rift_seg **)rift_ring_at(&st->segs, st->segs.len - 1)
                      : NULL;
    bool roll = a == NULL || st->force_roll ||
                (a->end > a->base && a->size + len > st->cfg.segment_bytes);
    if (roll) {
        rift_seg *s = rift_calloc(st->mem, 1, sizeof(*s));
        size_t plen = strlen(st->dir) + 1 + RIFT_SEG_NAME_LEN + 1;
        char *path = s ? rift_malloc(st->mem, plen) : NULL;
        rift_seg **slot = path ? rift_ring_push(&st->segs) : NULL;
        rift_extent *e = slot ? rift_ring_push(&f->extents) : NULL;
        uint8_t *h = e ? rift_sbuf_grow(&f->seg_data, RIFT_SEG_HEADER) : NULL;
        if (h == NULL) {
            if (e != NULL) {
                rift_ring_pop_back(&f->extents);
            }
            if (slot != NULL) {
                rift_ring_pop_back(&st->segs);
            }
            rift_free(st->mem, path);
            rift_free(st->mem, s);
            rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), st->last_seq + 1);
        snprintf(path, plen, "%s/%s", st->dir, name);
        s->path = path;
        s->base = st->last_seq + 1;
        s->end = s->base;
        s->size = RIFT_SEG_HEADER;
        atomic_init(&s->fd, -1);
        *slot = s;
        rift_seg_header_encode(h, s->base);
        e->seg = s;
        e->off = 0;
        e->pos = (size_t)(h - f->seg_data.data);
        e->len = RIFT_SEG_HEADER;
        st->force_roll = false;
        a = s;
    }
    rift_extent *e =
        f->extents.len ? rift_ring_at(&f->extents, f->extents.len - 1) : NULL;
    bool extend = e != NULL && e->seg == a && e->off + e->len == a->size &&
                  e->pos + e->len == f->seg_data.len;
    if (!extend) {
        e = rift_ring_push(&f->extents);
        if (e == NULL) {
            rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        e->seg = a;
        e->off = a->size;
        e->pos = f->seg_data.len;
        e->len = 0;
    }
    uint8_t *p = rift_sbuf_grow(&f->seg_data, len);
    if (p == NULL) {
        if (!extend) {
            rift_ring_pop_back(&f->extents);
        }
        rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->len += len;
    *off = (uint32_t)a->size;
    a->size += len;
    a->end++;
    f->last_seq = st->last_seq + 1;
    return p;
}

rift_sbuf *rift_writer_state_buf(rift_stream *st) {
    return &st->fill.state_data;
}

void rift_writer_state_done(rift_stream *st, size_t before) {
    st->state_bytes += st->fill.state_data.len - before;
    uint64_t limit =
        RIFT_MAX(st->cfg.state_snapshot_bytes, 2 * st->snapshot_bytes);
    if (st->state_bytes > limit) {
        /* Out of memory only postpones the snapshot to a later event. */
        (void)rift_writer_snapshot(st);
    }
}

int rift_writer_snapshot(rift_stream *st) {
    rift_sbuf *b = &st->fill.snapshot;
    b->len = 0;
    uint8_t *h = rift_sbuf_grow(b, RIFT_STATE_HEADER);
    if (h == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_state_header_encode(h);
    int64_t start = rift_ev_begin(b, RIFT_EV_FIRST_SEQ);
    if (start < 0 || rift_ev_put_u64(b, st->first_seq) != 0) {
        b->len = 0;
        return RIFT_ERR_NOMEM;
    }
    rift_ev_finish(b, start);
    for (size_t i = 0; i < st->holes.len; i++) {
        const rift_hole *hole = rift_ring_at(&st->holes, i);
        start = rift_ev_begin(b, RIFT_EV_HOLE);
        if (start < 0 || rift_ev_put_u64(b, hole->from) != 0 ||
            rift_ev_put_u64(b, hole->to) != 0) {
            b->len = 0;
            return RIFT_ERR_NOMEM;
        }
        rift_ev_finish(b, start);
    }
    for (size_t i = 0; i < st->ncons; i++) {
        if (rift_consumer_encode(st->cons[i], b) != 0) {
            b->len = 0;
            return RIFT_ERR_NOMEM;
        }
    }
    /* Events staged so far are contained in the snapshot. */
    st->fill.state_data.len = 0;
    st->fill.has_snapshot = true;
    st->marker = st->first_seq;
    st->snapshot_bytes = b->len;
    st->state_bytes = b->len;
    return 0;
}

void rift_writer_drop_segments(rift_stream *st) {
    bool dropped = false;
    while (st->segs.len > 1) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
        if (s->end > st->first_seq) {
            break;
        }
        rift_seg **slot = rift_ring_push(&st->fill.dead);
        if (slot == NULL) {
            break; /* retried at the next eviction */
        }
        *slot = s;
        rift_ring_pop_front(&st->segs);
        if (st->rseg == s) {
            st->rseg = NULL;
        }
        dropped = true;
    }
    if (dropped && st->marker != st->first_seq) {
        /* Recovery must not bring back what the unlinks remove (the
         * marker is written before them in the same cycle). */
        rift_sbuf *b = &st->fill.state_data;
        size_t before = b->len;
        int64_t start = rift_ev_begin(b, RIFT_EV_FIRST_SEQ);
        if (start >= 0 && rift_ev_put_u64(b, st->first_seq) == 0) {
            rift_ev_finish(b, start);
            st->marker = st->first_seq;
            rift_writer_state_done(st, before);
        } else {
            b->len = before;
        }
    }
}

/*
 * One wake-up per stage is enough: once signalled the writer will find
 * everything staged after it. While the writer gathers a group it wants a
 * wake-up only when the group is complete. A futex call per publish would
 * otherwise cost more than the publish.
 */
void rift_writer_kick(rift_stream *st) {
    if (!st->writer_idle) {
        return;
    }
    if (st->gather_want > 0 ? st->fill.nops >= st->gather_want
                            : !st->fill_kicked) {
        st->fill_kicked = true;
        pthread_cond_signal(&st->work_cv);
    }
}

bool rift_writer_is_self(const rift_stream *st) {
    return tls_writer == st;
}

int rift_writer_poisoned(rift_stream *st, rift_error *err) {
    char cause[sizeof(st->poison_err.text)];
    memcpy(cause, st->poison_err.text, sizeof(cause));
    if (st->space_failure) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: journal write previously "
                              "failed for lack of space; writes are retried "
                              "automatically once space is freed (at most "
                              "every %llu s), or at once when you reopen "
                              "the stream (%s)",
                              (unsigned long long)(st->backoff_ms / 1000),
                              cause);
    }
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: journal write previously failed; "
                          "nothing is retried after an I/O error: check the "
                          "disk, then reopen the stream (%s)",
                          cause);
}

int rift_writer_reserve(rift_stream *st, rift_error *err) {
    if (st->completions.len < st->completions.cap) {
        return 0;
    }
    if (rift_ring_push(&st->completions) == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_ring_pop_back(&st->completions);
    return 0;
}

int rift_writer_wait(rift_stream *st, uint64_t ticket, rift_error *err) {
    if (ticket == 0) {
        return 0;
    }
    size_t slot = ticket % RIFT_ARRAY_LEN(st->gen_wait);
    pthread_mutex_t *mu = &st->gen_wait[slot].mu;
    pthread_cond_t *cv = &st->gen_wait[slot].cv;
    pthread_mutex_lock(mu);
    bool failed = false;
    while (atomic_load(&st->durable_gen) < ticket) {
        if (atomic_load(&st->poison) != 0 &&
            ticket >= atomic_load(&st->poison_gen)) {
            failed = true;
            break;
        }
        pthread_cond_wait(cv, mu);
    }
    pthread_mutex_unlock(mu);
    /* A generation that failed before a reopen counts as settled after
     * it, but never as durable. */
    failed = failed || (ticket >= atomic_load(&st->failed_from) &&
                        ticket < atomic_load(&st->failed_to));
    if (!failed) {
        return 0;
    }
    pthread_mutex_lock(&st->lock);
    rift_error_copy(err, &st->poison_err);
    int rc = st->poison != 0 ? st->poison : st->fail_rc;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Wakes the blocking callers of every generation settled since the last
 * call (all of them after a failure). Under lock. */
static void wake_slot(rift_stream *st, size_t i) {
    pthread_mutex_lock(&st->gen_wait[i].mu);
    pthread_cond_broadcast(&st->gen_wait[i].cv);
    pthread_mutex_unlock(&st->gen_wait[i].mu);
}

static void wake_settled(rift_stream *st) {
    size_t n = RIFT_ARRAY_LEN(st->gen_wait);
    uint64_t durable = st->durable_gen;
    if (st->poison != 0) {
        for (size_t i = 0; i < n; i++) {
            wake_slot(st, i);
        }
        return;
    }
    uint64_t from = st->woken_gen + 1;
    if (durable >= from + n) {
        from = durable - n + 1;
    }
    for (uint64_t g = from; g <= durable; g++) {
        wake_slot(st, (size_t)(g % n));
    }
    st->woken_gen = durable;
}

/* ---- The cycle (writer thread, no lock) ---- */

static int io_fail(rift_stream *st, rift_error *err, const char *op,
                   const char *path, int rc) {
    atomic_store(&st->io_errno, rc);
    char os[256];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    rift_vfs_os_error(rc, os, sizeof(os));
    rift_log(RIFT_LOG_ERROR, "stream storage: %s %s: %s", op, path, os);
    return rift_error_set(err, RIFT_ERR_IO, "messaging I/O: %s %s: %s", op,
                          base, os);
}

static int write_all(rift_stream *st, int fd, const uint8_t *p, size_t len,
                     uint64_t off, const char *path, rift_error *err) {
    const rift_vfs *v = st->vfs;
    while (len > 0) {
        rift_ssize n = v->pwrite(v->user_data, fd, p, len, off);
        if (n <= 0) {
            return io_fail(st, err, "write", path, n < 0 ? (int)n : -EIO);
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int do_sync(rift_stream *st, int fd, bool data_only, const char *path,
                   rift_error *err) {
    const rift_vfs *v = st->vfs;
    int rc =
        data_only ? v->fdatasync(v->user_data, fd) : v->fsync(v->user_data, fd);
    atomic_fetch_add_explicit(&st->syncs, 1, memory_order_relaxed);
    if (rc != 0) {
        return io_fail(st, err, data_only ? "fdatasync" : "fsync", path, rc);
    }
    return 0;
}

static int sync_seg(rift_stream *st, rift_seg *s, rift_error *err) {
    if (!s->dirty) {
        return 0;
    }
    int rc = do_sync(st, atomic_load(&s->fd), true, s->path, err);
    if (rc != 0) {
        return rc;
    }
    s->synced = s->written;
    s->dirty = false;
    return 0;
}

static int sync_dirty(rift_stream *st, rift_error *err) {
    while (st->wdirty.len > 0) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->wdirty, 0);
        int rc = sync_seg(st, s, err);
        if (rc != 0) {
            return rc;
        }
        rift_ring_pop_front(&st->wdirty);
    }
    return 0;
}

static int mark_dirty(rift_stream *st, rift_seg *s, rift_error *err) {
    if (s->dirty) {
        return 0;
    }
    rift_seg **slot = rift_ring_push(&st->wdirty);
    if (slot == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    *slot = s;
    s->dirty = true;
    return 0;
}

static int write_snapshot(rift_stream *st, rift_stage *io, rift_error *err) {
    const rift_vfs *v = st->vfs;
    size_t dlen = strlen(st->dir);
    char tmp[4096], fin[4096];
    if (dlen + 16 > sizeof(tmp)) {
        return rift_error_set(err, RIFT_ERR_IO, "messaging I/O: path too long");
    }
    snprintf(tmp, sizeof(tmp), "%s/%s", st->dir, RIFT_STATE_TMP_FILE);
    snprintf(fin, sizeof(fin), "%s/%s", st->dir, RIFT_STATE_FILE);
    int fd = v->open(v->user_data, tmp, O_RDWR | O_CREAT | O_TRUNC,
                     RIFT_STORE_FILE_MODE);
    if (fd < 0) {
        return io_fail(st, err, "create", tmp, fd);
    }
    uint64_t size = io->snapshot.len;
    int rc =
        write_all(st, fd, io->snapshot.data, io->snapshot.len, 0, tmp, err);
    if (rc == 0 && io->state_data.len > 0) {
        rc = write_all(st, fd, io->state_data.data, io->state_data.len, size,
                       tmp, err);
        size += io->state_data.len;
    }
    /* The snapshot is always synced before it replaces the log: a rename
     * over a file whose data never reached the disk could lose all
     * consumer state on power failure. */
    if (rc == 0) {
        rc = do_sync(st, fd, true, tmp, err);
    }
    if (rc == 0) {
        int r = v->rename(v->user_data, tmp, fin);
        if (r != 0) {
            rc = io_fail(st, err, "rename", tmp, r);
        }
    }
    if (rc == 0) {
        rc = do_sync(st, st->dir_fd, false, st->dir, err);
    }
    if (rc != 0) {
        v->close(v->user_data, fd);
        return rc;
    }
    st->dir_dirty = false;
    v->close(v->user_data, st->state_fd);
    st->state_fd = fd;
    st->state_size = size;
    st->state_dirty = false;
    return 0;
}

static int cycle(rift_stream *st, rift_stage *io, rift_error *err) {
    const rift_vfs *v = st->vfs;
    bool sync = io->need_sync || io->full_sync;
    bool created = false;
    rift_seg *prev = NULL;
    int rc;

    for (size_t i = 0; i < io->extents.len; i++) {
        rift_extent *e = rift_ring_at(&io->extents, i);
        rift_seg *s = e->seg;
        if (prev != NULL && prev != s && sync) {
            /* A segment is complete on disk before its successor gets a
             * byte, so only the newest segment can end torn. */
            if ((rc = sync_seg(st, prev, err)) != 0) {
                return rc;
            }
        }
        int fd = atomic_load(&s->fd);
        if (fd < 0) {
            /* Older segments are complete on disk before a new one
             * exists, on unsynced streams too (one fdatasync per segment
             * roll): after a power cut only the newest segment can then
             * be torn, which recovery cuts back, rather than an older
             * one, which it must refuse as corrupt. */
            if ((rc = sync_dirty(st, err)) != 0) {
                return rc;
            }
            fd = v->open(v->user_data, s->path, O_RDWR | O_CREAT | O_EXCL,
                         RIFT_STORE_FILE_MODE);
            if (fd < 0) {
                return io_fail(st, err, "create", s->path, fd);
            }
            atomic_store(&s->fd, fd);
            created = true;
        }
        rc = write_all(st, fd, io->seg_data.data + e->pos, e->len, e->off,
                       s->path, err);
        if (rc != 0) {
            return rc;
        }
        s->written = e->off + e->len;
        if ((rc = mark_dirty(st, s, err)) != 0) {
            return rc;
        }
        prev = s;
    }
    if (sync) {
        if ((rc = sync_dirty(st, err)) != 0) {
            return rc;
        }
    }
    /* Unsynced streams create and unlink segments without syncing the
     * directory; a checkpoint or close (|sync|) syncs it then, or the
     * files it made durable could lose their names in a power cut. */
    st->dir_dirty |= created;
    if (st->dir_dirty && (sync || st->cfg.sync_on_write)) {
        if ((rc = do_sync(st, st->dir_fd, false, st->dir, err)) != 0) {
            return rc;
        }
        st->dir_dirty = false;
    }

    if (io->has_snapshot) {
        if ((rc = write_snapshot(st, io, err)) != 0) {
            return rc;
        }
    } else if (io->state_data.len > 0) {
        rc =
            write_all(st, st->state_fd, io->state_data.data, io->state_data.len,
                      st->state_size, RIFT_STATE_FILE, err);
        if (rc != 0) {
            return rc;
        }
        st->state_size += io->state_data.len;
        st->state_dirty = true;
    }
    if (sync && st->state_dirty) {
        if ((rc = do_sync(st, st->state_fd, true, RIFT_STATE_FILE, err)) != 0) {
            return rc;
        }
        st->state_dirty = false;
    }

    for (size_t i = 0; i < io->dead.len; i++) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&io->dead, i);
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            v->close(v->user_data, fd);
            atomic_store(&s->fd, -1);
        }
        rc = v->unlink(v->user_data, s->path);
        if (rc != 0 && rc != -ENOENT) {
            return io_fail(st, err, "unlink", s->path, rc);
        }
    }
    st->dir_dirty |= io->dead.len > 0;
    if (st->dir_dirty && (sync || st->cfg.sync_on_write)) {
        if ((rc = do_sync(st, st->dir_fd, false, st->dir, err)) != 0) {
            return rc;
        }
        st->dir_dirty = false;
    }
    return 0;
}

/* Frees the segments of |io|'s dead list, which nothing else references:
 * they left the stream's list under the lock before being staged. */
static void free_dead(rift_stream *st, rift_stage *io) {
    for (size_t i = 0; i < io->dead.len; i++) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&io->dead, i);
        if (s->dirty) {
            for (size_t k = 0; k < st->wdirty.len; k++) {
                rift_seg **d = rift_ring_at(&st->wdirty, k);
                if (*d == s) {
                    /* Swap-free removal keeps the ring dense; sync order
                     * among older segments does not matter. */
                    *d = *(rift_seg **)rift_ring_at(&st->wdirty,
                                                    st->wdirty.len - 1);
                    rift_ring_pop_back(&st->wdirty);
                    break;
                }
            }
        }
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            st->vfs->close(st->vfs->user_data, fd);
        }
        rift_seg_free(st, s);
    }
}

static void wait_work(rift_stream *st) {
    st->writer_idle = true;
    st->writer_parked = true;
    if (st->cfg.max_age_ms > 0) {
        /* Age retention also runs when nobody calls, so expired segments
         * leave the disk. */
        uint64_t period = RIFT_MIN(st->cfg.max_age_ms, 1000);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + period * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        if (pthread_cond_timedwait(&st->work_cv, &st->lock, &ts) == ETIMEDOUT &&
            st->poison == 0) {
            rift_stream_retain(st, rift_stream_now(st));
        }
    } else {
        pthread_cond_wait(&st->work_cv, &st->lock);
    }
    st->writer_idle = false;
    st->writer_parked = false;
}

/*
 * Group commit needs the callers a cycle released to have come back before
 * the next sync starts, or syncs alternate between big and tiny groups.
 * While the stage holds fewer mutations than the last cycle did, wait a
 * little (a fraction of a sync, at most 200 us) for the rest.
 */
static void gather(rift_stream *st) {
    if (!st->cfg.sync_on_write || st->fill.nops >= st->last_ops ||
        st->stopping) {
        return;
    }
    uint64_t delay = RIFT_MIN(st->last_sync_ns / 4, 200000u);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + delay;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    st->writer_idle = true;
    while (st->fill.nops < st->last_ops && !st->stopping) {
        if (pthread_cond_timedwait(&st->work_cv, &st->lock, &ts) == ETIMEDOUT) {
            break;
        }
    }
    st->writer_idle = false;
}

/* ---- Settling completions (under lock) ---- */

/* Moves the completions that are now decided into |out| with their
 * status: durable ones succeed, those at or after a failed generation
 * fail. They are in ticket order, so the first undecided one stops it. */
static void collect(rift_stream *st, rift_ring *out) {
    out->len = 0;
    out->head = 0;
    while (st->completions.len > 0) {
        rift_completion *c = rift_ring_at(&st->completions, 0);
        int status;
        if (c->ticket <= st->durable_gen) {
            status = 0;
        } else if (st->poison != 0 && c->ticket >= st->poison_gen) {
            status = st->poison;
        } else {
            break;
        }
        rift_completion *f = rift_ring_push(out);
        if (f == NULL) {
            break; /* settled at the next opportunity */
        }
        *f = *c;
        f->status = status;
        rift_ring_pop_front(&st->completions);
    }
}

static void fire(const rift_ring *out, const rift_error *perr) {
    for (size_t i = 0; i < out->len; i++) {
        const rift_completion *c = rift_ring_at(out, i);
        c->cb(c->user_data, c->status, c->status ? perr : NULL);
    }
}

static void set_poison(rift_stream *st, int rc, uint64_t gen,
                       const rift_error *err) {
    if (st->poison != 0 && gen >= st->poison_gen) {
        return;
    }
    st->poison = rc;
    st->poison_gen = gen;
    st->fail_rc = rc;
    st->rolled_back = false;
    int os = atomic_load(&st->io_errno);
    st->space_failure = os == -ENOSPC || os == -EDQUOT;
    rift_error_copy(&st->poison_err, err);
    if (st->poison_err.code == 0) {
        rift_error_set(&st->poison_err, rc, "%s", rift_strerror(rc));
    }
}

/* ---- Sync helpers: pipelined segment syncs ---- */

/*
 * A publish-only cycle needs just an fdatasync of the segment it appended
 * to, and concurrent fdatasyncs overlap on the device, so the writer hands
 * them to helpers and goes on writing the next stage. They complete in
 * generation order: a sync that returns early is not reported before the
 * older ones, so one failure can never be hidden by a later success.
 */
static void settle_jobs(rift_stream *st) {
    while (st->jlen > 0) {
        rift_sync_job *j = &st->jobs[st->jhead];
        if (j->state != 2) {
            break;
        }
        if (j->rc != 0) {
            set_poison(st, j->rc, j->gen, &j->err);
        } else if (st->poison == 0 || j->gen < st->poison_gen) {
            if (j->gen > st->durable_gen) {
                st->durable_gen = j->gen;
            }
            if (j->last_seq > st->durable_seq) {
                st->durable_seq = j->last_seq;
            }
        }
        st->jhead = (st->jhead + 1) % RIFT_SYNC_HELPERS;
        st->jlen--;
    }
}

static void *helper_main(void *arg) {
    rift_stream *st = arg;
    tls_writer = st;
    rift_ring out;
    rift_ring_init(&out, sizeof(rift_completion), st->mem);
    pthread_mutex_lock(&st->lock);
    for (;;) {
        rift_sync_job *j = NULL;
        for (size_t k = 0; k < st->jlen; k++) {
            rift_sync_job *c = &st->jobs[(st->jhead + k) % RIFT_SYNC_HELPERS];
            if (c->state == 0) {
                j = c;
                break;
            }
        }
        if (j == NULL) {
            if (st->helpers_stop) {
                break;
            }
            pthread_cond_wait(&st->job_cv, &st->lock);
            continue;
        }
        j->state = 1;
        int fd = j->fd;
        pthread_mutex_unlock(&st->lock);

        rift_error err = {0};
        uint64_t t0 = rift_now_ns();
        int rc = do_sync(st, fd, true, j->path, &err);
        uint64_t dt = rift_now_ns() - t0;

        pthread_mutex_lock(&st->lock);
        st->last_sync_ns = dt;
        j->rc = rc;
        if (rc != 0) {
            rift_error_copy(&j->err, &err);
        }
        j->state = 2;
        settle_jobs(st);
        collect(st, &out);
        rift_error perr = st->poison_err;
        wake_settled(st);
        pthread_cond_broadcast(&st->done_cv);
        pthread_mutex_unlock(&st->lock);
        fire(&out, &perr);
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    rift_ring_free(&out);
    return NULL;
}

/* Waits until no segment sync is in flight. Under lock. */
static void drain_jobs(rift_stream *st) {
    while (st->jlen > 0) {
        pthread_cond_wait(&st->done_cv, &st->lock);
    }
}

/*
 * Queues the sync of generation |gen| (its writes are done). Helpers are
 * started on demand, up to RIFT_SYNC_HELPERS, so an idle or lightly used
 * stream keeps a single I/O thread. Returns false when no helper can be
 * started at all: the caller then syncs inline. Under lock.
 */
static bool dispatch(rift_stream *st, uint64_t gen, rift_seg *s,
                     uint64_t last_seq) {
    while (st->jlen == st->nhelpers) {
        if (st->nhelpers < RIFT_SYNC_HELPERS &&
            pthread_create(&st->helpers[st->nhelpers], NULL, helper_main, st) ==
                0) {
            st->nhelpers++;
            break;
        }
        if (st->nhelpers == 0) {
            return false;
        }
        pthread_cond_wait(&st->done_cv, &st->lock);
    }
    rift_sync_job *j = &st->jobs[(st->jhead + st->jlen) % RIFT_SYNC_HELPERS];
    st->jlen++;
    j->gen = gen;
    j->last_seq = last_seq;
    j->fd = atomic_load(&s->fd);
    j->path = s->path;
    j->state = 0;
    j->rc = 0;
    pthread_cond_signal(&st->job_cv);
    return true;
}

/* A stage that only appends to one existing segment and needs a sync. */
static rift_seg *simple_stage(rift_stream *st, const rift_stage *io) {
    if (!io->need_sync || io->full_sync || io->state_data.len > 0 ||
        io->has_snapshot || io->dead.len > 0 || io->extents.len == 0 ||
        st->wdirty.len > 0) {
        return NULL;
    }
    rift_seg *s = ((rift_extent *)rift_ring_at(&io->extents, 0))->seg;
    for (size_t i = 1; i < io->extents.len; i++) {
        if (((rift_extent *)rift_ring_at(&io->extents, i))->seg != s) {
            return NULL;
        }
    }
    return atomic_load(&s->fd) >= 0 ? s : NULL;
}

/* Records of |io| are in the OS now: readers may pread them and the
 * cache may let them go. Under lock. */
static void mark_flushed(rift_stream *st, const rift_stage *io) {
    for (size_t i = 0; i < io->extents.len; i++) {
        const rift_extent *e = rift_ring_at(&io->extents, i);
        if (e->seg->flushed < e->off + e->len) {
            e->seg->flushed = e->off + e->len;
        }
    }
    if (io->last_seq > st->written_seq) {
        st->written_seq = io->last_seq;
    }
}

static int write_extents(rift_stream *st, rift_stage *io, rift_error *err) {
    for (size_t i = 0; i < io->extents.len; i++) {
        rift_extent *e = rift_ring_at(&io->extents, i);
        int rc =
            write_all(st, atomic_load(&e->seg->fd), io->seg_data.data + e->pos,
                      e->len, e->off, e->seg->path, err);
        if (rc != 0) {
            return rc;
        }
        e->seg->written = e->off + e->len;
    }
    return 0;
}

int rift_writer_commit_ticket(rift_stream *st, uint64_t ticket,
                              rift_stream_done_cb cb, void *user_data,
                              bool blocking, uint64_t *wait, rift_error *err) {
    (void)err;
    if (!st->file || st->durable_gen >= ticket) {
        return blocking ? 0 : RIFT_STREAM_DONE;
    }
    if (!blocking) {
        if (cb == NULL) {
            return 0; /* nobody waits; the operation stands all the same */
        }
        /* Callers reserved the slot before mutating, so this succeeds. */
        rift_completion *c = rift_ring_push(&st->completions);
        c->ticket = ticket;
        c->cb = cb;
        c->user_data = user_data;
        return 0;
    }
    *wait = ticket;
    return 0;
}

/*
 * Whether a blocking caller may write |fill| itself: an unsynced stream,
 * the writer parked with nothing in flight, nobody's async completion in
 * the stage, and nothing in it but appends to existing files (new
 * segments, snapshots, unlinks and syncs stay on the writer thread).
 * Handing a publish to the writer and being woken costs two thread
 * wake-ups, several times a write() (measured: concurrent blocking
 * publishers went through the writer 6x slower than writing inline, one
 * by one under the lock). Under lock.
 */
static bool can_write_inline(rift_stream *st) {
    const rift_stage *f = &st->fill;
    if (st->cfg.sync_on_write || !st->writer_parked ||
        st->completions.len > 0 || f->has_snapshot || f->dead.len > 0 ||
        f->full_sync || st->poison != 0) {
        return false;
    }
    for (size_t i = 0; i < f->extents.len; i++) {
        const rift_extent *e = rift_ring_at(&f->extents, i);
        if (atomic_load(&e->seg->fd) < 0) {
            return false;
        }
    }
    return true;
}

/*
 * Writes |fill| on the caller's thread, under the lock, exactly as the
 * writer's cycle would (segment data, then state events, one write each,
 * no sync) and settles its generation. The lock keeps everyone else out,
 * and the writer is parked, so the order of generations is kept. Returns
 * 0 or the write error (the stream is then poisoned).
 */
static int write_inline(rift_stream *st, rift_error *err) {
    rift_stage *f = &st->fill;
    uint64_t gen = st->fill_gen++;
    rift_error cerr = {0};
    int rc = write_extents(st, f, &cerr);
    for (size_t i = 0; rc == 0 && i < f->extents.len; i++) {
        rc = mark_dirty(st, ((rift_extent *)rift_ring_at(&f->extents, i))->seg,
                        &cerr);
    }
    if (rc == 0 && f->state_data.len > 0) {
        rc = write_all(st, st->state_fd, f->state_data.data, f->state_data.len,
                       st->state_size, RIFT_STATE_FILE, &cerr);
        if (rc == 0) {
            st->state_size += f->state_data.len;
            st->state_dirty = true;
        }
    }
    if (rc == 0) {
        mark_flushed(st, f);
        atomic_store(&st->durable_gen, gen);
        st->state_good = st->state_size;
        st->backoff_ms = 0;
    } else {
        set_poison(st, rc, gen, &cerr);
        rift_error_copy(err, &cerr);
    }
    stage_reset(f);
    st->fill_kicked = false;
    wake_settled(st);
    rift_stream_cache_trim(st);
    return rc;
}

int rift_writer_commit(rift_stream *st, bool staged, rift_stream_done_cb cb,
                       void *user_data, bool blocking, uint64_t *wait,
                       rift_error *err) {
    if (!staged || !st->file) {
        return blocking ? 0 : RIFT_STREAM_DONE;
    }
    uint64_t ticket = st->fill_gen;
    st->fill.nops++;
    if (st->cfg.sync_on_write) {
        st->fill.need_sync = true;
    } else if (blocking && can_write_inline(st)) {
        return write_inline(st, err);
    }
    rift_writer_kick(st);
    return rift_writer_commit_ticket(st, ticket, cb, user_data, blocking, wait,
                                     err);
}

static void *writer_main(void *arg) {
    rift_stream *st = arg;
    tls_writer = st;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (rift_stage_empty(&st->fill) && !st->stopping) {
            wait_work(st);
        }
        if (rift_stage_empty(&st->fill)) {
            break;
        }
        gather(st);
        st->last_ops = st->fill.nops;
        rift_stage tmp = st->fill;
        st->fill = st->io;
        st->io = tmp;
        st->fill_kicked = false;
        rift_stage *io = &st->io;
        uint64_t gen = st->fill_gen++;
        rift_seg *simple = st->poison == 0 ? simple_stage(st, io) : NULL;
        if (simple == NULL) {
            /* Everything else runs in order after the syncs in flight. */
            drain_jobs(st);
        }
        bool poisoned = st->poison != 0;
        pthread_mutex_unlock(&st->lock);

        rift_error cerr = {0};
        uint64_t t0 = rift_now_ns();
        int rc;
        if (poisoned) {
            rc = st->poison;
        } else if (simple != NULL) {
            rc = write_extents(st, io, &cerr);
        } else {
            rc = cycle(st, io, &cerr);
        }
        uint64_t dt = rift_now_ns() - t0;

        pthread_mutex_lock(&st->lock);
        if (!poisoned && rc == 0) {
            mark_flushed(st, io);
            bool settled_here = true;
            if (simple != NULL) {
                if (dispatch(st, gen, simple, io->last_seq)) {
                    settled_here = false;
                } else {
                    /* No helper could start (and so none is busy): sync
                     * here. */
                    pthread_mutex_unlock(&st->lock);
                    rc = do_sync(st, atomic_load(&simple->fd), true,
                                 simple->path, &cerr);
                    dt = rift_now_ns() - t0;
                    pthread_mutex_lock(&st->lock);
                }
            }
            if (rc != 0) {
                set_poison(st, rc, gen, &cerr);
            } else if (settled_here) {
                st->last_sync_ns = dt;
                if ((io->need_sync || io->full_sync) &&
                    io->last_seq > st->durable_seq) {
                    st->durable_seq = io->last_seq;
                }
                st->durable_gen = gen;
                st->state_good = st->state_size;
                st->backoff_ms = 0;
            }
            rift_stream_cache_trim(st);
        } else if (!poisoned) {
            set_poison(st, rc, gen, &cerr);
        }
        /* Callbacks this cycle settles run unlocked. */
        collect(st, &st->wfire);
        rift_error perr = st->poison_err;
        wake_settled(st);
        pthread_cond_broadcast(&st->done_cv);
        pthread_mutex_unlock(&st->lock);

        free_dead(st, io);
        stage_reset(io);
        fire(&st->wfire, &perr);
        pthread_mutex_lock(&st->lock);
    }
    drain_jobs(st);
    st->helpers_stop = true;
    pthread_cond_broadcast(&st->job_cv);
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

int rift_writer_start(rift_stream *st, rift_error *err) {
    st->writer_idle = false;
    st->stopping = false;
    st->helpers_stop = false;
    st->nhelpers = 0;
    pthread_cond_init(&st->job_cv, NULL);
    int rc = pthread_create(&st->writer, NULL, writer_main, st);
    if (rc != 0) {
        pthread_cond_destroy(&st->job_cv);
        return rift_error_set(err, RIFT_ERR_IO,
                              "messaging I/O: cannot start writer thread: %s",
                              strerror(rc));
    }
    st->writer_started = true;
    return 0;
}

void rift_writer_stop(rift_stream *st) {
    if (!st->writer_started) {
        return;
    }
    pthread_mutex_lock(&st->lock);
    st->stopping = true;
    st->fill.full_sync = true;
    pthread_cond_signal(&st->work_cv);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->writer, NULL);
    for (size_t i = 0; i < st->nhelpers; i++) {
        pthread_join(st->helpers[i], NULL);
    }
    st->nhelpers = 0;
    pthread_cond_destroy(&st->job_cv);
    st->writer_started = false;
}
