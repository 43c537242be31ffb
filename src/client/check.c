/*
 * check.c — the Rift client's local validation and response decoding
 * (client layer): what the original client checks before writing
 * anything (§6.2, §3.9), and the mapping of the server's ERROR frames to
 * rift_error (§2.5). Pure functions, unit-tested without a server.
 */
#include "client/client_internal.h"

#include "subject/acl.h"

int rift_client_check_publish(const char *subject, size_t subject_len,
                              const char *reply, size_t reply_len,
                              size_t payload_len, rift_error *err) {
    int rc = rift_subject_validate_literal(subject, subject_len, err);
    if (rc != 0) {
        return rc;
    }
    if (reply_len > 0 &&
        (rc = rift_subject_validate_literal(reply, reply_len, err)) != 0) {
        return rc;
    }
    if (payload_len > RIFT_FRAME_MAX_PAYLOAD) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE, "%s",
                              RIFT_CLIENT_ERR_PAYLOAD);
    }
    return 0;
}

int rift_client_check_string(const char *s, size_t len, rift_error *err) {
    if (len > RIFT_FRAME_MAX_STRING) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_CLIENT_ERR_STRING);
    }
    if (len > 0 && !rift_utf8_valid((const uint8_t *)s, len)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                              RIFT_FRAME_ERR_UTF8);
    }
    return 0;
}

int rift_client_check_request_timeout(uint64_t timeout_ms, rift_error *err) {
    if (timeout_ms > UINT32_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "request timeout too large");
    }
    if (timeout_ms == 0 || timeout_ms > RIFT_CLIENT_REQUEST_TIMEOUT_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "request timeout must be 1..120000 ms");
    }
    return 0;
}

int rift_client_error_from_frame(const uint8_t *body, size_t len,
                                 rift_error *err) {
    rift_frame_error fe;
    int rc = rift_frame_decode_error(body + 1, len - 1, &fe, err);
    if (rc != 0) {
        return rc;
    }
    int code = fe.code == 1 ? RIFT_ERR_PERMISSION : RIFT_ERR_REMOTE;
    return rift_error_set(err, code, "%.*s", (int)fe.message_len, fe.message);
}

int rift_client_expect_ok(const uint8_t *body, size_t len, rift_error *err) {
    switch (body[0]) {
    case RIFT_OP_OK:
        return rift_frame_decode_empty(body + 1, len - 1, err);
    case RIFT_OP_ERROR:
        return rift_client_error_from_frame(body, len, err);
    default:
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "%s",
                              RIFT_CLIENT_ERR_OPCODE);
    }
}
