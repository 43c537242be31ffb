/*
 * frame_ext.h — the protocol extensions beyond v1 (codec layer): opcodes
 * 16 and up, their body layouts, decoders and encoders.
 *
 * Reference: docs/protocol-v1.md, part "Extensions" (E.1 rules, E.2
 * opcodes and bodies). The v1 codec (codec/frame.h) is untouched: its
 * checks still call every opcode from 16 on unknown, so a v1 peer's bytes
 * and answers are exactly what they were. The server consults
 * rift_ext_opcode_client before the v1 check; a v1 server answers the
 * probe (EXT_HELLO) with ERROR(2, "unknown opcode"), which is how a client
 * tells the two apart.
 *
 * Same conventions as frame.h: decoders take the fields after the opcode,
 * point into them, report the first failure with the v1 texts
 * ("truncated frame", "invalid string length", "string must be UTF-8",
 * "unexpected trailing frame bytes"); encoders write a whole frame.
 */
#ifndef RIFT_CODEC_FRAME_EXT_H
#define RIFT_CODEC_FRAME_EXT_H

#include "codec/frame.h"

typedef enum rift_ext_opcode {
    RIFT_OP_EXT_HELLO = 16, /* client: empty */
    RIFT_OP_EXT_INFO = 17,  /* server: version:u16, features:str */
    RIFT_OP_CONSUMER_OPEN_EXT =
        18,                     /* client: see rift_frame_consumer_open_ext */
    RIFT_OP_CONSUMER_INFO = 19, /* server: see rift_frame_consumer_info */
    RIFT_OP_CONSUMER_INFO_GET = 20,   /* client: stream:str, name:str */
    RIFT_OP_CONSUMER_DELETE = 21,     /* client: stream:str, name:str */
    RIFT_OP_CONSUMER_FETCH_WAIT = 22, /* client: see rift_frame_fetch_wait */
    RIFT_OP_CONSUMER_NAK = 23,        /* client: frame_ext_ack.h */
    RIFT_OP_CONSUMER_TERM = 24,       /* client: frame_ext_ack.h */
    RIFT_OP_CONSUMER_PROGRESS = 25,   /* client: frame_ext_ack.h */
    RIFT_OP_CONSUMER_LIST = 26,       /* client: see rift_frame_consumer_list */
    RIFT_OP_CONSUMER_LIST_RESULT = 27, /* server: count, infos, more */
} rift_ext_opcode;

/** The extension version EXT_INFO carries. */
#define RIFT_EXT_VERSION 1u
/** The features EXT_INFO lists, space-separated. */
#define RIFT_EXT_FEATURES                                                      \
 "consumer-open consumer-info consumer-delete fetch-wait "                     \
 "consumer-nak consumer-term consumer-progress max-deliver consumer-list"

/* Texts of the extension checks (all ERROR code 2). */
#define RIFT_EXT_ERR_START     "invalid start position"
#define RIFT_EXT_ERR_START_SEQ "start sequence must be at least 1"
#define RIFT_EXT_ERR_START_VALUE                                               \
 "start value must be 0 for start first, last and new"

#define RIFT_EXT_ERR_WAIT "fetch wait must be 1..120000 ms"
/** Longest wait of a CONSUMER_FETCH_WAIT. */
#define RIFT_EXT_MAX_WAIT_MS 120000u

/** The most consumers one CONSUMER_LIST asks for (its `limit`). */
#define RIFT_EXT_MAX_LIST       256u
#define RIFT_EXT_ERR_LIST_LIMIT "consumer list limit must be 1..256"
/** A CONSUMER_LIST_RESULT whose count or `more` flag is out of range. */
#define RIFT_EXT_ERR_LIST_COUNT "invalid consumer list"

/** rift_ext_opcode_client: true for the extension opcodes a client sends
 * (16, 18, 20, 21, 22, 23, 24, 25, 26, 28, 30-33, 34, 35). */
bool rift_ext_opcode_client(uint8_t opcode);

/** rift_ext_opcode_name: "EXT_HELLO" etc., NULL when not an extension. */
const char *rift_ext_opcode_name(uint8_t opcode);

/**
 * CONSUMER_OPEN_EXT: stream:str, name:str, filter:str, start:u8,
 * start_value:u64, ack_wait_ms:u32, max_ack_pending:u32,
 * max_deliver:u32. `start` is a
 * rift_consumer_start (0 sequence, 1 first, 2 last, 3 new, 4 time,
 * 5 since); `start_value` its argument. An empty filter means ">".
 * `decoded` counts the fields decoded (the name is scoped once >= 2).
 */
typedef struct rift_frame_consumer_open_ext {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    const char *filter;
    size_t filter_len;
    uint8_t start;
    uint64_t start_value;
    uint32_t ack_wait_ms;
    uint32_t max_ack_pending;
    uint32_t max_deliver; /* 0 = unlimited */
    unsigned decoded;
} rift_frame_consumer_open_ext;

/** CONSUMER_INFO_GET and CONSUMER_DELETE: stream:str, name:str. */
typedef struct rift_frame_consumer_ref {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    unsigned decoded;
} rift_frame_consumer_ref;

/** CONSUMER_FETCH_WAIT: stream:str, name:str, limit:u32, max_wait_ms:u32
 * (`decoded` as above). */
typedef struct rift_frame_fetch_wait {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint32_t limit;
    uint32_t max_wait_ms;
    unsigned decoded;
} rift_frame_fetch_wait;

/**
 * CONSUMER_INFO: name:str, filter:str, start:u8, start_value:u64,
 * ack_wait_ms:u32, max_ack_pending:u32, start_sequence:u64,
 * next_sequence:u64, pending:u32, created:u8, max_deliver:u32,
 * terminated:u64, max_delivered:u64. `name` is the client's
 * name (not the scoped one); `start_sequence` what the start resolved to;
 * `created` 1 when this CONSUMER_OPEN_EXT created the consumer.
 */
typedef struct rift_frame_consumer_info {
    const char *name;
    size_t name_len;
    const char *filter;
    size_t filter_len;
    uint8_t start;
    uint64_t start_value;
    uint32_t ack_wait_ms;
    uint32_t max_ack_pending;
    uint64_t start_sequence;
    uint64_t next_sequence;
    uint32_t pending;
    uint8_t created;
    uint32_t max_deliver;
    uint64_t terminated;
    uint64_t max_delivered;
} rift_frame_consumer_info;

/** CONSUMER_LIST: stream:str, after:str, limit:u32. The identity's
 * consumers of |stream| whose names sort strictly after |after| ("" =
 * from the start), at most |limit| (1..=256). `decoded` counts the fields
 * decoded. */
typedef struct rift_frame_consumer_list {
    const char *stream;
    size_t stream_len;
    const char *after;
    size_t after_len;
    uint32_t limit;
    unsigned decoded;
} rift_frame_consumer_list;

/** EXT_INFO: version:u16, features:str. */
typedef struct rift_frame_ext_info {
    uint16_t version;
    const char *features;
    size_t features_len;
} rift_frame_ext_info;

int rift_frame_decode_consumer_open_ext(const uint8_t *fields, size_t len,
                                        rift_frame_consumer_open_ext *out,
                                        rift_error *err);
int rift_frame_decode_consumer_ref(const uint8_t *fields, size_t len,
                                   rift_frame_consumer_ref *out,
                                   rift_error *err);
int rift_frame_decode_fetch_wait(const uint8_t *fields, size_t len,
                                 rift_frame_fetch_wait *out, rift_error *err);
int rift_frame_decode_consumer_info(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_info *out,
                                    rift_error *err);
int rift_frame_decode_ext_info(const uint8_t *fields, size_t len,
                               rift_frame_ext_info *out, rift_error *err);
int rift_frame_decode_consumer_list(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_list *out,
                                    rift_error *err);
/**
 * CONSUMER_LIST_RESULT: count:u32, count x (the fields of CONSUMER_INFO),
 * more:u8 (1: consumers after the last one remain). Fills out[0..count)
 * (pointing into |fields|); a count above |cap| or 256, or a `more` above 1,
 * is "invalid consumer list".
 */
int rift_frame_decode_consumer_list_result(const uint8_t *fields, size_t len,
                                           rift_frame_consumer_info *out,
                                           size_t cap, size_t *count,
                                           bool *more, rift_error *err);

/*
 * Encoders: a whole frame (prefix included) into |buf|; the byte count,
 * or RIFT_ERR_INVALID_ARGUMENT (a string above 4,096 bytes, |cap| too
 * small). RIFT_FRAME_HEADER_MAX is always enough.
 */
rift_ssize rift_frame_encode_ext_hello(uint8_t *buf, size_t cap);
rift_ssize rift_frame_encode_ext_info(uint8_t *buf, size_t cap,
                                      uint16_t version, const char *features,
                                      size_t features_len);
rift_ssize
rift_frame_encode_consumer_open_ext(uint8_t *buf, size_t cap,
                                    const rift_frame_consumer_open_ext *f);
/* |opcode| CONSUMER_INFO_GET or CONSUMER_DELETE. */
rift_ssize rift_frame_encode_consumer_ref(uint8_t *buf, size_t cap,
                                          uint8_t opcode, const char *stream,
                                          size_t stream_len, const char *name,
                                          size_t name_len);
rift_ssize rift_frame_encode_fetch_wait(uint8_t *buf, size_t cap,
                                        const rift_frame_fetch_wait *f);
rift_ssize rift_frame_encode_consumer_info(uint8_t *buf, size_t cap,
                                           const rift_frame_consumer_info *f);
rift_ssize rift_frame_encode_consumer_list(uint8_t *buf, size_t cap,
                                           const rift_frame_consumer_list *f);
/* |count| at most 256. */
rift_ssize
rift_frame_encode_consumer_list_result(uint8_t *buf, size_t cap,
                                       const rift_frame_consumer_info *items,
                                       size_t count, bool more);
/** The bytes |f|'s fields take in a CONSUMER_LIST_RESULT (no prefix). */
size_t rift_frame_consumer_info_size(const rift_frame_consumer_info *f);

#endif /* RIFT_CODEC_FRAME_EXT_H */
