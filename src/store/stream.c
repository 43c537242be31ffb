/*
 * stream.c — retained streams (store layer): settings and validation,
 * open and close, publish, replay, info and checkpoint. The top of the
 * store with consumer.c: the retained index and retention live in
 * retained.c, staging in stage.c, the writer thread in writer.c,
 * recovery in recover.c, consumers in consumer_state.c and consumer.c.
 * Semantics: docs/protocol-v1.md §4.
 */
#include "store/stream_open.h"
#include "common/dlist.h"
#include "store/consumer_state.h"
#include "store/recover.h"
#include "store/reopen.h"
#include "store/retained.h"
#include "store/stage.h"
#include "store/writer.h"
#include "subject/subject.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_MESSAGES 100000u

#define DEFAULT_MAX_BYTES (64u << 20)

#define DEFAULT_MAX_PAYLOAD (1u << 20)

#define DEFAULT_MAX_CONSUMERS 128u

#define DEFAULT_SEGMENT_BYTES (64u << 20)

#define DEFAULT_CACHE_BYTES (8u << 20)

#define DEFAULT_SNAPSHOT_BYTES (8u << 20)

#define MIN_SEGMENT_BYTES 4096u

#define MAX_SEGMENT_BYTES (1u << 30)

#define MAX_BATCH 65536u

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

/* A new stream object in |mode|, empty, its locks and rings ready; NULL
 * when out of memory. */
static rift_stream *stream_new(const rift_stream_settings *settings,
                               rift_open_mode mode, rift_store_report *report) {
    const rift_mem *mem = settings->mem;
    rift_stream *st = rift_calloc(mem, 1, sizeof(*st));
    if (st == NULL) {
        return NULL;
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

    return st;
}

/* The stream directory of a file stream: recovered into |st|, and in a
 * normal open the writer started. */
static int open_directory(rift_stream *st, const char *path, rift_error *err) {
    st->file = true;
    st->dir = rift_strndup(st->mem, path, strlen(path));
    if (st->dir == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    /* A trailing slash would double in every file path. */
    size_t dl = strlen(st->dir);
    while (dl > 1 && st->dir[dl - 1] == '/') {
        st->dir[--dl] = '\0';
    }
    st->cfg.storage_path = st->dir;
    int rc = rift_recover(st, err);
    if (rc != 0) {
        return rc;
    }
    st->durable_seq = st->last_seq;
    st->written_seq = st->last_seq;
    st->state_good = st->state_size;
    if (st->mode == RIFT_OPEN_NORMAL) {
        return rift_writer_start(st, err);
    }
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
    rift_stream *st = stream_new(settings, mode, report);
    if (st == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (copy_subjects(st, settings) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    } else if (settings->storage_path != NULL) {
        rc = open_directory(st, settings->storage_path, err);
    }
    if (rc != 0) {
        shut(st);
        rift_stream_unref(st);
        return rc;
    }
    *pstream = st;
    return 0;
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
            rift_sbuf *b = rift_stage_state_buf(st);
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

/* One message being published, with its record head and payload
 * checksum computed before the lock (file streams). */
typedef struct pub_msg {
    const char *subject;
    size_t subject_len;
    const char *reply;
    size_t reply_len;
    const uint8_t *payload;
    size_t payload_len;
    uint64_t size; /* the encoded record's */
    uint8_t head[RIFT_REC_HEAD];
    uint32_t pcrc;
} pub_msg;

/* The checks that need no lock: subjects, the stream's filter, sizes. */
static int check_publish(const rift_stream *st, pub_msg *m, rift_error *err) {
    if (m->subject == NULL ||
        !rift_subject_valid(m->subject, m->subject_len, false,
                            RIFT_MAX_SUBJECT_BYTES)) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_SUBJECT, "invalid subject: %.*s",
            m->subject ? (int)RIFT_MIN(m->subject_len, 4096) : 0,
            m->subject ? m->subject : "");
    }
    if (m->reply_len > 0 && !rift_subject_valid(m->reply, m->reply_len, false,
                                                RIFT_MAX_SUBJECT_BYTES)) {
        return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                              "invalid subject: %.*s",
                              (int)RIFT_MIN(m->reply_len, 4096), m->reply);
    }
    if (!subject_matches_stream(st, m->subject, m->subject_len)) {
        return rift_error_set(err, RIFT_ERR_STREAM_NOT_MATCHED,
                              "subject does not match this stream");
    }
    uint64_t limit = RIFT_MIN(st->cfg.max_payload_bytes, st->cfg.max_bytes);
    if (m->payload_len > limit) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %zu exceeds limit %llu",
                              m->payload_len, (unsigned long long)limit);
    }
    m->size = (uint64_t)m->payload_len + m->subject_len + m->reply_len +
              RIFT_REC_OVERHEAD;
    if (m->size > st->cfg.max_bytes) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %llu exceeds limit %llu",
                              (unsigned long long)m->size,
                              (unsigned long long)st->cfg.max_bytes);
    }
    return 0;
}

/* Stages |m| as record |seq| of a file stream; *|off| gets its offset. */
static int stage_message(rift_stream *st, const pub_msg *m, uint64_t seq,
                         uint64_t now, uint32_t *off, rift_error *err) {
    uint8_t *p = rift_stage_record(st, (size_t)m->size, off, err);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    memcpy(p, m->head, RIFT_REC_HEAD);
    uint8_t *q = p + RIFT_REC_HEAD;
    memcpy(q, m->subject, m->subject_len);
    q += m->subject_len;
    if (m->reply_len > 0) {
        memcpy(q, m->reply, m->reply_len);
        q += m->reply_len;
    }
    if (m->payload_len > 0) {
        memcpy(q, m->payload, m->payload_len);
    }
    rift_rec_finish(p, (uint32_t)m->size, m->pcrc, seq, now);
    return 0;
}

/* Appends |r| (the record of |m|) to the index, the cache and, for a
 * file stream, the stage, then applies retention. Under lock; on failure
 * nothing changed and |r| is still the caller's. */
static int append_locked(rift_stream *st, const pub_msg *m, rift_srec *r,
                         bool reserve, rift_stored *out, rift_error *err) {
    int rc = rift_stream_check_usable(st, err);
    if (rc != 0) {
        return rc;
    }
    if (st->last_seq + 1 >= UINT64_MAX) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: stream sequence exhausted");
    }
    if (reserve && (rc = rift_writer_reserve(st, err)) != 0) {
        return rc;
    }
    rift_ent *e = rift_ring_push(&st->ents);
    rift_srec **slot = e ? rift_ring_push(&st->cache) : NULL;
    if (slot == NULL) {
        if (e != NULL) {
            rift_ring_pop_back(&st->ents);
        }
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    uint64_t now = rift_stream_now(st);
    uint64_t seq = st->last_seq + 1;
    uint32_t off = 0;
    if (st->file && (rc = stage_message(st, m, seq, now, &off, err)) != 0) {
        rift_ring_pop_back(&st->cache);
        rift_ring_pop_back(&st->ents);
        return rc;
    }
    r->seq = seq;
    r->ts = now;
    e->off = off;
    e->len = (uint32_t)m->size;
    *slot = r;
    if (st->cache.len == 1) {
        st->cache_first = seq;
    }
    st->last_seq = seq;
    st->bytes += m->size;
    st->cache_used += m->size;
    rift_stream_retain(st, now);
    rift_stream_cache_trim(st);
    if (out != NULL) {
        out->sequence = seq;
        out->timestamp_ms = now;
    }
    return 0;
}

static int publish(rift_stream *st, const char *subject, size_t subject_len,
                   const char *reply, size_t reply_len, const uint8_t *payload,
                   size_t payload_len, rift_stored *out, bool blocking,
                   bool *done, rift_stream_done_cb cb, void *user_data,
                   rift_error *err) {
    pub_msg m = {.subject = subject,
                 .subject_len = subject_len,
                 .reply = reply,
                 .reply_len = reply == NULL ? 0 : reply_len,
                 .payload = payload,
                 .payload_len = payload == NULL ? 0 : payload_len};
    if (blocking && rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    int rc = check_publish(st, &m, err);
    if (rc != 0) {
        return rc;
    }
    /* The checksum and the copy are made before the lock is taken, so
     * concurrent publishers serialize only on the append itself. */
    if (st->file) {
        m.pcrc = rift_rec_prepare(m.head, subject, subject_len, m.reply,
                                  m.reply_len, payload, m.payload_len);
    }
    rift_srec *r = rift_srec_new(st->mem, subject, subject_len, m.reply,
                                 m.reply_len, payload, m.payload_len);
    if (r == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }

    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    rc = append_locked(st, &m, r, !blocking && cb != NULL, out, err);
    if (rc != 0) {
        pthread_mutex_unlock(&st->lock);
        rift_srec_unref(st->mem, r);
        return rc;
    }
    uint64_t wait = 0;
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, done,
                            err);
    if (rc == 0 && st->append_fn != NULL) {
        st->append_fn(st->append_arg);
    }
    for (rift_stream_watch *w = rc == 0 ? st->watches : NULL; w != NULL;
         w = w->next_) {
        w->fn(w->arg);
    }
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

void rift_stream_set_append_watch(rift_stream *st, rift_stream_append_fn fn,
                                  void *arg) {
    pthread_mutex_lock(&st->lock);
    if (fn != NULL || st->append_arg == arg) {
        st->append_fn = fn;
        st->append_arg = fn != NULL ? arg : NULL;
    }
    pthread_mutex_unlock(&st->lock);
}

void rift_stream_watch_add(rift_stream *st, rift_stream_watch *w) {
    pthread_mutex_lock(&st->lock);
    RIFT_DLIST_PUSH(st->watches, w, prev_, next_);
    pthread_mutex_unlock(&st->lock);
}

void rift_stream_watch_remove(rift_stream *st, rift_stream_watch *w) {
    pthread_mutex_lock(&st->lock);
    if (w->prev_ != NULL || st->watches == w) {
        RIFT_DLIST_REMOVE(st->watches, w, prev_, next_);
    }
    w->prev_ = w->next_ = NULL;
    pthread_mutex_unlock(&st->lock);
}

int rift_stream_publish(rift_stream *st, const char *subject,
                        size_t subject_len, const char *reply, size_t reply_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_stored *out, rift_error *err) {
    return publish(st, subject, subject_len, reply, reply_len, payload,
                   payload_len, out, true, NULL, NULL, NULL, err);
}

int rift_stream_publish_async(rift_stream *st, const char *subject,
                              size_t subject_len, const char *reply,
                              size_t reply_len, const uint8_t *payload,
                              size_t payload_len, rift_stored *out,
                              bool *completed, rift_stream_done_cb cb,
                              void *user_data, rift_error *err) {
    bool done = false;
    int rc = publish(st, subject, subject_len, reply, reply_len, payload,
                     payload_len, out, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
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

/* A checkpoint, after dropping every record first when |purge|: the
 * snapshot carries the new first sequence (FIRST_SEQ), so recovery does
 * not bring back purged records still in the active segment. */
static int checkpoint(rift_stream *st, bool purge, uint64_t *purged,
                      rift_error *err) {
    if (rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    uint64_t ticket = 0;
    int rc = rift_stream_check_usable(st, err);
    if (rc == 0 && purge) {
        if (purged != NULL) {
            *purged = st->ents.len;
        }
        rift_stream_evict_all(st);
    }
    if (rc == 0 && st->file) {
        rift_stream_retain(st, rift_stream_now(st));
        rift_stage_drop_segments(st);
        if (rift_stage_snapshot(st) != 0) {
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

int rift_stream_checkpoint(rift_stream *st, rift_error *err) {
    return checkpoint(st, false, NULL, err);
}

int rift_stream_purge(rift_stream *st, uint64_t *purged, rift_error *err) {
    return checkpoint(st, true, purged, err);
}

void rift_stream_get_settings(const rift_stream *st,
                              rift_stream_settings *out) {
    /* Set once at open, never changed: no lock needed. */
    *out = st->cfg;
}
