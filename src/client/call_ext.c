/*
 * call_ext.c — the client's calls of the protocol extensions (client
 * layer): the probe, consumer open with a start position, info, delete,
 * the waiting fetch and the consumer list (docs/protocol-v1.md
 * "Extensions"). Each runs on its own stream through call.c, blocking or
 * asynchronous; the two share one encoder per operation.
 */
#include "client/client_internal.h"
#include "codec/frame_ext.h"

#include <stddef.h>
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

static void info_from_frame(const rift_frame_consumer_info *fi,
                            rift_client_consumer_info *out) {
    memset(out, 0, sizeof(*out));
    size_t n = RIFT_MIN(fi->filter_len, sizeof(out->filter) - 1);
    memcpy(out->filter, fi->filter, n);
    rift_consumer_config_default(&out->config);
    out->config.filter = out->filter;
    out->config.filter_len = n;
    out->config.start = (rift_consumer_start)fi->start;
    if (fi->start == RIFT_START_SEQUENCE) {
        out->config.start_sequence = fi->start_value;
    } else {
        out->config.start_time_ms = fi->start_value;
    }
    out->config.ack_wait_ms = fi->ack_wait_ms;
    out->config.max_ack_pending = fi->max_ack_pending;
    out->config.max_deliver = fi->max_deliver;
    out->terminated = fi->terminated;
    out->max_delivered = fi->max_delivered;
    out->start_sequence = fi->start_sequence;
    out->next_sequence = fi->next_sequence;
    out->pending = fi->pending;
    out->created = fi->created != 0;
}

/* A page's entries live behind a header that remembers the allocator, so
 * rift_client_consumer_list_free needs no client. */
typedef union list_head {
    const rift_mem *mem;
    max_align_t align;
} list_head;

void rift_client_consumer_list_free(rift_client_consumer_entry *entries) {
    if (entries != NULL) {
        list_head *h = (list_head *)entries - 1;
        rift_free(h->mem, h);
    }
}

static int list_answer(rift_client_call *call, const uint8_t *body, size_t len,
                       rift_error *err) {
    const rift_mem *mem = call->c->mem;
    rift_frame_consumer_info *items =
        rift_calloc(mem, call->limit, sizeof(*items));
    if (items == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t count = 0;
    bool more = false;
    int rc = rift_frame_decode_consumer_list_result(
        body + 1, len - 1, items, call->limit, &count, &more, err);
    list_head *h = NULL;
    if (rc == 0 && count > 0) {
        h = rift_malloc(mem, sizeof(*h) + count * sizeof(*call->entries));
        if (h == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    if (rc == 0 && h != NULL) {
        h->mem = mem;
        rift_client_consumer_entry *e = (rift_client_consumer_entry *)(h + 1);
        for (size_t i = 0; i < count; i++) {
            size_t n = RIFT_MIN(items[i].name_len, sizeof(e[i].name) - 1);
            memcpy(e[i].name, items[i].name, n);
            e[i].name[n] = '\0';
            e[i].name_len = n;
            info_from_frame(&items[i], &e[i].info);
        }
        call->entries = e;
    }
    if (rc == 0) {
        call->nentries = count;
        call->more = more;
    }
    rift_free(mem, items);
    return rc;
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
    if (call->kind == RIFT_CALL_CONSUMER_LIST) {
        return list_answer(call, body, len, err);
    }
    rift_frame_consumer_info fi;
    int rc = rift_frame_decode_consumer_info(body + 1, len - 1, &fi, err);
    if (rc != 0 || call->info == NULL) {
        return rc;
    }
    info_from_frame(&fi, call->info);
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

/* Three strings and 21 bytes of numbers: a little over the v1 bound. */
#define OPEN_HDR_MAX (RIFT_FRAME_HEADER_MAX + 8)

/* The checks and frames each call shares with its asynchronous twin: the
 * header length in |hdr|, or a negative error code with |err| set. */
static rift_ssize encode_open(uint8_t hdr[OPEN_HDR_MAX], const char *stream,
                              size_t stream_len, const char *name,
                              size_t name_len,
                              const rift_consumer_config *config,
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
    rift_ssize n = rift_frame_encode_consumer_open_ext(hdr, OPEN_HDR_MAX, &f);
    return n < 0 ? string_error(err) : n;
}

/* CONSUMER_INFO_GET or CONSUMER_DELETE. */
static rift_ssize encode_ref(uint8_t *hdr, uint8_t opcode, const char *stream,
                             size_t stream_len, const char *name,
                             size_t name_len, rift_error *err) {
    int rc = check_ref(stream, stream_len, name, name_len, err);
    if (rc != 0) {
        return rc;
    }
    rift_ssize n = rift_frame_encode_consumer_ref(
        hdr, RIFT_FRAME_HEADER_MAX, opcode, stream, stream_len, name, name_len);
    return n < 0 ? string_error(err) : n;
}

static rift_ssize encode_wait(uint8_t *hdr, const char *stream,
                              size_t stream_len, const char *name,
                              size_t name_len, uint32_t limit,
                              uint32_t max_wait_ms, rift_error *err) {
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
    rift_ssize n = rift_frame_encode_fetch_wait(hdr, RIFT_FRAME_HEADER_MAX, &f);
    return n < 0 ? string_error(err) : n;
}

static rift_ssize encode_list(uint8_t *hdr, const char *stream,
                              size_t stream_len, const char *after,
                              size_t after_len, uint32_t limit,
                              rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    if (rc != 0 || (after_len > 0 && (rc = rift_client_check_string(
                                          after, after_len, err)) != 0)) {
        return rc;
    }
    if (limit == 0 || limit > RIFT_EXT_MAX_LIST) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_EXT_ERR_LIST_LIMIT);
    }
    rift_frame_consumer_list f = {
        .stream = stream,
        .stream_len = stream_len,
        .after = after_len > 0 ? after : "",
        .after_len = after_len,
        .limit = limit,
    };
    rift_ssize n =
        rift_frame_encode_consumer_list(hdr, RIFT_FRAME_HEADER_MAX, &f);
    return n < 0 ? string_error(err) : n;
}

/* ---- Blocking ---- */

static int run_info(rift_client *c, const uint8_t *hdr, rift_ssize n,
                    rift_client_consumer_info *info, rift_error *err) {
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_CONSUMER_INFO, hdr, n);
    rift_client_consumer_info scratch;
    call.info = info != NULL ? info : &scratch;
    return rift_client_call_run(&call, err);
}

int rift_client_consumer_open_ext(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len,
                                  const rift_consumer_config *config,
                                  rift_client_consumer_info *info,
                                  rift_error *err) {
    uint8_t hdr[OPEN_HDR_MAX];
    rift_ssize n =
        encode_open(hdr, stream, stream_len, name, name_len, config, err);
    return run_info(c, hdr, n, info, err);
}

int rift_client_consumer_get_info(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len,
                                  rift_client_consumer_info *info,
                                  rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_ref(hdr, RIFT_OP_CONSUMER_INFO_GET, stream,
                              stream_len, name, name_len, err);
    return run_info(c, hdr, n, info, err);
}

int rift_client_consumer_delete(rift_client *c, const char *stream,
                                size_t stream_len, const char *name,
                                size_t name_len, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_ref(hdr, RIFT_OP_CONSUMER_DELETE, stream, stream_len,
                              name, name_len, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_ACK, hdr, n); /* a bare OK */
    return rift_client_call_run(&call, err);
}

int rift_client_fetch_wait(rift_client *c, const char *stream,
                           size_t stream_len, const char *name, size_t name_len,
                           uint32_t limit, uint32_t max_wait_ms,
                           rift_client_delivery *out, size_t *count,
                           rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_wait(hdr, stream, stream_len, name, name_len, limit,
                               max_wait_ms, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_FETCH, hdr, n);
    call.timeout_ns += (uint64_t)max_wait_ms * 1000000u;
    call.out = out;
    call.limit = limit;
    int rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        return rc;
    }
    *count = call.nmsgs;
    return 0;
}

int rift_client_consumer_list(rift_client *c, const char *stream,
                              size_t stream_len, const char *after,
                              size_t after_len, uint32_t limit,
                              rift_client_consumer_entry **entries,
                              size_t *count, bool *more, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_list(hdr, stream, stream_len, after, after_len, limit, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, RIFT_CALL_CONSUMER_LIST, hdr, n);
    call.limit = limit;
    int rc = rift_client_call_run(&call, err);
    if (rc != 0) {
        return rc;
    }
    *entries = call.entries; /* the caller's now */
    *count = call.nentries;
    *more = call.more;
    return 0;
}

/* ---- Asynchronous ---- */

static int submit_info(rift_client *c, const uint8_t *hdr, rift_ssize n,
                       rift_client_consumer_info_cb cb, void *arg,
                       rift_error *err) {
    if (n < 0) {
        return (int)n;
    }
    /* The info lives behind the call. */
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_CONSUMER_INFO, sizeof(rift_client_consumer_info), hdr,
        (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->info = (rift_client_consumer_info *)(call + 1);
    call->fn.cinfo = cb;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}

int rift_client_consumer_open_ext_async(rift_client *c, const char *stream,
                                        size_t stream_len, const char *name,
                                        size_t name_len,
                                        const rift_consumer_config *config,
                                        rift_client_consumer_info_cb cb,
                                        void *arg, rift_error *err) {
    uint8_t hdr[OPEN_HDR_MAX];
    rift_ssize n =
        encode_open(hdr, stream, stream_len, name, name_len, config, err);
    return submit_info(c, hdr, n, cb, arg, err);
}

int rift_client_consumer_get_info_async(rift_client *c, const char *stream,
                                        size_t stream_len, const char *name,
                                        size_t name_len,
                                        rift_client_consumer_info_cb cb,
                                        void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_ref(hdr, RIFT_OP_CONSUMER_INFO_GET, stream,
                              stream_len, name, name_len, err);
    return submit_info(c, hdr, n, cb, arg, err);
}

int rift_client_consumer_delete_async(rift_client *c, const char *stream,
                                      size_t stream_len, const char *name,
                                      size_t name_len, rift_client_done_cb cb,
                                      void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_ref(hdr, RIFT_OP_CONSUMER_DELETE, stream, stream_len,
                              name, name_len, err);
    return rift_client_call_submit_ok(c, hdr, n, cb, arg, err);
}

int rift_client_fetch_wait_async(rift_client *c, const char *stream,
                                 size_t stream_len, const char *name,
                                 size_t name_len, uint32_t limit,
                                 uint32_t max_wait_ms,
                                 rift_client_fetched_cb cb, void *arg,
                                 rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n = encode_wait(hdr, stream, stream_len, name, name_len, limit,
                               max_wait_ms, err);
    if (n < 0) {
        return (int)n;
    }
    /* The deliveries array lives behind the call. */
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_FETCH, limit * sizeof(rift_client_delivery), hdr,
        (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->timeout_ns += (uint64_t)max_wait_ms * 1000000u;
    call->out = (rift_client_delivery *)(call + 1);
    call->limit = limit;
    call->fn.fetched = cb;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}

int rift_client_consumer_list_async(rift_client *c, const char *stream,
                                    size_t stream_len, const char *after,
                                    size_t after_len, uint32_t limit,
                                    rift_client_consumer_listed_cb cb,
                                    void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_list(hdr, stream, stream_len, after, after_len, limit, err);
    if (n < 0) {
        return (int)n;
    }
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_CONSUMER_LIST, 0, hdr, (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->limit = limit;
    call->fn.listed = cb;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}
