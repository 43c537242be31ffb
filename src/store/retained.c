/*
 * retained.c — the retained records of a stream (store layer): the index
 * of [first_seq, last_seq] and its holes, the record cache, the records
 * found corrupt, retention by count, bytes and age, and reading a record
 * back from its segment through a read-ahead buffer. Under the stream
 * lock. stream.c, consumer.c, the writer and recovery all use it; it uses
 * only the consumer state (retention raises consumers) and the stage
 * (segments retention empties are unlinked by the next cycle).
 */
#include "store/retained.h"
#include "store/consumer_state.h"
#include "store/stage.h"

#include <string.h>

/* Cold reads fetch at least this much of a segment at once. */
#define READ_AHEAD (256u << 10)

/* ---- Clock and segments ---- */

uint64_t rift_stream_now(const rift_stream *st) {
    return st->vfs->wall_ms(st->vfs->user_data);
}

void rift_seg_free(rift_stream *st, rift_seg *s) {
    if (s != NULL) {
        rift_free(st->mem, s->path);
        rift_free(st->mem, s);
    }
}

/* ---- Holes ---- */

static const rift_hole *hole_at(const rift_stream *st, size_t i) {
    return rift_ring_at(&st->holes, i);
}

uint64_t rift_stream_past_hole(const rift_stream *st, uint64_t seq) {
    for (size_t i = 0; i < st->holes.len; i++) {
        const rift_hole *h = hole_at(st, i);
        if (seq < h->from) {
            break;
        }
        if (seq < h->to) {
            return h->to;
        }
    }
    return seq;
}

uint64_t rift_stream_newest(const rift_stream *st) {
    if (st->ents.len == 0) {
        return 0;
    }
    if (st->holes.len > 0) {
        const rift_hole *h = hole_at(st, st->holes.len - 1);
        if (h->to == st->last_seq + 1) {
            return h->from - 1; /* the range ends in a hole */
        }
    }
    return st->last_seq;
}

/* The index entry of retained record |seq| (not in a hole): the holes
 * below it take no entries. */
static rift_ent *ent_of(rift_stream *st, uint64_t seq) {
    uint64_t skip = 0;
    for (size_t i = 0; i < st->holes.len; i++) {
        const rift_hole *h = hole_at(st, i);
        if (seq < h->from) {
            break;
        }
        skip += h->to - h->from;
    }
    return rift_ring_at(&st->ents, (size_t)(seq - st->first_seq - skip));
}

void rift_stream_skip_holes(rift_stream *st) {
    while (st->holes.len > 0 && hole_at(st, 0)->from <= st->first_seq) {
        const rift_hole *h = hole_at(st, 0);
        if (h->to > st->first_seq) {
            st->first_seq = h->to;
        }
        rift_ring_pop_front(&st->holes);
    }
}

void rift_stream_pop_front(rift_stream *st) {
    rift_ent *e = rift_ring_at(&st->ents, 0);
    st->bytes -= e->len;
    rift_ring_pop_front(&st->ents);
    st->first_seq++;
    rift_stream_skip_holes(st);
}

int rift_stream_add_hole(rift_stream *st, uint64_t from, uint64_t to) {
    if (st->holes.len > 0) {
        rift_hole *last = rift_ring_at(&st->holes, st->holes.len - 1);
        if (last->to == from) {
            last->to = to;
            return 0;
        }
    }
    rift_hole *h = rift_ring_push(&st->holes);
    if (h == NULL) {
        return RIFT_ERR_NOMEM;
    }
    h->from = from;
    h->to = to;
    return 0;
}

/* ---- Records that cannot be read back ---- */

/* Index of the first entry of |st->bad| >= |seq|. */
static size_t bad_lower(const rift_stream *st, uint64_t seq) {
    size_t lo = 0, hi = st->bad.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (*(const uint64_t *)rift_ring_at(&st->bad, mid) < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static bool is_bad(const rift_stream *st, uint64_t seq) {
    size_t i = bad_lower(st, seq);
    return i < st->bad.len &&
           *(const uint64_t *)rift_ring_at(&st->bad, i) == seq;
}

/* Remembers that record |seq| is corrupt; false when it already was. */
static bool note_bad(rift_stream *st, uint64_t seq) {
    size_t i = bad_lower(st, seq);
    if (i < st->bad.len && *(uint64_t *)rift_ring_at(&st->bad, i) == seq) {
        return false;
    }
    if (rift_ring_push(&st->bad) == NULL) {
        return true; /* out of memory: it is only logged again */
    }
    for (size_t k = st->bad.len - 1; k > i; k--) {
        *(uint64_t *)rift_ring_at(&st->bad, k) =
            *(uint64_t *)rift_ring_at(&st->bad, k - 1);
    }
    *(uint64_t *)rift_ring_at(&st->bad, i) = seq;
    return true;
}

static void bad_trim(rift_stream *st) {
    while (st->bad.len > 0 &&
           *(uint64_t *)rift_ring_at(&st->bad, 0) < st->first_seq) {
        rift_ring_pop_front(&st->bad);
    }
}

/* ---- Retention ---- */

void rift_stream_cache_trim(rift_stream *st) {
    if (!st->file) {
        return;
    }
    while (st->cache.len > 0 && st->cache_used > st->cfg.cache_bytes &&
           st->cache_first <= st->written_seq) {
        rift_srec *r = *(rift_srec **)rift_ring_at(&st->cache, 0);
        st->cache_used -= (uint64_t)RIFT_REC_OVERHEAD + r->subject_len +
                          r->reply_len + (uint64_t)r->payload_len;
        rift_srec_unref(st->mem, r);
        rift_ring_pop_front(&st->cache);
        st->cache_first++;
    }
}

/* Whether the first retained record is at least max_age_ms old. */
static bool front_expired(rift_stream *st, uint64_t now) {
    uint64_t max_age = st->cfg.max_age_ms;
    if (max_age == 0) {
        return false;
    }
    if (st->front_ts_seq != st->first_seq) {
        uint64_t ts;
        if (!rift_stream_ts(st, st->first_seq, &ts)) {
            return false; /* unreadable: the next load reports it */
        }
        st->front_ts = ts;
        st->front_ts_seq = st->first_seq;
    }
    return now >= st->front_ts && now - st->front_ts >= max_age;
}

/* Evicts from the front what retention no longer allows, or every
 * record (|all|: a purge); consumers and segments follow either way. */
static void evict(rift_stream *st, uint64_t now, bool all) {
    uint64_t before = st->first_seq;
    while (st->ents.len > 0) {
        rift_ent *e = rift_ring_at(&st->ents, 0);
        if (!all && st->ents.len <= st->cfg.max_messages &&
            st->bytes <= st->cfg.max_bytes && !front_expired(st, now)) {
            break;
        }
        uint32_t len = e->len;
        bool cached = st->cache.len > 0 && st->cache_first == st->first_seq;
        rift_stream_pop_front(st);
        if (cached) {
            rift_srec *r = *(rift_srec **)rift_ring_at(&st->cache, 0);
            st->cache_used -= len;
            rift_srec_unref(st->mem, r);
            rift_ring_pop_front(&st->cache);
            st->cache_first++;
        }
    }
    if (st->cache_first < st->first_seq) {
        st->cache_first = st->first_seq;
    }
    if (st->first_seq == before) {
        return;
    }
    bad_trim(st);
    for (size_t i = 0; i < st->ncons; i++) {
        rift_consumer *c = st->cons[i];
        rift_pend_trim_below(c, st->first_seq);
        if (c->next_seq < st->first_seq) {
            c->next_seq = st->first_seq;
        }
    }
    if (st->file && st->mode == RIFT_OPEN_NORMAL) {
        rift_stage_drop_segments(st);
    }
}

void rift_stream_retain(rift_stream *st, uint64_t now) {
    evict(st, now, false);
}

void rift_stream_evict_all(rift_stream *st) {
    evict(st, 0, true);
}

/* ---- Reading records back ---- */

static rift_seg *seg_of(rift_stream *st, uint64_t seq) {
    size_t lo = 0, hi = st->segs.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, mid);
        if (seq < s->base) {
            hi = mid;
        } else if (seq >= s->end) {
            lo = mid + 1;
        } else {
            return s;
        }
    }
    return NULL;
}

/*
 * A retained record that cannot be read back intact: logged once with the
 * file and offset (for the operator), skipped by fetch and replay from
 * then on, and reported to callers by sequence only — error texts reach
 * remote clients, which must not learn server paths.
 */
static int corrupt_record(rift_stream *st, uint64_t seq, const char *why,
                          const rift_seg *s, uint64_t off, rift_error *err) {
    if (note_bad(st, seq)) {
        rift_log(RIFT_LOG_ERROR,
                 "stream storage: record %llu is corrupt (%s in %s at offset "
                 "%llu); fetch and replay skip it",
                 (unsigned long long)seq, why, s->path,
                 (unsigned long long)off);
    }
    rift_error_set(err, RIFT_ERR_STORAGE,
                   "stream storage: record %llu is corrupt (%s)",
                   (unsigned long long)seq, why);
    return RIFT_LOAD_CORRUPT;
}

/* Reads [off, off + len) of |s| (record |seq|) through the read-ahead
 * buffer: 0, RIFT_LOAD_CORRUPT when the file ends early, or an I/O
 * error, logged once per record. */
static int read_at(rift_stream *st, rift_seg *s, uint64_t seq, uint64_t off,
                   uint32_t len, const uint8_t **out, rift_error *err) {
    if (st->rseg == s && off >= st->roff &&
        off + len <= st->roff + st->rbuf.len) {
        *out = st->rbuf.data + (off - st->roff);
        return 0;
    }
    uint64_t want = RIFT_MAX((uint64_t)len, READ_AHEAD);
    if (off + want > s->flushed) {
        want = s->flushed > off ? s->flushed - off : 0;
    }
    if (want < len) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: record %llu is not on disk",
                              (unsigned long long)seq);
    }
    st->rseg = NULL;
    st->rbuf.len = 0;
    if (rift_sbuf_reserve(&st->rbuf, (size_t)want) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    const rift_vfs *v = st->vfs;
    int fd = atomic_load(&s->fd);
    size_t got = 0;
    while (got < want) {
        rift_ssize n = v->pread(v->user_data, fd, st->rbuf.data + got,
                                (size_t)want - got, off + got);
        if (n < 0) {
            char os[256];
            rift_vfs_os_error((int)n, os, sizeof(os));
            /* A read error may pass: the record is not skipped, and a
             * consumer retrying it logs once, not per fetch. */
            if (st->read_error_seq != seq) {
                st->read_error_seq = seq;
                rift_log(RIFT_LOG_ERROR,
                         "stream storage: reading record %llu from %s at "
                         "offset %llu: %s",
                         (unsigned long long)seq, s->path,
                         (unsigned long long)(off + got), os);
            }
            return rift_error_set(err, RIFT_ERR_IO,
                                  "messaging I/O: read record %llu: %s",
                                  (unsigned long long)seq, os);
        }
        if (n == 0) {
            break;
        }
        got += (size_t)n;
    }
    if (got < len) {
        return corrupt_record(st, seq, "segment ends before the record", s, off,
                              err);
    }
    st->rbuf.len = got;
    st->rseg = s;
    st->roff = off;
    *out = st->rbuf.data;
    return 0;
}

bool rift_stream_ts(rift_stream *st, uint64_t seq, uint64_t *ts) {
    if (seq < st->first_seq || seq > st->last_seq) {
        return false;
    }
    if (seq >= st->cache_first && seq - st->cache_first < st->cache.len) {
        *ts = (*(rift_srec **)rift_ring_at(&st->cache, seq - st->cache_first))
                  ->ts;
        return true;
    }
    if (rift_stream_past_hole(st, seq) != seq) {
        return false;
    }
    rift_ent *e = ent_of(st, seq);
    rift_seg *s = seg_of(st, seq);
    if (!st->file || s == NULL) {
        return false;
    }
    /* The record was checksummed when it was recovered or written; eight
     * bytes of its trailer are all that is needed here. */
    uint8_t b[8];
    const rift_vfs *v = st->vfs;
    rift_ssize n = v->pread(v->user_data, atomic_load(&s->fd), b, sizeof(b),
                            (uint64_t)e->off + e->len - 8);
    if (n != (rift_ssize)sizeof(b)) {
        return false;
    }
    *ts = rift_get_u64(b);
    return true;
}

int rift_stream_load(rift_stream *st, uint64_t seq, rift_srec **out,
                     rift_error *err) {
    if (seq >= st->cache_first && seq - st->cache_first < st->cache.len) {
        *out = rift_srec_ref(
            *(rift_srec **)rift_ring_at(&st->cache, seq - st->cache_first));
        return 0;
    }
    rift_seg *s = seg_of(st, seq);
    if (!st->file || s == NULL || rift_stream_past_hole(st, seq) != seq) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: record %llu is missing",
                              (unsigned long long)seq);
    }
    if (is_bad(st, seq)) {
        rift_error_set(err, RIFT_ERR_STORAGE,
                       "stream storage: record %llu is corrupt",
                       (unsigned long long)seq);
        return RIFT_LOAD_CORRUPT;
    }
    rift_ent *e = ent_of(st, seq);
    const uint8_t *p = NULL;
    int rc = read_at(st, s, seq, e->off, e->len, &p, err);
    if (rc != 0) {
        return rc;
    }
    rift_rec_view v;
    const char *why = "unexpected sequence";
    if (rift_rec_decode(p, e->len, &v, &why) != 0 || v.seq != seq) {
        return corrupt_record(st, seq, why, s, e->off, err);
    }
    rift_srec *r = rift_srec_new(st->mem, v.subject, v.subject_len, v.reply,
                                 v.reply_len, v.payload, v.payload_len);
    if (r == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    r->seq = v.seq;
    r->ts = v.ts;
    *out = r;
    return 0;
}
