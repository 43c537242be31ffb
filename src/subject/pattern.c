/*
 * pattern.c — pattern relations (covers, overlaps), wire validation and the
 * configuration pattern rule (subject layer). See acl.h.
 */
#include "subject/acl.h"
#include "common/debug_str.h"

#include <string.h>

/* ---- Token walk ---- */

/*
 * A token cursor with the semantics of Rust's str::split('.'): "" yields
 * one empty token, "a." yields "a" then "". The relations below are
 * specified over valid patterns, but mirroring split keeps them defined
 * (and memory-safe) on any input.
 */
typedef struct tok_iter {
    const char *s;
    size_t len;
    size_t pos;
    bool done;
} tok_iter;

typedef struct tok {
    const char *p;
    size_t len;
} tok;

static inline tok_iter tok_iter_make(const char *s, size_t len) {
    tok_iter it = {s, len, 0, false};
    return it;
}

static inline bool tok_next(tok_iter *it, tok *t) {
    if (it->done) {
        return false;
    }
    const char *start = it->s + it->pos;
    size_t rest = it->len - it->pos;
    const char *dot = rest ? memchr(start, '.', rest) : NULL;
    t->p = start;
    if (dot != NULL) {
        t->len = (size_t)(dot - start);
        it->pos += t->len + 1;
    } else {
        t->len = rest;
        it->done = true;
    }
    return true;
}

static inline bool tok_is(const tok *t, char c) {
    return t->len == 1 && t->p[0] == c;
}

static inline bool tok_eq(const tok *a, const tok *b) {
    return a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

/* ---- Relations ---- */

bool rift_subject_covers(const char *allowed, size_t alen,
                         const char *requested, size_t rlen) {
    tok_iter ai = tok_iter_make(allowed, alen);
    tok_iter ri = tok_iter_make(requested, rlen);
    for (;;) {
        tok a = {NULL, 0}, r = {NULL, 0};
        bool ha = tok_next(&ai, &a), hr = tok_next(&ri, &r);
        if (!ha && !hr) {
            return true;
        }
        if (!ha || !hr) {
            return false; /* one side ended early */
        }
        if (tok_is(&a, '>')) {
            return true; /* '>' contains the rest, whatever its kind */
        }
        if (tok_is(&r, '>')) {
            return false; /* only '>' contains '>' */
        }
        if (!tok_is(&a, '*') && !tok_eq(&a, &r)) {
            return false; /* includes a literal against a requested '*' */
        }
    }
}

bool rift_subject_overlaps(const char *left, size_t llen, const char *right,
                           size_t rlen) {
    tok_iter li = tok_iter_make(left, llen);
    tok_iter ri = tok_iter_make(right, rlen);
    for (;;) {
        tok l = {NULL, 0}, r = {NULL, 0};
        bool hl = tok_next(&li, &l), hr = tok_next(&ri, &r);
        if (!hl && !hr) {
            return true;
        }
        if (!hl || !hr) {
            return false; /* includes one side ending with '>' left over */
        }
        if (tok_is(&l, '>') || tok_is(&r, '>')) {
            return true;
        }
        if (!tok_is(&l, '*') && !tok_is(&r, '*') && !tok_eq(&l, &r)) {
            return false;
        }
    }
}

/* ---- Wire validation ---- */

/*
 * Both validators are one call to rift_subject_scan: its "valid" is exactly
 * validate_pattern's token rule once the length is in range, and it tells a
 * literal from a pattern in the same pass.
 */
static int validate(const char *s, size_t len, bool literal, rift_error *err) {
    if (RIFT_UNLIKELY(len == 0 || len > RIFT_MAX_SUBJECT_BYTES)) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "invalid subject length");
    }
    rift_subject_kind k = rift_subject_scan(s, len, RIFT_MAX_SUBJECT_BYTES);
    if (RIFT_LIKELY(k == RIFT_SUBJECT_LITERAL)) {
        return 0;
    }
    if (k == RIFT_SUBJECT_INVALID) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL,
                              "invalid subject pattern");
    }
    if (literal) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL,
                              "publication subject must be literal");
    }
    return 0;
}

int rift_subject_validate_pattern(const char *s, size_t len, rift_error *err) {
    return validate(s, len, false, err);
}

int rift_subject_validate_literal(const char *s, size_t len, rift_error *err) {
    return validate(s, len, true, err);
}

/* ---- Configuration rule ---- */

bool rift_subject_config_valid(const char *s, size_t len, size_t max_bytes) {
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < 0x21 || p[i] > 0x7E) {
            return false;
        }
    }
    /* On ASCII graphic bytes the broker rule is exactly the token rule. */
    return rift_subject_scan(s, len, max_bytes) != RIFT_SUBJECT_INVALID;
}

int rift_subject_config_error(rift_error *err, const char *pattern,
                              size_t len) {
    /* The text is cut at RIFT_ERROR_TEXT_MAX anyway; render at most what
     * can show (every input byte yields at least one output byte). */
    char quoted[RIFT_ERROR_TEXT_MAX + 1];
    size_t shown = RIFT_MIN(len, (size_t)RIFT_ERROR_TEXT_MAX);
    rift_debug_str(quoted, sizeof(quoted), pattern, shown);
    return rift_error_set(
        err, RIFT_ERR_INVALID_CONFIG,
        "messaging: invalid subject pattern %s; use tokens, * or terminal >",
        quoted);
}
