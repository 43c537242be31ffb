/*
 * subject.h — subject and pattern syntax, wildcard matching (subject
 * layer). Pure functions over length-delimited byte strings; subjects are
 * never assumed NUL-terminated.
 *
 * Reference: docs/protocol-v1.md §1.3 (broker validation), §1.4
 * (matching). The wire (§3.6) and configuration (§5) rules, containment
 * and the ACL live in acl.h.
 */
#ifndef RIFT_SUBJECT_SUBJECT_H
#define RIFT_SUBJECT_SUBJECT_H

#include "common/common.h"

/* Longest subject the QUIC layer accepts (§2.2). */
#define RIFT_MAX_SUBJECT_BYTES 1024

/*
 * rift_subject_valid applies the broker's validate_subject (§1.3): non-empty,
 * at most |max_bytes| bytes, valid UTF-8 without Unicode whitespace or
 * control characters, tokens split on '.' non-empty, '*' and '>' only as
 * whole tokens and only when |wildcards| is true, '>' last.
 */
bool rift_subject_valid(const char *s, size_t len, bool wildcards,
                        size_t max_bytes);

/*
 * rift_subject_kind classifies a subject or pattern in one pass: invalid
 * under the broker rule (§1.3 with wildcards allowed), a valid literal, or a
 * valid pattern with at least one '*' or '>' token.
 */
typedef enum rift_subject_kind {
    RIFT_SUBJECT_INVALID = 0,
    RIFT_SUBJECT_LITERAL = 1,
    RIFT_SUBJECT_WILDCARD = 2,
} rift_subject_kind;

/*
 * rift_subject_scan returns the kind of |s|[0..len) under the §1.3 rule with
 * wildcards allowed and the byte limit |max_bytes|. No allocation; one pass
 * over the bytes (plus a UTF-8 pass only when a byte >= 0x80 is present).
 * rift_subject_valid(s, len, w, max) == (scan != INVALID && (w || scan ==
 * LITERAL)).
 */
rift_subject_kind rift_subject_scan(const char *s, size_t len,
                                    size_t max_bytes);

/* rift_subject_has_wildcard: true when some whole token is '*' or '>'. */
bool rift_subject_has_wildcard(const char *s, size_t len);

/*
 * rift_subject_matches walks |pattern| against the literal |subject| (§1.4):
 * '*' matches one token, a terminal '>' one or more, literals byte-equal.
 * Both must already be valid.
 */
bool rift_subject_matches(const char *pattern, size_t plen, const char *subject,
                          size_t slen);

/* rift_char_is_space_or_control: Rust char::is_whitespace || is_control. */
bool rift_char_is_space_or_control(uint32_t cp);

#endif /* RIFT_SUBJECT_SUBJECT_H */
