/*
 * proto.h — the NATS Streaming (STAN) protocol messages (stan layer):
 * decoders from protobuf bytes to view structs and encoders back, as pure
 * functions over byte buffers.
 *
 * Field numbers are those of the STAN protocol description (ConnectRequest
 * … CloseResponse; docs/streaming.md lists them). Only the wire types the
 * protocol uses occur (varint, length-delimited); fixed32/fixed64 fields
 * of unknown numbers are skipped like any other unknown field, groups are
 * refused. A later occurrence of a field replaces an earlier one, as
 * protobuf requires.
 *
 * Decoders never copy: every string of a view points into the input, so a
 * view lives as long as the input. They fail only with RIFT_ERR_PROTOCOL
 * and one of these texts:
 *   "stan: truncated protobuf"       a varint or length runs past the end
 *   "stan: invalid protobuf"         a bad wire type, field 0, a varint
 *                                    longer than 10 bytes
 *   "stan: protobuf field too large" a string field above
 *                                    RIFT_STAN_MAX_STRING bytes
 * Payloads (PubMsg.data) are bounded only by the input.
 *
 * Encoders write into a caller buffer and return the bytes written, or 0
 * when |cap| is too small; rift_stan_encoded_bound gives a size that is
 * always enough for the given string and payload lengths.
 */
#ifndef RIFT_STAN_PROTO_H
#define RIFT_STAN_PROTO_H

#include "common/common.h"

/** Longest string field accepted by the decoders (ids, subjects, inboxes,
 * guids, durable and group names). */
#define RIFT_STAN_MAX_STRING 4096u

/** A borrowed byte range; |p| is NULL only when |len| is 0. */
typedef struct rift_stan_str {
    const char *p;
    size_t len;
} rift_stan_str;

typedef struct rift_stan_connect_req {
    rift_stan_str client_id, heartbeat_inbox, conn_id;
    int32_t protocol, ping_interval, ping_max_out;
} rift_stan_connect_req;

typedef struct rift_stan_connect_resp {
    rift_stan_str pub_prefix, sub_requests, unsub_requests, close_requests,
        error, sub_close_requests, ping_requests, public_key;
    int32_t ping_interval, ping_max_out, protocol;
} rift_stan_connect_resp;

typedef struct rift_stan_pub_msg {
    rift_stan_str client_id, guid, subject, reply, data, conn_id, sha256;
} rift_stan_pub_msg;

typedef struct rift_stan_pub_ack {
    rift_stan_str guid, error;
} rift_stan_pub_ack;

typedef struct rift_stan_msg_proto {
    uint64_t sequence;
    rift_stan_str subject, reply, data;
    int64_t timestamp; /* nanoseconds since the Unix epoch */
    bool redelivered;
    uint32_t redelivery_count;
    uint32_t crc32;
} rift_stan_msg_proto;

typedef struct rift_stan_ack {
    rift_stan_str subject;
    uint64_t sequence;
} rift_stan_ack;

/** StartPosition values of the protocol. */
typedef enum rift_stan_start_position {
    RIFT_STAN_NEW_ONLY = 0,
    RIFT_STAN_LAST_RECEIVED = 1,
    RIFT_STAN_TIME_DELTA_START = 2,
    RIFT_STAN_SEQUENCE_START = 3,
    RIFT_STAN_FIRST = 4,
} rift_stan_start_position;

typedef struct rift_stan_sub_req {
    rift_stan_str client_id, subject, q_group, inbox, durable_name;
    int32_t max_in_flight, ack_wait_in_secs;
    int32_t start_position; /* raw; validated by the service */
    uint64_t start_sequence;
    int64_t start_time_delta; /* nanoseconds */
} rift_stan_sub_req;

typedef struct rift_stan_sub_resp {
    rift_stan_str ack_inbox, error;
} rift_stan_sub_resp;

typedef struct rift_stan_unsub_req {
    rift_stan_str client_id, subject, inbox, durable_name;
} rift_stan_unsub_req;

typedef struct rift_stan_ping {
    rift_stan_str conn_id;
} rift_stan_ping;

/* CloseRequest{client_id}, CloseResponse{error} and PingResponse{error}
 * share one shape: a single string in field 1. */
typedef struct rift_stan_one_str {
    rift_stan_str value;
} rift_stan_one_str;

int rift_stan_decode_connect_req(const uint8_t *p, size_t len,
                                 rift_stan_connect_req *out, rift_error *err);
int rift_stan_decode_connect_resp(const uint8_t *p, size_t len,
                                  rift_stan_connect_resp *out, rift_error *err);
int rift_stan_decode_pub_msg(const uint8_t *p, size_t len,
                             rift_stan_pub_msg *out, rift_error *err);
int rift_stan_decode_pub_ack(const uint8_t *p, size_t len,
                             rift_stan_pub_ack *out, rift_error *err);
int rift_stan_decode_msg_proto(const uint8_t *p, size_t len,
                               rift_stan_msg_proto *out, rift_error *err);
int rift_stan_decode_ack(const uint8_t *p, size_t len, rift_stan_ack *out,
                         rift_error *err);
int rift_stan_decode_sub_req(const uint8_t *p, size_t len,
                             rift_stan_sub_req *out, rift_error *err);
int rift_stan_decode_sub_resp(const uint8_t *p, size_t len,
                              rift_stan_sub_resp *out, rift_error *err);
int rift_stan_decode_unsub_req(const uint8_t *p, size_t len,
                               rift_stan_unsub_req *out, rift_error *err);
int rift_stan_decode_ping(const uint8_t *p, size_t len, rift_stan_ping *out,
                          rift_error *err);
/** CloseRequest, CloseResponse, PingResponse (field 1 as a string). */
int rift_stan_decode_one_str(const uint8_t *p, size_t len,
                             rift_stan_one_str *out, rift_error *err);

/** rift_stan_encoded_bound: enough room for a message whose string and
 * payload fields add up to |strings_len| bytes (at most 16 fields). */
size_t rift_stan_encoded_bound(size_t strings_len);

size_t rift_stan_encode_connect_req(const rift_stan_connect_req *m,
                                    uint8_t *out, size_t cap);
size_t rift_stan_encode_connect_resp(const rift_stan_connect_resp *m,
                                     uint8_t *out, size_t cap);
size_t rift_stan_encode_pub_msg(const rift_stan_pub_msg *m, uint8_t *out,
                                size_t cap);
size_t rift_stan_encode_pub_ack(const rift_stan_pub_ack *m, uint8_t *out,
                                size_t cap);
size_t rift_stan_encode_msg_proto(const rift_stan_msg_proto *m, uint8_t *out,
                                  size_t cap);
size_t rift_stan_encode_ack(const rift_stan_ack *m, uint8_t *out, size_t cap);
size_t rift_stan_encode_sub_req(const rift_stan_sub_req *m, uint8_t *out,
                                size_t cap);
size_t rift_stan_encode_sub_resp(const rift_stan_sub_resp *m, uint8_t *out,
                                 size_t cap);
size_t rift_stan_encode_unsub_req(const rift_stan_unsub_req *m, uint8_t *out,
                                  size_t cap);
size_t rift_stan_encode_ping(const rift_stan_ping *m, uint8_t *out, size_t cap);
size_t rift_stan_encode_one_str(const rift_stan_one_str *m, uint8_t *out,
                                size_t cap);

#endif /* RIFT_STAN_PROTO_H */
