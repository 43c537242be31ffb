/*
 * publish.c — PUBLISH, PUBLISH_ACK and PING on an operation stream of the
 * protocol server (server layer): decode, the literal, payload and ACL
 * checks in the order of §2.9 (skipped for a subject that repeats), the
 * broker publish, and the OK.
 *
 * Reference: docs/protocol-v1.md §2.9 (PUBLISH, PING).
 */
#include "server/handlers.h"
#include "server/stream_record.h"

#include "subject/acl.h"
#include "subject/name.h"

#include <string.h>

static const char text_payload[] = "payload exceeds 1 MiB transport limit";

static void body_release(void *buf) {
    /* Only used with the default allocator (see rift_srv_publish). */
    rift_free(NULL, buf);
}

void rift_srv_publish(srv_stream *ss, const srv_frame *f) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    rift_error err;
    rift_frame_msg m;
    if (rift_frame_decode_msg(f->fields, f->len, &m, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    /* A publisher usually repeats its subject: the last one that passed
     * the literal and ACL checks (without a reply) needs neither again.
     * The payload check sits between them, so it runs either way. */
    bool known = m.reply_len == 0 && m.subject_len == ss->last_subject_len &&
                 m.subject_len > 0 &&
                 memcmp(m.subject, ss->last_subject, m.subject_len) == 0;
    if (!known &&
        (rift_subject_validate_literal(m.subject, m.subject_len, &err) != 0 ||
         (m.reply_len > 0 &&
          rift_subject_validate_literal(m.reply, m.reply_len, &err) != 0))) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (m.payload_len > RIFT_FRAME_MAX_PAYLOAD) {
        rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE, text_payload);
        return;
    }
    if (!known) {
        if (rift_identity_can_publish(c->id, m.subject, m.subject_len, m.reply,
                                      m.reply_len, &err) != 0) {
            rift_srv_fail_err(ss, &err);
            return;
        }
        if (m.reply_len == 0 && m.subject_len <= sizeof(ss->last_subject)) {
            memcpy(ss->last_subject, m.subject, m.subject_len);
            ss->last_subject_len = (uint8_t)m.subject_len;
        }
    }
    int rc;
    rift_publish_report rep = {0, 0, 0};
    if (f->assembled && m.payload_len >= SRV_EXTERNAL_MIN && srv->mem == NULL) {
        /* The body was assembled from several packets into the reader's
         * buffer: that buffer becomes the message payload instead of
         * being copied once more. */
        rift_msg *msg;
        uint8_t *buf = rift_frame_reader_detach(&ss->reader);
        rc = rift_msg_new_external(&msg, NULL, m.subject, m.subject_len,
                                   m.reply, m.reply_len, m.payload,
                                   m.payload_len, body_release, buf, NULL);
        if (rc != 0) {
            rift_free(NULL, buf);
            rift_error_set(&err, rc, "out of memory");
        } else {
            rc = rift_broker_publish_msg(srv->broker, msg, &rep, &err);
            rift_msg_unref(msg);
        }
    } else {
        rc = rift_broker_publish(srv->broker, m.subject, m.subject_len, m.reply,
                                 m.reply_len, m.payload, m.payload_len, &rep,
                                 &err);
    }
    if (rc != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    srv->c.msgs_in++;
    srv->c.bytes_in += m.payload_len;
    /* Somebody got it, maybe one of our subscriptions (see
     * rift_srv_stream_data). */
    srv->drain_count += rep.delivered > 0;
    if (f->opcode == RIFT_OP_PUBLISH_ACK && rift_srv_write_ok(ss, false) != 0) {
        rift_srv_write_failed(ss);
    }
}

void rift_srv_ping(srv_stream *ss, const srv_frame *f) {
    rift_error err;
    if (rift_frame_decode_empty(f->fields, f->len, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (rift_srv_write_ok(ss, false) != 0) {
        rift_srv_write_failed(ss);
    }
}
