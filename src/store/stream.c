/*
 * stream.c — retained streams (store layer): settings and validation,
 * open and close, publish, retention, replay, info and checkpoint.
 * Consumers live in consumer.c, the writer thread in writer.c, recovery
 * in recover.c. Semantics: docs/protocol-v1.md §4.
 */
#include "store/store.h"
#include "subject/subject.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_MESSAGES   100000u
#define DEFAULT_MAX_BYTES      (64u << 20)
#define DEFAULT_MAX_PAYLOAD    (1u << 20)
#define DEFAULT_MAX_CONSUMERS  128u
#define DEFAULT_SEGMENT_BYTES  (64u << 20)
#define DEFAULT_CACHE_BYTES    (8u << 20)
#define DEFAULT_SNAPSHOT_BYTES (8u << 20)
#define MIN_SEGMENT_BYTES      4096u
#define MAX_SEGMENT_BYTES      (1u << 30)
#define MAX_BATCH              65536u
/* Cold reads fetch at least this much of a segment at once. */
#define READ_AHEAD (256u << 10)

static const char *const default_subjects[] = {">"};

/* ---- Settings ---- */

void rift_stream_settings_default(rift_stream_settings *s) {
    memset(s, 0, sizeof(*s));
    s->subjects = NULL;
    s->subjects_count = 0;
    s->max_messages = DEFAULT_MAX_MESSAGES;
    s->max_bytes = DEFAULT_MAX_BYTES;
    s->max_payload_bytes = DEFAULT_MAX_PAYLOAD;
    s->max_consumers = DEFAULT_MAX_CONSUMERS;
    s->sync_on_write = true;
    s->max_age_ms = 0;
    s->storage_path = NULL;
    s->segment_bytes = DEFAULT_SEGMENT_BYTES;
    s->cache_bytes = DEFAULT_CACHE_BYTES;
    s->state_snapshot_bytes = DEFAULT_SNAPSHOT_BYTES;
    s->vfs = NULL;
    s->mem = NULL;
}

static int config_error(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "invalid messaging configuration: stream limits "
                          "must be positive and payload must fit a frame");
}

static int validate_settings(const rift_stream_settings *s, rift_error *err) {
    if (s->max_messages == 0 || s->max_bytes == 0 ||
        s->max_payload_bytes == 0 || s->max_consumers == 0 ||
        s->max_payload_bytes > RIFT_MAX_PAYLOAD_LIMIT) {
        return config_error(err);
    }
    if (s->storage_path != NULL &&
        (s->storage_path[0] == '\0' || s->segment_bytes < MIN_SEGMENT_BYTES ||
         s->segment_bytes > MAX_SEGMENT_BYTES ||
         strlen(s->storage_path) > 3900)) {
        return config_error(err);
    }
    if (s->subjects_count > 0 && s->subjects == NULL) {
        return config_error(err);
    }
    for (size_t i = 0; i < s->subjects_count; i++) {
        const char *p = s->subjects[i];
        if (p == NULL) {
            return config_error(err);
        }
        if (!rift_subject_valid(p, strlen(p), true, RIFT_MAX_SUBJECT_BYTES)) {
            return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                                  "invalid subject: %s", p);
        }
    }
    return 0;
}

/* ---- Lifetime ---- */

uint64_t rift_stream_now(const rift_stream *st) {
    return st->vfs->wall_ms(st->vfs->user_data);
}

void rift_seg_free(rift_stream *st, rift_seg *s) {
    if (s != NULL) {
        rift_free(st->mem, s->path);
        rift_free(st->mem, s);
    }
}

static void release_records(rift_stream *st) {
    while (st->cache.len > 0) {
        rift_srec_unref(st->mem, *(rift_srec **)rift_ring_at(&st->cache, 0));
        rift_ring_pop_front(&st->cache);
    }
    rift_ring_free(&st->cache);
    rift_ring_free(&st->ents);
    rift_ring_free(&st->holes);
    rift_ring_free(&st->bad);
    rift_ring_free(&st->logged_holes);
}

static void close_files(rift_stream *st) {
    const rift_vfs *v = st->vfs;
    while (st->segs.len > 0) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            v->close(v->user_data, fd);
        }
        rift_seg_free(st, s);
        rift_ring_pop_front(&st->segs);
    }
    rift_ring_free(&st->segs);
    if (st->state_fd >= 0) {
        v->close(v->user_data, st->state_fd);
        st->state_fd = -1;
    }
    if (st->dir_fd >= 0) {
        v->close(v->user_data, st->dir_fd);
        st->dir_fd = -1;
    }
    /* Closing the lock file's last descriptor releases the flock. */
    if (st->lock_fd >= 0) {
        v->close(v->user_data, st->lock_fd);
        st->lock_fd = -1;
    }
}

static void free_stages(rift_stream *st) {
    rift_stage *stages[2] = {&st->fill, &st->io};
    for (int k = 0; k < 2; k++) {
        rift_stage *s = stages[k];
        for (size_t i = 0; i < s->dead.len; i++) {
            rift_seg *d = *(rift_seg **)rift_ring_at(&s->dead, i);
            int fd = atomic_load(&d->fd);
            if (fd >= 0) {
                st->vfs->close(st->vfs->user_data, fd);
            }
            rift_seg_free(st, d);
        }
        s->dead.len = 0;
        rift_stage_free(s);
    }
}

/* Releases everything but the object, the lock and the consumers that
 * handles still hold. Under lock or single-threaded. */
static void shut(rift_stream *st) {
    st->closed = true;
    for (size_t i = 0; i < st->ncons; i++) {
        rift_consumer_unref_locked(st->cons[i]);
    }
    st->ncons = 0;
    rift_free(st->mem, st->cons);
    st->cons = NULL;
    st->cons_cap = 0;
    release_records(st);
    close_files(st);
    free_stages(st);
    rift_ring_free(&st->completions);
    rift_ring_free(&st->wdirty);
    rift_ring_free(&st->wfire);
    rift_sbuf_free(&st->rbuf);
    st->rseg = NULL;
}

void rift_stream_unref(rift_stream *st) {
    if (atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    for (size_t i = 0; i < st->cfg.subjects_count; i++) {
        rift_free(st->mem, st->subjects[i]);
    }
    rift_free(st->mem, st->subjects);
    rift_free(st->mem, st->subject_lens);
    rift_free(st->mem, st->dir);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->work_cv);
    pthread_cond_destroy(&st->done_cv);
    for (size_t i = 0; i < RIFT_ARRAY_LEN(st->gen_wait); i++) {
        pthread_mutex_destroy(&st->gen_wait[i].mu);
        pthread_cond_destroy(&st->gen_wait[i].cv);
    }
    rift_free(st->mem, st);
}

int rift_stream_check_usable(rift_stream *st, rift_error *err) {
    if (st->closed) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: stream is closed");
    }
    if (st->poison != 0) {
        return rift_writer_poisoned(st, err);
    }
    return 0;
}

static int copy_subjects(rift_stream *st, const rift_stream_settings *s) {
    const char *const *src = s->subjects_count ? s->subjects : default_subjects;
    size_t n = s->subjects_count ? s->subjects_count : 1;
    st->subjects = rift_calloc(st->mem, n, sizeof(char *));
    st->subject_lens = rift_calloc(st->mem, n, sizeof(size_t));
    if (st->subjects == NULL || st->subject_lens == NULL) {
        return RIFT_ERR_NOMEM;
    }
    st->cfg.subjects_count = n;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(src[i]);
        st->subjects[i] = rift_strndup(st->mem, src[i], len);
        if (st->subjects[i] == NULL) {
            return RIFT_ERR_NOMEM;
        }
        st->subject_lens[i] = len;
    }
    st->cfg.subjects = (const char *const *)st->subjects;
    return 0;
}

int rift_stream_new_mode(rift_stream **pstream,
                         const rift_stream_settings *settings,
                         rift_open_mode mode, rift_store_report *report,
                         rift_error *err) {
    rift_stream_settings def;
    if (settings == NULL) {
        rift_stream_settings_default(&def);
        settings = &def;
    }
    int rc = validate_settings(settings, err);
    if (rc != 0) {
        return rc;
    }
    const rift_mem *mem = settings->mem;
    rift_stream *st = rift_calloc(mem, 1, sizeof(*st));
    if (st == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    st->cfg = *settings;
    st->cfg.subjects_count = 0;
    st->cfg.storage_path = NULL;
    st->mem = mem;
    st->vfs = settings->vfs ? settings->vfs : rift_vfs_posix();
    st->mode = mode;
    st->report = report;
    /* Callers hold the lock for microseconds (a blocking caller of an
     * unsynced stream for one write()): a short spin beats sleeping. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&st->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&st->work_cv, NULL);
    pthread_cond_init(&st->done_cv, NULL);
    for (size_t i = 0; i < RIFT_ARRAY_LEN(st->gen_wait); i++) {
        pthread_mutex_init(&st->gen_wait[i].mu, NULL);
        pthread_cond_init(&st->gen_wait[i].cv, NULL);
    }
    atomic_init(&st->refs, 1);
    atomic_init(&st->syncs, 0);
    atomic_init(&st->durable_gen, 0);
    atomic_init(&st->poison, 0);
    atomic_init(&st->poison_gen, 0);
    st->first_seq = 1;
    st->last_seq = 0;
    st->cache_first = 1;
    st->next_cid = 1;
    st->fill_gen = 1;
    st->lock_fd = -1;
    st->dir_fd = -1;
    st->state_fd = -1;
    rift_ring_init(&st->ents, sizeof(rift_ent), mem);
    rift_ring_init(&st->holes, sizeof(rift_hole), mem);
    rift_ring_init(&st->bad, sizeof(uint64_t), mem);
    rift_ring_init(&st->logged_holes, sizeof(rift_hole), mem);
    rift_ring_init(&st->cache, sizeof(rift_srec *), mem);
    rift_ring_init(&st->segs, sizeof(rift_seg *), mem);
    rift_ring_init(&st->completions, sizeof(rift_completion), mem);
    rift_ring_init(&st->wdirty, sizeof(rift_seg *), mem);
    rift_ring_init(&st->wfire, sizeof(rift_completion), mem);
    rift_stage_init(&st->fill, mem);
    rift_stage_init(&st->io, mem);
    rift_sbuf_init(&st->rbuf, mem);

    if (copy_subjects(st, settings) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (settings->storage_path != NULL) {
        st->file = true;
        st->dir = rift_strndup(mem, settings->storage_path,
                               strlen(settings->storage_path));
        if (st->dir == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        /* A trailing slash would double in every file path. */
        size_t dl = strlen(st->dir);
        while (dl > 1 && st->dir[dl - 1] == '/') {
            st->dir[--dl] = '\0';
        }
        st->cfg.storage_path = st->dir;
        rc = rift_recover(st, err);
        if (rc != 0) {
            goto fail;
        }
        st->durable_seq = st->last_seq;
        st->written_seq = st->last_seq;
        st->state_good = st->state_size;
        if (mode == RIFT_OPEN_NORMAL) {
            rc = rift_writer_start(st, err);
            if (rc != 0) {
                goto fail;
            }
        }
    }
    *pstream = st;
    return 0;

fail:
    shut(st);
    rift_stream_unref(st);
    return rc;
}

int rift_stream_new(rift_stream **pstream, const rift_stream_settings *settings,
                    rift_error *err) {
    return rift_stream_new_mode(pstream, settings, RIFT_OPEN_NORMAL, NULL, err);
}

void rift_stream_del(rift_stream *st) {
    if (st == NULL) {
        return;
    }
    if (st->file && st->writer_started) {
        pthread_mutex_lock(&st->lock);
        if (st->poison == 0 && st->marker != st->first_seq) {
            /* Leave the exact first retained sequence for the next open. */
            rift_sbuf *b = rift_writer_state_buf(st);
            size_t before = b->len;
            int64_t start = rift_ev_begin(b, RIFT_EV_FIRST_SEQ);
            if (start >= 0 && rift_ev_put_u64(b, st->first_seq) == 0) {
                rift_ev_finish(b, start);
                st->marker = st->first_seq;
            } else {
                b->len = before;
            }
        }
        pthread_mutex_unlock(&st->lock);
        rift_writer_stop(st);
    }
    pthread_mutex_lock(&st->lock);
    shut(st);
    pthread_mutex_unlock(&st->lock);
    rift_stream_unref(st);
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

void rift_stream_retain(rift_stream *st, uint64_t now) {
    uint64_t before = st->first_seq;
    while (st->ents.len > 0) {
        rift_ent *e = rift_ring_at(&st->ents, 0);
        if (st->ents.len <= st->cfg.max_messages &&
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
        rift_writer_drop_segments(st);
    }
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

/* ---- Publish ---- */

static bool subject_matches_stream(const rift_stream *st, const char *s,
                                   size_t len) {
    for (size_t i = 0; i < st->cfg.subjects_count; i++) {
        if (rift_subject_matches(st->subjects[i], st->subject_lens[i], s,
                                 len)) {
            return true;
        }
    }
    return false;
}

static int publish(rift_stream *st, const char *subject, size_t subject_len,
                   const char *reply, size_t reply_len, const uint8_t *payload,
                   size_t payload_len, rift_stored *out, bool blocking,
                   rift_stream_done_cb cb, void *user_data, rift_error *err) {
    if (reply == NULL) {
        reply_len = 0;
    }
    if (payload == NULL) {
        payload_len = 0;
    }
    if (blocking && rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    if (subject == NULL || !rift_subject_valid(subject, subject_len, false,
                                               RIFT_MAX_SUBJECT_BYTES)) {
        return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                              "invalid subject: %.*s",
                              subject ? (int)RIFT_MIN(subject_len, 4096) : 0,
                              subject ? subject : "");
    }
    if (reply_len > 0 &&
        !rift_subject_valid(reply, reply_len, false, RIFT_MAX_SUBJECT_BYTES)) {
        return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                              "invalid subject: %.*s",
                              (int)RIFT_MIN(reply_len, 4096), reply);
    }
    if (!subject_matches_stream(st, subject, subject_len)) {
        return rift_error_set(err, RIFT_ERR_STREAM_NOT_MATCHED,
                              "subject does not match this stream");
    }
    uint64_t limit = RIFT_MIN(st->cfg.max_payload_bytes, st->cfg.max_bytes);
    if (payload_len > limit) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %zu exceeds limit %llu",
                              payload_len, (unsigned long long)limit);
    }
    uint64_t size =
        (uint64_t)payload_len + subject_len + reply_len + RIFT_REC_OVERHEAD;
    if (size > st->cfg.max_bytes) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %llu exceeds limit %llu",
                              (unsigned long long)size,
                              (unsigned long long)st->cfg.max_bytes);
    }
    /* The checksum and the copy are made before the lock is taken, so
     * concurrent publishers serialize only on the append itself. */
    uint8_t head[RIFT_REC_HEAD];
    uint32_t pcrc = 0;
    if (st->file) {
        pcrc = rift_rec_prepare(head, subject, subject_len, reply, reply_len,
                                payload, payload_len);
    }
    rift_srec *r = rift_srec_new(st->mem, subject, subject_len, reply,
                                 reply_len, payload, payload_len);
    if (r == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }

    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = rift_stream_check_usable(st, err);
    if (rc != 0) {
        goto fail;
    }
    if (st->last_seq + 1 >= UINT64_MAX) {
        rc = rift_error_set(err, RIFT_ERR_STORAGE,
                            "stream storage: stream sequence exhausted");
        goto fail;
    }
    if (!blocking && cb != NULL && (rc = rift_writer_reserve(st, err)) != 0) {
        goto fail;
    }
    rift_ent *e = rift_ring_push(&st->ents);
    rift_srec **slot = e ? rift_ring_push(&st->cache) : NULL;
    if (slot == NULL) {
        if (e != NULL) {
            rift_ring_pop_back(&st->ents);
        }
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    uint64_t now = rift_stream_now(st);
    uint64_t seq = st->last_seq + 1;
    uint32_t off = 0;
    if (st->file) {
        uint8_t *p = rift_writer_stage_record(st, (size_t)size, &off, err);
        if (p == NULL) {
            rift_ring_pop_back(&st->cache);
            rift_ring_pop_back(&st->ents);
            rc = RIFT_ERR_NOMEM;
            goto fail;
        }
        memcpy(p, head, RIFT_REC_HEAD);
        uint8_t *q = p + RIFT_REC_HEAD;
        memcpy(q, subject, subject_len);
        q += subject_len;
        if (reply_len > 0) {
            memcpy(q, reply, reply_len);
            q += reply_len;
        }
        if (payload_len > 0) {
            memcpy(q, payload, payload_len);
        }
        rift_rec_finish(p, (uint32_t)size, pcrc, seq, now);
    }
    r->seq = seq;
    r->ts = now;
    e->off = off;
    e->len = (uint32_t)size;
    *slot = r;
    if (st->cache.len == 1) {
        st->cache_first = seq;
    }
    st->last_seq = seq;
    st->bytes += size;
    st->cache_used += size;
    rift_stream_retain(st, now);
    rift_stream_cache_trim(st);
    if (out != NULL) {
        out->sequence = seq;
        out->timestamp_ms = now;
    }
    uint64_t wait = 0;
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, err);
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;

fail:
    pthread_mutex_unlock(&st->lock);
    rift_srec_unref(st->mem, r);
    return rc;
}

int rift_stream_publish(rift_stream *st, const char *subject,
                        size_t subject_len, const char *reply, size_t reply_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_stored *out, rift_error *err) {
    return publish(st, subject, subject_len, reply, reply_len, payload,
                   payload_len, out, true, NULL, NULL, err);
}

int rift_stream_publish_async(rift_stream *st, const char *subject,
                              size_t subject_len, const char *reply,
                              size_t reply_len, const uint8_t *payload,
                              size_t payload_len, rift_stored *out,
                              rift_stream_done_cb cb, void *user_data,
                              rift_error *err) {
    return publish(st, subject, subject_len, reply, reply_len, payload,
                   payload_len, out, false, cb, user_data, err);
}

/* ---- Replay, info, checkpoint ---- */

int rift_stream_replay(rift_stream *st, uint64_t from, size_t limit,
                       rift_batch *out, rift_error *err) {
    if (limit > MAX_BATCH) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "replay limit must be 0..65536");
    }
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    /* Readable while writes are refused after a failure: it shows only
     * acknowledged records anyway. */
    int rc = st->closed ? rift_stream_check_usable(st, err) : 0;
    if (rc != 0) {
        pthread_mutex_unlock(&st->lock);
        return rc;
    }
    rift_stream_retain(st, rift_stream_now(st));
    /* A file stream shows only what a completed publish could have
     * reported: records synced, or for an unsynced stream written. */
    uint64_t cap = !st->file               ? st->last_seq
                   : st->cfg.sync_on_write ? st->durable_seq
                                           : st->written_seq;
    uint64_t start = RIFT_MAX(from, st->first_seq);
    size_t n = 0;
    if (start <= cap) {
        n = (size_t)RIFT_MIN((uint64_t)limit, cap - start + 1);
    }
    rift_srec **recs = NULL;
    if (n > 0) {
        recs = rift_malloc(st->mem, n * sizeof(*recs));
        if (recs == NULL) {
            pthread_mutex_unlock(&st->lock);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    size_t got = 0;
    for (uint64_t seq = start; got < n && seq <= cap; seq++) {
        seq = rift_stream_past_hole(st, seq);
        if (seq > cap) {
            break;
        }
        rc = rift_stream_load(st, seq, &recs[got], err);
        if (rc == RIFT_LOAD_CORRUPT) {
            rc = 0; /* logged once; replay goes past it */
            continue;
        }
        if (rc != 0) {
            break;
        }
        got++;
    }
    n = got;
    pthread_mutex_unlock(&st->lock);
    if (rc != 0) {
        for (size_t i = 0; i < got; i++) {
            rift_srec_unref(st->mem, recs[i]);
        }
        rift_free(st->mem, recs);
        return rc;
    }
    rc = rift_batch_build(out, st->mem, recs, NULL, n);
    rift_free(st->mem, recs);
    if (rc != 0) {
        return rift_error_set(err, rc, "out of memory");
    }
    return 0;
}

int rift_stream_get_info(rift_stream *st, rift_stream_info *out,
                         rift_error *err) {
    memset(out, 0, sizeof(*out));
    /* The info keeps the allocator for rift_stream_info_free. */
    out->priv_ = st->mem;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    if (!st->closed) {
        rift_stream_retain(st, rift_stream_now(st));
    }
    out->messages = st->ents.len;
    out->bytes = st->bytes;
    out->first_sequence = st->first_seq;
    out->last_sequence = st->last_seq;
    out->durable = st->file;
    out->poisoned = st->poison != 0;
    out->syncs = atomic_load(&st->syncs);
    out->segments = st->segs.len;
    for (size_t i = 0; i < st->segs.len; i++) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, i);
        out->disk_bytes += s->size;
    }
    out->consumer_count = st->ncons;
    if (st->ncons > 0) {
        out->consumer_names = rift_calloc(st->mem, st->ncons, sizeof(char *));
        if (out->consumer_names == NULL) {
            pthread_mutex_unlock(&st->lock);
            out->consumer_count = 0;
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < st->ncons; i++) {
            rift_consumer *c = st->cons[i];
            out->consumer_names[i] =
                rift_strndup(st->mem, c->name, c->name_len);
            if (out->consumer_names[i] == NULL) {
                pthread_mutex_unlock(&st->lock);
                rift_stream_info_free(out);
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            }
        }
    }
    pthread_mutex_unlock(&st->lock);
    return 0;
}

void rift_stream_info_free(rift_stream_info *info) {
    if (info == NULL || info->consumer_names == NULL) {
        return;
    }
    const rift_mem *mem = info->priv_;
    for (size_t i = 0; i < info->consumer_count; i++) {
        rift_free(mem, info->consumer_names[i]);
    }
    rift_free(mem, info->consumer_names);
    info->consumer_names = NULL;
    info->consumer_count = 0;
}

int rift_stream_checkpoint(rift_stream *st, rift_error *err) {
    if (rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    uint64_t ticket = 0;
    int rc = rift_stream_check_usable(st, err);
    if (rc == 0 && st->file) {
        rift_stream_retain(st, rift_stream_now(st));
        rift_writer_drop_segments(st);
        if (rift_writer_snapshot(st) != 0) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        } else {
            ticket = st->fill_gen;
            st->fill.full_sync = true;
            st->fill_kicked = false; /* this one must wake the writer */
            rift_writer_kick(st);
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && ticket != 0) {
        rc = rift_writer_wait(st, ticket, err);
    }
    return rc;
}
