/*
 * timetext.h — times and durations as text (common layer), one spelling
 * for the CLI's options and output, the start positions of consumers
 * (store/consumer_start.c) and Lua: RFC 3339 timestamps (UTC, or with an
 * offset) and Unix milliseconds, durations such as 90s, 5m, 1h30m or
 * 1500ms.
 */
#ifndef RIFT_COMMON_TIMETEXT_H
#define RIFT_COMMON_TIMETEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "2026-11-29T22:24:37.149Z" plus a NUL. */
#define RIFT_TIME_TEXT_LEN 32

/* rift_time_format_ms writes |ms| (since the epoch) as RFC 3339 UTC with
 * milliseconds. */
void rift_time_format_ms(uint64_t ms, char out[RIFT_TIME_TEXT_LEN]);

/*
 * rift_time_parse_ms reads an absolute time: milliseconds since the epoch
 * (digits only), or RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]" (a
 * space may replace the T). False when it is neither.
 */
bool rift_time_parse_ms(const char *s, uint64_t *ms);

/*
 * rift_duration_parse_ms reads a duration as a sequence of <number><unit>
 * with units ms, s, m, h, d ("1h30m", "250ms"); a bare number is seconds.
 * False on anything else or overflow (more than 2^53 ms).
 */
bool rift_duration_parse_ms(const char *s, uint64_t *ms);

#endif /* RIFT_COMMON_TIMETEXT_H */
