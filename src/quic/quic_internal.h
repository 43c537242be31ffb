/*
 * quic_internal.h — private structures shared by the QUIC glue files (quic
 * layer): endpoint.c (socket, accept, Retry, stateless reset), the
 * connection's files (conn_lifecycle.c: creation, receive, timer;
 * conn_callbacks.c, conn_write.c, conn_close.c, conn_api.c, stream_list.c),
 * cid_routes.c (routing map entries, reset tokens), tls_session.c (GnuTLS).
 * Nothing outside src/quic includes this.
 */
#ifndef RIFT_QUIC_QUIC_INTERNAL_H
#define RIFT_QUIC_QUIC_INTERNAL_H

#include "common/dlist.h"
#include "common/common.h"
#include "quic/cidmap.h"
#include "quic/quic.h"
#include "quic/sendq.h"
#include "quic/udp.h"

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

/* Our connection IDs have a fixed length so short-header packets can be
 * routed: ngtcp2_pkt_decode_version_cid needs to know it. */
#define RIFT_QUIC_SCID_LEN 18
/* Spare CIDs we offer the peer (active_connection_id_limit). */
#define RIFT_QUIC_CID_LIMIT 8
/* CIDs a connection can have registered: the limit, the one being
 * retired, the initial SCID and the client's original DCID. */
#define RIFT_QUIC_MAX_CIDS (RIFT_QUIC_CID_LIMIT + 4)
/* Largest reason phrase we send. */
#define RIFT_QUIC_REASON_MAX 1024

/* ---- Streams ---- */

enum {
    STREAM_FIN_QUEUED = 1u << 0,  /* the app asked for FIN */
    STREAM_FIN_SENT = 1u << 1,    /* ngtcp2 took the FIN */
    STREAM_WR_SHUT = 1u << 2,     /* we reset it (or asked to) */
    STREAM_WR_STOPPED = 1u << 3,  /* the peer stopped it (detected) */
    STREAM_RD_SHUT = 1u << 4,     /* we sent STOP_SENDING (or asked to) */
    STREAM_BLOCKED = 1u << 5,     /* stream flow control: wait for credit */
    STREAM_IN_READY = 1u << 6,    /* on conn->ready */
    STREAM_IN_OPS = 1u << 7,      /* on conn->ops (pending ngtcp2 calls) */
    STREAM_DO_RESET = 1u << 8,    /* pending shutdown_stream_write */
    STREAM_DO_STOP = 1u << 9,     /* pending shutdown_stream_read */
    STREAM_IN_EVENTS = 1u << 10,  /* on conn->events (stopped report) */
    STREAM_READ_DONE = 1u << 11,  /* FIN or reset received */
    STREAM_WATCH_STOP = 1u << 12, /* probe for a received STOP_SENDING */
};

struct rift_quic_stream {
    rift_quic_conn *conn;
    int64_t id;
    void *user_data;
    uint32_t flags;
    rift_sendq q;
    uint64_t reset_code;
    uint64_t stop_code;
    /* Received bytes handed to the app and not yet credited back: given
     * back to the connection window if the stream closes first. */
    uint64_t uncredited;
    uint64_t credit_pending; /* consumed, not yet told to ngtcp2 */
    /* Intrusive lists: all streams, streams with data to send, streams
     * with pending ngtcp2 operations or events. */
    rift_quic_stream *all_prev, *all_next;
    rift_quic_stream *ready_prev, *ready_next;
    rift_quic_stream *ops_next;
    rift_quic_stream *ev_next;
};

/* ---- Connections ---- */

typedef enum conn_state {
    CONN_HANDSHAKE = 0,
    CONN_ESTABLISHED,
    CONN_CLOSING,  /* we sent CONNECTION_CLOSE; answer with it for 3×PTO */
    CONN_DRAINING, /* the peer closed; stay silent for 3×PTO */
    CONN_DEAD,     /* to be freed by its timer */
} conn_state;

struct rift_quic_conn {
    rift_quic_endpoint *ep;
    ngtcp2_conn *qc;
    /* ngtcp2 keeps a pointer to its allocator: it must live as long as
     * qc (used only when the endpoint has a rift_mem). */
    ngtcp2_mem mem;
    gnutls_session_t tls;
    ngtcp2_crypto_conn_ref ref;
    void *user_data;
    conn_state state;
    bool visible;         /* handshake_done was reported (client: always) */
    bool notified;        /* conn_closed was reported */
    bool counted;         /* counts against max_connections */
    bool close_requested; /* rift_quic_conn_close pending */
    bool reset_received;  /* recv_stateless_reset fired */
    bool alpn_failed;     /* client: the server picked another ALPN */
    bool in_write;        /* inside the writev loop */
    bool confirmed;       /* the handshake is confirmed */

    /* ACK hold (settings.ack_hold): packets with stream data read since
     * the connection last wrote, whether the packet being read has any
     * (and whether the application will answer it later, answer_hold),
     * and until when the ACK of a lone one may wait. */
    uint32_t rx_data_pkts;
    bool rx_data_seen;
    bool rx_answer_later;
    rift_tstamp hold_until;

    ngtcp2_path_storage ps; /* current path (local, remote) */
    rift_timer timer;

    /* Local close: error to send and the packet kept for the closing
     * period. */
    ngtcp2_ccerr ccerr;
    uint8_t *close_pkt;
    size_t close_len;
    uint64_t close_rx; /* packets received while closing (backoff) */
    rift_tstamp close_deadline;

    /* Routing: every CID registered in the endpoint map for this conn. */
    ngtcp2_cid cids[RIFT_QUIC_MAX_CIDS];
    size_t ncids;
    ngtcp2_cid odcid; /* the client's first DCID (server) */
    bool odcid_registered;

    /* Streams. */
    rift_quic_stream *streams; /* all, doubly linked */
    rift_quic_stream *ready_head, *ready_tail;
    rift_quic_stream *ops;    /* pending shutdowns / credit */
    rift_quic_stream *events; /* pending stream_stopped reports */
    uint64_t conn_credit_pending;
    /* Streams with STREAM_WATCH_STOP, and whether a packet was read since
     * they were last probed (probe_stops in conn_write.c). */
    size_t nwatch;
    bool rx_probe;

    /* Endpoint lists. */
    rift_quic_conn *all_prev, *all_next;
    rift_quic_conn *dirty_next;
    bool dirty;

    rift_quic_close_info close_info;
    char reason_buf[RIFT_QUIC_REASON_MAX];
};

/* ---- Endpoints ---- */

struct rift_quic_endpoint {
    const rift_mem *mem;
    rift_loop *loop;
    bool server;
    bool shutting_down;
    rift_quic_settings settings; /* file names cleared after use */
    /* Path MTU probe sizes, ascending; the last is the largest payload
     * we send (settings.max_udp_payload, clamped). */
    uint16_t pmtud_probes[4];
    size_t npmtud;
    rift_quic_callbacks cbs;
    void *user_data;
    char alpn[64];
    size_t alpn_len;
    bool offer_alpn;
    char server_name[256];

    rift_udp udp;
    rift_io io;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    uint8_t secret[RIFT_QUIC_SECRET_LEN];

    rift_cidmap map;
    rift_quic_conn *conns; /* all connections, doubly linked */
    size_t nlive;          /* counted connections */
    rift_quic_conn *dirty_head, *dirty_tail;
    bool processing; /* inside an I/O or timer handler: flush at its end */
    rift_timer flush_timer;
    rift_quic_conn *client; /* client endpoints: the connection */
    uint64_t reset_window;  /* start of the stateless reset budget */
    uint64_t resets_in_window;

    rift_quic_endpoint_stats stats;
};

/* ---- cid_routes.c ---- */

/* Registers / unregisters a CID of |c| in the routing map. */
int rift_quic_endpoint_add_cid(rift_quic_endpoint *ep, rift_quic_conn *c,
                               const ngtcp2_cid *cid);
void rift_quic_endpoint_remove_cid(rift_quic_endpoint *ep, rift_quic_conn *c,
                                   const ngtcp2_cid *cid);
/* Generates a stateless reset token for |cid| from the endpoint secret. */
int rift_quic_endpoint_reset_token(rift_quic_endpoint *ep, uint8_t *token,
                                   const ngtcp2_cid *cid);

/* ---- stream_list.c ---- */

/* A new stream record on |c| (linked into c->streams); NULL without
 * memory. */
rift_quic_stream *rift_quic_stream_new(rift_quic_conn *c, int64_t id, void *ud);
/* Unlinks and frees |s|; releases every queued chunk. */
void rift_quic_stream_free(rift_quic_stream *s);
/* Has something for writev_stream: data, or a FIN not yet taken. Inline
 * (as the next two): the write path runs them per stream and packet, and
 * they cost more as calls into another file than they do. */
static inline bool rift_quic_stream_wants_write(const rift_quic_stream *s) {
    if (s->flags & (STREAM_WR_SHUT | STREAM_WR_STOPPED)) {
        return false;
    }
    return rift_sendq_unsent(&s->q) > 0 ||
           ((s->flags & STREAM_FIN_QUEUED) && !(s->flags & STREAM_FIN_SENT));
}
/* Puts |s| at the back of / takes it off the connection's ready list. */
static inline void rift_quic_ready_add(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (s->flags & (STREAM_IN_READY | STREAM_BLOCKED)) {
        return;
    }
    s->flags |= STREAM_IN_READY;
    RIFT_DLIST_APPEND(c->ready_head, c->ready_tail, s, ready_prev, ready_next);
}
static inline void rift_quic_ready_remove(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (!(s->flags & STREAM_IN_READY)) {
        return;
    }
    s->flags &= ~(uint32_t)STREAM_IN_READY;
    RIFT_DLIST_REMOVE_TAILED(c->ready_head, c->ready_tail, s, ready_prev,
                             ready_next);
}
/* Puts |s| on the list of streams with pending ngtcp2 operations. */
void rift_quic_ops_add(rift_quic_stream *s);

/* ---- conn_callbacks.c ---- */

/* The ngtcp2 callback table of a server or a client connection. */
const ngtcp2_callbacks *rift_quic_conn_callbacks(bool server);
/* ngtcp2's debug log (settings.debug), to stderr. */
void rift_quic_ngtcp2_log(void *ud, const char *fmt, ...) RIFT_PRINTF(2, 3);

/* ---- conn_close.c ---- */

/* Records why the connection ends (the first reason wins). */
void rift_quic_conn_set_close_info(rift_quic_conn *c, rift_quic_close_kind kind,
                                   uint64_t code, int error,
                                   const char *detail);
/* Reports the end to the app once: stream_close for every stream left,
 * then conn_closed. Also releases the connection permit. */
void rift_quic_conn_terminate(rift_quic_conn *c);
/* Leaves no state behind: the timer frees the connection (server) or
 * parks it until rift_quic_endpoint_del (client). */
void rift_quic_conn_kill(rift_quic_conn *c);
/* Writes our CONNECTION_CLOSE (from c->ccerr), keeps it for the closing
 * period, and reports the end. */
void rift_quic_conn_enter_closing(rift_quic_conn *c);
/* The peer closed (or reset): its reason, then the draining period. */
void rift_quic_conn_peer_closed(rift_quic_conn *c);
/* A local error |rv| from ngtcp2: close with the matching error. */
void rift_quic_conn_local_error(rift_quic_conn *c, int rv);
/* Ends the connection from the network side (ICMP error). */
void rift_quic_conn_network_error(rift_quic_conn *c, int errnum);
/* Writes a final CONNECTION_CLOSE without callbacks (endpoint_del). */
void rift_quic_conn_close_now(rift_quic_conn *c, uint64_t code,
                              const char *reason);

/* ---- conn_write.c ---- */

/* Writes what the connection has to send into the UDP batch (an ACK that
 * may wait is held, settings.ack_hold). */
void rift_quic_conn_write(rift_quic_conn *c);
/* The same without the hold (the connection timer fired). */
void rift_quic_conn_write_unheld(rift_quic_conn *c);
/* Puts |c| on the list of connections to write at the end of the current
 * handler (or in a zero-delay timer when no handler is running). */
void rift_quic_endpoint_mark_dirty(rift_quic_endpoint *ep, rift_quic_conn *c);
/* Writes every dirty connection and flushes the UDP batch. */
void rift_quic_endpoint_flush(rift_quic_endpoint *ep);

/* ---- conn_lifecycle.c ---- */

/* Creates the ngtcp2 connection and its TLS session. Server: |hd| is the
 * first Initial, |odcid|/|retry_scid| non-NULL after a validated Retry
 * token. Client: |hd| is NULL. */
int rift_quic_conn_new(rift_quic_conn **pc, rift_quic_endpoint *ep,
                       const rift_udp_addr *local, const rift_udp_addr *remote,
                       const ngtcp2_pkt_hd *hd, const ngtcp2_cid *odcid,
                       rift_error *err);
/* Frees the connection now (no callbacks except chunk releases). */
void rift_quic_conn_free(rift_quic_conn *c);
/* Feeds one received packet to the connection. */
void rift_quic_conn_read(rift_quic_conn *c, const rift_udp_addr *local,
                         const rift_udp_addr *remote, const uint8_t *data,
                         size_t len);

/* ---- tls_session.c ---- */

int rift_quic_tls_server_cred(rift_quic_endpoint *ep, const char *cert,
                              const char *key, rift_error *err);
int rift_quic_tls_client_cred(rift_quic_endpoint *ep, const char *ca,
                              rift_error *err);
int rift_quic_tls_session(rift_quic_conn *c, rift_error *err);
/* Client: checks the ALPN the server selected. */
bool rift_quic_tls_alpn_ok(rift_quic_conn *c);
/* Client: describes a certificate verification failure into |out|;
 * returns false when verification did not fail. */
bool rift_quic_tls_verify_failure(rift_quic_conn *c, char *out, size_t cap);

#endif /* RIFT_QUIC_QUIC_INTERNAL_H */
