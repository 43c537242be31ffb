/*
 * timefmt.c — times and durations of the rift CLI (tools layer): the
 * spellings of common/timetext.h, under the CLI's names. See timefmt.h.
 */
#include "timefmt.h"

#include "common/timetext.h"

_Static_assert(RIFT_CLI_TIME_LEN == RIFT_TIME_TEXT_LEN, "one time text size");

void rift_cli_time_format(uint64_t ms, char out[RIFT_CLI_TIME_LEN]) {
    rift_time_format_ms(ms, out);
}

bool rift_cli_time_parse(const char *s, uint64_t *ms) {
    return rift_time_parse_ms(s, ms);
}

bool rift_cli_duration_parse(const char *s, uint64_t *ms) {
    return rift_duration_parse_ms(s, ms);
}
