/*
 * transport_broker.c — the STAN service on the in-process broker (stan
 * layer; see transport.h): one broker subscription per request subject,
 * all on one notifier the service thread polls, answers by broker
 * publish. Whatever reaches the broker (riftd's NATS face, rift clients)
 * reaches the service.
 */
#include "stan/internal.h"
#include "stan/transport.h"

#include <stdio.h>
#include <string.h>

#define MAX_SUBS 16
#define BATCH    64

typedef struct broker_tp {
    rift_stan_transport base;
    const rift_mem *mem;
    rift_broker *broker;
    rift_notifier *notifier;
    rift_sub *subs[MAX_SUBS];
    char *patterns[MAX_SUBS]; /* to subscribe again after a flood */
} broker_tp;

static int sub_open(broker_tp *b, int which, rift_error *err) {
    rift_sub_options o = {0};
    o.notifier = b->notifier;
    o.capacity = STAN_INBOUND_CAPACITY;
    o.user_data = (void *)(uintptr_t)which;
    const char *p = b->patterns[which];
    return rift_broker_subscribe(b->broker, p, strlen(p), &o, &b->subs[which],
                                 err);
}

static int bk_subscribe(rift_stan_transport *t, rift_stan *svc, int which,
                        const char *pattern, rift_error *err) {
    (void)svc;
    broker_tp *b = (broker_tp *)t;
    if (which < 0 || which >= MAX_SUBS || b->patterns[which]) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "streaming: subscription slot %d", which);
    }
    b->patterns[which] = rift_strndup(b->mem, pattern, strlen(pattern));
    if (!b->patterns[which]) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return sub_open(b, which, err);
}

static void bk_attach(rift_stan_transport *t) {
    rift_notifier_set_owner(((broker_tp *)t)->notifier);
}

static int bk_fd(rift_stan_transport *t) {
    return rift_notifier_fd(((broker_tp *)t)->notifier);
}

/* drain_one takes everything queued on one subscription; a queue that
 * overflowed (a flood) is subscribed again, the flood dropped. */
static void drain_one(broker_tp *b, rift_stan *svc, rift_sub *sub) {
    int which = (int)(uintptr_t)rift_sub_user_data(sub);
    rift_msg *batch[BATCH];
    for (;;) {
        rift_error e = {0};
        rift_ssize n = rift_sub_recv_batch(sub, 0, batch, BATCH, &e);
        if (n < 0) {
            if (n == RIFT_ERR_SLOW_CONSUMER) {
                rift_log(RIFT_LOG_WARN, "stan: request queue overflowed, "
                                        "requests dropped");
                rift_sub_close(b->subs[which]);
                b->subs[which] = NULL;
                rift_error e2 = {0};
                if (sub_open(b, which, &e2) != 0) {
                    rift_log(RIFT_LOG_ERROR, "stan: resubscribe: %s", e2.text);
                }
            }
            return;
        }
        stan_deliver(svc, which, batch, (size_t)n);
        if (n < BATCH) {
            return;
        }
    }
}

static void bk_drain(rift_stan_transport *t, rift_stan *svc) {
    broker_tp *b = (broker_tp *)t;
    rift_sub *ready[16];
    size_t n;
    while ((n = rift_notifier_poll(b->notifier, ready, 16)) > 0) {
        for (size_t i = 0; i < n; i++) {
            drain_one(b, svc, ready[i]);
        }
        if (n < 16) {
            break;
        }
    }
}

static int bk_publish(rift_stan_transport *t, const char *subject,
                      size_t subject_len, const char *reply, size_t reply_len,
                      const uint8_t *p, size_t len, rift_error *err) {
    broker_tp *b = (broker_tp *)t;
    return rift_broker_publish(b->broker, subject, subject_len, reply,
                               reply_len, p, len, NULL, err);
}

static void bk_del(rift_stan_transport *t) {
    broker_tp *b = (broker_tp *)t;
    for (size_t i = 0; i < MAX_SUBS; i++) {
        rift_sub_close(b->subs[i]);
        rift_free(b->mem, b->patterns[i]);
    }
    rift_notifier_del(b->notifier);
    rift_free(b->mem, b);
}

static const stan_transport_ops broker_ops = {
    "broker", bk_subscribe, bk_attach, bk_fd, bk_drain, bk_publish, bk_del,
};

int stan_transport_broker_new(rift_stan_transport **pt, rift_broker *broker,
                              const rift_mem *mem, rift_error *err) {
    *pt = NULL;
    broker_tp *b = rift_calloc(mem, 1, sizeof *b);
    if (!b) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    b->base.ops = &broker_ops;
    b->mem = mem;
    b->broker = broker;
    int rc = rift_notifier_new(&b->notifier, mem, NULL);
    if (rc != 0) {
        rift_free(mem, b);
        return rift_error_set(err, rc, "streaming: notifier: %s",
                              rift_strerror(rc));
    }
    *pt = &b->base;
    return 0;
}
