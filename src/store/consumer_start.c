/*
 * consumer_start.c — the spellings of a consumer's start position (store
 * layer): "first", "last", "new", "seq:N", "time:T", "since:D", read into
 * and written back from a rift_consumer_config. One spelling for the CLI
 * (--start), Lua (config.start) and what they print.
 */
#include "common/common.h"
#include "common/timetext.h"
#include "rift/stream.h"

#include <stdio.h>
#include <string.h>

#define START_EXPECTS "seq:N, first, last, new, time:T or since:D"

/* Reads the digits of |s| (all of it) as a sequence number. */
static bool parse_seq(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX >> 1) / 10) {
            return false;
        }
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

static int parse_text(const char *t, rift_consumer_config *c, rift_error *err) {
    uint64_t v;
    static const struct {
        const char *name;
        rift_consumer_start start;
    } bare[] = {{"first", RIFT_START_FIRST},
                {"last", RIFT_START_LAST_RECEIVED},
                {"new", RIFT_START_NEW_ONLY}};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(bare); i++) {
        if (strcmp(t, bare[i].name) == 0) {
            c->start = bare[i].start;
            return 0;
        }
    }
    if (strncmp(t, "seq:", 4) == 0) {
        if (!parse_seq(t + 4, &v) || v == 0) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "seq:N expects N >= 1 (sequences start "
                                  "at 1)");
        }
        c->start = RIFT_START_SEQUENCE;
        c->start_sequence = v;
        return 0;
    }
    if (strncmp(t, "time:", 5) == 0) {
        if (!rift_time_parse_ms(t + 5, &v) || v > (UINT64_MAX >> 1)) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "time:T expects RFC 3339 "
                                  "(2026-01-02T15:04:05Z) or Unix "
                                  "milliseconds");
        }
        c->start = RIFT_START_TIME;
        c->start_time_ms = v;
        return 0;
    }
    if (strncmp(t, "since:", 6) == 0) {
        if (!rift_duration_parse_ms(t + 6, &v)) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "since:D expects a duration such as 90s, "
                                  "5m or 1h30m");
        }
        c->start = RIFT_START_TIME_DELTA;
        c->start_time_ms = v;
        return 0;
    }
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "expects " START_EXPECTS);
}

int rift_consumer_start_parse(const char *text, size_t len,
                              rift_consumer_config *config, rift_error *err) {
    char t[RIFT_CONSUMER_START_TEXT];
    if (text == NULL || len >= sizeof(t) || memchr(text, '\0', len) != NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "expects " START_EXPECTS);
    }
    memcpy(t, text, len);
    t[len] = '\0';
    rift_consumer_config c = *config;
    int rc = parse_text(t, &c, err);
    if (rc == 0) {
        *config = c;
    }
    return rc;
}

/* A delta in the largest unit that divides it. */
static void format_duration(uint64_t ms, char *out, size_t size) {
    static const struct {
        uint64_t ms;
        const char *unit;
    } units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
    for (size_t i = 0; ms > 0 && i < RIFT_ARRAY_LEN(units); i++) {
        if (ms % units[i].ms == 0) {
            snprintf(out, size, "%llu%s",
                     (unsigned long long)(ms / units[i].ms), units[i].unit);
            return;
        }
    }
    snprintf(out, size, "%llums", (unsigned long long)ms);
}

size_t rift_consumer_start_format(const rift_consumer_config *c, char *out,
                                  size_t size) {
    char v[RIFT_TIME_TEXT_LEN];
    int n;
    switch (c->start) {
    case RIFT_START_FIRST:
        n = snprintf(out, size, "first");
        break;
    case RIFT_START_LAST_RECEIVED:
        n = snprintf(out, size, "last");
        break;
    case RIFT_START_NEW_ONLY:
        n = snprintf(out, size, "new");
        break;
    case RIFT_START_TIME:
        rift_time_format_ms(c->start_time_ms, v);
        n = snprintf(out, size, "time:%s", v);
        break;
    case RIFT_START_TIME_DELTA:
        format_duration(c->start_time_ms, v, sizeof(v));
        n = snprintf(out, size, "since:%s", v);
        break;
    default:
        n = snprintf(out, size, "seq:%llu",
                     (unsigned long long)c->start_sequence);
        break;
    }
    return n > 0 ? (size_t)n : 0;
}
