/*
 * client_internal.h — private structures of the Rift client (client layer),
 * shared by its files: client.c (connection, client thread, QUIC
 * callbacks, teardown), call.c (one-shot operations: request, stream
 * publish, consumer calls, subscribe and publisher opening),
 * publisher.c (dedicated and shared publishers), subscription.c (receive
 * queues), received_msg.c (received messages) and check.c (local validation and
 * response decoding).
 *
 * Threads. The client thread runs a rift_loop that owns the QUIC endpoint,
 * its connection and every stream; QUIC is touched nowhere else. API
 * threads hand work over with client_post and wait on condition variables.
 * Shared state is guarded by one mutex per object: rift_client.mu (closing
 * flag, connection state, call completion), rift_publisher.mu and
 * rift_client_sub.mu. Lock order: an object's mutex may be held while
 * taking rift_client.mu (client_post does), never the reverse.
 *
 * Lifetimes. The client is reference-counted: the application's handle
 * and every publisher and subscription hold one, so those handles stay
 * safe to use (their operations fail) after rift_client_del. Publishers
 * and subscriptions are reference-counted between the application and the
 * client thread (while a stream is attached, and while a post is queued).
 * Calls live on the calling thread's stack: the client thread touches a
 * call only until it completes it.
 */
#ifndef RIFT_CLIENT_CLIENT_INTERNAL_H
#define RIFT_CLIENT_CLIENT_INTERNAL_H

#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/quic.h"
#include "rift/client.h"

#include <pthread.h>
#include <stdatomic.h>

/* Client-side texts of the original (§6.2). */
#define RIFT_CLIENT_ERR_OPCODE  "unexpected response opcode"
#define RIFT_CLIENT_ERR_STRING  "string exceeds protocol limit"
#define RIFT_CLIENT_ERR_FRAME   "frame exceeds limit"
#define RIFT_CLIENT_ERR_TIMEOUT "QUIC operation timed out"
#define RIFT_CLIENT_ERR_CLOSED  "QUIC stream closed"
#define RIFT_CLIENT_ERR_PAYLOAD "payload exceeds 1 MiB transport limit"
#define RIFT_CLIENT_ERR_UNUSABLE                                               \
 "publisher closed or a previous operation was cancelled"
#define RIFT_CLIENT_ERR_FETCH    "server exceeded fetch limit"
#define RIFT_CLIENT_ERR_SHUTDOWN "client closed"

/* Bytes a publisher may have buffered or unacknowledged before publish
 * waits for room; waiting publishers are woken when that is down to
 * RESUME (room for any frame, up to 1,114,116 bytes, with margin). */
#define RIFT_CLIENT_PUB_WINDOW (8u << 20)
#define RIFT_CLIENT_PUB_RESUME (6u << 20)
/* Size of a publisher's batch block; larger frames get their own. */
#define RIFT_CLIENT_PUB_BLOCK (64u << 10)
/* Huge-page chunks a client may carve standard blocks from: 155 blocks,
 * a full window of one publisher and the spares. */
#define RIFT_CLIENT_PUB_CHUNKS 5
/* A subscription returns consumed bytes to the server in batches of this
 * size: an eighth of the 2 MiB stream window, so the server never stalls
 * on a reader that keeps up, and one post (a wakeup of the client thread,
 * a MAX_STREAM_DATA) per batch instead of per message. */
#define RIFT_CLIENT_CREDIT_BATCH (256u << 10)
/* Extra deadline of a request over its own timeout (§2.9). */
#define RIFT_CLIENT_REQUEST_GRACE_MS 5000u

typedef struct rift_client_stream rift_client_stream;
typedef struct rift_client_call rift_client_call;

/* ---- Received messages (received_msg.c) ---- */

/* Recycled storage for received messages (msgpool.c): allocation on the
 * client thread only, release from any thread; it lives until its owner
 * closed it and the last message built on it is gone. */
typedef struct rift_msgpool rift_msgpool;
/* Errors: RIFT_ERR_NOMEM. */
int rift_msgpool_new(rift_msgpool **pp, const rift_mem *base);
/* The owner lets go (NULL is a no-op). */
void rift_msgpool_close(rift_msgpool *p);
/* A message holding copies of |f|'s fields (client thread). Errors:
 * RIFT_ERR_NOMEM. */
int rift_msgpool_msg(rift_msgpool *p, rift_msg **pm, const rift_frame_msg *f);

/*
 * rift_client_msg_build makes a rift_msg from decoded fields. |detached|,
 * when not NULL, is the heap buffer of the frame body they point into
 * (rift_frame_reader_detach, allocated through |mem|): with the default
 * allocator the message adopts it instead of copying the payload; it is
 * freed in every case. Otherwise the fields are copied into a message
 * from |pool| (NULL: malloc). Errors: RIFT_ERR_NOMEM.
 */
int rift_client_msg_build(rift_msg **pm, const rift_mem *mem,
                          rift_msgpool *pool, const rift_frame_msg *f,
                          uint8_t *detached);

/* One queued subscription message and the flow-control bytes it holds. */
typedef struct rift_client_entry {
    rift_msg *msg;
    uint32_t wire_len;
} rift_client_entry;

/* A growable FIFO of entries (one thread at a time). */
typedef struct rift_client_ring {
    const rift_mem *mem;
    rift_client_entry *v;
    size_t cap; /* a power of two, or 0 */
    size_t head;
    size_t count;
} rift_client_ring;

void rift_client_ring_init(rift_client_ring *r, const rift_mem *mem);
/* Unrefs every message and frees the storage. */
void rift_client_ring_free(rift_client_ring *r);
/* Errors: RIFT_ERR_NOMEM (nothing changed). */
int rift_client_ring_push(rift_client_ring *r, rift_client_entry e);
/* Returns false when empty. */
bool rift_client_ring_pop(rift_client_ring *r, rift_client_entry *e);
/* Moves every entry of |from| to the end of |to|, leaving |from| empty
 * (its storage kept). Errors: RIFT_ERR_NOMEM (nothing moved). */
int rift_client_ring_move(rift_client_ring *to, rift_client_ring *from);

/* ---- Local checks and response decoding (check.c) ---- */

/* Subject literal, reply literal (when non-empty), payload at most 1 MiB,
 * in the server's order. */
int rift_client_check_publish(const char *subject, size_t subject_len,
                              const char *reply, size_t reply_len,
                              size_t payload_len, rift_error *err);
/* A `str` field: at most 4,096 bytes of UTF-8. */
int rift_client_check_string(const char *s, size_t len, rift_error *err);
/* 1..120,000 ms (or "request timeout too large" above u32). */
int rift_client_check_request_timeout(uint64_t timeout_ms, rift_error *err);
/* ERROR frame body -> RIFT_ERR_PERMISSION (code 1) or RIFT_ERR_REMOTE with
 * the server's text; a malformed ERROR gives its decoding error. Returns
 * the code. */
int rift_client_error_from_frame(const uint8_t *body, size_t len,
                                 rift_error *err);
/* call_ext.c: decodes an EXT_INFO or CONSUMER_INFO body into the call's
 * result. */
int rift_client_ext_answer(rift_client_call *call, const uint8_t *body,
                           size_t len, rift_error *err);
/* call_stream.c: decodes a STREAM_INFO_EXT body into call->sinfo. */
int rift_client_stream_answer(rift_client_call *call, const uint8_t *body,
                              size_t len, rift_error *err);
/* The answer to a request that expects a bare OK: 0 for OK, the mapped
 * error for ERROR, "unexpected response opcode" otherwise. */
int rift_client_expect_ok(const uint8_t *body, size_t len, rift_error *err);

/* ---- Streams (client.c) ---- */

typedef enum rift_cs_kind {
    RIFT_CS_NONE = 0, /* detached: reset, waiting for stream_close */
    RIFT_CS_AUTH,
    RIFT_CS_CALL,
    RIFT_CS_PUB,
    RIFT_CS_SUB,
    RIFT_CS_PUSH, /* a push consumer's stream (push_consumer.c) */
} rift_cs_kind;

/* Client-thread state of one QUIC stream. Freed at stream_close (or at
 * teardown, when the endpoint goes without callbacks). */
struct rift_client_stream {
    rift_client *c;
    rift_quic_stream *qs;
    rift_frame_reader rd;
    rift_cs_kind kind;
    union {
        rift_client_call *call;
        rift_publisher *pub;
        rift_client_sub *sub;
        rift_client_push *push;
    } u;
    bool fin;      /* the server finished its side */
    bool read_end; /* FIN or reset: nothing more will arrive */
    rift_client_stream *prev, *next;
};

/* ---- Calls (call.c) ---- */

typedef enum rift_call_kind {
    RIFT_CALL_REQUEST = 1,
    RIFT_CALL_STREAM_PUBLISH,
    RIFT_CALL_CONSUMER_OPEN,
    RIFT_CALL_FETCH,
    RIFT_CALL_ACK,
    RIFT_CALL_SUBSCRIBE,
    RIFT_CALL_PUBLISHER,
    RIFT_CALL_EXT_HELLO,     /* EXT_INFO into |ext_features| */
    RIFT_CALL_CONSUMER_INFO, /* CONSUMER_INFO into |info| */
    RIFT_CALL_STREAM_INFO,   /* STREAM_INFO_EXT into |sinfo| */
    RIFT_CALL_CONSUMER_LIST, /* CONSUMER_LIST_RESULT into |entries| */
    RIFT_CALL_PUSH,          /* PUSH_OPEN: OK attaches, as SUBSCRIBE */
} rift_call_kind;

/* An owned copy of an asynchronous call's frame (header and payload),
 * handed to the stream as a pinned chunk. */
typedef struct rift_client_frame {
    const rift_mem *mem;
    size_t len;
    uint8_t data[];
} rift_client_frame;

/* One operation on its own stream. A blocking caller fills the request
 * part and runs it with rift_client_call_run; an asynchronous one
 * allocates it and submits it with rift_client_call_submit. */
struct rift_client_call {
    rift_client *c;
    rift_call_kind kind;
    /* Request: header bytes and payload, copied into the stream. */
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *payload;
    size_t payload_len;
    bool fin;
    uint64_t timeout_ns;
    /* Results. */
    rift_msg *msg;             /* REQUEST */
    rift_client_delivery *out; /* FETCH: caller array of |limit| */
    size_t nmsgs;
    uint32_t limit;
    rift_stored stored;              /* STREAM_PUBLISH */
    rift_client_consumer_info *info; /* CONSUMER_INFO: caller's */
    rift_client_stream_info *sinfo;  /* STREAM_INFO_EXT: caller's */
    char *ext_features;              /* EXT_HELLO: caller's buffer */
    /* CONSUMER_LIST: the page (owned by the call until handed over,
     * rift_client_consumer_list_free), at most |limit| entries. */
    rift_client_consumer_entry *entries;
    size_t nentries;
    bool more;
    size_t ext_cap;
    bool ext_none; /* EXT_HELLO: the server answered "unknown opcode" */
    /* SUBSCRIBE (on OK) and PUBLISHER (on open): hands the call's stream
     * to the subscription or publisher that made the call. Set by that
     * owner, so call.c calls neither. */
    void (*attach)(void *owner, rift_client_stream *cs);
    void *owner;
    /* Asynchronous calls live on the heap and complete by callback on
     * the client thread; their frame is an owned copy (frame, moved to
     * the stream once written). */
    bool async;
    union {
        rift_client_stored_cb stored;
        rift_client_done_cb done;
        rift_client_fetched_cb fetched;
        rift_client_stream_info_cb sinfo;
        rift_client_consumer_info_cb cinfo;
        rift_client_consumer_listed_cb listed;
    } fn;
    void *fn_arg;
    rift_client_frame *frame;
    /* Completion, under c->mu. */
    pthread_cond_t cond;
    bool done;
    int rc;
    /* A blocking call's caller's error (may be NULL), written straight
     * from the client thread while the caller waits: the record carries
     * no rift_error of its own (an asynchronous call's callback gets the
     * error instead), which keeps the heap calls of the publish path
     * small. */
    rift_error *err;
    /* Client thread. */
    rift_timer timer;
    rift_client_stream *cs;
    rift_client_call *next_open; /* waiting for stream credit */
    bool queued;                 /* on the client's open queue */
};

/* Runs |call| on the client thread and waits for it. Returns call->rc
 * (the error in |err|). */
int rift_client_call_run(rift_client_call *call, rift_error *err);
/* Fills a blocking call of |kind| with header |hdr| (|n| bytes) and the
 * client's operation timeout. */
void rift_client_call_init(rift_client_call *call, rift_client *c,
                           rift_call_kind kind, const uint8_t *hdr,
                           rift_ssize n);
/* Hands the heap call |call| (async, frame set) to the client thread; it
 * completes by callback. On failure the call is freed, no callback runs
 * and the reason is in |err|. */
int rift_client_call_submit(rift_client_call *call, rift_error *err);
/* A heap call for |kind| with room for |extra| bytes behind it, owning a
 * copy of header |hdr| and |payload|. NULL when out of memory (|err|
 * set). */
rift_client_call *rift_client_call_async_new(rift_client *c,
                                             rift_call_kind kind, size_t extra,
                                             const uint8_t *hdr, size_t hdr_len,
                                             const uint8_t *payload,
                                             size_t payload_len,
                                             rift_error *err);
/* Submits the frame |hdr| (|n| bytes, or a negative encoder error returned
 * as is) as a call answered by a bare OK, completed through |cb|. */
int rift_client_call_submit_ok(rift_client *c, const uint8_t *hdr, rift_ssize n,
                               rift_client_done_cb cb, void *arg,
                               rift_error *err);
/* Client thread: stream events of a call's stream. */
void rift_client_call_frame(rift_client_stream *cs, const rift_frame_body *b);
/* Client thread: completes |call| with |rc| (|e| may be NULL when rc is
 * 0) and lets its caller go. Stops the stream of a failed call. */
void rift_client_call_finish(rift_client_call *call, int rc,
                             const rift_error *e);
/* Client thread: opens the streams of calls waiting for credit. */
void rift_client_calls_retry_open(rift_client *c);

/* ---- Publishers (publisher.c) ---- */

typedef struct rift_pub_block rift_pub_block;
typedef struct rift_pub_waiter rift_pub_waiter;

struct rift_publisher {
    rift_client *c;
    bool shared; /* the client's shared publisher: holds no client ref */
    atomic_int refs;
    pthread_mutex_t mu;
    /* The chain of blocks (publisher.c): publishing threads append at
     * `tail` under mu; the client thread hands bytes over from `cons` /
     * `cons_off` without it. */
    _Atomic(rift_pub_block *) first; /* the chain's first block, ever */
    rift_pub_block *tail;            /* under mu */
    rift_pub_block *cons;            /* client thread */
    size_t cons_off;                 /* client thread */
    atomic_size_t buffered;  /* committed, not yet handed to the stream */
    atomic_bool kick;        /* a flush post is queued */
    atomic_bool failed_flag; /* `failed`, readable without mu */
    atomic_int nwaiters;     /* entries of the waiter queue */
    /* Handed to the stream and not yet acknowledged (written by the
     * client thread without the mutex, see rift_client_pub_acked). */
    _Atomic uint64_t inflight;
    atomic_int blocked; /* threads waiting for room */
    pthread_cond_t room;
    /* Operations waiting for OK, in stream order; they sleep on `done`
     * until their own flag is set. */
    rift_pub_waiter *wq_head, *wq_tail;
    pthread_cond_t done;
    /* Failure: once failed, never usable again. */
    bool failed;
    bool reported; /* the failure was returned to some call */
    rift_error fail;
    bool stopped; /* client thread: the server stopped our writes */
    /* Client thread. */
    rift_client_stream *cs;
    rift_timer timer;
};

void rift_client_pub_frame(rift_client_stream *cs, const uint8_t *body,
                           size_t len);
void rift_client_pub_read_end(rift_client_stream *cs, bool reset);
void rift_client_pub_stopped(rift_client_stream *cs);
void rift_client_pub_acked(rift_client_stream *cs, uint64_t unacked);
/* Client thread: the publisher's stream is gone or must go; fails every
 * waiter with |e| and detaches (resetting the stream when |reset|). */
void rift_client_pub_fail(rift_publisher *p, const rift_error *e, bool reset);
/* Any thread: drops a reference; the last frees. */
void rift_client_pub_unref(rift_publisher *p);
/* Frees the client's spare blocks (when the client goes). */
void rift_client_pool_free(rift_client *c);

/* ---- Subscriptions (subscription.c) ---- */

struct rift_client_sub {
    rift_client *c;
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    rift_client_ring q;
    int waiters;
    int efd; /* -1 until rift_client_sub_fd */
    bool failed;
    rift_error fail;
    uint64_t credit; /* consumed bytes not yet returned */
    bool credit_posted;
    /* Client thread. */
    rift_client_stream *cs;
    rift_client_ring pend; /* decoded during this callback, not yet queued */
};

/* Returns true when the frame became a queued message (which keeps its
 * flow-control bytes until the application takes it). */
bool rift_client_sub_frame(rift_client_stream *cs, const rift_frame_body *b);
/* Client thread: queues the messages decoded during this callback. */
void rift_client_sub_flush(rift_client_sub *s);
/* Client thread: fails the subscription with |e| and detaches it. */
void rift_client_sub_fail(rift_client_sub *s, const rift_error *e, bool reset);
void rift_client_sub_unref(rift_client_sub *s);

/* ---- Push consumers (push_consumer.c) ---- */

/* Client thread: a frame of a push stream (DELIVERY or ERROR). */
void rift_client_push_frame(rift_client_stream *cs, const rift_frame_body *b);
/* Client thread: |unacked| bytes of a push stream await their ACK. */
void rift_client_push_acked(rift_client_stream *cs, uint64_t unacked);
/* Client thread: the push ended with |e|; reports it (unless closed) and
 * detaches (resetting the stream when |reset|). */
void rift_client_push_fail(rift_client_push *p, const rift_error *e,
                           bool reset);

/* ---- Client (client.c) ---- */

struct rift_client {
    const rift_mem *mem;
    atomic_int refs;
    uint64_t op_timeout_ns;
    uint64_t connect_timeout_ns;
    struct sockaddr_storage local;
    socklen_t local_len;

    pthread_mutex_t mu;
    /* Under mu. */
    bool closing;   /* rift_client_del began: no more posts */
    bool conn_dead; /* the connection ended */
    rift_error conn_err;
    bool connect_done;
    int connect_rc;
    rift_error connect_err;
    pthread_cond_t connect_cond;

    rift_loop *loop;
    pthread_t thread;
    bool thread_started;

    /* Client thread. */
    rift_quic_endpoint *ep;
    rift_quic_conn *conn;
    bool authed;
    bool dead; /* no QUIC objects any more (teardown or connection end) */
    char *token;
    size_t token_len;
    rift_timer connect_timer;
    rift_client_stream *streams;
    rift_client_call *open_head, *open_tail;

    /* The shared publisher (rift_client_publish). */
    pthread_mutex_t shared_mu;
    rift_publisher *shared;

    /* Storage of received messages (client thread allocates). */
    rift_msgpool *msgs;

    /* Spare publisher blocks (publisher.c), any thread. */
    pthread_mutex_t pool_mu;
    rift_pub_block *pool;
    size_t npool;
    /* Under pool_mu: standard blocks handed out and not back, and the
     * huge-page chunks standard blocks are carved from once that count
     * is high (publisher.c). */
    size_t pub_out;
    void *pub_chunks[RIFT_CLIENT_PUB_CHUNKS];
    size_t npub_chunks;
    size_t pub_carved; /* blocks carved from the last chunk */
};

/*
 * rift_client_post runs |cb|(|arg|) on the client thread, unless the
 * client is closing or its connection is gone: then it fails with the
 * reason in |err| and |cb| never runs.
 * Errors: RIFT_ERR_CONNECTION (and the close reason's code); NOMEM.
 */
int rift_client_post(rift_client *c, rift_post_cb cb, void *arg,
                     rift_error *err);
/* Fills |err| with why the client cannot run operations; returns the code.
 * Takes c->mu. */
int rift_client_dead_error(rift_client *c, rift_error *err);
/* Client thread: opens a stream for |kind| with |owner| as its user.
 * Errors: RIFT_ERR_AGAIN (stream limit), RIFT_ERR_CLOSED, NOMEM. */
int rift_client_stream_open(rift_client *c, rift_cs_kind kind, void *owner,
                            rift_client_stream **pcs);
/* Client thread: resets both directions of |cs| with code 0 and detaches
 * its owner (the state lives until stream_close). */
void rift_client_stream_abort(rift_client_stream *cs);
/* Client thread: credits |n| received bytes back. */
void rift_client_stream_credit(rift_client_stream *cs, uint64_t n);
/* Client thread: unlinks and frees a stream record. */
void rift_client_stream_free(rift_client_stream *cs);

void rift_client_ref(rift_client *c);
void rift_client_unref(rift_client *c);

/* Monotonic clock plus a timeout, for pthread_cond_timedwait on
 * condition variables made by rift_client_cond_init. */
int rift_client_cond_init(pthread_cond_t *cond);
void rift_client_deadline_ts(struct timespec *ts, uint64_t timeout_ns);

/* Frees the client's spare publish blocks (pub_block.c; when the client
 * goes). */
void rift_client_pool_free(rift_client *c);

/* ---- Transport events (client_events.c) ---- */

/* The callbacks the client's QUIC endpoint reports to. */
extern const rift_quic_callbacks rift_client_quic_callbacks;
/* Ends the wait of rift_client_new with |rc| (once; |e| may be NULL
 * when rc is 0). */
void rift_client_connect_complete(rift_client *c, int rc, const rift_error *e);
/* The connect timer: handshake and AUTH took too long. */
void rift_client_connect_timeout(rift_timer *t, void *arg);
/* Client thread: fails every stream's owner and every call waiting for a
 * stream with |e|, and frees the stream records. |transport_gone|: the
 * streams have no QUIC handle any more (otherwise owners reset them). */
void rift_client_fail_all(rift_client *c, const rift_error *e,
                          bool transport_gone);


#endif /* RIFT_CLIENT_CLIENT_INTERNAL_H */
