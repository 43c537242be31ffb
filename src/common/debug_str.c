/*
 * debug_str.c — Rust `{:?}` rendering of strings for configuration error
 * texts (common layer). See debug_str.h. Error path only: clarity over
 * speed, but still no allocation.
 */
#include "common/debug_str.h"

#include <stdio.h>

bool rift_debug_char_escaped(uint32_t cp) {
    if (cp < 0x80) {
        return cp < 0x20 || cp == 0x7F;
    }
    /* Binary search over the sorted, disjoint generated ranges. */
    size_t lo = 0, hi = rift_debug_escape_nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < rift_debug_escape_ranges[mid][0]) {
            hi = mid;
        } else if (cp > rift_debug_escape_ranges[mid][1]) {
            lo = mid + 1;
        } else {
            return true;
        }
    }
    return false;
}

/* Appends |n| bytes at |*pos|, writing only what fits before |cap| - 1. */
static void put(char *buf, size_t cap, size_t *pos, const char *src, size_t n) {
    for (size_t i = 0; i < n; i++, (*pos)++) {
        if (cap > 0 && *pos < cap - 1) {
            buf[*pos] = src[i];
        }
    }
}

/* Length of the well-formed UTF-8 sequence at |p|[i], or 0 if malformed. */
static size_t seq_len(const uint8_t *p, size_t len, size_t i) {
    uint8_t c = p[i];
    size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (n > len - i || !rift_utf8_valid(p + i, n)) {
        return 0;
    }
    return n;
}

size_t rift_debug_str(char *buf, size_t cap, const char *s, size_t len) {
    const uint8_t *p = (const uint8_t *)s;
    size_t pos = 0;
    char tmp[16];
    put(buf, cap, &pos, "\"", 1);
    size_t i = 0;
    while (i < len) {
        size_t n = seq_len(p, len, i);
        if (n == 0) {
            int k = snprintf(tmp, sizeof(tmp), "\\x%02X", p[i]);
            put(buf, cap, &pos, tmp, (size_t)k);
            i++;
            continue;
        }
        size_t at = i;
        uint32_t cp = rift_utf8_next(p, len, &at);
        switch (cp) {
        case 0:
            put(buf, cap, &pos, "\\0", 2);
            break;
        case '\t':
            put(buf, cap, &pos, "\\t", 2);
            break;
        case '\r':
            put(buf, cap, &pos, "\\r", 2);
            break;
        case '\n':
            put(buf, cap, &pos, "\\n", 2);
            break;
        case '\\':
            put(buf, cap, &pos, "\\\\", 2);
            break;
        case '"':
            put(buf, cap, &pos, "\\\"", 2);
            break;
        default:
            if (rift_debug_char_escaped(cp)) {
                int k = snprintf(tmp, sizeof(tmp), "\\u{%x}", (unsigned)cp);
                put(buf, cap, &pos, tmp, (size_t)k);
            } else {
                put(buf, cap, &pos, s + i, n);
            }
            break;
        }
        i += n;
    }
    put(buf, cap, &pos, "\"", 1);
    if (cap > 0) {
        buf[pos < cap ? pos : cap - 1] = '\0';
    }
    return pos;
}
