/*
 * cycle.c — one write cycle (store layer): a stage's bytes to the files
 * through the vfs, on the writer thread without the stream lock.
 *
 * Order inside a cycle (crash consistency): segment data, its fdatasync
 * (the previous segment is synced before a new one is written), directory
 * sync for new files, then the state log (or a snapshot replacing it) and
 * its fdatasync, then unlinks of segments retention emptied. State that
 * refers to a record is therefore never durable before the record.
 * writer.c decides when a cycle runs and what it settles.
 */
#include "store/cycle.h"
#include "store/retained.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* ---- File operations ---- */

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

int rift_cycle_sync_fd(rift_stream *st, int fd, bool data_only,
                       const char *path, rift_error *err) {
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
    int rc = rift_cycle_sync_fd(st, atomic_load(&s->fd), true, s->path, err);
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

/* ---- The cycle ---- */

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
        rc = rift_cycle_sync_fd(st, fd, true, tmp, err);
    }
    if (rc == 0) {
        int r = v->rename(v->user_data, tmp, fin);
        if (r != 0) {
            rc = io_fail(st, err, "rename", tmp, r);
        }
    }
    if (rc == 0) {
        rc = rift_cycle_sync_fd(st, st->dir_fd, false, st->dir, err);
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

/* Segment data in append order; the previous segment is synced before
 * the next one gets a byte. *|created| tells whether a file was made. */
static int write_segments(rift_stream *st, rift_stage *io, bool sync,
                          bool *created, rift_error *err) {
    const rift_vfs *v = st->vfs;
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
            *created = true;
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
    return sync ? sync_dirty(st, err) : 0;
}

/* Unsynced streams create and unlink segments without syncing the
 * directory; a checkpoint or close (|sync|) syncs it then, or the files
 * it made durable could lose their names in a power cut. */
static int sync_directory(rift_stream *st, bool sync, rift_error *err) {
    if (st->dir_dirty && (sync || st->cfg.sync_on_write)) {
        int rc = rift_cycle_sync_fd(st, st->dir_fd, false, st->dir, err);
        if (rc != 0) {
            return rc;
        }
        st->dir_dirty = false;
    }
    return 0;
}

/* The state log: a snapshot replacing it, or the events appended. */
static int write_state(rift_stream *st, rift_stage *io, bool sync,
                       rift_error *err) {
    int rc;
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
        rc = rift_cycle_sync_fd(st, st->state_fd, true, RIFT_STATE_FILE, err);
        if (rc != 0) {
            return rc;
        }
        st->state_dirty = false;
    }
    return 0;
}

/* The segments retention emptied, last: the state written before no
 * longer refers to them. */
static int unlink_dead(rift_stream *st, rift_stage *io, rift_error *err) {
    const rift_vfs *v = st->vfs;
    for (size_t i = 0; i < io->dead.len; i++) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&io->dead, i);
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            v->close(v->user_data, fd);
            atomic_store(&s->fd, -1);
        }
        int rc = v->unlink(v->user_data, s->path);
        if (rc != 0 && rc != -ENOENT) {
            return io_fail(st, err, "unlink", s->path, rc);
        }
    }
    st->dir_dirty |= io->dead.len > 0;
    return 0;
}

int rift_cycle_write(rift_stream *st, rift_stage *io, rift_error *err) {
    bool sync = io->need_sync || io->full_sync;
    bool created = false;
    int rc;
    if ((rc = write_segments(st, io, sync, &created, err)) != 0) {
        return rc;
    }
    st->dir_dirty |= created;
    if ((rc = sync_directory(st, sync, err)) != 0 ||
        (rc = write_state(st, io, sync, err)) != 0 ||
        (rc = unlink_dead(st, io, err)) != 0) {
        return rc;
    }
    return sync_directory(st, sync, err);
}

/* Frees the segments of |io|'s dead list, which nothing else references:
 * they left the stream's list under the lock before being staged. */
void rift_cycle_free_dead(rift_stream *st, rift_stage *io) {
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

/* ---- Publish-only stages and inline writes ---- */

/* A stage that only appends to one existing segment and needs a sync. */
rift_seg *rift_cycle_simple_stage(rift_stream *st, const rift_stage *io) {
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
void rift_cycle_mark_flushed(rift_stream *st, const rift_stage *io) {
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

int rift_cycle_write_extents(rift_stream *st, rift_stage *io, rift_error *err) {
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

int rift_cycle_write_unsynced(rift_stream *st, rift_stage *f, rift_error *err) {
    int rc = rift_cycle_write_extents(st, f, err);
    for (size_t i = 0; rc == 0 && i < f->extents.len; i++) {
        rc = mark_dirty(st, ((rift_extent *)rift_ring_at(&f->extents, i))->seg,
                        err);
    }
    if (rc == 0 && f->state_data.len > 0) {
        rc = write_all(st, st->state_fd, f->state_data.data, f->state_data.len,
                       st->state_size, RIFT_STATE_FILE, err);
        if (rc == 0) {
            st->state_size += f->state_data.len;
            st->state_dirty = true;
        }
    }
    return rc;
}
