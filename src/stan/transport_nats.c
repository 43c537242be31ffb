/*
 * transport_nats.c — the STAN service through an external NATS server with
 * libnats (stan layer; see transport_nats.h). libnats calls on_msg on its
 * delivery threads; on_msg copies the message into a bounded queue and
 * wakes the service thread, which drains it like the broker's queues, so
 * the service keeps its one thread. Publishes (replies, MsgProto,
 * heartbeats, PubAcks from writer threads) go straight to libnats, which
 * is thread safe and buffers them while it reconnects.
 */
#include "stan/internal.h"
#include "stan/transport.h"
#include "stan/transport_nats.h"

#include "libnats.h" /* <nats/nats.h>, see CMakeLists.txt */

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_SUBS 16
#define BATCH    64
/* Bytes queued for the service thread at most: a flood beyond it is
 * dropped (and logged) rather than held. */
#define QUEUE_BYTES (64u << 20)
/* Publishes libnats holds while reconnecting (its default is 8 MiB). */
#define RECONNECT_BUF      (32 << 20)
#define CONNECT_TIMEOUT_MS 2000
#define RECONNECT_WAIT_MS  500
/* How long stop waits for libnats to finish a callback in progress. */
#define STOP_WAIT_MS 5000
#define DEFAULT_CA   "/etc/ssl/certs/ca-certificates.crt"

typedef struct nats_tp nats_tp;

typedef struct sub_slot {
    nats_tp *t;
    int which;
    natsSubscription *sub;
} sub_slot;

typedef struct inbound {
    int which;
    rift_msg *m;
} inbound;

struct nats_tp {
    rift_stan_transport base;
    const rift_mem *mem;
    natsConnection *nc;
    char shown[1100]; /* the URL, credentials masked */
    rift_stan *svc;   /* woken by on_msg; set by the first subscribe */
    sub_slot slots[MAX_SUBS];

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;
    inbound *ring;
    size_t head, count, bytes;
    uint64_t dropped, dropped_logged;
    size_t completed; /* subscriptions whose last callback returned */
    bool closing;
    bool closed; /* libnats' last connection callback has run */
};

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                   void *closure) {
    (void)nc;
    (void)sub;
    sub_slot *slot = closure;
    nats_tp *t = slot->t;
    const char *subj = natsMsg_GetSubject(msg);
    const char *reply = natsMsg_GetReply(msg);
    int len = natsMsg_GetDataLength(msg);
    size_t n = len > 0 ? (size_t)len : 0;
    rift_msg *m = NULL;
    int rc = rift_msg_new(&m, t->mem, subj, strlen(subj), reply,
                          reply ? strlen(reply) : 0,
                          (const uint8_t *)natsMsg_GetData(msg), n, NULL);
    natsMsg_Destroy(msg);
    bool wake = false;
    pthread_mutex_lock(&t->mu);
    if (rc != 0 || t->closing || t->count == STAN_INBOUND_CAPACITY ||
        t->bytes + n > QUEUE_BYTES) {
        t->dropped++;
    } else {
        t->ring[(t->head + t->count) % STAN_INBOUND_CAPACITY] =
            (inbound){slot->which, m};
        wake = t->count++ == 0; /* the service drains until empty */
        t->bytes += n;
        m = NULL;
    }
    pthread_mutex_unlock(&t->mu);
    rift_msg_unref(m);
    if (wake) {
        stan_wake(t->svc);
    }
}

static void on_sub_complete(void *closure) {
    nats_tp *t = ((sub_slot *)closure)->t;
    pthread_mutex_lock(&t->mu);
    t->completed++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static int nt_subscribe(rift_stan_transport *bt, rift_stan *svc, int which,
                        const char *pattern, rift_error *err) {
    nats_tp *t = (nats_tp *)bt;
    if (which < 0 || which >= MAX_SUBS || t->slots[which].sub) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "streaming: subscription slot %d", which);
    }
    t->svc = svc;
    sub_slot *slot = &t->slots[which];
    slot->t = t;
    slot->which = which;
    natsStatus s =
        natsConnection_Subscribe(&slot->sub, t->nc, pattern, on_msg, slot);
    if (s == NATS_OK) {
        s = natsSubscription_SetOnCompleteCB(slot->sub, on_sub_complete, slot);
    }
    if (s == NATS_OK) {
        /* The queue above bounds the flood; libnats' own limit only needs
         * to let a burst through to it. */
        s = natsSubscription_SetPendingLimits(slot->sub, STAN_INBOUND_CAPACITY,
                                              QUEUE_BYTES);
    }
    if (s != NATS_OK) {
        return rift_error_set(err, RIFT_ERR_CONNECTION,
                              "streaming: subscribe %s on %s: %s", pattern,
                              t->shown, natsStatus_GetText(s));
    }
    return 0;
}

static void nt_attach(rift_stan_transport *bt) {
    (void)bt;
}

static int nt_fd(rift_stan_transport *bt) {
    (void)bt;
    return -1;
}

static void nt_drain(rift_stan_transport *bt, rift_stan *svc) {
    nats_tp *t = (nats_tp *)bt;
    for (;;) {
        rift_msg *batch[BATCH];
        size_t n = 0;
        int which = -1;
        uint64_t dropped;
        pthread_mutex_lock(&t->mu);
        /* One batch holds one kind, as stan_deliver wants. */
        while (t->count && n < BATCH &&
               (which < 0 || t->ring[t->head].which == which)) {
            inbound in = t->ring[t->head];
            t->head = (t->head + 1) % STAN_INBOUND_CAPACITY;
            t->count--;
            size_t pl;
            (void)rift_msg_payload(in.m, &pl);
            t->bytes -= pl;
            which = in.which;
            batch[n++] = in.m;
        }
        dropped = t->dropped - t->dropped_logged;
        t->dropped_logged = t->dropped;
        pthread_mutex_unlock(&t->mu);
        if (dropped) {
            rift_log(RIFT_LOG_WARN,
                     "stan: request queue overflowed, %llu requests dropped",
                     (unsigned long long)dropped);
        }
        if (n == 0) {
            return;
        }
        stan_deliver(svc, which, batch, n);
    }
}

/* cstr gives a NUL-terminated copy of |s| in |buf| or on the heap. */
static char *cstr(nats_tp *t, const char *s, size_t len, char *buf,
                  size_t cap) {
    char *out = len < cap ? buf : rift_malloc(t->mem, len + 1);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

static int nt_publish(rift_stan_transport *bt, const char *subject,
                      size_t subject_len, const char *reply, size_t reply_len,
                      const uint8_t *p, size_t len, rift_error *err) {
    nats_tp *t = (nats_tp *)bt;
    if (len > INT32_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "streaming: message too large");
    }
    char sbuf[512], rbuf[512];
    char *s = cstr(t, subject, subject_len, sbuf, sizeof sbuf);
    char *r = reply_len ? cstr(t, reply, reply_len, rbuf, sizeof rbuf) : NULL;
    natsStatus st = NATS_NO_MEMORY;
    if (s && (r || !reply_len)) {
        /* PublishRequest refuses an empty reply. */
        st = r ? natsConnection_PublishRequest(t->nc, s, r, p, (int)len)
               : natsConnection_Publish(t->nc, s, p, (int)len);
    }
    if (s != sbuf) {
        rift_free(t->mem, s);
    }
    if (r != rbuf) {
        rift_free(t->mem, r);
    }
    if (st != NATS_OK) {
        return rift_error_set(
            err, st == NATS_NO_MEMORY ? RIFT_ERR_NOMEM : RIFT_ERR_CONNECTION,
            "NATS server %s: %s", t->shown, natsStatus_GetText(st));
    }
    return 0;
}

/* wait_for waits until |*flag| holds or (with |count|) |*count| reaches
 * |want|; false after STOP_WAIT_MS. */
static bool wait_for(nats_tp *t, const bool *flag, const size_t *count,
                     size_t want) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += STOP_WAIT_MS / 1000;
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    bool done;
    while (!(done = count ? *count >= want : *flag) && rc == 0) {
        rc = pthread_cond_timedwait(&t->cv, &t->mu, &dl);
    }
    pthread_mutex_unlock(&t->mu);
    return done;
}

static void nt_del(rift_stan_transport *bt) {
    nats_tp *t = (nats_tp *)bt;
    pthread_mutex_lock(&t->mu);
    t->closing = true;
    pthread_mutex_unlock(&t->mu);
    size_t subs = 0;
    for (size_t i = 0; i < MAX_SUBS; i++) {
        if (t->slots[i].sub) {
            natsSubscription_Unsubscribe(t->slots[i].sub);
            subs++;
        }
    }
    /* The service's wake fd and queue must outlive every on_msg. */
    if (!wait_for(t, NULL, &t->completed, subs)) {
        rift_log(RIFT_LOG_WARN, "stan: NATS subscriptions still busy at stop");
    }
    if (t->nc) {
        /* Last replies and PubAcks out before the socket goes. */
        (void)natsConnection_FlushTimeout(t->nc, 1000);
        natsConnection_Close(t->nc);
        /* Connection callbacks run on libnats' own thread and use |t|. */
        if (!wait_for(t, &t->closed, NULL, 0)) {
            rift_log(RIFT_LOG_WARN, "stan: NATS connection close timed out");
        }
    }
    for (size_t i = 0; i < MAX_SUBS; i++) {
        natsSubscription_Destroy(t->slots[i].sub);
    }
    natsConnection_Destroy(t->nc);
    for (; t->count; t->count--) {
        rift_msg_unref(t->ring[t->head].m);
        t->head = (t->head + 1) % STAN_INBOUND_CAPACITY;
    }
    rift_free(t->mem, t->ring);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    rift_free(t->mem, t);
}

static const stan_transport_ops nats_ops = {
    "nats", nt_subscribe, nt_attach, nt_fd, nt_drain, nt_publish, nt_del,
};

/* ---- Connection events (libnats threads): logged, never the password ---- */

static void on_disconnected(natsConnection *nc, void *closure) {
    (void)nc;
    nats_tp *t = closure;
    pthread_mutex_lock(&t->mu);
    bool closing = t->closing;
    pthread_mutex_unlock(&t->mu);
    if (!closing) {
        rift_log(RIFT_LOG_WARN,
                 "stan: disconnected from NATS server %s, reconnecting",
                 t->shown);
    }
}

static void on_closed(natsConnection *nc, void *closure) {
    (void)nc;
    nats_tp *t = closure;
    pthread_mutex_lock(&t->mu);
    t->closed = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void on_reconnected(natsConnection *nc, void *closure) {
    (void)nc;
    rift_log(RIFT_LOG_INFO, "stan: reconnected to NATS server %s",
             ((nats_tp *)closure)->shown);
}

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
                     void *closure) {
    (void)nc;
    (void)sub;
    rift_log(RIFT_LOG_WARN, "stan: NATS server %s: %s",
             ((nats_tp *)closure)->shown, natsStatus_GetText(err));
}

static natsStatus set_options(natsOptions *o, const char *url, nats_tp *t) {
    natsStatus s = natsOptions_SetURL(o, url);
    if (s == NATS_OK) {
        s = natsOptions_SetName(o, "riftd streaming");
    }
    if (s == NATS_OK) {
        s = natsOptions_SetTimeout(o, CONNECT_TIMEOUT_MS);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(o, -1); /* forever */
    }
    if (s == NATS_OK) {
        /* on_msg only copies: libnats' shared delivery thread serves all
         * nine subscriptions instead of a thread each. */
        s = natsOptions_UseGlobalMessageDelivery(o, true);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectWait(o, RECONNECT_WAIT_MS);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectBufSize(o, RECONNECT_BUF);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetDisconnectedCB(o, on_disconnected, t);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectedCB(o, on_reconnected, t);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetClosedCB(o, on_closed, t);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetErrorHandler(o, on_error, t);
    }
    if (s == NATS_OK && strncmp(url, "tls://", 6) == 0) {
        s = natsOptions_SetSecure(o, true);
        if (s == NATS_OK) {
            s = natsOptions_LoadCATrustedCertificates(o, DEFAULT_CA);
        }
    }
    return s;
}

int stan_transport_nats_new(rift_stan_transport **pt, const char *url,
                            const rift_mem *mem, rift_error *err) {
    *pt = NULL;
    char shown[1100];
    int rc = rift_stan_nats_url_check(url, shown, sizeof shown, err);
    if (rc != 0) {
        return rc;
    }
    nats_tp *t = rift_calloc(mem, 1, sizeof *t);
    inbound *ring =
        t ? rift_calloc(mem, STAN_INBOUND_CAPACITY, sizeof *ring) : NULL;
    if (!ring) {
        rift_free(mem, t);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    t->base.ops = &nats_ops;
    t->mem = mem;
    t->ring = ring;
    memcpy(t->shown, shown, sizeof shown);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    if (s == NATS_OK) {
        s = set_options(o, url, t);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&t->nc, o);
    }
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        /* natsStatus_GetText only: libnats' last-error text may quote the
         * URL, credentials included. */
        rc = rift_error_set(
            err, s == NATS_NO_MEMORY ? RIFT_ERR_NOMEM : RIFT_ERR_CONNECTION,
            "streaming.nats_server: cannot connect to %s: %s%s", t->shown,
            natsStatus_GetText(s),
            s == NATS_SSL_ERROR ? " (TLS: is the server's certificate from a "
                                  "CA in " DEFAULT_CA "?)"
                                : "");
        t->nc = NULL;
        nt_del(&t->base);
        return rc;
    }
    *pt = &t->base;
    return 0;
}
