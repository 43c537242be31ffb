/*
 * consumer.c — durable pull consumers (store layer): the consumer table,
 * open/get/delete, fetch with ack-wait redelivery, ack, and the state
 * events that make them durable (encoding, and applying them on
 * recovery). Semantics: docs/protocol-v1.md §4.7.
 */
#include "store/store.h"
#include "subject/acl.h"
#include "subject/subject.h"

#include <string.h>

#define MAX_NAME        128u
#define MAX_ACK_PENDING 65536u
#define MAX_BATCH       65536u
#define START_MODE_MAX  RIFT_START_TIME_DELTA

void rift_consumer_config_default(rift_consumer_config *c) {
    memset(c, 0, sizeof(*c));
    c->filter = NULL;
    c->filter_len = 0;
    c->start_sequence = 1;
    c->ack_wait_ms = 30000;
    c->max_ack_pending = 128;
    c->start = RIFT_START_SEQUENCE;
    c->start_time_ms = 0;
}

/* ---- Validation ---- */

bool rift_consumer_name_valid(const char *name, size_t len) {
    if (name == NULL || len == 0 || len > MAX_NAME ||
        !rift_utf8_valid((const uint8_t *)name, len)) {
        return false;
    }
    size_t pos = 0;
    while (pos < len) {
        uint32_t cp = rift_utf8_next((const uint8_t *)name, len, &pos);
        if (rift_char_is_space_or_control(cp)) {
            return false;
        }
    }
    return true;
}

static int invalid_consumer(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "invalid messaging configuration: invalid consumer "
                          "name or limits");
}

/* The stored form of a configuration: filter defaulted, the start
 * argument kept only where the mode has one. */
typedef struct norm_config {
    const char *filter;
    size_t filter_len;
    uint64_t ack_wait_ms;
    uint32_t max_ack_pending;
    uint8_t mode;
    uint64_t arg;
} norm_config;

static bool normalize(const rift_consumer_config *in, norm_config *out) {
    rift_consumer_config def;
    if (in == NULL) {
        rift_consumer_config_default(&def);
        in = &def;
    }
    out->filter = in->filter;
    out->filter_len = in->filter_len;
    if (out->filter == NULL || out->filter_len == 0) {
        out->filter = ">";
        out->filter_len = 1;
    }
    out->ack_wait_ms = in->ack_wait_ms;
    out->max_ack_pending = in->max_ack_pending;
    if ((unsigned)in->start > START_MODE_MAX) {
        return false;
    }
    out->mode = (uint8_t)in->start;
    switch (in->start) {
    case RIFT_START_SEQUENCE:
        out->arg = in->start_sequence;
        break;
    case RIFT_START_TIME:
    case RIFT_START_TIME_DELTA:
        out->arg = in->start_time_ms;
        break;
    default:
        out->arg = 0;
        break;
    }
    return out->ack_wait_ms > 0 && out->max_ack_pending >= 1 &&
           out->max_ack_pending <= MAX_ACK_PENDING &&
           (out->mode != RIFT_START_SEQUENCE || out->arg >= 1) &&
           rift_subject_valid(out->filter, out->filter_len, true,
                              RIFT_MAX_SUBJECT_BYTES);
}

static bool same_config(const rift_consumer *c, const norm_config *n) {
    return c->filter_len == n->filter_len &&
           memcmp(c->filter, n->filter, n->filter_len) == 0 &&
           c->ack_wait_ms == n->ack_wait_ms &&
           c->max_ack_pending == n->max_ack_pending &&
           c->start_mode == n->mode && c->start_arg == n->arg;
}

/* ---- The table (sorted by name, bytewise) ---- */

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    int r = memcmp(a, b, RIFT_MIN(alen, blen));
    if (r != 0) {
        return r;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static size_t lower_bound(rift_stream *st, const char *name, size_t len) {
    size_t lo = 0, hi = st->ncons;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        rift_consumer *c = st->cons[mid];
        if (name_cmp(c->name, c->name_len, name, len) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

rift_consumer *rift_consumer_find(rift_stream *st, const char *name,
                                  size_t len) {
    size_t i = lower_bound(st, name, len);
    if (i < st->ncons &&
        name_cmp(st->cons[i]->name, st->cons[i]->name_len, name, len) == 0) {
        return st->cons[i];
    }
    return NULL;
}

rift_consumer *rift_consumer_by_id(rift_stream *st, uint32_t id) {
    for (size_t i = 0; i < st->ncons; i++) {
        if (st->cons[i]->id == id) {
            return st->cons[i];
        }
    }
    return NULL;
}

static int table_reserve(rift_stream *st) {
    if (st->ncons < st->cons_cap) {
        return 0;
    }
    size_t ncap = st->cons_cap ? st->cons_cap * 2 : 8;
    rift_consumer **n =
        rift_realloc(st->mem, st->cons, ncap * sizeof(rift_consumer *));
    if (n == NULL) {
        return RIFT_ERR_NOMEM;
    }
    st->cons = n;
    st->cons_cap = ncap;
    return 0;
}

int rift_consumer_insert(rift_stream *st, rift_consumer *c) {
    if (table_reserve(st) != 0) {
        return RIFT_ERR_NOMEM;
    }
    size_t i = lower_bound(st, c->name, c->name_len);
    memmove(&st->cons[i + 1], &st->cons[i],
            (st->ncons - i) * sizeof(rift_consumer *));
    st->cons[i] = c;
    st->ncons++;
    return 0;
}

void rift_consumer_remove(rift_stream *st, rift_consumer *c) {
    size_t i = lower_bound(st, c->name, c->name_len);
    if (i < st->ncons && st->cons[i] == c) {
        memmove(&st->cons[i], &st->cons[i + 1],
                (st->ncons - i - 1) * sizeof(rift_consumer *));
        st->ncons--;
    }
}

rift_consumer *rift_consumer_alloc(rift_stream *st, const char *name,
                                   size_t name_len, const char *filter,
                                   size_t filter_len) {
    rift_consumer *c = rift_calloc(st->mem, 1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->name = rift_strndup(st->mem, name, name_len);
    c->filter = rift_strndup(st->mem, filter, filter_len);
    if (c->name == NULL || c->filter == NULL) {
        rift_free(st->mem, c->name);
        rift_free(st->mem, c->filter);
        rift_free(st->mem, c);
        return NULL;
    }
    c->st = st;
    c->refs = 1;
    c->name_len = name_len;
    c->filter_len = filter_len;
    rift_ring_init(&c->pending, sizeof(rift_pend), st->mem);
    return c;
}

void rift_consumer_unref_locked(rift_consumer *c) {
    if (--c->refs > 0) {
        return;
    }
    const rift_mem *mem = c->st->mem;
    rift_ring_free(&c->pending);
    rift_free(mem, c->name);
    rift_free(mem, c->filter);
    rift_free(mem, c);
}

/* ---- Pending set ---- */

static rift_pend *pend_at(rift_consumer *c, size_t i) {
    return rift_ring_at(&c->pending, i);
}

/* Index of the first entry with seq >= |seq|. */
static size_t pend_lower(rift_consumer *c, uint64_t seq) {
    size_t lo = 0, hi = c->pending.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pend_at(c, mid)->seq < seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

rift_pend *rift_pend_find(rift_consumer *c, uint64_t seq) {
    size_t i = pend_lower(c, seq);
    if (i < c->pending.len) {
        rift_pend *p = pend_at(c, i);
        if (p->seq == seq && p->live) {
            return p;
        }
    }
    return NULL;
}

int rift_pend_upsert(rift_consumer *c, uint64_t seq, uint64_t delivered_at,
                     uint32_t attempts) {
    size_t i = pend_lower(c, seq);
    if (i < c->pending.len && pend_at(c, i)->seq == seq) {
        rift_pend *p = pend_at(c, i);
        if (!p->live) {
            p->live = 1;
            c->live++;
        }
        p->delivered_at = delivered_at;
        p->attempts = attempts;
        return 0;
    }
    if (rift_ring_push(&c->pending) == NULL) {
        return RIFT_ERR_NOMEM;
    }
    /* Shift the tail up by one; only recovery inserts below the end. */
    for (size_t k = c->pending.len - 1; k > i; k--) {
        *pend_at(c, k) = *pend_at(c, k - 1);
    }
    rift_pend *p = pend_at(c, i);
    p->seq = seq;
    p->delivered_at = delivered_at;
    p->attempts = attempts;
    p->live = 1;
    c->live++;
    return 0;
}

static void pend_compact(rift_consumer *c) {
    size_t j = 0;
    for (size_t i = 0; i < c->pending.len; i++) {
        rift_pend *p = pend_at(c, i);
        if (p->live) {
            if (i != j) {
                *pend_at(c, j) = *p;
            }
            j++;
        }
    }
    c->pending.len = j;
}

static void pend_tidy(rift_consumer *c) {
    while (c->pending.len > 0 && !pend_at(c, 0)->live) {
        rift_ring_pop_front(&c->pending);
    }
    while (c->pending.len > 0 && !pend_at(c, c->pending.len - 1)->live) {
        rift_ring_pop_back(&c->pending);
    }
    size_t dead = c->pending.len - c->live;
    if (dead > 64 && dead > c->live) {
        pend_compact(c);
    }
}

void rift_pend_drop(rift_consumer *c, rift_pend *p) {
    p->live = 0;
    c->live--;
    pend_tidy(c);
}

void rift_pend_trim_below(rift_consumer *c, uint64_t first) {
    while (c->pending.len > 0 && pend_at(c, 0)->seq < first) {
        if (pend_at(c, 0)->live) {
            c->live--;
        }
        rift_ring_pop_front(&c->pending);
    }
    pend_tidy(c);
}

void rift_pend_drop_range(rift_consumer *c, uint64_t from, uint64_t to) {
    for (size_t i = pend_lower(c, from); i < c->pending.len; i++) {
        rift_pend *p = pend_at(c, i);
        if (p->seq >= to) {
            break;
        }
        if (p->live) {
            p->live = 0;
            c->live--;
        }
    }
    pend_tidy(c);
}

void rift_pend_trim_above(rift_consumer *c, uint64_t last) {
    while (c->pending.len > 0 && pend_at(c, c->pending.len - 1)->seq > last) {
        if (pend_at(c, c->pending.len - 1)->live) {
            c->live--;
        }
        rift_ring_pop_back(&c->pending);
    }
    pend_tidy(c);
}

/*
 * Retention trims pending deliveries in memory only (nothing is journaled
 * for it), so replaying the FETCH events of a lagging consumer brings back
 * deliveries that were evicted long ago. A live consumer never holds more
 * than max_ack_pending, and what retention trimmed always sits below what
 * it kept: the entries beyond max_ack_pending, lowest first, are exactly
 * such evicted ones. Dropping them keeps replay's memory bounded; recovery
 * later trims the rest below the first retained sequence, which gives the
 * live state back (docs/storage-format.md, "Recovery").
 */
static void pend_cap_replayed(rift_consumer *c) {
    while (c->live > c->max_ack_pending && c->pending.len > 0) {
        if (pend_at(c, 0)->live) {
            c->live--;
        }
        rift_ring_pop_front(&c->pending);
    }
    pend_tidy(c);
}

/* ---- State events ---- */

static int encode_consumer(const rift_consumer *c, rift_sbuf *b,
                           bool with_pending) {
    size_t before = b->len;
    int64_t start = rift_ev_begin(b, RIFT_EV_CONSUMER);
    int rc = start < 0 ? RIFT_ERR_NOMEM : 0;
    if (rc == 0) {
        rc = rift_ev_put_u32(b, c->id);
    }
    if (rc == 0) {
        rc = rift_ev_put_str(b, c->name, c->name_len);
    }
    if (rc == 0) {
        rc = rift_ev_put_str(b, c->filter, c->filter_len);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(b, c->ack_wait_ms);
    }
    if (rc == 0) {
        rc = rift_ev_put_u32(b, c->max_ack_pending);
    }
    if (rc == 0) {
        rc = rift_ev_put_u8(b, c->start_mode);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(b, c->start_arg);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(b, c->start_seq);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(b, c->next_seq);
    }
    size_t n = with_pending ? c->live : 0;
    if (rc == 0) {
        rc = rift_ev_put_u32(b, (uint32_t)n);
    }
    if (rc == 0 && n > 0) {
        uint8_t *p = rift_sbuf_grow(b, n * 20);
        if (p == NULL) {
            rc = RIFT_ERR_NOMEM;
        }
        for (size_t i = 0; rc == 0 && i < c->pending.len; i++) {
            const rift_pend *e = rift_ring_at(&c->pending, i);
            if (e->live) {
                rift_put_u64(p, e->seq);
                rift_put_u64(p + 8, e->delivered_at);
                rift_put_u32(p + 16, e->attempts);
                p += 20;
            }
        }
    }
    if (rc != 0) {
        b->len = before;
        return RIFT_ERR_NOMEM;
    }
    rift_ev_finish(b, start);
    return 0;
}

int rift_consumer_encode(const rift_consumer *c, rift_sbuf *b) {
    return encode_consumer(c, b, true);
}

static int apply_consumer(rift_stream *st, rift_ev_reader *r,
                          const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    size_t nlen, flen;
    const char *name = rift_ev_get_str(r, &nlen);
    const char *filter = rift_ev_get_str(r, &flen);
    uint64_t ack_wait = rift_ev_get_u64(r);
    uint32_t map = rift_ev_get_u32(r);
    uint8_t mode = rift_ev_get_u8(r);
    uint64_t arg = rift_ev_get_u64(r);
    uint64_t start_seq = rift_ev_get_u64(r);
    uint64_t next_seq = rift_ev_get_u64(r);
    uint32_t n = rift_ev_get_u32(r);
    if (r->bad) {
        *why = "truncated state event";
        return -1;
    }
    if (n > MAX_ACK_PENDING) {
        *why = "pending delivery limit exceeded";
        return -1;
    }
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = filter;
    cfg.filter_len = flen;
    cfg.ack_wait_ms = ack_wait;
    cfg.max_ack_pending = map;
    cfg.start = (rift_consumer_start)mode;
    cfg.start_sequence = arg;
    cfg.start_time_ms = arg;
    norm_config nc;
    if (!rift_consumer_name_valid(name, nlen) || flen == 0 ||
        mode > START_MODE_MAX || !normalize(&cfg, &nc)) {
        *why = "invalid stored consumer";
        return -1;
    }
    if (rift_consumer_by_id(st, id) != NULL ||
        rift_consumer_find(st, name, nlen) != NULL) {
        *why = "duplicate stored consumer";
        return -1;
    }
    rift_consumer *c = rift_consumer_alloc(st, name, nlen, filter, flen);
    if (c == NULL) {
        *why = "out of memory";
        return -2;
    }
    c->id = id;
    c->ack_wait_ms = ack_wait;
    c->max_ack_pending = map;
    c->start_mode = mode;
    c->start_arg = nc.arg;
    c->start_seq = start_seq;
    c->next_seq = next_seq;
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seq = rift_ev_get_u64(r);
        uint64_t at = rift_ev_get_u64(r);
        uint32_t attempts = rift_ev_get_u32(r);
        if (r->bad || seq <= prev) {
            *why = r->bad ? "truncated state event" : "unordered pending";
            rift_consumer_unref_locked(c);
            return -1;
        }
        prev = seq;
        if (rift_pend_upsert(c, seq, at, attempts) != 0) {
            rift_consumer_unref_locked(c);
            *why = "out of memory";
            return -2;
        }
    }
    if (rift_consumer_insert(st, c) != 0) {
        rift_consumer_unref_locked(c);
        *why = "out of memory";
        return -2;
    }
    if (id >= st->next_cid) {
        st->next_cid = id + 1;
    }
    return 0;
}

int rift_consumer_apply_event(rift_stream *st, const uint8_t *body, size_t len,
                              const char **why) {
    rift_ev_reader r = {.p = body, .len = len, .pos = 0, .bad = false};
    uint8_t type = rift_ev_get_u8(&r);
    int rc = 0;
    switch (type) {
    case RIFT_EV_CONSUMER:
        rc = apply_consumer(st, &r, why);
        break;
    case RIFT_EV_DELETE: {
        uint32_t id = rift_ev_get_u32(&r);
        rift_consumer *c = r.bad ? NULL : rift_consumer_by_id(st, id);
        if (c == NULL) {
            *why = r.bad ? "truncated state event"
                         : "delete references absent consumer";
            return -1;
        }
        rift_consumer_remove(st, c);
        c->deleted = true;
        rift_consumer_unref_locked(c);
        break;
    }
    case RIFT_EV_FETCH: {
        uint32_t id = rift_ev_get_u32(&r);
        uint64_t next = rift_ev_get_u64(&r);
        uint64_t at = rift_ev_get_u64(&r);
        uint32_t n = rift_ev_get_u32(&r);
        if (r.bad) {
            *why = "truncated state event";
            return -1;
        }
        rift_consumer *c = rift_consumer_by_id(st, id);
        if (c == NULL) {
            *why = "fetch references absent consumer";
            return -1;
        }
        if (n > MAX_BATCH || (size_t)n * 12 > r.len - r.pos) {
            *why = "truncated state event";
            return -1;
        }
        c->next_seq = next;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t seq = rift_ev_get_u64(&r);
            uint32_t attempts = rift_ev_get_u32(&r);
            if (rift_pend_upsert(c, seq, at, attempts) != 0) {
                *why = "out of memory";
                return -2;
            }
        }
        pend_cap_replayed(c);
        break;
    }
    case RIFT_EV_ACK: {
        uint32_t id = rift_ev_get_u32(&r);
        uint64_t seq = rift_ev_get_u64(&r);
        if (r.bad) {
            *why = "truncated state event";
            return -1;
        }
        rift_consumer *c = rift_consumer_by_id(st, id);
        if (c == NULL) {
            *why = "ack references absent consumer";
            return -1;
        }
        rift_pend *p = rift_pend_find(c, seq);
        if (p != NULL) {
            rift_pend_drop(c, p);
        }
        break;
    }
    case RIFT_EV_FIRST_SEQ: {
        uint64_t v = rift_ev_get_u64(&r);
        if (!r.bad && v > st->marker) {
            st->marker = v;
        }
        break;
    }
    case RIFT_EV_HOLE: {
        uint64_t from = rift_ev_get_u64(&r);
        uint64_t to = rift_ev_get_u64(&r);
        if (r.bad) {
            break; /* reported below */
        }
        if (from == 0 || from >= to) {
            *why = "invalid sequence hole";
            return -1;
        }
        rift_hole *h = rift_ring_push(&st->logged_holes);
        if (h == NULL) {
            *why = "out of memory";
            return -2;
        }
        h->from = from;
        h->to = to;
        break;
    }
    default:
        *why = "unknown state event";
        return -1;
    }
    if (rc != 0) {
        return rc;
    }
    if (r.bad) {
        *why = "truncated state event";
        return -1;
    }
    if (r.pos != r.len) {
        *why = "trailing state event bytes";
        return -1;
    }
    return 0;
}

/* ---- Public operations ---- */

static int refuse_callback(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "blocking stream call from its own completion "
                          "callback");
}

static int not_found(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                          "consumer does not exist");
}

static uint64_t resolve_start(rift_stream *st, const norm_config *n,
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
                                  const norm_config *nc) {
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
    norm_config nc;
    if (!rift_consumer_name_valid(name, name_len) || !normalize(config, &nc)) {
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
    if (c == NULL || table_reserve(st) != 0) {
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
        rift_sbuf *b = rift_writer_state_buf(st);
        before = b->len;
        if (encode_consumer(c, b, false) != 0) {
            rift_consumer_unref_locked(c);
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    st->next_cid++;
    rift_consumer_insert(st, c); /* cannot fail: reserved above */
    if (st->file) {
        rift_writer_state_done(st, before);
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
        rift_sbuf *b = rift_writer_state_buf(st);
        size_t before = b->len;
        int64_t start = rift_ev_begin(b, RIFT_EV_DELETE);
        if (start < 0 || rift_ev_put_u32(b, c->id) != 0) {
            b->len = before;
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        rift_ev_finish(b, start);
        rift_consumer_remove(st, c);
        rift_writer_state_done(st, before);
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
    if (limit > MAX_BATCH) {
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
        rift_pend *p = pend_at(c, i);
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
        rift_sbuf *b = rift_writer_state_buf(st);
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
            rift_writer_state_buf(st)->len = before;
        }
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }

    /* Commit the new delivery state (cannot fail from here on). */
    for (size_t i = 0; i < n; i++) {
        if (items[i].pidx != SIZE_MAX) {
            rift_pend *p = pend_at(c, items[i].pidx);
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
        rift_writer_state_done(st, before);
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
        rift_sbuf *b = rift_writer_state_buf(st);
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
        rift_writer_state_done(st, before);
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
