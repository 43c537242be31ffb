/*
 * frame_encode.c — frame header encoders (codec layer), one per body
 * layout of §2.4.
 *
 * Every layout is "fixed fields, strings, fixed fields, payload", so one
 * inline routine writes them all: it checks the string lengths, the room
 * in the caller's buffer and the body limit before writing a byte, then
 * emits the length prefix, opcode, leading fixed bytes, strings and
 * trailing fixed bytes. The payload itself is only counted.
 */
#include "codec/frame.h"
#include "codec/wire.h"

#include <string.h>

typedef struct str_arg {
    const char *s;
    size_t n;
} str_arg;

static inline rift_ssize encode(uint8_t *buf, size_t cap, uint8_t opcode,
                                const uint8_t *pre, size_t pre_len,
                                const str_arg *strs, size_t nstr,
                                const uint8_t *post, size_t post_len,
                                size_t payload_len) {
    size_t hdr = RIFT_FRAME_PREFIX_BYTES + 1 + pre_len + post_len;
    for (size_t i = 0; i < nstr; i++) {
        if (strs[i].n > RIFT_FRAME_MAX_STRING ||
            (strs[i].s == NULL && strs[i].n != 0)) {
            return RIFT_ERR_INVALID_ARGUMENT;
        }
        hdr += 2 + strs[i].n;
    }
    if (buf == NULL || cap < hdr) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    /* hdr is at most RIFT_FRAME_HEADER_MAX, far below the body limit, so
     * the subtraction below cannot wrap. */
    size_t body_fixed = hdr - RIFT_FRAME_PREFIX_BYTES;
    if (payload_len > RIFT_FRAME_MAX_BYTES - body_fixed) {
        return RIFT_ERR_PAYLOAD_TOO_LARGE;
    }
    uint8_t *p = buf;
    rift_be32_store(p, (uint32_t)(body_fixed + payload_len));
    p[4] = opcode;
    p += 5;
    if (pre_len > 0) {
        memcpy(p, pre, pre_len);
        p += pre_len;
    }
    for (size_t i = 0; i < nstr; i++) {
        rift_be16_store(p, (uint16_t)strs[i].n);
        if (strs[i].n > 0) {
            memcpy(p + 2, strs[i].s, strs[i].n);
        }
        p += 2 + strs[i].n;
    }
    if (post_len > 0) {
        memcpy(p, post, post_len);
    }
    return (rift_ssize)hdr;
}

/* ---- Frames without strings ---- */

rift_ssize rift_frame_encode_ok(uint8_t *buf, size_t cap) {
    return encode(buf, cap, RIFT_OP_OK, NULL, 0, NULL, 0, NULL, 0, 0);
}

rift_ssize rift_frame_encode_ping(uint8_t *buf, size_t cap) {
    return encode(buf, cap, RIFT_OP_PING, NULL, 0, NULL, 0, NULL, 0, 0);
}

rift_ssize rift_frame_encode_stored(uint8_t *buf, size_t cap, uint64_t sequence,
                                    uint64_t timestamp_ms) {
    uint8_t pre[16];
    rift_be64_store(pre, sequence);
    rift_be64_store(pre + 8, timestamp_ms);
    return encode(buf, cap, RIFT_OP_STORED, pre, sizeof(pre), NULL, 0, NULL, 0,
                  0);
}

/* ---- Frames with strings ---- */

rift_ssize rift_frame_encode_auth(uint8_t *buf, size_t cap, const char *token,
                                  size_t token_len) {
    str_arg s[1] = {{token, token_len}};
    return encode(buf, cap, RIFT_OP_AUTH, NULL, 0, s, 1, NULL, 0, 0);
}

rift_ssize rift_frame_encode_error(uint8_t *buf, size_t cap, uint16_t code,
                                   const char *message, size_t message_len) {
    uint8_t pre[2];
    rift_be16_store(pre, code);
    /* §2.5: keep the characters that end by byte 1,024. */
    str_arg s[1] = {{message, rift_text_cut(message, message_len,
                                            RIFT_FRAME_ERROR_TEXT_MAX)}};
    return encode(buf, cap, RIFT_OP_ERROR, pre, sizeof(pre), s, 1, NULL, 0, 0);
}

rift_ssize rift_frame_encode_msg_header(uint8_t *buf, size_t cap,
                                        uint8_t opcode, const char *subject,
                                        size_t subject_len, const char *reply,
                                        size_t reply_len, size_t payload_len) {
    if (opcode != RIFT_OP_PUBLISH && opcode != RIFT_OP_PUBLISH_ACK &&
        opcode != RIFT_OP_MESSAGE) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    str_arg s[2] = {{subject, subject_len}, {reply, reply_len}};
    return encode(buf, cap, opcode, NULL, 0, s, 2, NULL, 0, payload_len);
}

rift_ssize rift_frame_encode_publish_header(uint8_t *buf, size_t cap,
                                            const char *subject,
                                            size_t subject_len,
                                            const char *reply, size_t reply_len,
                                            size_t payload_len) {
    str_arg s[2] = {{subject, subject_len}, {reply, reply_len}};
    return encode(buf, cap, RIFT_OP_PUBLISH, NULL, 0, s, 2, NULL, 0,
                  payload_len);
}

rift_ssize rift_frame_encode_message_header(uint8_t *buf, size_t cap,
                                            const char *subject,
                                            size_t subject_len,
                                            const char *reply, size_t reply_len,
                                            size_t payload_len) {
    str_arg s[2] = {{subject, subject_len}, {reply, reply_len}};
    return encode(buf, cap, RIFT_OP_MESSAGE, NULL, 0, s, 2, NULL, 0,
                  payload_len);
}

rift_ssize rift_frame_encode_subscribe(uint8_t *buf, size_t cap,
                                       const char *pattern, size_t pattern_len,
                                       const char *queue, size_t queue_len) {
    str_arg s[2] = {{pattern, pattern_len}, {queue, queue_len}};
    return encode(buf, cap, RIFT_OP_SUBSCRIBE, NULL, 0, s, 2, NULL, 0, 0);
}

rift_ssize rift_frame_encode_request_header(uint8_t *buf, size_t cap,
                                            uint32_t timeout_ms,
                                            const char *subject,
                                            size_t subject_len,
                                            size_t payload_len) {
    uint8_t pre[4];
    rift_be32_store(pre, timeout_ms);
    str_arg s[1] = {{subject, subject_len}};
    return encode(buf, cap, RIFT_OP_REQUEST, pre, sizeof(pre), s, 1, NULL, 0,
                  payload_len);
}

rift_ssize rift_frame_encode_stream_publish_header(
    uint8_t *buf, size_t cap, const char *stream, size_t stream_len,
    const char *subject, size_t subject_len, const char *reply,
    size_t reply_len, size_t payload_len) {
    str_arg s[3] = {
        {stream, stream_len}, {subject, subject_len}, {reply, reply_len}};
    return encode(buf, cap, RIFT_OP_STREAM_PUBLISH, NULL, 0, s, 3, NULL, 0,
                  payload_len);
}

rift_ssize rift_frame_encode_consumer_open(
    uint8_t *buf, size_t cap, const char *stream, size_t stream_len,
    const char *name, size_t name_len, const char *filter, size_t filter_len,
    uint64_t start_sequence, uint32_t ack_wait_ms, uint32_t max_ack_pending) {
    uint8_t post[16];
    rift_be64_store(post, start_sequence);
    rift_be32_store(post + 8, ack_wait_ms);
    rift_be32_store(post + 12, max_ack_pending);
    str_arg s[3] = {
        {stream, stream_len}, {name, name_len}, {filter, filter_len}};
    return encode(buf, cap, RIFT_OP_CONSUMER_OPEN, NULL, 0, s, 3, post,
                  sizeof(post), 0);
}

rift_ssize rift_frame_encode_consumer_fetch(uint8_t *buf, size_t cap,
                                            const char *stream,
                                            size_t stream_len, const char *name,
                                            size_t name_len, uint32_t limit) {
    uint8_t post[4];
    rift_be32_store(post, limit);
    str_arg s[2] = {{stream, stream_len}, {name, name_len}};
    return encode(buf, cap, RIFT_OP_CONSUMER_FETCH, NULL, 0, s, 2, post,
                  sizeof(post), 0);
}

rift_ssize rift_frame_encode_delivery_header(
    uint8_t *buf, size_t cap, uint64_t sequence, uint64_t timestamp_ms,
    uint32_t delivery_count, const char *subject, size_t subject_len,
    const char *reply, size_t reply_len, size_t payload_len) {
    uint8_t pre[20];
    rift_be64_store(pre, sequence);
    rift_be64_store(pre + 8, timestamp_ms);
    rift_be32_store(pre + 16, delivery_count);
    str_arg s[2] = {{subject, subject_len}, {reply, reply_len}};
    return encode(buf, cap, RIFT_OP_DELIVERY, pre, sizeof(pre), s, 2, NULL, 0,
                  payload_len);
}

rift_ssize rift_frame_encode_ack(uint8_t *buf, size_t cap, const char *stream,
                                 size_t stream_len, const char *name,
                                 size_t name_len, uint64_t sequence) {
    uint8_t post[8];
    rift_be64_store(post, sequence);
    str_arg s[2] = {{stream, stream_len}, {name, name_len}};
    return encode(buf, cap, RIFT_OP_ACK, NULL, 0, s, 2, post, sizeof(post), 0);
}

/* ---- Any frame ---- */

rift_ssize rift_frame_encode_header(uint8_t *buf, size_t cap,
                                    const rift_frame *f) {
    switch (f->opcode) {
    case RIFT_OP_AUTH:
        return rift_frame_encode_auth(buf, cap, f->auth.token,
                                      f->auth.token_len);
    case RIFT_OP_OK:
        return rift_frame_encode_ok(buf, cap);
    case RIFT_OP_ERROR:
        return rift_frame_encode_error(buf, cap, f->error.code,
                                       f->error.message, f->error.message_len);
    case RIFT_OP_PUBLISH:
    case RIFT_OP_PUBLISH_ACK:
    case RIFT_OP_MESSAGE:
        return rift_frame_encode_msg_header(
            buf, cap, f->opcode, f->msg.subject, f->msg.subject_len,
            f->msg.reply, f->msg.reply_len, f->msg.payload_len);
    case RIFT_OP_SUBSCRIBE:
        return rift_frame_encode_subscribe(
            buf, cap, f->subscribe.pattern, f->subscribe.pattern_len,
            f->subscribe.queue, f->subscribe.queue_len);
    case RIFT_OP_PING:
        return rift_frame_encode_ping(buf, cap);
    case RIFT_OP_REQUEST:
        return rift_frame_encode_request_header(
            buf, cap, f->request.timeout_ms, f->request.subject,
            f->request.subject_len, f->request.payload_len);
    case RIFT_OP_STREAM_PUBLISH:
        return rift_frame_encode_stream_publish_header(
            buf, cap, f->stream_publish.stream, f->stream_publish.stream_len,
            f->stream_publish.subject, f->stream_publish.subject_len,
            f->stream_publish.reply, f->stream_publish.reply_len,
            f->stream_publish.payload_len);
    case RIFT_OP_STORED:
        return rift_frame_encode_stored(buf, cap, f->stored.sequence,
                                        f->stored.timestamp_ms);
    case RIFT_OP_CONSUMER_OPEN:
        return rift_frame_encode_consumer_open(
            buf, cap, f->consumer_open.stream, f->consumer_open.stream_len,
            f->consumer_open.name, f->consumer_open.name_len,
            f->consumer_open.filter, f->consumer_open.filter_len,
            f->consumer_open.start_sequence, f->consumer_open.ack_wait_ms,
            f->consumer_open.max_ack_pending);
    case RIFT_OP_CONSUMER_FETCH:
        return rift_frame_encode_consumer_fetch(
            buf, cap, f->consumer_fetch.stream, f->consumer_fetch.stream_len,
            f->consumer_fetch.name, f->consumer_fetch.name_len,
            f->consumer_fetch.limit);
    case RIFT_OP_DELIVERY:
        return rift_frame_encode_delivery_header(
            buf, cap, f->delivery.sequence, f->delivery.timestamp_ms,
            f->delivery.delivery_count, f->delivery.subject,
            f->delivery.subject_len, f->delivery.reply, f->delivery.reply_len,
            f->delivery.payload_len);
    case RIFT_OP_ACK:
        return rift_frame_encode_ack(buf, cap, f->ack.stream, f->ack.stream_len,
                                     f->ack.name, f->ack.name_len,
                                     f->ack.sequence);
    default:
        return RIFT_ERR_INVALID_ARGUMENT;
    }
}
