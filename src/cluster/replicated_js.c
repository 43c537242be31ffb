/*
 * replicated_js.c — each replicated-stream operation in JetStream terms
 * (cluster layer; see replicated.h and docs/cluster.md), run on the
 * backend's worker threads where libnats may block.
 *
 *   publish   replicated_pub.c (asynchronous); a publish comes here only
 *             while its stream is not ready, to be handed over after
 *             ENSURE.
 *   open      js_GetConsumerInfo, then js_AddConsumer (durable, explicit
 *             ack, AckWait, MaxAckPending, MaxDeliver, FilterSubject, the
 *             start resolved to a start sequence unless it is the first
 *             record, "<start kind> <sequence> <time> <client name>" as
 *             its Description) or the store's "different ..." error.
 *   fetch     a pull subscription bound to the durable, FetchRequest with
 *             NoWait (repeated until the wait ends for FETCH_WAIT, or its
 *             client has gone: b_abandon);
 *             delivery counts from the JetStream metadata. The messages
 *             are kept for their ACK.
 *   nak, term, progress  -NAK (with its delay), +TERM, +WPI on the kept
 *             message, like ack.
 *   ack       AckSync on the kept message; a sequence this node does not
 *             hold is "not pending" (it is redelivered after ack_wait).
 */
#include "cluster/replicated_internal.h"
#include "codec/frame_ext.h" /* the opcodes settle gets */

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HDR_TS           REPL_HDR_TS
#define HDR_REPLY        REPL_HDR_REPLY
#define FETCH_EXPIRES_MS 100

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t seq_hash(uint64_t seq) {
    return seq * 0x9e3779b97f4a7c15ull;
}

/* The error of a failed JetStream call: its status text only (libnats'
 * last error may name a server URL), recorded for `rift status`. */
static int js_fail(repl_stream *s, const char *what, natsStatus st,
                   jsErrCode jerr, rift_error *err) {
    atomic_fetch_add(&s->errors, 1);
    pthread_mutex_lock(&s->mu);
    snprintf(s->last_error, sizeof s->last_error, "%s: %s (%d)", what,
             natsStatus_GetText(st), (int)jerr);
    pthread_mutex_unlock(&s->mu);
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: replicated stream %s: %s: %s",
                          s->name, what, natsStatus_GetText(st));
}

static bool backbone_up(rift_repl *r) {
    return natsConnection_Status(r->nc) == NATS_CONN_STATUS_CONNECTED;
}

static bool stopping(rift_repl *r) {
    pthread_mutex_lock(&r->mu);
    bool v = r->stopping;
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* Every operation fails at once, with a clear error, while the node is
 * not connected to its backbone (libnats reconnects by itself). */
static int backbone_check(rift_repl *r, repl_stream *s, rift_error *err) {
    if (backbone_up(r)) {
        return 0;
    }
    atomic_fetch_add(&s->errors, 1);
    pthread_mutex_lock(&s->mu);
    snprintf(s->last_error, sizeof s->last_error, "backbone unavailable");
    pthread_mutex_unlock(&s->mu);
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: replicated stream %s: backbone "
                          "unavailable",
                          s->name);
}

int rift_repl_fail(repl_stream *s, const char *what, natsStatus st,
                   jsErrCode jerr, rift_error *err) {
    return js_fail(s, what, st, jerr, err);
}

bool rift_repl_backbone_up(rift_repl *r) {
    return backbone_up(r);
}

int rift_repl_backbone_check(rift_repl *r, repl_stream *s, rift_error *err) {
    return backbone_check(r, s, err);
}

/* ---- The JetStream stream ---- */

bool rift_repl_ready(repl_stream *s) {
    pthread_mutex_lock(&s->mu);
    bool ready = s->ready;
    pthread_mutex_unlock(&s->mu);
    return ready;
}

/* JetStream's message size counts the headers too; rift checks the
 * payload itself. */
#define REPL_HEADER_ROOM 4096

/* JetStream reports "no limit" as -1 where rift's configuration says 0. */
static int64_t limit_of(int64_t v) {
    return v > 0 ? v : 0;
}

/* Names in |out| each rift limit the existing JetStream stream |have|
 * holds otherwise than this node's |want| ("max_messages 100 in
 * JetStream, 200 here; ..."); false when they agree. */
static bool limits_differ(const jsStreamConfig *have,
                          const jsStreamConfig *want, char *out, size_t size) {
    const struct {
        const char *name;
        int64_t have, want, unit;
    } l[] = {
        {"replicas", have->Replicas, want->Replicas, 1},
        {"max_messages", have->MaxMsgs, want->MaxMsgs, 1},
        {"max_bytes", have->MaxBytes, want->MaxBytes, 1},
        {"max_age_ms", have->MaxAge, want->MaxAge, 1000000},
        {"max_consumers", have->MaxConsumers, want->MaxConsumers, 1},
        {"max_payload_bytes", have->MaxMsgSize - REPL_HEADER_ROOM,
         want->MaxMsgSize - REPL_HEADER_ROOM, 1},
    };
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
        int64_t h = limit_of(l[i].have) / l[i].unit;
        int64_t w = limit_of(l[i].want) / l[i].unit;
        if (h != w && at < size) {
            at += (size_t)snprintf(
                out + at, size - at, "%s%s %lld in JetStream, %lld here",
                at ? "; " : "", l[i].name, (long long)h, (long long)w);
        }
    }
    return at > 0;
}

/* The stream exists with another configuration (JetStream answers a
 * create with the same one as done): say which limits this node's
 * update changes, since nodes configured differently overwrite each
 * other's limits at every start. */
static void warn_limits(rift_repl *r, repl_stream *s,
                        const jsStreamConfig *want) {
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    char diff[512];
    if (js_GetStreamInfo(&si, r->js, s->js_name, NULL, &jerr) == NATS_OK &&
        si != NULL && si->Config != NULL &&
        limits_differ(si->Config, want, diff, sizeof diff)) {
        rift_log(RIFT_LOG_WARN,
                 "cluster: replicated stream %s: JetStream %s had other "
                 "limits (%s); this node's configuration is applied: keep "
                 "the stream's limits equal on every node",
                 s->name, s->js_name, diff);
    }
    jsStreamInfo_Destroy(si);
}

int rift_repl_ensure(rift_repl *r, repl_stream *s, rift_error *err) {
    if (rift_repl_ready(s)) {
        return 0;
    }
    int rc = backbone_check(r, s, err);
    if (rc != 0) {
        return rc;
    }
    char subject[sizeof s->subj + 1];
    snprintf(subject, sizeof subject, "%s>", s->subj);
    const char *subjects[] = {subject};
    jsStreamConfig c;
    jsStreamConfig_Init(&c);
    c.Name = s->js_name;
    c.Subjects = subjects;
    c.SubjectsLen = 1;
    c.Retention = js_LimitsPolicy;
    c.Discard = js_DiscardOld;
    c.Storage = js_FileStorage;
    c.Replicas = s->replicas;
    c.MaxMsgs = (int64_t)s->max_messages;
    c.MaxBytes = (int64_t)s->max_bytes;
    c.MaxConsumers = (int64_t)s->max_consumers;
    c.MaxAge = (int64_t)s->max_age_ms * 1000000;
    /* JetStream wants the window within MaxAge (0: no age limit). */
    c.Duplicates = (int64_t)REPL_DUPLICATE_WINDOW_MS * 1000000;
    if (c.MaxAge > 0 && c.Duplicates > c.MaxAge) {
        c.Duplicates = c.MaxAge;
    }
    c.MaxMsgSize = (int32_t)RIFT_MIN(s->max_payload + REPL_HEADER_ROOM,
                                     (uint64_t)INT32_MAX);
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_AddStream(&si, r->js, &c, NULL, &jerr);
    if (st != NATS_OK && jerr == JSStreamNameExistErr) {
        /* Made by another node or an earlier run: our limits win. */
        warn_limits(r, s, &c);
        st = js_UpdateStream(&si, r->js, &c, NULL, &jerr);
    }
    jsStreamInfo_Destroy(si);
    if (st != NATS_OK) {
        return js_fail(s, "create", st, jerr, err);
    }
    pthread_mutex_lock(&s->mu);
    s->ready = true;
    s->last_error[0] = '\0';
    pthread_mutex_unlock(&s->mu);
    rift_log(RIFT_LOG_INFO, "cluster: replicated stream %s is JetStream %s",
             s->name, s->js_name);
    return 0;
}

/* ---- Consumers ---- */

static void consumer_free(repl_consumer *c) {
    for (size_t i = 0; c->kept.slots != NULL && i <= c->kept.mask; i++) {
        repl_kept *k = c->kept.slots[i].item;
        if (k != NULL) {
            natsMsg_Destroy(k->m);
            rift_free(NULL, k);
        }
    }
    rift_pmap_free(&c->kept, NULL);
    if (c->sub != NULL) {
        /* Keep the durable: only unbind this node. */
        natsSubscription_Destroy(c->sub);
    }
    pthread_mutex_destroy(&c->mu);
    rift_free(NULL, c);
}

void rift_repl_stream_release(repl_stream *s) {
    while (s->consumers != NULL) {
        repl_consumer *c = s->consumers;
        s->consumers = c->next;
        consumer_free(c);
    }
    s->n_consumers = 0;
}

static repl_consumer *consumer_find(repl_stream *s, const char *name) {
    for (repl_consumer *c = s->consumers; c != NULL; c = c->next) {
        if (strcmp(c->name, name) == 0) {
            return c;
        }
    }
    return NULL;
}

/* The consumer bound on this node, binding it when it exists in
 * JetStream (opened on another node, or before a restart). */
static int consumer_bind(rift_repl *r, repl_stream *s, const char *name,
                         repl_consumer **out, rift_error *err) {
    pthread_mutex_lock(&s->mu);
    repl_consumer *c = consumer_find(s, name);
    pthread_mutex_unlock(&s->mu);
    if (c != NULL) {
        *out = c;
        return 0;
    }
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus st =
        js_GetConsumerInfo(&ci, r->js, s->js_name, name, NULL, &jerr);
    if (st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr ||
        jerr == JSStreamNotFoundErr) {
        jsConsumerInfo_Destroy(ci);
        return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                              "consumer does not exist");
    }
    if (st != NATS_OK) {
        jsConsumerInfo_Destroy(ci);
        return js_fail(s, "consumer info", st, jerr, err);
    }
    c = rift_calloc(NULL, 1, sizeof *c);
    if (c == NULL) {
        jsConsumerInfo_Destroy(ci);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    pthread_mutex_init(&c->mu, NULL);
    rift_pmap_init(&c->kept);
    c->ack_wait_ms = (uint64_t)(ci->Config->AckWait / 1000000);
    c->max_ack_pending = (uint64_t)ci->Config->MaxAckPending;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = s->js_name;
    so.Consumer = name;
    st = js_PullSubscribe(&c->sub, r->js, ci->Config->FilterSubject, name, NULL,
                          &so, &jerr);
    jsConsumerInfo_Destroy(ci);
    if (st != NATS_OK) {
        c->sub = NULL;
        consumer_free(c);
        return js_fail(s, "bind consumer", st, jerr, err);
    }
    pthread_mutex_lock(&s->mu);
    repl_consumer *other = consumer_find(s, name);
    if (other == NULL) {
        c->next = s->consumers;
        s->consumers = c;
        s->n_consumers++;
    }
    pthread_mutex_unlock(&s->mu);
    if (other != NULL) {
        consumer_free(c); /* another worker bound it meanwhile */
        c = other;
    }
    *out = c;
    return 0;
}

/* The name of the first setting an existing consumer differs in, in
 * rift_consumer_config_diff's order; the start only for CONSUMER_OPEN
 * (CONSUMER_OPEN_EXT resumes whatever start the consumer has). */
static const char *config_diff(const jsConsumerConfig *have, const char *filter,
                               const repl_job *j) {
    if (have->FilterSubject == NULL || strcmp(have->FilterSubject, filter)) {
        return "filter";
    }
    if ((uint64_t)have->AckWait != j->ack_wait_ms * 1000000) {
        return "ack_wait_ms";
    }
    if ((uint64_t)have->MaxAckPending != j->max_ack_pending) {
        return "max_ack_pending";
    }
    uint64_t md = have->MaxDeliver > 0 ? (uint64_t)have->MaxDeliver : 0;
    if (md != j->max_deliver) {
        return "max_deliver";
    }
    if (j->ext) {
        return NULL;
    }
    uint64_t start = have->DeliverPolicy == js_DeliverAll ? 1
                     : have->DeliverPolicy == js_DeliverByStartSequence
                         ? have->OptStartSeq
                         : 0;
    return start != j->start_sequence ? "start_sequence" : NULL;
}

/* rift's start position as JetStream's deliver policy, and the sequence
 * it resolves to. last, new and the times are resolved here, as the
 * store does at creation (last and new from the stream's last sequence,
 * a time by bisection), and made a start sequence: so the consumer's
 * start is known later (JetStream keeps none for DeliverLast, New and
 * ByStartTime). */
static int start_policy(rift_repl *r, const repl_job *j, jsConsumerConfig *cc,
                        uint64_t *resolved, rift_error *err) {
    *resolved = 0;
    switch (j->start) {
    case RIFT_START_SEQUENCE:
        if (j->start_sequence <= 1) {
            cc->DeliverPolicy = js_DeliverAll;
        } else {
            cc->DeliverPolicy = js_DeliverByStartSequence;
            cc->OptStartSeq = j->start_sequence;
        }
        *resolved = j->start_sequence;
        return 0;
    case RIFT_START_LAST_RECEIVED:
    case RIFT_START_NEW_ONLY: {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus st =
            js_GetStreamInfo(&si, r->js, j->s->js_name, NULL, &jerr);
        if (st != NATS_OK || si == NULL) {
            jsStreamInfo_Destroy(si);
            return js_fail(j->s, "stream info", st != NATS_OK ? st : NATS_ERR,
                           jerr, err);
        }
        uint64_t last = si->State.LastSeq;
        bool empty = si->State.Msgs == 0;
        jsStreamInfo_Destroy(si);
        if (last == UINT64_MAX) {
            return js_fail(j->s, "stream info", NATS_PROTOCOL_ERROR, 0, err);
        }
        /* last: the newest record, or the next one when there is none. */
        *resolved = j->start == RIFT_START_NEW_ONLY || empty ? last + 1 : last;
        cc->DeliverPolicy = js_DeliverByStartSequence;
        cc->OptStartSeq = *resolved;
        return 0;
    }
    case RIFT_START_TIME:
    case RIFT_START_TIME_DELTA: {
        /* A delta is resolved now, as the store does at creation; the
         * time to a sequence here too (libnats 3.x sends OptStartTime's
         * fraction without its leading zeros: .049 s became .49 s). */
        uint64_t now = (uint64_t)now_ms();
        uint64_t at = j->start == RIFT_START_TIME
                          ? j->start_time_ms
                          : now - RIFT_MIN(j->start_time_ms, now);
        int rc = rift_repl_seq_at_time(r, j->s, at, resolved, err);
        if (rc != 0) {
            return rc;
        }
        cc->DeliverPolicy = js_DeliverByStartSequence;
        cc->OptStartSeq = *resolved;
        return 0;
    }
    default: /* RIFT_START_FIRST */
        cc->DeliverPolicy = js_DeliverAll;
        *resolved = 1;
        return 0;
    }
}

static int open_consumer(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    char filter[REPL_SUBJECT_MAX];
    snprintf(filter, sizeof filter, "%s%.*s", s->subj, (int)j->filter_len,
             j->filter);
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    bool created = false;
    natsStatus st =
        js_GetConsumerInfo(&ci, r->js, s->js_name, j->consumer, NULL, &jerr);
    if (st == NATS_OK && ci != NULL && ci->Config != NULL) {
        const char *diff = config_diff(ci->Config, filter, j);
        if (diff != NULL) {
            jsConsumerInfo_Destroy(ci);
            rift_log(RIFT_LOG_DEBUG,
                     "cluster: stream %s: consumer reopened with another %s",
                     s->name, diff);
            /* The store's texts: CONSUMER_OPEN_EXT names the setting. */
            return j->ext ? rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                           "invalid messaging configuration: "
                                           "consumer already exists with "
                                           "different %s",
                                           diff)
                          : rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                           "invalid messaging configuration: "
                                           "consumer already exists with "
                                           "different settings");
        }
    } else if ((st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) &&
               j->existing_only) {
        jsConsumerInfo_Destroy(ci);
        return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                              "consumer does not exist");
    } else if (st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
        jsConsumerInfo_Destroy(ci);
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        uint64_t resolved = 0;
        int rc = start_policy(r, j, &cc, &resolved, err);
        if (rc != 0) {
            return rc;
        }
        char desc[REPL_NAME_MAX + 32];
        rift_repl_describe(desc, sizeof desc, j->start, resolved,
                           j->start == RIFT_START_TIME ||
                                   j->start == RIFT_START_TIME_DELTA
                               ? j->start_time_ms
                               : 0,
                           j->label);
        cc.Durable = j->consumer;
        cc.Description = desc;
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = (int64_t)j->ack_wait_ms * 1000000;
        cc.MaxAckPending = j->max_ack_pending;
        cc.FilterSubject = filter;
        if (j->max_deliver > 0) {
            cc.MaxDeliver = j->max_deliver;
        }
        ci = NULL;
        st = js_AddConsumer(&ci, r->js, s->js_name, &cc, NULL, &jerr);
        if (st != NATS_OK) {
            jsConsumerInfo_Destroy(ci);
            return js_fail(s, "add consumer", st, jerr, err);
        }
        created = true;
    } else {
        jsConsumerInfo_Destroy(ci);
        return js_fail(s, "consumer info", st != NATS_OK ? st : NATS_ERR, jerr,
                       err);
    }
    if (j->out != NULL &&
        (ci == NULL || !rift_repl_consumer_out(s, ci, j->out))) {
        jsConsumerInfo_Destroy(ci);
        return js_fail(s, "consumer info", NATS_PROTOCOL_ERROR, 0, err);
    }
    jsConsumerInfo_Destroy(ci);
    if (j->out != NULL) {
        j->out->created = created;
    }
    repl_consumer *c;
    int rc = consumer_bind(r, s, j->consumer, &c, err);
    if (rc == 0) {
        /* Made again after a delete: the binding takes the new limits. */
        pthread_mutex_lock(&c->mu);
        c->ack_wait_ms = j->ack_wait_ms;
        c->max_ack_pending = j->max_ack_pending;
        pthread_mutex_unlock(&c->mu);
    }
    return rc;
}

/* ---- Fetch ---- */

/* A fetch's records: one allocation with the items and their bytes. */
typedef struct repl_batch {
    size_t count;
    rift_delivery items[];
} repl_batch;

void rift_repl_batch_free(void *ud, void *priv) {
    (void)ud;
    rift_free(NULL, priv);
}

/* Keeps |m| for its ACK (a redelivery replaces the older copy); drops
 * copies older than the ack wait when more are kept than may be
 * pending, since JetStream has redelivered those anyway. */
static void keep(repl_consumer *c, uint64_t seq, natsMsg *m) {
    uint64_t h = seq_hash(seq);
    rift_pmap *p = &c->kept;
    for (size_t i = rift_pmap_first(p, h); p->slots && p->slots[i].item;
         i = rift_pmap_next(p, i)) {
        repl_kept *k = p->slots[i].item;
        if (k->seq == seq) {
            natsMsg_Destroy(k->m);
            k->m = m;
            k->at_ms = now_ms();
            return;
        }
    }
    if (p->len >= c->max_ack_pending) {
        int64_t old = now_ms() - (int64_t)c->ack_wait_ms;
        for (size_t i = 0; p->slots != NULL && i <= p->mask;) {
            repl_kept *k = p->slots[i].item;
            if (k != NULL && k->at_ms < old) {
                rift_pmap_remove(p, seq_hash(k->seq), k);
                natsMsg_Destroy(k->m);
                rift_free(NULL, k);
                continue; /* backward shift may have moved one here */
            }
            i++;
        }
    }
    repl_kept *k = rift_calloc(NULL, 1, sizeof *k);
    if (k == NULL || rift_pmap_insert(p, NULL, h, k) != 0) {
        rift_free(NULL, k);
        natsMsg_Destroy(m); /* its ACK will be "not pending": redelivered */
        return;
    }
    k->seq = seq;
    k->m = m;
    k->at_ms = now_ms();
}

/* One pull of up to |j|'s limit into |list|, under |c|'s lock; 0, or
 * the error (CONSUMER_NOT_FOUND for a durable deleted behind this node:
 * told apart on the |first| pull only). */
static int pull(rift_repl *r, repl_job *j, repl_consumer *c, natsMsgList *list,
                bool first, rift_error *err) {
    repl_stream *s = j->s;
    jsFetchRequest fr;
    jsFetchRequest_Init(&fr);
    fr.Batch = (int)j->limit;
    fr.NoWait = true;
    /* libnats needs an expiry to wait for the answer at all, and 2.9 keeps
     * a no_wait request with one until it expires when nothing is pending
     * or max ack pending is reached (with messages it ends at the end of
     * the stream): such a fetch answers after FETCH_EXPIRES_MS. */
    fr.Expires = (int64_t)FETCH_EXPIRES_MS * 1000000;
    fr.MaxBytes = (int64_t)j->max_bytes;
    natsStatus st = natsSubscription_FetchRequest(list, c->sub, &fr);
    if (st == NATS_NOT_FOUND || (st == NATS_TIMEOUT && !first)) {
        st = NATS_OK; /* the consumer's 404: nothing to deliver now */
    }
    if (st != NATS_OK) {
        /* A timeout is the request's expiry with nothing to deliver, or a
         * durable deleted behind this node's binding (nobody answers): one
         * consumer info tells, so the client hears what the store says. */
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        natsStatus ist = js_GetConsumerInfo(&ci, r->js, s->js_name, j->consumer,
                                            NULL, &jerr);
        jsConsumerInfo_Destroy(ci);
        bool gone = ist == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr;
        if (st == NATS_TIMEOUT && !gone) {
            st = NATS_OK;
        } else {
            return gone ? rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                                         "consumer does not exist")
                        : js_fail(s, "fetch", st, 0, err);
        }
    }
    return 0;
}

static int fetch(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    repl_consumer *c;
    int rc = consumer_bind(r, s, j->consumer, &c, err);
    if (rc != 0) {
        return rc;
    }
    natsMsgList list = {0};
    int64_t deadline = now_ms() + (int64_t)j->wait_ms;
    bool waiting = false;
    pthread_mutex_lock(&c->mu);
    int64_t t0 = now_ms();
    rc = pull(r, j, c, &list, true, err);
    /* CONSUMER_FETCH_WAIT: pull again until a record comes or the wait
     * ends, each pull answering within FETCH_EXPIRES_MS, the consumer's
     * lock let go between pulls so its acks are not held up. */
    while (rc == 0 && list.Count == 0 && now_ms() < deadline &&
           !atomic_load(&r->no_waits) && !atomic_load(&j->abandoned) &&
           !stopping(r) && backbone_up(r)) {
        if (!waiting) {
            if (atomic_fetch_add(&r->waits, 1) >= REPL_MAX_WAITS) {
                atomic_fetch_sub(&r->waits, 1);
                break; /* too many waiting: answer what there is */
            }
            waiting = true;
        }
        pthread_mutex_unlock(&c->mu);
        /* An empty answer may come at once (a 404): pull at most every
         * FETCH_EXPIRES_MS. */
        int64_t took = now_ms() - t0;
        if (took < FETCH_EXPIRES_MS) {
            pause_ms((int)(FETCH_EXPIRES_MS - took));
        } else {
            sched_yield();
        }
        pthread_mutex_lock(&c->mu);
        natsMsgList_Destroy(&list);
        t0 = now_ms();
        rc = pull(r, j, c, &list, false, err);
    }
    if (waiting) {
        atomic_fetch_sub(&r->waits, 1);
    }
    if (rc != 0) {
        pthread_mutex_unlock(&c->mu);
        natsMsgList_Destroy(&list);
        return rc;
    }
    size_t bytes = 0;
    for (int i = 0; i < list.Count; i++) {
        const char *reply = NULL;
        (void)natsMsgHeader_Get(list.Msgs[i], HDR_REPLY, &reply);
        bytes += strlen(natsMsg_GetSubject(list.Msgs[i])) + 2 +
                 (reply ? strlen(reply) : 0) +
                 (size_t)natsMsg_GetDataLength(list.Msgs[i]);
    }
    size_t n = list.Count > 0 ? (size_t)list.Count : 0;
    repl_batch *b =
        rift_calloc(NULL, 1, sizeof *b + n * sizeof(rift_delivery) + bytes + 1);
    if (b == NULL) {
        pthread_mutex_unlock(&c->mu);
        natsMsgList_Destroy(&list); /* unacked: redelivered */
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    char *at = (char *)(b->items + n);
    for (size_t i = 0; i < n; i++) {
        natsMsg *m = list.Msgs[i];
        list.Msgs[i] = NULL;
        jsMsgMetaData *md = NULL;
        const char *subj = natsMsg_GetSubject(m);
        size_t slen = strlen(subj);
        if (natsMsg_GetMetaData(&md, m) != NATS_OK || slen <= s->subj_len ||
            memcmp(subj, s->subj, s->subj_len) != 0) {
            /* Not one of ours (a status message): leave it. */
            jsMsgMetaData_Destroy(md);
            natsMsg_Destroy(m);
            continue;
        }
        /* An ack wait shorter than the request's life redelivers within
         * it: one record per sequence, with the newest count and copy. */
        rift_delivery *dup = NULL;
        for (size_t k = 0; k < b->count && dup == NULL; k++) {
            if (b->items[k].record.sequence == md->Sequence.Stream) {
                dup = &b->items[k];
            }
        }
        if (dup != NULL) {
            dup->delivery_count =
                (uint32_t)RIFT_MIN(md->NumDelivered, UINT32_MAX);
            jsMsgMetaData_Destroy(md);
            keep(c, dup->record.sequence, m);
            continue;
        }
        rift_delivery *d = &b->items[b->count++];
        d->record.sequence = md->Sequence.Stream;
        d->delivery_count = (uint32_t)RIFT_MIN(md->NumDelivered, UINT32_MAX);
        const char *ts = NULL, *reply = NULL;
        d->record.timestamp_ms =
            natsMsgHeader_Get(m, HDR_TS, &ts) == NATS_OK && ts
                ? strtoull(ts, NULL, 10)
                : (uint64_t)(md->Timestamp / 1000000);
        jsMsgMetaData_Destroy(md);
        d->record.subject = at;
        d->record.subject_len = slen - s->subj_len;
        memcpy(at, subj + s->subj_len, d->record.subject_len);
        at += d->record.subject_len + 1;
        if (natsMsgHeader_Get(m, HDR_REPLY, &reply) == NATS_OK && reply) {
            d->record.reply = at;
            d->record.reply_len = strlen(reply);
            memcpy(at, reply, d->record.reply_len);
            at += d->record.reply_len + 1;
        }
        int plen = natsMsg_GetDataLength(m);
        d->record.payload = (const uint8_t *)at;
        d->record.payload_len = plen > 0 ? (size_t)plen : 0;
        if (plen > 0) {
            memcpy(at, natsMsg_GetData(m), (size_t)plen);
            at += plen;
        }
        keep(c, d->record.sequence, m);
    }
    pthread_mutex_unlock(&c->mu);
    natsMsgList_Destroy(&list);
    atomic_fetch_add(&s->fetched, b->count);
    j->batch->count = b->count;
    j->batch->items = b->items;
    j->batch->priv_ = NULL;
    *j->priv = b;
    return 0;
}

/* ---- Ack, NAK, TERM, PROGRESS ---- */

/* The kept message of |j|'s sequence: removed from the consumer's map
 * (|take|), or left there (PROGRESS: the ack still comes) after +WPI was
 * sent on it under the consumer's lock, with *|progress| its status. NULL
 * with |err| set when the consumer or the sequence is not here. */
static repl_kept *kept_for(rift_repl *r, repl_job *j, bool take,
                           natsStatus *progress, rift_error *err) {
    repl_stream *s = j->s;
    pthread_mutex_lock(&s->mu);
    repl_consumer *c = consumer_find(s, j->consumer);
    pthread_mutex_unlock(&s->mu);
    repl_kept *k = NULL;
    if (c == NULL) {
        /* Not bound here: an unknown consumer still says so. */
        if (consumer_bind(r, s, j->consumer, &c, err) != 0) {
            return NULL;
        }
    } else {
        pthread_mutex_lock(&c->mu);
        uint64_t h = seq_hash(j->sequence);
        rift_pmap *p = &c->kept;
        for (size_t i = rift_pmap_first(p, h); p->slots && p->slots[i].item;
             i = rift_pmap_next(p, i)) {
            repl_kept *x = p->slots[i].item;
            if (x->seq == j->sequence) {
                k = x;
                if (take) {
                    rift_pmap_remove(p, h, x);
                }
                break;
            }
        }
        if (k != NULL && !take) {
            *progress = natsMsg_InProgress(k->m, NULL);
            k->at_ms = now_ms();
        }
        pthread_mutex_unlock(&c->mu);
    }
    if (k == NULL) {
        rift_error_set(err, RIFT_ERR_INVALID_ACK,
                       "sequence is not pending acknowledgement");
    }
    return k;
}

static int ack(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    repl_kept *k = kept_for(r, j, true, NULL, err);
    if (k == NULL) {
        return err->code;
    }
    jsErrCode jerr = 0;
    natsStatus st = natsMsg_AckSync(k->m, NULL, &jerr);
    natsMsg_Destroy(k->m);
    rift_free(NULL, k);
    if (st != NATS_OK) {
        return js_fail(s, "ack", st, jerr, err);
    }
    atomic_fetch_add(&s->acked, 1);
    return 0;
}

/* NAK (JetStream -NAK, with a delay), TERM (+TERM): the message leaves
 * this node's map; PROGRESS (+WPI) keeps it for the ACK to come. */
static int settle(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    bool keep_it =
        j->opcode != RIFT_OP_CONSUMER_NAK && j->opcode != RIFT_OP_CONSUMER_TERM;
    natsStatus st = NATS_OK;
    repl_kept *k = kept_for(r, j, !keep_it, &st, err);
    if (k == NULL) {
        return err->code;
    }
    const char *what;
    if (keep_it) {
        what = "progress"; /* sent by kept_for; *k stays in the map */
    } else {
        what = j->opcode == RIFT_OP_CONSUMER_NAK ? "nak" : "term";
        st = j->opcode == RIFT_OP_CONSUMER_NAK
                 ? natsMsg_NakWithDelay(k->m, (int64_t)j->delay_ms, NULL)
                 : natsMsg_Term(k->m, NULL);
        natsMsg_Destroy(k->m);
        rift_free(NULL, k);
    }
    if (st != NATS_OK) {
        return js_fail(s, what, st, 0, err);
    }
    return 0;
}

/* ---- Delete ---- */

/* js_DeleteConsumer; this node's kept messages of it are dropped (their
 * acks would fail). The binding stays: another worker may be using it,
 * and a consumer opened again under the name pulls through it. */
static int delete_consumer(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    jsErrCode jerr = 0;
    natsStatus st =
        js_DeleteConsumer(r->js, s->js_name, j->consumer, NULL, &jerr);
    if (st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
        return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                              "consumer does not exist");
    }
    if (st != NATS_OK) {
        return js_fail(s, "delete consumer", st, jerr, err);
    }
    pthread_mutex_lock(&s->mu);
    repl_consumer *c = consumer_find(s, j->consumer);
    pthread_mutex_unlock(&s->mu);
    if (c != NULL) {
        pthread_mutex_lock(&c->mu);
        for (size_t i = 0; c->kept.slots != NULL && i <= c->kept.mask; i++) {
            repl_kept *k = c->kept.slots[i].item;
            if (k != NULL) {
                natsMsg_Destroy(k->m);
                rift_free(NULL, k);
            }
        }
        rift_pmap_free(&c->kept, NULL);
        rift_pmap_init(&c->kept);
        pthread_mutex_unlock(&c->mu);
    }
    return 0;
}

int rift_repl_run(rift_repl *r, repl_job *j, rift_error *err) {
    int rc = rift_repl_ensure(r, j->s, err);
    if (rc == 0 && j->kind != REPL_ENSURE) {
        rc = backbone_check(r, j->s, err);
    }
    if (rc != 0 || j->kind == REPL_ENSURE) {
        return rc;
    }
    switch (j->kind) {
    case REPL_PUBLISH:
        rc = rift_repl_pub_submit(r, j, err);
        return rc == 0 ? REPL_HANDED : rc;
    case REPL_OPEN:
        return open_consumer(r, j, err);
    case REPL_FETCH:
        return fetch(r, j, err);
    case REPL_SETTLE:
        return settle(r, j, err);
    case REPL_DELETE:
        return delete_consumer(r, j, err);
    case REPL_INFO:
        return rift_repl_consumer_info(r, j, err);
    case REPL_LIST:
        return rift_repl_consumer_list(r, j, err);
    case REPL_STREAM_INFO:
        return rift_repl_stream_info(r, j, err);
    case REPL_PURGE:
        return rift_repl_purge(r, j, err);
    default:
        return ack(r, j, err);
    }
}
