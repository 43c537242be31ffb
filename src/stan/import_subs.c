/*
 * import_subs.c — replays a channel's subs.dat of a nats-streaming-server
 * file store into the table of its live subscriptions (stan layer; see
 * import_internal.h), with the original's recovery rules: a new record
 * adds a subscription, an update replaces its state (keeping its pending
 * set), a delete drops it, a "msg" record marks a sequence sent (raising
 * last_sent) and an "ack" record clears it. Records about unknown ids are
 * ignored, as the original does.
 */
#include "stan/import_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- The sequence set: linear probing, backward-shift deletion ---- */

static size_t slot_of(uint64_t seq, size_t cap) {
    return (size_t)((seq * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int set_grow(stan_imp_seqset *s, const rift_mem *mem) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    uint64_t *ns = rift_calloc(mem, cap, sizeof *ns);
    if (!ns) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slot[i]) {
            size_t j = slot_of(s->slot[i], cap);
            while (ns[j]) {
                j = (j + 1) & (cap - 1);
            }
            ns[j] = s->slot[i];
        }
    }
    rift_free(mem, s->slot);
    s->slot = ns;
    s->cap = cap;
    return 0;
}

/* 1 added, 0 present, <0 error. */
static int set_add(stan_imp_seqset *s, uint64_t seq, const rift_mem *mem) {
    if ((s->n + 1) * 2 > s->cap && set_grow(s, mem) != 0) {
        return RIFT_ERR_NOMEM;
    }
    size_t i = slot_of(seq, s->cap);
    while (s->slot[i]) {
        if (s->slot[i] == seq) {
            return 0;
        }
        i = (i + 1) & (s->cap - 1);
    }
    s->slot[i] = seq;
    s->n++;
    return 1;
}

static bool set_has(const stan_imp_seqset *s, uint64_t seq) {
    if (!s->cap) {
        return false;
    }
    for (size_t i = slot_of(seq, s->cap); s->slot[i];
         i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == seq) {
            return true;
        }
    }
    return false;
}

static void set_del(stan_imp_seqset *s, uint64_t seq) {
    if (!s->cap) {
        return;
    }
    size_t mask = s->cap - 1, i = slot_of(seq, s->cap);
    while (s->slot[i] != seq) {
        if (!s->slot[i]) {
            return;
        }
        i = (i + 1) & mask;
    }
    s->slot[i] = 0;
    s->n--;
    /* Pull later entries of the run back so lookups never stop early. */
    for (size_t j = (i + 1) & mask; s->slot[j]; j = (j + 1) & mask) {
        size_t home = slot_of(s->slot[j], s->cap);
        bool movable =
            i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            s->slot[i] = s->slot[j];
            s->slot[j] = 0;
            i = j;
        }
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t stan_imp_sub_pending_sorted(const stan_imp_sub *s, uint64_t *out) {
    size_t n = 0;
    for (size_t i = 0; i < s->pending.cap && n < STAN_IMP_MAX_PENDING; i++) {
        if (s->pending.slot[i]) {
            out[n++] = s->pending.slot[i];
        }
    }
    if (n > 1) {
        qsort(out, n, sizeof *out, cmp_u64);
    }
    return n;
}

/* ---- The table ---- */

static void sub_clear(const rift_mem *mem, stan_imp_sub *s) {
    rift_free(mem, s->client_id);
    rift_free(mem, s->q_group);
    rift_free(mem, s->durable);
    rift_free(mem, s->pending.slot);
    memset(s, 0, sizeof *s);
}

/* find: the index of |id|, or where it would go (*|found| false). */
static size_t find(const stan_imp_subs *t, uint64_t id, bool *found) {
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = lo < t->n && t->v[lo].id == id;
    return lo;
}

static char *dup_str(const rift_mem *mem, stan_imp_str s) {
    return rift_strndup(mem, s.p ? s.p : "", s.len);
}

/* set_state copies the decoded state into |s| (the pending set stays). */
static int set_state(const rift_mem *mem, stan_imp_sub *s,
                     const stan_imp_sub_state *st) {
    char *c = dup_str(mem, st->client_id), *q = dup_str(mem, st->q_group),
         *d = dup_str(mem, st->durable_name);
    if (!c || !q || !d) {
        rift_free(mem, c);
        rift_free(mem, q);
        rift_free(mem, d);
        return RIFT_ERR_NOMEM;
    }
    rift_free(mem, s->client_id);
    rift_free(mem, s->q_group);
    rift_free(mem, s->durable);
    s->client_id = c;
    s->q_group = q;
    s->durable = d;
    s->id = st->id;
    s->ack_wait_secs = st->ack_wait_secs;
    s->last_sent = st->last_sent;
    s->is_durable = st->is_durable;
    return 0;
}

static int upsert(stan_imp_subs *t, const stan_imp_sub_state *st,
                  const char *path, uint64_t at, rift_error *err) {
    bool found;
    size_t i = find(t, st->id, &found);
    if (!found) {
        if (t->n >= STAN_IMP_MAX_SUBS) {
            return rift_error_set(err, RIFT_ERR_LIMIT,
                                  "%s: offset %" PRIu64
                                  ": more than %u live subscriptions",
                                  path, at, STAN_IMP_MAX_SUBS);
        }
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 16;
            stan_imp_sub *nv = rift_realloc(t->mem, t->v, cap * sizeof *nv);
            if (!nv) {
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            }
            t->v = nv;
            t->cap = cap;
        }
        memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof *t->v);
        memset(&t->v[i], 0, sizeof t->v[i]);
        t->n++;
    }
    if (set_state(t->mem, &t->v[i], st) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static void drop(stan_imp_subs *t, uint64_t id) {
    bool found;
    size_t i = find(t, id, &found);
    if (found) {
        sub_clear(t->mem, &t->v[i]);
        memmove(t->v + i, t->v + i + 1, (t->n - i - 1) * sizeof *t->v);
        t->n--;
    }
}

static int apply(stan_imp_subs *t, uint8_t type, const uint8_t *p, size_t len,
                 const char *path, uint64_t at, rift_error *err) {
    const char *why = NULL;
    switch (type) {
    case STAN_IMP_SUB_NEW:
    case STAN_IMP_SUB_UPDATE: {
        stan_imp_sub_state st;
        if (stan_imp_decode_sub_state(p, len, &st, &why) != 0) {
            break;
        }
        return upsert(t, &st, path, at, err);
    }
    case STAN_IMP_SUB_DEL:
    case STAN_IMP_SUB_MSG:
    case STAN_IMP_SUB_ACK: {
        stan_imp_sub_update u;
        if (stan_imp_decode_sub_update(p, len, &u, &why) != 0) {
            break;
        }
        if (type == STAN_IMP_SUB_DEL) {
            drop(t, u.id);
            return 0;
        }
        bool found;
        size_t i = find(t, u.id, &found);
        if (!found || u.seqno == 0) {
            return 0;
        }
        stan_imp_sub *s = &t->v[i];
        if (type == STAN_IMP_SUB_ACK) {
            set_del(&s->pending, u.seqno);
            return 0;
        }
        if (u.seqno > s->last_sent) {
            s->last_sent = u.seqno;
        }
        /* The same sequence may be recorded sent again (queue
         * redeliveries): only a new one counts against the limit. */
        if (s->pending.n >= STAN_IMP_MAX_PENDING &&
            !set_has(&s->pending, u.seqno)) {
            return rift_error_set(
                err, RIFT_ERR_LIMIT,
                "%s: offset %" PRIu64 ": subscription %" PRIu64
                " has more than %u unacknowledged messages (rift's limit)",
                path, at, s->id, STAN_IMP_MAX_PENDING);
        }
        if (set_add(&s->pending, u.seqno, t->mem) < 0) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        return 0;
    }
    default:
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset %" PRIu64
                              ": unknown subscription record type %u",
                              path, at, type);
    }
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "%s: offset %" PRIu64 ": record type %u: %s", path,
                          at, type, why);
}

int stan_imp_subs_read(stan_imp_subs *t, FILE *f, const char *path,
                       const rift_mem *mem, rift_error *err) {
    memset(t, 0, sizeof *t);
    t->mem = mem;
    stan_imp_reader r;
    /* Typed records carry 24 bits of size. */
    int rc = stan_imp_reader_init(&r, f, path, true, 0xFFFFFF, mem, err);
    uint8_t type;
    const uint8_t *p;
    size_t len;
    while (stan_imp_reader_more(&r, &type, &p, &len, &rc, err)) {
        t->records++;
        rc = apply(t, type, p, len, path, r.at, err);
    }
    stan_imp_reader_free(&r);
    return rc;
}

int stan_imp_subs_load(stan_imp_subs *t, const char *path, const rift_mem *mem,
                       rift_error *err) {
    memset(t, 0, sizeof *t);
    t->mem = mem;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            return 0;
        }
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", path,
                              strerror(errno));
    }
    int rc = stan_imp_subs_read(t, f, path, mem, err);
    fclose(f);
    return rc;
}

void stan_imp_subs_free(stan_imp_subs *t) {
    for (size_t i = 0; i < t->n; i++) {
        sub_clear(t->mem, &t->v[i]);
    }
    rift_free(t->mem, t->v);
    memset(t, 0, sizeof *t);
}
