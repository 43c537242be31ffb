/*
 * auth.h — token authentication and the server's access settings (subject
 * layer): the HMAC tag of a token, a table that maps a presented token to
 * its identity in constant time, and validation of the programmatic
 * AuthConfig (resource limits and identities).
 *
 * Reference: docs/protocol-v1.md §2.6 item 7 (token check), §3.7
 * (AuthConfig validation), §5.1 (defaults).
 */
#ifndef RIFT_SUBJECT_AUTH_H
#define RIFT_SUBJECT_AUTH_H

#include "subject/acl.h"

/* HMAC-SHA256 tag size. */
#define RIFT_AUTH_TAG_BYTES 32
/* Longest token the programmatic settings accept (the wire's string limit). */
#define RIFT_AUTH_TOKEN_MAX 4096
/* The message every tag is computed over, keyed with the token. */
#define RIFT_AUTH_MESSAGE "rift-messaging/1 authentication"
/* Highest max_streams_per_connection (QUIC stream limit). */
#define RIFT_AUTH_MAX_STREAMS 65535

/*
 * rift_auth_tag computes HMAC-SHA256 keyed with |token| over the ASCII
 * message RIFT_AUTH_MESSAGE into |tag|. Any token length is accepted.
 *
 * Errors: RIFT_ERR_TLS (GnuTLS failure).
 */
int rift_auth_tag(const char *token, size_t len,
                  uint8_t tag[RIFT_AUTH_TAG_BYTES]);

/* ---- Settings (programmatic AuthConfig) ---- */

/*
 * rift_auth_settings are the access settings of a QUIC server: its
 * identities (borrowed; the server copies what it keeps) and resource
 * limits. Fill with rift_auth_settings_default, then override.
 */
typedef struct rift_auth_settings {
    const rift_identity *identities;
    size_t nidentities;
    size_t max_connections;            /* default 1024 */
    size_t max_streams_per_connection; /* default 128, at most 65,535 */
    uint64_t handshake_timeout_ms;     /* default 5000 */
    uint64_t io_timeout_ms;            /* default 30000 */
} rift_auth_settings;

/* rift_auth_settings_default: the defaults above, no identities. */
void rift_auth_settings_default(rift_auth_settings *s);

/*
 * rift_auth_settings_validate is AuthConfig::validate, in its order:
 * 1. "invalid QUIC resource limits" when max_connections is 0,
 *    max_streams_per_connection is 0 or above 65,535, or a timeout is 0;
 * 2. then for each identity in order: its name must pass rift_name_valid and
 *    differ from earlier names, its token must be 1..4,096 bytes and differ
 *    from earlier tokens, else
 *    "identity names and tokens must be nonempty and unique";
 *    then each of its publish and subscribe grants must pass
 *    rift_subject_validate_pattern ("invalid subject length" /
 *    "invalid subject pattern").
 * Cost: O(n²) name and token comparisons over n identities (start-up only).
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT, with the texts above.
 */
int rift_auth_settings_validate(const rift_auth_settings *s, rift_error *err);

/* ---- Authentication table ---- */

typedef struct rift_auth_entry {
    uint8_t tag[RIFT_AUTH_TAG_BYTES];
    rift_identity identity; /* deep copy without the token */
} rift_auth_entry;

/*
 * rift_auth_table holds, for each configured identity, a copy of it (name,
 * grants, control flag; the token itself is not kept) and the tag of its
 * token. Immutable after _init, so lookups may run from several threads.
 */
typedef struct rift_auth_table {
    const rift_mem *mem;
    rift_auth_entry *entries;
    size_t count;
} rift_auth_table;

/*
 * rift_auth_table_init builds |t| from |n| identities (normally validated
 * first with rift_auth_settings_validate). On failure |t| is empty and
 * needs no _free.
 *
 * Errors: RIFT_ERR_NOMEM, RIFT_ERR_TLS.
 */
int rift_auth_table_init(rift_auth_table *t, const rift_identity *ids, size_t n,
                         const rift_mem *mem);

/* rift_auth_table_free releases |t| (NULL is a no-op). */
void rift_auth_table_free(rift_auth_table *t);

/*
 * rift_auth_table_lookup returns the identity whose token is |token|, or
 * NULL. It computes the presented token's tag once and compares it with
 * EVERY entry's tag in constant time, with no early exit, so the time taken
 * says nothing about which identity (if any) matched or how much of a tag
 * agreed. The pointer stays valid until rift_auth_table_free.
 */
const rift_identity *rift_auth_table_lookup(const rift_auth_table *t,
                                            const char *token, size_t len);

#endif /* RIFT_SUBJECT_AUTH_H */
