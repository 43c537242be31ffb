/*
 * daemon.h — riftd's runtime (daemon layer): configuration loading (file,
 * ./rift.lua or the built-in development configuration), the start-up
 * order of docs/protocol-v1.md §5.2, reload, the signal loop and shutdown.
 *
 * Start-up: configuration and tokens (nothing binds before they are
 * valid) → data_dir → broker → streams → TLS check and QUIC listener →
 * Lua plugins and message subscriptions → control bridge → log "rift:
 * messaging QUIC on <addr>" → rift.events.lifecycle {"state":"ready"}.
 * Shutdown: {"state":"draining"} (flushed to remote subscribers, at most
 * 1 s) → control bridge → Lua host → QUIC server (code 0, "server
 * shutdown") → streams (checkpointed, synced, closed) → broker.
 */
#ifndef RIFT_DAEMON_DAEMON_H
#define RIFT_DAEMON_DAEMON_H

#include "config/config.h"
#include "daemon/dev.h"
#include "rift/broker.h"

#include <signal.h>

#define RIFT_DAEMON_DEFAULT_CONFIG "rift.lua"

/* The reason a reload is refused when messaging (or data_dir) changed. */
#define RIFT_DAEMON_RESTART_TEXT                                               \
 "listener names/addresses, admin and messaging settings require a "           \
 "restart"

typedef struct rift_daemon_options {
    /* Configuration file; NULL runs the built-in development configuration
     * (the caller resolves -c and ./rift.lua, see rift_daemon_config_path). */
    const char *config_path;
    /* The command line fixed the log level: the configuration's log.level
     * is ignored. */
    bool log_level_forced;
    /* Token lookup; NULL = the process environment (plus the dev token for
     * the development configuration). */
    rift_config_getenv_fn getenv_fn;
    void *getenv_ud;
    /* Control command limit in milliseconds; 0 = 40,000. */
    uint64_t control_timeout_ms;
    /* Called once the broker exists, before the streams open: in-process
     * components (and tests) subscribe here to see "ready". May be NULL. */
    void (*on_broker)(void *ud, rift_broker *broker);
    void *on_broker_ud;
} rift_daemon_options;

typedef struct rift_daemon rift_daemon;

/*
 * rift_daemon_config_path resolves which configuration riftd runs: |arg|
 * (from -c) when given, else ./rift.lua when it exists, else NULL for the
 * built-in development configuration.
 */
const char *rift_daemon_config_path(const char *arg);

/*
 * rift_daemon_load_config evaluates |path| (NULL: the development
 * configuration, preparing ./rift-data when |create_dev| is set, and
 * filling *dev) and loads its tokens. With |create_dev| false a missing dev
 * token is not an error (riftd --check before the first start).
 */
int rift_daemon_load_config(rift_config *cfg, const char *path, bool create_dev,
                            rift_dev_state *dev,
                            const rift_daemon_options *opts, rift_error *err);

/*
 * rift_daemon_start runs the start-up order and returns when riftd is
 * ready (the ready event is published). Errors carry one line of text:
 * configuration texts of §5, "messaging.streams.<name>: <error>", TLS
 * texts, broker errors. Nothing is left running on failure.
 */
int rift_daemon_start(rift_daemon **pd, const rift_daemon_options *opts,
                      rift_error *err);

/*
 * rift_daemon_reload re-evaluates the configuration and applies it when
 * messaging (and data_dir) are unchanged, then publishes
 * rift.events.reload. |deadline_ns| (absolute, 0 = none) bounds the
 * evaluation. On success |revision| receives the new revision. On failure
 * the old configuration stays: RIFT_ERR_TIMEOUT, or the error with text
 * "reload rejected; previous configuration retained: <reason>".
 * Thread-safe (SIGHUP and rift.control.reload may race).
 */
int rift_daemon_reload(rift_daemon *d, rift_tstamp deadline_ns,
                       char revision[17], rift_error *err);

/*
 * rift_daemon_wait_signals blocks until SIGTERM or SIGINT (returns 0) and
 * reloads on SIGHUP; it also runs the 1 s watchdog of the QUIC server
 * (returns 1 after logging "QUIC messaging listener stopped
 * unexpectedly"). The three signals must be blocked in every thread before
 * rift_daemon_start (riftd's main does it first thing).
 */
int rift_daemon_wait_signals(rift_daemon *d);

/*
 * rift_daemon_shutdown runs the shutdown order up to, not including, the
 * broker: "draining" is published, then the control bridge, the Lua host,
 * the QUIC server and the streams stop. The broker stays usable until
 * rift_daemon_del. Idempotent.
 */
void rift_daemon_shutdown(rift_daemon *d);

/* rift_daemon_del shuts down (if not done) and frees the broker and |d|.
 * NULL is a no-op. */
void rift_daemon_del(rift_daemon *d);

/* rift_daemon_stop is rift_daemon_shutdown then rift_daemon_del. */
void rift_daemon_stop(rift_daemon *d);

/* The daemon's broker, for in-process users and tests. */
rift_broker *rift_daemon_broker(rift_daemon *d);

/* rift_daemon_revision copies the revision in force. */
void rift_daemon_revision(rift_daemon *d, char revision[17]);

/* rift_daemon_signals fills |set| with SIGTERM, SIGINT and SIGHUP. */
void rift_daemon_signals(sigset_t *set);

#endif /* RIFT_DAEMON_DAEMON_H */
