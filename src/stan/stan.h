/*
 * stan.h — the NATS Streaming service (stan layer): a STAN server that
 * lives on the in-process broker. It subscribes the discover subject and
 * its own request subjects, answers by broker publish, and keeps each
 * channel as a rift stream (memory, or a directory under |dir|). Any NATS
 * client that reaches the broker (riftd's NATS face) talks to it unchanged;
 * with a libnats transport (stan/transport_nats.h) it serves through an
 * external NATS server instead. docs/streaming.md.
 *
 * Threading: the service runs its own thread; rift_stan_start and
 * rift_stan_stop are called from one controlling thread.
 */
#ifndef RIFT_STAN_STAN_H
#define RIFT_STAN_STAN_H

#include "common/common.h"
#include "rift/broker.h"

/** Per-channel limits; 0 means unlimited for msgs/bytes/age/inactivity. */
typedef struct rift_stan_limits {
    uint64_t max_msgs;
    uint64_t max_bytes;
    uint64_t max_age_ms;
    uint64_t max_inactivity_ms;
} rift_stan_limits;

/** A per-channel override: channels matching |pattern| use |limits|. */
typedef struct rift_stan_channel_limits {
    char *pattern;
    rift_stan_limits limits;
} rift_stan_channel_limits;

/* How the service reaches its clients (src/stan/transport.h). */
typedef struct rift_stan_transport rift_stan_transport;

typedef struct rift_stan_settings {
    /** Cluster ID, ^[a-zA-Z0-9_-]+$. Default "test-cluster". */
    const char *cluster_id;
    /** Default "_STAN.discover". */
    const char *discover_prefix;
    /** NULL: memory channels; else the directory of the file store. */
    const char *dir;
    /** PubAck only after fdatasync (file store). Default true. */
    bool sync_on_write;
    /** Defaults 100 and 1,000. */
    uint32_t max_channels;
    uint32_t max_subs;
    /** Defaults: 1,000,000 msgs, 1,024,000,000 bytes, no age, no
     * inactivity limit. */
    rift_stan_limits limits;
    const rift_stan_channel_limits *channels;
    size_t channels_count;
    /** Server heartbeats to each client's heartbeat inbox. Defaults 30 s,
     * 10 s, 10 (a client missing more than fail_count is closed). */
    uint64_t hb_interval_ms;
    uint64_t hb_timeout_ms;
    uint32_t hb_fail_count;
    /** NULL: subscribe and publish on the broker. Else the service's way
     * to its clients, taken over by rift_stan_start (freed by
     * rift_stan_stop, or by rift_stan_start when it fails). */
    rift_stan_transport *transport;
    const rift_mem *mem;
} rift_stan_settings;

void rift_stan_settings_default(rift_stan_settings *s);

/* rift_stan_id_valid: the original's rule for client and cluster IDs,
 * ^[a-zA-Z0-9_-]+$. */
bool rift_stan_id_valid(const char *s, size_t len);

typedef struct rift_stan rift_stan;

/*
 * rift_stan_nats_url_check accepts what `streaming.nats_server` may be:
 * nats://[user:pass@|token@]host[:port] or tls://..., host non-empty, the
 * port 1..65535. |shown| (may be NULL) receives the URL for logs and
 * status with any credentials replaced by "***". Errors:
 * RIFT_ERR_INVALID_CONFIG, with a text that never repeats a credential.
 */
int rift_stan_nats_url_check(const char *url, char *shown, size_t shown_cap,
                             rift_error *err);

/*
 * rift_stan_start subscribes the service's subjects on |broker| (or on
 * the settings' transport) and starts its thread; the broker must outlive
 * the service. The settings' strings are copied. Errors:
 * RIFT_ERR_INVALID_CONFIG (bad cluster ID or prefix), RIFT_ERR_IO (the
 * store directory), those of rift_broker_subscribe, RIFT_ERR_CONNECTION (a
 * transport's subscribe), RIFT_ERR_NOMEM.
 */
int rift_stan_start(rift_stan **ps, rift_broker *broker,
                    const rift_stan_settings *s, rift_error *err);

/* rift_stan_stop stops the thread, closes every channel (file channels
 * synced) and unsubscribes. Durable state stays on disk. NULL is a no-op. */
void rift_stan_stop(rift_stan *s);

/** Counts for status views and tests (a snapshot taken on the caller's
 * thread under the service lock). */
typedef struct rift_stan_counts {
    size_t clients, channels, subscriptions;
} rift_stan_counts;

void rift_stan_get_counts(rift_stan *s, rift_stan_counts *out);

/** "broker" or "nats": how the service reaches its clients. */
const char *rift_stan_transport_kind(const rift_stan *s);

#endif /* RIFT_STAN_STAN_H */
