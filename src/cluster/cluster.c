/*
 * cluster.c — the backbone bridge (cluster layer; see cluster.h and
 * docs/cluster.md). The broker tells it which patterns have local
 * subscribers (interest, under the broker's write lock) and hands it every
 * local publish (forward); it keeps one refcounted NATS subscription per
 * distinct plain pattern and per (pattern, queue), plus one node inbox
 * <prefix>._INBOX.<node>.> for replies. libnats' delivery thread hands
 * what arrives back with rift_broker_publish_bridged, which never blocks
 * (a full local queue makes that subscriber slow), so the node keeps
 * reading the backbone and is never its slow consumer.
 */
#include "cluster/cluster.h"

#include "broker/broker_face.h"
#include "cluster/frame.h"
#include "common/common.h"
#include "common/hash.h"
#include "common/pmap.h"

#include "libnats.h" /* <nats/nats.h>, see CMakeLists.txt */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CONNECT_TIMEOUT_MS 2000
#define RECONNECT_WAIT_MS  250
#define RECONNECT_BUF      (32 << 20)
#define PENDING_MSGS       65536
#define PENDING_BYTES      (64 << 20)
#define STOP_WAIT_MS       5000
#define SUBJECT_MAX        2048
#define FRAME_STACK        4096 /* frames up to this size need no malloc */
#define DEFAULT_CA         "/etc/ssl/certs/ca-certificates.crt"

#define LIT(s) (s), (sizeof(s) - 1)

/* One NATS subscription: a plain pattern (queue_len 0) or a group. */
typedef struct csub {
    rift_cluster *c;
    natsSubscription *ns;
    size_t refs; /* local subscriptions it stands for */
    uint64_t hash;
    size_t pattern_len, queue_len;
    char *queue; /* inside name[] after the pattern, or NULL */
    bool inbox;  /* the node inbox */
    /* Under c->mu. libnats ends a subscription (on_complete) either after
     * we destroyed it, or by itself when it closes the connection (a
     * backbone that keeps refusing our credentials): whichever of
     * |released| (our Destroy done) and |done| (on_complete ran) comes
     * second frees the csub, so a map entry never dangles. */
    bool released, done;
    char name[]; /* pattern NUL [queue NUL] */
} csub;

struct rift_cluster {
    rift_broker *b;
    rift_broker_bridge bridge;
    natsConnection *nc;
    /* SendAsap, for requests and replies: it sends them (on_forward) and
     * holds the node inbox. libnats buffers every publish and writes it
     * from a flusher thread that first yields for a millisecond, so a
     * request and its reply across nodes cost 2 ms on one connection;
     * this one writes at once. The inbox must live where requests are
     * published: nats-server answers a request nobody subscribes to
     * (no responders) on the publishing connection only. NULL when it
     * could not be made: the main connection does both. */
    natsConnection *asap;
    char node[128], prefix[256];
    char dotted[258]; /* "<prefix>." unterminated: prefix_len + 1 bytes */
    size_t node_len, prefix_len;
    char inbox[512]; /* <prefix>._INBOX.<node>. */
    size_t inbox_len;
    void (*on_state)(void *ud, bool up, const char *server);
    void *ud;

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;
    rift_pmap subs;
    size_t nsubs, live; /* in the table; not yet completed */
    csub *inbox_sub;
    bool connected, closing, closed, asap_closed;
    char server[256];

    atomic_uint_fast64_t msgs_out, msgs_in, echoes, errors, reconnects;
};

bool rift_cluster_crosses(const char *s, size_t len) {
    static const char *const local[] = {"rift", "_STAN"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(local); i++) {
        size_t n = strlen(local[i]);
        if (len >= n && memcmp(s, local[i], n) == 0 &&
            (len == n || s[n] == '.')) {
            return false;
        }
    }
    /* A pattern that is only wildcards from the first token also reaches
     * the local-only subjects, but those never travel, so it may. */
    return true;
}

static bool is_inbox(const char *s, size_t len) {
    return len >= 7 && memcmp(s, "_INBOX.", 7) == 0;
}

/* mask_url copies |url| into |out| with user:password@ shown as ***@. */
static void mask_url(const char *url, char *out, size_t cap) {
    const char *sep = strstr(url, "://");
    const char *rest = sep ? sep + 3 : url;
    const char *at = strrchr(rest, '@');
    if (at == NULL) {
        snprintf(out, cap, "%s", url);
    } else {
        snprintf(out, cap, "%.*s***@%s", (int)(rest - url), url, at + 1);
    }
}

/* ---- Inbound (libnats' delivery thread) ---- */

static void deliver(rift_cluster *c, const rift_bridge_target *t,
                    const char *subj, size_t slen, natsMsg *m,
                    const rift_frame *f) {
    const char *reply = natsMsg_GetReply(m);
    size_t rlen = reply ? strlen(reply) : 0;
    /* Replies come as <prefix>.R: R is what a local responder answers. */
    if (rlen > c->prefix_len && memcmp(reply, c->prefix, c->prefix_len) == 0 &&
        reply[c->prefix_len] == '.') {
        reply += c->prefix_len + 1;
        rlen -= c->prefix_len + 1;
    } else {
        reply = NULL;
        rlen = 0;
    }
    rift_error err;
    if (rift_broker_publish_bridged(c->b, t, subj, slen, reply, rlen,
                                    f->payload, f->plen, NULL, &err) != 0) {
        atomic_fetch_add(&c->errors, 1);
    } else {
        atomic_fetch_add(&c->msgs_in, 1);
    }
}

/* read_frame: the frame of |m|, or false (counted, logged once per
 * thousand) for a message no riftd of this version sent. */
static bool read_frame(rift_cluster *c, natsMsg *m, rift_frame *f) {
    int len = natsMsg_GetDataLength(m);
    if (rift_frame_get((const uint8_t *)natsMsg_GetData(m),
                       len > 0 ? (size_t)len : 0, f)) {
        return true;
    }
    if (atomic_fetch_add(&c->errors, 1) % 1000 == 0) {
        rift_log(RIFT_LOG_WARN,
                 "cluster: dropped a message on %s that is not a rift "
                 "backbone frame",
                 natsMsg_GetSubject(m));
    }
    return false;
}

static void on_msg(natsConnection *nc, natsSubscription *ns, natsMsg *m,
                   void *closure) {
    (void)nc;
    (void)ns;
    csub *s = closure;
    rift_cluster *c = s->c;
    const char *subj = natsMsg_GetSubject(m);
    size_t slen = strlen(subj);
    rift_frame f = {0};
    if (s->inbox) {
        /* <prefix>._INBOX.<node>.X is the local _INBOX.X. */
        char local[SUBJECT_MAX];
        size_t n = slen - c->inbox_len;
        rift_bridge_target t = {.no_responders = natsMsg_IsNoResponders(m)};
        /* nats-server's 503 is a bare status, not a frame. */
        if (slen > c->inbox_len && n + 7 < sizeof local &&
            (t.no_responders || read_frame(c, m, &f))) {
            memcpy(local, "_INBOX.", 7);
            memcpy(local + 7, subj + c->inbox_len, n);
            t.headers = f.hdr;
            t.headers_len = f.hlen;
            deliver(c, &t, local, n + 7, m, &f);
        }
        natsMsg_Destroy(m);
        return;
    }
    if (slen <= c->prefix_len || !read_frame(c, m, &f)) {
        /* not ours */
    } else if (s->queue == NULL && f.origin_len == c->node_len &&
               memcmp(f.origin, c->node, c->node_len) == 0) {
        /* Our own publish: local plain subscribers already have it. */
        atomic_fetch_add(&c->echoes, 1);
    } else {
        rift_bridge_target t = {.pattern = s->queue ? NULL : s->name,
                                .pattern_len = s->pattern_len,
                                .queue = s->queue,
                                .queue_len = s->queue_len,
                                .headers = f.hdr,
                                .headers_len = f.hlen};
        deliver(c, &t, subj + c->prefix_len + 1, slen - c->prefix_len - 1, m,
                &f);
    }
    natsMsg_Destroy(m);
}

static void on_complete(void *closure) {
    csub *s = closure;
    rift_cluster *c = s->c;
    pthread_mutex_lock(&c->mu);
    c->live--;
    pthread_cond_broadcast(&c->cv);
    s->done = true;
    bool free_it = s->released;
    pthread_mutex_unlock(&c->mu);
    if (free_it) {
        rift_free(NULL, s);
    }
}

/* Ends our side of |s| (c->mu held): unsubscribes and destroys its NATS
 * subscription, then frees |s| if libnats has already completed it. */
static void csub_release(csub *s) {
    natsSubscription_Unsubscribe(s->ns);
    natsSubscription_Destroy(s->ns);
    s->ns = NULL;
    s->released = true;
    if (s->done) {
        rift_free(NULL, s);
    }
}

/* ---- Interest (broker write lock held) ---- */

static csub *csub_find(rift_cluster *c, uint64_t h, const char *p, size_t plen,
                       const char *q, size_t qlen) {
    const rift_pmap *m = &c->subs;
    if (m->slots == NULL) {
        return NULL;
    }
    for (size_t i = rift_pmap_first(m, h); m->slots[i].item != NULL;
         i = rift_pmap_next(m, i)) {
        csub *s = m->slots[i].item;
        if (m->slots[i].hash == h && s->pattern_len == plen &&
            s->queue_len == qlen && memcmp(s->name, p, plen) == 0 &&
            (qlen == 0 || memcmp(s->queue, q, qlen) == 0)) {
            return s;
        }
    }
    return NULL;
}

/* csub_open subscribes <prefix>.|subject| (mu held); the node inbox on
 * the connection requests are published on. */
static natsStatus csub_open(rift_cluster *c, csub *s, const char *subject) {
    natsConnection *nc = s->inbox && c->asap != NULL ? c->asap : c->nc;
    natsStatus st =
        s->queue ? natsConnection_QueueSubscribe(&s->ns, nc, subject, s->queue,
                                                 on_msg, s)
                 : natsConnection_Subscribe(&s->ns, nc, subject, on_msg, s);
    if (st == NATS_OK) {
        st = natsSubscription_SetOnCompleteCB(s->ns, on_complete, s);
    }
    if (st == NATS_OK) {
        st = natsSubscription_SetPendingLimits(s->ns, PENDING_MSGS,
                                               PENDING_BYTES);
    }
    return st;
}

static void on_interest(void *ud, const char *p, size_t plen, const char *q,
                        size_t qlen, int delta) {
    rift_cluster *c = ud;
    /* Inboxes come through the node inbox; local-only subjects stay. */
    if (is_inbox(p, plen) || !rift_cluster_crosses(p, plen) ||
        plen + c->prefix_len + 2 > SUBJECT_MAX) {
        return;
    }
    uint64_t h = rift_hash_bytes(p, plen, qlen) ^
                 (qlen ? rift_hash_bytes(q, qlen, 7) : 0);
    pthread_mutex_lock(&c->mu);
    if (c->closed && !c->closing) {
        goto out; /* libnats closed the connection for good (on_closed) */
    }
    csub *s = csub_find(c, h, p, plen, q, qlen);
    if (delta > 0 && s != NULL) {
        s->refs++;
    } else if (delta > 0 && !c->closing) {
        s = rift_calloc(NULL, 1, sizeof *s + plen + qlen + 2);
        if (s == NULL) {
            atomic_fetch_add(&c->errors, 1);
            goto out;
        }
        s->c = c;
        s->refs = 1;
        s->hash = h;
        s->pattern_len = plen;
        memcpy(s->name, p, plen);
        if (q != NULL) {
            s->queue = s->name + plen + 1;
            s->queue_len = qlen;
            memcpy(s->queue, q, qlen);
        }
        char subject[SUBJECT_MAX];
        snprintf(subject, sizeof subject, "%s.%.*s", c->prefix, (int)plen, p);
        natsStatus st = csub_open(c, s, subject);
        if (st != NATS_OK || rift_pmap_insert(&c->subs, NULL, h, s) != 0) {
            rift_log(RIFT_LOG_WARN, "cluster: subscribe %s: %s", subject,
                     natsStatus_GetText(st));
            atomic_fetch_add(&c->errors, 1);
            if (s->ns != NULL) {
                c->live++; /* on_complete or csub_release frees it */
                csub_release(s);
            } else {
                rift_free(NULL, s);
            }
            goto out;
        }
        c->nsubs++;
        c->live++;
    } else if (delta < 0 && s != NULL && --s->refs == 0) {
        rift_pmap_remove(&c->subs, h, s);
        c->nsubs--;
        csub_release(s);
    }
out:
    pthread_mutex_unlock(&c->mu);
}

/* ---- Outbound (any publishing thread, broker read lock held) ---- */

/* put_subject writes |a| (|alen| bytes), then |s|, NUL-terminated. */
static void put_subject(char *out, const char *a, size_t alen, const char *s,
                        size_t slen) {
    memcpy(out, a, alen);
    memcpy(out + alen, s, slen);
    out[alen + slen] = '\0';
}

static bool on_forward(void *ud, const char *subj, size_t slen,
                       const char *reply, size_t rlen, const uint8_t *hdr,
                       size_t hlen, const uint8_t *payload, size_t plen,
                       size_t local) {
    rift_cluster *c = ud;
    if (!rift_cluster_crosses(subj, slen) ||
        (local > 0 && is_inbox(subj, slen))) {
        return false; /* a reply to a requester on this node */
    }
    /* <prefix>. is kept with its dot, so a subject is two memcpy. */
    char s[SUBJECT_MAX], r[SUBJECT_MAX];
    if (plen > INT32_MAX / 2 || hlen > INT32_MAX / 2 ||
        c->prefix_len + slen + 2 > sizeof s ||
        c->inbox_len + rlen + 1 > sizeof r) {
        atomic_fetch_add(&c->errors, 1);
        return false;
    }
    put_subject(s, c->dotted, c->prefix_len + 1, subj, slen);
    const char *rp = NULL;
    if (rlen > 0 && is_inbox(reply, rlen)) {
        /* _INBOX.X of this node travels as <prefix>._INBOX.<node>.X. */
        put_subject(r, c->inbox, c->inbox_len, reply + 7, rlen - 7);
        rp = r;
    } else if (rlen > 0) {
        put_subject(r, c->dotted, c->prefix_len + 1, reply, rlen);
        rp = r;
    }
    /* A plain publish of one frame: no natsMsg, no NATS headers, and for
     * the usual small message no allocation either. */
    uint8_t stack[FRAME_STACK];
    size_t flen = rift_frame_size(c->node_len, hlen, plen);
    uint8_t *buf = flen <= sizeof stack ? stack : rift_malloc(NULL, flen);
    if (buf == NULL) {
        atomic_fetch_add(&c->errors, 1);
        return false;
    }
    rift_frame_put(buf, c->node, c->node_len, hdr, hlen, payload, plen);
    /* A request or a reply goes out at once (docs/cluster.md, "Order"). */
    natsConnection *nc = (rp != NULL || is_inbox(subj, slen)) && c->asap != NULL
                             ? c->asap
                             : c->nc;
    natsStatus st =
        rp != NULL ? natsConnection_PublishRequest(nc, s, rp, buf, (int)flen)
                   : natsConnection_Publish(nc, s, buf, (int)flen);
    if (buf != stack) {
        rift_free(NULL, buf);
    }
    if (st != NATS_OK) {
        atomic_fetch_add(&c->errors, 1);
        return false;
    }
    atomic_fetch_add(&c->msgs_out, 1);
    return true;
}

/* ---- Connection events (libnats threads) ---- */

static void set_state(rift_cluster *c, natsConnection *nc, bool up) {
    char url[1100] = "", shown[256] = "";
    if (up && natsConnection_GetConnectedUrl(nc, url, sizeof url) == NATS_OK) {
        mask_url(url, shown, sizeof shown);
    }
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing;
    bool was = c->connected;
    if (!up && was) {
        snprintf(shown, sizeof shown, "%s", c->server);
    }
    c->connected = up;
    snprintf(c->server, sizeof c->server, "%s", up ? shown : "");
    pthread_mutex_unlock(&c->mu);
    if (closing || up == was) {
        return;
    }
    if (up) {
        rift_log(RIFT_LOG_INFO, "cluster: node %s connected to backbone %s",
                 c->node, shown);
    } else {
        rift_log(RIFT_LOG_WARN,
                 "cluster: node %s lost backbone %s, reconnecting", c->node,
                 shown);
    }
    if (c->on_state != NULL) {
        c->on_state(c->ud, up, shown);
    }
}

static void on_connected(natsConnection *nc, void *closure) {
    set_state(closure, nc, true);
}

static void on_reconnected(natsConnection *nc, void *closure) {
    atomic_fetch_add(&((rift_cluster *)closure)->reconnects, 1);
    set_state(closure, nc, true);
}

static void on_disconnected(natsConnection *nc, void *closure) {
    set_state(closure, nc, false);
}

static void on_closed(natsConnection *nc, void *closure) {
    rift_cluster *c = closure;
    pthread_mutex_lock(&c->mu);
    bool ours = c->closing;
    c->closed = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!ours) {
        /* libnats gives up on a server that refuses the same credentials
         * twice; it never reconnects after this. Its status text only:
         * the last error's text may quote a URL. */
        const char *text = NULL;
        natsStatus why = natsConnection_GetLastError(nc, &text);
        rift_log(RIFT_LOG_ERROR,
                 "cluster: node %s: the backbone connection was closed (%s) "
                 "and will not be retried; local traffic is still served; "
                 "fix the cluster.nats credentials or TLS settings and "
                 "restart riftd",
                 c->node, natsStatus_GetText(why));
    }
}

static void on_asap_connected(natsConnection *nc, void *closure) {
    (void)nc;
    (void)closure;
}

static void on_asap_closed(natsConnection *nc, void *closure) {
    (void)nc;
    rift_cluster *c = closure;
    pthread_mutex_lock(&c->mu);
    c->asap_closed = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
                     void *closure) {
    (void)nc;
    (void)sub;
    rift_cluster *c = closure;
    /* A local drop (libnats' pending limit), never the server cutting us;
     * logged once per hundred. */
    if (atomic_fetch_add(&c->errors, 1) % 100 == 0) {
        rift_log(RIFT_LOG_WARN, "cluster: backbone: %s",
                 natsStatus_GetText(err));
    }
}

/* The options of the main connection, or (|asap|) of the one for
 * requests and replies: written at once; the node's state follows the
 * main one only. */
static natsStatus set_options(natsOptions *o, const rift_cluster_settings *s,
                              rift_cluster *c, bool asap) {
    char name[160];
    snprintf(name, sizeof name, "riftd %s%s", c->node, asap ? " (asap)" : "");
    bool tls = s->ca_file != NULL;
    for (size_t i = 0; i < s->n_servers; i++) {
        tls = tls || strncmp(s->servers[i], "tls://", 6) == 0;
    }
    natsStatus st =
        natsOptions_SetServers(o, (const char **)s->servers, (int)s->n_servers);
    if (st == NATS_OK)
        st = natsOptions_SetName(o, name);
    if (st == NATS_OK)
        st = natsOptions_SetTimeout(o, CONNECT_TIMEOUT_MS);
    if (st == NATS_OK)
        st = natsOptions_SetMaxReconnect(o, -1);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectWait(o, RECONNECT_WAIT_MS);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectBufSize(o, RECONNECT_BUF);
    if (st == NATS_OK && asap) {
        st = natsOptions_SetSendAsap(o, true);
        /* With a callback: without one, Connect would block until a
         * server answers. */
        if (st == NATS_OK)
            st = natsOptions_SetRetryOnFailedConnect(o, true, on_asap_connected,
                                                     c);
        if (st == NATS_OK)
            st = natsOptions_SetClosedCB(o, on_asap_closed, c);
    }
    if (st == NATS_OK)
        st = natsOptions_UseGlobalMessageDelivery(o, true);
    if (st == NATS_OK && !asap) {
        st = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, c);
    }
    if (st == NATS_OK && !asap) {
        st = natsOptions_SetDisconnectedCB(o, on_disconnected, c);
    }
    if (st == NATS_OK && !asap) {
        st = natsOptions_SetReconnectedCB(o, on_reconnected, c);
    }
    if (st == NATS_OK && !asap)
        st = natsOptions_SetClosedCB(o, on_closed, c);
    if (st == NATS_OK)
        st = natsOptions_SetErrorHandler(o, on_error, c);
    if (st == NATS_OK && s->user != NULL) {
        st = natsOptions_SetUserInfo(o, s->user, s->password);
    }
    if (st == NATS_OK && s->token != NULL) {
        st = natsOptions_SetToken(o, s->token);
    }
    if (st == NATS_OK && tls) {
        st = natsOptions_SetSecure(o, true);
        if (st == NATS_OK) {
            st = natsOptions_LoadCATrustedCertificates(
                o, s->ca_file ? s->ca_file : DEFAULT_CA);
        }
    }
    return st;
}

static bool wait_until(rift_cluster *c, bool (*done)(rift_cluster *)) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += STOP_WAIT_MS / 1000;
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    bool ok;
    while (!(ok = done(c)) && rc == 0) {
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &dl);
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static bool subs_done(rift_cluster *c) {
    return c->live == 0;
}

static bool conn_done(rift_cluster *c) {
    return c->closed;
}

static bool asap_done(rift_cluster *c) {
    return c->asap_closed;
}

void rift_cluster_stop(rift_cluster *c) {
    if (c == NULL) {
        return;
    }
    if (c->b != NULL) {
        rift_broker_set_bridge(c->b, NULL); /* no interest or forward now */
    }
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    for (size_t i = 0; c->subs.slots && i <= c->subs.mask; i++) {
        csub *s = c->subs.slots[i].item;
        if (s != NULL) {
            csub_release(s);
        }
    }
    rift_pmap_free(&c->subs, NULL);
    if (c->inbox_sub != NULL) {
        csub_release(c->inbox_sub);
        c->inbox_sub = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    /* The broker and |c| must outlive every on_msg. */
    if (!wait_until(c, subs_done)) {
        rift_log(RIFT_LOG_WARN, "cluster: subscriptions still busy at stop");
    }
    if (c->asap != NULL) {
        natsConnection_Close(c->asap);
        if (!wait_until(c, asap_done)) {
            rift_log(RIFT_LOG_WARN, "cluster: backbone close timed out");
        }
        natsConnection_Destroy(c->asap);
    }
    if (c->nc != NULL) {
        (void)natsConnection_FlushTimeout(c->nc, 1000);
        natsConnection_Close(c->nc);
        if (!wait_until(c, conn_done)) {
            rift_log(RIFT_LOG_WARN, "cluster: backbone close timed out");
        }
        natsConnection_Destroy(c->nc);
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    rift_free(NULL, c);
}

/* Opens the connection for requests and replies; without it they take
 * the main one (2 ms slower a round trip, nothing else changes). */
static void connect_asap(rift_cluster *c, const rift_cluster_settings *s) {
    natsOptions *o = NULL;
    natsStatus st = natsOptions_Create(&o);
    if (st == NATS_OK) {
        st = set_options(o, s, c, true);
    }
    if (st == NATS_OK) {
        st = natsConnection_Connect(&c->asap, o);
    }
    natsOptions_Destroy(o);
    if (st != NATS_OK && st != NATS_NOT_YET_CONNECTED) {
        rift_log(RIFT_LOG_WARN,
                 "cluster: node %s: no second backbone connection for "
                 "requests and replies (%s); they share the main one",
                 c->node, natsStatus_GetText(st));
        natsConnection_Destroy(c->asap);
        c->asap = NULL;
    }
}

int rift_cluster_start(rift_cluster **pc, rift_broker *b,
                       const rift_cluster_settings *s, rift_error *err) {
    *pc = NULL;
    if (s->n_servers == 0 || s->node == NULL || s->prefix == NULL ||
        strlen(s->node) >= 128 || strlen(s->prefix) >= 256) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "cluster: servers, node and prefix are needed");
    }
    rift_cluster *c = rift_calloc(NULL, 1, sizeof *c);
    csub *in = rift_calloc(NULL, 1, sizeof *in + 1);
    if (c == NULL || in == NULL) {
        rift_free(NULL, c);
        rift_free(NULL, in);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    rift_pmap_init(&c->subs);
    c->on_state = s->on_state;
    c->ud = s->ud;
    c->node_len = strlen(s->node);
    c->prefix_len = strlen(s->prefix);
    memcpy(c->node, s->node, c->node_len);
    memcpy(c->prefix, s->prefix, c->prefix_len);
    memcpy(c->dotted, s->prefix, c->prefix_len);
    c->dotted[c->prefix_len] = '.';
    c->inbox_len = (size_t)snprintf(c->inbox, sizeof c->inbox, "%s._INBOX.%s.",
                                    c->prefix, c->node);
    natsOptions *o = NULL;
    natsStatus st = natsOptions_Create(&o);
    if (st == NATS_OK) {
        st = set_options(o, s, c, false);
    }
    if (st == NATS_OK) {
        st = natsConnection_Connect(&c->nc, o);
    }
    natsOptions_Destroy(o);
    if (st == NATS_OK || st == NATS_NOT_YET_CONNECTED) {
        connect_asap(c, s);
    }
    bool later = st == NATS_NOT_YET_CONNECTED;
    if (st != NATS_OK && !later) {
        /* natsStatus_GetText only: libnats' last error may quote a URL. */
        int rc = rift_error_set(
            err, st == NATS_NO_MEMORY ? RIFT_ERR_NOMEM : RIFT_ERR_CONNECTION,
            "cluster: backbone: %s", natsStatus_GetText(st));
        rift_free(NULL, in);
        c->nc = NULL;
        c->closed = true;
        rift_cluster_stop(c);
        return rc;
    }
    if (!later) {
        set_state(c, c->nc, true);
    }
    in->c = c;
    in->inbox = true;
    char subject[600];
    snprintf(subject, sizeof subject, "%s>", c->inbox);
    pthread_mutex_lock(&c->mu);
    st = csub_open(c, in, subject);
    if (st == NATS_OK) {
        c->inbox_sub = in;
        c->live++;
    }
    pthread_mutex_unlock(&c->mu);
    if (st != NATS_OK && later && in->ns == NULL &&
        natsConnection_IsClosed(c->nc)) {
        /* libnats already gave up (on_closed said why): the node serves
         * local traffic without a backbone, as when it is just down. */
        rift_free(NULL, in);
        st = NATS_OK;
    }
    if (st != NATS_OK) {
        int rc = rift_error_set(err, RIFT_ERR_CONNECTION,
                                "cluster: subscribe %s: %s", subject,
                                natsStatus_GetText(st));
        if (in->ns != NULL) {
            natsSubscription_Destroy(in->ns);
        }
        rift_free(NULL, in);
        rift_cluster_stop(c);
        return rc;
    }
    if (later) {
        /* After the inbox subscription: libnats may close a connection
         * that keeps failing authentication. */
        /* Why: one connect without retries (its status text only, which
         * names e.g. an authentication or SSL failure, never a secret). */
        const char *why = "unreachable";
        natsOptions *po = NULL;
        natsConnection *probe = NULL;
        natsStatus ps = natsOptions_Create(&po);
        if (ps == NATS_OK) {
            ps = set_options(po, s, c, false);
        }
        if (ps == NATS_OK) {
            ps = natsOptions_SetRetryOnFailedConnect(po, false, NULL, NULL);
        }
        if (ps == NATS_OK) {
            ps = natsOptions_SetClosedCB(po, NULL, NULL);
        }
        if (ps == NATS_OK) {
            ps = natsOptions_SetDisconnectedCB(po, NULL, NULL);
        }
        if (ps == NATS_OK) {
            ps = natsOptions_SetReconnectedCB(po, NULL, NULL);
        }
        if (ps == NATS_OK) {
            ps = natsConnection_Connect(&probe, po);
            why = ps == NATS_OK ? "reachable now" : natsStatus_GetText(ps);
        }
        if (probe != NULL) {
            natsConnection_Destroy(probe);
        }
        natsOptions_Destroy(po);
        rift_log(RIFT_LOG_WARN,
                 "cluster: node %s: no backbone server reachable yet (%s), "
                 "retrying; local traffic is served meanwhile",
                 c->node, why);
    }
    c->b = b;
    c->bridge = (rift_broker_bridge){
        .ud = c, .interest = on_interest, .forward = on_forward};
    rift_broker_set_bridge(b, &c->bridge);
    *pc = c;
    return 0;
}

void rift_cluster_get_status(rift_cluster *c, rift_cluster_status *st) {
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&c->mu);
    st->connected = c->connected;
    snprintf(st->server, sizeof st->server, "%s", c->server);
    st->subscriptions = c->nsubs + (c->inbox_sub != NULL);
    pthread_mutex_unlock(&c->mu);
    st->msgs_out = atomic_load(&c->msgs_out);
    st->msgs_in = atomic_load(&c->msgs_in);
    st->echoes_dropped = atomic_load(&c->echoes);
    st->errors = atomic_load(&c->errors);
    st->reconnects = atomic_load(&c->reconnects);
}

natsConnection *rift_cluster_connection(rift_cluster *c) {
    return c->nc;
}
