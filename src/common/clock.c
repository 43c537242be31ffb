/*
 * clock.c — monotonic and wall clocks, and the CSPRNG (common layer).
 */
#include "common/common.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <time.h>

rift_tstamp rift_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t rift_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec < 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * 1000ULL + (uint64_t)ts.tv_nsec / 1000000ULL;
}

int rift_random(void *buf, size_t len) {
    if (gnutls_rnd(GNUTLS_RND_RANDOM, buf, len) != 0) {
        return RIFT_ERR_IO;
    }
    return 0;
}
