/*
 * consumer_ext.c — the extension opcodes of the protocol server (server
 * layer): EXT_HELLO (16), CONSUMER_OPEN_EXT (18), CONSUMER_INFO_GET (20)
 * and CONSUMER_DELETE (21), each a one-shot operation on its stream, and
 * the dispatch of the other consumer extensions to their files.
 *
 * Reference: docs/protocol-v1.md, part "Extensions" (E.1 rules, E.3
 * validation order and texts). They act on the same scoped consumers as
 * v1 (§3.5): every name is scoped to the connection's identity before
 * anything is looked up, so another identity's consumer is simply "consumer
 * does not exist". Store calls go through the op record of stream_ops.c
 * (server/store_op.h), so completions, quotas and detaching behave as for
 * the v1 opcodes.
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext.h"
#include "codec/frame_ext_push.h"
#include "codec/frame_ext_stream.h"
#include "subject/acl.h"

#include <string.h>

/* ---- Answers ---- */

void rift_srv_consumer_info_frame(const rift_consumer_info *info,
                                  const char *name, size_t name_len,
                                  bool created, rift_frame_consumer_info *f) {
    *f = (rift_frame_consumer_info){
        .name = name,
        .name_len = name_len,
        .filter = info->config.filter != NULL ? info->config.filter : ">",
        .filter_len = info->config.filter != NULL ? info->config.filter_len : 1,
        .start = (uint8_t)info->config.start,
        .start_value = info->config.start == RIFT_START_SEQUENCE
                           ? info->config.start_sequence
                           : info->config.start_time_ms,
        .ack_wait_ms = (uint32_t)info->config.ack_wait_ms,
        .max_ack_pending = info->config.max_ack_pending,
        .start_sequence = info->start_sequence,
        .next_sequence = info->next_sequence,
        .pending = (uint32_t)RIFT_MIN(info->pending, (size_t)UINT32_MAX),
        .created = created ? 1 : 0,
        .max_deliver = info->config.max_deliver,
        .terminated = info->terminated,
        .max_delivered = info->max_delivered,
    };
}

/* CONSUMER_INFO for |c| under the client's |name|. Returns 0, or nonzero
 * when the stream failed (ERROR written) or the write did not go out (the
 * caller decides how the stream ends then). */
static int write_info(srv_stream *ss, rift_consumer *c, const char *name,
                      size_t name_len, bool created) {
    rift_error err;
    rift_consumer_info info;
    if (rift_consumer_get_info(c, &info, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return err.code;
    }
    return rift_srv_write_consumer_info(ss, &info, name, name_len, created);
}

int rift_srv_write_consumer_info(srv_stream *ss, const rift_consumer_info *info,
                                 const char *name, size_t name_len,
                                 bool created) {
    rift_frame_consumer_info f;
    rift_srv_consumer_info_frame(info, name, name_len, created, &f);
    rift_server *srv = ss->conn->srv;
    rift_ssize n =
        rift_frame_encode_consumer_info(srv->scratch, SRV_SCRATCH_BYTES, &f);
    if (n < 0) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "consumer info does not fit");
        return (int)n;
    }
    rift_quic_chunk ch = {srv->scratch, (size_t)n, NULL, NULL};
    return rift_srv_write(ss, &ch, 1, false);
}

static void open_answer(srv_stream *ss, srv_store_op *op) {
    /* The client's own name for the consumer's advisories (max_deliver). */
    (void)rift_consumer_set_label(op->consumer, op->names->name,
                                  op->names->name_len, NULL);
    /* complete() finishes the stream whatever came of the write. */
    (void)write_info(ss, op->consumer, op->names->name, op->names->name_len,
                     op->created);
}

static void delete_answer(srv_stream *ss, srv_store_op *op) {
    (void)op;
    (void)rift_srv_write_ok(ss, false);
}

/* ---- Opcodes ---- */

static void ext_hello(srv_stream *ss, const uint8_t *fields, size_t len) {
    (void)fields;
    if (len != 0) {
        rift_srv_fail(ss, RIFT_ERR_PROTOCOL, RIFT_FRAME_ERR_TRAILING);
        return;
    }
    static const char base[] = RIFT_EXT_FEATURES
        " " RIFT_EXT_FEATURE_STREAM_INFO " " RIFT_EXT_FEATURE_PUSH;
    static const char admin[] = RIFT_EXT_FEATURES
        " " RIFT_EXT_FEATURE_STREAM_INFO " " RIFT_EXT_FEATURE_PUSH
        " " RIFT_EXT_FEATURES_STREAM_ADMIN;
    const char *features =
        rift_srv_stream_admin_offered(ss->conn->srv) ? admin : base;
    uint8_t buf[256];
    rift_ssize n = rift_frame_encode_ext_info(
        buf, sizeof(buf), RIFT_EXT_VERSION, features, strlen(features));
    rift_quic_chunk ch = {buf, (size_t)n, NULL, NULL};
    if (rift_srv_write(ss, &ch, 1, false) != 0) {
        rift_srv_write_failed(ss);
        return;
    }
    rift_srv_finish(ss);
}

/* The start position's own checks (E.3 CONSUMER_OPEN_EXT 2). */
static int check_start(const rift_frame_consumer_open_ext *f, rift_error *err) {
    if (f->start > RIFT_START_TIME_DELTA) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_START);
    }
    if (f->start == RIFT_START_SEQUENCE && f->start_value == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_START_SEQ);
    }
    if ((f->start == RIFT_START_FIRST || f->start == RIFT_START_LAST_RECEIVED ||
         f->start == RIFT_START_NEW_ONLY) &&
        f->start_value != 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_START_VALUE);
    }
    return 0;
}

static void consumer_open_ext(srv_stream *ss, const uint8_t *fields,
                              size_t len) {
    rift_error err;
    rift_frame_consumer_open_ext f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    int rc = rift_frame_decode_consumer_open_ext(fields, len, &f, &err);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, rc, &err,
                            scoped) != 0) {
        return;
    }
    if (f.filter_len == 0) {
        f.filter = ">";
        f.filter_len = 1;
    }
    if (check_start(&f, &err) != 0 ||
        rift_identity_can_subscribe(ss->conn->id, f.filter, f.filter_len,
                                    &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (f.ack_wait_ms == 0 || f.ack_wait_ms > 3600000 ||
        f.max_ack_pending == 0 || f.max_ack_pending > 65536) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, "invalid consumer limits");
        return;
    }
    rift_server *srv = ss->conn->srv;
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = f.filter;
    cfg.filter_len = f.filter_len;
    cfg.start = (rift_consumer_start)f.start;
    if (cfg.start == RIFT_START_SEQUENCE) {
        cfg.start_sequence = f.start_value;
    } else {
        cfg.start_time_ms = f.start_value;
    }
    cfg.ack_wait_ms = f.ack_wait_ms;
    cfg.max_ack_pending = f.max_ack_pending;
    cfg.max_deliver = f.max_deliver;
    if (rift_srv_backend_serves(srv, f.stream, f.stream_len)) {
        /* A replicated stream: JetStream's durable (stream_backend.c). */
        rift_srv_backend_open(ss, f.stream, f.stream_len, scoped, f.name,
                              f.name_len, &cfg, true);
        return;
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }

    size_t slot = srv->quota_slots[ss->conn->id_index];
    rift_consumer *existing = NULL;
    bool counted = false;
    if (rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN,
                                 &existing, NULL) == 0) {
        /* A resume: the start is ignored (as NATS Streaming does), the
         * rest must match, and the open then passes the stored start so
         * the store sees the same configuration. */
        rift_consumer_info info;
        if (rift_consumer_get_info(existing, &info, &err) != 0) {
            rift_consumer_close(existing);
            rift_srv_unpin(srv, &pin, false);
            rift_srv_fail_err(ss, &err);
            return;
        }
        const char *field =
            rift_consumer_config_diff(&info.config, &cfg, false);
        if (field != NULL) {
            rift_consumer_close(existing);
            rift_error_set(&err, RIFT_ERR_INVALID_CONFIG,
                           "invalid messaging configuration: consumer already "
                           "exists with different %s",
                           field);
            rift_srv_unpin(srv, &pin, false);
            rift_srv_fail_err(ss, &err);
            return;
        }
        cfg.start = info.config.start;
        cfg.start_sequence = info.config.start_sequence;
        cfg.start_time_ms = info.config.start_time_ms;
    } else if (srv->quota != NULL) {
        /* Only a consumer this open creates counts against the share. */
        if (rift_quota_take(srv->quota, slot, RIFT_QUOTA_CONSUMERS, &err) !=
            0) {
            rift_srv_unpin(srv, &pin, false);
            rift_srv_fail_err(ss, &err);
            return;
        }
        counted = true;
    }
    srv_store_op *op = rift_srv_op_new(ss, RIFT_OP_CONSUMER_OPEN_EXT);
    if (op == NULL) {
        rift_consumer_close(existing);
        if (counted) {
            rift_quota_give(srv->quota, slot, RIFT_QUOTA_CONSUMERS);
        }
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin;
    op->quota_consumer = counted;
    op->quota_slot = slot;
    op->answer = open_answer;
    op->created = existing == NULL;
    srv_op_names *nm = rift_srv_op_names(op);
    if (nm == NULL) {
        rift_consumer_close(existing);
        op->status = RIFT_ERR_NOMEM; /* op_free gives the quota unit back */
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory"); /* frees op */
        return;
    }
    memcpy(nm->name, f.name, f.name_len);
    nm->name_len = f.name_len;
    atomic_fetch_add_explicit(&srv->store_inflight, 1, memory_order_relaxed);
    bool completed = false;
    rc = rift_stream_consumer_open_async(st, scoped, RIFT_SCOPED_CONSUMER_LEN,
                                         &cfg, &op->consumer, &completed,
                                         rift_srv_op_done_cb, op, &err);
    /* The stored filter was only borrowed until the open copied it. */
    rift_consumer_close(existing);
    rift_srv_op_submitted(op, rc, completed, &err);
}

static void consumer_info_get(srv_stream *ss, const uint8_t *fields,
                              size_t len) {
    rift_frame_consumer_ref f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    rift_server *srv = ss->conn->srv;
    rift_error derr;
    int drc = rift_frame_decode_consumer_ref(fields, len, &f, &derr);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, drc, &derr,
                            scoped) != 0) {
        return;
    }
    if (rift_srv_backend_serves(srv, f.stream, f.stream_len) &&
        rift_srv_backend_info(ss, f.stream, f.stream_len, scoped, f.name,
                              f.name_len)) {
        return; /* a replicated stream: JetStream's consumer info */
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    rift_error err;
    rift_consumer *c;
    if (rift_stream_consumer_get(st, scoped, RIFT_SCOPED_CONSUMER_LEN, &c,
                                 &err) != 0) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail_err(ss, &err);
        return;
    }
    int rc = write_info(ss, c, f.name, f.name_len, false);
    rift_consumer_close(c);
    rift_srv_unpin(srv, &pin, false); /* answered synchronously */
    if (rc == 0) {
        rift_srv_finish(ss);
    } else if (ss->state == SS_OPS) {
        rift_srv_write_failed(ss);
    }
}

static void consumer_delete(srv_stream *ss, const uint8_t *fields, size_t len) {
    rift_frame_consumer_ref f;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    rift_error derr;
    int drc = rift_frame_decode_consumer_ref(fields, len, &f, &derr);
    if (rift_srv_scope_name(ss, f.decoded, f.name, f.name_len, drc, &derr,
                            scoped) != 0) {
        return;
    }
    rift_server *srv = ss->conn->srv;
    if (rift_srv_backend_serves(srv, f.stream, f.stream_len) &&
        rift_srv_backend_delete(ss, f.stream, f.stream_len, scoped)) {
        return; /* a replicated stream: JetStream's consumer */
    }
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, f.stream, f.stream_len, &pin);
    if (st == NULL) {
        return;
    }
    srv_store_op *op = rift_srv_op_new(ss, RIFT_OP_CONSUMER_DELETE);
    if (op == NULL) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_NOMEM, "out of memory");
        return;
    }
    op->pin = pin; /* released when the op is freed */
    op->answer = delete_answer;
    op->quota_release = true;
    op->quota_slot = srv->quota_slots[ss->conn->id_index];
    atomic_fetch_add_explicit(&srv->store_inflight, 1, memory_order_relaxed);
    rift_error err;
    bool completed = false;
    int rc = rift_stream_consumer_delete_async(
        st, scoped, RIFT_SCOPED_CONSUMER_LEN, &completed, rift_srv_op_done_cb,
        op, &err);
    rift_srv_op_submitted(op, rc, completed, &err);
}

void rift_srv_ext_op(srv_stream *ss, const srv_frame *f) {
    if (rift_ext_stream_opcode_client(f->opcode)) {
        rift_srv_stream_ext(ss, f); /* stream_ext.c */
        return;
    }
    if (rift_ext_push_opcode(f->opcode)) {
        rift_srv_push_op(ss, f); /* push_stream.c */
        return;
    }
    switch (f->opcode) {
    case RIFT_OP_EXT_HELLO:
        ext_hello(ss, f->fields, f->len);
        break;
    case RIFT_OP_CONSUMER_OPEN_EXT:
        consumer_open_ext(ss, f->fields, f->len);
        break;
    case RIFT_OP_CONSUMER_INFO_GET:
        consumer_info_get(ss, f->fields, f->len);
        break;
    case RIFT_OP_CONSUMER_FETCH_WAIT:
        rift_srv_fetch_wait(ss, f); /* stream_ops.c: the fetch machinery */
        break;
    case RIFT_OP_CONSUMER_LIST:
        rift_srv_consumer_list(ss, f); /* consumer_ext_list.c */
        break;
    case RIFT_OP_CONSUMER_NAK:
    case RIFT_OP_CONSUMER_TERM:
    case RIFT_OP_CONSUMER_PROGRESS:
        rift_srv_ext_ack_op(ss, f); /* consumer_ext_ack.c */
        break;
    default:
        consumer_delete(ss, f->fields, f->len);
        break;
    }
}
