/*
 * plugin_host.h — riftd's Lua plugin host (lua layer): persistent,
 * sandboxed and budgeted Lua 5.4 plugins on the shared broker, run by a
 * worker pool, plus the original's root-level `on_message` /
 * `rift.on("message", fn)` handlers fed by `messaging.subscriptions`.
 *
 * This is the only interface riftd needs. The host owns one lua_State per
 * plugin (budgeted allocator, instruction/deadline hook, no io, os, debug,
 * bytecode or file loading; `require` confined to the plugin's `lua/`
 * folder). Callbacks run on a pool of worker threads; a plugin never runs
 * on two threads at once and its messages wait in its own bounded broker
 * queues, so a slow plugin cannot stall the QUIC loop or other plugins.
 *
 * The whole desired set of plugins is handed over at once with
 * rift_plugin_host_apply, at start-up and again at every reload: new
 * plugins are loaded, removed ones stopped, kept ones re-read (their
 * subscriptions whose pattern and queue the new code still uses keep their
 * broker subscription and the messages queued in it). The Lua API offered
 * to plugins is documented in docs/lua.md.
 *
 * Threading: every function here is called from riftd's control thread(s);
 * apply, status and del may be called from any thread but not concurrently
 * with rift_plugin_host_del.
 */
#ifndef RIFT_LUA_PLUGIN_HOST_H
#define RIFT_LUA_PLUGIN_HOST_H

#include "rift/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rift_plugin_host rift_plugin_host;
typedef struct rift_stream rift_stream;

/* Defaults applied when a budget field is 0. */
#define RIFT_PLUGIN_DEFAULT_MEMORY       (64u * 1024 * 1024)
#define RIFT_PLUGIN_DEFAULT_INSTRUCTIONS 1000000u
#define RIFT_PLUGIN_DEFAULT_DEADLINE_MS  50u
/* Consecutive failed callbacks after which a plugin is disabled. */
#define RIFT_PLUGIN_DEFAULT_MAX_FAILURES 10u

/* The subject of the host's events (JSON payloads, see docs/lua.md). */
#define RIFT_PLUGIN_EVENT_SUBJECT "rift.events.plugin"

/*
 * Looks a durable stream up by name for rift.stream() and rift.consumer();
 * returns NULL when there is none. Called from worker threads, so it must
 * be thread-safe. The stream must stay open until rift_plugin_host_del
 * returns (streams that can go at run time use stream_acquire instead).
 */
typedef rift_stream *(*rift_plugin_stream_lookup_fn)(void *ud,
                                                     const char *name);

/*
 * Finds the stream |name| and pins it in *|token| until
 * rift_plugin_stream_release_fn gets the token back; NULL when there is
 * none. The host pins for one Lua operation (a publish, an info, a fetch,
 * an ack...; a waiting fetch for its whole wait) and looks the stream up
 * again by name at the next one, so a stream deleted or replaced at run
 * time is never used after its release. Both are called from worker
 * threads, release also from whichever thread frees a plugin's state
 * (rift_plugin_host_apply, rift_plugin_host_del): they must be
 * thread-safe. |appended|: records were stored through the pin.
 */
typedef rift_stream *(*rift_plugin_stream_acquire_fn)(void *ud,
                                                      const char *name,
                                                      void **token);
typedef void (*rift_plugin_stream_release_fn)(void *ud, void *token,
                                              bool appended);

typedef struct rift_plugin_host_settings {
    /** Worker threads; 0 = the number of online CPUs. */
    size_t workers;
    /** Consecutive failing callbacks before a plugin is disabled; 0 =
     * RIFT_PLUGIN_DEFAULT_MAX_FAILURES. */
    unsigned max_failures;
    /** Streams for rift.stream/rift.consumer: stream_acquire and
     * stream_release when set (pinned per operation), otherwise
     * stream_lookup (streams that stay open); neither = no streams. */
    rift_plugin_stream_lookup_fn stream_lookup;
    rift_plugin_stream_acquire_fn stream_acquire;
    rift_plugin_stream_release_fn stream_release;
    void *stream_ud;
    /** Allocator for the host's own structures and the Lua states; NULL =
     * malloc. */
    const rift_mem *mem;
} rift_plugin_host_settings;

/** rift_plugin_host_settings_default fills |s| with the defaults above. */
void rift_plugin_host_settings_default(rift_plugin_host_settings *s);

/*
 * One plugin of the configuration (riftd's `plugins` entries and the names
 * declared with rift.plugin("name")). Strings are borrowed for the call.
 */
typedef struct rift_plugin_spec {
    const char *name; /* 1..=128 of [A-Za-z0-9_-] */
    const char *path; /* directory holding init.lua; NULL = "plugins/<name>" */
    /* Narrower identity (`grants`): when set, publish/request/respond need
     * a publish grant and subscribe a subscribe grant (§3.3/§3.4 rules);
     * otherwise the plugin is trusted like the original's local Lua. */
    bool restricted;
    const char *const *publish;
    size_t n_publish;
    const char *const *subscribe;
    size_t n_subscribe;
    bool control;
    size_t memory_bytes;   /* Lua memory cap; 0 = 64 MiB */
    uint64_t instructions; /* per callback; 0 = the default */
    uint32_t deadline_ms;  /* per callback; 0 = 50 */
} rift_plugin_spec;

/* One `messaging.subscriptions` entry. */
typedef struct rift_plugin_subscription {
    const char *subject; /* pattern */
    const char *queue;   /* NULL = no queue group */
} rift_plugin_subscription;

/*
 * The configuration file's own message handlers (compatibility with the
 * original): the host evaluates |source| again in a sandboxed state of its
 * own, takes the returned table's (or rift.config's) `on_message` and the
 * `rift.on("message", fn)` handlers, and feeds them every message of
 * |subs|. Plugins that register `rift.on("message", fn)` receive the same
 * messages. A failing handler is logged "<name>: on_message: <error>".
 */
typedef struct rift_plugin_compat {
    const char *name; /* label for logs and status, e.g. "rift.lua" */
    const char *source;
    size_t source_len; /* NULL source = no root-level handlers */
    const rift_plugin_subscription *subs;
    size_t n_subs;
    size_t memory_bytes; /* budgets of the handlers; 0 = defaults */
    uint64_t instructions;
    uint32_t deadline_ms;
} rift_plugin_compat;

/**
 * rift_plugin_host_new creates the host and starts its threads. |broker|
 * may be NULL (rift.enabled is then false and rift.publish fails with
 * "messaging broker unavailable"); it must outlive the host. |settings|
 * is copied (NULL = defaults).
 *
 * Errors: RIFT_ERR_NOMEM, -errno (eventfd, threads).
 */
int rift_plugin_host_new(rift_plugin_host **phost, rift_broker *broker,
                         const rift_plugin_host_settings *settings,
                         rift_error *err);

/**
 * rift_plugin_host_apply makes the host run exactly |specs| (and |compat|,
 * which may be NULL for none), all or nothing: every plugin's code is
 * (re)read from disk and loaded into a new state first; only when all of
 * them load does the host switch to the new states (plugins already
 * running under the same name keep, per subscription whose pattern and
 * queue the new code repeats, the broker subscription and its queued
 * messages), stop the plugins no longer listed and diff the compatibility
 * subscriptions by (subject, queue). Otherwise nothing changes: the
 * previous code keeps running (a disabled plugin stays disabled). Blocks
 * while each running plugin finishes its current callback.
 *
 * Errors (nothing changed): RIFT_ERR_LUA "<plugin>: init: <error>" for the
 * first plugin that failed to load; RIFT_ERR_INVALID_CONFIG "on_message
 * and messaging.subscriptions must be configured together" (message
 * handlers without subscriptions or the reverse);
 * RIFT_ERR_INVALID_ARGUMENT for invalid or duplicate names;
 * RIFT_ERR_NOMEM. After the switch: "messaging.subscriptions: <broker
 * error>" when a compatibility subscription cannot be made.
 */
int rift_plugin_host_apply(rift_plugin_host *host,
                           const rift_plugin_spec *specs, size_t n_specs,
                           const rift_plugin_compat *compat, rift_error *err);

typedef enum rift_plugin_state {
    RIFT_PLUGIN_RUNNING = 0,
    RIFT_PLUGIN_DISABLED = 1, /* kept failing; `reload` re-enables */
} rift_plugin_state;

/** "running" or "disabled". */
const char *rift_plugin_state_name(rift_plugin_state state);

typedef struct rift_plugin_status {
    char *name;
    rift_plugin_state state;
    bool compat;          /* the configuration's root-level handlers */
    uint64_t callbacks;   /* callbacks run (messages, timers, resumes) */
    uint64_t messages;    /* messages handed to Lua handlers */
    uint64_t errors;      /* failed callbacks */
    uint64_t published;   /* publications (publish, respond, request) */
    uint64_t dropped;     /* messages lost to slow-consumer overflow */
    size_t memory_bytes;  /* Lua memory in use after the last callback */
    size_t subscriptions; /* live rift.subscribe subscriptions */
    size_t timers;        /* armed rift.after/rift.every timers */
    size_t requests;      /* rift.request calls waiting for a reply */
    size_t queued;        /* messages waiting in the plugin's queues */
    char *last_error;     /* NULL when none */
} rift_plugin_status;

/**
 * rift_plugin_host_status returns a snapshot of every plugin (the
 * compatibility handlers first, then the plugins in configuration order)
 * in a new array that the caller frees with rift_plugin_host_status_free.
 *
 * Errors: RIFT_ERR_NOMEM.
 */
int rift_plugin_host_status(rift_plugin_host *host, rift_plugin_status **out,
                            size_t *n);

void rift_plugin_host_status_free(rift_plugin_status *status, size_t n);

/**
 * rift_plugin_host_status_json returns the same snapshot as a JSON array
 * of objects {"name","state","compat","callbacks","messages","errors",
 * "published","dropped","memory_bytes","subscriptions","timers",
 * "requests","queued","last_error"?} (a new jansson reference, as void *
 * so that this header does not need jansson.h), or NULL when out of
 * memory.
 */
void *rift_plugin_host_status_json(rift_plugin_host *host);

/**
 * rift_plugin_host_del stops the workers, closes every subscription,
 * timer and pending request, and frees the Lua states and |host|.
 * Messages still queued are dropped. NULL is a no-op.
 */
void rift_plugin_host_del(rift_plugin_host *host);

#endif /* RIFT_LUA_PLUGIN_HOST_H */
