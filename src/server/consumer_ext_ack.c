/*
 * consumer_ext_ack.c — the extension opcodes that settle one delivery
 * (server layer): CONSUMER_NAK (23), CONSUMER_TERM (24) and
 * CONSUMER_PROGRESS (25), each a one-shot operation answered OK.
 *
 * Reference: docs/protocol-v1.md "Extensions" E.3. The name is scoped to
 * the connection's identity before anything is looked up (§3.5), so
 * another identity's consumer is "consumer does not exist"; the store
 * calls go through the op record (server/store_op.h), so TERM answers
 * only once it is durable, like ACK.
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext_ack.h"

static int submit(srv_store_op *op, const rift_frame_consumer_settle *f,
                  bool *completed, rift_error *err) {
    rift_consumer *c = op->consumer;
    switch (op->opcode) {
    case RIFT_OP_CONSUMER_NAK:
        return rift_consumer_nak_async(c, f->sequence, f->delay_ms, completed,
                                       rift_srv_op_done_cb, op, err);
    case RIFT_OP_CONSUMER_TERM:
        return rift_consumer_term_async(c, f->sequence, completed,
                                        rift_srv_op_done_cb, op, err);
    default:
        return rift_consumer_in_progress_async(c, f->sequence, completed,
                                               rift_srv_op_done_cb, op, err);
    }
}

void rift_srv_ext_ack_op(srv_stream *ss, const srv_frame *fr) {
    rift_error err;
    rift_frame_consumer_settle f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_consumer_settle(fr->opcode, fr->fields, fr->len,
                                               &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (fr->opcode == RIFT_OP_CONSUMER_NAK &&
        f.delay_ms > RIFT_EXT_MAX_NAK_DELAY_MS) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, RIFT_EXT_ERR_NAK_DELAY);
        return;
    }
    rift_server *srv = ss->conn->srv;
    if (rift_srv_backend_serves(srv, f.stream, f.stream_len) &&
        rift_srv_backend_settle(
            ss, fr->opcode, f.stream, f.stream_len, scoped, f.sequence,
            fr->opcode == RIFT_OP_CONSUMER_NAK ? f.delay_ms : 0)) {
        return;
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    rift_consumer *c;
    if (rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN, &c,
                                 &err) != 0) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail_err(ss, &err);
        return;
    }
    /* The client's own name for the consumer's advisories (max_deliver). */
    (void)rift_consumer_set_label(c, f.name, f.name_len, NULL);
    srv_store_op *op = rift_srv_op_new(ss, fr->opcode);
    if (op == NULL) {
        rift_consumer_close(c);
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin;
    op->consumer = c;
    atomic_fetch_add_explicit(&srv->store_inflight, 1, memory_order_relaxed);
    bool completed = false;
    rc = submit(op, &f, &completed, &err);
    rift_srv_op_submitted(op, rc, completed, &err);
}
