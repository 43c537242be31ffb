/*
 * call_stream.c — the client's calls of the stream extensions (client
 * layer): stream info, create, update, purge and delete
 * (docs/protocol-v1.md "Extensions", opcodes 28..33), blocking through
 * call.c's one-shot calls and asynchronous through its heap calls.
 */
#include "client/client_internal.h"
#include "codec/frame_ext_stream.h"

#include <string.h>

static void copy_str(char *dst, size_t cap, const char *s, size_t n) {
    n = RIFT_MIN(n, cap - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
}

int rift_client_stream_answer(rift_client_call *call, const uint8_t *body,
                              size_t len, rift_error *err) {
    rift_frame_stream_info fi;
    int rc = rift_frame_decode_stream_info(body + 1, len - 1, &fi, err);
    if (rc != 0 || call->sinfo == NULL) {
        return rc;
    }
    rift_client_stream_info *out = call->sinfo;
    memset(out, 0, sizeof(*out));
    copy_str(out->name, sizeof(out->name), fi.spec.stream, fi.spec.stream_len);
    copy_str(out->subjects, sizeof(out->subjects), fi.spec.subjects,
             fi.spec.subjects_len);
    out->file = fi.spec.storage == RIFT_EXT_STORAGE_FILE;
    out->max_messages = fi.spec.max_messages;
    out->max_bytes = fi.spec.max_bytes;
    out->max_age_ms = fi.spec.max_age_ms;
    out->max_payload_bytes = fi.spec.max_payload_bytes;
    out->max_consumers = fi.spec.max_consumers;
    out->messages = fi.messages;
    out->bytes = fi.bytes;
    out->first_sequence = fi.first_sequence;
    out->last_sequence = fi.last_sequence;
    out->consumers = fi.consumers;
    out->runtime = fi.runtime != 0;
    return 0;
}

/* ---- Encoding ---- */

static rift_ssize encode_ref(uint8_t *hdr, uint8_t opcode, const char *stream,
                             size_t stream_len, rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    if (rc != 0) {
        return rc;
    }
    rift_ssize n = rift_frame_encode_stream_ref(hdr, RIFT_FRAME_HEADER_MAX,
                                                opcode, stream, stream_len);
    if (n < 0) {
        rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                       RIFT_CLIENT_ERR_STRING);
    }
    return n;
}

/* The subjects joined with spaces into |buf| (a `str`). */
static rift_ssize encode_spec(uint8_t *hdr, uint8_t opcode, const char *stream,
                              size_t stream_len,
                              const rift_client_stream_spec *spec,
                              rift_error *err) {
    int rc = rift_client_check_string(stream, stream_len, err);
    if (rc != 0) {
        return rc;
    }
    if (spec == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "stream spec missing");
    }
    char subjects[RIFT_FRAME_MAX_STRING];
    size_t n = 0;
    for (size_t i = 0; i < spec->subjects_count; i++) {
        const char *s = spec->subjects[i];
        size_t l = s != NULL ? strlen(s) : 0;
        if (l == 0 || memchr(s, ' ', l) != NULL) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "invalid subject pattern");
        }
        if (n + l + (i > 0) > sizeof(subjects)) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                                  RIFT_CLIENT_ERR_STRING);
        }
        if (i > 0) {
            subjects[n++] = ' ';
        }
        memcpy(subjects + n, s, l);
        n += l;
    }
    rift_frame_stream_spec f = {
        .stream = stream,
        .stream_len = stream_len,
        .subjects = subjects,
        .subjects_len = n,
        .storage = spec->file ? RIFT_EXT_STORAGE_FILE : RIFT_EXT_STORAGE_MEMORY,
        .max_messages = spec->max_messages,
        .max_bytes = spec->max_bytes,
        .max_age_ms = spec->max_age_ms,
        .max_payload_bytes = spec->max_payload_bytes,
        .max_consumers = spec->max_consumers,
    };
    rift_ssize w =
        rift_frame_encode_stream_spec(hdr, RIFT_FRAME_HEADER_MAX, opcode, &f);
    if (w < 0) {
        rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                       RIFT_CLIENT_ERR_STRING);
    }
    return w;
}

/* ---- Blocking ---- */

static int run(rift_client *c, rift_call_kind kind, const uint8_t *hdr,
               rift_ssize n, rift_client_stream_info *info, rift_error *err) {
    if (n < 0) {
        return (int)n;
    }
    rift_client_call call;
    rift_client_call_init(&call, c, kind, hdr, n);
    rift_client_stream_info scratch;
    call.sinfo = info != NULL ? info : &scratch;
    return rift_client_call_run(&call, err);
}

int rift_client_stream_get_info(rift_client *c, const char *stream,
                                size_t stream_len,
                                rift_client_stream_info *info,
                                rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_INFO_GET, stream, stream_len, err);
    return run(c, RIFT_CALL_STREAM_INFO, hdr, n, info, err);
}

int rift_client_stream_create(rift_client *c, const char *stream,
                              size_t stream_len,
                              const rift_client_stream_spec *spec,
                              rift_client_stream_info *info, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_spec(hdr, RIFT_OP_STREAM_CREATE, stream, stream_len, spec, err);
    return run(c, RIFT_CALL_STREAM_INFO, hdr, n, info, err);
}

int rift_client_stream_update(rift_client *c, const char *stream,
                              size_t stream_len,
                              const rift_client_stream_spec *spec,
                              rift_client_stream_info *info, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_spec(hdr, RIFT_OP_STREAM_UPDATE, stream, stream_len, spec, err);
    return run(c, RIFT_CALL_STREAM_INFO, hdr, n, info, err);
}

int rift_client_stream_purge(rift_client *c, const char *stream,
                             size_t stream_len, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_PURGE, stream, stream_len, err);
    return run(c, RIFT_CALL_ACK, hdr, n, NULL, err); /* a bare OK */
}

int rift_client_stream_delete(rift_client *c, const char *stream,
                              size_t stream_len, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_DELETE, stream, stream_len, err);
    return run(c, RIFT_CALL_ACK, hdr, n, NULL, err);
}

/* ---- Asynchronous ---- */

static int submit_info(rift_client *c, const uint8_t *hdr, rift_ssize n,
                       rift_client_stream_info_cb cb, void *arg,
                       rift_error *err) {
    if (n < 0) {
        return (int)n;
    }
    /* The info lives behind the call. */
    rift_client_call *call = rift_client_call_async_new(
        c, RIFT_CALL_STREAM_INFO, sizeof(rift_client_stream_info), hdr,
        (size_t)n, NULL, 0, err);
    if (call == NULL) {
        return RIFT_ERR_NOMEM;
    }
    call->sinfo = (rift_client_stream_info *)(call + 1);
    call->fn.sinfo = cb;
    call->fn_arg = arg;
    return rift_client_call_submit(call, err);
}

int rift_client_stream_get_info_async(rift_client *c, const char *stream,
                                      size_t stream_len,
                                      rift_client_stream_info_cb cb, void *arg,
                                      rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_INFO_GET, stream, stream_len, err);
    return submit_info(c, hdr, n, cb, arg, err);
}

int rift_client_stream_create_async(rift_client *c, const char *stream,
                                    size_t stream_len,
                                    const rift_client_stream_spec *spec,
                                    rift_client_stream_info_cb cb, void *arg,
                                    rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_spec(hdr, RIFT_OP_STREAM_CREATE, stream, stream_len, spec, err);
    return submit_info(c, hdr, n, cb, arg, err);
}

int rift_client_stream_update_async(rift_client *c, const char *stream,
                                    size_t stream_len,
                                    const rift_client_stream_spec *spec,
                                    rift_client_stream_info_cb cb, void *arg,
                                    rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_spec(hdr, RIFT_OP_STREAM_UPDATE, stream, stream_len, spec, err);
    return submit_info(c, hdr, n, cb, arg, err);
}

int rift_client_stream_purge_async(rift_client *c, const char *stream,
                                   size_t stream_len, rift_client_done_cb cb,
                                   void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_PURGE, stream, stream_len, err);
    return rift_client_call_submit_ok(c, hdr, n, cb, arg, err);
}

int rift_client_stream_delete_async(rift_client *c, const char *stream,
                                    size_t stream_len, rift_client_done_cb cb,
                                    void *arg, rift_error *err) {
    uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    rift_ssize n =
        encode_ref(hdr, RIFT_OP_STREAM_DELETE, stream, stream_len, err);
    return rift_client_call_submit_ok(c, hdr, n, cb, arg, err);
}
