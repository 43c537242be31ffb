/*
 * transport.h — how the STAN service reaches its clients (stan layer,
 * private to src/stan and its libnats archive): subscribe the service's
 * subjects, publish replies, deliveries and heartbeat probes. Two
 * implementations: the in-process broker (transport_broker.c, riftd's own
 * NATS face and every other broker client) and an external NATS server
 * through libnats (transport_nats.c, `streaming.nats_server`).
 *
 * Threads: subscribe, attach, fd and drain are called by the service's
 * controlling or service thread; publish from the service thread and from
 * store writer threads (PubAcks), so it must be thread safe; del once,
 * after the service thread has ended.
 */
#ifndef RIFT_STAN_TRANSPORT_H
#define RIFT_STAN_TRANSPORT_H

#include "stan/stan.h"

typedef struct stan_transport_ops {
    /* What --check, logs and status call it: "broker" or "nats". */
    const char *kind;
    /* Subscribes |pattern| (NUL-terminated, may end in ".>"); what arrives
     * is handed to stan_deliver(svc, which, ...) by drain. */
    int (*subscribe)(rift_stan_transport *t, rift_stan *svc, int which,
                     const char *pattern, rift_error *err);
    /* Called once on the service thread before its loop. */
    void (*attach)(rift_stan_transport *t);
    /* A readable fd the service thread polls besides its wake fd, or -1
     * (the transport then calls stan_wake when something arrives). */
    int (*fd)(rift_stan_transport *t);
    /* Hands everything queued to stan_deliver; service thread. */
    void (*drain)(rift_stan_transport *t, rift_stan *svc);
    /* Publishes |p| to |subject| with |reply| (NULL/0: none). */
    int (*publish)(rift_stan_transport *t, const char *subject,
                   size_t subject_len, const char *reply, size_t reply_len,
                   const uint8_t *p, size_t len, rift_error *err);
    /* Unsubscribes everything and frees |t|; no drain or stan_wake runs
     * after it returns. */
    void (*del)(rift_stan_transport *t);
} stan_transport_ops;

struct rift_stan_transport {
    const stan_transport_ops *ops;
};

/* The broker transport over |broker| (subscriptions with one notifier). */
int stan_transport_broker_new(rift_stan_transport **pt, rift_broker *broker,
                              const rift_mem *mem, rift_error *err);

/* ---- provided by service.c for the transports ---- */
/* Dispatches |n| inbound messages of kind |which| under the service lock
 * and drops the caller's references. Service thread. */
void stan_deliver(rift_stan *svc, int which, rift_msg *const *msgs, size_t n);
/* Wakes the service thread (any thread). */
void stan_wake(rift_stan *svc);

/* How many messages a transport queues per subscription (broker) or in
 * all (nats) before it drops a flood. */
#define STAN_INBOUND_CAPACITY 65536

#endif /* RIFT_STAN_TRANSPORT_H */
