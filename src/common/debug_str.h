/*
 * debug_str.h — renders a string the way Rust's `{:?}` renders a str
 * (common layer). The configuration layer's messages embed patterns and
 * names that way (for example `invalid subject pattern "a b"; ...`), so the
 * texts match the original byte for byte.
 */
#ifndef RIFT_COMMON_DEBUG_STR_H
#define RIFT_COMMON_DEBUG_STR_H

#include "common/common.h"

/*
 * rift_debug_str writes |s|[0..len) in double quotes into |buf| (at most
 * |cap| bytes, NUL-terminated when |cap| > 0) and returns the full rendered
 * length without the NUL, like snprintf. Escapes: \" \\ \n \r \t \0; other
 * control characters, Unicode separators and spaces other than ' ', format
 * and unassigned code points, private use and grapheme extenders as
 * \u{hex} (lowercase, no leading zeros). Other characters are copied.
 * A byte that is not part of well-formed UTF-8 (never in a Rust str) is
 * rendered as \xHH (as Rust renders broken bytes of byte strings).
 */
size_t rift_debug_str(char *buf, size_t cap, const char *s, size_t len);

/* rift_debug_char_escaped: true when Rust's str Debug escapes |cp|. */
bool rift_debug_char_escaped(uint32_t cp);

/* Generated table (debug_str_table.c): sorted inclusive ranges >= U+0080. */
extern const uint32_t rift_debug_escape_ranges[][2];
extern const size_t rift_debug_escape_nranges;

#endif /* RIFT_COMMON_DEBUG_STR_H */
