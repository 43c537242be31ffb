/*
 * frame_ext_push.h — the push consumer's extension opcodes (codec layer,
 * frame_ext_push.c): PUSH_OPEN (34), sent first on a stream of its own,
 * and PUSH_ACK (35), sent by the client on that same stream for each
 * DELIVERY it settles. docs/protocol-v1.md E.2. Conventions as
 * frame_ext.h.
 */
#ifndef RIFT_CODEC_FRAME_EXT_PUSH_H
#define RIFT_CODEC_FRAME_EXT_PUSH_H

#include "codec/frame_ext.h"

enum {
    RIFT_OP_PUSH_OPEN = 34, /* client: see rift_frame_push_open */
    RIFT_OP_PUSH_ACK = 35,  /* client, on the push stream: see below */
};

/** The most unacknowledged deliveries one push stream may carry. */
#define RIFT_EXT_MAX_IN_FLIGHT 65535u
/** The longest ack wait a push may ask for, ms (one hour). */
#define RIFT_EXT_MAX_ACK_WAIT_MS 3600000u

/* Texts of the push checks (all ERROR code 2). */
#define RIFT_EXT_ERR_IN_FLIGHT   "push max_in_flight must be 1..65535"
#define RIFT_EXT_ERR_ACK_WAIT    "push ack wait must be 0..3600000 ms"
#define RIFT_EXT_ERR_PUSH_BUSY   "consumer already has a push stream"
#define RIFT_EXT_ERR_ACK_OUTSIDE "push ack outside a push stream"
#define RIFT_EXT_ERR_ACK_OTHER   "push ack names another consumer"
#define RIFT_EXT_ERR_PUSH_OPCODE "only PUSH_ACK may follow PUSH_OPEN"

/** The feature word EXT_INFO lists for opcodes 34 and 35. */
#define RIFT_EXT_FEATURE_PUSH "push"

/**
 * PUSH_OPEN: stream:str, name:str, max_in_flight:u32, ack_wait_ms:u32
 * (0 = the consumer's own). `decoded` counts the fields decoded (the
 * name is scoped once >= 2).
 */
typedef struct rift_frame_push_open {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint32_t max_in_flight;
    uint32_t ack_wait_ms;
    unsigned decoded;
} rift_frame_push_open;

/** PUSH_ACK: stream:str, name:str, sequence:u64. */
typedef struct rift_frame_push_ack {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint64_t sequence;
    unsigned decoded;
} rift_frame_push_ack;

/** True for 34 and 35. */
bool rift_ext_push_opcode(uint8_t opcode);
/** "PUSH_OPEN", "PUSH_ACK", NULL for any other opcode. */
const char *rift_ext_push_opcode_name(uint8_t opcode);

int rift_frame_decode_push_open(const uint8_t *fields, size_t len,
                                rift_frame_push_open *out, rift_error *err);
int rift_frame_decode_push_ack(const uint8_t *fields, size_t len,
                               rift_frame_push_ack *out, rift_error *err);

/* Whole frames into |buf|; the byte count or RIFT_ERR_INVALID_ARGUMENT
 * (a string above 4,096 bytes, |cap| too small). */
rift_ssize rift_frame_encode_push_open(uint8_t *buf, size_t cap,
                                       const rift_frame_push_open *f);
rift_ssize rift_frame_encode_push_ack(uint8_t *buf, size_t cap,
                                      const rift_frame_push_ack *f);

#endif /* RIFT_CODEC_FRAME_EXT_PUSH_H */
