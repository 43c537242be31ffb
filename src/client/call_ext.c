/*
 * call_ext.c — the client's calls of the protocol extensions (client
 * layer): the probe, consumer open with a start position, info, delete
 * and the waiting fetch (docs/protocol-v1.md "Extensions"). Each is one
 * blocking call on its own stream through call.c, like the v1 calls.
 */
#include "client/client_internal.h"
#include "codec/frame_ext.h"

#include <string.h>

#define WAIT_ERR "fetch wait must be 1..120000 ms"

static int check_ref(const char *stream, size_t stream_len, const char *name,
                     size_t name_len, rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    return rc != 0 ? rc : rift_client_check_string(name, name_len, err);
}

static int string_error(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                          RIFT_CLIENT_ERR_STRING);
}

int rift_client_ext_answer(rift_client_call *call, const uint8_t *body,
                           size_t len, rift_error *err) {
    if (call->kind == RIFT_CALL_EXT_HELLO) {
        rift_frame_ext_info ei;
        int rc = rift_frame_decode_ext_info(body + 1, len - 1, &ei, err);
        if (rc == 0 && call->ext_features != NULL && call->ext_cap > 0) {
            size_t n = RIFT_MIN(ei.features_len, call->ext_cap - 1);
            memcpy(call->ext_features, ei.features, n);
            call->ext_features[n] = '\0';
        }
        return rc;
    }
    rift_frame_consumer_info fi;
    int rc = rift_frame_decode_consumer_info(body + 1, len - 1, &fi, err);
    if (rc != 0 || call->info == NULL) {
        return rc;
    }
    rift_client_consumer_info *out = call->info;
    memset(out, 0, sizeof(*out));
    size_t n = RIFT_MIN(fi.filter_len, sizeof(out->filter) - 1);
    memcpy(out->filter, fi.filter, n);
    rift_consumer_config_default(&out->config);
    out->config.filter = out->filter;
    out->config.filter_len = n;
    out->config.start = (rift_consumer_start)fi.start;
    if (fi.start == RIFT_START_SEQUENCE) {
        out->config.start_sequence = fi.start_value;
    } else {
        out->config.start_time_ms = fi.start_value;
    }
    out->config.ack_wait_ms = fi.ack_wait_ms;
    out->config.max_ack_pending = fi.max_ack_pending;
    out->config.max_deliver = fi.max_deliver;
    out->terminated = fi.terminated;
    out->max_delivered = fi.max_delivered;
    out->start_sequence = fi.start_sequence;
    out->next_sequence = fi.next_sequence;
    out->pending = fi.pending;
    out->created = fi.created != 0;
    return 0;
}

int rift_client_extensions(rift_client *c, bool *supported, char *features,
                           size_t cap, rift_error *err) {
    uint8_t hdr[16];
    rift_ssize n = rift_frame_encode_ext_hello(hdr, sizeof(hdr));
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_EXT_HELLO, hdr, n);
    call.ext_features = features;
    call.ext_cap = cap;
    if (features != NULL && cap > 0) {
        features[0] = '\0';
    }
    int rc = rift_client_call_run(&call, err);
    if (rc == 0) {
        *supported = !call.ext_none;
    }
    return rc;
}

int rift_client_consumer_open_ext(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len,
                                  const rift_consumer_config *config,
                                  rift_client_consumer_info *info,
                                  rift_error *err) {
    rift_consumer_config cfg;
    if (config != NULL) {
        cfg = *config;
    } else {
        rift_consumer_config_default(&cfg);
    }
    int rc = check_ref(stream, stream_len, name, name_len, err);
    if (rc != 0 || (cfg.filter != NULL && cfg.filter_len > 0 &&
                    (rc = rift_client_check_string(cfg.filter, cfg.filter_len,
                                                   err)) != 0)) {
        return rc;
    }
    if (cfg.ack_wait_ms > UINT32_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "ack wait too large");
    }
    if ((unsigned)cfg.start > 255u) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_START);
    }
    rift_frame_consumer_open_ext f = {
        .stream = stream,
        .stream_len = stream_len,
        .name = name,
        .name_len = name_len,
        .filter = cfg.filter,
        .filter_len = cfg.filter != NULL ? cfg.filter_len : 0,
        .start = (uint8_t)cfg.start,
        .start_value = cfg.start == RIFT_START_SEQUENCE ? cfg.start_sequence
                                                        : cfg.start_time_ms,
        .ack_wait_ms = (uint32_t)cfg.ack_wait_ms,
        .max_ack_pending = cfg.max_ack_pending,
        .max_deliver = cfg.max_deliver,
    };
    /* Three strings and 21 bytes of numbers: a little over the v1 bound. */
    uint8_t hdr[RIFT_FRAME_HEADER_MAX + 8];
    rift_ssize n = rift_frame_encode_consumer_open_ext(hdr, sizeof(hdr), &f);
    if (n < 0) {
        return string_error(err);
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_CONSUMER_INFO, hdr, n);
    rift_client_consumer_info scratch;
    call.info = info != NULL ? info : &scratch;
    return rift_client_call_run(&call, err);
}

static int ref_call(rift_client *c, uint8_t opcode, const char *stream,
                    size_t stream_len, const char *name, size_t name_len,
                    rift_client_consumer_info *info, rift_error *err) {
    int rc = check_ref(stream, stream_len, name, name_len, err);
    if (rc != 0) {
        return rc;
    }
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = rift_frame_encode_consumer_ref(
        hdr, sizeof(hdr), opcode, stream, stream_len, name, name_len);
    if (n < 0) {
        return string_error(err);
    }
    rift_client_call call;
    rift_client_call_init(&call, c,
                          info != NULL ? RIFT_CALL_CONSUMER_INFO
                                       : RIFT_CALL_ACK, /* a bare OK */
                          hdr, n);
    call.info = info;
    return rift_client_call_run(&call, err);
}

int rift_client_consumer_get_info(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len,
                                  rift_client_consumer_info *info,
                                  rift_error *err) {
    rift_client_consumer_info scratch;
    return ref_call(c, RIFT_OP_CONSUMER_INFO_GET, stream, stream_len, name,
                    name_len, info != NULL ? info : &scratch, err);
}

int rift_client_consumer_delete(rift_client *c, const char *stream,
                                size_t stream_len, const char *name,
                                size_t name_len, rift_error *err) {
    return ref_call(c, RIFT_OP_CONSUMER_DELETE, stream, stream_len, name,
                    name_len, NULL, err);
}

int rift_client_fetch_wait(rift_client *c, const char *stream,
                           size_t stream_len, const char *name, size_t name_len,
                           uint32_t limit, uint32_t max_wait_ms,
                           rift_client_delivery *out, size_t *count,
                           rift_error *err) {
    int rc = check_ref(stream, stream_len, name, name_len, err);
    if (rc != 0) {
        return rc;
    }
    if (limit == 0 || limit > RIFT_FRAME_MAX_FETCH) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "fetch limit must be 1..256");
    }
    if (max_wait_ms == 0 || max_wait_ms > RIFT_EXT_MAX_WAIT_MS) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s", WAIT_ERR);
    }
    rift_frame_fetch_wait f = {
        .stream = stream,
        .stream_len = stream_len,
        .name = name,
        .name_len = name_len,
        .limit = limit,
        .max_wait_ms = max_wait_ms,
    };
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = rift_frame_encode_fetch_wait(hdr, sizeof(hdr), &f);
    if (n < 0) {
        return string_error(err);
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_FETCH, hdr, n);
    call.timeout_ns += (uint64_t)max_wait_ms * 1000000u;
    call.out = out;
    call.limit = limit;
    if ((rc = rift_client_call_run(&call, err)) != 0) {
        return rc;
    }
    *count = call.nmsgs;
    return 0;
}
