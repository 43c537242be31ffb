/*
 * frame_decode.c — decoders from a frame body to view structs (codec
 * layer), one per body layout of §2.4, plus the opcode dispatcher.
 *
 * A decoder walks a cursor over the fields in wire order and stops at the
 * first failure, which reproduces the original's error precedence. Views
 * point into the input; nothing is copied and nothing is allocated.
 */
#include "codec/field_cursor.h"

#include <string.h>

int rift_frame_take_string(const uint8_t *buf, size_t len, size_t *pos,
                           const char **str, size_t *str_len, rift_error *err) {
    if (*pos > len) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    cursor c = {buf, len, *pos};
    int rc = take_str(&c, str, str_len, err);
    if (rc == 0) {
        *pos = c.pos;
    }
    return rc;
}

/* ---- Per-layout decoders ---- */

int rift_frame_decode_empty(const uint8_t *fields, size_t len,
                            rift_error *err) {
    (void)fields;
    if (len != 0) {
        return fail(err, RIFT_FRAME_ERR_TRAILING);
    }
    return 0;
}

int rift_frame_decode_auth(const uint8_t *fields, size_t len,
                           rift_frame_auth *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_str(&c, &out->token, &out->token_len, err);
    if (rc == 0) {
        rc = take_end(&c, err);
    }
    return rc;
}

int rift_frame_decode_error(const uint8_t *fields, size_t len,
                            rift_frame_error *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_u16(&c, &out->code, err);
    if (rc == 0) {
        rc = take_str(&c, &out->message, &out->message_len, err);
    }
    if (rc == 0) {
        rc = take_end(&c, err);
    }
    return rc;
}

int rift_frame_decode_msg(const uint8_t *fields, size_t len,
                          rift_frame_msg *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_str(&c, &out->subject, &out->subject_len, err);
    if (rc == 0) {
        rc = take_str(&c, &out->reply, &out->reply_len, err);
    }
    if (rc == 0) {
        take_rest(&c, &out->payload, &out->payload_len);
    }
    return rc;
}

int rift_frame_decode_subscribe(const uint8_t *fields, size_t len,
                                rift_frame_subscribe *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_str(&c, &out->pattern, &out->pattern_len, err);
    if (rc == 0) {
        rc = take_str(&c, &out->queue, &out->queue_len, err);
    }
    if (rc == 0) {
        rc = take_end(&c, err);
    }
    return rc;
}

int rift_frame_decode_request(const uint8_t *fields, size_t len,
                              rift_frame_request *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_u32(&c, &out->timeout_ms, err);
    if (rc != 0) {
        return rc;
    }
    out->decoded = 1;
    rc = take_str(&c, &out->subject, &out->subject_len, err);
    if (rc != 0) {
        return rc;
    }
    out->decoded = 2;
    take_rest(&c, &out->payload, &out->payload_len);
    out->decoded = 3;
    return 0;
}

int rift_frame_decode_stream_publish(const uint8_t *fields, size_t len,
                                     rift_frame_stream_publish *out,
                                     rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_str(&c, &out->stream, &out->stream_len, err);
    if (rc == 0) {
        rc = take_str(&c, &out->subject, &out->subject_len, err);
    }
    if (rc == 0) {
        rc = take_str(&c, &out->reply, &out->reply_len, err);
    }
    if (rc == 0) {
        take_rest(&c, &out->payload, &out->payload_len);
    }
    return rc;
}

int rift_frame_decode_stored(const uint8_t *fields, size_t len,
                             rift_frame_stored *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_u64(&c, &out->sequence, err);
    if (rc == 0) {
        rc = take_u64(&c, &out->timestamp_ms, err);
    }
    if (rc == 0) {
        rc = take_end(&c, err);
    }
    return rc;
}

int rift_frame_decode_consumer_open(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_open *out,
                                    rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    if ((rc = take_str(&c, &out->filter, &out->filter_len, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    if ((rc = take_u64(&c, &out->start_sequence, err)) != 0) {
        return rc;
    }
    out->decoded = 4;
    if ((rc = take_u32(&c, &out->ack_wait_ms, err)) != 0) {
        return rc;
    }
    out->decoded = 5;
    if ((rc = take_u32(&c, &out->max_ack_pending, err)) != 0) {
        return rc;
    }
    out->decoded = 6;
    return take_end(&c, err);
}

int rift_frame_decode_consumer_fetch(const uint8_t *fields, size_t len,
                                     rift_frame_consumer_fetch *out,
                                     rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    if ((rc = take_u32(&c, &out->limit, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    return take_end(&c, err);
}

int rift_frame_decode_delivery(const uint8_t *fields, size_t len,
                               rift_frame_delivery *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc = take_u64(&c, &out->sequence, err);
    if (rc == 0) {
        rc = take_u64(&c, &out->timestamp_ms, err);
    }
    if (rc == 0) {
        rc = take_u32(&c, &out->delivery_count, err);
    }
    if (rc == 0) {
        rc = take_str(&c, &out->subject, &out->subject_len, err);
    }
    if (rc == 0) {
        rc = take_str(&c, &out->reply, &out->reply_len, err);
    }
    if (rc == 0) {
        take_rest(&c, &out->payload, &out->payload_len);
    }
    return rc;
}

int rift_frame_decode_ack(const uint8_t *fields, size_t len,
                          rift_frame_ack *out, rift_error *err) {
    cursor c = {fields, len, 0};
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    if ((rc = take_u64(&c, &out->sequence, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    return take_end(&c, err);
}

/* ---- Dispatch ---- */

int rift_frame_decode(const uint8_t *body, size_t len, rift_frame *out,
                      rift_error *err) {
    if (len == 0) {
        out->opcode = 0;
        return fail(err, RIFT_FRAME_ERR_LENGTH);
    }
    const uint8_t *f = body + 1;
    size_t n = len - 1;
    out->opcode = body[0];
    switch (body[0]) {
    case RIFT_OP_AUTH:
        return rift_frame_decode_auth(f, n, &out->auth, err);
    case RIFT_OP_OK:
    case RIFT_OP_PING:
        return rift_frame_decode_empty(f, n, err);
    case RIFT_OP_ERROR:
        return rift_frame_decode_error(f, n, &out->error, err);
    case RIFT_OP_PUBLISH:
    case RIFT_OP_PUBLISH_ACK:
    case RIFT_OP_MESSAGE:
        return rift_frame_decode_msg(f, n, &out->msg, err);
    case RIFT_OP_SUBSCRIBE:
        return rift_frame_decode_subscribe(f, n, &out->subscribe, err);
    case RIFT_OP_REQUEST:
        return rift_frame_decode_request(f, n, &out->request, err);
    case RIFT_OP_STREAM_PUBLISH:
        return rift_frame_decode_stream_publish(f, n, &out->stream_publish,
                                                err);
    case RIFT_OP_STORED:
        return rift_frame_decode_stored(f, n, &out->stored, err);
    case RIFT_OP_CONSUMER_OPEN:
        return rift_frame_decode_consumer_open(f, n, &out->consumer_open, err);
    case RIFT_OP_CONSUMER_FETCH:
        return rift_frame_decode_consumer_fetch(f, n, &out->consumer_fetch,
                                                err);
    case RIFT_OP_DELIVERY:
        return rift_frame_decode_delivery(f, n, &out->delivery, err);
    case RIFT_OP_ACK:
        return rift_frame_decode_ack(f, n, &out->ack, err);
    default:
        return fail(err, RIFT_FRAME_ERR_OPCODE);
    }
}

void rift_frame_payload(const rift_frame *frame, const uint8_t **data,
                        size_t *len) {
    switch (frame->opcode) {
    case RIFT_OP_PUBLISH:
    case RIFT_OP_PUBLISH_ACK:
    case RIFT_OP_MESSAGE:
        *data = frame->msg.payload;
        *len = frame->msg.payload_len;
        return;
    case RIFT_OP_REQUEST:
        *data = frame->request.payload;
        *len = frame->request.payload_len;
        return;
    case RIFT_OP_STREAM_PUBLISH:
        *data = frame->stream_publish.payload;
        *len = frame->stream_publish.payload_len;
        return;
    case RIFT_OP_DELIVERY:
        *data = frame->delivery.payload;
        *len = frame->delivery.payload_len;
        return;
    default:
        *data = NULL;
        *len = 0;
        return;
    }
}
