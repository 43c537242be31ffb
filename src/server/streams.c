/*
 * streams.c — retained-stream opcodes of the protocol server (server
 * layer). Placeholder until the durable store is merged.
 */
#include "server/internal.h"

void rift_srv_stream_op(srv_stream *ss, uint8_t opcode, const uint8_t *fields,
                        size_t len) {
    (void)opcode;
    (void)fields;
    (void)len;
    rift_srv_fail(ss, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
}

void rift_srv_store_detach(srv_stream *ss) {
    (void)ss;
}
