/*
 * recover_segments.c — recovering the segment files (store layer): each
 * is opened in base order, its header checked, its records scanned and
 * checksummed into the index; torn tails are cut, gaps the state log
 * explains become holes, and a repair cuts the log at the first bad
 * record, keeping what can be salvaged after it. recover.c calls it once
 * the state log is read (the holes and the marker come from there).
 */
#include "store/recover_segments.h"
#include "store/consumer_state.h"
#include "store/crc32c.h"
#include "store/recover_io.h"
#include "store/retained.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* Segment scans read the file in chunks of this size. */
#define SCAN_CHUNK (4u << 20)

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
            return rift_recover_io_error(err, "read", s->path, (int)n);
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    s->boff = off;
    s->buf->len = got;
    if (got < need) {
        return rift_recover_io_error(err, "read", s->path, -EIO);
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
    if (rift_recover_writable(st)) {
        if (st->report != NULL) {
            st->report->deleted_segments++;
        }
        st->vfs->unlink(st->vfs->user_data, s->path);
        st->dir_dirty = true;
    }
}

void rift_recover_close_seg(rift_stream *st, rift_seg *s) {
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
        char *p = rift_recover_join(st, name);
        if (p == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        int rc = note_segment_lost(st, p, later[k], err);
        if (rc != 0) {
            rift_free(st->mem, p);
            return rc;
        }
        if (rift_recover_writable(st)) {
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
    rift_recover_note_torn(st, seg->path, off);
    /* The record at the cut was complete once: its sequence was used. */
    note_lost(st, seg->end + 1);
    int src = salvage(sc, off, err);
    if (src != 0) {
        return src;
    }
    if (rift_recover_writable(st)) {
        rift_recover_note_cut(st, fsize - off);
        int rc = rift_recover_truncate(st, atomic_load(&seg->fd), seg->path,
                                       off, err);
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
        int rc = rift_recover_truncate(st, atomic_load(&seg->fd), seg->path,
                                       off, err);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t k = 0; k < nlater; k++) {
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), later[k]);
        char *p = rift_recover_join(st, name);
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
bool rift_recover_logged_hole(const rift_stream *st, uint64_t from,
                              uint64_t to) {
    for (size_t i = 0; i < st->logged_holes.len; i++) {
        const rift_hole *h = rift_ring_at(&st->logged_holes, i);
        if (h->to >= to && h->from <= from) {
            return true;
        }
    }
    return false;
}

/* Sizes the index once for the largest number of records the segments
 * can hold (every record is at least 33 bytes): memory never touched
 * costs nothing, while regrowing and copying millions of entries, with a
 * page fault per page, costs more than the whole scan. */
static void reserve_index(rift_stream *st, const uint64_t *bases, size_t n) {
    const rift_vfs *v = st->vfs;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), bases[i]);
        char *p = rift_recover_join(st, name);
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
}

/* Appends the segment |base| to the stream's list and opens its file
 * (the segment stays listed on failure, as the close frees it). */
static int open_segment(rift_stream *st, uint64_t base, rift_seg **out,
                        uint64_t *fsize, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char name[RIFT_SEG_NAME_LEN + 1];
    rift_seg_name(name, sizeof(name), base);
    rift_seg *seg = rift_calloc(st->mem, 1, sizeof(*seg));
    char *path = seg ? rift_recover_join(st, name) : NULL;
    rift_seg **slot = path ? rift_ring_push(&st->segs) : NULL;
    if (slot == NULL) {
        rift_free(st->mem, path);
        rift_free(st->mem, seg);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    *slot = seg;
    seg->path = path;
    seg->base = base;
    seg->end = base;
    atomic_init(&seg->fd, -1);
    int fd = v->open(v->user_data, path,
                     rift_recover_writable(st) ? O_RDWR : O_RDONLY, 0);
    if (fd < 0) {
        return rift_recover_io_error(err, "open", path, fd);
    }
    atomic_store(&seg->fd, fd);
    int rc = v->fsize(v->user_data, fd, fsize);
    if (rc != 0) {
        return rift_recover_io_error(err, "stat", path, rc);
    }
    *out = seg;
    return 0;
}

/* Continuity of the newest listed segment with the one before it: a gap
 * retention explains drops what precedes it, a gap the state log records
 * becomes a hole, any other gap is corruption. */
static int check_continuity(rift_stream *st, rift_seg *seg, rift_error *err) {
    uint64_t expect =
        st->segs.len > 1
            ? (*(rift_seg **)rift_ring_at(&st->segs, st->segs.len - 2))->end
            : seg->base;
    if (seg->base == expect) {
        return 0;
    }
    if (seg->base > expect && st->marker >= seg->base) {
        /* Everything before the gap was retired by retention (its unlinks
         * were cut short): drop it. */
        while (st->segs.len > 1) {
            rift_seg *old = *(rift_seg **)rift_ring_at(&st->segs, 0);
            delete_seg_file(st, old);
            rift_recover_close_seg(st, old);
            rift_ring_pop_front(&st->segs);
        }
        st->ents.len = 0;
        st->ents.head = 0;
        st->bytes = 0;
        st->holes.len = 0;
        st->holes.head = 0;
        return 0;
    }
    if (seg->base > expect && rift_recover_logged_hole(st, expect, seg->base)) {
        /* Sequences lost earlier and never reused. */
        if (rift_stream_add_hole(st, expect, seg->base) != 0) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        return 0;
    }
    return rift_recover_corrupt(err, "sequence gap before segment", seg->path,
                                0);
}

/* Checks the header of |seg| (the newest listed). When it is missing or
 * bad, the newest segment is dropped as torn, a repair drops it and the
 * segments |later| after it, anything else is corruption; *|done| then
 * ends the walk. */
static int check_header(scanner *sc, rift_seg *seg, bool last,
                        const uint64_t *later, size_t nlater, bool *done,
                        rift_error *err) {
    rift_stream *st = sc->st;
    uint64_t hbase = 0;
    if (sc->fsize >= RIFT_SEG_HEADER &&
        scan_fill(sc, 0, RIFT_SEG_HEADER, err) == 0 &&
        rift_seg_header_decode(sc->buf->data, &hbase) == 0 &&
        hbase == seg->base) {
        return 0;
    }
    *done = true;
    if (last && sc->fsize < RIFT_SEG_HEADER) {
        /* Created, then the crash came before its first record. */
        rift_recover_note_torn(st, seg->path, 0);
        rift_recover_note_cut(st, sc->fsize);
        delete_seg_file(st, seg);
        rift_recover_close_seg(st, seg);
        rift_ring_pop_back(&st->segs);
        return 0;
    }
    if (st->mode != RIFT_OPEN_REPAIR) {
        return rift_recover_corrupt(err, "invalid segment header", seg->path,
                                    0);
    }
    rift_recover_note_torn(st, seg->path, 0);
    rift_recover_note_cut(st, sc->fsize);
    int rc = note_segment_lost(st, seg->path, seg->base, err);
    if (rc != 0) {
        return rc;
    }
    delete_seg_file(st, seg);
    rift_recover_close_seg(st, seg);
    rift_ring_pop_back(&st->segs);
    return delete_later(st, later, nlater, err);
}

/* Acts on how the scan of |seg| ended (|sr|, at |stop|): a clean segment
 * goes on to the next, the rest (*|done|) cut unacknowledged records, a
 * torn tail of the newest segment, or in a repair the log from |stop| —
 * or fail as corruption. */
static int settle_scan(scanner *sc, rift_seg *seg, int sr, uint64_t stop,
                       const char *why, bool last, const uint64_t *later,
                       size_t nlater, bool *done, rift_error *err) {
    rift_stream *st = sc->st;
    if (sr == SCAN_CLEAN) {
        return 0;
    }
    *done = true;
    if (sr == SCAN_CUT) {
        return cut_unacknowledged(st, seg, sc->fsize, stop, later, nlater, err);
    }
    if (sr == SCAN_TORN && last) {
        rift_recover_note_torn(st, seg->path, stop);
        if (!rift_recover_writable(st)) {
            return 0;
        }
        rift_recover_note_cut(st, sc->fsize - stop);
        return rift_recover_truncate(st, sc->fd, seg->path, stop, err);
    }
    if (st->mode != RIFT_OPEN_REPAIR) {
        return rift_recover_corrupt(err,
                                    sr == SCAN_TORN
                                        ? "partial record in a segment that is "
                                          "not the newest"
                                        : why,
                                    seg->path, stop);
    }
    return cut_log(st, sc, seg, sc->fsize, stop, later, nlater, err);
}

/* Scans one segment after the other into the index, stopping at the first
 * that ends the walk (torn, cut or failed). */
int rift_recover_segments(rift_stream *st, const uint64_t *bases, size_t n,
                          rift_error *err) {
    rift_sbuf buf;
    rift_sbuf_init(&buf, st->mem);
    int rc = 0;
    bool done = false;
    reserve_index(st, bases, n);
    for (size_t i = 0; i < n && rc == 0 && !done; i++) {
        bool last = i + 1 == n;
        const uint64_t *later = bases + i + 1;
        size_t nlater = n - i - 1;
        rift_seg *seg = NULL;
        uint64_t fsize = 0;
        if ((rc = open_segment(st, bases[i], &seg, &fsize, err)) != 0 ||
            (rc = check_continuity(st, seg, err)) != 0) {
            break;
        }
        if (st->segs.len == 1) {
            st->first_seq = seg->base;
        }
        scanner sc = {.st = st,
                      .fd = atomic_load(&seg->fd),
                      .path = seg->path,
                      .fsize = fsize,
                      .buf = &buf,
                      .boff = 0};
        buf.len = 0;
        rc = check_header(&sc, seg, last, later, nlater, &done, err);
        if (rc != 0 || done) {
            break;
        }
        uint64_t before = st->ents.len;
        uint64_t stop = 0;
        const char *why = "invalid record";
        int sr = scan_records(&sc, seg, &stop, &why, err);
        if (sr == -RIFT_ERR_STORAGE) {
            rc = rift_recover_corrupt(err, why, seg->path, stop);
            break;
        }
        if (sr < 0) {
            rc = sr;
            break;
        }
        seg->end = seg->base + (st->ents.len - before);
        seg->size = stop;
        rc = settle_scan(&sc, seg, sr, stop, why, last, later, nlater, &done,
                         err);
    }
    rift_sbuf_free(&buf);
    if (rc == 0) {
        for (size_t i = 0; i < st->segs.len; i++) {
            rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, i);
            s->written = s->synced = s->flushed = s->size;
        }
    }
    return rc;
}
