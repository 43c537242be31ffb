/*
 * config_nats.h — riftd's `nats` table (config layer): the opt-in core
 * NATS listener (src/nats, docs/nats.md), a top-level key outside
 * `messaging` so that block stays the original's. Parsed by
 * src/lua/config_nats_table.c; docs/riftd.md is the reference of every key.
 */
#ifndef RIFT_CONFIG_CONFIG_NATS_H
#define RIFT_CONFIG_CONFIG_NATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define RIFT_CONFIG_NATS_MAX_PENDING       (64ull << 20)
#define RIFT_CONFIG_NATS_MAX_CONTROL_LINE  4096u
#define RIFT_CONFIG_NATS_PING_INTERVAL_S   120u
#define RIFT_CONFIG_NATS_MAX_PINGS_OUT     2u
#define RIFT_CONFIG_NATS_AUTH_TIMEOUT_S    2u
#define RIFT_CONFIG_NATS_WRITE_DEADLINE_S  10u
#define RIFT_CONFIG_NATS_PRODUCER_PAUSE_MS 10u

typedef struct rift_config_nats {
    char *listen; /* "ip:port"; NULL = no NATS listener */
    struct sockaddr_storage listen_addr;
    socklen_t listen_addr_len;
    char *certificate; /* nats.tls; NULL = messaging's */
    char *private_key;
    bool allow_plaintext; /* no TLS; only on a loopback address */
    char *anonymous;      /* principal name; NULL = credentials required */
    /* Resolved limits (defaults filled in, see config_nats.h's macros). */
    uint64_t max_payload; /* default and ceiling: messaging's */
    uint64_t max_pending;
    uint64_t max_control_line;
    uint64_t ping_interval_s;
    uint64_t max_pings_out;
    uint64_t auth_timeout_s;
    uint64_t write_deadline_s;
    uint64_t max_connections; /* default messaging.max_connections */
    /* Longest pause of a fast NATS publisher, ms; 0 = never (docs/nats.md
     * "Fast publishers"). */
    uint64_t producer_pause_ms;
    bool producer_pause_set; /* given in the file (0 is a value) */
} rift_config_nats;

/* Releases what |n| holds and zeroes it. */
void rift_config_nats_free(rift_config_nats *n);

/* The `nats:` lines of riftd --check (nothing without a listener). */
void rift_config_nats_print(const rift_config_nats *n, FILE *out);

/* Same table as written (reload refuses a change: it needs a restart). */
bool rift_config_nats_equal(const rift_config_nats *a,
                            const rift_config_nats *b);

/* True for 127.0.0.0/8 and ::1. */
bool rift_config_nats_loopback(const struct sockaddr_storage *ss);

#endif /* RIFT_CONFIG_CONFIG_NATS_H */
