/*
 * frame_ext_ack.h — the extension opcodes that settle one delivery (codec
 * layer, frame_ext_ack.c): CONSUMER_NAK (23), CONSUMER_TERM (24) and
 * CONSUMER_PROGRESS (25), docs/protocol-v1.md E.2. Conventions as
 * frame_ext.h.
 */
#ifndef RIFT_CODEC_FRAME_EXT_ACK_H
#define RIFT_CODEC_FRAME_EXT_ACK_H

#include "codec/frame_ext.h"

/** The longest NAK delay, ms (one hour). */
#define RIFT_EXT_MAX_NAK_DELAY_MS 3600000u
/** The text of a delay beyond it (ERROR code 2). */
#define RIFT_EXT_ERR_NAK_DELAY "nak delay must be 0..3600000 ms"

/**
 * CONSUMER_NAK: stream:str, name:str, sequence:u64, delay_ms:u32.
 * CONSUMER_TERM and CONSUMER_PROGRESS: stream:str, name:str, sequence:u64
 * (delay_ms 0). `decoded` counts the fields decoded (the name is scoped
 * once >= 2).
 */
typedef struct rift_frame_consumer_settle {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint64_t sequence;
    uint32_t delay_ms;
    unsigned decoded;
} rift_frame_consumer_settle;

/** True for 23, 24 and 25. */
bool rift_ext_ack_opcode(uint8_t opcode);
/** "CONSUMER_NAK" etc., NULL for any other opcode. */
const char *rift_ext_ack_opcode_name(uint8_t opcode);

/** Decodes the body of |opcode| (one of the three). */
int rift_frame_decode_consumer_settle(uint8_t opcode, const uint8_t *fields,
                                      size_t len,
                                      rift_frame_consumer_settle *out,
                                      rift_error *err);
/** Encodes a whole frame of |opcode| (one of the three; delay_ms only for
 * CONSUMER_NAK). The byte count or RIFT_ERR_INVALID_ARGUMENT. */
rift_ssize
rift_frame_encode_consumer_settle(uint8_t *buf, size_t cap, uint8_t opcode,
                                  const rift_frame_consumer_settle *f);

#endif /* RIFT_CODEC_FRAME_EXT_ACK_H */
