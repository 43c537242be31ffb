/*
 * auth.c — token tags, the constant-time authentication table and the
 * validation of access settings (subject layer). See auth.h.
 */
#include "subject/auth.h"
#include "subject/name.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

int rift_auth_tag(const char *token, size_t len,
                  uint8_t tag[RIFT_AUTH_TAG_BYTES]) {
    /* GnuTLS wants a non-NULL key pointer even for an empty key. */
    static const char empty[1] = {0};
    if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, len ? token : empty, len,
                         RIFT_AUTH_MESSAGE, sizeof(RIFT_AUTH_MESSAGE) - 1,
                         tag) < 0) {
        return RIFT_ERR_TLS;
    }
    return 0;
}

/* ---- Settings ---- */

void rift_auth_settings_default(rift_auth_settings *s) {
    memset(s, 0, sizeof(*s));
    s->max_connections = 1024;
    s->max_streams_per_connection = 128;
    s->handshake_timeout_ms = 5000;
    s->io_timeout_ms = 30000;
}

static bool bytes_eq(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static int grants_validate(const rift_grant *g, size_t n, rift_error *err) {
    for (size_t i = 0; i < n; i++) {
        rift_error detail;
        if (rift_subject_validate_pattern(g[i].pattern, g[i].len, &detail) !=
            0) {
            /* Same text as the wire; reported as a bad argument here. */
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "%s",
                                  detail.text);
        }
    }
    return 0;
}

int rift_auth_settings_validate(const rift_auth_settings *s, rift_error *err) {
    if (s->max_connections == 0 || s->max_streams_per_connection == 0 ||
        s->max_streams_per_connection > RIFT_AUTH_MAX_STREAMS ||
        s->handshake_timeout_ms == 0 || s->io_timeout_ms == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid QUIC resource limits");
    }
    for (size_t i = 0; i < s->nidentities; i++) {
        const rift_identity *id = &s->identities[i];
        bool ok = id->name != NULL && rift_name_valid(id->name, id->name_len) &&
                  id->token != NULL && id->token_len > 0 &&
                  id->token_len <= RIFT_AUTH_TOKEN_MAX;
        for (size_t j = 0; ok && j < i; j++) {
            const rift_identity *prev = &s->identities[j];
            if (bytes_eq(id->name, id->name_len, prev->name, prev->name_len) ||
                bytes_eq(id->token, id->token_len, prev->token,
                         prev->token_len)) {
                ok = false;
            }
        }
        if (!ok) {
            return rift_error_set(
                err, RIFT_ERR_INVALID_ARGUMENT,
                "identity names and tokens must be nonempty and unique");
        }
        int rc = grants_validate(id->publish, id->npublish, err);
        if (rc == 0) {
            rc = grants_validate(id->subscribe, id->nsubscribe, err);
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- Table ---- */

int rift_auth_table_init(rift_auth_table *t, const rift_identity *ids, size_t n,
                         const rift_mem *mem) {
    memset(t, 0, sizeof(*t));
    t->mem = mem;
    if (n == 0) {
        return 0;
    }
    rift_auth_entry *entries = rift_calloc(mem, n, sizeof(*entries));
    if (entries == NULL) {
        return RIFT_ERR_NOMEM;
    }
    size_t done = 0;
    int rc = 0;
    for (; done < n; done++) {
        rc = rift_auth_tag(ids[done].token, ids[done].token_len,
                           entries[done].tag);
        if (rc != 0) {
            goto fail_entries;
        }
        rc =
            rift_identity_copy(&entries[done].identity, &ids[done], mem, false);
        if (rc != 0) {
            goto fail_entries;
        }
    }
    t->entries = entries;
    t->count = n;
    return 0;
fail_entries:
    for (size_t i = 0; i < done; i++) {
        rift_identity_free(&entries[i].identity);
    }
    gnutls_memset(entries, 0, n * sizeof(*entries));
    rift_free(mem, entries);
    return rc;
}

void rift_auth_table_free(rift_auth_table *t) {
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < t->count; i++) {
        rift_identity_free(&t->entries[i].identity);
    }
    if (t->entries != NULL) {
        gnutls_memset(t->entries, 0, t->count * sizeof(*t->entries));
        rift_free(t->mem, t->entries);
    }
    t->entries = NULL;
    t->count = 0;
}

const rift_identity *rift_auth_table_lookup(const rift_auth_table *t,
                                            const char *token, size_t len) {
    uint8_t tag[RIFT_AUTH_TAG_BYTES];
    if (rift_auth_tag(token, len, tag) != 0) {
        return NULL;
    }
    /*
     * Every entry is compared in full and the winner is chosen with masks,
     * not branches: neither the loop length nor the work per entry depends
     * on the secret tags. Tokens are unique, so at most one entry matches
     * (the last one would win otherwise, as in the original).
     */
    size_t found = 0;
    uint32_t any = 0;
    for (size_t i = 0; i < t->count; i++) {
        uint32_t diff = 0;
        for (size_t k = 0; k < RIFT_AUTH_TAG_BYTES; k++) {
            diff |= (uint32_t)(t->entries[i].tag[k] ^ tag[k]);
        }
        /* diff is 0..255: (diff - 1) >> 31 is 1 exactly when diff == 0. */
        uint32_t eq = (diff - 1u) >> 31;
        size_t mask = (size_t)0 - (size_t)eq;
        found = (found & ~mask) | (i & mask);
        any |= eq;
    }
    gnutls_memset(tag, 0, sizeof(tag));
    return any ? &t->entries[found].identity : NULL;
}
