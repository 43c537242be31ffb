/*
 * nats_internal.h — the NATS listener's structures (nats layer), shared by
 * nats_server.c (thread, accept, stop), nats_conn.c (socket I/O, timers,
 * close), nats_tls.c (the TLS session and its read-ahead), nats_ops.c (the
 * protocol operations), nats_deliver.c (broker queues to MSG/HMSG) and
 * nats_inbox.c (inbox claims). Everything here belongs to the listener's
 * loop thread except the atomic counters.
 */
#ifndef RIFT_NATS_INTERNAL_H
#define RIFT_NATS_INTERNAL_H

#include "broker/msg_ext.h"
#include "nats/nats.h"
#include "nats/nats_outq.h"
#include "nats/nats_parse.h"
#include "net/loop.h"
#include "subject/auth.h"

#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>

/* Subscriptions one connection may hold. */
#define NATS_MAX_SUBS 65536
/* Messages taken from a broker queue at once. */
#define NATS_BATCH 64
/* Bytes read from a socket at once. */
#define NATS_READ_CHUNK 65536
/* Ciphertext read from a TLS connection's socket at once (nats_tls.c):
 * several 16 KiB records per recv. */
#define NATS_TLS_IN 65536
/* Deliveries the loop thread's own publishes may queue before feeding
 * stops to drain them (a quarter of the default subscription capacity). */
#define NATS_DRAIN_EVERY 256
/* Longest publish subject a connection remembers as granted. */
#define NATS_PUB_OK_MAX 128

typedef struct nats_conn nats_conn;
typedef struct nats_claim nats_claim;

/* One SUB of a connection. */
typedef struct nats_sub {
    nats_conn *conn;
    rift_sub *sub;
    struct nats_sub *next; /* the connection's list */
    uint64_t max;          /* UNSUB max: 0 = unlimited */
    uint64_t delivered;
    bool in_claim;   /* the pattern lies inside one of the conn's claims */
    const char *sid; /* both in buf */
    size_t sid_len;
    const char *pattern;
    size_t pattern_len;
    char buf[];
} nats_sub;

struct nats_conn {
    rift_nats *srv;
    nats_conn *prev, *next; /* srv's list */
    nats_conn *dirty_next;  /* srv's list of connections with output */
    bool dirty;
    int fd;
    uint64_t cid; /* INFO client_id; also the origin tag of messages */
    rift_io io;
    rift_timer auth_timer;
    rift_timer ping_timer;
    rift_timer write_timer;
    rift_timer read_timer; /* buffered TLS input left for a later turn */
    gnutls_session_t tls;
    bool handshaking;
    uint8_t *tls_in; /* NATS_TLS_IN bytes of ciphertext, read ahead */
    size_t tls_in_off, tls_in_len;
    rift_nats_parser parser;
    nats_outq out; /* unsent output (nats_outq.h) */
    /* Set by CONNECT. */
    bool connected;
    bool verbose, pedantic, echo, headers, no_responders;
    const rift_identity *id;
    size_t id_index;
    size_t quota_slot;
    bool quota_taken;
    unsigned pings_out;
    nats_sub *subs;
    size_t n_subs;
    nats_claim *claims; /* this connection's inbox prefixes */
    bool closing;
    /* Fast-producer pacing (nats_pace.c). */
    bool pressured;       /* output over half of max_pending */
    bool paused;          /* reads paused for a pressured subscriber */
    rift_tstamp wrote_at; /* last time the socket took output */
    /* The last subject PUB found valid and granted (nats_ops.c). */
    size_t pub_ok_len; /* 0: none */
    char pub_ok[NATS_PUB_OK_MAX];
};

struct rift_nats {
    rift_broker *broker;
    rift_nats_settings s;
    char *listen_text;
    char *anonymous;
    rift_identity *ids; /* copies, tokens included */
    size_t n_ids;
    const char **names;
    rift_auth_table auth;
    gnutls_certificate_credentials_t cred; /* NULL: plaintext */
    gnutls_priority_t prio;
    char server_id[24];
    char address[64];
    int lfd;
    rift_loop *loop;
    rift_io lio;
    rift_notifier *notifier;
    rift_io nio;
    rift_timer cache_timer; /* trims the message-block cache when idle */
    uint64_t cache_msgs_in;
    pthread_t thread;
    bool started;
    atomic_bool running;
    nats_conn *conns;
    nats_conn *dirty;
    nats_conn *graveyard; /* closed, freed at the end of the callback */
    uint64_t next_cid;
    nats_claim **claim_table; /* nats_inbox.c */
    size_t claim_buckets;
    size_t n_claims;
    uint8_t rbuf[NATS_READ_CHUNK];
    size_t undrained;   /* deliveries queued by this thread since a drain */
    size_t n_pressured; /* connections with pressured set */
    bool pressure; /* a delivery since the last read met a pressured reader */
    /* Counted by the loop thread, added to the atomics below once per
     * callback (rift_nats_reap): one locked add per message was a
     * measurable part of a small publish. */
    struct {
        uint64_t msgs_in, bytes_in, msgs_out, bytes_out;
    } tally;
    /* Counters read by rift_nats_get_stats from other threads. */
    atomic_uint_fast64_t n_conns, n_auth, accepted, refused, auth_failures,
        slow_consumers, producer_pauses, msgs_in, bytes_in, msgs_out, bytes_out;
    atomic_uint_fast64_t *by_identity;
};

/* ---- nats_conn.c ---- */

/* Accepts |fd|: sends INFO, starts TLS and the auth timer. */
void rift_nats_conn_accept(rift_nats *srv, int fd);
/* Queues bytes for the client (no limit: callers check max_pending). */
int rift_nats_conn_send(nats_conn *c, const void *data, size_t len);
/* Room for |n| more output bytes (NULL when out of memory), then the
 * bytes actually written. */
uint8_t *rift_nats_conn_reserve(nats_conn *c, size_t n);
void rift_nats_conn_commit(nats_conn *c, size_t n);
/* Queues -ERR '<text>'. */
void rift_nats_conn_err(nats_conn *c, const char *text);
/* Sends -ERR '<text>' (when |text| is set), flushes what it can and
 * closes; the struct is freed by rift_nats_reap. */
void rift_nats_conn_close(nats_conn *c, const char *text);
/* Writes queued output of every dirty connection. */
void rift_nats_flush_dirty(rift_nats *srv);
/* Frees closed connections (end of every loop callback). */
void rift_nats_reap(rift_nats *srv);
/* Outbound bytes not yet written. */
size_t rift_nats_conn_pending(const nats_conn *c);
/* Writes what the socket takes now; false when the connection closed. */
bool rift_nats_conn_flush(nats_conn *c);

/* ---- nats_tls.c ---- */

/* Starts the server side of TLS on |c|'s socket (the handshake runs from
 * the connection's I/O callback). */
int rift_nats_tls_start(nats_conn *c);
/* Does |c|'s session hold input that no socket readiness will report
 * (read-ahead ciphertext, or decrypted bytes not yet taken)? */
bool rift_nats_tls_buffered(const nats_conn *c);

/* ---- nats_ops.c ---- */

/* Handles one parsed operation; false when the connection was closed. */
bool rift_nats_handle_op(nats_conn *c, const rift_nats_op *op);
/* Ends one subscription and frees it. */
void rift_nats_sub_end(nats_sub *ns);
/* Drops every subscription of |c| (when it is reaped). */
void rift_nats_conn_unsub_all(nats_conn *c);

/* ---- nats_deliver.c ---- */

/* The notifier is readable, or the loop published: drain ready subs. */
void rift_nats_drain(rift_nats *srv);
/* Queues the no-responders status (503) for a request of |c| on
 * |reply|, through the connection's subscription that matches it. */
void rift_nats_no_responders(nats_conn *c, const char *reply, size_t rlen);
/* The origin block NATS publishes carry (msg_ext.h): client id, then the
 * raw header block. */
#define NATS_EXT_ORIGIN RIFT_MSG_EXT_ORIGIN

/* ---- nats_pace.c ---- */
/* |c| was given output (a delivery): note when it holds over half of
 * max_pending. */
void rift_nats_pace_delivered(nats_conn *c);
/* |c|'s socket took output: note progress, and end the pressure when the
 * output is back under half (paused publishers resume). */
void rift_nats_pace_wrote(nats_conn *c);
/* After |c|'s input was handled: pause its reads when what it published
 * met a pressured reader; true when paused. */
bool rift_nats_pace_after_read(nats_conn *c);
/* |c|'s pause is over (its read timer). */
void rift_nats_pace_resume(nats_conn *c);
/* |c| closes: drops its pressure. */
void rift_nats_pace_drop(nats_conn *c);
/* The read interest |c| should have now. */
unsigned rift_nats_pace_read_mask(const nats_conn *c);

/* ---- nats_inbox.c ---- */

/* The claimable prefix token of |subject| ("_INBOX.<token>[.…]"), or
 * NULL when |subject| is not under an unguessable inbox prefix. */
const char *rift_nats_inbox_token(const char *subject, size_t len,
                                  size_t *tlen);
/* The connection that claimed |token|, or NULL. */
nats_conn *rift_nats_claim_owner(rift_nats *srv, const char *token,
                                 size_t tlen);
/* Claims |token| for |c| (a no-op when already its own). Errors:
 * RIFT_ERR_PERMISSION (another connection's), RIFT_ERR_LIMIT,
 * RIFT_ERR_NOMEM. */
int rift_nats_claim(nats_conn *c, const char *token, size_t tlen);
/* Ends every claim of |c|. */
void rift_nats_claims_release(nats_conn *c);
/* Frees the table (listener shutdown). */
void rift_nats_claims_free(rift_nats *srv);

#endif /* RIFT_NATS_INTERNAL_H */
