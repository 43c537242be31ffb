/*
 * import_channel.c — imports one channel of a nats-streaming-server file
 * store into a new rift stream directory (stan layer; see
 * import_internal.h): its msgs.N.dat slices in slice order, then its
 * durable subscriptions as the consumers the STAN service resumes
 * (names as in subs.c: "d-<client>-<durable>", "q-<durable>:<group>").
 */
#include "stan/import_internal.h"
#include "stan/names.h"

#include "stan/proto.h"
#include "subject/subject.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Largest message record read: the original caps messages at NATS's
 * max_payload (1 MiB by default, at most 64 MiB); rift's record limit is
 * higher, so this only stops a damaged size field from allocating. */
#define MAX_MSG_RECORD (64u << 20)
#define MAX_SLICES     1000000u
#define MAX_NAME       128

/* ---- Message slices ---- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* slice_number parses "msgs.<N>.dat"; false for other names. */
static bool slice_number(const char *name, uint64_t *n) {
    size_t len = strlen(name);
    if (len < 10 || strncmp(name, "msgs.", 5) != 0 ||
        strcmp(name + len - 4, ".dat") != 0) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 5; i < len - 4; i++) {
        if (name[i] < '0' || name[i] > '9' || v > UINT64_MAX / 10 - 1) {
            return false;
        }
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    *n = v;
    return true;
}

/* list_slices returns the slice numbers of |dir|, ascending. */
static int list_slices(const char *dir, const rift_mem *mem, uint64_t **out,
                       size_t *count, rift_error *err) {
    *out = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", dir, strerror(errno));
    }
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t n;
        if (!slice_number(e->d_name, &n)) {
            continue;
        }
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *nv = cap > MAX_SLICES
                               ? NULL
                               : rift_realloc(mem, *out, cap * sizeof *nv);
            if (!nv) {
                rc = rift_error_set(err, RIFT_ERR_NOMEM,
                                    "%s: too many message files", dir);
                break;
            }
            *out = nv;
        }
        (*out)[(*count)++] = n;
    }
    closedir(d);
    if (rc == 0 && *count > 0) {
        qsort(*out, *count, sizeof **out, cmp_u64);
    }
    return rc;
}

static int import_slice(stan_imp_out *o, const char *path, const char *channel,
                        const rift_mem *mem, rift_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", path,
                              strerror(errno));
    }
    stan_imp_reader r;
    int rc = stan_imp_reader_init(&r, f, path, false, MAX_MSG_RECORD, mem, err);
    size_t chlen = strlen(channel);
    uint8_t type;
    const uint8_t *p;
    size_t len;
    while (stan_imp_reader_more(&r, &type, &p, &len, &rc, err)) {
        rift_stan_msg_proto m;
        rift_error pe = {0};
        if (rift_stan_decode_msg_proto(p, len, &m, &pe) != 0) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset %" PRIu64 ": %s", path, r.at,
                                pe.text);
            break;
        }
        if (m.sequence == 0 || m.timestamp < 0) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset %" PRIu64
                                ": message without a sequence or with a "
                                "negative timestamp",
                                path, r.at);
            break;
        }
        /* A reply that is not a valid subject could not be used anyway. */
        bool reply_ok =
            m.reply.len && rift_subject_valid(m.reply.p, m.reply.len, false,
                                              RIFT_MAX_SUBJECT_BYTES);
        rift_error we = {0};
        rc = stan_imp_out_record(
            o, m.sequence, (uint64_t)m.timestamp / 1000000u, channel, chlen,
            reply_ok ? m.reply.p : NULL, reply_ok ? m.reply.len : 0,
            (const uint8_t *)m.data.p, m.data.len, &we);
        if (rc != 0) {
            rift_error_set(err, rc, "%s: offset %" PRIu64 ": %s", path, r.at,
                           we.text);
        }
    }
    stan_imp_reader_free(&r);
    fclose(f);
    return rc;
}

/* ---- Durable subscriptions ---- */

/*
 * consumer_name gives the durable consumer the STAN service would use for
 * |s|, or false for a subscription that is not durable. In the store a
 * durable has its durableName set and no group; a durable queue member has
 * isDurable and the group "durable:group" (the original's compound name).
 */
static bool consumer_name(const stan_imp_sub *s, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    if (!s->q_group[0] && s->durable[0]) {
        /* Stores before IsClosed existed could hold an offline durable
         * without its client ID: no client could resume it here. */
        if (!s->client_id[0]) {
            return false;
        }
        stan_durable_name(out, cap, &n, s->client_id, strlen(s->client_id),
                          s->durable, strlen(s->durable));
    } else if (s->q_group[0] && s->is_durable) {
        const char *colon = strchr(s->q_group, ':');
        if (!colon || colon == s->q_group) {
            return false;
        }
        stan_queue_durable_name(out, cap, &n, s->q_group,
                                (size_t)(colon - s->q_group), colon + 1,
                                strlen(colon + 1));
    } else {
        return false;
    }
    return n > 2 && n <= MAX_NAME && n + 4 < cap;
}

typedef struct named {
    char name[MAX_NAME * 3 + 16];
    size_t sub;
} named;

static int cmp_named(const void *a, const void *b) {
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->sub < y->sub ? -1 : x->sub > y->sub);
}

/* write_group writes one consumer for the members [from, to) of |v| (one
 * for a durable, the members of a durable queue group): the cursor after
 * the highest last_sent, pending the union of the members' pending sets,
 * both kept to what the stream holds. */
static int write_group(stan_imp_out *o, const stan_imp_subs *t, const named *v,
                       size_t from, size_t to, uint64_t *buf, uint64_t *merged,
                       uint64_t now_ms, rift_stan_import_stats *st,
                       rift_error *err) {
    uint64_t first = o->first_seq ? o->first_seq : 1;
    uint64_t last = o->first_seq ? o->next_seq - 1 : 0;
    uint64_t last_sent = 0;
    size_t m = 0;
    for (size_t i = from; i < to; i++) {
        const stan_imp_sub *s = &t->v[v[i].sub];
        if (s->last_sent > last_sent) {
            last_sent = s->last_sent;
        }
        size_t n = stan_imp_sub_pending_sorted(s, buf);
        for (size_t k = 0; k < n; k++) {
            if (buf[k] < first || buf[k] > last) {
                st->dropped_pending++;
                continue;
            }
            if (m == STAN_IMP_MAX_PENDING) {
                return rift_error_set(
                    err, RIFT_ERR_LIMIT,
                    "consumer %s: more than %u unacknowledged messages "
                    "(rift's limit)",
                    v[from].name, STAN_IMP_MAX_PENDING);
            }
            merged[m++] = buf[k];
        }
    }
    if (m > 1) {
        qsort(merged, m, sizeof *merged, cmp_u64);
    }
    size_t u = 0;
    for (size_t k = 0; k < m; k++) {
        if (u == 0 || merged[u - 1] != merged[k]) {
            merged[u++] = merged[k];
        }
    }
    uint64_t next = last_sent + 1;
    next = next < first ? first : next > last + 1 ? last + 1 : next;
    const stan_imp_sub *lead = &t->v[v[from].sub];
    uint64_t ack_wait_ms = lead->ack_wait_secs > 0
                               ? (uint64_t)lead->ack_wait_secs * 1000u
                               : 30000u;
    int rc = stan_imp_out_consumer(o, v[from].name, ack_wait_ms, next, merged,
                                   u, now_ms, err);
    if (rc == 0) {
        st->consumers++;
    }
    return rc;
}

static int import_durables(stan_imp_out *o, const stan_imp_subs *t,
                           const rift_mem *mem, rift_stan_import_stats *st,
                           rift_error *err) {
    named *v = t->n ? rift_calloc(mem, t->n, sizeof *v) : NULL;
    uint64_t *buf = rift_malloc(mem, STAN_IMP_MAX_PENDING * sizeof *buf);
    uint64_t *merged = rift_malloc(mem, STAN_IMP_MAX_PENDING * sizeof *merged);
    int rc = 0;
    if ((t->n && !v) || !buf || !merged) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        if (consumer_name(&t->v[i], v[n].name, sizeof v[n].name)) {
            v[n++].sub = i;
        } else {
            st->skipped_subs++;
        }
    }
    if (rc == 0 && n > 0) {
        qsort(v, n, sizeof *v, cmp_named);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now_ms =
        (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (size_t i = 0; rc == 0 && i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(v[j].name, v[i].name) == 0) {
            j++;
        }
        rc = write_group(o, t, v, i, j, buf, merged, now_ms, st, err);
        i = j;
    }
    rift_free(mem, v);
    rift_free(mem, buf);
    rift_free(mem, merged);
    return rc;
}

int stan_imp_channel(const char *src_dir, const char *tmp_dir,
                     const char *channel, const rift_mem *mem,
                     rift_stan_import_stats *st, rift_error *err) {
    memset(st, 0, sizeof *st);
    stan_imp_out o;
    int rc = stan_imp_out_open(&o, tmp_dir, mem, err);
    uint64_t *slices = NULL;
    size_t nslices = 0;
    if (rc == 0) {
        rc = list_slices(src_dir, mem, &slices, &nslices, err);
    }
    char path[4096];
    for (size_t i = 0; rc == 0 && i < nslices; i++) {
        snprintf(path, sizeof path, "%s/msgs.%" PRIu64 ".dat", src_dir,
                 slices[i]);
        rc = import_slice(&o, path, channel, mem, err);
    }
    rift_free(mem, slices);
    stan_imp_subs t = {0};
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/subs.dat", src_dir);
        rc = stan_imp_subs_load(&t, path, mem, err);
    }
    if (rc == 0) {
        rc = import_durables(&o, &t, mem, st, err);
    }
    stan_imp_subs_free(&t);
    if (rc == 0) {
        rc = stan_imp_out_finish(&o, err);
    }
    st->messages = o.records;
    st->first_seq = o.first_seq;
    st->last_seq = o.first_seq ? o.next_seq - 1 : 0;
    st->holes = o.holes;
    stan_imp_out_free(&o);
    return rc;
}
