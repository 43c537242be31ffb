/*
 * log.c — process-wide leveled logging to stderr (common layer). One line
 * per call, written with a single write so lines from threads don't mix;
 * line breaks inside a message become spaces.
 */
#include "common/common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = RIFT_LOG_INFO;

void rift_log_set_level(rift_log_level level) {
    atomic_store(&log_level, (int)level);
}

rift_log_level rift_log_get_level(void) {
    return (rift_log_level)atomic_load(&log_level);
}

void rift_log(rift_log_level level, const char *fmt, ...) {
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if ((int)level < atomic_load(&log_level) || level >= RIFT_LOG_OFF) {
        return;
    }
    /* Room for the prefix and a message of RIFT_LOG_LINE_MAX bytes, e.g.
     * "<plugin>: on_message: <error cut to 2,048 bytes>" (§7.1). */
    char line[64 + RIFT_LOG_LINE_MAX + 2];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n =
        snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    if (n < 0) {
        return;
    }
    char *msg = line + n;
    size_t room = sizeof(line) - (size_t)n - 1;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, room, fmt, ap);
    va_end(ap);
    size_t len = m < 0 ? 0 : (size_t)m;
    if (len >= room) {
        /* Cut (on a character boundary) what vsnprintf kept. */
        len = rift_text_cut(msg, room - 1, room - 2);
    }
    /* One line per call, whatever the message carries (Lua errors and
     * texts from peers may hold line breaks). */
    for (size_t i = 0; i < len; i++) {
        if (msg[i] == '\n' || msg[i] == '\r') {
            msg[i] = ' ';
        }
    }
    msg[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n + len);
    (void)w;
}
