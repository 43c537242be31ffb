/*
 * acl.h — pattern relations, wire and configuration validation of subjects,
 * identities and their access control (subject layer).
 *
 * Reference: docs/protocol-v1.md §3 (access control), §2.9 (validation
 * order and texts), §3.5 (consumer-name scoping), §5 (configuration pattern
 * rule). Every subject and pattern is a length-delimited byte string; none
 * is assumed NUL-terminated. The hot predicates (validation, covers,
 * can_publish, can_subscribe) never allocate.
 */
#ifndef RIFT_SUBJECT_ACL_H
#define RIFT_SUBJECT_ACL_H

#include "common/common.h"
#include "subject/subject.h"

/* ---- Pattern relations (§3.1, §3.2) ---- */

/*
 * rift_subject_covers reports containment: every subject matched by
 * |requested| is also matched by |allowed|. Token walk of §3.1: both
 * exhausted → true; allowed '>' with a requested token left (any kind) →
 * true; allowed '*' against anything but '>' → continue; equal tokens that
 * are not '>' → continue; anything else → false. Meant for valid patterns;
 * memory-safe on any bytes (tokens split on '.' as Rust's str::split).
 */
bool rift_subject_covers(const char *allowed, size_t alen,
                         const char *requested, size_t rlen);

/*
 * rift_subject_overlaps reports whether two valid patterns share at least
 * one literal subject (§3.2): both exhausted → true; either token '>' with
 * the other side still holding a token → true; either token '*' or equal
 * tokens → continue; anything else → false.
 */
bool rift_subject_overlaps(const char *left, size_t llen, const char *right,
                           size_t rlen);

/* ---- Wire validation (§3.6, §2.9) ---- */

/*
 * rift_subject_validate_pattern applies the QUIC layer's validate_pattern:
 * 1..RIFT_MAX_SUBJECT_BYTES bytes else "invalid subject length"; then the
 * token rules (non-empty tokens, no Unicode whitespace or control, whole-token
 * wildcards, '>' last, well-formed UTF-8) else "invalid subject pattern".
 * Single pass, no allocation.
 *
 * Errors: RIFT_ERR_PROTOCOL (wire code 2), with the texts above.
 */
int rift_subject_validate_pattern(const char *s, size_t len, rift_error *err);

/*
 * rift_subject_validate_literal is rift_subject_validate_pattern plus
 * "publication subject must be literal" when a '*' or '>' token is present
 * (a token such as "a>" already fails with "invalid subject pattern").
 *
 * Errors: RIFT_ERR_PROTOCOL (wire code 2).
 */
int rift_subject_validate_literal(const char *s, size_t len, rift_error *err);

/* ---- Configuration rule (§5 pattern_valid) ---- */

/*
 * rift_subject_config_valid is the Lua configuration's pattern rule:
 * non-empty, at most |max_bytes|, every byte ASCII graphic (0x21–0x7E),
 * tokens non-empty, wildcards whole-token, '>' last. Stricter than the wire:
 * non-ASCII subjects the broker accepts are rejected here.
 */
bool rift_subject_config_valid(const char *s, size_t len, size_t max_bytes);

/*
 * rift_subject_config_error fills |err| with RIFT_ERR_INVALID_CONFIG and the
 * text `messaging: invalid subject pattern <P>; use tokens, * or terminal >`
 * where <P> is |pattern| rendered like Rust's `{:?}` for a str (quoted,
 * with \", \\, \n, \t, \r, \0 and \u{..} escapes; see debug_str.h). The text
 * is cut at RIFT_ERROR_TEXT_MAX bytes. Returns RIFT_ERR_INVALID_CONFIG.
 */
int rift_subject_config_error(rift_error *err, const char *pattern, size_t len);

/* ---- Identities (§3) ---- */

/* One ACL pattern, owned by its identity (NUL-terminated for convenience). */
typedef struct rift_grant {
    char *pattern;
    size_t len;
} rift_grant;

/*
 * rift_identity is an authenticated principal: a name, its token, the
 * patterns it may publish to and subscribe to, and the control flag. The
 * publish and subscribe lists default to empty, so everything is denied.
 * The storage is the caller's (_init/_free); strings and arrays are owned
 * and allocated through |mem|. Read-only use (the can_* checks) is safe from
 * several threads at once.
 */
typedef struct rift_identity {
    const rift_mem *mem;
    char *name;
    size_t name_len;
    char *token; /* NULL once dropped (auth tables keep only its tag) */
    size_t token_len;
    rift_grant *publish;
    size_t npublish;
    rift_grant *subscribe;
    size_t nsubscribe;
    bool control;
} rift_identity;

/* rift_identity_init: an empty identity (no name, no grants, control off). */
void rift_identity_init(rift_identity *id, const rift_mem *mem);

/* rift_identity_free releases everything (the token is wiped first). */
void rift_identity_free(rift_identity *id);

/*
 * rift_identity_set_name / _set_token copy their argument, replacing any
 * previous value. No validation here: rift_auth_settings_validate checks
 * names, tokens and grants as a whole.
 *
 * Errors: RIFT_ERR_NOMEM.
 */
int rift_identity_set_name(rift_identity *id, const char *name, size_t len);
int rift_identity_set_token(rift_identity *id, const char *token, size_t len);

/*
 * rift_identity_allow_publish / _allow_subscribe append a copy of |pattern|
 * to the publish or subscribe grants (narrower identities are built by
 * granting only what they need).
 *
 * Errors: RIFT_ERR_NOMEM.
 */
int rift_identity_allow_publish(rift_identity *id, const char *pattern,
                                size_t len);
int rift_identity_allow_subscribe(rift_identity *id, const char *pattern,
                                  size_t len);

/*
 * rift_identity_copy makes |dst| a deep copy of |src| allocated through
 * |mem|; with |with_token| false the token is not copied (token NULL).
 * On failure |dst| is left initialised and empty.
 *
 * Errors: RIFT_ERR_NOMEM.
 */
int rift_identity_copy(rift_identity *dst, const rift_identity *src,
                       const rift_mem *mem, bool with_token);

/*
 * rift_identity_can_publish is §3.3, in order:
 * 1. |subject| must be literal (rift_subject_validate_literal; code 2);
 * 2. "publication not permitted" (RIFT_ERR_PERMISSION) when the subject is
 *    rift.events or below it (always, even with control), rift.control or
 *    below it without the control flag, or no publish grant covers it;
 * 3. when |rlen| > 0, |reply| must be literal (code 2 texts), then start
 *    with "_INBOX." and be covered by a SUBSCRIBE grant, else
 *    "reply must be an authorized _INBOX subject" (RIFT_ERR_PERMISSION).
 * An empty reply (|rlen| == 0, |reply| may be NULL) means none. No
 * allocation.
 *
 * Errors: RIFT_ERR_PROTOCOL, RIFT_ERR_PERMISSION.
 */
int rift_identity_can_publish(const rift_identity *id, const char *subject,
                              size_t slen, const char *reply, size_t rlen,
                              rift_error *err);

/*
 * rift_identity_can_subscribe is §3.4: validate_pattern (code 2), then
 * "subscription not permitted" (RIFT_ERR_PERMISSION) when control is off and
 * the pattern overlaps rift.control.> or covers the bare rift.control, or
 * when no subscribe grant covers it. Applies to SUBSCRIBE patterns, consumer
 * filters and each fetched record's subject. No allocation.
 *
 * Errors: RIFT_ERR_PROTOCOL, RIFT_ERR_PERMISSION.
 */
int rift_identity_can_subscribe(const rift_identity *id, const char *pattern,
                                size_t len, rift_error *err);

/* ---- Consumer-name scoping (§3.5) ---- */

/* "remote_" + 64 lowercase hex digits. */
#define RIFT_SCOPED_CONSUMER_LEN 71
/* Buffer size for a scoped name including its NUL. */
#define RIFT_SCOPED_CONSUMER_SIZE (RIFT_SCOPED_CONSUMER_LEN + 1)
/* Longest identity or consumer name rift_consumer_scope hashes (the wire's
 * string limit; valid names are far shorter). */
#define RIFT_SCOPE_INPUT_MAX 4096

/*
 * rift_consumer_scope writes into |out| the NUL-terminated internal name
 * "remote_" + hex(SHA-256(u64_be(ilen) ‖ identity ‖ consumer)). The
 * consumer name has no length prefix. |ilen| and |clen| must each be at most
 * RIFT_SCOPE_INPUT_MAX. No heap allocation.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (over-long input), RIFT_ERR_TLS (hash
 * failure).
 */
int rift_consumer_scope(const char *identity, size_t ilen, const char *consumer,
                        size_t clen, char out[RIFT_SCOPED_CONSUMER_SIZE]);

/*
 * rift_identity_consumer_name is Identity::consumer_name: |name| must pass
 * rift_name_valid, else "invalid consumer name" (RIFT_ERR_PROTOCOL); then
 * rift_consumer_scope with the identity's name.
 *
 * Errors: RIFT_ERR_PROTOCOL, RIFT_ERR_INVALID_ARGUMENT, RIFT_ERR_TLS.
 */
int rift_identity_consumer_name(const rift_identity *id, const char *name,
                                size_t len, char out[RIFT_SCOPED_CONSUMER_SIZE],
                                rift_error *err);

/* What a restricted plugin's consumer names are scoped by: "plugin:" and its
 * name. A principal name cannot hold ':' (§5), so no principal shares a
 * plugin's consumers, whatever the two are called. */
#define RIFT_PLUGIN_SCOPE_PREFIX "plugin:"

/*
 * rift_plugin_consumer_name is rift_identity_consumer_name for the restricted
 * plugin |plugin| (1..=128 bytes): the scope identity is
 * RIFT_PLUGIN_SCOPE_PREFIX + |plugin|.
 *
 * Errors: as rift_identity_consumer_name.
 */
int rift_plugin_consumer_name(const char *plugin, size_t plen, const char *name,
                              size_t len, char out[RIFT_SCOPED_CONSUMER_SIZE],
                              rift_error *err);

#endif /* RIFT_SUBJECT_ACL_H */
