/*
 * replicated_internal.h — the parts of the replicated-stream backend
 * (cluster layer) that replicated.c (the server-facing queue and its
 * workers), replicated_js.c (each operation in JetStream terms) and
 * replicated_pub.c (asynchronous publishes and their window) share.
 */
#ifndef RIFT_CLUSTER_REPLICATED_INTERNAL_H
#define RIFT_CLUSTER_REPLICATED_INTERNAL_H

#include "cluster/replicated.h"

#include "common/common.h"
#include "common/pmap.h"

#include "libnats.h" /* <nats/nats.h>, see CMakeLists.txt */

#include <pthread.h>
#include <stdatomic.h>

#define REPL_NAME_MAX    96
#define REPL_SUBJECT_MAX 2048

/* NATS headers of a stored message: the node's clock at the publish (2.9's
 * PubAck has no time) and the rift reply subject. */
#define REPL_HDR_TS    "Rift-Ts"
#define REPL_HDR_REPLY "Rift-Reply"

/* A message this node fetched and keeps until it is acknowledged (the
 * ACK goes back on it), or until a redelivery of the same sequence
 * replaces it. */
typedef struct repl_kept {
    uint64_t seq;
    natsMsg *m;
    int64_t at_ms;
} repl_kept;

/* A JetStream durable consumer bound on this node: its pull
 * subscription and the messages it handed out. |mu| serialises fetch
 * and ack on it. */
typedef struct repl_consumer {
    struct repl_consumer *next;
    char name[80];
    natsSubscription *sub;
    pthread_mutex_t mu;
    rift_pmap kept; /* repl_kept by sequence */
    uint64_t ack_wait_ms, max_ack_pending;
} repl_consumer;

typedef struct repl_stream {
    struct rift_repl *r;
    char name[REPL_NAME_MAX + 1];
    size_t name_len;
    char js_name[8 + 2 * REPL_NAME_MAX]; /* RIFT_<hex> */
    char subj[300 + 2 * REPL_NAME_MAX];  /* <prefix>_stream.<hex>. */
    size_t subj_len;
    char **subjects; /* the rift stream's filter */
    size_t n_subjects;
    uint64_t max_messages, max_bytes, max_payload, max_consumers, max_age_ms;
    uint32_t replicas;

    pthread_mutex_t mu; /* guards the fields below */
    bool ready;
    repl_consumer *consumers;
    size_t n_consumers;
    char last_error[160];

    atomic_uint_fast64_t published, duplicates, retries, fetched, acked, errors,
        last_seq;
} repl_stream;

typedef enum repl_kind {
    REPL_ENSURE,
    REPL_PUBLISH,
    REPL_OPEN,
    REPL_FETCH,
    REPL_ACK,
    REPL_SETTLE, /* NAK, TERM or PROGRESS (|opcode|) */
    REPL_DELETE,
    REPL_INFO,        /* consumer info (replicated_info.c) */
    REPL_LIST,        /* every consumer's info */
    REPL_STREAM_INFO, /* the JetStream stream's state */
    REPL_PURGE,
} repl_kind;

/* One queued operation: its inputs copied, its outputs the caller's. */
typedef struct repl_job {
    struct repl_job *next;
    repl_kind kind;
    repl_stream *s;
    char consumer[80];
    /* PUBLISH */
    char *subject, *reply; /* in |data| */
    uint8_t *payload;
    size_t subject_len, reply_len, payload_len;
    rift_stored *stored;
    natsMsg *msg;        /* built on the first try, kept for the retries */
    uint64_t at_ms;      /* Rift-Ts */
    int64_t deadline_ms; /* no try starts after it */
    int64_t retry_at_ms; /* a retry waits until then */
    int64_t try_end_ms;  /* the try in flight is lost after it */
    struct repl_job *fprev, *fnext; /* in flight, oldest try first */
    /* OPEN (|ext|: CONSUMER_OPEN_EXT, |out| its answer; |existing_only|:
     * the identity is at its quota, a missing consumer is not made) */
    char *filter;
    size_t filter_len;
    char label[REPL_NAME_MAX + 1]; /* the client's name */
    bool ext, existing_only;
    rift_consumer_start start;
    uint64_t start_sequence, start_time_ms, ack_wait_ms;
    uint32_t max_ack_pending, max_deliver;
    /* OPEN, INFO */
    rift_server_backend_consumer *out;
    /* LIST */
    rift_server_backend_consumer **list;
    size_t *count;
    /* STREAM_INFO, PURGE */
    rift_server_backend_stream_info *sinfo;
    uint64_t *purged;
    /* FETCH (|wait_ms| > 0: CONSUMER_FETCH_WAIT) */
    size_t limit;
    uint64_t max_bytes;
    uint32_t wait_ms;
    rift_batch *batch;
    void **priv;
    /* ACK, SETTLE */
    uint64_t sequence;
    uint8_t opcode;
    uint64_t delay_ms;
    rift_server_backend_done done;
    void *arg;
    /* FETCH with a wait: on rift_repl.wait_jobs until it finishes, and
     * |abandoned| once its client has gone (b_abandon). */
    struct repl_job *wprev, *wnext;
    atomic_bool abandoned;
    char data[]; /* subject, reply and payload, or the filter */
} repl_job;

struct rift_repl {
    rift_cluster *c;
    natsConnection *nc; /* the cluster's */
    jsCtx *js;
    char node[128];
    uint64_t boot; /* random: message ids of a restarted node differ */
    atomic_uint_fast64_t next_id;
    repl_stream *streams;
    size_t n;

    pthread_mutex_t mu; /* the queue */
    pthread_cond_t cv;
    pthread_cond_t stop_cv; /* broadcast when stopping (ENSURE's pause) */
    repl_job *head, *tail;
    repl_job *wait_jobs; /* fetches with a wait, queued or running */
    bool stopping;
    /* Each consumer job blocks on its JetStream round trip, a waiting
     * fetch for up to its wait (REPL_MAX_WAITS of them at most); publishes
     * only pass through a worker while their stream is not ready (ENSURE
     * blocks). 24: the waits leave 8 for the other consumer jobs. */
    pthread_t workers[24];
    size_t n_workers;

    /* Publishes (replicated_pub.c): asynchronous, at most REPL_PUB_WINDOW
     * in flight; the others wait in |pub_head| (bounded by the server's
     * per-connection budgets), as do retries until their retry_at_ms. */
    pthread_mutex_t pub_mu;     /* guards the fields below */
    pthread_cond_t pub_cv;      /* the publisher: work, room in the window */
    pthread_cond_t pub_idle_cv; /* stop: in flight and callbacks drop */
    repl_job *pub_head, *pub_tail;
    rift_pmap pub_sent;              /* in flight, by natsMsg pointer */
    repl_job *pub_fhead, *pub_ftail; /* the same, by try_end_ms */
    size_t pub_inflight;             /* in libnats or being handed to it */
    size_t pub_callbacks;            /* ack handlers running */
    bool pub_stopping;
    bool pub_started;
    pthread_t publisher;
    /* Fetches waiting for a first record (CONSUMER_FETCH_WAIT), each on
     * a worker for up to its wait: at most REPL_MAX_WAITS, so the other
     * consumer jobs keep workers; a wait beyond that answers at once. */
    atomic_uint_fast32_t waits;
    atomic_bool no_waits; /* rift_repl_end_waits: stop waiting */
};

#define REPL_MAX_WAITS 16

/* Publishes in flight to JetStream per node. */
#define REPL_PUB_WINDOW 4096

/* A publish's try lasts REPL_PUBLISH_TRY_MS; it is retried (the same
 * Nats-Msg-Id) until REPL_PUBLISH_FOR_MS after its first try. */
#define REPL_PUBLISH_TRY_MS 2000
#define REPL_PUBLISH_FOR_MS 30000

/* The JetStream stream's duplicate window: the ids of the last 32 s of
 * tries and a margin. JetStream's default (2 min) made nats-server's
 * per-message cost grow with four times as many remembered ids. */
#define REPL_DUPLICATE_WINDOW_MS 45000

/* rift_repl_run's "the job is no longer the worker's": a publish handed
 * to the publisher, which completes it. */
#define REPL_HANDED 1

/* The JetStream side of one job; 0, REPL_HANDED, or a RIFT_ERR_* code
 * with |err|. */
int rift_repl_run(rift_repl *r, repl_job *j, rift_error *err);

/* replicated_js.c's failure paths, shared with replicated_pub.c: a failed
 * JetStream call (status text only, counted, shown in `rift status`), the
 * connection's state, and "backbone unavailable" while it is down. */
int rift_repl_fail(repl_stream *s, const char *what, natsStatus st,
                   jsErrCode jerr, rift_error *err);
bool rift_repl_backbone_up(rift_repl *r);
int rift_repl_backbone_check(rift_repl *r, repl_stream *s, rift_error *err);

/* replicated_pub.c. rift_repl_pub_options sets the ack handler of the
 * JetStream context (before natsConnection_JetStream); pub_start starts
 * the publisher thread. pub_submit queues a publish job whose stream is
 * ready: 0 (the publisher completes it), or an error (the job is still
 * the caller's). pub_stop fails what waits, lets what is in flight answer
 * (one try at most), fails the rest and joins the thread; before
 * jsCtx_Destroy. */
void rift_repl_pub_options(rift_repl *r, jsOptions *jo);
int rift_repl_pub_start(rift_repl *r, rift_error *err);
int rift_repl_pub_submit(rift_repl *r, repl_job *j, rift_error *err);
void rift_repl_pub_stop(rift_repl *r);

/* Whether |s| exists in JetStream with our limits (s->ready). */
bool rift_repl_ready(repl_stream *s);

/* Completes |j| (its done callback) and frees it. */
void rift_repl_finish(repl_job *j, int rc, const rift_error *err);

/* Creates (or updates) |s|'s JetStream stream unless it is ready. */
int rift_repl_ensure(rift_repl *r, repl_stream *s, rift_error *err);

/* Releases everything a stream holds in JetStream terms (at stop). */
void rift_repl_stream_release(repl_stream *s);

/* The batch_free of the backend: a fetch's records, a consumer list. */
void rift_repl_batch_free(void *ud, void *priv);

/* The JetStream consumer's description for rift: "<start kind>
 * <resolved start sequence> <start_time_ms as given> <label>" into
 * |out|; and read back (false when it is not one). */
void rift_repl_describe(char *out, size_t size, rift_consumer_start start,
                        uint64_t start_sequence, uint64_t start_time_ms,
                        const char *label);
bool rift_repl_description(const char *d, rift_consumer_start *start,
                           uint64_t *start_sequence, uint64_t *start_time_ms,
                           char label[REPL_NAME_MAX + 1], size_t *label_len);

/* The first sequence of |s| whose record's time (rift's Rift-Ts, else
 * JetStream's) is >= |at_ms|, by bisection with js_GetMsg; the last
 * sequence + 1 when there is none. */
int rift_repl_seq_at_time(rift_repl *r, repl_stream *s, uint64_t at_ms,
                          uint64_t *seq, rift_error *err);

/* |ci| (JetStream's answer: validated) as rift's consumer info in |out|;
 * false when it is not a consumer of |s| as rift makes them. */
bool rift_repl_consumer_out(const repl_stream *s, const jsConsumerInfo *ci,
                            rift_server_backend_consumer *out);

/* CONSUMER_INFO, CONSUMER_LIST, STREAM_INFO and PURGE (replicated_info.c). */
int rift_repl_consumer_info(rift_repl *r, repl_job *j, rift_error *err);
int rift_repl_consumer_list(rift_repl *r, repl_job *j, rift_error *err);
int rift_repl_stream_info(rift_repl *r, repl_job *j, rift_error *err);
int rift_repl_purge(rift_repl *r, repl_job *j, rift_error *err);

#endif /* RIFT_CLUSTER_REPLICATED_INTERNAL_H */
