/*
 * consumer.c — durable pull consumers (store layer): open, get and
 * delete, fetch with ack-wait redelivery, ack, info. The top of the store
 * with stream.c: the table, the pending sets and their state events are
 * consumer_state.c; records come from retained.c; mutations are staged
 * (stage.c) and committed through the writer (writer.c). Semantics:
 * docs/protocol-v1.md §4.7.
 */
#include "store/consumer_settle.h"
#include "store/consumer_state.h"
#include "store/reopen.h"
#include "store/retained.h"
#include "store/stage.h"
#include "store/stream_open.h"
#include "store/writer.h"
#include "subject/acl.h"
#include "subject/subject.h"

#include <string.h>

/* ---- Checks ---- */

static int invalid_consumer(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "invalid messaging configuration: invalid consumer "
                          "name or limits");
}

static bool same_config(const rift_consumer *c, const rift_consumer_norm *n) {
    return c->filter_len == n->filter_len &&
           memcmp(c->filter, n->filter, n->filter_len) == 0 &&
           c->ack_wait_ms == n->ack_wait_ms &&
           c->max_ack_pending == n->max_ack_pending &&
           c->max_deliver == n->max_deliver && c->start_mode == n->mode &&
           c->start_arg == n->arg;
}

static int refuse_callback(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "blocking stream call from its own completion "
                          "callback");
}

static int not_found(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                          "consumer does not exist");
}

/* ---- Open, get, delete ---- */

static uint64_t resolve_start(rift_stream *st, const rift_consumer_norm *n,
                              uint64_t now) {
    switch (n->mode) {
    case RIFT_START_SEQUENCE:
        return n->arg;
    case RIFT_START_FIRST:
        return 1;
    case RIFT_START_LAST_RECEIVED: {
        uint64_t newest = rift_stream_newest(st);
        return newest != 0 ? newest : st->last_seq + 1;
    }
    case RIFT_START_NEW_ONLY:
        return st->last_seq + 1;
    default: {
        uint64_t t = n->arg;
        if (n->mode == RIFT_START_TIME_DELTA) {
            t = now > n->arg ? now - n->arg : 0;
        }
        /* A binary search over the retained records: exact while the
         * wall clock did not step back between appends (the original's
         * timestamps can), else it lands near the step. An unreadable
         * timestamp counts as later. */
        uint64_t lo = st->first_seq, hi = st->last_seq + 1;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            /* A sequence in a hole sorts as the record after it. */
            uint64_t probe = rift_stream_past_hole(st, mid);
            uint64_t ts;
            if (probe <= st->last_seq && rift_stream_ts(st, probe, &ts) &&
                ts < t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
    }
}

/* Takes a handle reference on |c| and on the stream. Under lock. */
static rift_consumer *take_handle(rift_consumer *c) {
    c->refs++;
    atomic_fetch_add_explicit(&c->st->refs, 1, memory_order_relaxed);
    return c;
}

/* A filter no subject of the stream can match would only hold a consumer
 * slot (a stream has max_consumers of them, durable across restarts). */
static bool filter_reaches_stream(const rift_stream *st,
                                  const rift_consumer_norm *nc) {
    for (size_t i = 0; i < st->cfg.subjects_count; i++) {
        if (rift_subject_overlaps(nc->filter, nc->filter_len, st->subjects[i],
                                  st->subject_lens[i])) {
            return true;
        }
    }
    return false;
}

/* Creates the consumer |name| (absent) with |nc| and journals its
 * creation. Under lock; nothing changes on failure. */
static int create_locked(rift_stream *st, const char *name, size_t name_len,
                         const rift_consumer_norm *nc, rift_consumer **out,
                         rift_error *err) {
    if (!filter_reaches_stream(st, nc)) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_CONFIG,
            "invalid messaging configuration: consumer filter "
            "matches none of the stream's subjects");
    }
    if (st->ncons >= st->cfg.max_consumers) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_CONFIG,
            "invalid messaging configuration: stream consumer "
            "limit reached");
    }
    rift_consumer *c =
        rift_consumer_alloc(st, name, name_len, nc->filter, nc->filter_len);
    if (c == NULL || rift_consumer_table_reserve(st) != 0) {
        if (c != NULL) {
            rift_consumer_unref_locked(c);
        }
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    uint64_t now = rift_stream_now(st);
    rift_stream_retain(st, now);
    c->id = st->next_cid;
    c->ack_wait_ms = nc->ack_wait_ms;
    c->max_ack_pending = nc->max_ack_pending;
    c->max_deliver = nc->max_deliver;
    c->start_mode = nc->mode;
    c->start_arg = nc->arg;
    c->start_seq = resolve_start(st, nc, now);
    c->next_seq = c->start_seq;
    c->created_gen = st->fill_gen;
    size_t before = 0;
    if (st->file) {
        rift_sbuf *b = rift_stage_state_buf(st);
        before = b->len;
        if (rift_consumer_encode_new(c, b) != 0) {
            rift_consumer_unref_locked(c);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    st->next_cid++;
    rift_consumer_insert(st, c); /* cannot fail: reserved above */
    if (st->file) {
        rift_stage_state_done(st, before);
    }
    *out = c;
    return 0;
}

static int consumer_open(rift_stream *st, const char *name, size_t name_len,
                         const rift_consumer_config *config,
                         rift_consumer **pconsumer, bool blocking, bool *done,
                         rift_stream_done_cb cb, void *user_data,
                         rift_error *err) {
    rift_consumer_norm nc;
    if (!rift_consumer_name_valid(name, name_len) ||
        !rift_consumer_normalize(config, &nc)) {
        return invalid_consumer(err);
    }
    if (blocking && rift_writer_is_self(st)) {
        return refuse_callback(err);
    }
    *pconsumer = NULL;
    uint64_t wait = 0;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = rift_stream_check_usable(st, err);
    if (rc != 0) {
        goto out;
    }
    if (!blocking && cb != NULL && (rc = rift_writer_reserve(st, err)) != 0) {
        goto out;
    }
    rift_consumer *c = rift_consumer_find(st, name, name_len);
    if (c != NULL) {
        if (!same_config(c, &nc)) {
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "invalid messaging configuration: consumer "
                                "already exists with different settings");
            goto out;
        }
        *pconsumer = take_handle(c);
        /* Its creation may still be on its way to the disk. */
        rc = rift_writer_commit_ticket(st, c->created_gen, cb, user_data,
                                       blocking, &wait, done, err);
        goto out;
    }
    rc = create_locked(st, name, name_len, &nc, &c, err);
    if (rc != 0) {
        goto out;
    }
    *pconsumer = take_handle(c);
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, done,
                            err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    if (rc < 0 && *pconsumer != NULL) {
        /* The consumer exists (its creation may or may not be on disk);
         * the caller gets the error and no handle. */
        rift_consumer_close(*pconsumer);
        *pconsumer = NULL;
    }
    return rc;
}

int rift_stream_consumer_open(rift_stream *st, const char *name,
                              size_t name_len,
                              const rift_consumer_config *config,
                              rift_consumer **pconsumer, rift_error *err) {
    return consumer_open(st, name, name_len, config, pconsumer, true, NULL,
                         NULL, NULL, err);
}

int rift_stream_consumer_open_async(rift_stream *st, const char *name,
                                    size_t name_len,
                                    const rift_consumer_config *config,
                                    rift_consumer **pconsumer, bool *completed,
                                    rift_stream_done_cb cb, void *user_data,
                                    rift_error *err) {
    bool done = false;
    int rc = consumer_open(st, name, name_len, config, pconsumer, false, &done,
                           cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_stream_consumer_get(rift_stream *st, const char *name, size_t name_len,
                             rift_consumer **pconsumer, rift_error *err) {
    pthread_mutex_lock(&st->lock);
    int rc = 0;
    if (st->closed) {
        rc = rift_stream_check_usable(st, err);
    } else {
        rift_consumer *c = name ? rift_consumer_find(st, name, name_len) : NULL;
        if (c == NULL) {
            rc = not_found(err);
        } else {
            *pconsumer = take_handle(c);
        }
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static int consumer_delete(rift_stream *st, const char *name, size_t name_len,
                           bool blocking, bool *done, rift_stream_done_cb cb,
                           void *user_data, rift_error *err) {
    if (blocking && rift_writer_is_self(st)) {
        return refuse_callback(err);
    }
    uint64_t wait = 0;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = rift_stream_check_usable(st, err);
    if (rc != 0) {
        goto out;
    }
    rift_consumer *c = name ? rift_consumer_find(st, name, name_len) : NULL;
    if (c == NULL) {
        rc = not_found(err);
        goto out;
    }
    if (!blocking && cb != NULL && (rc = rift_writer_reserve(st, err)) != 0) {
        goto out;
    }
    if (st->file) {
        rift_sbuf *b = rift_stage_state_buf(st);
        size_t before = b->len;
        int64_t start = rift_ev_begin(b, RIFT_EV_DELETE);
        if (start < 0 || rift_ev_put_u32(b, c->id) != 0) {
            b->len = before;
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        rift_ev_finish(b, start);
        rift_consumer_remove(st, c);
        rift_stage_state_done(st, before);
    } else {
        rift_consumer_remove(st, c);
    }
    c->deleted = true;
    rift_consumer_unref_locked(c);
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, done,
                            err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

int rift_stream_consumer_delete(rift_stream *st, const char *name,
                                size_t name_len, rift_error *err) {
    return consumer_delete(st, name, name_len, true, NULL, NULL, NULL, err);
}

int rift_stream_consumer_delete_async(rift_stream *st, const char *name,
                                      size_t name_len, bool *completed,
                                      rift_stream_done_cb cb, void *user_data,
                                      rift_error *err) {
    bool done = false;
    int rc =
        consumer_delete(st, name, name_len, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

void rift_consumer_close(rift_consumer *c) {
    if (c == NULL) {
        return;
    }
    rift_stream *st = c->st;
    pthread_mutex_lock(&st->lock);
    rift_consumer_unref_locked(c);
    pthread_mutex_unlock(&st->lock);
    rift_stream_unref(st);
}

/* ---- Fetch ---- */

/* Checks that |c| can be operated on. Under lock. */
static int usable(rift_consumer *c, rift_error *err) {
    int rc = rift_stream_check_usable(c->st, err);
    if (rc != 0) {
        return rc;
    }
    return c->deleted ? not_found(err) : 0;
}

/* One delivery being prepared by a fetch. */
typedef struct fetch_item {
    rift_srec *rec;
    uint64_t seq;
    uint32_t count;
    size_t pidx; /* pending index of a redelivery, SIZE_MAX for new */
} fetch_item;

/* What one fetch gathers under the lock before any state changes. */
typedef struct fetch_plan {
    size_t limit;
    uint64_t max_bytes;
    uint64_t now;
    bool due_only;   /* redeliveries only (rift_consumer_fetch_due) */
    uint64_t cursor; /* the consumer's next sequence after this fetch */
    fetch_item *items;
    rift_srec **recs;
    uint32_t *counts;
    size_t n;    /* items */
    size_t nnew; /* of them first deliveries */
    /* Pending deliveries of records found corrupt: dropped (journaled as
     * acks) so that one bad record cannot hold a pending slot forever. */
    uint64_t *drops;
    size_t ndrops;
    /* Pending deliveries past max_deliver: dropped (journaled as TERM
     * events), counted and reported to the advisory watch. */
    rift_consumer_advisory *dead;
    size_t ndead;
    uint64_t bytes; /* payload loaded so far (max_bytes) */
} fetch_plan;

static int plan_alloc(rift_stream *st, fetch_plan *fp, size_t cap,
                      rift_error *err) {
    if (cap == 0) {
        return 0;
    }
    fp->items = rift_malloc(st->mem, cap * sizeof(*fp->items));
    fp->recs = rift_malloc(st->mem, cap * sizeof(*fp->recs));
    fp->counts = rift_malloc(st->mem, cap * sizeof(*fp->counts));
    if (fp->items == NULL || fp->recs == NULL || fp->counts == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Frees the plan; |unref| drops the references its items still hold. */
static void plan_free(rift_stream *st, fetch_plan *fp, bool unref) {
    for (size_t i = 0; unref && i < fp->n; i++) {
        rift_srec_unref(st->mem, fp->items[i].rec);
    }
    rift_free(st->mem, fp->drops);
    rift_free(st->mem, fp->dead);
    rift_free(st->mem, fp->items);
    rift_free(st->mem, fp->recs);
    rift_free(st->mem, fp->counts);
}

static bool plan_has_room(const fetch_plan *fp) {
    return fp->n < fp->limit && fp->bytes < fp->max_bytes;
}

/* 1. Expired (or reopened) pending deliveries, ascending. */
static int plan_redeliveries(rift_consumer *c, fetch_plan *fp,
                             rift_error *err) {
    rift_stream *st = c->st;
    uint64_t now = fp->now;
    for (size_t i = 0; i < c->pending.len && plan_has_room(fp); i++) {
        rift_pend *p = rift_pend_at(c, i);
        if (!p->live) {
            continue;
        }
        bool eligible =
            p->delivered_at == 0 ||
            (now >= p->delivered_at && now - p->delivered_at >= c->ack_wait_ms);
        if (!eligible || p->seq < st->first_seq || p->seq > st->last_seq) {
            continue;
        }
        if (c->max_deliver != 0 && p->attempts >= c->max_deliver) {
            if (fp->dead == NULL &&
                (fp->dead = rift_malloc(st->mem,
                                        c->live * sizeof(*fp->dead))) == NULL) {
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            }
            fp->dead[fp->ndead++] = (rift_consumer_advisory){
                .sequence = p->seq, .deliveries = p->attempts};
            continue;
        }
        fetch_item *it = &fp->items[fp->n];
        int rc = rift_stream_load(st, p->seq, &it->rec, err);
        if (rc == RIFT_LOAD_CORRUPT) {
            if (fp->drops == NULL &&
                (fp->drops = rift_malloc(
                     st->mem, c->live * sizeof(*fp->drops))) == NULL) {
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            }
            fp->drops[fp->ndrops++] = p->seq;
            continue;
        }
        if (rc != 0) {
            return rc;
        }
        it->seq = p->seq;
        it->count = p->attempts == UINT32_MAX ? UINT32_MAX : p->attempts + 1;
        it->pidx = i;
        fp->bytes += it->rec->payload_len;
        fp->n++;
    }
    return 0;
}

/* 2. New records from the cursor, past non-matching ones, while the
 * pending set has room. */
static int plan_new(rift_consumer *c, fetch_plan *fp, rift_error *err) {
    rift_stream *st = c->st;
    while (plan_has_room(fp) && c->live + fp->nnew < c->max_ack_pending &&
           fp->cursor <= st->last_seq) {
        uint64_t past = rift_stream_past_hole(st, fp->cursor);
        if (past != fp->cursor) {
            fp->cursor = past; /* lost sequences: nothing to deliver */
            continue;
        }
        rift_srec *r;
        int rc = rift_stream_load(st, fp->cursor, &r, err);
        if (rc == RIFT_LOAD_CORRUPT) {
            fp->cursor++; /* logged once; the consumer moves past it */
            continue;
        }
        if (rc != 0) {
            return rc;
        }
        fp->cursor++;
        if (!rift_subject_matches(c->filter, c->filter_len, r->data,
                                  r->subject_len)) {
            rift_srec_unref(st->mem, r);
            continue;
        }
        fetch_item *it = &fp->items[fp->n];
        it->rec = r;
        it->seq = r->seq;
        it->count = 1;
        it->pidx = SIZE_MAX;
        fp->bytes += r->payload_len;
        fp->n++;
        fp->nnew++;
    }
    return 0;
}

/* Journals the plan: an ACK per dropped corrupt delivery, then one FETCH
 * event (cursor, time, sequences and counts). The state buffer is left as
 * it was on failure. */
static int stage_fetch(rift_consumer *c, const fetch_plan *fp, rift_sbuf *b,
                       rift_error *err) {
    size_t before = b->len;
    for (size_t i = 0; i < fp->ndrops; i++) {
        int64_t ack = rift_ev_begin(b, RIFT_EV_ACK);
        if (ack < 0 || rift_ev_put_u32(b, c->id) != 0 ||
            rift_ev_put_u64(b, fp->drops[i]) != 0) {
            b->len = before;
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rift_ev_finish(b, ack);
    }
    for (size_t i = 0; i < fp->ndead; i++) {
        int64_t term = rift_ev_begin(b, RIFT_EV_TERM);
        if (term < 0 || rift_ev_put_u32(b, c->id) != 0 ||
            rift_ev_put_u64(b, fp->dead[i].sequence) != 0 ||
            rift_ev_put_u8(b, RIFT_TERM_BY_MAX_DELIVER) != 0) {
            b->len = before;
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rift_ev_finish(b, term);
    }
    int64_t start = rift_ev_begin(b, RIFT_EV_FETCH);
    uint8_t *p = NULL;
    if (start >= 0 && rift_ev_put_u32(b, c->id) == 0 &&
        rift_ev_put_u64(b, fp->cursor) == 0 &&
        rift_ev_put_u64(b, fp->now) == 0 &&
        rift_ev_put_u32(b, (uint32_t)fp->n) == 0) {
        p = rift_sbuf_grow(b, fp->n * 12);
    }
    if (p == NULL) {
        b->len = before;
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < fp->n; i++) {
        rift_put_u64(p, fp->items[i].seq);
        rift_put_u32(p + 8, fp->items[i].count);
        p += 12;
    }
    rift_ev_finish(b, start);
    return 0;
}

/* The new delivery state (cannot fail: the ring was reserved). */
static void apply_fetch(rift_consumer *c, const fetch_plan *fp) {
    for (size_t i = 0; i < fp->n; i++) {
        const fetch_item *it = &fp->items[i];
        if (it->pidx != SIZE_MAX) {
            rift_pend *p = rift_pend_at(c, it->pidx);
            p->delivered_at = fp->now;
            p->attempts = it->count;
        } else {
            rift_pend *p = rift_ring_push(&c->pending);
            p->seq = it->seq;
            p->delivered_at = fp->now;
            p->attempts = 1;
            p->live = 1;
            c->live++;
        }
    }
    for (size_t i = 0; i < fp->ndrops; i++) {
        rift_pend *p = rift_pend_find(c, fp->drops[i]);
        if (p != NULL) {
            rift_pend_drop(c, p);
        }
    }
    for (size_t i = 0; i < fp->ndead; i++) {
        rift_pend *p = rift_pend_find(c, fp->dead[i].sequence);
        if (p != NULL) {
            rift_pend_drop(c, p);
        }
        c->max_delivered++;
    }
    c->next_seq = fp->cursor;
}

/* Plans, journals and applies one fetch into |out|. Under lock; on
 * failure nothing changed and the plan's references are dropped. */
static int fetch_locked(rift_consumer *c, fetch_plan *fp, rift_batch *out,
                        bool blocking, rift_stream_done_cb cb, bool *staged,
                        rift_error *err) {
    rift_stream *st = c->st;
    uint64_t avail =
        st->last_seq >= fp->cursor ? st->last_seq - fp->cursor + 1 : 0;
    size_t cap = (size_t)RIFT_MIN((uint64_t)fp->limit, c->live + avail);
    int rc;
    if ((rc = plan_alloc(st, fp, cap, err)) != 0 ||
        (rc = plan_redeliveries(c, fp, err)) != 0 ||
        (!fp->due_only && (rc = plan_new(c, fp, err)) != 0)) {
        return rc;
    }
    bool moved = fp->cursor != c->next_seq;
    *staged =
        st->file && (fp->n > 0 || moved || fp->ndrops > 0 || fp->ndead > 0);

    /* Everything that can fail happens before the state changes. */
    if (!blocking && cb != NULL && *staged &&
        (rc = rift_writer_reserve(st, err)) != 0) {
        return rc;
    }
    if (rift_ring_reserve(&c->pending, fp->nnew) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t before = 0;
    if (*staged) {
        rift_sbuf *b = rift_stage_state_buf(st);
        before = b->len;
        if ((rc = stage_fetch(c, fp, b, err)) != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < fp->n; i++) {
        fp->recs[i] = fp->items[i].rec;
        fp->counts[i] = fp->items[i].count;
    }
    if (rift_batch_build(out, st->mem, fp->recs, fp->counts, fp->n) != 0) {
        /* The batch dropped the references. */
        fp->n = 0;
        if (*staged) {
            rift_stage_state_buf(st)->len = before;
        }
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    apply_fetch(c, fp);
    if (*staged) {
        rift_stage_state_done(st, before);
    }
    return 0;
}

static int fetch(rift_consumer *c, size_t limit, uint64_t max_bytes,
                 bool due_only, rift_batch *out, bool blocking, bool *done,
                 rift_stream_done_cb cb, void *user_data, rift_error *err) {
    rift_stream *st = c->st;
    if (limit > RIFT_CONSUMER_MAX_BATCH) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "fetch limit must be 0..65536");
    }
    if (blocking && rift_writer_is_self(st)) {
        return refuse_callback(err);
    }
    out->count = 0;
    out->items = NULL;
    out->priv_ = NULL;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = usable(c, err);
    if (rc != 0) {
        pthread_mutex_unlock(&st->lock);
        return rc;
    }
    fetch_plan fp = {
        .limit = limit, .max_bytes = max_bytes, .due_only = due_only};
    fp.now = rift_stream_now(st);
    rift_stream_retain(st, fp.now);
    fp.cursor = RIFT_MAX(c->next_seq, st->first_seq);
    bool staged = false;
    rc = fetch_locked(c, &fp, out, blocking, cb, &staged, err);
    if (rc != 0) {
        pthread_mutex_unlock(&st->lock);
        plan_free(st, &fp, true);
        return rc;
    }
    rift_consumer_advisory *dead = fp.dead;
    size_t ndead = fp.ndead;
    fp.dead = NULL;
    plan_free(st, &fp, false);
    uint64_t wait = 0;
    rc = rift_writer_commit(st, staged, cb, user_data, blocking, &wait, done,
                            err);
    rift_advisory_note note;
    rift_advisory_take(c, dead, ndead, &note);
    pthread_mutex_unlock(&st->lock);
    rift_advisory_fire(&note, dead, ndead);
    rift_free(st->mem, dead);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    if (rc < 0) {
        rift_batch_free(out);
    }
    return rc;
}

int rift_consumer_fetch(rift_consumer *c, size_t limit, rift_batch *out,
                        rift_error *err) {
    return fetch(c, limit, UINT64_MAX, false, out, true, NULL, NULL, NULL, err);
}

int rift_consumer_fetch_due(rift_consumer *c, size_t limit, rift_batch *out,
                            rift_error *err) {
    return fetch(c, limit, UINT64_MAX, true, out, true, NULL, NULL, NULL, err);
}

int rift_consumer_fetch_async(rift_consumer *c, size_t limit, rift_batch *out,
                              bool *completed, rift_stream_done_cb cb,
                              void *user_data, rift_error *err) {
    bool done = false;
    int rc = fetch(c, limit, UINT64_MAX, false, out, false, &done, cb,
                   user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_consumer_fetch_bytes_async(rift_consumer *c, size_t limit,
                                    uint64_t max_bytes, rift_batch *out,
                                    bool *completed, rift_stream_done_cb cb,
                                    void *user_data, rift_error *err) {
    bool done = false;
    int rc = fetch(c, limit, max_bytes == 0 ? 1 : max_bytes, false, out, false,
                   &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_consumer_fetch_push_async(rift_consumer *c, size_t limit,
                                   uint64_t max_bytes, bool due_only,
                                   rift_batch *out, bool *completed,
                                   rift_stream_done_cb cb, void *user_data,
                                   rift_error *err) {
    bool done = false;
    int rc = fetch(c, limit, max_bytes == 0 ? 1 : max_bytes, due_only, out,
                   false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

/* ---- Ack and info ---- */

static int ack(rift_consumer *c, uint64_t seq, bool blocking, bool *done,
               rift_stream_done_cb cb, void *user_data, rift_error *err) {
    rift_stream *st = c->st;
    if (blocking && rift_writer_is_self(st)) {
        return refuse_callback(err);
    }
    uint64_t wait = 0;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = usable(c, err);
    if (rc != 0) {
        goto out;
    }
    rift_pend *p = rift_pend_find(c, seq);
    if (p == NULL) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_ACK,
                            "sequence is not pending acknowledgement");
        goto out;
    }
    if (!blocking && cb != NULL && (rc = rift_writer_reserve(st, err)) != 0) {
        goto out;
    }
    if (st->file) {
        rift_sbuf *b = rift_stage_state_buf(st);
        size_t before = b->len;
        int64_t start = rift_ev_begin(b, RIFT_EV_ACK);
        if (start < 0 || rift_ev_put_u32(b, c->id) != 0 ||
            rift_ev_put_u64(b, seq) != 0) {
            b->len = before;
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        rift_ev_finish(b, start);
        rift_pend_drop(c, p);
        rift_stage_state_done(st, before);
    } else {
        rift_pend_drop(c, p);
    }
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, done,
                            err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

int rift_consumer_ack(rift_consumer *c, uint64_t seq, rift_error *err) {
    return ack(c, seq, true, NULL, NULL, NULL, err);
}

int rift_consumer_ack_async(rift_consumer *c, uint64_t seq, bool *completed,
                            rift_stream_done_cb cb, void *user_data,
                            rift_error *err) {
    bool done = false;
    int rc = ack(c, seq, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_consumer_get_info(rift_consumer *c, rift_consumer_info *out,
                           rift_error *err) {
    rift_stream *st = c->st;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = c->deleted   ? not_found(err)
             : st->closed ? rift_stream_check_usable(st, err)
                          : 0;
    if (rc == 0) {
        memset(out, 0, sizeof(*out));
        out->name = c->name;
        out->name_len = c->name_len;
        out->config.filter = c->filter;
        out->config.filter_len = c->filter_len;
        out->config.ack_wait_ms = c->ack_wait_ms;
        out->config.max_ack_pending = c->max_ack_pending;
        out->config.max_deliver = c->max_deliver;
        out->config.start = (rift_consumer_start)c->start_mode;
        out->config.start_sequence =
            c->start_mode == RIFT_START_SEQUENCE ? c->start_arg : 1;
        out->config.start_time_ms =
            c->start_mode >= RIFT_START_TIME ? c->start_arg : 0;
        out->start_sequence = c->start_seq;
        out->next_sequence = RIFT_MAX(c->next_seq, st->first_seq);
        out->pending = c->live;
        out->terminated = c->terminated;
        out->max_delivered = c->max_delivered;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* ---- In-memory adjustments (push delivery) ---- */

int rift_consumer_set_ack_wait(rift_consumer *c, uint64_t ack_wait_ms,
                               rift_error *err) {
    if (ack_wait_ms == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "ack wait must be > 0");
    }
    rift_stream *st = c->st;
    pthread_mutex_lock(&st->lock);
    int rc = c->deleted   ? not_found(err)
             : st->closed ? rift_stream_check_usable(st, err)
                          : 0;
    if (rc == 0) {
        c->ack_wait_ms = ack_wait_ms;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int rift_consumer_expire(rift_consumer *c, uint64_t sequence, rift_error *err) {
    rift_stream *st = c->st;
    pthread_mutex_lock(&st->lock);
    int rc = c->deleted   ? not_found(err)
             : st->closed ? rift_stream_check_usable(st, err)
                          : 0;
    rift_pend *p = rc == 0 ? rift_pend_find(c, sequence) : NULL;
    if (rc == 0 && (p == NULL || !p->live)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_ACK,
                            "sequence is not pending acknowledgement");
    } else if (rc == 0) {
        /* 0 is what recovery gives every pending delivery: due at once. */
        p->delivered_at = 0;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}
