/*
 * consumer.c — durable pull consumers (store layer): open, get and
 * delete, fetch with ack-wait redelivery, ack, info. The top of the store
 * with stream.c: the table, the pending sets and their state events are
 * consumer_state.c; records come from retained.c; mutations are staged
 * (stage.c) and committed through the writer (writer.c). Semantics:
 * docs/protocol-v1.md §4.7.
 */
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
           c->start_mode == n->mode && c->start_arg == n->arg;
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

static int consumer_open(rift_stream *st, const char *name, size_t name_len,
                         const rift_consumer_config *config,
                         rift_consumer **pconsumer, bool blocking,
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
                                       blocking, &wait, err);
        goto out;
    }
    if (!filter_reaches_stream(st, &nc)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "invalid messaging configuration: consumer filter "
                            "matches none of the stream's subjects");
        goto out;
    }
    if (st->ncons >= st->cfg.max_consumers) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "invalid messaging configuration: stream consumer "
                            "limit reached");
        goto out;
    }
    c = rift_consumer_alloc(st, name, name_len, nc.filter, nc.filter_len);
    if (c == NULL || rift_consumer_table_reserve(st) != 0) {
        if (c != NULL) {
            rift_consumer_unref_locked(c);
        }
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    uint64_t now = rift_stream_now(st);
    rift_stream_retain(st, now);
    c->id = st->next_cid;
    c->ack_wait_ms = nc.ack_wait_ms;
    c->max_ack_pending = nc.max_ack_pending;
    c->start_mode = nc.mode;
    c->start_arg = nc.arg;
    c->start_seq = resolve_start(st, &nc, now);
    c->next_seq = c->start_seq;
    c->created_gen = st->fill_gen;
    size_t before = 0;
    if (st->file) {
        rift_sbuf *b = rift_stage_state_buf(st);
        before = b->len;
        if (rift_consumer_encode_new(c, b) != 0) {
            rift_consumer_unref_locked(c);
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    st->next_cid++;
    rift_consumer_insert(st, c); /* cannot fail: reserved above */
    if (st->file) {
        rift_stage_state_done(st, before);
    }
    *pconsumer = take_handle(c);
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, err);
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
                         NULL, err);
}

int rift_stream_consumer_open_async(rift_stream *st, const char *name,
                                    size_t name_len,
                                    const rift_consumer_config *config,
                                    rift_consumer **pconsumer,
                                    rift_stream_done_cb cb, void *user_data,
                                    rift_error *err) {
    return consumer_open(st, name, name_len, config, pconsumer, false, cb,
                         user_data, err);
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
                           bool blocking, rift_stream_done_cb cb,
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
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

int rift_stream_consumer_delete(rift_stream *st, const char *name,
                                size_t name_len, rift_error *err) {
    return consumer_delete(st, name, name_len, true, NULL, NULL, err);
}

int rift_stream_consumer_delete_async(rift_stream *st, const char *name,
                                      size_t name_len, rift_stream_done_cb cb,
                                      void *user_data, rift_error *err) {
    return consumer_delete(st, name, name_len, false, cb, user_data, err);
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

static int fetch(rift_consumer *c, size_t limit, uint64_t max_bytes,
                 rift_batch *out, bool blocking, rift_stream_done_cb cb,
                 void *user_data, rift_error *err) {
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
    uint64_t now = rift_stream_now(st);
    rift_stream_retain(st, now);

    uint64_t cursor = RIFT_MAX(c->next_seq, st->first_seq);
    uint64_t avail = st->last_seq >= cursor ? st->last_seq - cursor + 1 : 0;
    size_t cap = (size_t)RIFT_MIN((uint64_t)limit, c->live + avail);
    fetch_item *items = NULL;
    rift_srec **recs = NULL;
    uint32_t *counts = NULL;
    size_t n = 0, nnew = 0;
    /* Pending deliveries of records found corrupt: dropped (journaled as
     * acks) so that one bad record cannot hold a pending slot forever. */
    uint64_t *drops = NULL;
    size_t ndrops = 0;
    uint64_t bytes = 0; /* payload loaded so far (max_bytes) */
    if (cap > 0) {
        items = rift_malloc(st->mem, cap * sizeof(*items));
        recs = rift_malloc(st->mem, cap * sizeof(*recs));
        counts = rift_malloc(st->mem, cap * sizeof(*counts));
        if (items == NULL || recs == NULL || counts == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }

    /* 1. Expired (or reopened) pending deliveries, ascending. */
    for (size_t i = 0; i < c->pending.len && n < limit && bytes < max_bytes;
         i++) {
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
        rc = rift_stream_load(st, p->seq, &items[n].rec, err);
        if (rc == RIFT_LOAD_CORRUPT) {
            if (drops == NULL &&
                (drops = rift_malloc(st->mem, c->live * sizeof(*drops))) ==
                    NULL) {
                rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                goto fail;
            }
            drops[ndrops++] = p->seq;
            rc = 0;
            continue;
        }
        if (rc != 0) {
            goto fail;
        }
        items[n].seq = p->seq;
        items[n].count =
            p->attempts == UINT32_MAX ? UINT32_MAX : p->attempts + 1;
        items[n].pidx = i;
        bytes += items[n].rec->payload_len;
        n++;
    }
    /* 2. New records from the cursor, past non-matching ones, while the
     * pending set has room. */
    while (n < limit && bytes < max_bytes &&
           c->live + nnew < c->max_ack_pending && cursor <= st->last_seq) {
        uint64_t past = rift_stream_past_hole(st, cursor);
        if (past != cursor) {
            cursor = past; /* lost sequences: nothing to deliver */
            continue;
        }
        rift_srec *r;
        rc = rift_stream_load(st, cursor, &r, err);
        if (rc == RIFT_LOAD_CORRUPT) {
            rc = 0; /* logged once; the consumer moves past it */
            cursor++;
            continue;
        }
        if (rc != 0) {
            goto fail;
        }
        cursor++;
        if (!rift_subject_matches(c->filter, c->filter_len, r->data,
                                  r->subject_len)) {
            rift_srec_unref(st->mem, r);
            continue;
        }
        items[n].rec = r;
        items[n].seq = r->seq;
        items[n].count = 1;
        items[n].pidx = SIZE_MAX;
        bytes += r->payload_len;
        n++;
        nnew++;
    }
    bool moved = cursor != c->next_seq;
    bool staged = st->file && (n > 0 || moved || ndrops > 0);

    /* Everything that can fail happens before the state changes. */
    if (!blocking && cb != NULL && staged &&
        (rc = rift_writer_reserve(st, err)) != 0) {
        goto fail;
    }
    if (rift_ring_reserve(&c->pending, nnew) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t before = 0;
    if (staged) {
        rift_sbuf *b = rift_stage_state_buf(st);
        before = b->len;
        for (size_t i = 0; i < ndrops; i++) {
            int64_t ack = rift_ev_begin(b, RIFT_EV_ACK);
            if (ack < 0 || rift_ev_put_u32(b, c->id) != 0 ||
                rift_ev_put_u64(b, drops[i]) != 0) {
                b->len = before;
                rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                goto fail;
            }
            rift_ev_finish(b, ack);
        }
        int64_t start = rift_ev_begin(b, RIFT_EV_FETCH);
        uint8_t *p = NULL;
        if (start >= 0 && rift_ev_put_u32(b, c->id) == 0 &&
            rift_ev_put_u64(b, cursor) == 0 && rift_ev_put_u64(b, now) == 0 &&
            rift_ev_put_u32(b, (uint32_t)n) == 0) {
            p = rift_sbuf_grow(b, n * 12);
        }
        if (p == NULL) {
            b->len = before;
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            rift_put_u64(p, items[i].seq);
            rift_put_u32(p + 8, items[i].count);
            p += 12;
        }
        rift_ev_finish(b, start);
    }
    for (size_t i = 0; i < n; i++) {
        recs[i] = items[i].rec;
        counts[i] = items[i].count;
    }
    if (rift_batch_build(out, st->mem, recs, counts, n) != 0) {
        /* The batch dropped the references. */
        n = 0;
        if (staged) {
            rift_stage_state_buf(st)->len = before;
        }
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }

    /* Commit the new delivery state (cannot fail from here on). */
    for (size_t i = 0; i < n; i++) {
        if (items[i].pidx != SIZE_MAX) {
            rift_pend *p = rift_pend_at(c, items[i].pidx);
            p->delivered_at = now;
            p->attempts = items[i].count;
        } else {
            rift_pend *p = rift_ring_push(&c->pending);
            p->seq = items[i].seq;
            p->delivered_at = now;
            p->attempts = 1;
            p->live = 1;
            c->live++;
        }
    }
    for (size_t i = 0; i < ndrops; i++) {
        rift_pend *p = rift_pend_find(c, drops[i]);
        if (p != NULL) {
            rift_pend_drop(c, p);
        }
    }
    c->next_seq = cursor;
    if (staged) {
        rift_stage_state_done(st, before);
    }
    rift_free(st->mem, drops);
    rift_free(st->mem, items);
    rift_free(st->mem, recs);
    rift_free(st->mem, counts);
    uint64_t wait = 0;
    rc = rift_writer_commit(st, staged, cb, user_data, blocking, &wait, err);
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    if (rc < 0) {
        rift_batch_free(out);
    }
    return rc;

fail:
    pthread_mutex_unlock(&st->lock);
    for (size_t i = 0; i < n; i++) {
        rift_srec_unref(st->mem, items[i].rec);
    }
    rift_free(st->mem, drops);
    rift_free(st->mem, items);
    rift_free(st->mem, recs);
    rift_free(st->mem, counts);
    return rc;
}

int rift_consumer_fetch(rift_consumer *c, size_t limit, rift_batch *out,
                        rift_error *err) {
    return fetch(c, limit, UINT64_MAX, out, true, NULL, NULL, err);
}

int rift_consumer_fetch_async(rift_consumer *c, size_t limit, rift_batch *out,
                              rift_stream_done_cb cb, void *user_data,
                              rift_error *err) {
    return fetch(c, limit, UINT64_MAX, out, false, cb, user_data, err);
}

int rift_consumer_fetch_bytes_async(rift_consumer *c, size_t limit,
                                    uint64_t max_bytes, rift_batch *out,
                                    rift_stream_done_cb cb, void *user_data,
                                    rift_error *err) {
    return fetch(c, limit, max_bytes == 0 ? 1 : max_bytes, out, false, cb,
                 user_data, err);
}

/* ---- Ack and info ---- */

static int ack(rift_consumer *c, uint64_t seq, bool blocking,
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
    rc = rift_writer_commit(st, st->file, cb, user_data, blocking, &wait, err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

int rift_consumer_ack(rift_consumer *c, uint64_t seq, rift_error *err) {
    return ack(c, seq, true, NULL, NULL, err);
}

int rift_consumer_ack_async(rift_consumer *c, uint64_t seq,
                            rift_stream_done_cb cb, void *user_data,
                            rift_error *err) {
    return ack(c, seq, false, cb, user_data, err);
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
        out->config.start = (rift_consumer_start)c->start_mode;
        out->config.start_sequence =
            c->start_mode == RIFT_START_SEQUENCE ? c->start_arg : 1;
        out->config.start_time_ms =
            c->start_mode >= RIFT_START_TIME ? c->start_arg : 0;
        out->start_sequence = c->start_seq;
        out->next_sequence = RIFT_MAX(c->next_seq, st->first_seq);
        out->pending = c->live;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}
