/*
 * frame_ext_push.c — decoders and encoders of PUSH_OPEN (34) and
 * PUSH_ACK (35) (codec layer), docs/protocol-v1.md "Extensions" E.2.
 */
#include "codec/field_cursor.h"
#include "codec/field_writer.h"
#include "codec/frame_ext_push.h"

#include <string.h>

bool rift_ext_push_opcode(uint8_t opcode) {
    return opcode == RIFT_OP_PUSH_OPEN || opcode == RIFT_OP_PUSH_ACK;
}

const char *rift_ext_push_opcode_name(uint8_t opcode) {
    switch (opcode) {
    case RIFT_OP_PUSH_OPEN:
        return "PUSH_OPEN";
    case RIFT_OP_PUSH_ACK:
        return "PUSH_ACK";
    default:
        return NULL;
    }
}

/* stream:str, name:str: the common head of both bodies. */
static int take_ref(cursor *c, const char **stream, size_t *stream_len,
                    const char **name, size_t *name_len, unsigned *decoded,
                    rift_error *err) {
    int rc;
    if ((rc = take_str(c, stream, stream_len, err)) != 0) {
        return rc;
    }
    *decoded = 1;
    if ((rc = take_str(c, name, name_len, err)) != 0) {
        return rc;
    }
    *decoded = 2;
    return 0;
}

int rift_frame_decode_push_open(const uint8_t *fields, size_t len,
                                rift_frame_push_open *out, rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc = take_ref(&c, &out->stream, &out->stream_len, &out->name,
                      &out->name_len, &out->decoded, err);
    if (rc != 0) {
        return rc;
    }
    if ((rc = take_u32(&c, &out->max_in_flight, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    if ((rc = take_u32(&c, &out->ack_wait_ms, err)) != 0) {
        return rc;
    }
    out->decoded = 4;
    return take_end(&c, err);
}

int rift_frame_decode_push_ack(const uint8_t *fields, size_t len,
                               rift_frame_push_ack *out, rift_error *err) {
    memset(out, 0, sizeof(*out));
    cursor c = {fields, len, 0};
    int rc = take_ref(&c, &out->stream, &out->stream_len, &out->name,
                      &out->name_len, &out->decoded, err);
    if (rc != 0) {
        return rc;
    }
    if ((rc = take_u64(&c, &out->sequence, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    return take_end(&c, err);
}

rift_ssize rift_frame_encode_push_open(uint8_t *buf, size_t cap,
                                       const rift_frame_push_open *f) {
    wcur w = wcur_start(buf, cap, RIFT_OP_PUSH_OPEN);
    wcur_str(&w, f->stream, f->stream_len);
    wcur_str(&w, f->name, f->name_len);
    wcur_u32(&w, f->max_in_flight);
    wcur_u32(&w, f->ack_wait_ms);
    return wcur_end(&w);
}

rift_ssize rift_frame_encode_push_ack(uint8_t *buf, size_t cap,
                                      const rift_frame_push_ack *f) {
    wcur w = wcur_start(buf, cap, RIFT_OP_PUSH_ACK);
    wcur_str(&w, f->stream, f->stream_len);
    wcur_str(&w, f->name, f->name_len);
    wcur_u64(&w, f->sequence);
    return wcur_end(&w);
}
