/*
 * frame_ext_ack.c — decoders and encoders of CONSUMER_NAK (23),
 * CONSUMER_TERM (24) and CONSUMER_PROGRESS (25) (codec layer),
 * docs/protocol-v1.md "Extensions" E.2.
 */
#include "codec/field_cursor.h"
#include "codec/frame_ext_ack.h"

#include <string.h>

bool rift_ext_ack_opcode(uint8_t opcode) {
    return opcode == RIFT_OP_CONSUMER_NAK || opcode == RIFT_OP_CONSUMER_TERM ||
           opcode == RIFT_OP_CONSUMER_PROGRESS;
}

const char *rift_ext_ack_opcode_name(uint8_t opcode) {
    switch (opcode) {
    case RIFT_OP_CONSUMER_NAK:
        return "CONSUMER_NAK";
    case RIFT_OP_CONSUMER_TERM:
        return "CONSUMER_TERM";
    case RIFT_OP_CONSUMER_PROGRESS:
        return "CONSUMER_PROGRESS";
    default:
        return NULL;
    }
}

int rift_frame_decode_consumer_settle(uint8_t opcode, const uint8_t *fields,
                                      size_t len,
                                      rift_frame_consumer_settle *out,
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
    if ((rc = take_u64(&c, &out->sequence, err)) != 0) {
        return rc;
    }
    out->decoded = 3;
    if (opcode == RIFT_OP_CONSUMER_NAK) {
        if ((rc = take_u32(&c, &out->delay_ms, err)) != 0) {
            return rc;
        }
        out->decoded = 4;
    }
    return take_end(&c, err);
}

rift_ssize
rift_frame_encode_consumer_settle(uint8_t *buf, size_t cap, uint8_t opcode,
                                  const rift_frame_consumer_settle *f) {
    if (!rift_ext_ack_opcode(opcode) || f->stream_len > RIFT_FRAME_MAX_STRING ||
        f->name_len > RIFT_FRAME_MAX_STRING) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    bool nak = opcode == RIFT_OP_CONSUMER_NAK;
    size_t body = 1 + 2 + f->stream_len + 2 + f->name_len + 8 + (nak ? 4 : 0);
    if (cap < RIFT_FRAME_PREFIX_BYTES + body) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    uint8_t *p = buf;
    rift_be32_store(p, (uint32_t)body);
    p += RIFT_FRAME_PREFIX_BYTES;
    *p++ = opcode;
    rift_be16_store(p, (uint16_t)f->stream_len);
    p += 2;
    if (f->stream_len > 0) {
        memcpy(p, f->stream, f->stream_len);
        p += f->stream_len;
    }
    rift_be16_store(p, (uint16_t)f->name_len);
    p += 2;
    if (f->name_len > 0) {
        memcpy(p, f->name, f->name_len);
        p += f->name_len;
    }
    rift_be64_store(p, f->sequence);
    p += 8;
    if (nak) {
        rift_be32_store(p, f->delay_ms);
        p += 4;
    }
    return (rift_ssize)(p - buf);
}
