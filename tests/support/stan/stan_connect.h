/* stan_connect.h — a libnats STAN connection to a local NATS Streaming
 * face, for the tests linking libnats (header only: the stan_fix sink is
 * linked into fewer targets). */
#ifndef RIFT_TEST_STAN_CONNECT_H
#define RIFT_TEST_STAN_CONNECT_H

#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include <stdio.h>

/* Connects client |id| to cluster "test-cluster" on 127.0.0.1:|port|;
 * NULL when that fails. */
static inline stanConnection *stan_fix_connect(int port, const char *id) {
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", port);
    stanConnOptions *o = NULL;
    stanConnection *sc = NULL;
    if (stanConnOptions_Create(&o) != NATS_OK ||
        stanConnOptions_SetURL(o, url) != NATS_OK ||
        stanConnection_Connect(&sc, "test-cluster", id, o) != NATS_OK) {
        sc = NULL;
    }
    stanConnOptions_Destroy(o);
    return sc;
}

#endif
