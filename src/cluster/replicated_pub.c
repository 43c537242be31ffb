/*
 * replicated_pub.c — publishes of the replicated-stream backend (cluster
 * layer; see replicated.h and docs/cluster.md), asynchronous:
 *
 *   - The server thread (or a worker, after ENSURE) submits the job: with
 *     room in the window (REPL_PUB_WINDOW) and nothing queued, it builds
 *     the message (Nats-Msg-Id <node>.<boot>.<n>, Rift-Ts, Rift-Reply)
 *     and hands it to js_PublishMsgAsync itself (a buffered write, as the
 *     bridge's plain publishes); otherwise the job waits in the queue for
 *     the publisher thread, which sends it when the window has room. No
 *     thread waits for an answer.
 *   - libnats calls on_ack on its reply subscription's thread with the
 *     PubAck or the error. STORED = the PubAck's sequence, the job
 *     completes there (the server's done callback runs on any thread).
 *   - A try is lost after PUBLISH_TRY_MS. That timer is the publisher's,
 *     not libnats' MaxWait, which allocates for every publish and later
 *     dispatches a timeout message for each, answered or not (it cost
 *     about 40 CPU s per M on the cluster-stream bench row at --scale 2).
 *     libnats cannot give back one pending publish, so when the oldest
 *     try is lost the publisher takes every pending one back
 *     (js_PublishAsyncGetPendingList) and ends all their tries with a
 *     timeout: the others are sent again too, deduplicated by their ids.
 *     That happens only when an answer is lost.
 *   - A timeout or no-responders while connected is tried again after
 *     RETRY_PAUSE_MS with the same message (the same id: if the first try
 *     was stored, the retry's PubAck is a duplicate naming its sequence),
 *     until PUBLISH_FOR_MS after the first try; the retry waits in the
 *     queue. A publish that fails while the backbone is down answers
 *     "backbone unavailable".
 *
 * The PubAck is peer input: libnats parses the JSON (bad JSON is an error
 * answer), and the stream name and sequence are checked here.
 */
#include "cluster/replicated_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define PUBLISH_TRY_MS REPL_PUBLISH_TRY_MS
#define PUBLISH_FOR_MS REPL_PUBLISH_FOR_MS
#define RETRY_PAUSE_MS 100

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t msg_hash(const natsMsg *m) {
    return (uint64_t)(uintptr_t)m * 0x9e3779b97f4a7c15ull;
}

static bool retryable(natsStatus st) {
    return st == NATS_TIMEOUT || st == NATS_NO_RESPONDERS ||
           st == NATS_NOT_YET_CONNECTED || st == NATS_CONNECTION_DISCONNECTED ||
           st == NATS_CONNECTION_CLOSED;
}

static void push_locked(rift_repl *r, repl_job *j) {
    j->next = NULL;
    if (r->pub_tail != NULL) {
        r->pub_tail->next = j;
    } else {
        r->pub_head = j;
    }
    r->pub_tail = j;
}

/* The in-flight job of |m|, removed from the map; NULL when none. */
static repl_job *take_locked(rift_repl *r, const natsMsg *m) {
    uint64_t h = msg_hash(m);
    rift_pmap *p = &r->pub_sent;
    for (size_t i = rift_pmap_first(p, h); p->slots && p->slots[i].item;
         i = rift_pmap_next(p, i)) {
        repl_job *j = p->slots[i].item;
        if (p->slots[i].hash == h && j->msg == m) {
            rift_pmap_remove(p, h, j);
            if (j->fprev != NULL) {
                j->fprev->fnext = j->fnext;
            } else {
                r->pub_fhead = j->fnext;
            }
            if (j->fnext != NULL) {
                j->fnext->fprev = j->fprev;
            } else {
                r->pub_ftail = j->fprev;
            }
            j->fprev = j->fnext = NULL;
            return j;
        }
    }
    return NULL;
}

/* ---- Outcomes ---- */

static void complete(repl_job *j, int rc, const rift_error *err) {
    natsMsg_Destroy(j->msg);
    j->msg = NULL;
    rift_repl_finish(j, rc, err);
}

/* A try of |j| that ended with |st| (not NATS_OK): queued again when it
 * may be retried (true), else *|rc| / |err| say what the client hears. */
static bool failed(rift_repl *r, repl_job *j, natsStatus st, jsErrCode jerr,
                   int *rc, rift_error *err) {
    repl_stream *s = j->s;
    bool up = rift_repl_backbone_up(r);
    if (retryable(st) && up && now_ms() < j->deadline_ms) {
        /* Same message, same id: stored once whichever try got in. */
        j->retry_at_ms = now_ms() + RETRY_PAUSE_MS;
        return true;
    }
    if (!up) {
        /* Lost while trying: stored or not, the client must retry. */
        *rc = rift_repl_backbone_check(r, s, err);
        if (*rc != 0) {
            return false;
        }
    }
    if (jerr == JSStreamNotFoundErr) {
        pthread_mutex_lock(&s->mu);
        s->ready = false; /* deleted behind our back: make it again */
        pthread_mutex_unlock(&s->mu);
    }
    *rc = rift_repl_fail(s, "publish", st, jerr, err);
    return false;
}

/* The end of one try handed to libnats (or refused by it): requeued for
 * a retry unless stopping, else completed; |j| leaves the window. */
static void settle(rift_repl *r, repl_job *j, bool retry, int rc,
                   const rift_error *err) {
    pthread_mutex_lock(&r->pub_mu);
    r->pub_inflight--;
    bool requeued = retry && !r->pub_stopping;
    if (requeued) {
        atomic_fetch_add(&j->s->retries, 1);
        push_locked(r, j);
    }
    pthread_cond_signal(&r->pub_cv);
    pthread_mutex_unlock(&r->pub_mu);
    if (requeued) {
        return;
    }
    if (retry) {
        rift_error e = {0};
        complete(j,
                 rift_error_set(&e, RIFT_ERR_STORAGE,
                                "stream storage: node is stopping"),
                 &e);
    } else {
        complete(j, rc, err);
    }
}

static void stored(repl_job *j, const jsPubAck *pa) {
    repl_stream *s = j->s;
    j->stored->sequence = pa->Sequence;
    j->stored->timestamp_ms = j->at_ms;
    if (pa->Duplicate) {
        atomic_fetch_add(&s->duplicates, 1);
    } else {
        atomic_fetch_add(&s->published, 1);
    }
    uint64_t prev = atomic_load(&s->last_seq);
    while (pa->Sequence > prev &&
           !atomic_compare_exchange_weak(&s->last_seq, &prev, pa->Sequence)) {
    }
}

/* libnats' ack handler (its reply subscription's thread): the message
 * is ours again. */
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae,
                   void *closure) {
    (void)js;
    rift_repl *r = closure;
    pthread_mutex_lock(&r->pub_mu);
    repl_job *j = take_locked(r, msg);
    if (j != NULL) {
        r->pub_callbacks++;
    }
    pthread_mutex_unlock(&r->pub_mu);
    if (j == NULL) {
        /* Not ours (stop took it back meanwhile): libnats gave it to us. */
        natsMsg_Destroy(msg);
        return;
    }
    rift_error err = {0};
    int rc = 0;
    bool retry = false;
    if (pa != NULL) {
        if (pa->Stream == NULL || strcmp(pa->Stream, j->s->js_name) != 0 ||
            pa->Sequence == 0) {
            /* A PubAck of another stream, or without a sequence. */
            rc = rift_repl_fail(j->s, "publish: unexpected answer", NATS_ERR, 0,
                                &err);
        } else {
            stored(j, pa);
        }
    } else {
        retry = failed(r, j, pae != NULL ? pae->Err : NATS_ERR,
                       pae != NULL ? pae->ErrCode : 0, &rc, &err);
    }
    settle(r, j, retry, rc, &err);
    pthread_mutex_lock(&r->pub_mu);
    r->pub_callbacks--;
    pthread_cond_broadcast(&r->pub_idle_cv);
    pthread_mutex_unlock(&r->pub_mu);
}

/* ---- The publisher ---- */

/* The message of |j|'s first try: subject, Rift-Ts, Rift-Reply. */
static natsStatus build(repl_job *j) {
    repl_stream *s = j->s;
    char subj[REPL_SUBJECT_MAX];
    snprintf(subj, sizeof subj, "%s%.*s", s->subj, (int)j->subject_len,
             j->subject);
    char ts[24];
    j->at_ms = (uint64_t)now_ms();
    snprintf(ts, sizeof ts, "%" PRIu64, j->at_ms);
    natsStatus st = natsMsg_Create(
        &j->msg, subj, NULL, (const char *)j->payload, (int)j->payload_len);
    if (st == NATS_OK) {
        st = natsMsgHeader_Set(j->msg, REPL_HDR_TS, ts);
    }
    if (st == NATS_OK && j->reply_len > 0) {
        char reply[REPL_SUBJECT_MAX];
        snprintf(reply, sizeof reply, "%.*s", (int)j->reply_len, j->reply);
        st = natsMsgHeader_Set(j->msg, REPL_HDR_REPLY, reply);
    }
    return st;
}

/* Hands |j| back to the publisher, which tries it (again) at once: a try
 * by a submitting thread that could not start, so that no job completes
 * inside the server's submit call. */
static void hand_back(rift_repl *r, repl_job *j) {
    pthread_mutex_lock(&r->pub_mu);
    r->pub_inflight--;
    j->next = r->pub_head;
    r->pub_head = j;
    if (r->pub_tail == NULL) {
        r->pub_tail = j;
    }
    pthread_cond_signal(&r->pub_cv);
    pthread_mutex_unlock(&r->pub_mu);
}

/* A try of |j| that found no memory: the submitting thread's own try
 * (|direct|) hands the job back to the publisher, which tries again; the
 * publisher's own fails it. */
static void out_of_memory(rift_repl *r, repl_job *j, bool direct) {
    if (direct) {
        hand_back(r, j);
        return;
    }
    rift_error err = {0};
    settle(r, j, false, rift_error_set(&err, RIFT_ERR_NOMEM, "out of memory"),
           &err);
}

/* One try of |j| (counted in the window by the caller). |direct|: the
 * submitting thread's own try, which hands the job back to the publisher
 * instead of failing it. */
static void send_one(rift_repl *r, repl_job *j, bool direct) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 0; /* the publisher's timer, see the top */
    char id[200];
    bool first = j->deadline_ms == 0; /* never handed to libnats */
    if (j->msg == NULL && build(j) != NATS_OK) {
        natsMsg_Destroy(j->msg);
        j->msg = NULL;
        out_of_memory(r, j, direct);
        return;
    }
    pthread_mutex_lock(&r->pub_mu);
    int rc = rift_pmap_insert(&r->pub_sent, NULL, msg_hash(j->msg), j);
    if (rc == 0) {
        /* The same try length for all: the tail is the newest end. */
        j->try_end_ms = now_ms() + PUBLISH_TRY_MS;
        j->fnext = NULL;
        j->fprev = r->pub_ftail;
        if (r->pub_ftail != NULL) {
            r->pub_ftail->fnext = j;
        } else {
            r->pub_fhead = j;
            /* The publisher may sleep without a deadline: give it one. */
            pthread_cond_signal(&r->pub_cv);
        }
        r->pub_ftail = j;
    }
    pthread_mutex_unlock(&r->pub_mu);
    if (rc != 0) {
        out_of_memory(r, j, direct);
        return;
    }
    if (first) {
        /* The id stays in the message's headers for its retries. No
         * Nats-Expected-Stream: JetStream refuses streams with overlapping
         * subjects, so only the stream of this private namespace stores
         * it, and on_ack checks the PubAck's stream name; the header cost
         * nats-server about half the direct path's CPU per message on the
         * cluster-stream bench row (docs/cluster.md, "Cost"). */
        snprintf(id, sizeof id, "%s.%016" PRIx64 ".%" PRIu64, r->node, r->boot,
                 (uint64_t)atomic_fetch_add(&r->next_id, 1));
        po.MsgId = id;
        j->deadline_ms = now_ms() + PUBLISH_FOR_MS;
    }
    /* From here on_ack may run (even before the call returns). */
    natsMsg *m = j->msg;
    natsStatus st = js_PublishMsgAsync(r->js, &m, &po);
    if (st == NATS_OK) {
        return;
    }
    /* Refused: libnats kept nothing and calls no handler for it. */
    pthread_mutex_lock(&r->pub_mu);
    (void)take_locked(r, j->msg); /* == j */
    pthread_mutex_unlock(&r->pub_mu);
    if (direct) {
        hand_back(r, j);
        return;
    }
    rift_error err = {0};
    int frc = 0;
    bool retry = failed(r, j, st, 0, &frc, &err);
    settle(r, j, retry, frc, &err);
}

/* The oldest try is lost: every pending publish taken back from libnats
 * (whose late answers it then drops) ends its try with a timeout. */
static void expire(rift_repl *r) {
    natsMsgList list = {0};
    if (js_PublishAsyncGetPendingList(&list, r->js) != NATS_OK) {
        return; /* none: the handler of the oldest is running */
    }
    for (int i = 0; i < list.Count; i++) {
        pthread_mutex_lock(&r->pub_mu);
        repl_job *j = take_locked(r, list.Msgs[i]);
        pthread_mutex_unlock(&r->pub_mu);
        if (j == NULL) {
            continue; /* not ours: the list destroys it */
        }
        list.Msgs[i] = NULL; /* j->msg again */
        rift_error err = {0};
        int rc = 0;
        bool retry = failed(r, j, NATS_TIMEOUT, 0, &rc, &err);
        settle(r, j, retry, rc, &err);
    }
    natsMsgList_Destroy(&list);
}

static struct timespec at_ms(int64_t ms) {
    return (struct timespec){(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
}

static void *publisher_main(void *arg) {
    rift_repl *r = arg;
    pthread_mutex_lock(&r->pub_mu);
    for (;;) {
        int64_t now = now_ms();
        if (!r->pub_stopping && r->pub_fhead != NULL &&
            r->pub_fhead->try_end_ms <= now) {
            repl_job *oldest = r->pub_fhead;
            pthread_mutex_unlock(&r->pub_mu);
            expire(r);
            pthread_mutex_lock(&r->pub_mu);
            if (r->pub_fhead == oldest) {
                /* Its handler is running: it leaves the list soon. */
                struct timespec until = at_ms(now_ms() + 10);
                pthread_cond_timedwait(&r->pub_cv, &r->pub_mu, &until);
            }
            continue;
        }
        /* Woken by work, room in the window, a retry's time or the end of
         * the oldest try. */
        int64_t wake = r->pub_fhead != NULL && !r->pub_stopping
                           ? r->pub_fhead->try_end_ms
                           : 0;
        repl_job *j = r->pub_head;
        if (j == NULL && r->pub_stopping) {
            break;
        }
        if (j != NULL && r->pub_stopping) {
            /* Waiting (new or for a retry) at stop: not tried again. */
            r->pub_head = j->next;
            if (r->pub_head == NULL) {
                r->pub_tail = NULL;
            }
            pthread_mutex_unlock(&r->pub_mu);
            rift_error err = {0};
            complete(j,
                     rift_error_set(&err, RIFT_ERR_STORAGE,
                                    "stream storage: node is stopping"),
                     &err);
            pthread_mutex_lock(&r->pub_mu);
            continue;
        }
        if (j != NULL && r->pub_inflight < REPL_PUB_WINDOW &&
            j->retry_at_ms > now) {
            wake = wake == 0 ? j->retry_at_ms : RIFT_MIN(wake, j->retry_at_ms);
        }
        if (j == NULL || r->pub_inflight >= REPL_PUB_WINDOW ||
            j->retry_at_ms > now) {
            if (wake == 0) {
                pthread_cond_wait(&r->pub_cv, &r->pub_mu);
            } else {
                struct timespec until = at_ms(wake);
                pthread_cond_timedwait(&r->pub_cv, &r->pub_mu, &until);
            }
            continue;
        }
        r->pub_head = j->next;
        if (r->pub_head == NULL) {
            r->pub_tail = NULL;
        }
        r->pub_inflight++;
        pthread_mutex_unlock(&r->pub_mu);
        send_one(r, j, false);
        pthread_mutex_lock(&r->pub_mu);
    }
    pthread_mutex_unlock(&r->pub_mu);
    return NULL;
}

/* ---- Start, submit, stop ---- */

void rift_repl_pub_options(rift_repl *r, jsOptions *jo) {
    pthread_mutex_init(&r->pub_mu, NULL);
    pthread_cond_init(&r->pub_cv, NULL);
    pthread_cond_init(&r->pub_idle_cv, NULL);
    rift_pmap_init(&r->pub_sent);
    jo->PublishAsync.AckHandler = on_ack;
    jo->PublishAsync.AckHandlerClosure = r;
    /* Our window bounds what is in flight; libnats' own limit (it would
     * stall the publisher) is only a backstop above it. */
    jo->PublishAsync.MaxPending = 2 * REPL_PUB_WINDOW;
}

int rift_repl_pub_start(rift_repl *r, rift_error *err) {
    if (pthread_create(&r->publisher, NULL, publisher_main, r) != 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "cluster: publisher thread");
    }
    pthread_mutex_lock(&r->pub_mu); /* submit reads it */
    r->pub_started = true;
    pthread_mutex_unlock(&r->pub_mu);
    return 0;
}

int rift_repl_pub_submit(rift_repl *r, repl_job *j, rift_error *err) {
    j->retry_at_ms = 0;
    pthread_mutex_lock(&r->pub_mu);
    if (r->pub_stopping || !r->pub_started) {
        pthread_mutex_unlock(&r->pub_mu);
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: node is stopping");
    }
    /* Room in the window and nobody ahead: this thread hands it to
     * libnats (a buffered write), sparing the publisher's wake-up. */
    bool direct = r->pub_head == NULL && r->pub_inflight < REPL_PUB_WINDOW;
    if (direct) {
        r->pub_inflight++;
    } else {
        push_locked(r, j);
        pthread_cond_signal(&r->pub_cv);
    }
    pthread_mutex_unlock(&r->pub_mu);
    if (direct) {
        send_one(r, j, true);
    }
    return 0;
}

/* Waits until nothing is in flight (and no handler runs), or |until_ms|
 * (0: no limit) passes; true when idle. */
static bool wait_idle_locked(rift_repl *r, int64_t until_ms) {
    while (r->pub_inflight > 0 || r->pub_callbacks > 0) {
        if (until_ms == 0) {
            pthread_cond_wait(&r->pub_idle_cv, &r->pub_mu);
            continue;
        }
        if (now_ms() >= until_ms) {
            return false;
        }
        struct timespec until = {(time_t)(until_ms / 1000),
                                 (long)(until_ms % 1000) * 1000000L};
        pthread_cond_timedwait(&r->pub_idle_cv, &r->pub_mu, &until);
    }
    return true;
}

/* Stop's part while the publisher runs (see rift_repl_pub_stop). */
static void drain(rift_repl *r) {
    pthread_mutex_lock(&r->pub_mu);
    r->pub_stopping = true;
    pthread_cond_broadcast(&r->pub_cv);
    pthread_mutex_unlock(&r->pub_mu);
    pthread_join(r->publisher, NULL); /* the queue is failed and empty */
    /* In flight: answered within one try unless lost, without a retry
     * now; the lost ones are taken back below. */
    pthread_mutex_lock(&r->pub_mu);
    bool idle = wait_idle_locked(r, now_ms() + PUBLISH_TRY_MS + 1000);
    pthread_mutex_unlock(&r->pub_mu);
    if (!idle) {
        /* No answer (the connection is gone): take them back from
         * libnats, whose late acks are then dropped. */
        natsMsgList list = {0};
        if (js_PublishAsyncGetPendingList(&list, r->js) == NATS_OK) {
            for (int i = 0; i < list.Count; i++) {
                pthread_mutex_lock(&r->pub_mu);
                repl_job *j = take_locked(r, list.Msgs[i]);
                pthread_mutex_unlock(&r->pub_mu);
                if (j == NULL) {
                    continue; /* not ours: the list destroys it */
                }
                list.Msgs[i] = NULL; /* j->msg, destroyed by complete */
                rift_error err = {0};
                rift_error_set(&err, RIFT_ERR_STORAGE,
                               "stream storage: node is stopping");
                pthread_mutex_lock(&r->pub_mu);
                r->pub_inflight--;
                pthread_mutex_unlock(&r->pub_mu);
                complete(j, err.code, &err);
            }
            natsMsgList_Destroy(&list);
        }
        /* What is left has its handler running or about to run. */
        pthread_mutex_lock(&r->pub_mu);
        (void)wait_idle_locked(r, 0);
        pthread_mutex_unlock(&r->pub_mu);
    }
}

void rift_repl_pub_stop(rift_repl *r) {
    if (r->pub_started) {
        drain(r);
    }
    rift_pmap_free(&r->pub_sent, NULL);
    pthread_cond_destroy(&r->pub_cv);
    pthread_cond_destroy(&r->pub_idle_cv);
    pthread_mutex_destroy(&r->pub_mu);
}
