/*
 * config.h — riftd's configuration model (config layer): the plain C
 * structures that a Lua configuration file translates into, validated
 * exactly as docs/protocol-v1.md §5 says (same keys, defaults, ranges and
 * error texts for `messaging`), plus riftd's own top-level keys (plugins,
 * data_dir, log, quic, monitor), and the value-level operations on them:
 * defaults, comparison for reload, warnings, the `--check` summary.
 *
 * The Lua evaluator that fills a rift_config lives above, in the lua layer
 * (lua/config_eval.h); the daemon consumes it. Nothing here binds, opens
 * streams or touches the data directory: a rift_config is a value. Tokens are
 * read from the environment by a separate step (rift_config_load_tokens)
 * because the reference reads them at start-up, not at evaluation.
 * docs/riftd.md is the user-facing reference of every key.
 */
#ifndef RIFT_CONFIG_CONFIG_H
#define RIFT_CONFIG_CONFIG_H

#include "common/common.h"
#include "config/config_nats.h"
#include "config/config_cluster.h"
#include "config/config_streaming.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>

/* ---- Limits of the messaging table (§5.1, §4.1) ---- */

#define RIFT_CONFIG_MAX_PRINCIPALS       1024
#define RIFT_CONFIG_MAX_SUBSCRIPTIONS    1024
#define RIFT_CONFIG_MAX_STREAM_SUBJECTS  1024
#define RIFT_CONFIG_QUIC_MAX_PAYLOAD     1048576u
#define RIFT_CONFIG_MIN_SUBJECT_BYTES    64u
#define RIFT_CONFIG_MAX_TIMEOUT_MS       86400000u
#define RIFT_CONFIG_STREAM_MAX_MESSAGES  10000000u
#define RIFT_CONFIG_STREAM_MAX_BYTES     17179869184ull /* 16 GiB */
#define RIFT_CONFIG_STREAM_MAX_PAYLOAD   16777216u
#define RIFT_CONFIG_STREAM_MAX_CONSUMERS 65536u
/* Our extension: stream age retention, at most ten years. */
#define RIFT_CONFIG_STREAM_MAX_AGE_MS 315360000000ull
#define RIFT_CONFIG_MAX_PLUGINS       256

/* The revision of a configuration that has no source file (§7.2). */
#define RIFT_CONFIG_RUNTIME_REVISION "runtime"

/* ---- Structures ---- */

/* One `messaging.principals` entry: a remote identity and its grants. */
typedef struct rift_config_principal {
    char *name;      /* 1..=96 of [A-Za-z0-9._-], unique */
    char *token_env; /* environment variable holding the token */
    char **publish;  /* patterns; empty = nothing */
    size_t n_publish;
    char **subscribe;
    size_t n_subscribe;
    bool control;
    /* Stream-name patterns of streams it may create, update, purge and
     * delete at run time (daemon/runtime_streams.c); empty = none. */
    char **streams;
    size_t n_streams;
    /* Filled by rift_config_load_tokens; wiped on free, never printed. */
    char *token;
    size_t token_len;
} rift_config_principal;

/* One `messaging.subscriptions` entry: a Lua on_message subscription. */
typedef struct rift_config_subscription {
    char *subject; /* pattern */
    char *queue;   /* NULL = no queue group */
} rift_config_subscription;

/* One `messaging.streams.<name>` table (§4.1 plus our max_age_ms). */
typedef struct rift_config_stream {
    char *name; /* 1..=96 of [A-Za-z0-9_-] */
    char **subjects;
    size_t n_subjects;
    uint64_t max_messages;
    uint64_t max_bytes;
    uint64_t max_payload_bytes;
    uint64_t max_consumers;
    bool sync_on_write;
    char *storage_path;  /* NULL = memory only; relative to the cwd */
    uint64_t max_age_ms; /* 0 = no age retention (our extension) */
    uint64_t replicas;   /* 1: rift's store; 3: JetStream (docs/cluster.md) */
} rift_config_stream;

/* The whole `messaging` table with defaults applied. */
typedef struct rift_config_messaging {
    char *listen; /* "ip:port" as written, or NULL for no listener */
    struct sockaddr_storage listen_addr;
    socklen_t listen_addr_len;
    char *certificate; /* PEM paths, relative to the cwd; NULL = unset */
    char *private_key;
    rift_config_principal *principals;
    size_t n_principals;
    uint64_t subscription_capacity;
    uint64_t max_payload_bytes;
    uint64_t max_subject_bytes;
    uint64_t max_subscriptions;
    uint64_t max_connections;
    uint64_t max_streams_per_connection;
    uint64_t handshake_timeout_ms;
    uint64_t io_timeout_ms;
    rift_config_subscription *subscriptions;
    size_t n_subscriptions;
    rift_config_stream *streams; /* sorted by name */
    size_t n_streams;
} rift_config_messaging;

/*
 * One `plugins` entry. A plain string "name" is the same as { name = "name" }.
 * Without `grants` the plugin is trusted like the original's local Lua (no
 * ACL); with `grants` it is confined to those patterns. The plugin host
 * (src/lua/) enforces the budgets.
 */
typedef struct rift_config_plugin {
    char *name;      /* 1..=128 of [A-Za-z0-9_-], unique */
    char *path;      /* directory holding init.lua; default "plugins/<name>" */
    bool restricted; /* `grants` given */
    char **publish;
    size_t n_publish;
    char **subscribe;
    size_t n_subscribe;
    bool control;
    uint32_t memory_mb;    /* default 64 */
    uint64_t instructions; /* per callback; default 100,000 */
    uint32_t deadline_ms;  /* per callback; default 50 */
} rift_config_plugin;

#define RIFT_CONFIG_PLUGIN_MEMORY_MB    64u
#define RIFT_CONFIG_PLUGIN_INSTRUCTIONS 100000u
#define RIFT_CONFIG_PLUGIN_DEADLINE_MS  50u

/* riftd's `quic` table: transport options beyond §5 (our extension). */
typedef struct rift_config_quic {
    bool retry; /* QUIC Retry address validation; default off */
} rift_config_quic;

/* The HTTP monitoring listener's default address (nats-server's port). */
#define RIFT_CONFIG_MONITOR_DEFAULT_LISTEN "127.0.0.1:8222"

/* riftd's `monitor` table: the opt-in HTTP monitoring listener (our
 * extension; docs/riftd.md). `monitor = {}` listens on the default. */
typedef struct rift_config_monitor {
    char *listen; /* "ip:port"; NULL = no monitoring listener */
    struct sockaddr_storage listen_addr;
    socklen_t listen_addr_len;
} rift_config_monitor;
/*
 * riftd's `limits` table (our extension, outside `messaging` so that block
 * stays the original's): how much of the listener's capacity one
 * non-control principal may hold, and how much only control principals may
 * use. 0 = the default, resolved against `messaging` by
 * rift_config_limits_resolve.
 */
typedef struct rift_config_limits {
    uint64_t connections;   /* per identity */
    uint64_t subscriptions; /* per identity */
    uint64_t consumers;     /* per identity, all streams */
    uint64_t reserve_connections;
    uint64_t reserve_subscriptions;
    bool reserve_connections_set;
    bool reserve_subscriptions_set;
} rift_config_limits;

typedef struct rift_config {
    rift_config_messaging messaging;
    rift_config_quic quic;
    rift_config_monitor monitor;
    rift_config_limits limits;
    rift_config_nats nats;
    rift_config_plugin *plugins; /* in declaration order */
    size_t n_plugins;
    char *data_dir; /* NULL = none */
    /* NATS Streaming (docs/streaming.md); enabled false without it. */
    rift_config_streaming streaming;
    /* The NATS backbone (docs/cluster.md); enabled false without it. */
    rift_config_cluster cluster;
    bool log_level_set;
    rift_log_level log_level;
    /* Root-level Lua message handlers: on_message and rift.on("message"). */
    bool has_on_message;
    size_t n_message_handlers;
    /* The evaluated source, kept for the plugin host and the revision. */
    char *source;
    size_t source_len;
    char *source_name; /* file path, or a label for built-in sources */
    bool from_file;    /* false: revision is "runtime" */
    char revision[17]; /* 16 lowercase hex digits, or "runtime" */
} rift_config;

/* |cfg|'s limits with every default filled in (see docs/riftd.md). */
void rift_config_limits_resolve(const rift_config *cfg,
                                rift_config_limits *out);

/* Same `limits` as written (a change needs a restart, like `quic`). */
bool rift_config_limits_equal(const rift_config_limits *a,
                              const rift_config_limits *b);

/* rift_config_free releases everything |cfg| holds (tokens are wiped) and
 * zeroes it. Safe on a zeroed or partly filled config. */
void rift_config_free(rift_config *cfg);

/* ---- Start-up steps ---- */

/* Looks an environment variable up; returns NULL when it is unset. */
typedef const char *(*rift_config_getenv_fn)(const char *name, void *ud);

/*
 * rift_config_load_tokens reads each principal's token through |getenv_fn|
 * (NULL = getenv) and checks it (§5.2).
 *
 * Errors: RIFT_ERR_INVALID_CONFIG with "messaging: set <ENV> to a secret of
 * at least 32 bytes", "messaging token must contain 32..=1024 bytes without
 * control characters" or "invalid messaging configuration: identity names
 * and tokens must be nonempty and unique" (two principals sharing one
 * token); RIFT_ERR_NOMEM.
 */
int rift_config_load_tokens(rift_config *cfg, rift_config_getenv_fn getenv_fn,
                            void *ud, rift_error *err);

/*
 * rift_config_messaging_equal says whether two messaging tables are the same
 * configuration (tokens are not compared: they are not part of the file).
 * A reload may proceed only when this holds (§5.2).
 */
bool rift_config_messaging_equal(const rift_config_messaging *a,
                                 const rift_config_messaging *b);

/*
 * rift_config_messaging_diff names the first key of `messaging` whose
 * value differs between |a| and |b| ("subscription_capacity",
 * "principals", "streams", ...), or NULL when they are equal.
 */
const char *rift_config_messaging_diff(const rift_config_messaging *a,
                                       const rift_config_messaging *b);

/*
 * rift_config_warn calls |emit| with each warning about |cfg| that is no
 * error: a principal without control whose subscribe grants cover every
 * _INBOX reply subject (such as ">" or "_INBOX.>"), which lets it read the
 * replies meant for other identities, control and status answers
 * included (§5.4). Returns the number of warnings.
 */
size_t rift_config_warn(const rift_config *cfg,
                        void (*emit)(void *ud, const char *text), void *ud);

/* rift_config_revision writes the 64-bit content hash of |src| as 16
 * lowercase hex digits plus a NUL. */
void rift_config_revision(const char *src, size_t len, char out[17]);

/* rift_config_find_stream returns the stream named |name| or NULL. */
const rift_config_stream *rift_config_find_stream(const rift_config *cfg,
                                                  const char *name);

/*
 * rift_config_print_summary writes the human-readable summary printed by
 * `riftd --check`: listener, limits, principals with their grants (never
 * tokens), subscriptions, streams and plugins.
 */
void rift_config_print_summary(const rift_config *cfg, FILE *out);

/* ---- Validation predicates shared with the parser's tests ---- */

/* §5 config pattern rule: 1..=max_bytes ASCII graphic bytes, tokens
 * non-empty, wildcards whole tokens, '>' last (the subject layer's
 * rift_subject_config_valid). */
bool rift_config_pattern_valid(const char *s, size_t len, size_t max_bytes);

/* rift_config_parse_listen parses "a.b.c.d:port" or "[v6]:port". */
bool rift_config_parse_listen(const char *s, struct sockaddr_storage *ss,
                              socklen_t *sslen);

#endif /* RIFT_CONFIG_CONFIG_H */
