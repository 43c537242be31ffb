/*
 * frame_ext_stream.c — decoders and encoders of the stream extensions
 * (codec layer), opcodes 28..33 of docs/protocol-v1.md "Extensions" E.2.
 */
#include "codec/frame_ext_stream.h"

#include "codec/field_cursor.h"
#include "codec/field_writer.h"

#include <string.h>

static const char *const names[] = {
    "STREAM_INFO_GET", "STREAM_INFO_EXT", "STREAM_CREATE",
    "STREAM_UPDATE",   "STREAM_PURGE",    "STREAM_DELETE",
};

bool rift_ext_stream_opcode_client(uint8_t opcode) {
    return opcode == RIFT_OP_STREAM_INFO_GET ||
           (opcode >= RIFT_OP_STREAM_CREATE && opcode <= RIFT_OP_STREAM_DELETE);
}

const char *rift_ext_stream_opcode_name(uint8_t opcode) {
    if (opcode < RIFT_OP_STREAM_INFO_GET || opcode > RIFT_OP_STREAM_DELETE) {
        return NULL;
    }
    return names[opcode - RIFT_OP_STREAM_INFO_GET];
}

/* ---- Decoding ---- */

int rift_frame_decode_stream_ref(const uint8_t *fields, size_t len,
                                 const char **stream, size_t *stream_len,
                                 rift_error *err) {
    cursor c = {fields, len, 0};
    *stream = NULL;
    *stream_len = 0;
    int rc = take_str(&c, stream, stream_len, err);
    return rc != 0 ? rc : take_end(&c, err);
}

static int take_spec(cursor *c, rift_frame_stream_spec *out, rift_error *err) {
    int rc;
    if ((rc = take_str(c, &out->stream, &out->stream_len, err)) != 0) {
        return rc;
    }
    out->decoded = 1;
    if ((rc = take_str(c, &out->subjects, &out->subjects_len, err)) != 0 ||
        (rc = take_u8(c, &out->storage, err)) != 0 ||
        (rc = take_u64(c, &out->max_messages, err)) != 0 ||
        (rc = take_u64(c, &out->max_bytes, err)) != 0 ||
        (rc = take_u64(c, &out->max_age_ms, err)) != 0 ||
        (rc = take_u64(c, &out->max_payload_bytes, err)) != 0 ||
        (rc = take_u32(c, &out->max_consumers, err)) != 0) {
        return rc;
    }
    out->decoded = 8;
    return 0;
}

int rift_frame_decode_stream_spec(const uint8_t *fields, size_t len,
                                  rift_frame_stream_spec *out,
                                  rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc = take_spec(&c, out, err);
    return rc != 0 ? rc : take_end(&c, err);
}

int rift_frame_decode_stream_info(const uint8_t *fields, size_t len,
                                  rift_frame_stream_info *out,
                                  rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc;
    if ((rc = take_spec(&c, &out->spec, err)) != 0 ||
        (rc = take_u64(&c, &out->messages, err)) != 0 ||
        (rc = take_u64(&c, &out->bytes, err)) != 0 ||
        (rc = take_u64(&c, &out->first_sequence, err)) != 0 ||
        (rc = take_u64(&c, &out->last_sequence, err)) != 0 ||
        (rc = take_u32(&c, &out->consumers, err)) != 0 ||
        (rc = take_u8(&c, &out->runtime, err)) != 0) {
        return rc;
    }
    return take_end(&c, err);
}

/* ---- Encoding ---- */

rift_ssize rift_frame_encode_stream_ref(uint8_t *buf, size_t cap,
                                        uint8_t opcode, const char *stream,
                                        size_t stream_len) {
    if (opcode != RIFT_OP_STREAM_INFO_GET && opcode != RIFT_OP_STREAM_PURGE &&
        opcode != RIFT_OP_STREAM_DELETE) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    wcur w = wcur_start(buf, cap, opcode);
    wcur_str(&w, stream, stream_len);
    return wcur_end(&w);
}

static void put_spec(wcur *w, const rift_frame_stream_spec *f) {
    wcur_str(w, f->stream, f->stream_len);
    wcur_str(w, f->subjects, f->subjects_len);
    wcur_u8(w, f->storage);
    wcur_u64(w, f->max_messages);
    wcur_u64(w, f->max_bytes);
    wcur_u64(w, f->max_age_ms);
    wcur_u64(w, f->max_payload_bytes);
    wcur_u32(w, f->max_consumers);
}

rift_ssize rift_frame_encode_stream_spec(uint8_t *buf, size_t cap,
                                         uint8_t opcode,
                                         const rift_frame_stream_spec *f) {
    if (opcode != RIFT_OP_STREAM_CREATE && opcode != RIFT_OP_STREAM_UPDATE) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    wcur w = wcur_start(buf, cap, opcode);
    put_spec(&w, f);
    return wcur_end(&w);
}

rift_ssize rift_frame_encode_stream_info(uint8_t *buf, size_t cap,
                                         const rift_frame_stream_info *f) {
    wcur w = wcur_start(buf, cap, RIFT_OP_STREAM_INFO_EXT);
    put_spec(&w, &f->spec);
    wcur_u64(&w, f->messages);
    wcur_u64(&w, f->bytes);
    wcur_u64(&w, f->first_sequence);
    wcur_u64(&w, f->last_sequence);
    wcur_u32(&w, f->consumers);
    wcur_u8(&w, f->runtime);
    return wcur_end(&w);
}
