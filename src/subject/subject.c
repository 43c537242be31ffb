/*
 * subject.c — subject and pattern validation and wildcard matching (subject
 * layer). See subject.h.
 */
#include "subject/subject.h"

#include <string.h>

bool rift_char_is_space_or_control(uint32_t cp) {
    /* General category Cc. */
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
        return true;
    }
    /* Unicode White_Space, as Rust's char::is_whitespace. */
    switch (cp) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return true;
    default:
        break;
    }
    return cp >= 0x2000 && cp <= 0x200A;
}

/* ---- One-pass classification ---- */

/*
 * Byte classes for the scanner. Every ASCII byte that is whitespace or a
 * control character is BAD outright; bytes >= 0x80 need the UTF-8 pass
 * because only whole code points can be whitespace (U+00A0, U+3000, ...).
 */
enum {
    C_OK = 0,
    C_BAD = 1,
    C_DOT = 2,
    C_STAR = 3,
    C_GT = 4,
    C_HIGH = 5,
};

/* clang-format off */
static const uint8_t byte_class[256] = {
    /* 0x00 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x10 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x20 */ 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0,
    /* 0x30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0,
    /* 0x40 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x60 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x70 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    /* 0x80 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0x90 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xA0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xB0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xC0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xD0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xE0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    /* 0xF0 */ 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
};
/* clang-format on */

/* Well-formed UTF-8 with no whitespace or control code point. */
static bool utf8_clean(const uint8_t *p, size_t len) {
    if (!rift_utf8_valid(p, len)) {
        return false;
    }
    size_t pos = 0;
    while (pos < len) {
        if (p[pos] < 0x80) {
            pos++; /* ASCII was already classified by the scanner. */
            continue;
        }
        if (rift_char_is_space_or_control(rift_utf8_next(p, len, &pos))) {
            return false;
        }
    }
    return true;
}

rift_subject_kind rift_subject_scan(const char *s, size_t len,
                                    size_t max_bytes) {
    if (len == 0 || len > max_bytes) {
        return RIFT_SUBJECT_INVALID;
    }
    const uint8_t *p = (const uint8_t *)s;
    size_t tok = 0; /* start of the current token */
    bool high = false, wild = false;
    for (size_t i = 0; i < len; i++) {
        switch (byte_class[p[i]]) {
        case C_OK:
            break;
        case C_HIGH:
            high = true;
            break;
        case C_DOT:
            if (i == tok) {
                return RIFT_SUBJECT_INVALID; /* leading dot or ".." */
            }
            tok = i + 1;
            break;
        case C_STAR:
            /* '*' must be a whole token. */
            if (i != tok || (i + 1 < len && p[i + 1] != '.')) {
                return RIFT_SUBJECT_INVALID;
            }
            wild = true;
            break;
        case C_GT:
            /* '>' must be a whole token and the last one. */
            if (i != tok || i + 1 != len) {
                return RIFT_SUBJECT_INVALID;
            }
            wild = true;
            break;
        default:
            return RIFT_SUBJECT_INVALID;
        }
    }
    if (tok == len) {
        return RIFT_SUBJECT_INVALID; /* trailing dot */
    }
    if (high && !utf8_clean(p, len)) {
        return RIFT_SUBJECT_INVALID;
    }
    return wild ? RIFT_SUBJECT_WILDCARD : RIFT_SUBJECT_LITERAL;
}

bool rift_subject_valid(const char *s, size_t len, bool wildcards,
                        size_t max_bytes) {
    rift_subject_kind k = rift_subject_scan(s, len, max_bytes);
    return k == RIFT_SUBJECT_LITERAL ||
           (wildcards && k != RIFT_SUBJECT_INVALID);
}

bool rift_subject_has_wildcard(const char *s, size_t len) {
    size_t tok = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (i - tok == 1 && (s[tok] == '*' || s[tok] == '>')) {
                return true;
            }
            tok = i + 1;
        }
    }
    return false;
}

/* ---- Matching ---- */

bool rift_subject_matches(const char *pattern, size_t plen, const char *subject,
                          size_t slen) {
    size_t pi = 0, si = 0;
    for (;;) {
        if (pi >= plen) {
            return si >= slen;
        }
        if (si >= slen) {
            return false;
        }
        const char *pdot = memchr(pattern + pi, '.', plen - pi);
        size_t pend = pdot ? (size_t)(pdot - pattern) : plen;
        const char *sdot = memchr(subject + si, '.', slen - si);
        size_t send = sdot ? (size_t)(sdot - subject) : slen;
        size_t ptl = pend - pi, stl = send - si;
        if (ptl == 1 && pattern[pi] == '>') {
            return true; /* at least one subject token remains */
        }
        if (!(ptl == 1 && pattern[pi] == '*') &&
            (ptl != stl || memcmp(pattern + pi, subject + si, ptl) != 0)) {
            return false;
        }
        pi = pend == plen ? plen : pend + 1;
        si = send == slen ? slen : send + 1;
    }
}
