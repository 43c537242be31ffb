/*
 * client.h — the Rift messaging client: one authenticated QUIC connection
 * to a Rift server (riftd) and the operations of protocol v1 over it:
 * publishing (shared, or through dedicated ordered publishers),
 * subscriptions, request/reply, retained streams and durable consumers.
 *
 * Behaviour mirrors the original Rust client (docs/protocol-v1.md §6.2):
 * the same frames, the same deadlines and the same error texts.
 *
 * Threading: every function here is thread-safe. A client owns one
 * internal thread that runs the QUIC connection; calls hand their work to
 * it and wait for the answer, so any number of application threads may
 * share one client, one publisher or one subscription. Blocking calls are
 * bounded by deadlines (30 s by default, see rift_client_settings), never
 * by the peer alone.
 *
 * Strings: subjects, replies, queue groups, stream and consumer names are
 * length-delimited (pointer + length, no NUL needed) and borrowed for the
 * call. Payloads are (const uint8_t *, size_t) and borrowed for the call:
 * every function copies what it sends before returning.
 *
 * Errors: functions return 0 or a negative RIFT_ERR_* code and fill the
 * optional |err| with the code and the exact text. Errors the server sent
 * in an ERROR frame are RIFT_ERR_PERMISSION (wire code 1) or RIFT_ERR_REMOTE
 * (wire code 2) with the server's text. Client-side texts are those of the
 * original client:
 *   "unexpected response opcode"   the server answered with a wrong frame
 *                                  (RIFT_ERR_PROTOCOL)
 *   "string exceeds protocol limit" a string over 4,096 bytes
 *                                  (RIFT_ERR_INVALID_ARGUMENT)
 *   "frame exceeds limit"          a frame body over 1,114,112 bytes
 *                                  (RIFT_ERR_PAYLOAD_TOO_LARGE)
 *   "QUIC operation timed out"     a deadline passed (RIFT_ERR_TIMEOUT)
 *   "QUIC stream closed"           the server ended or reset the stream
 *                                  before answering (RIFT_ERR_CLOSED)
 *   "payload exceeds 1 MiB transport limit" (RIFT_ERR_PAYLOAD_TOO_LARGE)
 *   "publisher closed or a previous operation was cancelled"
 *                                  (RIFT_ERR_UNUSABLE)
 * Local subject checks use the server's texts ("invalid subject length",
 * "invalid subject pattern", "publication subject must be literal"; code
 * RIFT_ERR_PROTOCOL). When the connection ends, operations fail with
 * RIFT_ERR_CONNECTION and the reason ("server shutdown", "client closed",
 * ...), RIFT_ERR_PERMISSION for "authentication failed", or RIFT_ERR_TLS.
 */
#ifndef RIFT_CLIENT_H
#define RIFT_CLIENT_H

#include "rift/broker.h"
#include "rift/rift.h"
#include "rift/stream.h"

#include <stdbool.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rift_client rift_client;
typedef struct rift_publisher rift_publisher;
typedef struct rift_client_sub rift_client_sub;

/* ---- Connecting ---- */

typedef struct rift_client_settings {
    /** Server address "HOST:PORT" (an IPv4 literal, "[IPv6]:PORT" or a
     * host name resolved with getaddrinfo, whose first IPv4 address is
     * used when it has one, else its first address). */
    const char *address;
    /** PEM file with the CA (or server) certificates to trust. No system
     * roots are used. */
    const char *ca_file;
    /** DNS name or IP literal the server certificate must carry. */
    const char *server_name;
    /** Authentication token (at most 4,096 bytes, UTF-8). */
    const char *token;
    /** Deadline of the whole connect (handshake and AUTH), ms. 30,000. */
    uint64_t connect_timeout_ms;
    /** Deadline of each operation, ms (the original's CLIENT_TIMEOUT).
     * 30,000. Requests use their own timeout plus 5 s instead. */
    uint64_t op_timeout_ms;
    /** Allocator; NULL for malloc. Must outlive the client. */
    const rift_mem *mem;
} rift_client_settings;

/** rift_client_settings_default zeroes |s| and sets the defaults above. */
RIFT_EXTERN void rift_client_settings_default(rift_client_settings *s);

/**
 * rift_client_new opens a QUIC connection to settings->address from a
 * UDP socket bound to the unspecified address of the same family, verifies
 * the server certificate against settings->ca_file and ->server_name,
 * negotiates ALPN "rift-messaging/1", then authenticates: AUTH with the
 * token on the first stream, FIN, and the server's OK. The whole sequence
 * has the connect deadline. On success *pc is a connected client owned by
 * the caller (release it with rift_client_del). |settings| is read during
 * the call only.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (a missing setting, "invalid server
 * address ...", "string exceeds protocol limit"); RIFT_ERR_TLS (CA file
 * unreadable, certificate or name verification failed, ALPN refused);
 * RIFT_ERR_PERMISSION ("authentication failed": the server rejected the
 * token); RIFT_ERR_TIMEOUT ("QUIC operation timed out"); RIFT_ERR_CONNECTION
 * (refused, closed, network unreachable); RIFT_ERR_CLOSED ("QUIC stream
 * closed"); RIFT_ERR_PROTOCOL ("unexpected response opcode" and frame
 * decoding texts); RIFT_ERR_IO (socket); RIFT_ERR_NOMEM; -errno (thread or
 * loop creation).
 */
RIFT_EXTERN int rift_client_new(rift_client **pc,
                                const rift_client_settings *settings,
                                rift_error *err);

/**
 * rift_client_del closes the connection (application code 0, reason
 * "client closed"), stops the client thread and releases the caller's
 * handle. Operations still waiting in other threads fail with
 * RIFT_ERR_CONNECTION "client closed". Publishers and subscriptions stay
 * valid handles whose operations fail until each is closed. |c| must not
 * be used after this call. NULL is a no-op.
 */
RIFT_EXTERN void rift_client_del(rift_client *c);

/**
 * rift_client_local_addr copies the local UDP address of the connection
 * into |ss| and its length into |len| (caller storage). Cannot fail.
 */
RIFT_EXTERN void rift_client_local_addr(const rift_client *c,
                                        struct sockaddr_storage *ss,
                                        socklen_t *len);

/**
 * rift_client_is_connected returns true until the connection has ended
 * (closed by either side, idle timeout, network failure).
 */
RIFT_EXTERN bool rift_client_is_connected(rift_client *c);

/* ---- Messages ---- */

/*
 * Received messages are the library's rift_msg (rift/broker.h): immutable
 * and reference-counted, read with rift_msg_subject, rift_msg_reply and
 * rift_msg_payload, released with rift_msg_unref from any thread. A
 * message received from a server can be handed to an in-process broker
 * (rift_broker_publish_msg) without a copy. Payloads are copied at most
 * once on their way from the network.
 */

/** One record of a consumer fetch (rift_client_fetch). */
typedef struct rift_client_delivery {
    rift_msg *msg; /**< the record; the caller owns one reference */
    uint64_t sequence;
    uint64_t timestamp_ms;   /**< when it was stored, ms since the epoch */
    uint32_t delivery_count; /**< 1 on the first delivery */
} rift_client_delivery;

/* ---- Publishing ---- */

/**
 * rift_client_publish publishes |payload| to the literal |subject| over
 * the client's shared publisher stream with PUBLISH_ACK and waits for the
 * server's OK (the broker accepted and routed it; nothing is promised about
 * subscribers or disk). Local checks run first and fail without touching
 * the stream. A failed publication is never retried: it may or may not
 * have reached the broker. The shared stream is reopened on the next call
 * after a failure. Concurrent callers pipeline on the one stream.
 *
 * Errors: RIFT_ERR_PROTOCOL (local subject texts);
 * RIFT_ERR_PAYLOAD_TOO_LARGE ("payload exceeds 1 MiB transport limit");
 * RIFT_ERR_PERMISSION, RIFT_ERR_REMOTE (server texts); RIFT_ERR_TIMEOUT;
 * RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_UNUSABLE (another
 * thread's publication broke the shared stream just before this one was
 * queued: nothing was sent); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_publish(rift_client *c, const char *subject,
                                    size_t subject_len, const uint8_t *payload,
                                    size_t payload_len, rift_error *err);

/**
 * rift_client_publish_with_reply is rift_client_publish with a reply
 * subject (|reply_len| 0 for none); the reply must be literal as well.
 * Errors: those of rift_client_publish.
 */
RIFT_EXTERN int
rift_client_publish_with_reply(rift_client *c, const char *subject,
                               size_t subject_len, const char *reply,
                               size_t reply_len, const uint8_t *payload,
                               size_t payload_len, rift_error *err);

/**
 * rift_client_publisher_open opens a dedicated publisher: one stream on which
 * publications keep their order. *pp is owned by the caller (release it
 * with rift_publisher_close). Waits for stream credit when the server's
 * stream limit is reached (operation deadline).
 *
 * Errors: RIFT_ERR_TIMEOUT; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_publisher_open(rift_client *c, rift_publisher **pp,
                                           rift_error *err);

/**
 * rift_publisher_publish queues a PUBLISH without waiting for any answer.
 * Publications are buffered and written by the client thread in batches,
 * so a burst costs one wakeup, not one per message; call
 * rift_publisher_flush to learn that they were all routed. A server error
 * about one of them surfaces in a later call. When more than 8 MiB are
 * buffered or unacknowledged the call waits for room (operation deadline).
 * Local checks (subject, reply, payload size) fail without affecting the
 * publisher. Any other failure makes the publisher unusable: the failing
 * call (or the next one, when the failure arrived in between) reports it,
 * later calls return RIFT_ERR_UNUSABLE "publisher closed or a previous
 * operation was cancelled".
 *
 * Errors: RIFT_ERR_PROTOCOL (local subject texts);
 * RIFT_ERR_PAYLOAD_TOO_LARGE ("payload exceeds 1 MiB transport limit");
 * RIFT_ERR_UNUSABLE; RIFT_ERR_PERMISSION, RIFT_ERR_REMOTE (a server error
 * about an earlier publication); RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED;
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_publisher_publish(rift_publisher *p, const char *subject,
                                       size_t subject_len, const char *reply,
                                       size_t reply_len, const uint8_t *payload,
                                       size_t payload_len, rift_error *err);

/**
 * rift_publisher_publish_confirmed sends a PUBLISH_ACK after everything
 * queued before it and waits for its OK. Errors: those of
 * rift_publisher_publish, plus RIFT_ERR_PROTOCOL ("unexpected response
 * opcode").
 */
RIFT_EXTERN int
rift_publisher_publish_confirmed(rift_publisher *p, const char *subject,
                                 size_t subject_len, const char *reply,
                                 size_t reply_len, const uint8_t *payload,
                                 size_t payload_len, rift_error *err);

/**
 * rift_publisher_flush is the barrier: it sends PING after everything
 * queued and waits for OK, which the server writes only after routing
 * every earlier publication of this publisher. If one of them failed, the
 * server's error is returned instead.
 *
 * Errors: RIFT_ERR_UNUSABLE; RIFT_ERR_PERMISSION, RIFT_ERR_REMOTE;
 * RIFT_ERR_PROTOCOL; RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION;
 * RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_publisher_flush(rift_publisher *p, rift_error *err);

/**
 * rift_publisher_close resets the publisher's stream (RESET_STREAM(0) and
 * STOP_SENDING(0)) and releases the handle. Publications not yet flushed
 * may be lost: flush first. Calls waiting in other threads (for an OK or
 * for room) return RIFT_ERR_UNUSABLE; no call may start after this one.
 * NULL is a no-op.
 */
RIFT_EXTERN void rift_publisher_close(rift_publisher *p);

/* ---- Subscriptions ---- */

/**
 * rift_client_subscribe subscribes to |pattern| ('*' and terminal '>'
 * wildcards), in queue group |queue| when |queue_len| > 0, and waits for
 * the server's OK: the subscription receives every message routed after
 * this returns. Messages are buffered inside the client up to the
 * stream's flow-control window (2 MiB); received bytes are credited back
 * to the server as the application takes messages, so a slow reader
 * pushes back on the server (which disconnects it as a slow consumer when
 * its own bounded queue overflows). Unread messages also count against the
 * connection's 8 MiB window, which every stream shares: a client should
 * not leave several subscriptions unread for long.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("string exceeds protocol limit",
 * "string must be UTF-8"); RIFT_ERR_PERMISSION ("subscription not
 * permitted"); RIFT_ERR_REMOTE ("invalid subject pattern", "invalid queue
 * group", ...); RIFT_ERR_PROTOCOL; RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED;
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_subscribe(rift_client *c, const char *pattern,
                                      size_t pattern_len, const char *queue,
                                      size_t queue_len, rift_client_sub **psub,
                                      rift_error *err);

/**
 * rift_client_sub_recv takes the next message: |timeout_ns| 0 polls, a
 * negative value waits without limit, otherwise at most that long. On
 * success the caller owns one reference to *pmsg (rift_msg_unref).
 * Messages queued before a failure are delivered first; then the failure
 * is returned by every later call.
 *
 * Errors: RIFT_ERR_AGAIN (nothing arrived in time); RIFT_ERR_PERMISSION,
 * RIFT_ERR_REMOTE (the server's ERROR, e.g. "subscriber exceeded its
 * bounded queue and was disconnected"); RIFT_ERR_CLOSED ("QUIC stream
 * closed"); RIFT_ERR_PROTOCOL (a malformed frame); RIFT_ERR_CONNECTION;
 * RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_sub_recv(rift_client_sub *sub, int64_t timeout_ns,
                                     rift_msg **pmsg, rift_error *err);

/**
 * rift_client_sub_fd returns a descriptor (an eventfd, created on first
 * call, owned by the subscription) that is readable while a message or a
 * failure is waiting: level-triggered, it stays readable until
 * rift_client_sub_recv has taken every message. Use it with poll or
 * epoll, then call rift_client_sub_recv with timeout 0.
 *
 * Errors: -errno from eventfd.
 */
RIFT_EXTERN int rift_client_sub_fd(rift_client_sub *sub);

/** rift_client_sub_pending returns the number of messages queued. */
RIFT_EXTERN size_t rift_client_sub_pending(rift_client_sub *sub);

/**
 * rift_client_sub_close cancels the subscription (STOP_SENDING(0) and
 * RESET_STREAM(0); the server drops it), discards queued messages and
 * releases the handle. A rift_client_sub_recv blocked in another thread
 * returns RIFT_ERR_CLOSED ("subscription closed"); no call may start after
 * this one. NULL is a no-op.
 */
RIFT_EXTERN void rift_client_sub_close(rift_client_sub *sub);

/* ---- Request/reply ---- */

/** The longest request timeout the protocol accepts, ms. */
#define RIFT_CLIENT_REQUEST_TIMEOUT_MAX 120000u

/**
 * rift_client_request publishes |payload| to |subject| with a fresh inbox
 * chosen by the server, waits up to |timeout_ns| (1 ms..120 s, rounded up
 * to whole milliseconds for the REQUEST frame) for the first reply and returns
 * it in *preply (the caller owns one reference; its subject is the inbox, its
 * reply the responder's reply subject if any). The whole call has a deadline of
 * timeout + 5 s.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("request timeout must be 1..120000 ms",
 * "request timeout too large" above 2^32-1 ms); RIFT_ERR_PROTOCOL (local
 * subject texts); RIFT_ERR_PAYLOAD_TOO_LARGE; RIFT_ERR_REMOTE ("no
 * responders available", "request timed out", ...); RIFT_ERR_PERMISSION;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_request(rift_client *c, const char *subject,
                                    size_t subject_len, const uint8_t *payload,
                                    size_t payload_len, int64_t timeout_ns,
                                    rift_msg **preply, rift_error *err);

/* ---- Retained streams and durable consumers ---- */

/**
 * rift_client_stream_publish appends a record to the server's retained
 * stream |stream| and waits for STORED (the record passed the stream's
 * durability boundary). |stored| may be NULL.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("string exceeds protocol limit",
 * "string must be UTF-8"); RIFT_ERR_PROTOCOL (local subject texts, frame
 * texts); RIFT_ERR_PAYLOAD_TOO_LARGE; RIFT_ERR_REMOTE ("unknown stream",
 * "subject does not match this stream", ...); RIFT_ERR_PERMISSION;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_stream_publish(
    rift_client *c, const char *stream, size_t stream_len, const char *subject,
    size_t subject_len, const char *reply, size_t reply_len,
    const uint8_t *payload, size_t payload_len, rift_stored *stored,
    rift_error *err);

/**
 * rift_client_consumer_open creates (or reopens with identical settings)
 * the durable consumer |name| of |stream| and waits for OK. |config| is the
 * in-process consumer's rift_consumer_config (rift/stream.h; NULL =
 * rift_consumer_config_default): a NULL/empty filter means ">"; the server
 * checks the filter, ack_wait_ms (1..3,600,000) and max_ack_pending
 * (1..65,536). The v1 wire carries a start sequence only, so |start| must
 * be RIFT_START_SEQUENCE; rift_client_consumer_open_ext takes every start
 * position.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("string exceeds protocol limit",
 * "string must be UTF-8", "ack wait too large", "start position must be
 * RIFT_START_SEQUENCE over the wire");
 * RIFT_ERR_REMOTE ("unknown stream", "invalid consumer name", "invalid
 * consumer limits", ...); RIFT_ERR_PERMISSION; RIFT_ERR_PROTOCOL;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_consumer_open(rift_client *c, const char *stream,
                                          size_t stream_len, const char *name,
                                          size_t name_len,
                                          const rift_consumer_config *config,
                                          rift_error *err);

/**
 * rift_client_fetch fetches up to |limit| (1..256) records for consumer
 * |name|: the server commits them as pending and sends one DELIVERY each,
 * then OK. Fetch never waits for new records. On success |out| (room for
 * |limit| entries) holds *count deliveries whose messages the caller owns
 * (rift_msg_unref each); on failure nothing is returned.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("fetch limit must be 1..256", string
 * texts); RIFT_ERR_PROTOCOL ("server exceeded fetch limit", "unexpected
 * response opcode", frame texts); RIFT_ERR_REMOTE ("consumer does not
 * exist", ...); RIFT_ERR_PERMISSION; RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED;
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_fetch(rift_client *c, const char *stream,
                                  size_t stream_len, const char *name,
                                  size_t name_len, uint32_t limit,
                                  rift_client_delivery *out, size_t *count,
                                  rift_error *err);

/**
 * rift_client_ack acknowledges record |sequence| of consumer |name| and
 * waits for OK.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (string texts); RIFT_ERR_REMOTE
 * ("sequence is not pending acknowledgement", ...); RIFT_ERR_PROTOCOL;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_ack(rift_client *c, const char *stream,
                                size_t stream_len, const char *name,
                                size_t name_len, uint64_t sequence,
                                rift_error *err);

/* ---- Protocol extensions (docs/protocol-v1.md "Extensions") ---- */

/*
 * The calls below use opcodes beyond v1. A server that does not speak them
 * (the original Rust server, an older rift) answers RIFT_ERR_REMOTE
 * "unknown opcode"; rift_client_extensions tells beforehand.
 */

/**
 * rift_client_extensions probes the server (EXT_HELLO): on success
 * *|supported| says whether it speaks the extensions and, when it does,
 * |features| (|cap| bytes, NUL-terminated, cut to fit; may be NULL) holds
 * the space-separated feature list, e.g. "consumer-open consumer-info
 * consumer-delete fetch-wait stream-info" (rift/client_stream.h for the
 * stream extensions).
 *
 * Errors: RIFT_ERR_PROTOCOL; RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED;
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_extensions(rift_client *c, bool *supported,
                                       char *features, size_t cap,
                                       rift_error *err);

/** What the server reports of a consumer (CONSUMER_INFO). */
typedef struct rift_client_consumer_info {
    /** The stored configuration; config.filter points into |filter|. */
    rift_consumer_config config;
    /** The sequence the start position resolved to at creation. */
    uint64_t start_sequence;
    /** The cursor: the next new record the consumer examines. */
    uint64_t next_sequence;
    /** Deliveries awaiting acknowledgement. */
    uint32_t pending;
    /** rift_client_consumer_open_ext created it (false: resumed). */
    bool created;
    char filter[4097];
    /** Deliveries ended by TERM, and records dropped after max_deliver
     * deliveries (config.max_deliver; servers offering "max-deliver"). */
    uint64_t terminated;
    uint64_t max_delivered;
} rift_client_consumer_info;

/**
 * rift_client_consumer_open_ext opens the consumer with every start
 * position of |config| (rift_consumer_start: sequence, first, last, new,
 * time, since; NULL = defaults). An existing consumer of this identity
 * is resumed: the start position is ignored, the other settings must be
 * equal, else RIFT_ERR_REMOTE "invalid messaging configuration: consumer
 * already exists with different <field>". |info| (may be NULL) receives
 * the consumer's state.
 *
 * Errors: those of rift_client_consumer_open; RIFT_ERR_REMOTE ("invalid
 * start position", "start sequence must be at least 1", "unknown
 * opcode" from a server without extensions).
 */
RIFT_EXTERN int rift_client_consumer_open_ext(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, const rift_consumer_config *config,
    rift_client_consumer_info *info, rift_error *err);

/**
 * rift_client_consumer_get_info reads the state of this identity's consumer
 * |name|. Errors: RIFT_ERR_REMOTE ("unknown stream", "consumer does not
 * exist", "unknown opcode"); as rift_client_ack otherwise.
 */
RIFT_EXTERN int rift_client_consumer_get_info(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, rift_client_consumer_info *info, rift_error *err);

/**
 * rift_client_consumer_delete removes this identity's consumer |name| and
 * its durable state. Errors: as rift_client_consumer_get_info.
 */
RIFT_EXTERN int rift_client_consumer_delete(rift_client *c, const char *stream,
                                            size_t stream_len, const char *name,
                                            size_t name_len, rift_error *err);

/**
 * rift_client_fetch_wait is rift_client_fetch that, when nothing is
 * available, waits up to |max_wait_ms| (1..120,000) for a record and
 * answers as soon as one arrives; after the wait *|count| is 0. The call
 * allows the server max_wait_ms plus the client's operation timeout.
 *
 * Errors: those of rift_client_fetch; RIFT_ERR_INVALID_ARGUMENT ("fetch
 * wait must be 1..120000 ms"); RIFT_ERR_REMOTE "unknown opcode" from a
 * server without extensions.
 */
RIFT_EXTERN int rift_client_fetch_wait(rift_client *c, const char *stream,
                                       size_t stream_len, const char *name,
                                       size_t name_len, uint32_t limit,
                                       uint32_t max_wait_ms,
                                       rift_client_delivery *out, size_t *count,
                                       rift_error *err);

/** One consumer of a page of rift_client_consumer_list. */
typedef struct rift_client_consumer_entry {
    /** The client's own name of the consumer (NUL-terminated). */
    char name[97];
    size_t name_len;
    /** Its state, as rift_client_consumer_get_info reports it (created is
     * always false). */
    rift_client_consumer_info info;
} rift_client_consumer_entry;

/**
 * rift_client_consumer_list reads one page of this identity's consumers of
 * |stream| (feature "consumer-list"): those whose names sort (bytewise)
 * strictly after |after| (|after_len| 0 = from the start), at most |limit|
 * (1..256), sorted by name. On success *|entries| is an array of *|count|
 * entries owned by the caller, released with rift_client_consumer_list_free
 * (NULL when *|count| is 0), and *|more| says whether consumers after the
 * last one remain (ask again with |after| = its name). Consumers of other
 * identities, plugins or in-process code are never listed.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (string texts, "consumer list limit
 * must be 1..256"); RIFT_ERR_REMOTE ("unknown stream", "unknown opcode"
 * from a server without extensions); RIFT_ERR_PROTOCOL ("invalid consumer
 * list" and the decoding texts); as rift_client_ack otherwise.
 */
RIFT_EXTERN int rift_client_consumer_list(rift_client *c, const char *stream,
                                          size_t stream_len, const char *after,
                                          size_t after_len, uint32_t limit,
                                          rift_client_consumer_entry **entries,
                                          size_t *count, bool *more,
                                          rift_error *err);

/** rift_client_consumer_list_free releases a page of
 * rift_client_consumer_list (from any thread, also after rift_client_del).
 * NULL is a no-op. */
RIFT_EXTERN void
rift_client_consumer_list_free(rift_client_consumer_entry *entries);

/**
 * rift_client_nak gives up the delivery |sequence| of consumer |name|: the
 * server delivers it again to the first fetch |delay_ms| (0..3,600,000)
 * from now, 0 = at once (feature "consumer-nak").
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (string texts, "nak delay must be
 * 0..3600000 ms"); RIFT_ERR_REMOTE ("sequence is not pending
 * acknowledgement", "consumer does not exist", "unknown stream",
 * "unknown opcode" from a server without it); as rift_client_ack
 * otherwise.
 */
RIFT_EXTERN int rift_client_nak(rift_client *c, const char *stream,
                                size_t stream_len, const char *name,
                                size_t name_len, uint64_t sequence,
                                uint32_t delay_ms, rift_error *err);

/**
 * rift_client_term ends the delivery |sequence| for good: never delivered
 * again, counted in rift_client_consumer_info.terminated; OK once durable
 * (feature "consumer-term"). Errors: as rift_client_nak (no delay).
 */
RIFT_EXTERN int rift_client_term(rift_client *c, const char *stream,
                                 size_t stream_len, const char *name,
                                 size_t name_len, uint64_t sequence,
                                 rift_error *err);

/**
 * rift_client_in_progress restarts the ack wait of the delivery
 * |sequence| (feature "consumer-progress"). Errors: as rift_client_term.
 */
RIFT_EXTERN int rift_client_in_progress(rift_client *c, const char *stream,
                                        size_t stream_len, const char *name,
                                        size_t name_len, uint64_t sequence,
                                        rift_error *err);

/* ---- Asynchronous stream operations ---- */

/*
 * The calls below start a stream publish, an ack or a fetch and return
 * without waiting, so one thread keeps any number of them in flight on
 * one connection (each is its own QUIC stream, as in the blocking calls;
 * beyond the server's stream limit they wait, in order, inside the
 * client). The application bounds its own window: nothing here blocks.
 *
 * Completion. When a call returns 0 its callback runs exactly once, on
 * the client's internal thread — possibly before the call has returned —
 * with status 0 and the result, or a negative code and |err| (valid during
 * the callback only) holding the same errors, with the same texts, as the
 * blocking call would have returned. The operation's deadline
 * (op_timeout_ms) counts from the moment the client thread takes it up,
 * so waiting for stream credit is part of it. When the connection ends,
 * every operation still in flight completes with its reason
 * (RIFT_ERR_CONNECTION "server shutdown", "client closed", ...):
 * rift_client_del returns only after every callback has run.
 *
 * When a call fails (non-zero return) the callback is never called.
 * Failures at the call: the local checks of the blocking call (subject,
 * string and size texts); RIFT_ERR_CONNECTION when the client is closing
 * or its connection has ended; RIFT_ERR_NOMEM.
 *
 * Callbacks run on the thread that runs the connection: they must be
 * short and must not block — no blocking rift_* call (publish, flush,
 * subscribe, recv with a timeout, the blocking stream calls, close) may
 * be made from one. Starting further asynchronous operations from a
 * callback is allowed and is the cheapest way to keep a window full.
 * |user_data| is passed through untouched; the caller keeps it valid until
 * the callback has run. Payloads and strings are copied before the call
 * returns.
 */

/** Completion of rift_client_stream_publish_async: |stored| (NULL when
 * |status| is not 0) says where the record went. */
typedef void (*rift_client_stored_cb)(void *user_data, int status,
                                      const rift_stored *stored,
                                      const rift_error *err);

/** Completion of rift_client_ack_async. */
typedef void (*rift_client_done_cb)(void *user_data, int status,
                                    const rift_error *err);

/** Completion of rift_client_fetch_async: |count| deliveries in |d| (an
 * array valid during the callback only; 0 entries when |status| is not 0). The
 * callback owns one reference to every d[i].msg and must release each
 * with rift_msg_unref (now or later, from any thread). */
typedef void (*rift_client_fetched_cb)(void *user_data, int status,
                                       rift_client_delivery *d, size_t count,
                                       const rift_error *err);

/**
 * rift_client_stream_publish_async is rift_client_stream_publish without
 * the wait: |cb| reports STORED or the failure.
 *
 * Errors at the call: RIFT_ERR_INVALID_ARGUMENT ("string exceeds protocol
 * limit", "string must be UTF-8"); RIFT_ERR_PROTOCOL (local subject texts);
 * RIFT_ERR_PAYLOAD_TOO_LARGE ("payload exceeds 1 MiB transport limit",
 * "frame exceeds limit"); RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 * Errors in the callback: those of rift_client_stream_publish after its
 * local checks (RIFT_ERR_REMOTE, RIFT_ERR_PERMISSION, RIFT_ERR_PROTOCOL,
 * RIFT_ERR_TIMEOUT, RIFT_ERR_CLOSED, RIFT_ERR_CONNECTION, RIFT_ERR_NOMEM).
 */
RIFT_EXTERN int rift_client_stream_publish_async(
    rift_client *c, const char *stream, size_t stream_len, const char *subject,
    size_t subject_len, const char *reply, size_t reply_len,
    const uint8_t *payload, size_t payload_len, rift_client_stored_cb cb,
    void *user_data, rift_error *err);

/**
 * rift_client_ack_async is rift_client_ack without the wait: |cb|
 * reports the server's OK or the failure.
 *
 * Errors at the call: RIFT_ERR_INVALID_ARGUMENT (string texts);
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM. Errors in the callback: those of
 * rift_client_ack after its local checks (RIFT_ERR_REMOTE "sequence is not
 * pending acknowledgement", ...; RIFT_ERR_PERMISSION; RIFT_ERR_PROTOCOL;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM).
 */
RIFT_EXTERN int rift_client_ack_async(rift_client *c, const char *stream,
                                      size_t stream_len, const char *name,
                                      size_t name_len, uint64_t sequence,
                                      rift_client_done_cb cb, void *user_data,
                                      rift_error *err);

/**
 * rift_client_fetch_async is rift_client_fetch without the wait: |cb|
 * gets the deliveries once the server's OK arrived (on failure none).
 *
 * Errors at the call: RIFT_ERR_INVALID_ARGUMENT ("fetch limit must be
 * 1..256", string texts); RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM. Errors in
 * the callback: those of rift_client_fetch after its local checks.
 */
RIFT_EXTERN int rift_client_fetch_async(rift_client *c, const char *stream,
                                        size_t stream_len, const char *name,
                                        size_t name_len, uint32_t limit,
                                        rift_client_fetched_cb cb,
                                        void *user_data, rift_error *err);

/**
 * rift_client_nak_async, rift_client_term_async and
 * rift_client_in_progress_async are rift_client_nak, rift_client_term and
 * rift_client_in_progress without the wait: |cb| reports the server's OK
 * or the failure. Errors at the call: RIFT_ERR_INVALID_ARGUMENT (string
 * texts, the NAK delay); RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM. Errors in
 * the callback: those of the blocking call after its local checks.
 */
RIFT_EXTERN int rift_client_nak_async(rift_client *c, const char *stream,
                                      size_t stream_len, const char *name,
                                      size_t name_len, uint64_t sequence,
                                      uint32_t delay_ms, rift_client_done_cb cb,
                                      void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_term_async(rift_client *c, const char *stream,
                                       size_t stream_len, const char *name,
                                       size_t name_len, uint64_t sequence,
                                       rift_client_done_cb cb, void *user_data,
                                       rift_error *err);
RIFT_EXTERN int rift_client_in_progress_async(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, uint64_t sequence, rift_client_done_cb cb, void *user_data,
    rift_error *err);

/** Completion of rift_client_consumer_open_ext_async and
 * rift_client_consumer_get_info_async: |info| (NULL when |status| is not
 * 0) is valid during the callback only. */
typedef void (*rift_client_consumer_info_cb)(
    void *user_data, int status, const rift_client_consumer_info *info,
    const rift_error *err);

/** Completion of rift_client_consumer_list_async: |count| entries (NULL,
 * 0 and |more| false when |status| is not 0), valid during the callback
 * only (the client releases them afterwards). */
typedef void (*rift_client_consumer_listed_cb)(
    void *user_data, int status, const rift_client_consumer_entry *entries,
    size_t count, bool more, const rift_error *err);

/**
 * rift_client_consumer_open_ext_async, rift_client_consumer_get_info_async,
 * rift_client_consumer_delete_async, rift_client_fetch_wait_async and
 * rift_client_consumer_list_async are the blocking calls of the same names
 * without the wait: |cb| reports the answer or the failure. Errors at the
 * call: the blocking call's local checks (RIFT_ERR_INVALID_ARGUMENT with
 * its texts); RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM. Errors in the callback:
 * those of the blocking call after its local checks. The waiting fetch's
 * deadline is max_wait_ms plus op_timeout_ms, as for the blocking one; its
 * deliveries follow the rules of rift_client_fetched_cb.
 */
RIFT_EXTERN int rift_client_consumer_open_ext_async(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, const rift_consumer_config *config,
    rift_client_consumer_info_cb cb, void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_consumer_get_info_async(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, rift_client_consumer_info_cb cb, void *user_data,
    rift_error *err);
RIFT_EXTERN int rift_client_consumer_delete_async(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, rift_client_done_cb cb, void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_fetch_wait_async(
    rift_client *c, const char *stream, size_t stream_len, const char *name,
    size_t name_len, uint32_t limit, uint32_t max_wait_ms,
    rift_client_fetched_cb cb, void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_consumer_list_async(
    rift_client *c, const char *stream, size_t stream_len, const char *after,
    size_t after_len, uint32_t limit, rift_client_consumer_listed_cb cb,
    void *user_data, rift_error *err);

#ifdef __cplusplus
}
#endif

#include "rift/client_stream.h" /* the stream extensions */
#include "rift/client_push.h"   /* the push consumer */

#endif /* RIFT_CLIENT_H */
