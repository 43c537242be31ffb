/*
 * consumer_state.c — a stream's consumers as state (store layer): the
 * table sorted by name, each consumer's pending set, and the CONSUMER and
 * PENDING state events that make them durable — encoded for the state
 * log and snapshots, applied again on recovery. No I/O and no writer; the
 * operations of consumer.c, retention, the writer's snapshots and
 * recovery build on it. Semantics: docs/protocol-v1.md §4.7.
 */
#include "store/consumer_state.h"
#include "subject/subject.h"

#include <string.h>

#define MAX_NAME        128u
#define MAX_ACK_PENDING 65536u
#define START_MODE_MAX  RIFT_START_TIME_DELTA

/* ---- Validation ---- */

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

bool rift_consumer_normalize(const rift_consumer_config *in,
                             rift_consumer_norm *out) {
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
    out->max_deliver = in->max_deliver;
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

int rift_consumer_table_reserve(rift_stream *st) {
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
    if (rift_consumer_table_reserve(st) != 0) {
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
    rift_free(mem, c->label);
    rift_free(mem, c->name);
    rift_free(mem, c->filter);
    rift_free(mem, c);
}

/* ---- Pending set ---- */

rift_pend *rift_pend_at(rift_consumer *c, size_t i) {
    return rift_ring_at(&c->pending, i);
}

/* Index of the first entry with seq >= |seq|. */
static size_t pend_lower(rift_consumer *c, uint64_t seq) {
    size_t lo = 0, hi = c->pending.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rift_pend_at(c, mid)->seq < seq) {
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
        rift_pend *p = rift_pend_at(c, i);
        if (p->seq == seq && p->live) {
            return p;
        }
    }
    return NULL;
}

int rift_pend_upsert(rift_consumer *c, uint64_t seq, uint64_t delivered_at,
                     uint32_t attempts) {
    size_t i = pend_lower(c, seq);
    if (i < c->pending.len && rift_pend_at(c, i)->seq == seq) {
        rift_pend *p = rift_pend_at(c, i);
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
        *rift_pend_at(c, k) = *rift_pend_at(c, k - 1);
    }
    rift_pend *p = rift_pend_at(c, i);
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
        rift_pend *p = rift_pend_at(c, i);
        if (p->live) {
            if (i != j) {
                *rift_pend_at(c, j) = *p;
            }
            j++;
        }
    }
    c->pending.len = j;
}

static void pend_tidy(rift_consumer *c) {
    while (c->pending.len > 0 && !rift_pend_at(c, 0)->live) {
        rift_ring_pop_front(&c->pending);
    }
    while (c->pending.len > 0 && !rift_pend_at(c, c->pending.len - 1)->live) {
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
    while (c->pending.len > 0 && rift_pend_at(c, 0)->seq < first) {
        if (rift_pend_at(c, 0)->live) {
            c->live--;
        }
        rift_ring_pop_front(&c->pending);
    }
    pend_tidy(c);
}

void rift_pend_drop_range(rift_consumer *c, uint64_t from, uint64_t to) {
    for (size_t i = pend_lower(c, from); i < c->pending.len; i++) {
        rift_pend *p = rift_pend_at(c, i);
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
    while (c->pending.len > 0 &&
           rift_pend_at(c, c->pending.len - 1)->seq > last) {
        if (rift_pend_at(c, c->pending.len - 1)->live) {
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
        if (rift_pend_at(c, 0)->live) {
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

/* The CONSUMER_LIMITS event that follows a CONSUMER event, when the
 * consumer has a max_deliver or counters (older directories have none). */
static int encode_limits(const rift_consumer *c, rift_sbuf *b) {
    if (c->max_deliver == 0 && c->terminated == 0 && c->max_delivered == 0) {
        return 0;
    }
    int64_t start = rift_ev_begin(b, RIFT_EV_CONSUMER_LIMITS);
    if (start < 0 || rift_ev_put_u32(b, c->id) != 0 ||
        rift_ev_put_u32(b, c->max_deliver) != 0 ||
        rift_ev_put_u64(b, c->terminated) != 0 ||
        rift_ev_put_u64(b, c->max_delivered) != 0) {
        return RIFT_ERR_NOMEM;
    }
    rift_ev_finish(b, start);
    return 0;
}

int rift_consumer_encode_label(const rift_consumer *c, rift_sbuf *b) {
    if (c->label == NULL) {
        return 0;
    }
    size_t before = b->len;
    int64_t start = rift_ev_begin(b, RIFT_EV_CONSUMER_LABEL);
    if (start < 0 || rift_ev_put_u32(b, c->id) != 0 ||
        rift_ev_put_str(b, c->label, c->label_len) != 0) {
        b->len = before;
        return RIFT_ERR_NOMEM;
    }
    rift_ev_finish(b, start);
    return 0;
}

static int encode_with_limits(const rift_consumer *c, rift_sbuf *b,
                              bool with_pending) {
    size_t before = b->len;
    if (encode_consumer(c, b, with_pending) != 0 || encode_limits(c, b) != 0 ||
        rift_consumer_encode_label(c, b) != 0) {
        b->len = before;
        return RIFT_ERR_NOMEM;
    }
    return 0;
}

int rift_consumer_encode(const rift_consumer *c, rift_sbuf *b) {
    return encode_with_limits(c, b, true);
}

int rift_consumer_encode_new(const rift_consumer *c, rift_sbuf *b) {
    return encode_with_limits(c, b, false);
}

/* The |n| pending entries of a CONSUMER event, ascending. */
static int read_pending(rift_consumer *c, rift_ev_reader *r, uint32_t n,
                        const char **why) {
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seq = rift_ev_get_u64(r);
        uint64_t at = rift_ev_get_u64(r);
        uint32_t attempts = rift_ev_get_u32(r);
        if (r->bad || seq <= prev) {
            *why = r->bad ? "truncated state event" : "unordered pending";
            return -1;
        }
        prev = seq;
        if (rift_pend_upsert(c, seq, at, attempts) != 0) {
            *why = "out of memory";
            return -2;
        }
    }
    return 0;
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
    rift_consumer_norm nc;
    if (!rift_consumer_name_valid(name, nlen) || flen == 0 ||
        mode > START_MODE_MAX || !rift_consumer_normalize(&cfg, &nc)) {
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
    int rc = read_pending(c, r, n, why);
    if (rc != 0) {
        rift_consumer_unref_locked(c);
        return rc;
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

static int apply_delete(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    rift_consumer *c = r->bad ? NULL : rift_consumer_by_id(st, id);
    if (c == NULL) {
        *why = r->bad ? "truncated state event"
                      : "delete references absent consumer";
        return -1;
    }
    rift_consumer_remove(st, c);
    c->deleted = true;
    rift_consumer_unref_locked(c);
    return 0;
}

static int apply_fetch(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    uint64_t next = rift_ev_get_u64(r);
    uint64_t at = rift_ev_get_u64(r);
    uint32_t n = rift_ev_get_u32(r);
    if (r->bad) {
        *why = "truncated state event";
        return -1;
    }
    rift_consumer *c = rift_consumer_by_id(st, id);
    if (c == NULL) {
        *why = "fetch references absent consumer";
        return -1;
    }
    if (n > RIFT_CONSUMER_MAX_BATCH || (size_t)n * 12 > r->len - r->pos) {
        *why = "truncated state event";
        return -1;
    }
    c->next_seq = next;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seq = rift_ev_get_u64(r);
        uint32_t attempts = rift_ev_get_u32(r);
        if (rift_pend_upsert(c, seq, at, attempts) != 0) {
            *why = "out of memory";
            return -2;
        }
    }
    pend_cap_replayed(c);
    return 0;
}

static int apply_ack(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    uint64_t seq = rift_ev_get_u64(r);
    if (r->bad) {
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
    return 0;
}

static int apply_limits(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    uint32_t max_deliver = rift_ev_get_u32(r);
    uint64_t terminated = rift_ev_get_u64(r);
    uint64_t max_delivered = rift_ev_get_u64(r);
    if (r->bad) {
        *why = "truncated state event";
        return -1;
    }
    rift_consumer *c = rift_consumer_by_id(st, id);
    if (c == NULL) {
        *why = "limits reference absent consumer";
        return -1;
    }
    c->max_deliver = max_deliver;
    c->terminated = terminated;
    c->max_delivered = max_delivered;
    return 0;
}

static int apply_term(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    uint64_t seq = rift_ev_get_u64(r);
    uint8_t reason = rift_ev_get_u8(r);
    if (r->bad) {
        *why = "truncated state event";
        return -1;
    }
    rift_consumer *c = rift_consumer_by_id(st, id);
    if (c == NULL || reason > RIFT_TERM_BY_MAX_DELIVER) {
        *why = c == NULL ? "term references absent consumer"
                         : "invalid term reason";
        return -1;
    }
    rift_pend *p = rift_pend_find(c, seq);
    if (p != NULL) {
        rift_pend_drop(c, p);
    }
    if (reason == RIFT_TERM_BY_CLIENT) {
        c->terminated++;
    } else {
        c->max_delivered++;
    }
    return 0;
}

static int apply_label(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint32_t id = rift_ev_get_u32(r);
    size_t len = 0;
    const char *label = rift_ev_get_str(r, &len);
    if (r->bad) {
        *why = "truncated state event";
        return -1;
    }
    rift_consumer *c = rift_consumer_by_id(st, id);
    if (c == NULL || len > RIFT_ADVISORY_LABEL_MAX) {
        *why = c == NULL ? "label references absent consumer"
                         : "consumer label too long";
        return -1;
    }
    char *copy = rift_strndup(st->mem, label, len);
    if (copy == NULL) {
        *why = "out of memory";
        return -2;
    }
    rift_free(st->mem, c->label);
    c->label = copy;
    c->label_len = len;
    return 0;
}

static int apply_hole(rift_stream *st, rift_ev_reader *r, const char **why) {
    uint64_t from = rift_ev_get_u64(r);
    uint64_t to = rift_ev_get_u64(r);
    if (r->bad) {
        return 0; /* reported by the caller */
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
    case RIFT_EV_DELETE:
        rc = apply_delete(st, &r, why);
        break;
    case RIFT_EV_FETCH:
        rc = apply_fetch(st, &r, why);
        break;
    case RIFT_EV_ACK:
        rc = apply_ack(st, &r, why);
        break;
    case RIFT_EV_FIRST_SEQ: {
        uint64_t v = rift_ev_get_u64(&r);
        if (!r.bad && v > st->marker) {
            st->marker = v;
        }
        break;
    }
    case RIFT_EV_HOLE:
        rc = apply_hole(st, &r, why);
        break;
    case RIFT_EV_CONSUMER_LIMITS:
        rc = apply_limits(st, &r, why);
        break;
    case RIFT_EV_TERM:
        rc = apply_term(st, &r, why);
        break;
    case RIFT_EV_CONSUMER_LABEL:
        rc = apply_label(st, &r, why);
        break;
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
