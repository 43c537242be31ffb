/*
 * consumer_ext_list.c — CONSUMER_LIST (26) of the protocol server (server
 * layer): one page of the identity's own consumers of a stream, sorted by
 * the client's names, answered CONSUMER_LIST_RESULT (27) with the fields
 * of CONSUMER_INFO per consumer. docs/protocol-v1.md E.2, E.3.
 *
 * Ownership without a stored owner: the store keeps the scoped name
 * (remote_<hash> of identity and name, §3.5) and, as the consumer's label,
 * the client's own name (set by every open and journaled). A consumer is
 * this identity's exactly when scoping its label with the identity gives
 * back its stored name, so another identity's consumers, a plugin's, an
 * in-process one and an unlabelled one (a data directory from before the
 * labels were journaled) never appear. Answered synchronously: no I/O.
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "subject/acl.h"

#include <string.h>

/* One consumer of the page: its stored and its client-side name. */
typedef struct list_entry {
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    char name[RIFT_NAME_MAX];
    size_t name_len;
} list_entry;

/* The walk keeps the |cap| (limit + 1, to tell whether more remain)
 * smallest names after |after|, sorted, so memory stays bounded by the
 * page however many consumers the stream has. */
typedef struct list_walk {
    const rift_identity *id;
    const char *after;
    size_t after_len;
    list_entry *v;
    size_t n;
    size_t cap;
} list_walk;

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    int r = memcmp(a, b, RIFT_MIN(alen, blen));
    if (r != 0) {
        return r;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Under the stream's lock (rift_stream_consumer_each): pure work only. */
static void visit(void *arg, const char *name, size_t name_len,
                  const char *label, size_t label_len) {
    list_walk *w = arg;
    if (label == NULL || name_len != RIFT_SCOPED_CONSUMER_LEN ||
        label_len == 0 || label_len > RIFT_NAME_MAX ||
        name_cmp(label, label_len, w->after, w->after_len) <= 0) {
        return;
    }
    if (w->n == w->cap && name_cmp(label, label_len, w->v[w->n - 1].name,
                                   w->v[w->n - 1].name_len) >= 0) {
        return; /* beyond the page */
    }
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    if (rift_identity_consumer_name(w->id, label, label_len, scoped, NULL) !=
            0 ||
        memcmp(scoped, name, RIFT_SCOPED_CONSUMER_LEN) != 0) {
        return; /* not this identity's */
    }
    size_t i = w->n < w->cap ? w->n : w->cap - 1;
    while (i > 0 && name_cmp(label, label_len, w->v[i - 1].name,
                             w->v[i - 1].name_len) < 0) {
        w->v[i] = w->v[i - 1];
        i--;
    }
    memcpy(w->v[i].scoped, scoped, sizeof(scoped));
    memcpy(w->v[i].name, label, label_len);
    w->v[i].name_len = label_len;
    if (w->n < w->cap) {
        w->n++;
    }
}

/* The page's frame into a buffer of |srv|'s allocator (*|len| bytes), or
 * NULL when out of memory. */
static uint8_t *encode_page(rift_server *srv, rift_stream *st,
                            const list_entry *v, size_t n, bool more,
                            size_t *len) {
    rift_consumer **handles = rift_calloc(srv->mem, n + 1, sizeof(*handles));
    rift_consumer_info *infos = rift_calloc(srv->mem, n + 1, sizeof(*infos));
    rift_frame_consumer_info *items =
        rift_calloc(srv->mem, n + 1, sizeof(*items));
    uint8_t *buf = NULL;
    size_t k = 0;
    size_t size = RIFT_FRAME_PREFIX_BYTES + 1 + 4 + 1;
    if (handles == NULL || infos == NULL || items == NULL) {
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        /* A consumer deleted since the walk is simply left out. */
        if (rift_stream_consumer_get(st, v[i].scoped, RIFT_SCOPED_CONSUMER_LEN,
                                     &handles[k], NULL) != 0) {
            continue;
        }
        if (rift_consumer_get_info(handles[k], &infos[k], NULL) != 0) {
            rift_consumer_close(handles[k]);
            handles[k] = NULL;
            continue;
        }
        rift_srv_consumer_info_frame(&infos[k], v[i].name, v[i].name_len, false,
                                     &items[k]);
        size += rift_frame_consumer_info_size(&items[k]);
        k++;
    }
    buf = rift_malloc(srv->mem, size);
    if (buf != NULL) {
        rift_ssize w =
            rift_frame_encode_consumer_list_result(buf, size, items, k, more);
        if (w < 0) {
            rift_free(srv->mem, buf);
            buf = NULL;
        } else {
            *len = (size_t)w;
        }
    }
out:
    for (size_t i = 0; handles != NULL && i < k; i++) {
        rift_consumer_close(handles[i]);
    }
    rift_free(srv->mem, handles);
    rift_free(srv->mem, infos);
    rift_free(srv->mem, items);
    return buf;
}

void rift_srv_consumer_list(srv_stream *ss, const srv_frame *f) {
    rift_error err;
    rift_frame_consumer_list req;
    if (rift_frame_decode_consumer_list(f->fields, f->len, &req, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (req.limit == 0 || req.limit > RIFT_EXT_MAX_LIST) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_LIST_LIMIT);
        return;
    }
    rift_server *srv = ss->conn->srv;
    if (rift_srv_backend_serves(srv, req.stream, req.stream_len) &&
        rift_srv_backend_list(ss, req.stream, req.stream_len, req.after,
                              req.after_len, req.limit)) {
        return; /* a replicated stream: stream_backend_ext.c */
    }
    srv_pin pin;
    rift_stream *st =
        rift_srv_lookup_stream(ss, req.stream, req.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    list_walk w = {
        .id = ss->conn->id,
        .after = req.after,
        .after_len = req.after_len,
        .cap = (size_t)req.limit + 1,
    };
    w.v = rift_calloc(srv->mem, w.cap, sizeof(*w.v));
    if (w.v == NULL) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    if (rift_stream_consumer_each(st, visit, &w, &err) != 0) {
        rift_free(srv->mem, w.v);
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail_err(ss, &err);
        return;
    }
    bool more = w.n > req.limit;
    size_t len = 0;
    uint8_t *buf =
        encode_page(srv, st, w.v, more ? req.limit : w.n, more, &len);
    rift_free(srv->mem, w.v);
    rift_srv_unpin(srv, &pin, false); /* answered synchronously */
    if (buf == NULL) {
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    rift_quic_chunk ch = {buf, len, NULL, NULL}; /* copied by the stream */
    int rc = rift_srv_write(ss, &ch, 1, false);
    rift_free(srv->mem, buf);
    if (rc == 0) {
        rift_srv_finish(ss);
    } else {
        rift_srv_write_failed(ss);
    }
}
