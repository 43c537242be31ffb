/*
 * server.h — the Rift messaging server: serves a rift_broker (and optional
 * retained streams) to remote clients over QUIC with protocol v1 (ALPN
 * "rift-messaging/1"), authenticating them by token and enforcing each
 * identity's access control.
 *
 * Behaviour follows docs/protocol-v1.md §2 (wire protocol, deadlines,
 * per-opcode validation order and texts), §3 (access control) and §9
 * exactly; see docs/server.md for how it is built.
 *
 * Threading: a started server runs its own thread, which owns the QUIC
 * endpoint and every connection (one event loop; ngtcp2 connections are
 * single-threaded). Every function here may be called from any thread
 * other than the server's own; calls on one server are serialized
 * internally. The broker and the streams are thread-safe objects shared
 * with the rest of the process: the server publishes into the broker from
 * its thread, and durable-stream writes complete on the streams' writer
 * threads (fsync never runs on the server thread).
 *
 * Lifetime: the broker and every stream given in the settings must
 * outlive the server (close them after rift_server_del).
 */
#ifndef RIFT_SERVER_H
#define RIFT_SERVER_H

#include "rift/broker.h"
#include "rift/rift.h"
#include "rift/stream.h"

#include <stdbool.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rift_server rift_server;
/* A retained stream (include/rift/stream.h). */
typedef struct rift_stream rift_stream;

/* ---- Settings ---- */

/**
 * An authenticated principal (§3): the token a client presents in AUTH,
 * the subject patterns it may publish to and subscribe to, and whether it
 * may use rift.control. Strings are copied by rift_server_new; the pattern
 * lists hold NUL-terminated strings.
 */
typedef struct rift_server_identity {
    /** 1..96 bytes of ASCII letters, digits, '_', '-', '.'; unique. */
    const char *name;
    size_t name_len;
    /** 1..4,096 bytes; unique. Only its HMAC tag is kept. */
    const char *token;
    size_t token_len;
    const char *const *publish;
    size_t publish_count;
    const char *const *subscribe;
    size_t subscribe_count;
    bool control;
} rift_server_identity;

/** A named retained stream served through opcodes 10–15. */
typedef struct rift_server_stream {
    /** 1..96 bytes of ASCII letters, digits, '_', '-', '.'; unique. */
    const char *name;
    size_t name_len;
    rift_stream *stream;
} rift_server_stream;

/**
 * Streams found by name at each operation, besides the fixed table (riftd:
 * the NATS Streaming channels, created and removed at runtime). |acquire|
 * returns the stream |name| (NULL when there is none) and a token; the
 * stream stays valid until |release| gets the token back, which the server
 * does when the operation ends (|appended|: a STREAM_PUBLISH stored a
 * record). Both run on the server thread and must not block for long.
 */
typedef struct rift_server_stream_source {
    rift_stream *(*acquire)(void *ud, const char *name, size_t len,
                            void **token);
    void (*release)(void *ud, void *token, bool appended);
    void *ud;
} rift_server_stream_source;

/** What a client asks of the host's stream administration
 * (docs/protocol-v1.md E.3, STREAM_CREATE to STREAM_DELETE). */
typedef enum rift_server_stream_verb {
    RIFT_SERVER_STREAM_CREATE = 1,
    RIFT_SERVER_STREAM_UPDATE,
    RIFT_SERVER_STREAM_PURGE,
    RIFT_SERVER_STREAM_DELETE,
} rift_server_stream_verb;

/**
 * One stream administration request, valid during the call. The server
 * has decoded it, checked the name rule, the subject patterns and that
 * the identity may subscribe to every one of them; the host checks its
 * own grants. |subjects| (NUL-terminated patterns) and the limits are
 * set for CREATE and UPDATE (UPDATE with no subjects keeps them); a limit
 * of 0 means the default (|max_age_ms| 0: no age limit).
 */
typedef struct rift_server_stream_request {
    rift_server_stream_verb verb;
    const char *identity; /* the authenticated identity's name */
    const char *name;
    const char *const *subjects;
    size_t subjects_count;
    bool file; /* file storage (else memory) */
    uint64_t max_messages;
    uint64_t max_bytes;
    uint64_t max_age_ms;
    uint64_t max_payload_bytes;
    uint32_t max_consumers;
    /** PURGE of a stream of the stream backend: the host only grants or
     * refuses it (0 or the error), the backend purges. */
    bool backend;
} rift_server_stream_request;

/**
 * Streams made at run time (riftd: the `streams` grant). |call| runs on
 * the server thread and returns 0 once the change is in effect (a created
 * stream is then found through the stream source), or an error whose
 * text goes to the client (RIFT_ERR_PERMISSION as code 1): it must carry
 * no server path. Whatever it blocks on delays the server's other
 * connections. All NULL = the opcodes answer "stream administration not
 * offered" and EXT_INFO does not list them.
 */
typedef struct rift_server_stream_admin {
    int (*call)(void *ud, const rift_server_stream_request *req,
                rift_error *err);
    void *ud;
} rift_server_stream_admin;

/** The completion of a backend operation: |status| 0 or a RIFT_ERR_*
 * code with its text in |err| (valid during the call). */
typedef void (*rift_server_backend_done)(void *arg, int status,
                                         const rift_error *err);

/**
 * A stream backend: streams the server holds no rift_stream for (riftd's
 * replicated streams on a NATS JetStream backbone, docs/cluster.md).
 * STREAM_PUBLISH, CONSUMER_OPEN (and CONSUMER_OPEN_EXT), CONSUMER_FETCH
 * (and CONSUMER_FETCH_WAIT, |wait_ms| > 0), ACK and, when |settle| is set,
 * CONSUMER_NAK, CONSUMER_TERM and CONSUMER_PROGRESS (CONSUMER_DELETE,
 * CONSUMER_INFO_GET, CONSUMER_LIST, STREAM_INFO_GET and STREAM_PURGE when
 * their function is set) on a name |serves| claims go to it after the
 * same validation and permission checks as a store stream; the other
 * stream opcodes answer "unknown stream" for it. Consumer names come
 * scoped (§3.5), with the client's own name as |label|.
 *
 * Threading: every function runs on the server thread and must return at
 * once. An operation returns 0 when submitted: |done| then runs exactly
 * once, on any thread, after the backend filled the out-parameter; or a
 * RIFT_ERR_* code with |err| set, and |done| does not run. Arguments are
 * borrowed for the call only (the backend copies what it keeps).
 *
 * |fetch| fills |out| (items and count; priv_ stays NULL) and *|priv|,
 * which owns the records until the server hands it to |batch_free|.
 * Errors are the store's codes and texts where they have one
 * (RIFT_ERR_STREAM_NOT_MATCHED, RIFT_ERR_PAYLOAD_TOO_LARGE,
 * RIFT_ERR_CONSUMER_NOT_FOUND, RIFT_ERR_INVALID_ACK, RIFT_ERR_INVALID_CONFIG
 * for a reopen with other settings), else RIFT_ERR_STORAGE with the
 * backend's reason.
 */
/** One consumer of a backend stream: CONSUMER_OPEN_EXT's and
 * CONSUMER_INFO_GET's answer, one CONSUMER_LIST entry. |info|'s name and
 * config.filter point into the fields below. */
typedef struct rift_server_backend_consumer {
    rift_consumer_info info;
    char name[128]; /* the stored (scoped) name */
    char label[97]; /* the client's own name; "" when not recorded */
    size_t label_len;
    char filter[1025];
    bool created; /* CONSUMER_OPEN_EXT: this open made the consumer */
} rift_server_backend_consumer;

/** A backend stream's STREAM_INFO_EXT: its spec and its state. */
typedef struct rift_server_backend_stream_info {
    char subjects[4097]; /* space-separated patterns */
    size_t subjects_len;
    uint64_t max_messages, max_bytes, max_age_ms, max_payload_bytes;
    uint32_t max_consumers;
    uint64_t messages, bytes, first_sequence, last_sequence;
    uint32_t consumers;
} rift_server_backend_stream_info;

/* rift_server_stream_backend.consumer_open's |flags|. */
#define RIFT_SERVER_BACKEND_OPEN_EXT      1u
#define RIFT_SERVER_BACKEND_OPEN_EXISTING 2u

typedef struct rift_server_stream_backend {
    bool (*serves)(void *ud, const char *stream, size_t len);
    int (*publish)(void *ud, const char *stream, size_t stream_len,
                   const char *subject, size_t subject_len, const char *reply,
                   size_t reply_len, const uint8_t *payload, size_t payload_len,
                   rift_stored *out, rift_server_backend_done done, void *arg,
                   rift_error *err);
    /* |flags|: RIFT_SERVER_BACKEND_OPEN_EXT for CONSUMER_OPEN_EXT (a
     * reopen ignores the start and names the differing setting), else
     * CONSUMER_OPEN; RIFT_SERVER_BACKEND_OPEN_EXISTING: the identity is
     * at its consumer quota, so only an existing consumer may be opened
     * (a missing one fails with RIFT_ERR_CONSUMER_NOT_FOUND and is not
     * made). |out| is filled either way (the server counts a consumer in
     * the quota by its |created|). */
    int (*consumer_open)(void *ud, const char *stream, size_t stream_len,
                         const char *consumer, size_t consumer_len,
                         const char *label, size_t label_len,
                         const rift_consumer_config *config, unsigned flags,
                         rift_server_backend_consumer *out,
                         rift_server_backend_done done, void *arg,
                         rift_error *err);
    /* |wait_ms| > 0 (CONSUMER_FETCH_WAIT): may wait that long for a first
     * record. */
    int (*fetch)(void *ud, const char *stream, size_t stream_len,
                 const char *consumer, size_t consumer_len, size_t limit,
                 uint64_t max_bytes, uint32_t wait_ms, rift_batch *out,
                 void **priv, rift_server_backend_done done, void *arg,
                 rift_error *err);
    void (*batch_free)(void *ud, void *priv);
    /* The client of the fetch submitted with |arg| is gone (its stream
     * or connection closed before the answer): a wait may end now. Its
     * |done| is still called, once, as always. Called on the server's
     * loop thread; NULL: a wait runs its full length. */
    void (*abandon)(void *ud, void *arg);
    int (*ack)(void *ud, const char *stream, size_t stream_len,
               const char *consumer, size_t consumer_len, uint64_t sequence,
               rift_server_backend_done done, void *arg, rift_error *err);
    /* NAK (|opcode| 23, with |delay_ms|), TERM (24) or PROGRESS (25) of
     * one delivery (docs/protocol-v1.md E.3); NULL: those answer
     * "unknown stream". */
    int (*settle)(void *ud, const char *stream, size_t stream_len,
                  const char *consumer, size_t consumer_len, uint8_t opcode,
                  uint64_t sequence, uint64_t delay_ms,
                  rift_server_backend_done done, void *arg, rift_error *err);
    /* CONSUMER_DELETE; NULL: it answers "unknown stream". */
    int (*consumer_delete)(void *ud, const char *stream, size_t stream_len,
                           const char *consumer, size_t consumer_len,
                           rift_server_backend_done done, void *arg,
                           rift_error *err);
    /* CONSUMER_INFO_GET; NULL: it answers "unknown stream". */
    int (*consumer_info)(void *ud, const char *stream, size_t stream_len,
                         const char *consumer, size_t consumer_len,
                         rift_server_backend_consumer *out,
                         rift_server_backend_done done, void *arg,
                         rift_error *err);
    /* CONSUMER_LIST: every consumer of the stream in *|out| (*|count|
     * of them, freed by |batch_free|); the server keeps the identity's
     * own and pages them. NULL: it answers "unknown stream". */
    int (*consumer_list)(void *ud, const char *stream, size_t stream_len,
                         rift_server_backend_consumer **out, size_t *count,
                         rift_server_backend_done done, void *arg,
                         rift_error *err);
    /* STREAM_INFO_GET; NULL: it answers "unknown stream". The spec
     * (subjects, limits) of |out| is filled before it returns (so the
     * server can hide a failure from an identity that may not read the
     * stream), the state by the time |done| runs. */
    int (*stream_info)(void *ud, const char *stream, size_t stream_len,
                       rift_server_backend_stream_info *out,
                       rift_server_backend_done done, void *arg,
                       rift_error *err);
    /* STREAM_PURGE, once the stream administration granted it; the
     * sequences carry on. NULL: as for any configured stream. */
    int (*purge)(void *ud, const char *stream, size_t stream_len,
                 uint64_t *purged, rift_server_backend_done done, void *arg,
                 rift_error *err);
    void *ud;
} rift_server_stream_backend;

typedef struct rift_server_settings {
    /** PEM certificate chain and unencrypted PEM private key. */
    const char *cert_file;
    const char *key_file;
    /** Identities; at least zero (a server without any refuses every
     * client with "authentication failed"). */
    const rift_server_identity *identities;
    size_t identity_count;
    /** Concurrent connections; more are refused at the QUIC level.
     * Default 1,024. */
    size_t max_connections;
    /** Concurrent streams per connection (1..65,535). Default 128. */
    size_t max_streams_per_connection;
    /** QUIC handshake, authentication and first-frame deadline, ms.
     * Default 5,000. */
    uint64_t handshake_timeout_ms;
    /** Deadline of a started frame and of every write, ms. Default
     * 30,000. */
    uint64_t io_timeout_ms;
    /** Named retained streams; none by default. */
    const rift_server_stream *streams;
    size_t stream_count;
    /** Asked when a name is not in |streams| (which win); all NULL =
     * none. Must outlive the server. */
    rift_server_stream_source stream_source;
    /** Stream administration at run time; all NULL = none. Must outlive
     * the server. */
    rift_server_stream_admin stream_admin;
    /** Streams of a backend, asked before |streams|; serves NULL = none.
     * Must outlive the server. */
    rift_server_stream_backend stream_backend;
    /** Optional 32 bytes keying stateless resets and Retry tokens (give
     * a restarted server the same secret); NULL = a random per-process
     * secret. */
    const uint8_t *static_secret;
    /** Validate every client address with a QUIC Retry before a
     * connection is created (RFC 9000 §8.1): one more round trip per
     * connection, in exchange for spoofed Initials costing no state.
     * Default off (quinn's default, as the original). */
    bool retry;
    /** Per-identity accounting of connections, subscriptions and
     * consumers (src/subject/quota.h), shared with other front ends;
     * identities are matched by name. NULL = none. Must outlive the
     * server. */
    struct rift_quota *quota;
    /** Allocator; NULL for malloc. Must outlive the server. */
    const rift_mem *mem;
} rift_server_settings;

/** rift_server_settings_default fills |s| with the defaults above (no
 * TLS files, no identities, no streams). */
RIFT_EXTERN void rift_server_settings_default(rift_server_settings *s);

/* ---- Lifecycle ---- */

/**
 * rift_server_new validates |settings| and creates a stopped server over
 * |broker|, owned by the caller (rift_server_del). Everything in |settings| is
 * copied except the broker and the streams, which are borrowed for the server's
 * lifetime. Validation (the original's AuthConfig, §3.7), in order: "invalid
 * QUIC resource limits" — max_connections 0, max_streams_per_connection 0 or
 * above 65,535, a zero timeout; "identity names and tokens must be nonempty and
 * unique"; "invalid subject length" / "invalid subject pattern" for a grant;
 *   "invalid stream name" — a stream name failing the name rule, a
 *     duplicate name, or a NULL stream.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (the texts above, or a NULL broker or
 * missing cert/key file name); RIFT_ERR_NOMEM; RIFT_ERR_TLS.
 */
RIFT_EXTERN int rift_server_new(rift_server **psrv, rift_broker *broker,
                                const rift_server_settings *settings,
                                rift_error *err);

/**
 * rift_server_start loads the certificate and key, binds a UDP socket to
 * |address| ("IPv4:PORT" or "[IPv6]:PORT"; port 0 picks a free port, see
 * rift_server_address) and starts the server thread. A stopped server may
 * be started again.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("invalid listen address: ...", or
 * "server already running"); RIFT_ERR_TLS ("cannot load certificate
 * ..."); RIFT_ERR_IO ("cannot bind ..."); RIFT_ERR_NOMEM; -errno from
 * thread creation.
 */
RIFT_EXTERN int rift_server_start(rift_server *srv, const char *address,
                                  rift_error *err);

/**
 * rift_server_local_addr copies the bound address of a started server into
 * |ss| and its length into |len| (both caller-owned).
 *
 * Errors: RIFT_ERR_CLOSED ("server is not running").
 */
RIFT_EXTERN int rift_server_local_addr(rift_server *srv,
                                       struct sockaddr_storage *ss,
                                       socklen_t *len, rift_error *err);

/**
 * rift_server_address writes the bound address as "IP:PORT" ("[IP]:PORT"
 * for IPv6) into |buf| (caller-owned, |cap| bytes, NUL-terminated; 64
 * bytes are always enough).
 *
 * Errors: RIFT_ERR_CLOSED ("server is not running");
 * RIFT_ERR_INVALID_ARGUMENT ("address buffer too small").
 */
RIFT_EXTERN int rift_server_address(rift_server *srv, char *buf, size_t cap,
                                    rift_error *err);

/** rift_server_is_running is true between a successful start and stop,
 * unless the server thread ended on its own (an unrecoverable loop
 * failure): a host's watchdog polls it. */
RIFT_EXTERN bool rift_server_is_running(rift_server *srv);

/**
 * rift_server_stop shuts the server down: new connections are refused,
 * every connection is closed with application code 0 and reason "server
 * shutdown", every remote subscription is dropped, and the call waits up
 * to about 2 s for the closes to go out (and for durable-stream writes
 * already submitted to complete) before it stops the thread and closes the
 * socket. A no-op when not running.
 */
RIFT_EXTERN void rift_server_stop(rift_server *srv);

/** rift_server_del stops the server if needed and frees it. NULL is a
 * no-op. */
RIFT_EXTERN void rift_server_del(rift_server *srv);

/**
 * rift_server_flush writes to remote subscribers what the broker has
 * already queued for them and waits until their peers acknowledged it, at
 * most |timeout_ns| (negative: without limit). rift_server_stop closes
 * connections at once, dropping what is unsent: a host that publishes a
 * last message before stopping (riftd's {"state":"draining"} event) calls
 * this in between.
 *
 * Errors: RIFT_ERR_TIMEOUT ("server flush timed out": a subscriber that
 * does not read, a vanished peer); RIFT_ERR_CLOSED ("server is not
 * running"); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_server_flush(rift_server *srv, int64_t timeout_ns,
                                  rift_error *err);

/**
 * rift_server_requester writes into |name| (caller-owned, |cap| >= 97;
 * NUL-terminated) the identity name of the authenticated connection whose
 * REQUEST (opcode 9) is waiting for its reply on the inbox subject |inbox|
 * (the reply subject the responder received). A responder inside the host
 * uses it to act on behalf of the remote requester (riftd's control
 * commands on durable consumers, whose names are scoped by identity,
 * §3.5).
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("no pending request uses this inbox":
 * it came from elsewhere, or already ended; "identity name buffer too
 * small"); RIFT_ERR_CLOSED ("server is not running"); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_server_requester(rift_server *srv, const char *inbox,
                                      size_t len, char *name, size_t cap,
                                      rift_error *err);

/* ---- Introspection ---- */

/** Live authenticated connections of one identity. */
typedef struct rift_server_identity_stats {
    /** The identity's name (NUL-terminated), owned by the stats. */
    const char *name;
    uint64_t connections;
} rift_server_identity_stats;

typedef struct rift_server_stats {
    /** Live QUIC connections, authenticated or not. */
    uint64_t connections;
    /** Live authenticated connections. */
    uint64_t authenticated;
    /** Totals since the server was created: completed handshakes,
     * connections refused (over max_connections or shutting down), and
     * failed authentications. */
    uint64_t connections_accepted;
    uint64_t connections_refused;
    uint64_t auth_failures;
    /** Open operation streams (auth streams not included). */
    uint64_t streams;
    /** Live remote subscriptions (SUBSCRIBE streams). */
    uint64_t subscriptions;
    /** Publications accepted from clients (PUBLISH, PUBLISH_ACK, REQUEST,
     * STREAM_PUBLISH) and their payload bytes. */
    uint64_t msgs_in;
    uint64_t bytes_in;
    /** MESSAGE and DELIVERY frames written and their payload bytes. */
    uint64_t msgs_out;
    uint64_t bytes_out;
    /** Remote subscriptions disconnected as slow consumers. */
    uint64_t slow_consumers;
    /** Bytes the server holds for its clients: written to their streams
     * and not yet acknowledged, plus records fetches have loaded and not
     * yet written, over all connections; and the most one connection
     * has held at once since the server was created (bounded near the
     * protocol's 8,912,896-byte send window, docs/server.md). */
    uint64_t queued_bytes;
    uint64_t conn_queued_peak;
    /** One entry per configured identity, in configuration order. */
    size_t identity_count;
    rift_server_identity_stats *identities;
    const rift_mem *priv_mem_;
} rift_server_stats;

/**
 * rift_server_get_stats fills |st| with a consistent snapshot (taken on
 * the server thread while it runs). Release it with
 * rift_server_stats_free.
 *
 * Errors: RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_server_get_stats(rift_server *srv, rift_server_stats *st,
                                      rift_error *err);

/** rift_server_stats_free releases what rift_server_get_stats allocated
 * and zeroes |st|. */
RIFT_EXTERN void rift_server_stats_free(rift_server_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_SERVER_H */
