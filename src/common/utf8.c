/*
 * utf8.c — UTF-8 well-formedness and decoding (common layer). Follows the
 * Unicode definition (no overlongs, no surrogates, nothing above U+10FFFF),
 * which is what Rust's str::from_utf8 accepts.
 */
#include "common/common.h"

bool rift_utf8_valid(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        /* Fast path over ASCII, eight bytes at a time. */
        while (i + 8 <= len) {
            uint64_t w;
            __builtin_memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL) {
                break;
            }
            i += 8;
        }
        if (i >= len) {
            break;
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) {
                lo = 0xA0;
            } else if (c == 0xED) {
                hi = 0x9F;
            }
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) {
                lo = 0x90;
            } else if (c == 0xF4) {
                hi = 0x8F;
            }
        } else {
            return false;
        }
        if (len - i - 1 < need) {
            return false;
        }
        if (s[i + 1] < lo || s[i + 1] > hi) {
            return false;
        }
        for (size_t k = 2; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return false;
            }
        }
        i += need + 1;
    }
    return true;
}

uint32_t rift_utf8_next(const uint8_t *s, size_t len, size_t *pos) {
    size_t i = *pos;
    uint8_t c = s[i];
    uint32_t cp;
    size_t need;
    if (c < 0x80) {
        *pos = i + 1;
        return c;
    } else if (c < 0xE0) {
        cp = c & 0x1F;
        need = 1;
    } else if (c < 0xF0) {
        cp = c & 0x0F;
        need = 2;
    } else {
        cp = c & 0x07;
        need = 3;
    }
    for (size_t k = 1; k <= need && i + k < len; k++) {
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    *pos = i + need + 1 > len ? len : i + need + 1;
    return cp;
}
