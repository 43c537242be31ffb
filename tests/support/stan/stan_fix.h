/* stan_fix: what the libnats STAN tests share, a subscription sink that
 * records what its callback saw, and the waits on it. Linked only into the
 * libnats test targets (tests/CMakeLists.txt), hence not in support/. */
#ifndef RIFT_TEST_STAN_FIX_H
#define RIFT_TEST_STAN_FIX_H

#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a wait on a sink gives up after. */
#define STAN_FIX_WAIT_MS 10000

/* What a subscription callback saw, guarded by |mu|. */
typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t seqs[256];
    bool redelivered[256];
    size_t n;
    bool ack;  /* acknowledge in the callback */
    bool done; /* the subscription's last callback has returned */
} seen;

void seen_init(seen *s, bool ack);
/* on_msg is the stanMsgHandler recording into the seen |closure|. */
void on_msg(stanConnection *sc, stanSubscription *sub, const char *channel,
            stanMsg *msg, void *closure);
/* on_complete marks the seen |closure| done (the last callback returned). */
void on_complete(void *closure);
/* unsubscribe_wait unsubscribes |sub| and waits until libnats is done
 * calling back with |s|, which may then go out of scope. */
void unsubscribe_wait(stanSubscription *sub, seen *s);
/* wait_n waits until |s| saw at least |n| messages. */
bool wait_n(seen *s, size_t n);

#endif
