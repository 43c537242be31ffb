/*
 * recover.c — opening a stream directory (store layer): lock it, scan
 * every segment (checksums, sequence continuity) into the in-memory
 * index, replay the state log into the consumers, and apply the rules of
 * docs/protocol-v1.md §4.6: truncate a torn tail, refuse corruption with
 * an error naming the file and the offset, re-apply retention, make
 * pending deliveries immediately eligible. rift_store_verify and
 * rift_store_repair run the same code read-only or repairing.
 */
#include "store/store.h"
#include "store/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Segment scans read the file in chunks of this size. */
#define SCAN_CHUNK (4u << 20)

typedef struct dir_list {
    rift_stream *st;
    uint64_t *bases;
    size_t n;
    size_t cap;
    bool tmp_state;
    int rc;
} dir_list;

static int io_error(rift_error *err, const char *what, const char *path,
                    int rc) {
    char os[256];
    rift_vfs_os_error(rc, os, sizeof(os));
    return rift_error_set(err, RIFT_ERR_IO, "messaging I/O: %s%s%s: %s", what,
                          *what ? " " : "", path, os);
}

static int corrupt(rift_error *err, const char *why, const char *path,
                   uint64_t off) {
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: %s in %s at offset %llu", why, path,
                          (unsigned long long)off);
}

static bool writable(const rift_stream *st) {
    return st->mode != RIFT_OPEN_VERIFY;
}

static char *join(rift_stream *st, const char *name) {
    size_t n = strlen(st->dir) + 1 + strlen(name) + 1;
    char *p = rift_malloc(st->mem, n);
    if (p != NULL) {
        snprintf(p, n, "%s/%s", st->dir, name);
    }
    return p;
}

/* ---- Directory, lock ---- */

static int sync_parent(rift_stream *st, const char *path, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == NULL) {
        snprintf(parent, sizeof(parent), ".");
    } else if (slash == parent) {
        parent[1] = '\0';
    } else {
        *slash = '\0';
    }
    int fd = v->open(v->user_data, parent, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        return io_error(err, "open", parent, fd);
    }
    int rc = v->fsync(v->user_data, fd);
    v->close(v->user_data, fd);
    return rc != 0 ? io_error(err, "fsync", parent, rc) : 0;
}

/* mkdir -p, syncing the parent of each directory it creates — also on
 * unsynced streams: it happens once per stream, and without it a power
 * cut can lose the whole directory after a checkpoint or a clean close
 * (which sync the stream directory, not its ancestors). */
static int make_dirs(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char path[4096];
    snprintf(path, sizeof(path), "%s", st->dir);
    size_t len = strlen(path);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') {
            continue;
        }
        char c = path[i];
        path[i] = '\0';
        int rc = v->mkdir(v->user_data, path, RIFT_STORE_DIR_MODE);
        if (rc == 0) {
            rc = sync_parent(st, path, err);
            if (rc != 0) {
                return rc;
            }
        } else if (rc != 0 && rc != -EEXIST) {
            return io_error(err, "create directory", path, rc);
        }
        path[i] = c;
    }
    return 0;
}

static int lock_dir(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char *path = join(st, RIFT_LOCK_FILE);
    if (path == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    int fd =
        v->open(v->user_data, path, O_RDWR | O_CREAT, RIFT_STORE_FILE_MODE);
    if (fd < 0) {
        rc = io_error(err, "open", path, fd);
        goto out;
    }
    st->lock_fd = fd;
    int lr = v->lock(v->user_data, fd);
    if (lr != 0) {
        char os[256];
        rc = rift_error_set(err, RIFT_ERR_STORAGE,
                            "stream storage: stream directory is already "
                            "open or cannot be locked: %s",
                            rift_vfs_os_error(lr, os, sizeof(os)));
        goto out;
    }
    fd = v->open(v->user_data, st->dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        rc = io_error(err, "open", st->dir, fd);
        goto out;
    }
    st->dir_fd = fd;
out:
    rift_free(st->mem, path);
    return rc;
}

static int list_entry(const char *name, void *arg) {
    dir_list *l = arg;
    uint64_t base;
    if (strcmp(name, RIFT_STATE_TMP_FILE) == 0) {
        l->tmp_state = true;
        return 0;
    }
    if (!rift_seg_name_parse(name, &base)) {
        return 0;
    }
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        uint64_t *nb = rift_realloc(l->st->mem, l->bases, ncap * sizeof(*nb));
        if (nb == NULL) {
            l->rc = RIFT_ERR_NOMEM;
            return 1;
        }
        l->bases = nb;
        l->cap = ncap;
    }
    l->bases[l->n++] = base;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* ---- State log ---- */

static int read_whole(rift_stream *st, int fd, const char *path, rift_sbuf *b,
                      rift_error *err) {
    const rift_vfs *v = st->vfs;
    uint64_t size;
    int rc = v->fsize(v->user_data, fd, &size);
    if (rc != 0) {
        return io_error(err, "stat", path, rc);
    }
    if (size > SIZE_MAX / 2 || rift_sbuf_reserve(b, (size_t)size) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t got = 0;
    while (got < size) {
        rift_ssize n =
            v->pread(v->user_data, fd, b->data + got, (size_t)size - got, got);
        if (n < 0) {
            return io_error(err, "read", path, (int)n);
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    b->len = got;
    return 0;
}

static int truncate_file(rift_stream *st, int fd, const char *path,
                         uint64_t len, rift_error *err) {
    const rift_vfs *v = st->vfs;
    int rc = v->ftruncate(v->user_data, fd, len);
    if (rc != 0) {
        return io_error(err, "truncate", path, rc);
    }
    /* Always synced: a cut that is lost could resurface a torn tail
     * behind records appended later. */
    rc = v->fdatasync(v->user_data, fd);
    if (rc != 0) {
        return io_error(err, "fdatasync", path, rc);
    }
    return 0;
}

static void note_torn(rift_stream *st, const char *path, uint64_t off) {
    rift_store_report *r = st->report;
    if (r != NULL) {
        r->torn = true;
        const char *base = strrchr(path, '/');
        snprintf(r->torn_file, sizeof(r->torn_file), "%s",
                 base ? base + 1 : path);
        r->torn_offset = off;
    }
}

static void note_cut(rift_stream *st, uint64_t bytes) {
    if (st->report != NULL) {
        st->report->repaired_bytes += bytes;
    }
}

static int write_fresh_state(rift_stream *st, int fd, const char *path,
                             rift_error *err) {
    const rift_vfs *v = st->vfs;
    uint8_t h[RIFT_STATE_HEADER];
    rift_state_header_encode(h);
    int rc = v->ftruncate(v->user_data, fd, 0);
    if (rc == 0) {
        rift_ssize n = v->pwrite(v->user_data, fd, h, sizeof(h), 0);
        rc = n == (rift_ssize)sizeof(h) ? 0 : n < 0 ? (int)n : -EIO;
    }
    if (rc == 0) {
        rc = v->fdatasync(v->user_data, fd);
    }
    if (rc != 0) {
        return io_error(err, "write", path, rc);
    }
    st->state_size = RIFT_STATE_HEADER;
    return 0;
}

static int recover_state(rift_stream *st, bool tmp_left, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char *path = join(st, RIFT_STATE_FILE);
    char *tmp = join(st, RIFT_STATE_TMP_FILE);
    rift_sbuf b;
    rift_sbuf_init(&b, st->mem);
    int rc = 0;
    if (path == NULL || tmp == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* A snapshot that never replaced the log is incomplete by definition
     * (the rename is its commit point). */
    if (tmp_left && writable(st)) {
        v->unlink(v->user_data, tmp);
    }
    int flags = writable(st) ? O_RDWR | O_CREAT : O_RDONLY;
    int fd = v->open(v->user_data, path, flags, RIFT_STORE_FILE_MODE);
    if (fd == -ENOENT && !writable(st)) {
        goto out; /* verify: no consumers */
    }
    if (fd < 0) {
        rc = io_error(err, "open", path, fd);
        goto out;
    }
    st->state_fd = fd;
    if ((rc = read_whole(st, fd, path, &b, err)) != 0) {
        goto out;
    }
    if (b.len < RIFT_STATE_HEADER || rift_state_header_decode(b.data) != 0) {
        bool fresh = b.len < RIFT_STATE_HEADER;
        if (!fresh && st->mode != RIFT_OPEN_REPAIR) {
            rc = corrupt(err, "invalid state log header", path, 0);
            goto out;
        }
        if (b.len > 0) {
            note_torn(st, path, 0);
        }
        if (writable(st)) {
            note_cut(st, b.len);
            rc = write_fresh_state(st, fd, path, err);
            /* A new log's entry is synced on unsynced streams too (once
             * per stream): later syncs of the log do not cover it. */
            if (rc == 0 && b.len == 0) {
                rc = sync_parent(st, path, err);
            }
        }
        goto out;
    }
    size_t pos = RIFT_STATE_HEADER;
    while (pos < b.len) {
        uint32_t len = 0;
        const char *why = NULL;
        int fc = rift_ev_frame_check(b.data + pos, b.len - pos, &len, &why);
        if (fc == 0) {
            int ac = rift_consumer_apply_event(st, b.data + pos + RIFT_EV_FRAME,
                                               len - RIFT_EV_FRAME, &why);
            if (ac == -2) {
                rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                goto out;
            }
            if (ac == 0) {
                pos += len;
                if (st->report != NULL) {
                    st->report->state_events++;
                }
                continue;
            }
            fc = -1;
        }
        if (fc < 0 && st->mode != RIFT_OPEN_REPAIR) {
            rc = corrupt(err, why, path, pos);
            goto out;
        }
        /* Torn tail, or corruption being repaired: cut here. */
        note_torn(st, path, pos);
        if (writable(st)) {
            note_cut(st, b.len - pos);
            rc = truncate_file(st, fd, path, pos, err);
            if (rc != 0) {
                goto out;
            }
        }
        b.len = pos;
        break;
    }
    st->state_size = b.len;
out:
    st->state_bytes = st->state_size;
    st->snapshot_bytes = st->state_size;
    rift_sbuf_free(&b);
    rift_free(st->mem, path);
    rift_free(st->mem, tmp);
    return rc;
}

/* ---- Segments ---- */

typedef struct scanner {
    rift_stream *st;
    int fd;
    const char *path;
    uint64_t fsize;
    rift_sbuf *buf;
    uint64_t boff; /* file offset of buf->data[0] */
} scanner;

/* Makes [off, off + need) available in the buffer (need <= SCAN_CHUNK,
 * off + need <= fsize). */
static int scan_fill(scanner *s, uint64_t off, size_t need, rift_error *err) {
    if (off >= s->boff && off + need <= s->boff + s->buf->len) {
        return 0;
    }
    const rift_vfs *v = s->st->vfs;
    uint64_t want = RIFT_MIN((uint64_t)SCAN_CHUNK, s->fsize - off);
    s->buf->len = 0;
    if (rift_sbuf_reserve(s->buf, (size_t)want) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t got = 0;
    while (got < want) {
        rift_ssize n = v->pread(v->user_data, s->fd, s->buf->data + got,
                                (size_t)want - got, off + got);
        if (n < 0) {
            return io_error(err, "read", s->path, (int)n);
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    s->boff = off;
    s->buf->len = got;
    if (got < need) {
        return io_error(err, "read", s->path, -EIO);
    }
    return 0;
}

static int scan_all_zero(scanner *s, uint64_t off, bool *zero,
                         rift_error *err) {
    *zero = true;
    while (off < s->fsize) {
        size_t n = (size_t)RIFT_MIN((uint64_t)SCAN_CHUNK, s->fsize - off);
        int rc = scan_fill(s, off, n, err);
        if (rc != 0) {
            return rc;
        }
        const uint8_t *p = s->buf->data + (off - s->boff);
        for (size_t i = 0; i < n; i++) {
            if (p[i] != 0) {
                *zero = false;
                return 0;
            }
        }
        off += n;
    }
    return 0;
}

/*
 * rec_check checksums the record of |len| bytes at |pos| (its head already
 * validated and |len| within the file): *|ok| tells whether the checksum
 * holds, *|seq| is the sequence in its trailer.
 */
static int rec_check(scanner *s, uint64_t pos, uint32_t len, bool *ok,
                     uint64_t *seq, rift_error *err) {
    int rc = scan_fill(s, pos, RIFT_REC_HEAD, err);
    if (rc != 0) {
        return rc;
    }
    const uint8_t *h = s->buf->data + (pos - s->boff);
    uint32_t stored = rift_get_u32(h + 4);
    uint32_t crc = rift_crc32c_update(0, h, 4);
    crc = rift_crc32c_update(crc, h + 8, 8);
    uint64_t cur = pos + RIFT_REC_HEAD;
    uint64_t end = pos + len;
    while (cur < end) {
        size_t n = (size_t)RIFT_MIN((uint64_t)SCAN_CHUNK, end - cur);
        if ((rc = scan_fill(s, cur, 1, err)) != 0) {
            return rc;
        }
        n = (size_t)RIFT_MIN((uint64_t)n, s->boff + s->buf->len - cur);
        crc = rift_crc32c_update(crc, s->buf->data + (cur - s->boff), n);
        cur += n;
    }
    if ((rc = scan_fill(s, end - RIFT_REC_TRAILER, RIFT_REC_TRAILER, err)) !=
        0) {
        return rc;
    }
    *ok = crc == stored;
    *seq = rift_get_u64(s->buf->data + (end - RIFT_REC_TRAILER - s->boff));
    return 0;
}

/* ---- Sequences a repair removes ---- */

/* The next sequence must be at least |next|: a record the repair removes
 * had a sequence below it. */
static void note_lost(rift_stream *st, uint64_t next) {
    if (next > st->repair_floor) {
        st->repair_floor = next;
    }
}

/*
 * salvage walks the records of |s| from |pos| as far as their lengths
 * hold together, for a repair about to remove them: each one whose
 * checksum holds had its sequence, which must not be used again. Best
 * effort: it stops at the first implausible head.
 */
static int salvage(scanner *s, uint64_t pos, rift_error *err) {
    while (pos < s->fsize && s->fsize - pos >= RIFT_REC_HEAD) {
        int rc = scan_fill(s, pos, RIFT_REC_HEAD, err);
        if (rc != 0) {
            return rc;
        }
        const uint8_t *h = s->buf->data + (pos - s->boff);
        uint32_t len = rift_get_u32(h);
        if (!rift_rec_head_valid(h) || len > s->fsize - pos) {
            break;
        }
        bool ok;
        uint64_t seq;
        if ((rc = rec_check(s, pos, len, &ok, &seq, err)) != 0) {
            return rc;
        }
        if (ok && seq < UINT64_MAX) {
            note_lost(s->st, seq + 1);
        }
        pos += len;
    }
    return 0;
}

enum {
    SCAN_CLEAN = 0,
    SCAN_TORN = 1,
    SCAN_BAD = 2,
    SCAN_CUT = 3 /* a record past st->cut_after (a reopen after a failure) */
};

/*
 * Scans one segment's records from offset 32, appending index entries.
 * Returns SCAN_CLEAN, SCAN_TORN (incomplete tail at *|stop|) or SCAN_BAD
 * (corrupt record at *|stop|, reason in *|why|), or a negative error.
 */
static int scan_records(scanner *s, rift_seg *seg, uint64_t *stop,
                        const char **why, rift_error *err) {
    rift_stream *st = s->st;
    uint64_t pos = RIFT_SEG_HEADER;
    uint64_t seq = seg->base;
    while (pos < s->fsize) {
        uint64_t avail = s->fsize - pos;
        *stop = pos;
        if (st->cutting && seq > st->cut_after) {
            return SCAN_CUT;
        }
        if (avail < RIFT_REC_HEAD) {
            return SCAN_TORN;
        }
        int rc = scan_fill(s, pos, RIFT_REC_HEAD, err);
        if (rc != 0) {
            return rc;
        }
        const uint8_t *h = s->buf->data + (pos - s->boff);
        if (!rift_rec_head_valid(h)) {
            bool zero;
            if ((rc = scan_all_zero(s, pos, &zero, err)) != 0) {
                return rc;
            }
            *why = "invalid record header";
            return zero ? SCAN_TORN : SCAN_BAD;
        }
        uint32_t len = rift_get_u32(h);
        uint16_t slen = rift_get_u16(h + 8);
        uint32_t plen = rift_get_u32(h + 12);
        if (len > avail) {
            return SCAN_TORN;
        }
        if (st->mode == RIFT_OPEN_NORMAL && plen > st->cfg.max_payload_bytes) {
            *why = "stored payload exceeds configured limit";
            return -RIFT_ERR_STORAGE; /* reported by the caller */
        }
        if (st->mode == RIFT_OPEN_VERIFY) {
            /* The offline check also re-validates the subject syntax. */
            size_t need = (size_t)RIFT_REC_HEAD + slen + rift_get_u16(h + 10);
            if ((rc = scan_fill(s, pos, need, err)) != 0) {
                return rc;
            }
            const char *subj =
                (const char *)s->buf->data + (pos - s->boff) + RIFT_REC_HEAD;
            if (!rift_utf8_valid((const uint8_t *)subj, slen)) {
                *why = "invalid stored subject";
                return SCAN_BAD;
            }
        }
        bool ok;
        uint64_t rseq;
        if ((rc = rec_check(s, pos, len, &ok, &rseq, err)) != 0) {
            return rc;
        }
        if (!ok) {
            *why = "checksum mismatch";
            return SCAN_BAD;
        }
        if (rseq != seq) {
            *why = "non-monotonic stream sequence";
            return SCAN_BAD;
        }
        rift_ent *e = rift_ring_push(&st->ents);
        if (e == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        e->off = (uint32_t)pos;
        e->len = len;
        st->bytes += len;
        seq++;
        pos += len;
    }
    *stop = pos;
    return SCAN_CLEAN;
}

static void delete_seg_file(rift_stream *st, rift_seg *s) {
    if (writable(st)) {
        if (st->report != NULL) {
            st->report->deleted_segments++;
        }
        st->vfs->unlink(st->vfs->user_data, s->path);
        st->dir_dirty = true;
    }
}

static void close_seg(rift_stream *st, rift_seg *s) {
    int fd = atomic_load(&s->fd);
    if (fd >= 0) {
        st->vfs->close(st->vfs->user_data, fd);
    }
    rift_seg_free(st, s);
}

/*
 * Notes the sequences of the segment file |path| (base |base|, about to
 * be deleted by a repair): its name says every sequence below |base| was
 * used, and the base itself once it holds more than a header; salvage
 * finds the rest.
 */
static int note_segment_lost(rift_stream *st, const char *path, uint64_t base,
                             rift_error *err) {
    const rift_vfs *v = st->vfs;
    note_lost(st, base);
    int fd = v->open(v->user_data, path, O_RDONLY, 0);
    if (fd < 0) {
        return 0; /* nothing more to learn from it */
    }
    uint64_t fsize = 0;
    int rc = 0;
    if (v->fsize(v->user_data, fd, &fsize) == 0 && fsize > RIFT_SEG_HEADER) {
        note_lost(st, base + 1);
        rift_sbuf buf;
        rift_sbuf_init(&buf, st->mem);
        scanner sc = {.st = st,
                      .fd = fd,
                      .path = path,
                      .fsize = fsize,
                      .buf = &buf,
                      .boff = 0};
        rc = salvage(&sc, RIFT_SEG_HEADER, err);
        rift_sbuf_free(&buf);
    }
    v->close(v->user_data, fd);
    return rc;
}

/* Deletes the segment files of |later| (not loaded yet), after noting
 * the sequences they held. */
static int delete_later(rift_stream *st, const uint64_t *later, size_t n,
                        rift_error *err) {
    for (size_t k = 0; k < n; k++) {
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), later[k]);
        char *p = join(st, name);
        if (p == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        int rc = note_segment_lost(st, p, later[k], err);
        if (rc != 0) {
            rift_free(st->mem, p);
            return rc;
        }
        if (writable(st)) {
            if (st->report != NULL) {
                st->report->deleted_segments++;
            }
            st->vfs->unlink(st->vfs->user_data, p);
            st->dir_dirty = true;
        }
        rift_free(st->mem, p);
    }
    return 0;
}

/* Cuts the log at |seg| offset |off| (scanned by |sc|), where a bad
 * record or a partial one in a sealed segment sits: truncates it there
 * and deletes every later segment file, noting the sequences removed. */
static int cut_log(rift_stream *st, scanner *sc, rift_seg *seg, uint64_t fsize,
                   uint64_t off, const uint64_t *later, size_t nlater,
                   rift_error *err) {
    note_torn(st, seg->path, off);
    /* The record at the cut was complete once: its sequence was used. */
    note_lost(st, seg->end + 1);
    int src = salvage(sc, off, err);
    if (src != 0) {
        return src;
    }
    if (writable(st)) {
        note_cut(st, fsize - off);
        int rc = truncate_file(st, atomic_load(&seg->fd), seg->path, off, err);
        if (rc != 0) {
            return rc;
        }
    }
    return delete_later(st, later, nlater, err);
}

/*
 * Reopening after a failed write (rift_stream_reopen): the records past
 * the last acknowledged one were never acknowledged and nobody saw them
 * (every operation at or after the failure failed), so they go, the
 * segment files that hold only them too, and their sequences are used
 * again — no hole.
 */
static int cut_unacknowledged(rift_stream *st, rift_seg *seg, uint64_t fsize,
                              uint64_t off, const uint64_t *later,
                              size_t nlater, rift_error *err) {
    if (off < fsize) {
        int rc = truncate_file(st, atomic_load(&seg->fd), seg->path, off, err);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t k = 0; k < nlater; k++) {
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), later[k]);
        char *p = join(st, name);
        if (p == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        st->vfs->unlink(st->vfs->user_data, p);
        rift_free(st->mem, p);
    }
    return 0;
}

/* Whether the state log holds a hole covering [from, to) (records end
 * at |from|, the next segment starts at |to|). Covering, not ending at
 * |to|: adjacent holes merge in memory and a snapshot logs them as one,
 * while a record-less segment may still sit inside (an unsynced stream
 * whose records a power cut took after its header and the consumers'
 * cursors had reached the disk). */
static bool logged_hole(const rift_stream *st, uint64_t from, uint64_t to) {
    for (size_t i = 0; i < st->logged_holes.len; i++) {
        const rift_hole *h = rift_ring_at(&st->logged_holes, i);
        if (h->to >= to && h->from <= from) {
            return true;
        }
    }
    return false;
}

static int recover_segments(rift_stream *st, const uint64_t *bases, size_t n,
                            rift_error *err) {
    const rift_vfs *v = st->vfs;
    rift_sbuf buf;
    rift_sbuf_init(&buf, st->mem);
    int rc = 0;
    /* Size the index once for the largest number of records the segments
     * can hold (every record is at least 33 bytes): memory never touched
     * costs nothing, while regrowing and copying millions of entries, with
     * a page fault per page, costs more than the whole scan. */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), bases[i]);
        char *p = join(st, name);
        int fd = p ? v->open(v->user_data, p, O_RDONLY, 0) : -1;
        uint64_t size;
        if (fd >= 0 && v->fsize(v->user_data, fd, &size) == 0) {
            total += size;
        }
        if (fd >= 0) {
            v->close(v->user_data, fd);
        }
        rift_free(st->mem, p);
    }
    if (total / (RIFT_REC_OVERHEAD + 1) < SIZE_MAX / sizeof(rift_ent)) {
        (void)rift_ring_reserve(&st->ents,
                                (size_t)(total / (RIFT_REC_OVERHEAD + 1)));
    }
    for (size_t i = 0; i < n; i++) {
        bool last = i + 1 == n;
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), bases[i]);
        rift_seg *seg = rift_calloc(st->mem, 1, sizeof(*seg));
        char *path = seg ? join(st, name) : NULL;
        rift_seg **slot = path ? rift_ring_push(&st->segs) : NULL;
        if (slot == NULL) {
            rift_free(st->mem, path);
            rift_free(st->mem, seg);
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        *slot = seg;
        seg->path = path;
        seg->base = bases[i];
        seg->end = bases[i];
        atomic_init(&seg->fd, -1);
        int fd =
            v->open(v->user_data, path, writable(st) ? O_RDWR : O_RDONLY, 0);
        if (fd < 0) {
            rc = io_error(err, "open", path, fd);
            goto out;
        }
        atomic_store(&seg->fd, fd);
        uint64_t fsize;
        if ((rc = v->fsize(v->user_data, fd, &fsize)) != 0) {
            rc = io_error(err, "stat", path, rc);
            goto out;
        }
        scanner sc = {.st = st,
                      .fd = fd,
                      .path = path,
                      .fsize = fsize,
                      .buf = &buf,
                      .boff = 0};
        buf.len = 0;

        /* Continuity with the previous segment. */
        uint64_t expect =
            st->segs.len > 1
                ? (*(rift_seg **)rift_ring_at(&st->segs, st->segs.len - 2))->end
                : seg->base;
        if (seg->base != expect) {
            if (seg->base > expect && st->marker >= seg->base) {
                /* Everything before the gap was retired by retention
                 * (its unlinks were cut short): drop it. */
                while (st->segs.len > 1) {
                    rift_seg *old = *(rift_seg **)rift_ring_at(&st->segs, 0);
                    delete_seg_file(st, old);
                    close_seg(st, old);
                    rift_ring_pop_front(&st->segs);
                }
                st->ents.len = 0;
                st->ents.head = 0;
                st->bytes = 0;
                st->holes.len = 0;
                st->holes.head = 0;
            } else if (seg->base > expect &&
                       logged_hole(st, expect, seg->base)) {
                /* Sequences lost earlier and never reused. */
                if (rift_stream_add_hole(st, expect, seg->base) != 0) {
                    rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                    goto out;
                }
            } else {
                rc = corrupt(err, "sequence gap before segment", path, 0);
                goto out;
            }
        }
        if (st->segs.len == 1) {
            st->first_seq = seg->base;
        }

        /* Header. */
        uint64_t hbase = 0;
        bool header_ok = fsize >= RIFT_SEG_HEADER &&
                         scan_fill(&sc, 0, RIFT_SEG_HEADER, err) == 0 &&
                         rift_seg_header_decode(buf.data, &hbase) == 0 &&
                         hbase == seg->base;
        if (!header_ok) {
            if (last && fsize < RIFT_SEG_HEADER) {
                /* Created, then the crash came before its first record. */
                note_torn(st, path, 0);
                note_cut(st, fsize);
                delete_seg_file(st, seg);
                close_seg(st, seg);
                rift_ring_pop_back(&st->segs);
                break;
            }
            if (st->mode == RIFT_OPEN_REPAIR) {
                note_torn(st, path, 0);
                note_cut(st, fsize);
                if ((rc = note_segment_lost(st, path, seg->base, err)) != 0) {
                    goto out;
                }
                delete_seg_file(st, seg);
                close_seg(st, seg);
                rift_ring_pop_back(&st->segs);
                rc = delete_later(st, bases + i + 1, n - i - 1, err);
                break;
            }
            rc = corrupt(err, "invalid segment header", path, 0);
            goto out;
        }

        uint64_t before = st->ents.len;
        uint64_t stop = 0;
        const char *why = "invalid record";
        int sr = scan_records(&sc, seg, &stop, &why, err);
        if (sr == -RIFT_ERR_STORAGE) {
            rc = corrupt(err, why, path, stop);
            goto out;
        }
        if (sr < 0) {
            rc = sr;
            goto out;
        }
        seg->end = seg->base + (st->ents.len - before);
        seg->size = stop;
        if (sr == SCAN_CLEAN) {
            continue;
        }
        if (sr == SCAN_CUT) {
            rc = cut_unacknowledged(st, seg, fsize, stop, bases + i + 1,
                                    n - i - 1, err);
            break;
        }
        if (sr == SCAN_TORN && last) {
            note_torn(st, path, stop);
            if (writable(st)) {
                note_cut(st, fsize - stop);
                rc = truncate_file(st, fd, path, stop, err);
            }
            break;
        }
        if (st->mode != RIFT_OPEN_REPAIR) {
            rc = corrupt(err,
                         sr == SCAN_TORN
                             ? "partial record in a segment that is not the "
                               "newest"
                             : why,
                         path, stop);
            goto out;
        }
        rc = cut_log(st, &sc, seg, fsize, stop, bases + i + 1, n - i - 1, err);
        break;
    }
out:
    rift_sbuf_free(&buf);
    if (rc == 0) {
        for (size_t i = 0; i < st->segs.len; i++) {
            rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, i);
            s->written = s->synced = s->flushed = s->size;
        }
    }
    return rc;
}

/* ---- The sequence range ---- */

/*
 * The lowest next sequence the consumers imply: past every delivery they
 * have pending, and at their cursor unless it is still a start sequence
 * given by hand that no record has reached yet (a consumer may wait for a
 * sequence beyond the end; that is no evidence the sequence was used).
 */
static uint64_t consumers_floor(const rift_stream *st) {
    uint64_t floor = 0;
    for (size_t i = 0; i < st->ncons; i++) {
        const rift_consumer *c = st->cons[i];
        if (c->start_mode != RIFT_START_SEQUENCE ||
            c->next_seq != c->start_seq) {
            floor = RIFT_MAX(floor, c->next_seq);
        }
        for (size_t k = c->pending.len; k > 0; k--) {
            const rift_pend *p = rift_ring_at(&c->pending, k - 1);
            if (p->live) {
                floor = RIFT_MAX(floor, p->seq + (p->seq < UINT64_MAX));
                break;
            }
        }
    }
    return floor;
}

/* Appends one event to state.log and syncs it (recovery, writable). */
static int log_event(rift_stream *st, const rift_sbuf *ev, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char *path = join(st, RIFT_STATE_FILE);
    if (path == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    size_t done = 0;
    while (rc == 0 && done < ev->len) {
        rift_ssize n = v->pwrite(v->user_data, st->state_fd, ev->data + done,
                                 ev->len - done, st->state_size + done);
        if (n <= 0) {
            rc = io_error(err, "write", path, n < 0 ? (int)n : -EIO);
        } else {
            done += (size_t)n;
        }
    }
    if (rc == 0 && (rc = v->fdatasync(v->user_data, st->state_fd)) != 0) {
        rc = io_error(err, "fdatasync", path, rc);
    }
    if (rc == 0) {
        st->state_size += ev->len;
        st->state_bytes += ev->len;
    }
    rift_free(st->mem, path);
    return rc;
}

/* Logs a HOLE [from, to) or a FIRST_SEQ |from| (|to| 0) event. */
static int log_range_event(rift_stream *st, uint64_t from, uint64_t to,
                           rift_error *err) {
    rift_sbuf b;
    rift_sbuf_init(&b, st->mem);
    int64_t start = rift_ev_begin(&b, to ? RIFT_EV_HOLE : RIFT_EV_FIRST_SEQ);
    int rc = start < 0 ? RIFT_ERR_NOMEM : rift_ev_put_u64(&b, from);
    if (rc == 0 && to != 0) {
        rc = rift_ev_put_u64(&b, to);
    }
    if (rc != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    } else {
        rift_ev_finish(&b, start);
        rc = log_event(st, &b, err);
    }
    rift_sbuf_free(&b);
    return rc;
}

/*
 * settle_range fixes the retained range after the scan. Records end at
 * |end|, but the next sequence must also be past everything anybody may
 * have seen: the FIRST_SEQ marker, holes already logged, every consumer's
 * pending deliveries and cursor, and whatever a repair removed. Sequences
 * between the last record and that floor are lost, never reused: with
 * records retained they become a hole (logged, so the next segment's
 * base is accepted after the gap), else the first retained sequence moves
 * there (FIRST_SEQ). The next record goes to a new segment at the floor.
 */
static int settle_range(rift_stream *st, rift_error *err) {
    uint64_t end = 1;
    if (st->segs.len > 0) {
        end = (*(rift_seg **)rift_ring_at(&st->segs, st->segs.len - 1))->end;
    }
    uint64_t floor = RIFT_MAX(end, st->marker);
    floor = RIFT_MAX(floor, st->repair_floor);
    floor = RIFT_MAX(floor, consumers_floor(st));
    for (size_t i = 0; i < st->logged_holes.len; i++) {
        floor = RIFT_MAX(floor,
                         ((rift_hole *)rift_ring_at(&st->logged_holes, i))->to);
    }
    st->last_seq = floor - 1;
    if (floor > end) {
        st->force_roll = true;
    }
    /* A first segment left without records (its records lost in a
     * power cut after its header reached the disk) can put a hole at the
     * first sequence; the index must begin with a record, or evicting
     * its front (rift_stream_pop_front) would step first_seq one short of
     * the records and every later lookup would read the wrong record. */
    rift_stream_skip_holes(st);
    uint64_t first = RIFT_MAX(st->first_seq, st->marker);
    while (st->first_seq < first && st->ents.len > 0) {
        rift_stream_pop_front(st);
    }
    if (st->ents.len == 0) {
        st->first_seq = floor;
        st->holes.len = 0;
        st->holes.head = 0;
    } else if (floor > end && rift_stream_add_hole(st, end, floor) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    if (writable(st) && floor > end) {
        if (st->ents.len > 0 && !logged_hole(st, end, floor)) {
            rc = log_range_event(st, end, floor, err);
        } else if (st->ents.len == 0 && st->marker < floor) {
            rc = log_range_event(st, floor, 0, err);
            st->marker = floor;
        }
    }
    st->logged_holes.len = 0;
    st->logged_holes.head = 0;
    return rc;
}

/* ---- The whole directory ---- */

/*
 * Makes the segment deletions of the recovery durable, before it logs
 * anything that depends on them and before anything is appended: a
 * segment a repair removed (a bad one, or the later ones it cut off) must
 * not come back after a power cut, where it would make the stream
 * unopenable again or bring back sequences the repair retired.
 */
static int sync_deletions(rift_stream *st, rift_error *err) {
    if (!st->dir_dirty) {
        return 0;
    }
    int rc = st->vfs->fsync(st->vfs->user_data, st->dir_fd);
    if (rc != 0) {
        return io_error(err, "fsync", st->dir, rc);
    }
    st->dir_dirty = false;
    return 0;
}

int rift_recover(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    int rc;
    if (st->mode == RIFT_OPEN_VERIFY) {
        int fd = v->open(v->user_data, st->dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0) {
            return io_error(err, "open", st->dir, fd);
        }
        v->close(v->user_data, fd);
    } else if ((rc = make_dirs(st, err)) != 0) {
        return rc;
    }
    /* A reopen keeps the lock it holds (a second flock would fail). */
    if (st->lock_fd < 0 && (rc = lock_dir(st, err)) != 0) {
        return rc;
    }
    dir_list l = {.st = st};
    int lr = v->list(v->user_data, st->dir, list_entry, &l);
    if (l.rc != 0 || lr < 0) {
        rift_free(st->mem, l.bases);
        return l.rc != 0 ? rift_error_set(err, RIFT_ERR_NOMEM, "out of memory")
                         : io_error(err, "list", st->dir, lr);
    }
    if (l.n > 1) {
        qsort(l.bases, l.n, sizeof(uint64_t), cmp_u64);
    }

    rc = recover_state(st, l.tmp_state, err);
    if (rc == 0) {
        rc = recover_segments(st, l.bases, l.n, err);
    }
    rift_free(st->mem, l.bases);
    if (rc != 0) {
        return rc;
    }

    rc = sync_deletions(st, err);
    if (rc == 0) {
        rc = settle_range(st, err);
    }
    if (rc != 0) {
        return rc;
    }
    st->cache_first = st->last_seq + 1;
    if (st->report != NULL) {
        uint64_t newest = rift_stream_newest(st);
        st->report->segments = st->segs.len;
        st->report->records = st->ents.len;
        st->report->first_sequence = st->first_seq;
        st->report->last_sequence = newest ? newest : st->first_seq - 1;
        st->report->next_sequence = st->last_seq + 1;
        for (size_t i = 0; i < st->segs.len; i++) {
            st->report->segment_bytes +=
                (*(rift_seg **)rift_ring_at(&st->segs, i))->size;
        }
    }
    if (st->mode == RIFT_OPEN_NORMAL) {
        rift_stream_retain(st, rift_stream_now(st));
    }
    for (size_t i = 0; i < st->ncons; i++) {
        rift_consumer *c = st->cons[i];
        rift_pend_trim_below(c, st->first_seq);
        rift_pend_trim_above(c, st->last_seq);
        for (size_t k = 0; k < st->holes.len; k++) {
            const rift_hole *h = rift_ring_at(&st->holes, k);
            rift_pend_drop_range(c, h->from, h->to);
        }
        /* No fetch of a previous process can still be in flight (those
         * of a reopen can: they keep their logged delivery time). */
        for (size_t k = 0; k < c->pending.len && !st->cutting; k++) {
            ((rift_pend *)rift_ring_at(&c->pending, k))->delivered_at = 0;
        }
        if (c->next_seq < st->first_seq) {
            c->next_seq = st->first_seq;
        }
    }
    if (st->report != NULL) {
        st->report->consumers = st->ncons;
    }
    if (st->mode == RIFT_OPEN_NORMAL && st->ncons > st->cfg.max_consumers) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: stored consumers exceed "
                              "configured limit");
    }
    if (writable(st)) {
        /* Segments retention emptied while the stream was closed. */
        while (st->segs.len > 1) {
            rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
            if (s->end > st->first_seq) {
                break;
            }
            v->unlink(v->user_data, s->path);
            st->dir_dirty = true;
            close_seg(st, s);
            rift_ring_pop_front(&st->segs);
        }
        if ((rc = sync_deletions(st, err)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- Offline verify and repair ---- */

int rift_store_offline(const char *path, rift_store_report *report,
                       rift_open_mode mode, const rift_vfs *vfs,
                       rift_error *err) {
    rift_store_report local;
    if (report == NULL) {
        report = &local;
    }
    memset(report, 0, sizeof(*report));
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = path;
    s.max_messages = UINT64_MAX;
    s.max_bytes = UINT64_MAX;
    s.max_payload_bytes = RIFT_MAX_PAYLOAD_LIMIT;
    s.max_consumers = UINT32_MAX;
    s.vfs = vfs;
    rift_stream *st = NULL;
    int rc = rift_stream_new_mode(&st, &s, mode, report, err);
    if (rc != 0) {
        return rc;
    }
    rift_stream_del(st);
    return 0;
}

int rift_store_verify(const char *path, rift_store_report *report,
                      rift_error *err) {
    return rift_store_offline(path, report, RIFT_OPEN_VERIFY, NULL, err);
}

int rift_store_repair(const char *path, rift_store_report *report,
                      rift_error *err) {
    int rc = rift_store_offline(path, report, RIFT_OPEN_REPAIR, NULL, err);
    if (rc != 0) {
        return rc;
    }
    rift_store_report again;
    rc = rift_store_offline(path, &again, RIFT_OPEN_VERIFY, NULL, err);
    if (report != NULL) {
        report->segments = again.segments;
        report->records = again.records;
        report->first_sequence = again.first_sequence;
        report->last_sequence = again.last_sequence;
        report->next_sequence = again.next_sequence;
        report->segment_bytes = again.segment_bytes;
        report->state_events = again.state_events;
        report->consumers = again.consumers;
    }
    return rc;
}
