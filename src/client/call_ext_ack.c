/*
 * call_ext_ack.c — the client's calls that settle one delivery (client
 * layer): NAK, TERM and in progress (docs/protocol-v1.md "Extensions",
 * opcodes 23–25), blocking and asynchronous, each on its own stream
 * through call.c like rift_client_ack.
 */
#include "client/client_internal.h"
#include "codec/frame_ext_ack.h"

/* The frame of |opcode| into |hdr|, after the local checks; the byte
 * count or the error. */
static rift_ssize encode(uint8_t *hdr, uint8_t opcode, const char *stream,
                         size_t stream_len, const char *name, size_t name_len,
                         uint64_t sequence, uint32_t delay_ms,
                         rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    if (rc != 0 || (rc = rift_client_check_string(name, name_len, err)) != 0) {
        return rc;
    }
    if (delay_ms > RIFT_EXT_MAX_NAK_DELAY_MS) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_NAK_DELAY);
    }
    rift_frame_consumer_settle f = {
        .stream = stream,
        .stream_len = stream_len,
        .name = name,
        .name_len = name_len,
        .sequence = sequence,
        .delay_ms = delay_ms,
    };
    rift_ssize n = rift_frame_encode_consumer_settle(hdr, RIFT_FRAME_HEADER_MAX,
                                                     opcode, &f);
    if (n < 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_CLIENT_ERR_STRING);
    }
    return n;
}

static int run(rift_client *c, uint8_t opcode, const char *stream,
               size_t stream_len, const char *name, size_t name_len,
               uint64_t sequence, uint32_t delay_ms, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode(hdr, opcode, stream, stream_len, name, name_len,
                          sequence, delay_ms, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_ACK, hdr, n); /* a bare OK */
    return rift_client_call_run(&call, err);
}

static int submit(rift_client *c, uint8_t opcode, const char *stream,
                  size_t stream_len, const char *name, size_t name_len,
                  uint64_t sequence, uint32_t delay_ms, rift_client_done_cb cb,
                  void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode(hdr, opcode, stream, stream_len, name, name_len,
                          sequence, delay_ms, err);
    return rift_client_call_submit_ok(c, hdr, n, cb, arg, err);
}

int rift_client_nak(rift_client *c, const char *stream, size_t stream_len,
                    const char *name, size_t name_len, uint64_t sequence,
                    uint32_t delay_ms, rift_error *err) {
    return run(c, RIFT_OP_CONSUMER_NAK, stream, stream_len, name, name_len,
               sequence, delay_ms, err);
}

int rift_client_term(rift_client *c, const char *stream, size_t stream_len,
                     const char *name, size_t name_len, uint64_t sequence,
                     rift_error *err) {
    return run(c, RIFT_OP_CONSUMER_TERM, stream, stream_len, name, name_len,
               sequence, 0, err);
}

int rift_client_in_progress(rift_client *c, const char *stream,
                            size_t stream_len, const char *name,
                            size_t name_len, uint64_t sequence,
                            rift_error *err) {
    return run(c, RIFT_OP_CONSUMER_PROGRESS, stream, stream_len, name, name_len,
               sequence, 0, err);
}

int rift_client_nak_async(rift_client *c, const char *stream, size_t stream_len,
                          const char *name, size_t name_len, uint64_t sequence,
                          uint32_t delay_ms, rift_client_done_cb cb, void *arg,
                          rift_error *err) {
    return submit(c, RIFT_OP_CONSUMER_NAK, stream, stream_len, name, name_len,
                  sequence, delay_ms, cb, arg, err);
}

int rift_client_term_async(rift_client *c, const char *stream,
                           size_t stream_len, const char *name, size_t name_len,
                           uint64_t sequence, rift_client_done_cb cb, void *arg,
                           rift_error *err) {
    return submit(c, RIFT_OP_CONSUMER_TERM, stream, stream_len, name, name_len,
                  sequence, 0, cb, arg, err);
}

int rift_client_in_progress_async(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len, uint64_t sequence,
                                  rift_client_done_cb cb, void *arg,
                                  rift_error *err) {
    return submit(c, RIFT_OP_CONSUMER_PROGRESS, stream, stream_len, name,
                  name_len, sequence, 0, cb, arg, err);
}
