/*
 * stream_backend_ext.c — the extension opcodes that read or purge a stream
 * of the host's stream backend (server layer; rift_server_stream_backend
 * in include/rift/server.h): CONSUMER_INFO_GET, CONSUMER_LIST,
 * STREAM_INFO_GET and STREAM_PURGE on riftd's replicated streams.
 *
 * Each is a backend op (stream_backend.c): submitted here, answered by
 * the op's |answer| once the backend completed, on the loop thread. The
 * answers go through the same frame builders as a store stream's, and
 * the same identity rules: CONSUMER_LIST keeps the consumers whose label
 * scopes (§3.5) back to their stored name under the caller's identity,
 * STREAM_INFO_GET answers "unknown stream" to an identity that may not
 * subscribe to every subject of the stream (also when the backend
 * failed: its spec is filled before the call returns).
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext.h"
#include "codec/frame_ext_stream.h"
#include "subject/acl.h"

#include <string.h>

/* ---- CONSUMER_INFO_GET ---- */

static void info_answer(srv_stream *ss, srv_store_op *op) {
    const rift_server_backend_consumer *c = op->backend_out;
    (void)rift_srv_write_consumer_info(ss, &c->info, op->names->name,
                                       op->names->name_len, false);
}

/* The op of a backend call that fills |size| bytes of the server's, or
 * NULL after failing |ss| (nothing counted in flight then). */
static srv_store_op *out_op(srv_stream *ss, uint8_t opcode, const char *stream,
                            size_t stream_len, const char *scoped,
                            size_t size) {
    srv_store_op *op =
        rift_srv_backend_op(ss, opcode, stream, stream_len, scoped);
    if (op == NULL) {
        return NULL;
    }
    op->backend_out = size > 0 ? rift_calloc(op->srv->mem, 1, size) : NULL;
    if (size > 0 && op->backend_out == NULL) {
        atomic_fetch_sub_explicit(&op->srv->store_inflight, 1,
                                  memory_order_relaxed);
        op->status = RIFT_ERR_NOMEM;
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory"); /* frees op */
        return NULL;
    }
    return op;
}

bool rift_srv_backend_info(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *scoped,
                           const char *name, size_t name_len) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->consumer_info == NULL) {
        return false;
    }
    srv_store_op *op = out_op(ss, RIFT_OP_CONSUMER_INFO_GET, stream, stream_len,
                              scoped, sizeof(rift_server_backend_consumer));
    if (op == NULL) {
        return true;
    }
    op->answer = info_answer;
    op->names->name_len = RIFT_MIN(name_len, (size_t)RIFT_NAME_MAX);
    memcpy(op->names->name, name, op->names->name_len);
    rift_error err = {0};
    int rc = b->consumer_info(b->ud, op->names->stream, op->names->stream_len,
                              op->names->scoped, RIFT_SCOPED_CONSUMER_LEN,
                              op->backend_out, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}

/* ---- CONSUMER_LIST ---- */

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    int r = memcmp(a, b, RIFT_MIN(alen, blen));
    if (r != 0) {
        return r;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Whether |c| is the identity's: its label scopes back to its name. */
static bool owned(const rift_identity *id,
                  const rift_server_backend_consumer *c) {
    if (c->label_len == 0 || c->label_len > RIFT_NAME_MAX ||
        strlen(c->name) != RIFT_SCOPED_CONSUMER_LEN) {
        return false;
    }
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    return rift_identity_consumer_name(id, c->label, c->label_len, scoped,
                                       NULL) == 0 &&
           memcmp(scoped, c->name, RIFT_SCOPED_CONSUMER_LEN) == 0;
}

/* The page: the identity's consumers after |after| by label, sorted, at
 * most |limit| (one more tells whether more remain). */
static void list_answer(srv_stream *ss, srv_store_op *op) {
    rift_server *srv = op->srv;
    const char *after = op->names->name;
    size_t after_len = op->names->name_len;
    size_t limit = op->left;
    const rift_server_backend_consumer **v =
        rift_calloc(srv->mem, limit + 1, sizeof(*v));
    rift_frame_consumer_info *items =
        rift_calloc(srv->mem, limit + 1, sizeof(*items));
    uint8_t *buf = NULL;
    if (v == NULL || items == NULL) {
        goto nomem;
    }
    size_t n = 0;
    for (size_t i = 0; i < op->backend_count; i++) {
        const rift_server_backend_consumer *c = &op->backend_list[i];
        if (!owned(ss->conn->id, c) ||
            name_cmp(c->label, c->label_len, after, after_len) <= 0) {
            continue;
        }
        if (n == limit + 1 && name_cmp(c->label, c->label_len, v[n - 1]->label,
                                       v[n - 1]->label_len) >= 0) {
            continue; /* beyond the page */
        }
        size_t k = n < limit + 1 ? n : limit;
        while (k > 0 && name_cmp(c->label, c->label_len, v[k - 1]->label,
                                 v[k - 1]->label_len) < 0) {
            v[k] = v[k - 1];
            k--;
        }
        v[k] = c;
        if (n < limit + 1) {
            n++;
        }
    }
    bool more = n > limit;
    n = RIFT_MIN(n, limit);
    size_t size = RIFT_FRAME_PREFIX_BYTES + 1 + 4 + 1;
    for (size_t i = 0; i < n; i++) {
        rift_srv_consumer_info_frame(&v[i]->info, v[i]->label, v[i]->label_len,
                                     false, &items[i]);
        size += rift_frame_consumer_info_size(&items[i]);
    }
    buf = rift_malloc(srv->mem, size);
    rift_ssize w =
        buf != NULL
            ? rift_frame_encode_consumer_list_result(buf, size, items, n, more)
            : -1;
    if (w < 0) {
        goto nomem;
    }
    rift_quic_chunk ch = {buf, (size_t)w, NULL, NULL}; /* copied */
    (void)rift_srv_write(ss, &ch, 1, false);
    rift_free(srv->mem, buf);
    rift_free(srv->mem, v);
    rift_free(srv->mem, items);
    return;
nomem:
    rift_free(srv->mem, buf);
    rift_free(srv->mem, v);
    rift_free(srv->mem, items);
    rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
}

bool rift_srv_backend_list(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *after,
                           size_t after_len, uint32_t limit) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->consumer_list == NULL) {
        return false;
    }
    srv_store_op *op =
        out_op(ss, RIFT_OP_CONSUMER_LIST, stream, stream_len, NULL, 0);
    if (op == NULL) {
        return true;
    }
    op->answer = list_answer;
    op->left = limit;
    op->names->name_len = RIFT_MIN(after_len, (size_t)RIFT_NAME_MAX);
    if (after_len > 0) {
        memcpy(op->names->name, after, op->names->name_len);
    }
    rift_error err = {0};
    int rc = b->consumer_list(b->ud, op->names->stream, op->names->stream_len,
                              &op->backend_list, &op->backend_count,
                              rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}

/* ---- STREAM_INFO_GET ---- */

/* Whether |id| may subscribe to every pattern of |subjects| (space-
 * separated). */
static bool may_read(const rift_identity *id, const char *subjects,
                     size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && subjects[j] != ' ') {
            j++;
        }
        if (j > i &&
            rift_identity_can_subscribe(id, subjects + i, j - i, NULL) != 0) {
            return false;
        }
        i = j + 1;
    }
    return len > 0;
}

static bool info_readable(srv_stream *ss, srv_store_op *op) {
    const rift_server_backend_stream_info *in = op->backend_out;
    size_t sn = RIFT_MIN(in->subjects_len, sizeof(in->subjects) - 1);
    return may_read(ss->conn->id, in->subjects, sn);
}

/* A failure (the backbone down) tells only an identity that may read the
 * stream: to the others the stream is unknown, as when it is there. */
static void stream_info_fail(srv_stream *ss, srv_store_op *op) {
    if (!info_readable(ss, op)) {
        rift_srv_fail(ss, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
        return;
    }
    rift_error err;
    if (op->err != NULL) {
        rift_error_copy(&err, op->err);
    } else {
        rift_error_set(&err, op->status, "%s", rift_strerror(op->status));
    }
    rift_srv_fail(ss, err.code ? err.code : op->status, err.text);
}

static void stream_info_answer(srv_stream *ss, srv_store_op *op) {
    const rift_server_backend_stream_info *in = op->backend_out;
    size_t sn = RIFT_MIN(in->subjects_len, sizeof(in->subjects) - 1);
    if (!info_readable(ss, op)) {
        rift_srv_fail(ss, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
        return;
    }
    rift_frame_stream_info f = {
        .spec =
            {
                .stream = op->names->stream,
                .stream_len = op->names->stream_len,
                .subjects = in->subjects,
                .subjects_len = sn,
                .storage = RIFT_EXT_STORAGE_FILE,
                .max_messages = in->max_messages,
                .max_bytes = in->max_bytes,
                .max_age_ms = in->max_age_ms,
                .max_payload_bytes = in->max_payload_bytes,
                .max_consumers = in->max_consumers,
            },
        .messages = in->messages,
        .bytes = in->bytes,
        .first_sequence = in->first_sequence,
        .last_sequence = in->last_sequence,
        .consumers = in->consumers,
        .runtime = 0, /* configured in riftd's file */
    };
    rift_server *srv = op->srv;
    rift_ssize n =
        rift_frame_encode_stream_info(srv->scratch, SRV_SCRATCH_BYTES, &f);
    if (n < 0) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "stream info does not fit");
        return;
    }
    rift_quic_chunk ch = {srv->scratch, (size_t)n, NULL, NULL};
    (void)rift_srv_write(ss, &ch, 1, false);
}

bool rift_srv_backend_stream_info(srv_stream *ss, const char *stream,
                                  size_t stream_len) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->stream_info == NULL) {
        return false;
    }
    srv_store_op *op = out_op(ss, RIFT_OP_STREAM_INFO_GET, stream, stream_len,
                              NULL, sizeof(rift_server_backend_stream_info));
    if (op == NULL) {
        return true;
    }
    op->answer = stream_info_answer;
    op->fail_answer = stream_info_fail;
    rift_error err = {0};
    int rc = b->stream_info(b->ud, op->names->stream, op->names->stream_len,
                            op->backend_out, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}

/* ---- STREAM_PURGE ---- */

static void purge_answer(srv_stream *ss, srv_store_op *op) {
    (void)op; /* the backend logs what it purged */
    (void)rift_srv_write_ok(ss, false);
}

bool rift_srv_backend_purge(srv_stream *ss, const char *stream,
                            size_t stream_len) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->purge == NULL) {
        return false;
    }
    srv_store_op *op =
        out_op(ss, RIFT_OP_STREAM_PURGE, stream, stream_len, NULL, 0);
    if (op == NULL) {
        return true;
    }
    op->answer = purge_answer;
    rift_error err = {0};
    int rc = b->purge(b->ud, op->names->stream, op->names->stream_len,
                      &op->purged, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}
