/*
 * replicated.c — the replicated-stream backend's face (cluster layer; see
 * replicated.h): the server's calls validated and queued, a few worker
 * threads that run them (replicated_js.c) and complete them, start, stop
 * and status. Workers let one slow JetStream round trip (a leader
 * election takes seconds) hold up only its own operation. Publishes go
 * to the asynchronous publisher (replicated_pub.c) directly once their
 * stream is ready, through a worker (ENSURE) before.
 */
#include "cluster/replicated_internal.h"
#include "common/dlist.h"

#include "subject/subject.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static repl_stream *find(const rift_repl *r, const char *name, size_t len) {
    for (size_t i = 0; i < r->n; i++) {
        if (r->streams[i].name_len == len &&
            memcmp(r->streams[i].name, name, len) == 0) {
            return &r->streams[i];
        }
    }
    return NULL;
}

/* ---- Workers ---- */

void rift_repl_finish(repl_job *j, int rc, const rift_error *err) {
    j->done(j->arg, rc, rc != 0 ? err : NULL);
    rift_free(NULL, j);
}

/* A waiting fetch leaves rift_repl.wait_jobs before its done runs: once
 * the server has its answer, |arg| may be another operation's. */
static void wait_unlist(rift_repl *r, repl_job *j) {
    if (j->kind != REPL_FETCH || j->wait_ms == 0) {
        return;
    }
    pthread_mutex_lock(&r->mu);
    RIFT_DLIST_REMOVE(r->wait_jobs, j, wprev, wnext);
    pthread_mutex_unlock(&r->mu);
}

/* The one ENSURE job of start: every stream's JetStream stream, retried
 * every second until all exist (the meta leader of a cluster that is
 * starting up takes seconds to be elected; `rift status` shows ready once
 * it is), or until stop. One job, so it holds one worker at most. */
static int run_ensure(rift_repl *r, rift_error *err) {
    bool warned = false;
    for (;;) {
        int rc = 0;
        for (size_t i = 0; i < r->n; i++) {
            rift_error e = {0};
            int one = rift_repl_ensure(r, &r->streams[i], &e);
            if (one != 0 && rc == 0) {
                rc = one;
                *err = e;
            }
        }
        if (rc == 0) {
            return 0;
        }
        if (!warned) {
            rift_log(RIFT_LOG_WARN, "cluster: %s (retried every second)",
                     err->text);
            warned = true;
        }
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        while (!r->stopping &&
               pthread_cond_timedwait(&r->stop_cv, &r->mu, &until) == 0) {
        }
        bool stopping = r->stopping;
        pthread_mutex_unlock(&r->mu);
        if (stopping) {
            return rc;
        }
        *err = (rift_error){0};
    }
}

static void *worker_main(void *arg) {
    rift_repl *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->head == NULL && !r->stopping) {
            pthread_cond_wait(&r->cv, &r->mu);
        }
        repl_job *j = r->head;
        if (j == NULL) {
            break; /* stopping and drained */
        }
        r->head = j->next;
        if (r->head == NULL) {
            r->tail = NULL;
        }
        bool stopping = r->stopping;
        pthread_mutex_unlock(&r->mu);
        rift_error err = {0};
        int rc = stopping ? rift_error_set(&err, RIFT_ERR_STORAGE,
                                           "stream storage: node is stopping")
                 : j->kind == REPL_ENSURE ? run_ensure(r, &err)
                                          : rift_repl_run(r, j, &err);
        wait_unlist(r, j);
        if (rc == REPL_HANDED) {
            /* the publisher completes it */
        } else if (j->done != NULL) {
            rift_repl_finish(j, rc, &err);
        } else {
            rift_free(NULL, j);
        }
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static repl_job *job_new(repl_stream *s, repl_kind kind, size_t extra,
                         rift_server_backend_done done, void *arg) {
    repl_job *j = rift_calloc(NULL, 1, sizeof *j + extra);
    if (j != NULL) {
        j->s = s;
        j->kind = kind;
        j->done = done;
        j->arg = arg;
    }
    return j;
}

static int submit(rift_repl *r, repl_job *j, rift_error *err) {
    if (j == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_lock(&r->mu);
    j->next = NULL;
    if (r->tail != NULL) {
        r->tail->next = j;
    } else {
        r->head = j;
    }
    r->tail = j;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return 0;
}

/* ---- The server's calls (server thread; never blocking) ---- */

static bool b_serves(void *ud, const char *name, size_t len) {
    return find(ud, name, len) != NULL;
}

static bool subject_in_stream(const repl_stream *s, const char *subj,
                              size_t len) {
    for (size_t i = 0; i < s->n_subjects; i++) {
        if (rift_subject_matches(s->subjects[i], strlen(s->subjects[i]), subj,
                                 len)) {
            return true;
        }
    }
    return false;
}

static int b_publish(void *ud, const char *stream, size_t stream_len,
                     const char *subject, size_t subject_len, const char *reply,
                     size_t reply_len, const uint8_t *payload,
                     size_t payload_len, rift_stored *out,
                     rift_server_backend_done done, void *arg,
                     rift_error *err) {
    rift_repl *r = ud;
    repl_stream *s = find(r, stream, stream_len);
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
    }
    /* The checks of the store's check_publish, with its texts. */
    if (!subject_in_stream(s, subject, subject_len)) {
        return rift_error_set(err, RIFT_ERR_STREAM_NOT_MATCHED,
                              "subject does not match this stream");
    }
    if (payload_len > s->max_payload) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %zu exceeds limit %llu",
                              payload_len, (unsigned long long)s->max_payload);
    }
    if (s->subj_len + subject_len + 1 > REPL_SUBJECT_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                              "invalid subject: too long for the backbone");
    }
    repl_job *j = job_new(s, REPL_PUBLISH,
                          subject_len + reply_len + payload_len + 2, done, arg);
    if (j != NULL) {
        j->subject = j->data;
        memcpy(j->subject, subject, subject_len);
        j->subject_len = subject_len;
        j->reply = j->data + subject_len + 1;
        if (reply_len > 0) {
            memcpy(j->reply, reply, reply_len);
        }
        j->reply_len = reply_len;
        j->payload = (uint8_t *)j->reply + reply_len + 1;
        if (payload_len > 0) {
            memcpy(j->payload, payload, payload_len);
        }
        j->payload_len = payload_len;
        j->stored = out;
        /* The usual case: straight to the publisher, no worker. */
        if (rift_repl_ready(s) && rift_repl_backbone_up(r)) {
            int rc = rift_repl_pub_submit(r, j, err);
            if (rc != 0) {
                rift_free(NULL, j);
            }
            return rc;
        }
    }
    return submit(r, j, err);
}

static int b_open(void *ud, const char *stream, size_t stream_len,
                  const char *consumer, size_t consumer_len, const char *label,
                  size_t label_len, const rift_consumer_config *cfg,
                  unsigned flags, rift_server_backend_consumer *out,
                  rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_stream *s = find(r, stream, stream_len);
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
    }
    size_t flen = cfg->filter_len > 0 ? cfg->filter_len : 1;
    if (consumer_len >= sizeof(((repl_job *)0)->consumer) ||
        label_len > REPL_NAME_MAX ||
        s->subj_len + flen + 1 > REPL_SUBJECT_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid consumer name or filter");
    }
    repl_job *j = job_new(s, REPL_OPEN, flen + 1, done, arg);
    if (j != NULL) {
        memcpy(j->consumer, consumer, consumer_len);
        j->filter = j->data;
        memcpy(j->filter, cfg->filter_len > 0 ? cfg->filter : ">", flen);
        j->filter_len = flen;
        memcpy(j->label, label, label_len);
        j->ext = (flags & RIFT_SERVER_BACKEND_OPEN_EXT) != 0;
        j->existing_only = (flags & RIFT_SERVER_BACKEND_OPEN_EXISTING) != 0;
        j->out = out;
        j->start = cfg->start;
        j->start_sequence = cfg->start_sequence ? cfg->start_sequence : 1;
        j->start_time_ms = cfg->start_time_ms;
        j->ack_wait_ms = cfg->ack_wait_ms;
        j->max_ack_pending = cfg->max_ack_pending;
        j->max_deliver = cfg->max_deliver;
    }
    return submit(r, j, err);
}

/* consumer_job finds the stream and makes a job for one of its consumers
 * (*pj NULL on OOM, which submit reports); fetch and ack share it. */
static int consumer_job(rift_repl *r, const char *stream, size_t stream_len,
                        const char *consumer, size_t consumer_len,
                        repl_kind kind, rift_server_backend_done done,
                        void *arg, repl_job **pj, rift_error *err) {
    repl_stream *s = find(r, stream, stream_len);
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
    }
    if (consumer_len >= sizeof(((repl_job *)0)->consumer)) {
        return rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                              "consumer does not exist");
    }
    *pj = job_new(s, kind, 0, done, arg);
    if (*pj != NULL) {
        memcpy((*pj)->consumer, consumer, consumer_len);
    }
    return 0;
}

static int b_fetch(void *ud, const char *stream, size_t stream_len,
                   const char *consumer, size_t consumer_len, size_t limit,
                   uint64_t max_bytes, uint32_t wait_ms, rift_batch *out,
                   void **priv, rift_server_backend_done done, void *arg,
                   rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = consumer_job(r, stream, stream_len, consumer, consumer_len,
                          REPL_FETCH, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->limit = limit;
        j->max_bytes = max_bytes;
        j->wait_ms = wait_ms;
        j->batch = out;
        j->priv = priv;
        if (wait_ms > 0) {
            pthread_mutex_lock(&r->mu);
            RIFT_DLIST_PUSH(r->wait_jobs, j, wprev, wnext);
            pthread_mutex_unlock(&r->mu);
        }
    }
    return submit(r, j, err); /* fails only without |j| */
}

/* The server's client of |arg| is gone: its waiting fetch ends at its
 * next pull (replicated_js.c fetch) instead of holding a worker and a
 * wait for up to two minutes. */
static void b_abandon(void *ud, void *arg) {
    rift_repl *r = ud;
    pthread_mutex_lock(&r->mu);
    for (repl_job *j = r->wait_jobs; j != NULL; j = j->wnext) {
        if (j->arg == arg) {
            atomic_store(&j->abandoned, true);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

static int b_ack(void *ud, const char *stream, size_t stream_len,
                 const char *consumer, size_t consumer_len, uint64_t sequence,
                 rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = consumer_job(r, stream, stream_len, consumer, consumer_len,
                          REPL_ACK, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->sequence = sequence;
    }
    return submit(r, j, err);
}

static int b_settle(void *ud, const char *stream, size_t stream_len,
                    const char *consumer, size_t consumer_len, uint8_t opcode,
                    uint64_t sequence, uint64_t delay_ms,
                    rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = consumer_job(r, stream, stream_len, consumer, consumer_len,
                          REPL_SETTLE, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->sequence = sequence;
        j->opcode = opcode;
        j->delay_ms = delay_ms;
    }
    return submit(r, j, err);
}

static int b_delete(void *ud, const char *stream, size_t stream_len,
                    const char *consumer, size_t consumer_len,
                    rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = consumer_job(r, stream, stream_len, consumer, consumer_len,
                          REPL_DELETE, done, arg, &j, err);
    return rc != 0 ? rc : submit(r, j, err);
}

static int b_info(void *ud, const char *stream, size_t stream_len,
                  const char *consumer, size_t consumer_len,
                  rift_server_backend_consumer *out,
                  rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = consumer_job(r, stream, stream_len, consumer, consumer_len,
                          REPL_INFO, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->out = out;
    }
    return submit(r, j, err);
}

/* A job on stream |stream| itself (LIST, STREAM_INFO, PURGE). */
static int stream_job(rift_repl *r, const char *stream, size_t stream_len,
                      repl_kind kind, rift_server_backend_done done, void *arg,
                      repl_job **pj, rift_error *err) {
    repl_stream *s = find(r, stream, stream_len);
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
    }
    *pj = job_new(s, kind, 0, done, arg);
    return 0;
}

static int b_list(void *ud, const char *stream, size_t stream_len,
                  rift_server_backend_consumer **out, size_t *count,
                  rift_server_backend_done done, void *arg, rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = stream_job(r, stream, stream_len, REPL_LIST, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        *out = NULL;
        *count = 0;
        j->list = out;
        j->count = count;
    }
    return submit(r, j, err);
}

static int b_stream_info(void *ud, const char *stream, size_t stream_len,
                         rift_server_backend_stream_info *out,
                         rift_server_backend_done done, void *arg,
                         rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc =
        stream_job(r, stream, stream_len, REPL_STREAM_INFO, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->sinfo = out;
        /* The spec now, from rift's configuration (JetStream's subjects
         * are rift's prefixed): the server checks the reader with it. */
        const repl_stream *s = j->s;
        memset(out, 0, sizeof *out);
        size_t at = 0;
        for (size_t i = 0; i < s->n_subjects; i++) {
            size_t l = strlen(s->subjects[i]);
            if (at + l + 1 >= sizeof out->subjects) {
                break;
            }
            if (i > 0) {
                out->subjects[at++] = ' ';
            }
            memcpy(out->subjects + at, s->subjects[i], l);
            at += l;
        }
        out->subjects_len = at;
        out->max_messages = s->max_messages;
        out->max_bytes = s->max_bytes;
        out->max_age_ms = s->max_age_ms;
        out->max_payload_bytes = s->max_payload;
        out->max_consumers = (uint32_t)RIFT_MIN(s->max_consumers, UINT32_MAX);
    }
    return submit(r, j, err);
}

static int b_purge(void *ud, const char *stream, size_t stream_len,
                   uint64_t *purged, rift_server_backend_done done, void *arg,
                   rift_error *err) {
    rift_repl *r = ud;
    repl_job *j = NULL;
    int rc = stream_job(r, stream, stream_len, REPL_PURGE, done, arg, &j, err);
    if (rc != 0) {
        return rc;
    }
    if (j != NULL) {
        j->purged = purged;
    }
    return submit(r, j, err);
}

rift_server_stream_backend rift_repl_backend(rift_repl *r) {
    return (rift_server_stream_backend){
        .serves = b_serves,
        .publish = b_publish,
        .consumer_open = b_open,
        .fetch = b_fetch,
        .abandon = b_abandon,
        .batch_free = rift_repl_batch_free,
        .ack = b_ack,
        .settle = b_settle,
        .consumer_delete = b_delete,
        .consumer_info = b_info,
        .consumer_list = b_list,
        .stream_info = b_stream_info,
        .purge = b_purge,
        .ud = r,
    };
}

/* ---- Start, stop, status ---- */

static int stream_init(repl_stream *s, rift_repl *r, const char *prefix,
                       const rift_repl_stream_config *c, rift_error *err) {
    size_t len = strlen(c->name);
    if (len == 0 || len > REPL_NAME_MAX || c->n_subjects == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "cluster: replicated stream name or subjects");
    }
    s->r = r;
    memcpy(s->name, c->name, len);
    s->name_len = len;
    /* Hex keeps any rift name a single, case-preserving subject token. */
    char hex[2 * REPL_NAME_MAX + 1];
    for (size_t i = 0; i < len; i++) {
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)c->name[i]);
    }
    snprintf(s->js_name, sizeof s->js_name, "RIFT_%s", hex);
    s->subj_len =
        (size_t)snprintf(s->subj, sizeof s->subj, "%s_stream.%s.", prefix, hex);
    s->subjects = rift_calloc(NULL, c->n_subjects, sizeof(char *));
    if (s->subjects == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < c->n_subjects; i++) {
        s->subjects[i] =
            rift_strndup(NULL, c->subjects[i], strlen(c->subjects[i]));
        if (s->subjects[i] == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        s->n_subjects = i + 1;
    }
    s->max_messages = c->max_messages;
    s->max_bytes = c->max_bytes;
    s->max_payload = c->max_payload_bytes;
    s->max_consumers = c->max_consumers;
    s->max_age_ms = c->max_age_ms;
    s->replicas = c->replicas;
    pthread_mutex_init(&s->mu, NULL);
    return 0;
}

int rift_repl_start(rift_repl **pr, rift_cluster *c, const char *node,
                    const char *prefix, const rift_repl_stream_config *v,
                    size_t n, rift_error *err) {
    *pr = NULL;
    rift_repl *r = rift_calloc(NULL, 1, sizeof *r);
    if (r == NULL || (r->streams = rift_calloc(NULL, n ? n : 1,
                                               sizeof *r->streams)) == NULL) {
        rift_free(NULL, r);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    pthread_cond_init(&r->stop_cv, NULL);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    rift_repl_pub_options(r, &jo);
    r->c = c;
    r->nc = rift_cluster_connection(c);
    snprintf(r->node, sizeof r->node, "%s", node);
    (void)rift_random(&r->boot, sizeof r->boot);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        r->n = i + 1;
        rc = stream_init(&r->streams[i], r, prefix, &v[i], err);
    }
    if (rc == 0 && natsConnection_JetStream(&r->js, r->nc, &jo) != NATS_OK) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "cluster: JetStream context");
    }
    for (size_t i = 0; rc == 0 && i < RIFT_ARRAY_LEN(r->workers); i++) {
        if (pthread_create(&r->workers[i], NULL, worker_main, r) != 0) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "cluster: worker thread");
            break;
        }
        r->n_workers++;
    }
    if (rc == 0) {
        rc = rift_repl_pub_start(r, err);
    }
    /* Create the JetStream streams now, in the background. */
    if (rc == 0 && r->n > 0) {
        rc =
            submit(r, job_new(&r->streams[0], REPL_ENSURE, 0, NULL, NULL), err);
    }
    if (rc != 0) {
        rift_repl_stop(r);
        return rc;
    }
    *pr = r;
    return 0;
}

void rift_repl_stop(rift_repl *r) {
    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_broadcast(&r->cv);
    pthread_cond_broadcast(&r->stop_cv);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < r->n_workers; i++) {
        pthread_join(r->workers[i], NULL);
    }
    rift_repl_pub_stop(r); /* after the workers, which may hand it some */
    for (size_t i = 0; i < r->n; i++) {
        repl_stream *s = &r->streams[i];
        rift_repl_stream_release(s);
        for (size_t k = 0; k < s->n_subjects; k++) {
            rift_free(NULL, s->subjects[k]);
        }
        rift_free(NULL, s->subjects);
        pthread_mutex_destroy(&s->mu);
    }
    jsCtx_Destroy(r->js);
    rift_free(NULL, r->streams);
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->stop_cv);
    pthread_mutex_destroy(&r->mu);
    rift_free(NULL, r);
}

void rift_repl_end_waits(rift_repl *r) {
    if (r != NULL) {
        atomic_store(&r->no_waits, true);
    }
}

size_t rift_repl_stream_count(const rift_repl *r) {
    return r != NULL ? r->n : 0;
}

void rift_repl_get_status(rift_repl *r, size_t i, rift_repl_stream_status *st) {
    repl_stream *s = &r->streams[i];
    memset(st, 0, sizeof *st);
    st->name = s->name;
    st->replicas = s->replicas;
    pthread_mutex_lock(&s->mu);
    st->ready = s->ready;
    st->consumers = s->n_consumers;
    snprintf(st->last_error, sizeof st->last_error, "%s", s->last_error);
    pthread_mutex_unlock(&s->mu);
    st->published = atomic_load(&s->published);
    st->duplicates = atomic_load(&s->duplicates);
    st->retries = atomic_load(&s->retries);
    st->fetched = atomic_load(&s->fetched);
    st->acked = atomic_load(&s->acked);
    st->errors = atomic_load(&s->errors);
    st->last_sequence = atomic_load(&s->last_seq);
    st->fetch_waits = atomic_load(&r->waits);
}
