/*
 * timefmt.h — times and durations on the rift CLI's command line and
 * output (tools layer): RFC 3339 timestamps (UTC, or with an offset) and
 * Unix milliseconds, durations such as 90s, 5m, 1h30m or 1500ms.
 */
#ifndef RIFT_TOOLS_TIMEFMT_H
#define RIFT_TOOLS_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "2026-11-29T22:24:37.149Z" plus a NUL. */
#define RIFT_CLI_TIME_LEN 32

/* rift_cli_time_format writes |ms| (since the epoch) as RFC 3339 UTC with
 * milliseconds. */
void rift_cli_time_format(uint64_t ms, char out[RIFT_CLI_TIME_LEN]);

/*
 * rift_cli_time_parse reads an absolute time: milliseconds since the epoch
 * (digits only), or RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]" (a
 * space may replace the T). False when it is neither.
 */
bool rift_cli_time_parse(const char *s, uint64_t *ms);

/*
 * rift_cli_duration_parse reads a duration as a sequence of <number><unit>
 * with units ms, s, m, h, d ("1h30m", "250ms"); a bare number is seconds.
 * False on anything else or overflow.
 */
bool rift_cli_duration_parse(const char *s, uint64_t *ms);

#endif /* RIFT_TOOLS_TIMEFMT_H */
