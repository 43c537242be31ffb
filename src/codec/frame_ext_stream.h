/*
 * frame_ext_stream.h — the stream extensions' frames (codec layer):
 * STREAM_INFO_GET (28) and its answer STREAM_INFO_EXT (29), STREAM_CREATE
 * (30), STREAM_UPDATE (31), STREAM_PURGE (32), STREAM_DELETE (33); their
 * layouts, decoders and encoders.
 *
 * Reference: docs/protocol-v1.md, "Extensions" E.2 and E.3. Conventions
 * as in codec/frame_ext.h: decoders point into the fields after the
 * opcode and use the v1 texts; encoders write a whole frame.
 */
#ifndef RIFT_CODEC_FRAME_EXT_STREAM_H
#define RIFT_CODEC_FRAME_EXT_STREAM_H

#include "codec/frame.h"

#define RIFT_OP_STREAM_INFO_GET 28 /* client: stream:str */
#define RIFT_OP_STREAM_INFO_EXT 29 /* server: rift_frame_stream_info */
#define RIFT_OP_STREAM_CREATE   30 /* client: rift_frame_stream_spec */
#define RIFT_OP_STREAM_UPDATE   31 /* client: rift_frame_stream_spec */
#define RIFT_OP_STREAM_PURGE    32 /* client: stream:str */
#define RIFT_OP_STREAM_DELETE   33 /* client: stream:str */

/** The feature EXT_INFO always lists, and the ones it lists when the host
 * makes streams at run time (rift_server_settings.stream_admin). */
#define RIFT_EXT_FEATURE_STREAM_INFO "stream-info"
#define RIFT_EXT_FEATURES_STREAM_ADMIN                                         \
 "stream-create stream-update stream-purge stream-delete"

/** Storage kinds of a stream spec. */
#define RIFT_EXT_STORAGE_MEMORY 0u
#define RIFT_EXT_STORAGE_FILE   1u

/** rift_ext_stream_opcode_client: true for 28, 30, 31, 32, 33. */
bool rift_ext_stream_opcode_client(uint8_t opcode);

/** "STREAM_INFO_GET" etc., NULL when not one of 28..33. */
const char *rift_ext_stream_opcode_name(uint8_t opcode);

/**
 * STREAM_CREATE and STREAM_UPDATE: stream:str, subjects:str, storage:u8,
 * max_messages:u64, max_bytes:u64, max_age_ms:u64, max_payload_bytes:u64,
 * max_consumers:u32. `subjects` is a space-separated list of subject
 * patterns; a limit of 0 means the default (max_age_ms 0: no age limit).
 * `decoded` counts the fields decoded (the name is checked once >= 1).
 */
typedef struct rift_frame_stream_spec {
    const char *stream;
    size_t stream_len;
    const char *subjects;
    size_t subjects_len;
    uint8_t storage;
    uint64_t max_messages;
    uint64_t max_bytes;
    uint64_t max_age_ms;
    uint64_t max_payload_bytes;
    uint32_t max_consumers;
    unsigned decoded;
} rift_frame_stream_spec;

/**
 * STREAM_INFO_EXT: the spec's fields (name, subjects, storage and the
 * limits in effect), then messages:u64, bytes:u64, first_sequence:u64,
 * last_sequence:u64, consumers:u32, runtime:u8 (1: made at run time).
 */
typedef struct rift_frame_stream_info {
    rift_frame_stream_spec spec;
    uint64_t messages;
    uint64_t bytes;
    uint64_t first_sequence;
    uint64_t last_sequence;
    uint32_t consumers;
    uint8_t runtime;
} rift_frame_stream_info;

/* STREAM_INFO_GET, STREAM_PURGE, STREAM_DELETE: stream:str. */
int rift_frame_decode_stream_ref(const uint8_t *fields, size_t len,
                                 const char **stream, size_t *stream_len,
                                 rift_error *err);
int rift_frame_decode_stream_spec(const uint8_t *fields, size_t len,
                                  rift_frame_stream_spec *out, rift_error *err);
int rift_frame_decode_stream_info(const uint8_t *fields, size_t len,
                                  rift_frame_stream_info *out, rift_error *err);

/* Encoders: a whole frame into |buf|; the byte count, or
 * RIFT_ERR_INVALID_ARGUMENT (a string above 4,096 bytes, |cap| too small,
 * an opcode that does not take the layout). */
rift_ssize rift_frame_encode_stream_ref(uint8_t *buf, size_t cap,
                                        uint8_t opcode, const char *stream,
                                        size_t stream_len);
rift_ssize rift_frame_encode_stream_spec(uint8_t *buf, size_t cap,
                                         uint8_t opcode,
                                         const rift_frame_stream_spec *f);
rift_ssize rift_frame_encode_stream_info(uint8_t *buf, size_t cap,
                                         const rift_frame_stream_info *f);

#endif /* RIFT_CODEC_FRAME_EXT_STREAM_H */
