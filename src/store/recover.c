/*
 * recover.c — opening a stream directory (store layer): lock it, scan
 * every segment (checksums, sequence continuity) into the in-memory
 * index, replay the state log into the consumers, and apply the rules of
 * docs/protocol-v1.md §4.6: truncate a torn tail, refuse corruption with
 * an error naming the file and the offset, re-apply retention, make
 * pending deliveries immediately eligible. rift_store_verify and
 * rift_store_repair (offline.c) run the same code read-only or
 * repairing. Recovery fills the stream object it is given and starts
 * nothing: no writer, no stream operation.
 */
#include "store/recover.h"
#include "store/consumer_state.h"
#include "store/recover_io.h"
#include "store/recover_segments.h"
#include "store/retained.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dir_list {
    rift_stream *st;
    uint64_t *bases;
    size_t n;
    size_t cap;
    bool tmp_state;
    int rc;
} dir_list;

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
        return rift_recover_io_error(err, "open", parent, fd);
    }
    int rc = v->fsync(v->user_data, fd);
    v->close(v->user_data, fd);
    return rc != 0 ? rift_recover_io_error(err, "fsync", parent, rc) : 0;
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
            return rift_recover_io_error(err, "create directory", path, rc);
        }
        path[i] = c;
    }
    return 0;
}

static int lock_dir(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char *path = rift_recover_join(st, RIFT_LOCK_FILE);
    if (path == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    int fd =
        v->open(v->user_data, path, O_RDWR | O_CREAT, RIFT_STORE_FILE_MODE);
    if (fd < 0) {
        rc = rift_recover_io_error(err, "open", path, fd);
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
        rc = rift_recover_io_error(err, "open", st->dir, fd);
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

static int read_whole(rift_stream *st, int fd, const char *path, rift_sbuf *b,
                      rift_error *err) {
    const rift_vfs *v = st->vfs;
    uint64_t size;
    int rc = v->fsize(v->user_data, fd, &size);
    if (rc != 0) {
        return rift_recover_io_error(err, "stat", path, rc);
    }
    if (size > SIZE_MAX / 2 || rift_sbuf_reserve(b, (size_t)size) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t got = 0;
    while (got < size) {
        rift_ssize n =
            v->pread(v->user_data, fd, b->data + got, (size_t)size - got, got);
        if (n < 0) {
            return rift_recover_io_error(err, "read", path, (int)n);
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    b->len = got;
    return 0;
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
        return rift_recover_io_error(err, "write", path, rc);
    }
    st->state_size = RIFT_STATE_HEADER;
    return 0;
}

/* A state log without a valid header: empty or torn at creation (made
 * fresh), or corrupt (refused, except by a repair, which starts it
 * afresh). */
static int recover_bad_header(rift_stream *st, int fd, const char *path,
                              size_t len, rift_error *err) {
    bool fresh = len < RIFT_STATE_HEADER;
    if (!fresh && st->mode != RIFT_OPEN_REPAIR) {
        return rift_recover_corrupt(err, "invalid state log header", path, 0);
    }
    if (len > 0) {
        rift_recover_note_torn(st, path, 0);
    }
    if (!rift_recover_writable(st)) {
        return 0;
    }
    rift_recover_note_cut(st, len);
    int rc = write_fresh_state(st, fd, path, err);
    /* A new log's entry is synced on unsynced streams too (once per
     * stream): later syncs of the log do not cover it. */
    if (rc == 0 && len == 0) {
        rc = sync_parent(st, path, err);
    }
    return rc;
}

/* Applies the events of the log in |b| in order; a torn tail (or, in a
 * repair, the first bad event) is cut, and |b| ends where the log now
 * ends. */
static int replay_events(rift_stream *st, int fd, const char *path,
                         rift_sbuf *b, rift_error *err) {
    size_t pos = RIFT_STATE_HEADER;
    while (pos < b->len) {
        uint32_t len = 0;
        const char *why = NULL;
        int fc = rift_ev_frame_check(b->data + pos, b->len - pos, &len, &why);
        if (fc == 0) {
            int ac = rift_consumer_apply_event(
                st, b->data + pos + RIFT_EV_FRAME, len - RIFT_EV_FRAME, &why);
            if (ac == -2) {
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
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
            return rift_recover_corrupt(err, why, path, pos);
        }
        /* Torn tail, or corruption being repaired: cut here. */
        rift_recover_note_torn(st, path, pos);
        if (rift_recover_writable(st)) {
            rift_recover_note_cut(st, b->len - pos);
            int rc = rift_recover_truncate(st, fd, path, pos, err);
            if (rc != 0) {
                return rc;
            }
        }
        b->len = pos;
        break;
    }
    return 0;
}

static int recover_state(rift_stream *st, bool tmp_left, rift_error *err) {
    const rift_vfs *v = st->vfs;
    char *path = rift_recover_join(st, RIFT_STATE_FILE);
    char *tmp = rift_recover_join(st, RIFT_STATE_TMP_FILE);
    rift_sbuf b;
    rift_sbuf_init(&b, st->mem);
    int rc = 0;
    if (path == NULL || tmp == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* A snapshot that never replaced the log is incomplete by definition
     * (the rename is its commit point). */
    if (tmp_left && rift_recover_writable(st)) {
        v->unlink(v->user_data, tmp);
    }
    int flags = rift_recover_writable(st) ? O_RDWR | O_CREAT : O_RDONLY;
    int fd = v->open(v->user_data, path, flags, RIFT_STORE_FILE_MODE);
    if (fd == -ENOENT && !rift_recover_writable(st)) {
        goto out; /* verify: no consumers */
    }
    if (fd < 0) {
        rc = rift_recover_io_error(err, "open", path, fd);
        goto out;
    }
    st->state_fd = fd;
    if ((rc = read_whole(st, fd, path, &b, err)) != 0) {
        goto out;
    }
    if (b.len < RIFT_STATE_HEADER || rift_state_header_decode(b.data) != 0) {
        rc = recover_bad_header(st, fd, path, b.len, err);
        goto out;
    }
    if ((rc = replay_events(st, fd, path, &b, err)) == 0) {
        st->state_size = b.len;
    }
out:
    st->state_bytes = st->state_size;
    st->snapshot_bytes = st->state_size;
    rift_sbuf_free(&b);
    rift_free(st->mem, path);
    rift_free(st->mem, tmp);
    return rc;
}

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
    char *path = rift_recover_join(st, RIFT_STATE_FILE);
    if (path == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    size_t done = 0;
    while (rc == 0 && done < ev->len) {
        rift_ssize n = v->pwrite(v->user_data, st->state_fd, ev->data + done,
                                 ev->len - done, st->state_size + done);
        if (n <= 0) {
            rc = rift_recover_io_error(err, "write", path,
                                       n < 0 ? (int)n : -EIO);
        } else {
            done += (size_t)n;
        }
    }
    if (rc == 0 && (rc = v->fdatasync(v->user_data, st->state_fd)) != 0) {
        rc = rift_recover_io_error(err, "fdatasync", path, rc);
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
    if (rift_recover_writable(st) && floor > end) {
        if (st->ents.len > 0 && !rift_recover_logged_hole(st, end, floor)) {
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
        return rift_recover_io_error(err, "fsync", st->dir, rc);
    }
    st->dir_dirty = false;
    return 0;
}

/* Makes sure the directory exists (a verify only looks) and locks it. */
static int open_dir(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    int rc;
    if (st->mode == RIFT_OPEN_VERIFY) {
        int fd = v->open(v->user_data, st->dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0) {
            return rift_recover_io_error(err, "open", st->dir, fd);
        }
        v->close(v->user_data, fd);
    } else if ((rc = make_dirs(st, err)) != 0) {
        return rc;
    }
    /* A reopen keeps the lock it holds (a second flock would fail). */
    if (st->lock_fd < 0 && (rc = lock_dir(st, err)) != 0) {
        return rc;
    }
    return 0;
}

/* The segment bases in the directory, ascending, into |l|. */
static int list_dir(rift_stream *st, dir_list *l, rift_error *err) {
    const rift_vfs *v = st->vfs;
    int lr = v->list(v->user_data, st->dir, list_entry, l);
    if (l->rc != 0 || lr < 0) {
        rift_free(st->mem, l->bases);
        l->bases = NULL;
        return l->rc != 0 ? rift_error_set(err, RIFT_ERR_NOMEM, "out of memory")
                          : rift_recover_io_error(err, "list", st->dir, lr);
    }
    if (l->n > 1) {
        qsort(l->bases, l->n, sizeof(uint64_t), cmp_u64);
    }
    return 0;
}

static void report_range(rift_stream *st) {
    rift_store_report *r = st->report;
    if (r == NULL) {
        return;
    }
    uint64_t newest = rift_stream_newest(st);
    r->segments = st->segs.len;
    r->records = st->ents.len;
    r->first_sequence = st->first_seq;
    r->last_sequence = newest ? newest : st->first_seq - 1;
    r->next_sequence = st->last_seq + 1;
    for (size_t i = 0; i < st->segs.len; i++) {
        r->segment_bytes += (*(rift_seg **)rift_ring_at(&st->segs, i))->size;
    }
}

/* Fits each consumer to the recovered range: pending entries outside it
 * or in a hole go, the rest are eligible at once, the cursor is in it. */
static void fit_consumers(rift_stream *st) {
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
}

/* Segments retention emptied while the stream was closed. */
static int unlink_emptied(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    while (st->segs.len > 1) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
        if (s->end > st->first_seq) {
            break;
        }
        v->unlink(v->user_data, s->path);
        st->dir_dirty = true;
        rift_recover_close_seg(st, s);
        rift_ring_pop_front(&st->segs);
    }
    return sync_deletions(st, err);
}

int rift_recover(rift_stream *st, rift_error *err) {
    int rc;
    dir_list l = {.st = st};
    if ((rc = open_dir(st, err)) != 0 || (rc = list_dir(st, &l, err)) != 0) {
        return rc;
    }
    rc = recover_state(st, l.tmp_state, err);
    if (rc == 0) {
        rc = rift_recover_segments(st, l.bases, l.n, err);
    }
    rift_free(st->mem, l.bases);
    if (rc != 0) {
        return rc;
    }
    if ((rc = sync_deletions(st, err)) != 0 ||
        (rc = settle_range(st, err)) != 0) {
        return rc;
    }
    st->cache_first = st->last_seq + 1;
    report_range(st);
    if (st->mode == RIFT_OPEN_NORMAL) {
        rift_stream_retain(st, rift_stream_now(st));
    }
    fit_consumers(st);
    if (st->report != NULL) {
        st->report->consumers = st->ncons;
    }
    if (st->mode == RIFT_OPEN_NORMAL && st->ncons > st->cfg.max_consumers) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: stored consumers exceed "
                              "configured limit");
    }
    return rift_recover_writable(st) ? unlink_emptied(st, err) : 0;
}
