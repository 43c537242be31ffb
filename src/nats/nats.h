/*
 * nats.h — the core NATS protocol listener (nats layer): TCP (TLS 1.3 or,
 * on loopback, plaintext) connections that speak the nats-server 2.9
 * client protocol to the same broker, principals and ACLs as the QUIC
 * server. One thread runs one rift_loop (src/net) with every connection;
 * see docs/nats.md for the protocol subset and the inbox rule.
 *
 * Threading: rift_nats_new/start/del are called by one owner thread;
 * rift_nats_get_stats and rift_nats_address from any thread.
 */
#ifndef RIFT_NATS_NATS_H
#define RIFT_NATS_NATS_H

#include "rift/broker.h"
#include "subject/acl.h"

#include <stdbool.h>
#include <sys/socket.h>

struct rift_quota;

typedef struct rift_nats rift_nats;

typedef struct rift_nats_settings {
    /* Where to listen, and its text for messages ("127.0.0.1:4222"). */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    const char *listen;
    /* PEM files of the TLS certificate chain and key; both NULL =
     * plaintext (the caller enforces the loopback rule). */
    const char *cert_file;
    const char *key_file;
    /* The principals, tokens included (copied by rift_nats_new). */
    const rift_identity *identities;
    size_t identity_count;
    /* Name of the principal that connections without credentials act
     * as; NULL = credentials required. */
    const char *anonymous;
    size_t max_payload;         /* default 1 MiB */
    size_t max_pending;         /* outbound bytes per connection, 64 MiB */
    size_t max_control_line;    /* 4 KiB */
    uint64_t ping_interval_ms;  /* 2 min */
    unsigned max_pings_out;     /* 2 */
    uint64_t auth_timeout_ms;   /* 2 s */
    uint64_t write_deadline_ms; /* 10 s */
    size_t max_connections;     /* 1024 */
    /* Longest pause of a NATS publisher's reads while a subscriber it
     * feeds, still reading, holds over half of max_pending (nats_pace.c);
     * 0 = never pause. 10 ms. */
    uint64_t producer_pause_ms;
    /* Per-identity accounting shared with the other faces, or NULL. */
    struct rift_quota *quota;
} rift_nats_settings;

void rift_nats_settings_default(rift_nats_settings *s);

/*
 * rift_nats_new checks |s| and loads the TLS credentials. Errors:
 * RIFT_ERR_INVALID_CONFIG (text says which setting), RIFT_ERR_TLS,
 * RIFT_ERR_NOMEM.
 */
int rift_nats_new(rift_nats **pn, rift_broker *broker,
                  const rift_nats_settings *s, rift_error *err);

/* rift_nats_start binds the listener and starts the thread. Errors:
 * -errno ("cannot bind NATS listener <addr>: ..."), RIFT_ERR_NOMEM. */
int rift_nats_start(rift_nats *n, rift_error *err);

/* The bound address ("127.0.0.1:40111"), valid after start. */
const char *rift_nats_address(const rift_nats *n);

/* rift_nats_del closes every connection, ends the thread and frees |n|.
 * NULL is a no-op. */
void rift_nats_del(rift_nats *n);

/* False when the thread ended on its own (a loop failure). */
bool rift_nats_running(const rift_nats *n);

typedef struct rift_nats_stats {
    uint64_t connections; /* open now */
    uint64_t authenticated;
    uint64_t accepted; /* total */
    uint64_t refused;  /* max_connections or quota */
    uint64_t auth_failures;
    uint64_t slow_consumers;
    uint64_t producer_pauses; /* fast publishers paused (nats_pace.c) */
    uint64_t msgs_in, bytes_in, msgs_out, bytes_out;
    /* Open connections per principal, configuration order. */
    const char *const *names; /* borrowed from |n| */
    uint64_t *by_identity;    /* rift_free(NULL, ...) */
    size_t identity_count;
} rift_nats_stats;

/* Errors: RIFT_ERR_NOMEM. */
int rift_nats_get_stats(const rift_nats *n, rift_nats_stats *st);

#endif /* RIFT_NATS_NATS_H */
