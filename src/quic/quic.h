/*
 * quic.h — rift's internal QUIC transport API (quic layer), used by the
 * protocol server (src/server) and client (src/client). It hides ngtcp2
 * and GnuTLS: endpoints (one UDP socket each), connections and
 * bidirectional streams, with the Rift v1 transport profile
 * (docs/protocol-v1.md §2.1): TLS 1.3 only, exact ALPN "rift-messaging/1", no
 * 0-RTT, no session tickets, no unidirectional streams, no datagrams.
 *
 * Model
 *   - A server endpoint accepts connections; a client endpoint owns exactly
 *     one connection to one server.
 *   - Everything runs on one rift_loop thread. No function here may be
 *     called from another thread; use rift_loop_post to get there.
 *   - Callbacks may call any function of this API. Operations never call
 *     back synchronously: writes, shutdowns, credit and closes are queued
 *     and carried out when the endpoint next writes (later in the same
 *     loop iteration).
 *   - Flow control is manual: received bytes are credited back to the peer
 *     only through rift_quic_stream_consumed (unless settings.auto_credit),
 *     which is how a slow consumer pushes back on its peer.
 *   - Every stream handle reported by stream_open or returned by
 *     rift_quic_conn_open_stream gets exactly one stream_close callback;
 *     it is invalid after that callback returns. A connection handle is
 *     invalid after conn_closed returns (server), or after
 *     rift_quic_endpoint_del (client).
 *
 * STOP_SENDING: ngtcp2 1.11 has no callback for a received STOP_SENDING (it
 * answers with RESET_STREAM by itself). The stream's write side is then
 * dead: the next attempt to send on it fails inside ngtcp2, which this
 * layer reports as stream_stopped (and drops the unsent data). The peer's
 * code is not known at that point; it arrives with stream_close. A stream
 * with nothing left to send learns about it only when it next writes (as
 * with quinn, where a stop surfaces as the next write's error), unless
 * the app asked for rift_quic_stream_watch_stop: such a stream is probed
 * after every batch of packets the connection reads, so the report comes
 * in the same loop iteration as the STOP_SENDING.
 */
#ifndef RIFT_QUIC_QUIC_H
#define RIFT_QUIC_QUIC_H

#include "net/loop.h"
#include "rift/rift.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct rift_quic_endpoint rift_quic_endpoint;
typedef struct rift_quic_conn rift_quic_conn;
typedef struct rift_quic_stream rift_quic_stream;

/* Transport error codes of RFC 9000 used in close reports. */
#define RIFT_QUIC_NO_ERROR           0x0
#define RIFT_QUIC_CONNECTION_REFUSED 0x2
#define RIFT_QUIC_CRYPTO_ERROR       0x100 /* + TLS alert */

/* ---- Settings ---- */

typedef struct rift_quic_settings {
    /** Idle timeout, ns (both sides advertise it). Default 60 s. */
    uint64_t idle_timeout;
    /** PING after this much idleness, ns; 0 disables. Default 10 s. */
    uint64_t keep_alive;
    /** Handshake deadline, ns. Default 5 s. */
    uint64_t handshake_timeout;
    /** Bidirectional streams the PEER may open concurrently: server
     * max_streams_per_connection (default 128), client 0. */
    uint64_t max_streams_bidi;
    /** Receive windows. Defaults 2,228,224 and 8,912,896 bytes. */
    uint64_t stream_window;
    uint64_t conn_window;
    /** Largest UDP payload we send, bytes: 1,452 .. 65,000 (others are
     * clamped). Default 16,384. Packets start at 1,200 bytes; path MTU
     * discovery then probes 1,452, 8,952 (jumbo frames) and 16,384 bytes,
     * those not above this limit nor the peer's max_udp_payload_size, so
     * a path that carries more (loopback, whose MTU is 64 KiB; jumbo-frame
     * networks) gets fewer, larger packets: per-packet costs (AEAD calls,
     * header protection, ngtcp2's packet assembly, one skb each in the
     * kernel) are most of a small-message sender's time. On a 1,500-byte
     * path the bigger probes fail (EMSGSIZE or loss) and packets stay at
     * 1,452. 1,452 is quinn 0.11's default ceiling (the reference's). */
    size_t max_udp_payload;
    /** Server: connections beyond this are refused with CONNECTION_CLOSE
     * (CONNECTION_REFUSED). Default 1,024. */
    size_t max_connections;
    /** Server: require address validation with a Retry. Default off. */
    bool retry;
    /** UDP offloads (used when the kernel has them). Default on. */
    bool gso;
    bool gro;
    /** Credit received bytes back at once instead of waiting for
     * rift_quic_stream_consumed. Default off. */
    bool auto_credit;
    /** ACK hold, ns; 0 disables. Default 2 ms. A lone packet carrying
     * stream data usually asks for an answer (a request, a reply, a
     * PING); its ACK waits up to this long for that answer to carry it
     * instead of leaving in a packet of its own, which would cost both
     * sides a send and a wake-up. Several data packets in a row are
     * acknowledged at once, as usual. (Must stay well below the 25 ms
     * max_ack_delay the peer assumes.) */
    uint64_t ack_hold;
    /** Answer hold, ns; 0 disables. Default 15 ms. The ACK hold of a
     * lone data packet the application promised to answer later
     * (rift_quic_conn_answer_later): a durable write answers after its
     * fdatasync, often more than ack_hold later, and a bare ACK in
     * between costs both sides a packet and a wake-up. Must stay below
     * the 25 ms max_ack_delay the peer assumes, with room for a late
     * timer. */
    uint64_t answer_hold;

    /** Server: certificate chain and private key, PEM files. */
    const char *cert_file;
    const char *key_file;
    /** Client: trusted CA certificates (PEM; no system roots) and the name
     * (DNS name or IP literal) the server certificate must carry. */
    const char *ca_file;
    const char *server_name;

    /** 32 bytes keying stateless reset tokens and Retry tokens; NULL uses
     * a random secret created once per process. Give the same secret to a
     * restarted server so it can reset its predecessor's connections. */
    const uint8_t *static_secret;

    /** Testing only. ALPN offered by a client (NULL: "rift-messaging/1");
     * no_alpn offers none. */
    const char *alpn;
    bool no_alpn;
    /** Log ngtcp2's debug output to stderr. */
    bool debug;

    const rift_mem *mem;
} rift_quic_settings;

#define RIFT_QUIC_SECRET_LEN 32

/** rift_quic_settings_default fills |s| with the server defaults above
 * (clients set max_streams_bidi = 0 themselves, or use the _client one). */
void rift_quic_settings_default(rift_quic_settings *s);
/** Client defaults: as above with max_streams_bidi = 0. */
void rift_quic_settings_default_client(rift_quic_settings *s);

/* ---- Close reports ---- */

typedef enum rift_quic_close_kind {
    /** We closed with an application code (rift_quic_conn_close). */
    RIFT_QUIC_CLOSE_LOCAL_APP = 1,
    /** The peer sent an application CONNECTION_CLOSE. */
    RIFT_QUIC_CLOSE_PEER_APP,
    /** We closed for a transport or TLS error (code, alert in detail). */
    RIFT_QUIC_CLOSE_LOCAL_TRANSPORT,
    /** The peer sent a transport CONNECTION_CLOSE. */
    RIFT_QUIC_CLOSE_PEER_TRANSPORT,
    /** The idle timeout passed (silent). */
    RIFT_QUIC_CLOSE_IDLE,
    /** The handshake did not finish in time (silent). */
    RIFT_QUIC_CLOSE_HANDSHAKE_TIMEOUT,
    /** A valid stateless reset arrived. */
    RIFT_QUIC_CLOSE_STATELESS_RESET,
    /** The network said no (ICMP unreachable during the handshake). */
    RIFT_QUIC_CLOSE_NETWORK,
} rift_quic_close_kind;

typedef struct rift_quic_close_info {
    rift_quic_close_kind kind;
    /** Application or transport error code (0x100 + alert for TLS). */
    uint64_t code;
    /** Reason phrase (bytes, not NUL-terminated), valid during the
     * callback. */
    const uint8_t *reason;
    size_t reason_len;
    /** RIFT_ERR_TLS for certificate/ALPN/TLS failures, RIFT_ERR_TIMEOUT
     * for idle and handshake timeouts, otherwise RIFT_ERR_CONNECTION. */
    int error;
    /** Human-readable explanation, e.g. "certificate verification failed:
     * The certificate issuer is unknown." or "peer closed: TLS alert 120".
     */
    char detail[256];
} rift_quic_close_info;

/* ---- Callbacks ---- */

typedef struct rift_quic_callbacks {
    /** Handshake complete. Server: a new connection; set its user data
     * with rift_quic_conn_set_user_data. Connections that fail before this
     * are never reported. Client: the connection is usable. */
    void (*handshake_done)(rift_quic_conn *conn, void *ep_ud);
    /** The connection is over (every stream_close came first). */
    void (*conn_closed)(rift_quic_conn *conn, const rift_quic_close_info *ci,
                        void *conn_ud);
    /** The peer opened a stream (server side). Set its user data with
     * rift_quic_stream_set_user_data. */
    void (*stream_open)(rift_quic_stream *s, void *conn_ud);
    /** In-order stream bytes; |fin| marks the end of the peer's side.
     * |data| is valid during the call only (NULL when |len| is 0). */
    void (*stream_data)(rift_quic_stream *s, const uint8_t *data, size_t len,
                        bool fin, void *stream_ud);
    /** The peer reset its side (RESET_STREAM) with |code|. */
    void (*stream_reset)(rift_quic_stream *s, uint64_t code, void *stream_ud);
    /** The peer stopped our side (STOP_SENDING, see the note above); the
     * unsent data was dropped. */
    void (*stream_stopped)(rift_quic_stream *s, void *stream_ud);
    /** Sent data was acknowledged; |unacked| bytes remain queued. */
    void (*stream_acked)(rift_quic_stream *s, uint64_t unacked,
                         void *stream_ud);
    /** The stream is gone. |code_set|: it ended with an application error
     * code (a reset or stop from either side, the first one wins); false
     * after a clean finish or when the connection ended. */
    void (*stream_close)(rift_quic_stream *s, bool code_set, uint64_t code,
                         void *stream_ud);
    /** Client: the server allowed more streams; retry opening. */
    void (*streams_available)(rift_quic_conn *conn, void *conn_ud);
    /** Optional: a batch of received datagrams has been processed and the
     * endpoint is about to write (ACKs included). Work the application
     * queues here, such as deliveries prompted by what the batch carried,
     * goes out in the same flush. |ep_ud| is the endpoint's user data. */
    void (*rx_batch_done)(void *ep_ud);
} rift_quic_callbacks;

/* ---- Endpoints ---- */

/**
 * rift_quic_server_new binds a server endpoint to |addr| (port 0 picks a
 * free port; see rift_quic_endpoint_local_addr) on |loop|, loading the
 * certificate chain and key named in |settings|. |settings| and |cbs| are
 * copied; the file names are used during the call only. |ud| is passed to
 * handshake_done.
 *
 * Errors: RIFT_ERR_TLS ("cannot load certificate ...: ..."); RIFT_ERR_IO
 * ("cannot bind ..."); RIFT_ERR_INVALID_ARGUMENT; RIFT_ERR_NOMEM.
 */
int rift_quic_server_new(rift_quic_endpoint **pep, rift_loop *loop,
                         const struct sockaddr *addr, socklen_t addrlen,
                         const rift_quic_settings *settings,
                         const rift_quic_callbacks *cbs, void *ud,
                         rift_error *err);

/**
 * rift_quic_client_new starts a connection to |addr| from a socket bound
 * to the unspecified address of the same family (port 0). The handshake
 * runs on |loop|; handshake_done or conn_closed reports how it went. The
 * server certificate is verified against settings.ca_file and
 * settings.server_name. |ud| becomes the connection's user data.
 *
 * Errors: RIFT_ERR_TLS ("cannot load CA file ..."); RIFT_ERR_IO;
 * RIFT_ERR_INVALID_ARGUMENT ("server name required"); RIFT_ERR_NOMEM.
 */
int rift_quic_client_new(rift_quic_endpoint **pep, rift_loop *loop,
                         const struct sockaddr *addr, socklen_t addrlen,
                         const rift_quic_settings *settings,
                         const rift_quic_callbacks *cbs, void *ud,
                         rift_error *err);

/** rift_quic_client_conn returns the connection of a client endpoint. */
rift_quic_conn *rift_quic_client_conn(rift_quic_endpoint *ep);

/** rift_quic_endpoint_local_addr copies the bound address. */
void rift_quic_endpoint_local_addr(const rift_quic_endpoint *ep,
                                   struct sockaddr_storage *ss, socklen_t *len);

/**
 * rift_quic_endpoint_shutdown stops accepting (new connections are refused)
 * and closes every connection with |code| and |reason| (for instance 0,
 * "server shutdown"); their conn_closed callbacks follow as usual.
 */
void rift_quic_endpoint_shutdown(rift_quic_endpoint *ep, uint64_t code,
                                 const char *reason, size_t reason_len);

/**
 * rift_quic_endpoint_del sends a last CONNECTION_CLOSE (code 0, "server
 * shutdown" / "client closed") on every connection still open, frees
 * everything and closes the socket. No callbacks run, except the release
 * functions of queued chunks. NULL is a no-op.
 */
void rift_quic_endpoint_del(rift_quic_endpoint *ep);

/**
 * rift_quic_endpoint_abort frees the endpoint like rift_quic_endpoint_del
 * but sends nothing: peers find out by timeout or stateless reset, as after
 * a crash. NULL is a no-op.
 */
void rift_quic_endpoint_abort(rift_quic_endpoint *ep);

typedef struct rift_quic_endpoint_stats {
    uint64_t conns_accepted; /* server: handshakes completed */
    uint64_t conns_refused;  /* over max_connections or shutting down */
    uint64_t conns_failed;   /* handshakes that failed or timed out */
    uint64_t retries_sent;
    uint64_t resets_sent; /* stateless resets */
    uint64_t version_negotiations;
    uint64_t rx_datagrams;
    uint64_t tx_datagrams;
    uint64_t tx_calls;
    uint64_t tx_eagain;
    uint64_t tx_dropped; /* send errors and queue overflow */
    bool gso;
    bool gro;
} rift_quic_endpoint_stats;

void rift_quic_endpoint_get_stats(const rift_quic_endpoint *ep,
                                  rift_quic_endpoint_stats *st);

/** Live connections (handshaking or established) of an endpoint. */
size_t rift_quic_endpoint_conn_count(const rift_quic_endpoint *ep);

/* ---- Connections ---- */

void rift_quic_conn_set_user_data(rift_quic_conn *conn, void *ud);
void *rift_quic_conn_get_user_data(const rift_quic_conn *conn);

/** The peer's address as last seen. */
void rift_quic_conn_peer_addr(const rift_quic_conn *conn,
                              struct sockaddr_storage *ss, socklen_t *len);

/** True once the handshake completed and until the connection ends. */
bool rift_quic_conn_is_established(const rift_quic_conn *conn);

/**
 * rift_quic_conn_close closes the connection with application error |code|
 * and |reason| (at most 1,024 bytes are sent). The CONNECTION_CLOSE is
 * written on the next flush, kept for the closing period (3×PTO) and sent
 * again to packets that still arrive; stream_close and conn_closed
 * callbacks follow. A no-op when the connection is already closing.
 */
void rift_quic_conn_close(rift_quic_conn *conn, uint64_t code,
                          const char *reason, size_t reason_len);

/**
 * rift_quic_conn_open_stream opens a bidirectional stream (client side)
 * with user data |ud|.
 *
 * Errors: RIFT_ERR_AGAIN when the peer's stream limit is reached (wait for
 * streams_available); RIFT_ERR_CLOSED when the connection is not
 * established or is closing; RIFT_ERR_NOMEM.
 */
int rift_quic_conn_open_stream(rift_quic_conn *conn, void *ud,
                               rift_quic_stream **ps);

/**
 * rift_quic_conn_answer_later says that the stream data being delivered
 * (call it from a stream_data callback) will be answered, but not before
 * the callback returns: if it is the only data packet since the last
 * write, its ACK may wait up to settings.answer_hold (instead of
 * ack_hold) for the answer to carry it. Anything else to send still ends
 * the hold at once. A no-op outside a stream_data callback.
 */
void rift_quic_conn_answer_later(rift_quic_conn *conn);

/** Streams the peer still allows us to open right now. */
uint64_t rift_quic_conn_streams_left(const rift_quic_conn *conn);

/** Round-trip estimate (smoothed RTT, ns) and congestion window. */
void rift_quic_conn_get_rtt(const rift_quic_conn *conn, uint64_t *srtt,
                            uint64_t *cwnd);

/* ---- Streams ---- */

int64_t rift_quic_stream_id(const rift_quic_stream *s);
rift_quic_conn *rift_quic_stream_conn(const rift_quic_stream *s);
void rift_quic_stream_set_user_data(rift_quic_stream *s, void *ud);
void *rift_quic_stream_get_user_data(const rift_quic_stream *s);

/**
 * A piece of stream data to send. With |release| NULL the bytes are copied
 * (small frame headers, short payloads). Otherwise they are sent in place
 * and must stay unchanged until |release|(|owner|) is called — once, when
 * the peer acknowledged them or the stream or connection went away (for a
 * broker message: release = rift_msg_unref cast, owner = the message,
 * holding a reference taken for the purpose).
 */
typedef struct rift_quic_chunk {
    const uint8_t *data;
    size_t len;
    void (*release)(void *owner);
    void *owner;
} rift_quic_chunk;

/**
 * rift_quic_stream_write queues |n| chunks, then a FIN when |fin| is set
 * (n may be 0 for a bare FIN). All or nothing: on success every chunk's
 * release is owned by the stream; on failure none is called and nothing
 * was queued.
 *
 * Errors: RIFT_ERR_CLOSED (the write side is finished, reset, stopped by
 * the peer, or the connection is closing); RIFT_ERR_NOMEM.
 */
int rift_quic_stream_write(rift_quic_stream *s, const rift_quic_chunk *chunks,
                           size_t n, bool fin);

/** Bytes queued and not yet acknowledged (the send-window measure). */
uint64_t rift_quic_stream_unacked(const rift_quic_stream *s);

/**
 * rift_quic_stream_consumed returns |n| received bytes of flow-control
 * credit to the peer (stream and connection windows).
 */
void rift_quic_stream_consumed(rift_quic_stream *s, uint64_t n);

/** rift_quic_stream_shutdown_write resets our side (RESET_STREAM |code|);
 * unsent data is dropped. A no-op when the side is already done. */
void rift_quic_stream_shutdown_write(rift_quic_stream *s, uint64_t code);

/** rift_quic_stream_watch_stop asks for stream_stopped as soon as the
 * peer's STOP_SENDING has been read, not at the next write (see the note
 * at the top). Costs a stream lookup per watched stream per read batch of
 * its connection; meant for streams that may stay silent for long, such
 * as subscriptions. */
void rift_quic_stream_watch_stop(rift_quic_stream *s);

/** rift_quic_stream_shutdown_read asks the peer to stop (STOP_SENDING
 * |code|); later data is discarded. A no-op when already done. */
void rift_quic_stream_shutdown_read(rift_quic_stream *s, uint64_t code);

#endif /* RIFT_QUIC_QUIC_H */
