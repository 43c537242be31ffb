/*
 * format.h — the on-disk formats of a stream directory (store layer): the
 * segment header, records, the state-log header and state events. Pure
 * functions over byte buffers; docs/storage-format.md is the prose
 * version. Everything is little-endian.
 */
#ifndef RIFT_STORE_FORMAT_H
#define RIFT_STORE_FORMAT_H

#include "common/buf.h"

/* ---- Files of a stream directory ---- */

#define RIFT_LOCK_FILE      "stream.lock"
#define RIFT_STATE_FILE     "state.log"
#define RIFT_STATE_TMP_FILE "state.tmp"
#define RIFT_SEG_SUFFIX     ".seg"
/* "<20-digit base sequence>.seg" */
#define RIFT_SEG_NAME_LEN 24
/* A stream holds other people's messages: only riftd's user may read it,
 * wherever storage_path points. */
#define RIFT_STORE_DIR_MODE  0700
#define RIFT_STORE_FILE_MODE 0600

/* Formats the segment file name of |base| into |out| (>= 25 bytes). */
void rift_seg_name(char *out, size_t len, uint64_t base);
/* Parses a segment file name; true and *|base| when it is one. */
bool rift_seg_name_parse(const char *name, uint64_t *base);

/* ---- Segment header (32 bytes) ----
 * magic "RIFTSEG1", u32 version 1, u32 flags 0, u64 base sequence,
 * u32 reserved 0, u32 crc32c of bytes 0..28. */

#define RIFT_SEG_MAGIC   "RIFTSEG1"
#define RIFT_SEG_HEADER  32
#define RIFT_SEG_VERSION 1

void rift_seg_header_encode(uint8_t out[RIFT_SEG_HEADER], uint64_t base);
/* 0 when valid (sets *|base|), -1 otherwise. */
int rift_seg_header_decode(const uint8_t in[RIFT_SEG_HEADER], uint64_t *base);

/* ---- Records ----
 * u32 len (whole record), u32 crc32c (over bytes 0..4 then 8..len),
 * u16 subject_len, u16 reply_len, u32 payload_len,
 * subject, reply, payload, u64 sequence, u64 timestamp_ms.
 * len = 32 + subject + reply + payload: the record's retained size. */

#define RIFT_REC_HEAD     16
#define RIFT_REC_TRAILER  16
#define RIFT_REC_OVERHEAD 32
/* Largest payload a stream may be configured for (u32::MAX - 4096). */
#define RIFT_MAX_PAYLOAD_LIMIT 4294963199u
#define RIFT_REC_MAX_SUBJECT   1024
/* Largest record length any valid configuration produces. */
#define RIFT_REC_MAX_LEN                                                       \
 ((uint64_t)RIFT_REC_OVERHEAD + 2 * RIFT_REC_MAX_SUBJECT +                     \
  RIFT_MAX_PAYLOAD_LIMIT)

/*
 * rift_rec_prepare writes the 16-byte head into |head| (crc left 0) and
 * returns the checksum of everything but the trailer, so a publisher can
 * compute it before taking the stream lock; rift_rec_finish then folds in
 * the trailer. The record's length is RIFT_REC_OVERHEAD + the three.
 */
uint32_t rift_rec_prepare(uint8_t head[RIFT_REC_HEAD], const char *subject,
                          size_t subject_len, const char *reply,
                          size_t reply_len, const uint8_t *payload,
                          size_t payload_len);
/* Writes the trailer at |rec| + len - 16 and the final crc at |rec| + 4. */
void rift_rec_finish(uint8_t *rec, uint32_t len, uint32_t partial_crc,
                     uint64_t seq, uint64_t ts);

/* A decoded view of a record held in memory. */
typedef struct rift_rec_view {
    uint32_t len;
    uint64_t seq;
    uint64_t ts;
    const char *subject;
    uint16_t subject_len;
    const char *reply;
    uint16_t reply_len;
    const uint8_t *payload;
    uint32_t payload_len;
} rift_rec_view;

/* Checks that the 16-byte head is self-consistent (lengths add up). */
bool rift_rec_head_valid(const uint8_t head[RIFT_REC_HEAD]);

/*
 * rift_rec_decode checks and decodes one whole record of |len| bytes.
 * Returns 0, or a static reason ("checksum mismatch", "invalid record
 * header") through *|why| and -1.
 */
int rift_rec_decode(const uint8_t *rec, size_t len, rift_rec_view *v,
                    const char **why);

/* ---- State log ----
 * header (16 bytes): magic "RIFTST01", u32 version 1, u32 crc32c of
 * bytes 0..12; then events: u32 len (whole event), u32 crc32c of the
 * four length bytes (so a damaged length is told from a torn tail), u32
 * crc32c (over bytes 0..4 then 12..len), u8 type, body. */

#define RIFT_STATE_MAGIC  "RIFTST01"
#define RIFT_STATE_HEADER 16
#define RIFT_EV_FRAME     12
#define RIFT_EV_MAX_LEN   (256u << 20)

enum {
    /* u32 id, str name, str filter, u64 ack_wait_ms, u32 max_ack_pending,
     * u8 start mode, u64 start argument, u64 resolved start sequence,
     * u64 next_sequence, u32 n, n x (u64 seq, u64 delivered_at_ms,
     * u32 attempts). Creation (n = 0) and snapshots. */
    RIFT_EV_CONSUMER = 1,
    /* u32 id */
    RIFT_EV_DELETE = 2,
    /* u32 id, u64 next_sequence, u64 delivered_at_ms, u32 n,
     * n x (u64 seq, u32 attempts) */
    RIFT_EV_FETCH = 3,
    /* u32 id, u64 seq */
    RIFT_EV_ACK = 4,
    /* u64 first retained sequence */
    RIFT_EV_FIRST_SEQ = 5,
    /* u64 from, u64 to: sequences [from, to) hold no record and are never
     * reused (records lost after their sequences were seen) */
    RIFT_EV_HOLE = 6,
    /* Extension, right after a consumer's CONSUMER event when any field
     * is nonzero: u32 id, u32 max_deliver, u64 terminated,
     * u64 max_delivered. */
    RIFT_EV_CONSUMER_LIMITS = 7,
    /* Extension: u32 id, u64 seq, u8 reason (0 TERM, 1 max_deliver): the
     * delivery leaves the pending set for good and is counted. */
    RIFT_EV_TERM = 8,
    /* Extension: u32 id, str label: the consumer's label (a protocol
     * server's client-side name of a scoped consumer), after its CONSUMER
     * (and CONSUMER_LIMITS) event in snapshots, or whenever it changes. */
    RIFT_EV_CONSUMER_LABEL = 9,
};

/* RIFT_EV_TERM reasons. */
#define RIFT_TERM_BY_CLIENT      0u
#define RIFT_TERM_BY_MAX_DELIVER 1u

void rift_state_header_encode(uint8_t out[RIFT_STATE_HEADER]);
int rift_state_header_decode(const uint8_t in[RIFT_STATE_HEADER]);

/* Starts an event of |type| in |b|; returns its offset (for
 * rift_ev_finish) or -1 on NOMEM. */
int64_t rift_ev_begin(rift_sbuf *b, uint8_t type);
/* Fills in the length and checksum of the event that began at |start|. */
void rift_ev_finish(rift_sbuf *b, int64_t start);

/* Field appenders; each returns 0 or RIFT_ERR_NOMEM. */
int rift_ev_put_u8(rift_sbuf *b, uint8_t v);
int rift_ev_put_u32(rift_sbuf *b, uint32_t v);
int rift_ev_put_u64(rift_sbuf *b, uint64_t v);
int rift_ev_put_str(rift_sbuf *b, const char *s, size_t len);

/* A bounds-checked reader over an event body. */
typedef struct rift_ev_reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
    bool bad;
} rift_ev_reader;

uint8_t rift_ev_get_u8(rift_ev_reader *r);
uint32_t rift_ev_get_u32(rift_ev_reader *r);
uint64_t rift_ev_get_u64(rift_ev_reader *r);
/* Returns a pointer to the string bytes (not NUL-terminated). */
const char *rift_ev_get_str(rift_ev_reader *r, size_t *len);

/*
 * rift_ev_frame_check examines the event at |p| with |avail| bytes to the
 * end of the file: 0 = a whole valid event of *|len| bytes; 1 = torn (the
 * file ends inside it, or only zero bytes follow); -1 = corrupt (*|why|).
 */
int rift_ev_frame_check(const uint8_t *p, size_t avail, uint32_t *len,
                        const char **why);

#endif /* RIFT_STORE_FORMAT_H */
