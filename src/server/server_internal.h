/*
 * server_internal.h — private structures of the protocol server (server layer),
 * shared by every file of src/server: server.c (public API, thread,
 * stats), admin.c (host queries), session.c (connections and
 * authentication), stream_events.c (stream events, reading, dispatch), the
 * handlers publish.c, deliver.c, stream_ops.c (server/handlers.h) and the
 * primitives they all use, stream_record.c (server/stream_record.h). Nothing
 * outside src/server includes it.
 *
 * Everything below is owned by the server thread (its rift_loop), except
 * the fields documented as shared.
 */
#ifndef RIFT_SERVER_SERVER_INTERNAL_H
#define RIFT_SERVER_SERVER_INTERNAL_H

#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/quic.h"
#include "rift/broker.h"
#include "rift/server.h"
#include "subject/auth.h"
#include "subject/quota.h"

#include <pthread.h>
#include <stdatomic.h>

/* Stop pulling from a subscription's broker queue while this many bytes
 * are queued on its QUIC stream and not acknowledged; resume below half of
 * it. This is where a subscriber that does not keep up turns into broker
 * back-pressure, and then into slow-consumer disconnection. */
#define SRV_SEND_HIGH (1024u * 1024u)
#define SRV_SEND_LOW  (SRV_SEND_HIGH / 2)
/* A write is "blocked" (quinn's write would wait) once this many bytes of
 * a stream are queued and unacknowledged: from then on the ACKs must make
 * progress within io_timeout. (The transport takes every write at once,
 * so the deadline is measured on acknowledgements; a few small frames
 * awaiting their ACK are not a blocked write.) */
#define SRV_WRITE_BLOCKED (64u * 1024u)
/* What one connection may pin in data for its client: the bytes queued
 * on all its streams and not yet acknowledged, plus records a fetch has
 * loaded and not yet written. The figure is protocol v1's send window
 * (§2.1), which is what bounds a quinn server's queued data per
 * connection. Past it no stream of the connection takes more
 * (subscriptions stop pulling from their broker queues, fetches stop
 * writing and loading) until ACKs bring it below half; a stream kept
 * waiting without any ACK progress on the connection for io_timeout
 * fails like a blocked write. Each stream may overshoot by what it had
 * started (a batch within SRV_SEND_HIGH, or one record). */
#define SRV_CONN_HIGH 8912896u
#define SRV_CONN_LOW  (SRV_CONN_HIGH / 2)
/* A fetch loads its records from the store in portions of about this
 * much payload, the next one once the previous one is written. */
#define SRV_FETCH_BYTES SRV_SEND_HIGH
/* Messages taken from a broker queue at once. */
#define SRV_BATCH 32
/* Payloads up to this size are copied next to their MESSAGE header (one
 * small copy is cheaper than pinning the message until the ACK); larger
 * ones are sent zero-copy from the broker's buffer. */
#define SRV_COPY_PAYLOAD_MAX 512
/* Scratch for MESSAGE headers and small payloads of one batch. */
#define SRV_SCRATCH_BYTES (64u * 1024u)
/* Assembled bodies at least this large are published without a second
 * copy (the reader's buffer becomes the message payload). */
#define SRV_EXTERNAL_MIN 16384
/* Huge-page slab chunks for the messages the server thread makes
 * (broker/broker_face.h): a backlog of this size (about 1.5 million 64-byte
 * messages) costs one page fault per 2 MiB, and again none once the chunks
 * are mapped. Chunks without a message are unmapped after a period
 * without remote publications. */
#define SRV_MSG_CACHE_BYTES   (256u * 1024u * 1024u)
#define SRV_MSG_CACHE_IDLE_NS (10ull * 1000000000ull)
/* How long an unknown token's ERROR frame may take to be acknowledged
 * before the connection is closed anyway. */
#define SRV_AUTH_ERROR_LINGER_NS 250000000ull

typedef struct srv_conn srv_conn;
typedef struct srv_stream srv_stream;
typedef struct srv_store_op srv_store_op;
typedef struct srv_push srv_push;

/* ---- Streams ---- */

/* What an operation attached to a stream record (a subscription, a
 * request's inbox, a durable-stream operation) and how the record lets go
 * of it: set by the handler that attached it, so the record's lifetime
 * (stream_record.c) needs to know no kind of operation. */
typedef struct srv_op_hooks {
    /* Lets go of what the operation holds; safe to call again. */
    void (*drop)(srv_stream *ss);
    /* True while the operation waits for the store and must outlive the
     * stream's end (NULL = never). */
    bool (*in_flight)(const srv_stream *ss);
} srv_op_hooks;

/* One operation frame as every handler takes it: the opcode, the fields
 * after it, and whether the reader assembled it from several packets (so
 * its buffer may be adopted, rift_frame_reader_detach). */
typedef struct srv_frame {
    uint8_t opcode;
    const uint8_t *fields;
    size_t len;
    bool assembled;
} srv_frame;

typedef enum srv_state {
    SS_HELD = 1, /* opened before authentication finished: data buffered */
    SS_AUTH,     /* the connection's first stream: one AUTH frame */
    SS_OPS,      /* operation stream reading frames */
    SS_BUSY,     /* a one-shot operation is waiting (request, store) */
    SS_DELIVERY, /* subscription: MESSAGE frames, never read again */
    SS_PUSH,     /* push consumer: DELIVERY out, PUSH_ACK frames in */
    SS_DONE,     /* our side finished (FIN or reset) or the peer stopped */
    SS_REFUSED,  /* no stream permit: reset and stopped with code 2 */
} srv_state;

struct srv_stream {
    srv_conn *conn;
    rift_quic_stream *qs; /* NULL once the transport closed it */
    srv_state state;
    bool permit;    /* holds one of the connection's stream permits */
    bool got_frame; /* its first frame completed (first-frame deadline) */
    bool mid;       /* a frame has started and not completed */
    bool counted;   /* counted in the server's open-stream gauge */
    bool wait_conn; /* waiting for room in the connection's budget */

    /* Bytes pinned outside the transport (a fetch's loaded records), and
     * this stream's part of conn->queued (rift_srv_account). */
    uint64_t extra;
    uint64_t accounted;
    rift_tstamp wait_since;

    rift_frame_reader reader;

    /* The last subject that passed the per-frame checks of this stream
     * (PUBLISH literal + ACL, or MESSAGE re-validation), without a reply:
     * repeating it skips those checks. Length 0 = none. */
    char last_subject[64];
    uint8_t last_subject_len;

    /* One timer for every deadline (first frame, partial frame, write,
     * linger after DONE), re-checked lazily when it fires, so the hot path
     * only stores timestamps. */
    rift_timer timer;
    rift_tstamp timer_at;
    rift_tstamp opened_at;
    rift_tstamp frame_start;
    rift_tstamp last_progress; /* last ACK progress, or first queued byte */
    rift_tstamp done_at;

    /* SS_HELD: bytes received before authentication. */
    uint8_t *held;
    size_t held_len, held_cap;
    bool held_fin;

    /* SS_DELIVERY. */
    rift_sub *sub;
    bool sub_ready; /* reported by the notifier, not yet drained */
    rift_msg *backlog[SRV_BATCH];
    size_t backlog_pos, backlog_len;

    /* SS_BUSY: REQUEST. */
    rift_sub *inbox;
    char inbox_name[RIFT_INBOX_LEN + 1];
    rift_timer op_timer;
    /* SS_BUSY: a durable-stream operation in flight. */
    srv_store_op *store_op;
    /* SS_PUSH: its push (push_stream.c). */
    srv_push *push;

    /* The operation attached to the record (NULL = none). */
    const srv_op_hooks *op;

    /* Server-wide list of live stream records (for shutdown). */
    srv_stream *prev, *next;
};

/* ---- Connections ---- */

typedef enum srv_conn_state {
    SC_AUTH = 1, /* waiting for the AUTH frame */
    SC_READY,    /* authenticated */
    SC_FAILED,   /* authentication failed; the close is under way */
} srv_conn_state;

struct srv_conn {
    rift_server *srv;
    rift_quic_conn *qc; /* NULL once the transport reported the close */
    srv_conn_state state;
    const rift_identity *id; /* set once authenticated */
    size_t id_index;
    srv_stream *auth;      /* the auth stream, while it lasts */
    rift_timer auth_timer; /* handshake_timeout for AUTH */
    bool close_pending;    /* auth failed: close once ERROR is out */
    bool over_limit;       /* refused by the quota, not a bad token */
    bool quota_taken;      /* holds a connection unit of the quota */
    size_t permits;        /* stream permits in use */
    size_t held;           /* streams held before authentication */
    size_t refs;           /* 1 for the transport + 1 per stream record */
    /* Bytes pinned for this client (SRV_CONN_HIGH), streams waiting for
     * room, and the last ACK progress on any of its streams. */
    uint64_t queued;
    size_t waiting;
    rift_tstamp last_progress;
    srv_conn *prev, *next; /* server-wide list */
};

/* ---- Server ---- */

/*
 * The append watch of a stream that waiting fetches (CONSUMER_FETCH_WAIT)
 * wait on: it posts one wake-up to the loop while |wake_posted| is false.
 * A table stream's is part of its entry, installed while the server runs.
 * A stream of the stream source (riftd: a STAN channel) gets one while a
 * waiting fetch waits on it — each of them holds the stream's pin, so the
 * stream outlives it — on srv->source_watches; once it is removed while a
 * wake-up is still posted it is |dead| and that wake-up frees it.
 */
typedef struct srv_watch {
    rift_server *srv;
    rift_stream *stream;
    atomic_bool wake_posted;
    bool source;
    bool hooked;  /* source: installed on the stream */
    bool dead;    /* source: off the list, freed by the posted wake-up */
    size_t users; /* source: the waiting fetches that use it */
    struct srv_watch *prev, *next;
} srv_watch;

typedef struct srv_stream_entry {
    char *name;
    size_t name_len;
    rift_stream *stream;
    srv_watch watch;
} srv_stream_entry;

typedef struct srv_counters {
    uint64_t connections;
    uint64_t authenticated;
    uint64_t accepted;
    uint64_t auth_failures;
    uint64_t streams;
    uint64_t subscriptions;
    uint64_t msgs_in, bytes_in;
    uint64_t msgs_out, bytes_out;
    uint64_t slow_consumers;
    uint64_t queued;           /* bytes pinned for clients, all conns */
    uint64_t conn_queued_peak; /* the most one connection pinned */
} srv_counters;

typedef enum srv_run_state {
    SRV_STOPPED = 0,
    SRV_RUNNING,
} srv_run_state;

struct rift_server {
    const rift_mem *mem;
    rift_broker *broker;
    rift_auth_table auth;

    /* Copied settings. */
    char *cert_file;
    char *key_file;
    size_t max_connections;
    size_t max_streams;
    uint64_t handshake_ns;
    uint64_t io_ns;
    uint8_t secret[32];
    bool has_secret;
    bool retry;
    srv_stream_entry *streams; /* sorted by name */
    size_t nstreams;
    rift_server_stream_source stream_source;   /* after |streams| */
    rift_server_stream_admin stream_admin;     /* stream_ext.c */
    rift_server_stream_backend stream_backend; /* stream_backend.c */
    /* Parked CONSUMER_FETCH_WAIT operations, and the append watches on
     * streams of the stream source they wait on (loop thread only). */
    struct srv_store_op *fetch_waiters;
    srv_watch *source_watches;
    /* Live push streams' pushes, and those outliving their stream until
     * their fetch or wake-up is back (push_stream.c). */
    srv_push *pushes;

    /* Shared: |lock| serializes start, stop, stats and address queries
     * (stop holds it while it joins the thread); |sig_lock| and |cond|
     * carry the loop's answer to a stats query. */
    pthread_mutex_t lock;
    pthread_mutex_t sig_lock;
    pthread_cond_t cond;
    srv_run_state run;
    pthread_t thread;
    /* Set by the server thread as it returns: a loop that ended without
     * a stop (rift_server_is_running, the host's watchdog) answers no
     * posts any more. */
    atomic_bool thread_ended;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    srv_counters last; /* counters when the thread last stopped */
    uint64_t last_refused;

    /* Server thread. */
    rift_loop *loop;
    rift_quic_endpoint *ep;
    rift_notifier *notifier;
    rift_io notify_io;
    bool stopping;
    /* Remote publications that reached somebody since the last drain of
     * the notifier, and how many may accumulate before draining at once
     * (a quarter of the broker's queue capacity, at most 256). */
    size_t drain_count;
    size_t drain_every;
    rift_timer stop_timer;
    rift_tstamp stop_deadline;
    rift_timer cache_timer; /* releases the message cache when idle */
    uint64_t cache_msgs_in; /* msgs_in at its last tick */
    srv_conn *conns;
    srv_stream *all;
    srv_counters c;
    uint64_t *id_conns; /* live authenticated connections per identity */
    /* Per-identity accounting shared with other front ends (NULL = none),
     * and each auth entry's slot in it (SIZE_MAX = not accounted). */
    rift_quota *quota;
    size_t *quota_slots;
    uint8_t *scratch; /* SRV_SCRATCH_BYTES */

    /* Durable-stream operations submitted and not yet back on the loop
     * (their completions post to it, so it must outlive them). */
    atomic_size_t store_inflight;
    /* Their completions, pushed by the writer threads (LIFO, linked by
     * done_next); only the push onto an empty list posts the drain
     * (stream_ops.c), so a cycle that settles many ops costs the loop one
     * post and one wake-up, not one each. */
    _Atomic(srv_store_op *) done_head;
};

/* ---- session.c ---- */

extern const rift_quic_callbacks rift_srv_callbacks;

/* Gives back the connection's quota unit, once (at its close). */
void rift_srv_conn_quota_give(srv_conn *c);

/* ---- server.c ---- */

/* Posts |cb| to the running loop and waits until it sets *|done| (under
 * sig_lock, broadcasting cond). Called with |lock| held. Returns
 * RIFT_ERR_CLOSED when the server is not running (|cb| not posted),
 * RIFT_ERR_NOMEM when the post failed. */
int rift_srv_post_wait(rift_server *srv, rift_post_cb cb, void *arg,
                       bool *done);
/* Marks a posted query answered (takes sig_lock, broadcasts). */
void rift_srv_post_done(rift_server *srv, bool *done);

#endif /* RIFT_SERVER_SERVER_INTERNAL_H */
