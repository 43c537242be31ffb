/*
 * consumer_config.c — comparing consumer configurations (store layer):
 * which setting differs, so a reopen that is refused can say which one
 * (the wire extensions and riftd's consumer.open both name it).
 */
#include "rift/stream.h"

#include <string.h>

static bool same_filter(const rift_consumer_config *a,
                        const rift_consumer_config *b) {
    const char *fa = a->filter != NULL && a->filter_len > 0 ? a->filter : ">";
    size_t la = a->filter != NULL && a->filter_len > 0 ? a->filter_len : 1;
    const char *fb = b->filter != NULL && b->filter_len > 0 ? b->filter : ">";
    size_t lb = b->filter != NULL && b->filter_len > 0 ? b->filter_len : 1;
    return la == lb && memcmp(fa, fb, la) == 0;
}

const char *rift_consumer_config_diff(const rift_consumer_config *a,
                                      const rift_consumer_config *b,
                                      bool with_start) {
    if (!same_filter(a, b)) {
        return "filter";
    }
    if (a->ack_wait_ms != b->ack_wait_ms) {
        return "ack_wait_ms";
    }
    if (a->max_ack_pending != b->max_ack_pending) {
        return "max_ack_pending";
    }
    if (a->max_deliver != b->max_deliver) {
        return "max_deliver";
    }
    if (!with_start) {
        return NULL;
    }
    if (a->start != b->start) {
        return "start";
    }
    if (a->start == RIFT_START_SEQUENCE &&
        a->start_sequence != b->start_sequence) {
        return "start_sequence";
    }
    if ((a->start == RIFT_START_TIME || a->start == RIFT_START_TIME_DELTA) &&
        a->start_time_ms != b->start_time_ms) {
        return "start_time_ms";
    }
    return NULL;
}
