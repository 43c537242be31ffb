/*
 * replicated_info.c — the replicated-stream operations that read a
 * JetStream stream or its consumers, and purge (cluster layer; see
 * replicated.h and docs/cluster.md), run on the backend's workers:
 *
 *   consumer info   js_GetConsumerInfo, mapped onto rift's consumer info
 *   consumer list   js_Consumers (every consumer: the server keeps the
 *                   caller identity's own, by the name in Description)
 *   stream info     js_GetStreamInfo's state, with rift's configured spec
 *   purge           js_PurgeStream: the sequences carry on, as in rift
 *
 * Every JetStream answer is peer input: a consumer rift did not make (no
 * rift filter prefix, a deliver policy rift has no start for) is left
 * out of a list and an error for info; numbers are clamped to the
 * ranges of rift's fields.
 */
#include "cluster/replicated_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- The consumer's description ---- */

void rift_repl_describe(char *out, size_t size, rift_consumer_start start,
                        uint64_t start_sequence, uint64_t start_time_ms,
                        const char *label) {
    snprintf(out, size, "%d %" PRIu64 " %" PRIu64 " %s", (int)start,
             start_sequence, start_time_ms, label);
}

/* A decimal number of at most 19 digits ending in a space; the text
 * after the space, or NULL. */
static const char *number(const char *p, uint64_t *v) {
    *v = 0;
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits == 19) {
            return NULL;
        }
        *v = *v * 10 + (uint64_t)(*p - '0');
    }
    return digits > 0 && *p == ' ' ? p + 1 : NULL;
}

bool rift_repl_description(const char *d, rift_consumer_start *start,
                           uint64_t *start_sequence, uint64_t *start_time_ms,
                           char label[REPL_NAME_MAX + 1], size_t *label_len) {
    if (d == NULL || d[0] < '0' || d[0] > '0' + RIFT_START_TIME_DELTA ||
        d[1] != ' ') {
        return false;
    }
    const char *p = number(d + 2, start_sequence);
    p = p != NULL ? number(p, start_time_ms) : NULL;
    if (p == NULL) {
        return false;
    }
    size_t n = strlen(p);
    if (n == 0 || n > REPL_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch <= ' ' || ch == 0x7f) {
            return false; /* no name rift scopes has these */
        }
    }
    *start = (rift_consumer_start)(d[0] - '0');
    memcpy(label, p, n);
    label[n] = '\0';
    *label_len = n;
    return true;
}

/* The time of stored record |seq| in ms: 0 when it is gone (older than
 * any time asked), -1 on another error. */
static int64_t record_ms(rift_repl *r, repl_stream *s, uint64_t seq,
                         natsStatus *st, jsErrCode *jerr) {
    natsMsg *m = NULL;
    *st = js_GetMsg(&m, r->js, s->js_name, seq, NULL, jerr);
    if (*st == NATS_NOT_FOUND || *jerr == JSNoMessageFoundErr) {
        natsMsg_Destroy(m);
        *st = NATS_OK;
        return 0;
    }
    if (*st != NATS_OK || m == NULL) {
        natsMsg_Destroy(m);
        return -1;
    }
    const char *ts = NULL;
    int64_t ms = -1;
    if (natsMsgHeader_Get(m, "Rift-Ts", &ts) == NATS_OK && ts != NULL) {
        uint64_t v = 0;
        size_t i = 0;
        for (; ts[i] >= '0' && ts[i] <= '9' && i < 19; i++) {
            v = v * 10 + (uint64_t)(ts[i] - '0');
        }
        if (i > 0 && ts[i] == '\0') {
            ms = (int64_t)v;
        }
    }
    if (ms < 0) {
        int64_t ns = natsMsg_GetTime(m);
        ms = ns > 0 ? ns / 1000000 : 0;
    }
    natsMsg_Destroy(m);
    return ms;
}

int rift_repl_seq_at_time(rift_repl *r, repl_stream *s, uint64_t at_ms,
                          uint64_t *seq, rift_error *err) {
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, r->js, s->js_name, NULL, &jerr);
    if (st != NATS_OK || si == NULL) {
        jsStreamInfo_Destroy(si);
        return rift_repl_fail(s, "stream info", st != NATS_OK ? st : NATS_ERR,
                              jerr, err);
    }
    uint64_t lo =
        si->State.Msgs > 0 ? si->State.FirstSeq : si->State.LastSeq + 1;
    uint64_t hi = si->State.LastSeq + 1;
    jsStreamInfo_Destroy(si);
    if (lo == 0 || lo > hi) {
        return rift_repl_fail(s, "stream info", NATS_PROTOCOL_ERROR, 0, err);
    }
    /* At most 64 steps: the records' times grow with their sequences. */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        jerr = 0;
        int64_t ms = record_ms(r, s, mid, &st, &jerr);
        if (ms < 0) {
            return rift_repl_fail(s, "get message", st, jerr, err);
        }
        if ((uint64_t)ms >= at_ms) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    *seq = lo;
    return 0;
}

/* ---- JetStream's consumer info as rift's ---- */

static uint64_t ns_to_ms(int64_t ns) {
    return ns > 0 ? (uint64_t)ns / 1000000 : 0;
}

bool rift_repl_consumer_out(const repl_stream *s, const jsConsumerInfo *ci,
                            rift_server_backend_consumer *out) {
    memset(out, 0, sizeof *out);
    const jsConsumerConfig *cc = ci->Config;
    if (cc == NULL || ci->Name == NULL ||
        strlen(ci->Name) >= sizeof out->name || cc->FilterSubject == NULL) {
        return false;
    }
    size_t flen = strlen(cc->FilterSubject);
    if (flen <= s->subj_len || flen - s->subj_len >= sizeof out->filter ||
        memcmp(cc->FilterSubject, s->subj, s->subj_len) != 0) {
        return false; /* not a rift consumer of this stream */
    }
    snprintf(out->name, sizeof out->name, "%s", ci->Name);
    memcpy(out->filter, cc->FilterSubject + s->subj_len, flen - s->subj_len);
    rift_consumer_info *in = &out->info;
    in->name = out->name;
    in->name_len = strlen(out->name);
    in->config.filter = out->filter;
    in->config.filter_len = flen - s->subj_len;
    in->config.ack_wait_ms = RIFT_MIN(ns_to_ms(cc->AckWait), 3600000u);
    in->config.max_ack_pending =
        cc->MaxAckPending > 0
            ? (uint32_t)RIFT_MIN((uint64_t)cc->MaxAckPending, 65536u)
            : 0;
    in->config.max_deliver =
        cc->MaxDeliver > 0
            ? (uint32_t)RIFT_MIN((uint64_t)cc->MaxDeliver, UINT32_MAX)
            : 0;
    rift_consumer_start start = RIFT_START_SEQUENCE;
    uint64_t resolved = 0, time_ms = 0;
    bool described =
        rift_repl_description(cc->Description, &start, &resolved, &time_ms,
                              out->label, &out->label_len);
    /* The described start must be one the deliver policy can carry. */
    switch (cc->DeliverPolicy) {
    case js_DeliverAll:
        if (!described || start != RIFT_START_FIRST) {
            start = RIFT_START_SEQUENCE;
            in->config.start_sequence = 1;
        }
        resolved = 1;
        break;
    case js_DeliverByStartSequence:
        if (start == RIFT_START_TIME || start == RIFT_START_TIME_DELTA) {
            in->config.start_time_ms = time_ms; /* resolved at the open */
        } else if (!described || (start != RIFT_START_LAST_RECEIVED &&
                                  start != RIFT_START_NEW_ONLY)) {
            start = RIFT_START_SEQUENCE;
            in->config.start_sequence =
                cc->OptStartSeq > 0 ? cc->OptStartSeq : 1;
        }
        resolved = cc->OptStartSeq > 0 ? cc->OptStartSeq : 1;
        break;
    case js_DeliverLast:
        start = RIFT_START_LAST_RECEIVED; /* not made by rift: no start */
        resolved = 0;
        break;
    case js_DeliverNew:
        start = RIFT_START_NEW_ONLY;
        resolved = 0;
        break;
    case js_DeliverByStartTime:
        if (!described || start != RIFT_START_TIME_DELTA) {
            start = RIFT_START_TIME;
            in->config.start_time_ms = ns_to_ms(cc->OptStartTime);
        } else {
            /* The delta the open resolved: creation - start time. */
            in->config.start_time_ms =
                ci->Created > cc->OptStartTime
                    ? ns_to_ms(ci->Created - cc->OptStartTime)
                    : 0;
        }
        if (!described) {
            resolved = 0;
        }
        break;
    default:
        return false; /* last per subject: not a start rift has */
    }
    /* 0: JetStream keeps no resolved start (a consumer rift did not
     * describe); its ack floor + 1 is one until the first ack. */
    in->start_sequence = resolved > 0 ? resolved : ci->AckFloor.Stream + 1;
    in->config.start = start;
    in->next_sequence = ci->Delivered.Stream + 1;
    in->pending = ci->NumAckPending > 0 ? (size_t)ci->NumAckPending : 0;
    /* JetStream counts neither terminated deliveries nor records dropped
     * after MaxDeliver per consumer. */
    in->terminated = 0;
    in->max_delivered = 0;
    return true;
}

static bool not_found(natsStatus st, jsErrCode jerr) {
    return st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr ||
           jerr == JSStreamNotFoundErr;
}

int rift_repl_consumer_info(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus st =
        js_GetConsumerInfo(&ci, r->js, s->js_name, j->consumer, NULL, &jerr);
    if (st == NATS_OK && ci != NULL && rift_repl_consumer_out(s, ci, j->out)) {
        jsConsumerInfo_Destroy(ci);
        return 0;
    }
    jsConsumerInfo_Destroy(ci);
    if (st == NATS_OK || not_found(st, jerr)) {
        /* Not one rift made is not one the client may see either. */
        return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                              "consumer does not exist");
    }
    return rift_repl_fail(s, "consumer info", st, jerr, err);
}

/* Most consumers one list reads (the server pages them). */
#define LIST_MAX 4096

int rift_repl_consumer_list(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    jsConsumerInfoList *list = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_Consumers(&list, r->js, s->js_name, NULL, &jerr);
    if (st == NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
        return 0; /* no consumers */
    }
    if (st != NATS_OK) {
        jsConsumerInfoList_Destroy(list);
        return rift_repl_fail(s, "consumer list", st, jerr, err);
    }
    size_t n = list != NULL && list->Count > 0
                   ? RIFT_MIN((size_t)list->Count, (size_t)LIST_MAX)
                   : 0;
    rift_server_backend_consumer *v = rift_calloc(NULL, n ? n : 1, sizeof *v);
    if (v == NULL) {
        jsConsumerInfoList_Destroy(list);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (list->List[i] != NULL &&
            rift_repl_consumer_out(s, list->List[i], &v[k])) {
            k++;
        }
    }
    jsConsumerInfoList_Destroy(list);
    *j->list = v;
    *j->count = k;
    return 0;
}

/* ---- The stream ---- */

int rift_repl_stream_info(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, r->js, s->js_name, NULL, &jerr);
    if (st != NATS_OK || si == NULL) {
        jsStreamInfo_Destroy(si);
        if (jerr == JSStreamNotFoundErr) {
            pthread_mutex_lock(&s->mu);
            s->ready = false; /* deleted behind our back: make it again */
            pthread_mutex_unlock(&s->mu);
        }
        return rift_repl_fail(s, "stream info", st != NATS_OK ? st : NATS_ERR,
                              jerr, err);
    }
    const jsStreamState *ss = &si->State;
    if (ss->Msgs > 0 && (ss->FirstSeq == 0 || ss->FirstSeq > ss->LastSeq ||
                         ss->Msgs > ss->LastSeq - ss->FirstSeq + 1)) {
        jsStreamInfo_Destroy(si);
        return rift_repl_fail(s, "stream info", NATS_PROTOCOL_ERROR, 0, err);
    }
    rift_server_backend_stream_info *o = j->sinfo; /* spec: b_stream_info */
    o->messages = ss->Msgs;
    o->bytes = ss->Bytes;
    o->last_sequence = ss->LastSeq;
    /* rift's rule: last + 1 when empty (a new JetStream stream says 0). */
    o->first_sequence = ss->Msgs > 0 ? ss->FirstSeq : ss->LastSeq + 1;
    o->consumers = ss->Consumers > 0
                       ? (uint32_t)RIFT_MIN((uint64_t)ss->Consumers, UINT32_MAX)
                       : 0;
    jsStreamInfo_Destroy(si);
    return 0;
}

int rift_repl_purge(rift_repl *r, repl_job *j, rift_error *err) {
    repl_stream *s = j->s;
    /* The count for the log only: JetStream's purge answer has none. */
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, r->js, s->js_name, NULL, &jerr) == NATS_OK &&
        si != NULL) {
        *j->purged = si->State.Msgs;
    }
    jsStreamInfo_Destroy(si);
    jerr = 0;
    natsStatus st = js_PurgeStream(r->js, s->js_name, NULL, &jerr);
    if (st != NATS_OK) {
        return rift_repl_fail(s, "purge", st, jerr, err);
    }
    rift_log(RIFT_LOG_INFO,
             "cluster: replicated stream %s purged (%" PRIu64 " records)",
             s->name, *j->purged);
    return 0;
}
