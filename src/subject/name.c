/*
 * name.c — name rules (subject layer). See name.h. Each rule is a length
 * check plus one pass over the bytes.
 */
#include "subject/name.h"

#include "subject/subject.h"

/* Character classes (ASCII only: every rule here is ASCII-only). */
static inline bool is_alpha(uint8_t c) {
    return (uint8_t)((c | 0x20) - 'a') < 26;
}

static inline bool is_alnum(uint8_t c) {
    return is_alpha(c) || (uint8_t)(c - '0') < 10;
}

/* [A-Za-z0-9_-], plus '.' when |dot|. */
static bool all_word(const char *s, size_t len, bool dot) {
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (!is_alnum(c) && c != '_' && c != '-' && !(dot && c == '.')) {
            return false;
        }
    }
    return true;
}

bool rift_name_valid(const char *s, size_t len) {
    return len >= 1 && len <= RIFT_NAME_MAX && all_word(s, len, true);
}

bool rift_queue_name_valid(const char *s, size_t len) {
    if (len == 0 || len > RIFT_LONG_NAME_MAX) {
        return false;
    }
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (c < 0x21 || c > 0x7E || c == '*' || c == '>') {
            return false;
        }
    }
    return true;
}

bool rift_config_stream_name_valid(const char *s, size_t len) {
    return len >= 1 && len <= RIFT_NAME_MAX && all_word(s, len, false);
}

bool rift_plugin_name_valid(const char *s, size_t len) {
    return len >= 1 && len <= RIFT_LONG_NAME_MAX && all_word(s, len, false);
}

bool rift_env_name_valid(const char *s, size_t len) {
    const uint8_t *p = (const uint8_t *)s;
    if (len == 0 || !(is_alpha(p[0]) || p[0] == '_')) {
        return false;
    }
    for (size_t i = 1; i < len; i++) {
        if (!is_alnum(p[i]) && p[i] != '_') {
            return false;
        }
    }
    return true;
}

bool rift_store_consumer_name_valid(const char *s, size_t len) {
    const uint8_t *p = (const uint8_t *)s;
    if (len == 0 || len > RIFT_LONG_NAME_MAX || !rift_utf8_valid(p, len)) {
        return false;
    }
    size_t pos = 0;
    while (pos < len) {
        if (rift_char_is_space_or_control(rift_utf8_next(p, len, &pos))) {
            return false;
        }
    }
    return true;
}
