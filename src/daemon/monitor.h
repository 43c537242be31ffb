/*
 * monitor.h — riftd's opt-in HTTP monitoring listener (daemon layer; the
 * `monitor` key, docs/riftd.md "Monitoring").
 *
 * A libmicrohttpd server on its own thread answers GET (and HEAD) on:
 *   /healthz  200 {"status":"ok"} while serving, 503 with a reason once
 *             shutdown has begun or the messaging listener died;
 *   /status   the JSON `rift status` shows (connections, subscriptions,
 *             streams with their consumers, plugins);
 *   /metrics  the same numbers in the Prometheus text format 0.0.4;
 *   /streaming/serverz, /streaming/clientsz, /streaming/channelsz
 *             the NATS Streaming views, as nats-streaming-server names
 *             them (with a `streaming` table);
 *   /         a JSON index of these paths.
 * Anything else is 404, other methods 405. There is no authentication: the
 * views carry no tokens, no file paths and no message payloads, and the
 * listener is loopback by default (a warning is logged otherwise).
 *
 * The views come from callbacks the daemon provides, called on the
 * monitor's thread, one request at a time.
 */
#ifndef RIFT_DAEMON_MONITOR_H
#define RIFT_DAEMON_MONITOR_H

#include "common/common.h"
#include "config/config.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct rift_monitor_views {
    void *user_data;
    /* The status object (new reference), or NULL when out of memory. */
    json_t *(*status)(void *user_data);
    /* True while serving; otherwise sets *why to a static reason. */
    bool (*healthy)(void *user_data, const char **why);
    /* /streaming/<view> (serverz, clientsz, channelsz) with the query's
     * "client" or "channel" as |only| and subs=1 as |subs|: the object
     * (new reference) or NULL with *code the HTTP status and *why its
     * text. NULL callback: those paths are 404. */
    json_t *(*streaming)(void *user_data, const char *view, const char *only,
                         bool subs, unsigned *code, char *why, size_t why_cap);
} rift_monitor_views;

typedef struct rift_monitor rift_monitor;

/*
 * rift_monitor_start binds cfg->listen_addr and starts the thread. Errors:
 * RIFT_ERR_IO "cannot bind monitor listener <addr>: <reason>",
 * RIFT_ERR_NOMEM.
 */
int rift_monitor_start(rift_monitor **pm, const rift_config_monitor *cfg,
                       const rift_monitor_views *views, rift_error *err);

/* The address actually bound ("127.0.0.1:43210" when the port was 0). */
const char *rift_monitor_address(const rift_monitor *m);

/* rift_monitor_stop waits for the request in progress, closes the listener
 * and frees the monitor. NULL is a no-op. */
void rift_monitor_stop(rift_monitor *m);

/*
 * rift_monitor_metrics renders a status object (as the /status view) in
 * the Prometheus text format into a new NUL-terminated buffer (free with
 * free()); NULL when out of memory. Metric names are
 * documented in docs/riftd.md.
 */
char *rift_monitor_metrics(const json_t *status, size_t *len);

#endif /* RIFT_DAEMON_MONITOR_H */
