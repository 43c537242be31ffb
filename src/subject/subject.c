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

bool rift_subject_valid(const char *s, size_t len, bool wildcards,
                        size_t max_bytes) {
    const uint8_t *p = (const uint8_t *)s;
    if (len == 0 || len > max_bytes) {
        return false;
    }
    size_t tok_start = 0;
    bool ascii = true;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (c >= 0x80) {
            ascii = false;
            continue;
        }
        if (c <= 0x20 || c == 0x7F) {
            return false;
        }
        if (c == '.') {
            if (i == tok_start) {
                return false;
            }
            tok_start = i + 1;
            continue;
        }
        if (c == '*' || c == '>') {
            /* A wildcard must be the whole token; '>' must be last. */
            if (!wildcards || i != tok_start ||
                (i + 1 < len && p[i + 1] != '.')) {
                return false;
            }
            if (c == '>' && i + 1 != len) {
                return false;
            }
        }
    }
    if (tok_start == len) {
        return false; /* trailing dot */
    }
    if (!ascii) {
        if (!rift_utf8_valid(p, len)) {
            return false;
        }
        size_t pos = 0;
        while (pos < len) {
            if (rift_char_is_space_or_control(rift_utf8_next(p, len, &pos))) {
                return false;
            }
        }
    }
    return true;
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
        pi = pend + 1;
        si = send + 1;
        if (pend == plen) {
            pi = plen;
        }
        if (send == slen) {
            si = slen;
        }
    }
}
