/*
 * frame_ext.c — decoders and encoders of the extension opcodes (codec
 * layer), docs/protocol-v1.md "Extensions" E.2. A small cursor of its own
 * keeps frame_decode.c, the v1 hot path, exactly as it was.
 */
#include "codec/field_cursor.h"
#include "codec/frame_ext.h"
#include "codec/frame_ext_ack.h"
#include "codec/frame_ext_push.h"
#include "codec/frame_ext_stream.h"

#include <string.h>

static const char *const ext_names[] = {
    "EXT_HELLO",           "EXT_INFO",          "CONSUMER_OPEN_EXT",
    "CONSUMER_INFO",       "CONSUMER_INFO_GET", "CONSUMER_DELETE",
    "CONSUMER_FETCH_WAIT", "CONSUMER_NAK",      "CONSUMER_TERM",
    "CONSUMER_PROGRESS",   "CONSUMER_LIST",     "CONSUMER_LIST_RESULT",
};

bool rift_ext_opcode_client(uint8_t opcode) {
    return opcode == RIFT_OP_EXT_HELLO || opcode == RIFT_OP_CONSUMER_OPEN_EXT ||
           opcode == RIFT_OP_CONSUMER_INFO_GET ||
           opcode == RIFT_OP_CONSUMER_DELETE ||
           opcode == RIFT_OP_CONSUMER_FETCH_WAIT ||
           opcode == RIFT_OP_CONSUMER_LIST || rift_ext_ack_opcode(opcode) ||
           rift_ext_push_opcode(opcode) ||
           rift_ext_stream_opcode_client(opcode);
}

const char *rift_ext_opcode_name(uint8_t opcode) {
    if (rift_ext_ack_opcode(opcode)) {
        return rift_ext_ack_opcode_name(opcode);
    }
    if (rift_ext_push_opcode(opcode)) {
        return rift_ext_push_opcode_name(opcode);
    }
    if (opcode < RIFT_OP_EXT_HELLO || opcode > RIFT_OP_CONSUMER_LIST_RESULT) {
        return rift_ext_stream_opcode_name(opcode);
    }
    return ext_names[opcode - RIFT_OP_EXT_HELLO];
}

/* ---- Decoding ---- */


int rift_frame_decode_consumer_open_ext(const uint8_t *fields, size_t len,
                                        rift_frame_consumer_open_ext *out,
                                        rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    if ((rc = take_str(&c, &out->filter, &out->filter_len, err)) != 0 ||
        (rc = take_u8(&c, &out->start, err)) != 0 ||
        (rc = take_u64(&c, &out->start_value, err)) != 0 ||
        (rc = take_u32(&c, &out->ack_wait_ms, err)) != 0 ||
        (rc = take_u32(&c, &out->max_ack_pending, err)) != 0 ||
        (rc = take_u32(&c, &out->max_deliver, err)) != 0) {
        return rc;
    }
    out->decoded = 8;
    return take_end(&c, err);
}

int rift_frame_decode_consumer_ref(const uint8_t *fields, size_t len,
                                   rift_frame_consumer_ref *out,
                                   rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    return take_end(&c, err);
}

int rift_frame_decode_fetch_wait(const uint8_t *fields, size_t len,
                                 rift_frame_fetch_wait *out, rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->name, &out->name_len, err)) != 0) {
        return rc;
    }
    out->decoded = 2;
    if ((rc = take_u32(&c, &out->limit, err)) != 0 ||
        (rc = take_u32(&c, &out->max_wait_ms, err)) != 0) {
        return rc;
    }
    out->decoded = 4;
    return take_end(&c, err);
}

/* The fields of one CONSUMER_INFO, shared with CONSUMER_LIST_RESULT. */
static int take_info(cursor *c, rift_frame_consumer_info *out,
                     rift_error *err) {
    memset(out, 0, sizeof(*out));
    int rc;
    if ((rc = take_str(c, &out->name, &out->name_len, err)) != 0 ||
        (rc = take_str(c, &out->filter, &out->filter_len, err)) != 0 ||
        (rc = take_u8(c, &out->start, err)) != 0 ||
        (rc = take_u64(c, &out->start_value, err)) != 0 ||
        (rc = take_u32(c, &out->ack_wait_ms, err)) != 0 ||
        (rc = take_u32(c, &out->max_ack_pending, err)) != 0 ||
        (rc = take_u64(c, &out->start_sequence, err)) != 0 ||
        (rc = take_u64(c, &out->next_sequence, err)) != 0 ||
        (rc = take_u32(c, &out->pending, err)) != 0 ||
        (rc = take_u8(c, &out->created, err)) != 0 ||
        (rc = take_u32(c, &out->max_deliver, err)) != 0 ||
        (rc = take_u64(c, &out->terminated, err)) != 0 ||
        (rc = take_u64(c, &out->max_delivered, err)) != 0) {
        return rc;
    }
    return 0;
}

int rift_frame_decode_consumer_info(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_info *out,
                                    rift_error *err) {
    cursor c = {fields, len, 0};
    int rc = take_info(&c, out, err);
    return rc != 0 ? rc : take_end(&c, err);
}

int rift_frame_decode_consumer_list(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_list *out,
                                    rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_str(&c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(&c, &out->after, &out->after_len, err)) != 0 ||
        (rc = take_u32(&c, &out->limit, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    return take_end(&c, err);
}

int rift_frame_decode_consumer_list_result(const uint8_t *fields, size_t len,
                                           rift_frame_consumer_info *out,
                                           size_t cap, size_t *count,
                                           bool *more, rift_error *err) {
    cursor c = {fields, len, 0};
    uint32_t n = 0;
    int rc = take_u32(&c, &n, err);
    if (rc != 0) {
        return rc;
    }
    if (n > cap || n > RIFT_EXT_MAX_LIST) {
        return fail(err, RIFT_EXT_ERR_LIST_COUNT);
    }
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = take_info(&c, &out[i], err)) != 0) {
            return rc;
        }
    }
    uint8_t m = 0;
    if ((rc = take_u8(&c, &m, err)) != 0) {
        return rc;
    }
    if (m > 1) {
        return fail(err, RIFT_EXT_ERR_LIST_COUNT);
    }
    *count = n;
    *more = m != 0;
    return take_end(&c, err);
}

int rift_frame_decode_ext_info(const uint8_t *fields, size_t len,
                               rift_frame_ext_info *out, rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_u16(&c, &out->version, err)) != 0) {
        return rc;
    }
    if ((rc = take_str(&c, &out->features, &out->features_len, err)) != 0) {
        return rc;
    }
    return take_end(&c, err);
}

/* ---- Encoding ---- */

typedef struct wcur {
    uint8_t *p;
    size_t cap;
    size_t pos;
    bool bad;
} wcur;

static void need(wcur *w, size_t n) {
    if (w->cap - w->pos < n) {
        w->bad = true;
    }
}

static void put_u8(wcur *w, uint8_t v) {
    need(w, 1);
    if (!w->bad) {
        w->p[w->pos++] = v;
    }
}

static void put_u16(wcur *w, uint16_t v) {
    need(w, 2);
    if (!w->bad) {
        rift_be16_store(w->p + w->pos, v);
        w->pos += 2;
    }
}

static void put_u32(wcur *w, uint32_t v) {
    need(w, 4);
    if (!w->bad) {
        rift_be32_store(w->p + w->pos, v);
        w->pos += 4;
    }
}

static void put_u64(wcur *w, uint64_t v) {
    need(w, 8);
    if (!w->bad) {
        rift_be64_store(w->p + w->pos, v);
        w->pos += 8;
    }
}

static void put_str(wcur *w, const char *s, size_t n) {
    if (n > RIFT_FRAME_MAX_STRING) {
        w->bad = true;
        return;
    }
    put_u16(w, (uint16_t)n);
    need(w, n);
    if (!w->bad && n > 0) {
        memcpy(w->p + w->pos, s, n);
        w->pos += n;
    }
}

/* Starts a frame: room for the prefix, then the opcode. */
static wcur start(uint8_t *buf, size_t cap, uint8_t opcode) {
    wcur w = {buf, cap, 0, cap < RIFT_FRAME_PREFIX_BYTES + 1};
    if (!w.bad) {
        w.pos = RIFT_FRAME_PREFIX_BYTES;
        w.p[w.pos++] = opcode;
    }
    return w;
}

static rift_ssize end(wcur *w) {
    if (w->bad) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    rift_be32_store(w->p, (uint32_t)(w->pos - RIFT_FRAME_PREFIX_BYTES));
    return (rift_ssize)w->pos;
}

rift_ssize rift_frame_encode_ext_hello(uint8_t *buf, size_t cap) {
    wcur w = start(buf, cap, RIFT_OP_EXT_HELLO);
    return end(&w);
}

rift_ssize rift_frame_encode_ext_info(uint8_t *buf, size_t cap,
                                      uint16_t version, const char *features,
                                      size_t features_len) {
    wcur w = start(buf, cap, RIFT_OP_EXT_INFO);
    put_u16(&w, version);
    put_str(&w, features, features_len);
    return end(&w);
}

rift_ssize
rift_frame_encode_consumer_open_ext(uint8_t *buf, size_t cap,
                                    const rift_frame_consumer_open_ext *f) {
    wcur w = start(buf, cap, RIFT_OP_CONSUMER_OPEN_EXT);
    put_str(&w, f->stream, f->stream_len);
    put_str(&w, f->name, f->name_len);
    put_str(&w, f->filter, f->filter_len);
    put_u8(&w, f->start);
    put_u64(&w, f->start_value);
    put_u32(&w, f->ack_wait_ms);
    put_u32(&w, f->max_ack_pending);
    put_u32(&w, f->max_deliver);
    return end(&w);
}

rift_ssize rift_frame_encode_consumer_ref(uint8_t *buf, size_t cap,
                                          uint8_t opcode, const char *stream,
                                          size_t stream_len, const char *name,
                                          size_t name_len) {
    if (opcode != RIFT_OP_CONSUMER_INFO_GET &&
        opcode != RIFT_OP_CONSUMER_DELETE) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    wcur w = start(buf, cap, opcode);
    put_str(&w, stream, stream_len);
    put_str(&w, name, name_len);
    return end(&w);
}

rift_ssize rift_frame_encode_fetch_wait(uint8_t *buf, size_t cap,
                                        const rift_frame_fetch_wait *f) {
    wcur w = start(buf, cap, RIFT_OP_CONSUMER_FETCH_WAIT);
    put_str(&w, f->stream, f->stream_len);
    put_str(&w, f->name, f->name_len);
    put_u32(&w, f->limit);
    put_u32(&w, f->max_wait_ms);
    return end(&w);
}

static void put_info(wcur *w, const rift_frame_consumer_info *f) {
    put_str(w, f->name, f->name_len);
    put_str(w, f->filter, f->filter_len);
    put_u8(w, f->start);
    put_u64(w, f->start_value);
    put_u32(w, f->ack_wait_ms);
    put_u32(w, f->max_ack_pending);
    put_u64(w, f->start_sequence);
    put_u64(w, f->next_sequence);
    put_u32(w, f->pending);
    put_u8(w, f->created);
    put_u32(w, f->max_deliver);
    put_u64(w, f->terminated);
    put_u64(w, f->max_delivered);
}

rift_ssize rift_frame_encode_consumer_info(uint8_t *buf, size_t cap,
                                           const rift_frame_consumer_info *f) {
    wcur w = start(buf, cap, RIFT_OP_CONSUMER_INFO);
    put_info(&w, f);
    return end(&w);
}

rift_ssize rift_frame_encode_consumer_list(uint8_t *buf, size_t cap,
                                           const rift_frame_consumer_list *f) {
    wcur w = start(buf, cap, RIFT_OP_CONSUMER_LIST);
    put_str(&w, f->stream, f->stream_len);
    put_str(&w, f->after, f->after_len);
    put_u32(&w, f->limit);
    return end(&w);
}

rift_ssize
rift_frame_encode_consumer_list_result(uint8_t *buf, size_t cap,
                                       const rift_frame_consumer_info *items,
                                       size_t count, bool more) {
    if (count > RIFT_EXT_MAX_LIST) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    wcur w = start(buf, cap, RIFT_OP_CONSUMER_LIST_RESULT);
    put_u32(&w, (uint32_t)count);
    for (size_t i = 0; i < count; i++) {
        put_info(&w, &items[i]);
    }
    put_u8(&w, more ? 1 : 0);
    return end(&w);
}

size_t rift_frame_consumer_info_size(const rift_frame_consumer_info *f) {
    return 2 + f->name_len + 2 + f->filter_len + 1 + 8 + 4 + 4 + 8 + 8 + 4 + 1 +
           4 + 8 + 8;
}
