/*
 * consumer_name.c — per-identity scoping of remote durable-consumer names
 * (subject layer), docs/protocol-v1.md §3.5. The hash input is
 * length-delimited so ("ab", "c") and ("a", "bc") never collide; the output
 * fits the store's 128-byte name limit. Restricted plugins are scoped by
 * "plugin:<name>", a string no principal name can equal. See acl.h.
 */
#include "subject/acl.h"
#include "subject/name.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

int rift_consumer_scope(const char *identity, size_t ilen, const char *consumer,
                        size_t clen, char out[RIFT_SCOPED_CONSUMER_SIZE]) {
    if (ilen > RIFT_SCOPE_INPUT_MAX || clen > RIFT_SCOPE_INPUT_MAX) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    /* u64_be(ilen) ‖ identity ‖ consumer, assembled on the stack so the
     * one-shot hash needs no allocation. */
    uint8_t input[8 + 2 * RIFT_SCOPE_INPUT_MAX];
    uint64_t n = ilen;
    for (int i = 7; i >= 0; i--) {
        input[i] = (uint8_t)(n & 0xFF);
        n >>= 8;
    }
    if (ilen > 0) {
        memcpy(input + 8, identity, ilen);
    }
    if (clen > 0) {
        memcpy(input + 8 + ilen, consumer, clen);
    }
    uint8_t digest[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, input, 8 + ilen + clen, digest) <
        0) {
        return RIFT_ERR_TLS;
    }
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "remote_", 7);
    for (size_t i = 0; i < sizeof(digest); i++) {
        out[7 + 2 * i] = hex[digest[i] >> 4];
        out[7 + 2 * i + 1] = hex[digest[i] & 0x0F];
    }
    out[RIFT_SCOPED_CONSUMER_LEN] = '\0';
    return 0;
}

int rift_identity_consumer_name(const rift_identity *id, const char *name,
                                size_t len, char out[RIFT_SCOPED_CONSUMER_SIZE],
                                rift_error *err) {
    if (!rift_name_valid(name, len)) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "invalid consumer name");
    }
    int rc = rift_consumer_scope(id->name, id->name_len, name, len, out);
    if (rc != 0) {
        return rift_error_set(err, rc, "%s", rift_strerror(rc));
    }
    return 0;
}

int rift_plugin_consumer_name(const char *plugin, size_t plen, const char *name,
                              size_t len, char out[RIFT_SCOPED_CONSUMER_SIZE],
                              rift_error *err) {
    static const char prefix[] = RIFT_PLUGIN_SCOPE_PREFIX;
    char scope[sizeof(prefix) - 1 + RIFT_SCOPE_INPUT_MAX];
    if (plen > RIFT_SCOPE_INPUT_MAX - (sizeof(prefix) - 1)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid consumer name");
    }
    if (!rift_name_valid(name, len)) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "invalid consumer name");
    }
    memcpy(scope, prefix, sizeof(prefix) - 1);
    memcpy(scope + sizeof(prefix) - 1, plugin, plen);
    int rc =
        rift_consumer_scope(scope, sizeof(prefix) - 1 + plen, name, len, out);
    if (rc != 0) {
        return rift_error_set(err, rc, "%s", rift_strerror(rc));
    }
    return 0;
}
