/*
 * frame.h — the Rift messaging protocol v1 wire codec (codec layer): frame
 * constants and opcodes, decoders from a frame body to "view" structs,
 * encoders of frame headers, and the incremental frame reader.
 *
 * Reference: docs/protocol-v1.md §2.2 (constants), §2.3 (framing), §2.4
 * (opcodes and body layouts), §2.5 (ERROR), §3.9 (vectors).
 *
 * Everything here is a pure function over byte buffers: no I/O, no locks,
 * no allocation except the frame reader's assembly buffer. Decoders never
 * copy: every string and payload of a view points into the decoded body, so
 * a view lives exactly as long as that body. Encoders write the frame
 * header (length prefix, opcode, fixed fields and strings) into a caller
 * buffer and leave the payload out, so a payload is never copied into a
 * frame buffer: the caller sends header and payload as two iovecs.
 *
 * Wire rules in brief: integers are unsigned big-endian; a frame is a u32
 * body length then the body, whose first byte is the opcode; `str` is a u16
 * length then that many bytes of UTF-8; `payload` is the rest of the body.
 *
 * Decoders do not apply subject, name or range rules (subject layer and
 * server); they fail only with RIFT_ERR_PROTOCOL and one of these texts:
 *   "frame length exceeds limit or is zero"  length 0 or above the limit
 *   "invalid string length"     str length above 4,096 or past the body end
 *   "string must be UTF-8"      str bytes are not well-formed UTF-8
 *   "truncated frame"           a fixed-size field (or str length) missing
 *   "unexpected trailing frame bytes"  bytes after a fixed layout
 *   "unknown opcode"            opcode 0, 16 and up (and, through
 *                               rift_frame_check_operation, direction)
 */
#ifndef RIFT_CODEC_FRAME_H
#define RIFT_CODEC_FRAME_H

#include "common/common.h"

/* ---- Constants (§2.2) ---- */

/** Largest payload the transport carries. */
#define RIFT_FRAME_MAX_PAYLOAD 1048576u
/** Largest frame body (opcode included): payload plus 64 KiB of header. */
#define RIFT_FRAME_MAX_BYTES (RIFT_FRAME_MAX_PAYLOAD + 65536u)
/** Longest `str` of any field. */
#define RIFT_FRAME_MAX_STRING 4096u
/** Largest AUTH frame body: opcode, u16 length, token. */
#define RIFT_FRAME_AUTH_MAX_BYTES (RIFT_FRAME_MAX_STRING + 3u)
/** Longest subject or pattern at the QUIC layer (checked by the server). */
#define RIFT_FRAME_MAX_SUBJECT 1024u
/** Largest CONSUMER_FETCH limit a remote client may ask for. */
#define RIFT_FRAME_MAX_FETCH 256u
/** Longest ERROR message on the wire; longer texts are cut (§2.5). */
#define RIFT_FRAME_ERROR_TEXT_MAX 1024u
/** Size of the u32 length prefix in front of every body. */
#define RIFT_FRAME_PREFIX_BYTES 4u

/**
 * RIFT_FRAME_HEADER_MAX bounds the header any encoder below can produce
 * (CONSUMER_OPEN with three 4,096-byte strings: 4 + 1 + 3 * 4,098 + 16).
 * A buffer of this size never makes an encoder fail for lack of room.
 */
#define RIFT_FRAME_HEADER_MAX                                                  \
 (RIFT_FRAME_PREFIX_BYTES + 1u + 3u * (2u + RIFT_FRAME_MAX_STRING) + 16u)

/**
 * RIFT_FRAME_MSG_HEADER_SIZE is the exact header size of a PUBLISH,
 * PUBLISH_ACK or MESSAGE frame with the given subject and reply lengths; a
 * caller that validated its subjects (at most 1,024 bytes each) can size a
 * stack buffer with RIFT_FRAME_MSG_HEADER_SIZE(1024, 1024) = 2,057.
 */
#define RIFT_FRAME_MSG_HEADER_SIZE(subject_len, reply_len)                     \
 (RIFT_FRAME_PREFIX_BYTES + 1u + 2u + (subject_len) + 2u + (reply_len))

/* The exact error texts of §2.3 and §2.4 (all with RIFT_ERR_PROTOCOL). */
#define RIFT_FRAME_ERR_LENGTH   "frame length exceeds limit or is zero"
#define RIFT_FRAME_ERR_STRLEN   "invalid string length"
#define RIFT_FRAME_ERR_UTF8     "string must be UTF-8"
#define RIFT_FRAME_ERR_TRUNC    "truncated frame"
#define RIFT_FRAME_ERR_TRAILING "unexpected trailing frame bytes"
#define RIFT_FRAME_ERR_OPCODE   "unknown opcode"

/** The opcodes of §2.4; anything else is unknown. */
typedef enum rift_opcode {
    RIFT_OP_AUTH = 1,
    RIFT_OP_OK = 2,
    RIFT_OP_ERROR = 3,
    RIFT_OP_PUBLISH = 4,
    RIFT_OP_PUBLISH_ACK = 5,
    RIFT_OP_SUBSCRIBE = 6,
    RIFT_OP_MESSAGE = 7,
    RIFT_OP_PING = 8,
    RIFT_OP_REQUEST = 9,
    RIFT_OP_STREAM_PUBLISH = 10,
    RIFT_OP_STORED = 11,
    RIFT_OP_CONSUMER_OPEN = 12,
    RIFT_OP_CONSUMER_FETCH = 13,
    RIFT_OP_DELIVERY = 14,
    RIFT_OP_ACK = 15,
} rift_opcode;

/** Highest known opcode. */
#define RIFT_OP_MAX 15

/* ---- Opcode helpers ---- */

/** Which side sends an opcode (§2.4 "direction"). */
typedef enum rift_frame_dir {
    RIFT_FRAME_FROM_CLIENT = 1,
    RIFT_FRAME_FROM_SERVER = 2,
} rift_frame_dir;

/** rift_opcode_name returns "PUBLISH" etc., or "UNKNOWN". Never NULL. */
const char *rift_opcode_name(uint8_t opcode);

/** rift_opcode_known is true for opcodes 1 to 15. */
bool rift_opcode_known(uint8_t opcode);

/**
 * rift_frame_check_opcode accepts |opcode| when it is known and sent by
 * |from|: 1, 4, 5, 6, 8, 9, 10, 12, 13, 15 from the client; 2, 3, 7, 11, 14
 * from the server.
 *
 * Errors: RIFT_ERR_PROTOCOL "unknown opcode".
 */
int rift_frame_check_opcode(uint8_t opcode, rift_frame_dir from,
                            rift_error *err);

/**
 * rift_frame_check_operation is the server's check of the first byte of a
 * frame read on an operation stream (any stream after the auth stream):
 * it accepts the client opcodes except AUTH, which is only valid as the
 * first frame of the first stream (§2.4). Call it before decoding.
 *
 * Errors: RIFT_ERR_PROTOCOL "unknown opcode".
 */
int rift_frame_check_operation(uint8_t opcode, rift_error *err);

/* ---- Views ---- */

/*
 * A view's strings and payload point into the body that was decoded (no
 * copy, not NUL-terminated); an absent reply or queue is the empty string
 * (length 0, pointer into the body). Views of frames whose original server
 * interleaves semantic checks with decoding carry `decoded`, the number of
 * leading fields (in wire order) decoded before success or failure, so the
 * server can report errors in the original order (see below).
 */

/** AUTH: token:str. */
typedef struct rift_frame_auth {
    const char *token;
    size_t token_len;
} rift_frame_auth;

/** ERROR: code:u16, message:str. */
typedef struct rift_frame_error {
    uint16_t code;
    const char *message;
    size_t message_len;
} rift_frame_error;

/** PUBLISH, PUBLISH_ACK and MESSAGE: subject:str, reply:str, payload. */
typedef struct rift_frame_msg {
    const char *subject;
    size_t subject_len;
    const char *reply;
    size_t reply_len;
    const uint8_t *payload;
    size_t payload_len;
} rift_frame_msg;

/** SUBSCRIBE: pattern:str, queue:str. */
typedef struct rift_frame_subscribe {
    const char *pattern;
    size_t pattern_len;
    const char *queue;
    size_t queue_len;
} rift_frame_subscribe;

/**
 * REQUEST: timeout_ms:u32, subject:str, payload (no reply field). The
 * original checks the timeout range before decoding the subject: when
 * decoded >= 1 the timeout is valid to check even if decoding failed.
 */
typedef struct rift_frame_request {
    uint32_t timeout_ms;
    const char *subject;
    size_t subject_len;
    const uint8_t *payload;
    size_t payload_len;
    unsigned decoded;
} rift_frame_request;

/** STREAM_PUBLISH: stream:str, subject:str, reply:str, payload. */
typedef struct rift_frame_stream_publish {
    const char *stream;
    size_t stream_len;
    const char *subject;
    size_t subject_len;
    const char *reply;
    size_t reply_len;
    const uint8_t *payload;
    size_t payload_len;
} rift_frame_stream_publish;

/** STORED: sequence:u64, timestamp_millis:u64 (exactly 16 bytes). */
typedef struct rift_frame_stored {
    uint64_t sequence;
    uint64_t timestamp_ms;
} rift_frame_stored;

/**
 * CONSUMER_OPEN: stream:str, name:str, filter:str, start_sequence:u64,
 * ack_wait_ms:u32, max_ack_pending:u32. The original validates the name
 * right after decoding it: when decoded >= 2 the name is valid to check
 * even if a later field failed.
 */
typedef struct rift_frame_consumer_open {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    const char *filter;
    size_t filter_len;
    uint64_t start_sequence;
    uint32_t ack_wait_ms;
    uint32_t max_ack_pending;
    unsigned decoded;
} rift_frame_consumer_open;

/** CONSUMER_FETCH: stream:str, name:str, limit:u32 (`decoded` as above). */
typedef struct rift_frame_consumer_fetch {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint32_t limit;
    unsigned decoded;
} rift_frame_consumer_fetch;

/**
 * DELIVERY: sequence:u64, timestamp_millis:u64, delivery_count:u32,
 * subject:str, reply:str, payload.
 */
typedef struct rift_frame_delivery {
    uint64_t sequence;
    uint64_t timestamp_ms;
    uint32_t delivery_count;
    const char *subject;
    size_t subject_len;
    const char *reply;
    size_t reply_len;
    const uint8_t *payload;
    size_t payload_len;
} rift_frame_delivery;

/** ACK: stream:str, name:str, sequence:u64 (`decoded` as above). */
typedef struct rift_frame_ack {
    const char *stream;
    size_t stream_len;
    const char *name;
    size_t name_len;
    uint64_t sequence;
    unsigned decoded;
} rift_frame_ack;

/**
 * rift_frame is any decoded frame: the opcode selects the union member
 * (OK and PING have none; PUBLISH, PUBLISH_ACK and MESSAGE share `msg`).
 */
typedef struct rift_frame {
    uint8_t opcode;
    union {
        rift_frame_auth auth;
        rift_frame_error error;
        rift_frame_msg msg;
        rift_frame_subscribe subscribe;
        rift_frame_request request;
        rift_frame_stream_publish stream_publish;
        rift_frame_stored stored;
        rift_frame_consumer_open consumer_open;
        rift_frame_consumer_fetch consumer_fetch;
        rift_frame_delivery delivery;
        rift_frame_ack ack;
    };
} rift_frame;

/* ---- Decoding ---- */

/*
 * Every per-opcode decoder takes the |fields| of a body, i.e. the bytes
 * after the opcode (body + 1, len - 1), decodes them in wire order and
 * reports the first failure, so errors come in the same order as in the
 * original: an earlier field's error wins over a later one's. On failure
 * the view's fields before the failing one are filled in and the rest are
 * zero. Views point into |fields|. Cost: bounds checks plus one UTF-8 scan
 * (ASCII fast path) per string; the payload is never scanned.
 *
 * Errors (all RIFT_ERR_PROTOCOL): "invalid string length",
 * "string must be UTF-8", "truncated frame",
 * "unexpected trailing frame bytes".
 */
int rift_frame_decode_auth(const uint8_t *fields, size_t len,
                           rift_frame_auth *out, rift_error *err);
/* OK and PING: |len| must be 0. */
int rift_frame_decode_empty(const uint8_t *fields, size_t len, rift_error *err);
int rift_frame_decode_error(const uint8_t *fields, size_t len,
                            rift_frame_error *out, rift_error *err);
/* PUBLISH, PUBLISH_ACK and MESSAGE (the original's decode_message). */
int rift_frame_decode_msg(const uint8_t *fields, size_t len,
                          rift_frame_msg *out, rift_error *err);
int rift_frame_decode_subscribe(const uint8_t *fields, size_t len,
                                rift_frame_subscribe *out, rift_error *err);
int rift_frame_decode_request(const uint8_t *fields, size_t len,
                              rift_frame_request *out, rift_error *err);
int rift_frame_decode_stream_publish(const uint8_t *fields, size_t len,
                                     rift_frame_stream_publish *out,
                                     rift_error *err);
int rift_frame_decode_stored(const uint8_t *fields, size_t len,
                             rift_frame_stored *out, rift_error *err);
int rift_frame_decode_consumer_open(const uint8_t *fields, size_t len,
                                    rift_frame_consumer_open *out,
                                    rift_error *err);
int rift_frame_decode_consumer_fetch(const uint8_t *fields, size_t len,
                                     rift_frame_consumer_fetch *out,
                                     rift_error *err);
int rift_frame_decode_delivery(const uint8_t *fields, size_t len,
                               rift_frame_delivery *out, rift_error *err);
int rift_frame_decode_ack(const uint8_t *fields, size_t len,
                          rift_frame_ack *out, rift_error *err);

/**
 * rift_frame_decode dispatches on the opcode (|body|[0]) to the decoder of
 * that opcode, whatever its direction (check that first with
 * rift_frame_check_operation or rift_frame_check_opcode). |out|->opcode is
 * set whenever |len| > 0, also on failure, so the caller can consult the
 * partial view (`decoded`).
 *
 * Errors (RIFT_ERR_PROTOCOL): "frame length exceeds limit or is zero" (len
 * 0), "unknown opcode", and those of the per-opcode decoders.
 */
int rift_frame_decode(const uint8_t *body, size_t len, rift_frame *out,
                      rift_error *err);

/**
 * rift_frame_take_string decodes the `str` at |buf|[*pos] (the original's
 * take_string): on success |*str|/|*str_len| point into |buf| and *pos
 * moves past it; on failure *pos is unchanged.
 *
 * Errors (RIFT_ERR_PROTOCOL): "truncated frame" (fewer than 2 bytes left),
 * "invalid string length", "string must be UTF-8".
 */
int rift_frame_take_string(const uint8_t *buf, size_t len, size_t *pos,
                           const char **str, size_t *str_len, rift_error *err);

/* ---- Encoding ---- */

/*
 * Each encoder writes a whole frame except its payload into |buf| (|cap|
 * bytes): the u32 length prefix (which counts |payload_len| where the frame
 * has a payload), the opcode, fixed fields and strings, in wire order. It
 * returns the number of bytes written; the caller then sends those bytes
 * followed by the payload. Strings are written as given: they must be
 * UTF-8 (subjects and names are validated by the caller, as the peer's
 * decoder rejects anything else). A NULL string pointer is allowed with
 * length 0 (absent reply or queue). Nothing is written on failure.
 *
 * Errors:
 *   RIFT_ERR_INVALID_ARGUMENT   a string longer than 4,096 bytes, |cap|
 *                               too small, or a wrong opcode argument
 *   RIFT_ERR_PAYLOAD_TOO_LARGE  the body would exceed
 *                               RIFT_FRAME_MAX_BYTES (1,114,112)
 * A |cap| of RIFT_FRAME_HEADER_MAX is always enough; payload limits of the
 * protocol (1 MiB) are the caller's to check, with the caller's texts.
 */
rift_ssize rift_frame_encode_auth(uint8_t *buf, size_t cap, const char *token,
                                  size_t token_len);
rift_ssize rift_frame_encode_ok(uint8_t *buf, size_t cap);
/*
 * ERROR: |message| is cut to at most 1,024 bytes at a UTF-8 character
 * boundary (§2.5), so it never fails for a long message.
 */
rift_ssize rift_frame_encode_error(uint8_t *buf, size_t cap, uint16_t code,
                                   const char *message, size_t message_len);
/* PUBLISH, PUBLISH_ACK or MESSAGE, chosen by |opcode|. */
rift_ssize rift_frame_encode_msg_header(uint8_t *buf, size_t cap,
                                        uint8_t opcode, const char *subject,
                                        size_t subject_len, const char *reply,
                                        size_t reply_len, size_t payload_len);
rift_ssize rift_frame_encode_publish_header(uint8_t *buf, size_t cap,
                                            const char *subject,
                                            size_t subject_len,
                                            const char *reply, size_t reply_len,
                                            size_t payload_len);
rift_ssize rift_frame_encode_message_header(uint8_t *buf, size_t cap,
                                            const char *subject,
                                            size_t subject_len,
                                            const char *reply, size_t reply_len,
                                            size_t payload_len);
rift_ssize rift_frame_encode_subscribe(uint8_t *buf, size_t cap,
                                       const char *pattern, size_t pattern_len,
                                       const char *queue, size_t queue_len);
rift_ssize rift_frame_encode_ping(uint8_t *buf, size_t cap);
rift_ssize rift_frame_encode_request_header(uint8_t *buf, size_t cap,
                                            uint32_t timeout_ms,
                                            const char *subject,
                                            size_t subject_len,
                                            size_t payload_len);
rift_ssize rift_frame_encode_stream_publish_header(
    uint8_t *buf, size_t cap, const char *stream, size_t stream_len,
    const char *subject, size_t subject_len, const char *reply,
    size_t reply_len, size_t payload_len);
rift_ssize rift_frame_encode_stored(uint8_t *buf, size_t cap, uint64_t sequence,
                                    uint64_t timestamp_ms);
rift_ssize rift_frame_encode_consumer_open(
    uint8_t *buf, size_t cap, const char *stream, size_t stream_len,
    const char *name, size_t name_len, const char *filter, size_t filter_len,
    uint64_t start_sequence, uint32_t ack_wait_ms, uint32_t max_ack_pending);
rift_ssize rift_frame_encode_consumer_fetch(uint8_t *buf, size_t cap,
                                            const char *stream,
                                            size_t stream_len, const char *name,
                                            size_t name_len, uint32_t limit);
rift_ssize rift_frame_encode_delivery_header(
    uint8_t *buf, size_t cap, uint64_t sequence, uint64_t timestamp_ms,
    uint32_t delivery_count, const char *subject, size_t subject_len,
    const char *reply, size_t reply_len, size_t payload_len);
rift_ssize rift_frame_encode_ack(uint8_t *buf, size_t cap, const char *stream,
                                 size_t stream_len, const char *name,
                                 size_t name_len, uint64_t sequence);

/**
 * rift_frame_encode_header encodes any |frame| (as rift_frame_decode fills
 * it) through the encoder of its opcode; the payload pointer is ignored and
 * only its length is counted. Same errors as the encoders, plus
 * RIFT_ERR_INVALID_ARGUMENT for an unknown opcode.
 */
rift_ssize rift_frame_encode_header(uint8_t *buf, size_t cap,
                                    const rift_frame *frame);

/**
 * rift_frame_payload returns the payload of |frame| (PUBLISH, PUBLISH_ACK,
 * MESSAGE, REQUEST, STREAM_PUBLISH, DELIVERY) in *data and *len, or sets them
 * to NULL/0 for frames without one.
 */
void rift_frame_payload(const rift_frame *frame, const uint8_t **data,
                        size_t *len);

/* ---- Frame reader ---- */

/*
 * rift_frame_reader cuts a byte stream into frame bodies. Feed it chunks as
 * they arrive (any fragmentation, including inside the length prefix); it
 * keeps partial prefix and body state between calls, so a cancelled or
 * paused read loses nothing.
 *
 * The declared length is checked against the reader's limit (1,114,112, or
 * 4,099 on the auth stream) as soon as the 4-byte prefix is complete and
 * before anything is allocated. When a whole body lies inside the chunk
 * being fed, the reader hands out a pointer into that chunk (zero copy).
 * Otherwise it allocates one buffer of the full declared size (through its
 * rift_mem), copies the body into it as it arrives, and hands that out; the
 * buffer is reused for the next assembled frame when large enough, and
 * released after delivery when above RIFT_FRAME_READER_KEEP_BYTES so idle
 * streams stay small.
 *
 * Typical loop in a QUIC stream-data callback:
 *
 *     size_t off = 0;
 *     while (off < len) {
 *         rift_frame_body body;
 *         rift_ssize n = rift_frame_reader_feed(&r, data + off, len - off,
 *                                               &body, &err);
 *         if (n < 0)
 *             fail (ERROR frame with err.text, or close on the auth stream);
 *         off += (size_t)n;
 *         if (body.data != NULL)
 *             handle one frame (body.data, body.len);
 *     }
 *     extend stream credit by |off|
 *
 * One reader is used by one thread at a time.
 */

/** Assembly buffers up to this size are kept for reuse after delivery. */
#define RIFT_FRAME_READER_KEEP_BYTES 4096u

typedef struct rift_frame_reader {
    const rift_mem *mem;
    uint8_t *buf;       /* assembly buffer, or NULL */
    size_t buf_cap;     /* its size */
    uint32_t limit;     /* largest accepted body length */
    uint32_t body_len;  /* declared length, once prefix_have == 4 */
    uint32_t body_have; /* body bytes already copied into buf */
    uint8_t prefix[4];  /* length prefix bytes received so far */
    uint8_t prefix_have;
    bool assembling; /* buf holds the first body_have bytes of a frame */
    bool held;       /* buf holds the body handed out by the last feed */
} rift_frame_reader;

/** A frame body handed out by rift_frame_reader_feed. */
typedef struct rift_frame_body {
    const uint8_t *data; /* NULL when no frame completed */
    size_t len;          /* body length (opcode included), >= 1 */
    bool assembled;      /* true: in the reader's buffer; false: in the chunk */
} rift_frame_body;

/**
 * rift_frame_reader_init prepares |r| with body limit |limit| (for instance
 * RIFT_FRAME_MAX_BYTES or RIFT_FRAME_AUTH_MAX_BYTES) and allocator |mem|
 * (NULL for malloc). Allocates nothing.
 */
void rift_frame_reader_init(rift_frame_reader *r, uint32_t limit,
                            const rift_mem *mem);

/** rift_frame_reader_free releases the reader's buffer. */
void rift_frame_reader_free(rift_frame_reader *r);

/**
 * rift_frame_reader_reset forgets any partial frame and held body (the
 * buffer is kept for reuse when small).
 */
void rift_frame_reader_reset(rift_frame_reader *r);

/**
 * rift_frame_reader_feed consumes bytes of |data| (|len| bytes) until one
 * frame body completes or the chunk is used up, and returns the number of
 * bytes consumed. When a frame completed, |out| describes its body (which
 * then ends exactly at data + return value when not assembled); otherwise
 * out->data is NULL and all |len| bytes were consumed. The body stays valid
 * until the next call on |r| (and, when not assembled, while |data| does).
 * Call again with the rest of the chunk to get further frames.
 *
 * On failure nothing of |data| counts as consumed and |out| has no frame.
 * A length error is final: every later call reports it again. After
 * RIFT_ERR_NOMEM the reader is as before the call, so the same chunk may
 * be fed again.
 *
 * Errors: RIFT_ERR_PROTOCOL "frame length exceeds limit or is zero",
 * RIFT_ERR_NOMEM.
 */
rift_ssize rift_frame_reader_feed(rift_frame_reader *r, const uint8_t *data,
                                  size_t len, rift_frame_body *out,
                                  rift_error *err);

/**
 * rift_frame_reader_detach gives the caller the buffer of the assembled
 * body handed out by the last feed (to keep it past the next feed without
 * a copy); free it with rift_free() and the reader's rift_mem. Returns NULL
 * when the last feed handed out no assembled body.
 */
uint8_t *rift_frame_reader_detach(rift_frame_reader *r);

/**
 * rift_frame_reader_mid_frame is true when part of a frame (at least one
 * prefix byte) has been received but not the whole frame: servers apply
 * their partial-frame deadline then, and wait indefinitely otherwise.
 */
bool rift_frame_reader_mid_frame(const rift_frame_reader *r);

/**
 * rift_frame_reader_buffered returns how many bytes of the unfinished frame
 * the reader holds (prefix plus body); 0 exactly at a frame boundary, as
 * when a peer's FIN arrives between frames.
 */
size_t rift_frame_reader_buffered(const rift_frame_reader *r);

#endif /* RIFT_CODEC_FRAME_H */
