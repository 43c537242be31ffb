/*
 * timetext.c — times and durations as text (common layer): RFC 3339 and
 * Unix milliseconds, durations such as 90s or 1h30m. See timetext.h.
 */
#include "common/timetext.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void rift_time_format_ms(uint64_t ms, char out[RIFT_TIME_TEXT_LEN]) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL) {
        snprintf(out, RIFT_TIME_TEXT_LEN, "%llu ms", (unsigned long long)ms);
        return;
    }
    char date[24];
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, RIFT_TIME_TEXT_LEN, "%s.%03uZ", date, (unsigned)(ms % 1000));
}

/* Reads exactly |n| digits. */
static bool digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) {
            return false;
        }
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool all_digits(const char *s) {
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        if (!isdigit((unsigned char)*s)) {
            return false;
        }
    }
    return true;
}

bool rift_time_parse_ms(const char *s, uint64_t *ms) {
    if (all_digits(s)) {
        return sscanf(s, "%llu", (unsigned long long *)ms) == 1 &&
               strlen(s) <= 15;
    }
    const char *p = s;
    int y, mo, d, h, mi, sec, frac = 0;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
        *p++ != '-' || !digits(&p, 2, &d) ||
        (*p != 'T' && *p != 't' && *p != ' ')) {
        return false;
    }
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) ||
        *p++ != ':' || !digits(&p, 2, &sec)) {
        return false;
    }
    if (*p == '.') {
        p++;
        int n = 0;
        /* Milliseconds: the first three digits count, the rest are cut. */
        while (isdigit((unsigned char)*p)) {
            if (n < 3) {
                frac = frac * 10 + (*p - '0');
            }
            n++;
            p++;
        }
        if (n == 0) {
            return false;
        }
        for (; n < 3; n++) {
            frac *= 10;
        }
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om)) {
            return false;
        }
        offset = sign * (oh * 3600L + om * 60L);
    } else {
        return false;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
        mi > 59 || sec > 60 || y < 1970) {
        return false;
    }
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || t - offset < 0) {
        return false;
    }
    *ms = (uint64_t)(t - offset) * 1000u + (uint64_t)frac;
    return true;
}

bool rift_duration_parse_ms(const char *s, uint64_t *ms) {
    if (all_digits(s)) {
        unsigned long long v;
        if (strlen(s) > 12 || sscanf(s, "%llu", &v) != 1) {
            return false;
        }
        *ms = v * 1000u;
        return true;
    }
    uint64_t total = 0;
    const char *p = s;
    if (*p == '\0') {
        return false;
    }
    while (*p != '\0') {
        uint64_t v = 0;
        int n = 0;
        while (isdigit((unsigned char)*p)) {
            if (++n > 12) {
                return false;
            }
            v = v * 10 + (uint64_t)(*p++ - '0');
        }
        if (n == 0) {
            return false;
        }
        uint64_t unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (*p == 's') {
            unit = 1000;
            p++;
        } else if (*p == 'm') {
            unit = 60000;
            p++;
        } else if (*p == 'h') {
            unit = 3600000;
            p++;
        } else if (*p == 'd') {
            unit = 86400000;
            p++;
        } else {
            return false;
        }
        total += v * unit;
        if (total > (1ull << 53)) {
            return false;
        }
    }
    *ms = total;
    return true;
}
