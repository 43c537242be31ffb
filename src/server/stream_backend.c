/*
 * stream_backend.c — the stream opcodes on streams of the host's stream
 * backend (server layer; rift_server_stream_backend in
 * include/rift/server.h): riftd's replicated streams, which live in a
 * NATS JetStream cluster rather than in a rift_stream.
 *
 * stream_ops.c validates each frame and checks permissions exactly as for
 * a store stream, then hands a backend stream's operation here. The
 * operation is the same store-op record (store_op.h): the backend's
 * completion is the store's done callback, posted back to the loop, so
 * STORED, OK, DELIVERY frames and the error path are written by the same
 * code. A backend call blocks on the network, which is why it only
 * submits here and completes on the backend's own thread.
 */
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext.h"

#include <string.h>

bool rift_srv_backend_serves(const rift_server *srv, const char *name,
                             size_t len) {
    const rift_server_stream_backend *b = &srv->stream_backend;
    return b->serves != NULL && b->serves(b->ud, name, len);
}

srv_store_op *rift_srv_backend_op(srv_stream *ss, uint8_t opcode,
                                  const char *stream, size_t stream_len,
                                  const char *scoped) {
    srv_store_op *op = rift_srv_op_new(ss, opcode);
    if (op == NULL) {
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    op->backend = true;
    srv_op_names *nm = rift_srv_op_names(op);
    if (nm == NULL) {
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory"); /* frees op */
        return NULL;
    }
    /* The frame decoder bounds stream names to RIFT_NAME_MAX. */
    nm->stream_len = RIFT_MIN(stream_len, (size_t)RIFT_NAME_MAX);
    memcpy(nm->stream, stream, nm->stream_len);
    if (scoped != NULL) {
        memcpy(nm->scoped, scoped, RIFT_SCOPED_CONSUMER_SIZE);
    }
    atomic_fetch_add_explicit(&op->srv->store_inflight, 1,
                              memory_order_relaxed);
    return op;
}

void rift_srv_backend_publish(srv_stream *ss, const char *stream,
                              size_t stream_len, const char *subject,
                              size_t subject_len, const char *reply,
                              size_t reply_len, const uint8_t *payload,
                              size_t payload_len) {
    srv_store_op *op = rift_srv_backend_op(ss, RIFT_OP_STREAM_PUBLISH, stream,
                                           stream_len, NULL);
    if (op == NULL) {
        return;
    }
    op->payload_len = payload_len;
    const rift_server_stream_backend *b = &op->srv->stream_backend;
    rift_error err = {0};
    int rc =
        b->publish(b->ud, op->names->stream, op->names->stream_len, subject,
                   subject_len, reply, reply_len, payload, payload_len,
                   &op->stored, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
}

/* A reopen made nothing: the unit taken for the open goes back. */
static void open_settle_quota(srv_store_op *op) {
    const rift_server_backend_consumer *c = op->backend_out;
    if (op->quota_consumer && !c->created) {
        rift_quota_give(op->srv->quota, op->quota_slot, RIFT_QUOTA_CONSUMERS);
        op->quota_consumer = false;
    }
}

/* CONSUMER_OPEN's answer: OK. */
static void open_answer(srv_stream *ss, srv_store_op *op) {
    open_settle_quota(op);
    (void)rift_srv_write_ok(ss, false);
}

/* CONSUMER_OPEN_EXT's answer: the consumer's info under the client's
 * name (complete() finishes the stream whatever came of the write). */
static void open_ext_answer(srv_stream *ss, srv_store_op *op) {
    open_settle_quota(op);
    const rift_server_backend_consumer *c = op->backend_out;
    (void)rift_srv_write_consumer_info(ss, &c->info, op->names->name,
                                       op->names->name_len, c->created);
}

/* An open the quota allowed only for an existing consumer found none:
 * the refusal is the quota's, as on a store stream. */
static void open_fail(srv_stream *ss, srv_store_op *op) {
    rift_error err;
    if (op->status == RIFT_ERR_CONSUMER_NOT_FOUND) {
        (void)rift_quota_refusal(RIFT_QUOTA_CONSUMERS, &err);
    } else if (op->err != NULL) {
        rift_error_copy(&err, op->err);
    } else {
        rift_error_set(&err, op->status, "%s", rift_strerror(op->status));
    }
    rift_srv_fail(ss, err.code ? err.code : op->status, err.text);
}

void rift_srv_backend_open(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *scoped,
                           const char *name, size_t name_len,
                           const rift_consumer_config *cfg, bool ext) {
    srv_store_op *op = rift_srv_backend_op(
        ss, ext ? RIFT_OP_CONSUMER_OPEN_EXT : RIFT_OP_CONSUMER_OPEN, stream,
        stream_len, scoped);
    if (op == NULL) {
        return;
    }
    rift_server *srv = op->srv;
    rift_server_backend_consumer *out = rift_calloc(srv->mem, 1, sizeof(*out));
    if (out == NULL) {
        atomic_fetch_sub_explicit(&srv->store_inflight, 1,
                                  memory_order_relaxed);
        op->status = RIFT_ERR_NOMEM;
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory"); /* frees op */
        return;
    }
    op->backend_out = out;
    op->answer = ext ? open_ext_answer : open_answer;
    unsigned flags = ext ? RIFT_SERVER_BACKEND_OPEN_EXT : 0;
    if (srv->quota != NULL) {
        /* Whether the open makes the consumer is the backend's to tell:
         * take the unit now, give it back if it made nothing (or failed,
         * op_free); without one only an existing consumer opens. */
        size_t slot = srv->quota_slots[ss->conn->id_index];
        rift_error qerr;
        if (rift_quota_take(srv->quota, slot, RIFT_QUOTA_CONSUMERS, &qerr) ==
            0) {
            op->quota_consumer = true;
            op->quota_slot = slot;
        } else {
            flags |= RIFT_SERVER_BACKEND_OPEN_EXISTING;
            op->fail_answer = open_fail;
        }
    }
    /* The frame decoder bounds consumer names to RIFT_NAME_MAX. */
    op->names->name_len = RIFT_MIN(name_len, (size_t)RIFT_NAME_MAX);
    memcpy(op->names->name, name, op->names->name_len);
    const rift_server_stream_backend *b = &srv->stream_backend;
    rift_error err = {0};
    int rc = b->consumer_open(b->ud, op->names->stream, op->names->stream_len,
                              op->names->scoped, RIFT_SCOPED_CONSUMER_LEN,
                              op->names->name, op->names->name_len, cfg, flags,
                              out, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
}

void rift_srv_backend_ack(srv_stream *ss, const char *stream, size_t stream_len,
                          const char *scoped, uint64_t sequence) {
    srv_store_op *op =
        rift_srv_backend_op(ss, RIFT_OP_ACK, stream, stream_len, scoped);
    if (op == NULL) {
        return;
    }
    const rift_server_stream_backend *b = &op->srv->stream_backend;
    rift_error err = {0};
    int rc = b->ack(b->ud, op->names->stream, op->names->stream_len,
                    op->names->scoped, RIFT_SCOPED_CONSUMER_LEN, sequence,
                    rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
}

bool rift_srv_backend_settle(srv_stream *ss, uint8_t opcode, const char *stream,
                             size_t stream_len, const char *scoped,
                             uint64_t sequence, uint64_t delay_ms) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->settle == NULL) {
        return false;
    }
    srv_store_op *op =
        rift_srv_backend_op(ss, opcode, stream, stream_len, scoped);
    if (op == NULL) {
        return true;
    }
    rift_error err = {0};
    int rc = b->settle(b->ud, op->names->stream, op->names->stream_len,
                       op->names->scoped, RIFT_SCOPED_CONSUMER_LEN, opcode,
                       sequence, delay_ms, rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}

bool rift_srv_backend_delete(srv_stream *ss, const char *stream,
                             size_t stream_len, const char *scoped) {
    const rift_server_stream_backend *b = &ss->conn->srv->stream_backend;
    if (b->consumer_delete == NULL) {
        return false;
    }
    srv_store_op *op = rift_srv_backend_op(ss, RIFT_OP_CONSUMER_DELETE, stream,
                                           stream_len, scoped);
    if (op == NULL) {
        return true;
    }
    /* As on a store stream (consumer_ext.c): a delete gives a unit back. */
    op->quota_release = true;
    op->quota_slot = ss->conn->srv->quota_slots[ss->conn->id_index];
    rift_error err = {0};
    int rc = b->consumer_delete(b->ud, op->names->stream, op->names->stream_len,
                                op->names->scoped, RIFT_SCOPED_CONSUMER_LEN,
                                rift_srv_op_done_cb, op, &err);
    rift_srv_op_submitted(op, rc, false, &err);
    return true;
}

srv_store_op *rift_srv_backend_fetch_op(srv_stream *ss, const char *stream,
                                        size_t stream_len, const char *scoped,
                                        uint32_t limit, uint32_t wait_ms) {
    srv_store_op *op = rift_srv_backend_op(ss, RIFT_OP_CONSUMER_FETCH, stream,
                                           stream_len, scoped);
    if (op == NULL) {
        return NULL;
    }
    /* Each portion counts itself in fetch_submit. */
    atomic_fetch_sub_explicit(&op->srv->store_inflight, 1,
                              memory_order_relaxed);
    op->left = limit;
    op->more = true; /* nothing loaded yet: the first portion */
    op->backend_wait_ms = wait_ms;
    return op;
}

int rift_srv_backend_fetch(srv_store_op *op, srv_portion *p, rift_error *err) {
    const rift_server_stream_backend *b = &op->srv->stream_backend;
    uint32_t wait_ms = op->backend_wait_ms;
    op->backend_wait_ms = 0; /* the later portions take what is there */
    return b->fetch(b->ud, op->names->stream, op->names->stream_len,
                    op->names->scoped, RIFT_SCOPED_CONSUMER_LEN, op->left,
                    SRV_FETCH_BYTES, wait_ms, &p->batch, &p->backend_priv,
                    rift_srv_op_done_cb, op, err);
}

void rift_srv_backend_batch_free(rift_server *srv, srv_portion *p) {
    const rift_server_stream_backend *b = &srv->stream_backend;
    b->batch_free(b->ud, p->backend_priv);
    p->backend_priv = NULL;
    p->batch.count = 0;
    p->batch.items = NULL;
}
