/*
 * parse.h — the core NATS client protocol parser (nats layer): control
 * lines (CONNECT, PUB, HPUB, SUB, UNSUB, PING, PONG, +OK, -ERR) and the
 * payloads that follow PUB and HPUB, fed as a byte stream split anywhere.
 *
 * Pure and incremental: no I/O, and no allocation beyond two bounded
 * buffers (a control line of at most max_control_line bytes and one
 * payload of at most max_payload bytes plus its CRLF), so a hostile peer
 * pins at most those. A complete line or payload already whole in the
 * caller's bytes is returned in place, without a copy. Reference: the
 * client protocol of nats-server 2.9 (docs/nats.md).
 */
#ifndef RIFT_NATS_PARSE_H
#define RIFT_NATS_PARSE_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rift_nats_op_kind {
    RIFT_NATS_OP_CONNECT = 1,
    RIFT_NATS_OP_PUB,
    RIFT_NATS_OP_HPUB,
    RIFT_NATS_OP_SUB,
    RIFT_NATS_OP_UNSUB,
    RIFT_NATS_OP_PING,
    RIFT_NATS_OP_PONG,
    RIFT_NATS_OP_OK,
    RIFT_NATS_OP_ERR,
} rift_nats_op_kind;

/* One parsed operation. Every pointer is valid until the next call of
 * rift_nats_parse on the same parser (into the fed bytes or its buffers). */
typedef struct rift_nats_op {
    rift_nats_op_kind kind;
    const char *subject; /* PUB, HPUB, SUB */
    size_t subject_len;
    const char *reply; /* PUB, HPUB; NULL when absent */
    size_t reply_len;
    const char *queue; /* SUB; NULL when absent */
    size_t queue_len;
    const char *sid; /* SUB, UNSUB */
    size_t sid_len;
    uint64_t max_msgs; /* UNSUB; 0 when absent */
    const char *args;  /* CONNECT's JSON, -ERR's text */
    size_t args_len;
    const uint8_t *data; /* PUB, HPUB: headers then payload */
    size_t header_len;   /* HPUB: the leading header block's size */
    size_t total_len;    /* headers + payload */
} rift_nats_op;

/* What went wrong; the connection is closed after any of them. */
typedef enum rift_nats_parse_error {
    RIFT_NATS_PERR_UNKNOWN_OP = -1,   /* 'Unknown Protocol Operation' */
    RIFT_NATS_PERR_CONTROL_LINE = -2, /* 'Maximum Control Line Exceeded' */
    RIFT_NATS_PERR_PAYLOAD = -3,      /* 'Maximum Payload Violation' */
    RIFT_NATS_PERR_SYNTAX = -4,       /* malformed arguments or framing */
} rift_nats_parse_error;

typedef struct rift_nats_parser {
    const rift_mem *mem;
    size_t max_line;    /* control line bytes, CRLF excluded */
    size_t max_payload; /* headers + payload bytes of one message */
    int state;
    char *line; /* max_line + 2 bytes */
    size_t line_len;
    uint8_t *pay; /* grown on demand up to max_payload + 2 */
    size_t pay_len;
    size_t pay_cap;
    rift_nats_op pending; /* the PUB/HPUB waiting for its payload */
} rift_nats_parser;

/* rift_nats_parser_init prepares |p|. Errors: RIFT_ERR_NOMEM. */
int rift_nats_parser_init(rift_nats_parser *p, const rift_mem *mem,
                          size_t max_line, size_t max_payload);

/* rift_nats_parser_free releases the buffers. */
void rift_nats_parser_free(rift_nats_parser *p);

/*
 * rift_nats_parse consumes bytes of |data| and stops after the first
 * complete operation. Returns 1 with *op filled, 0 when all of |data| was
 * taken and more is needed, RIFT_ERR_NOMEM, or a rift_nats_parse_error
 * (the parser is then unusable). *consumed says how much of |data| went
 * in; call again with the rest.
 */
int rift_nats_parse(rift_nats_parser *p, const uint8_t *data, size_t len,
                    size_t *consumed, rift_nats_op *op);

/* The -ERR text nats-server sends for |error| (without the quotes). */
const char *rift_nats_parse_error_text(int error);

#endif /* RIFT_NATS_PARSE_H */
