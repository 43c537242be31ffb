/*
 * plugins.c — riftd's Lua plugin host component (daemon layer): the
 * configuration's `plugins` and its own message handlers (on_message,
 * rift.on("message") with messaging.subscriptions) handed to the plugin
 * host of src/lua at start-up and again, all or nothing, at every reload.
 * rift.stream and rift.consumer see riftd's one namespace of streams:
 * the configured ones, then the stream source (run-time streams, then
 * NATS Streaming channels, stream_lookup.c), which the host pins for each
 * Lua operation. See components.h and docs/lua.md ("For riftd: the host
 * API").
 */
#include "daemon/components.h"

#include "lua/plugin_host.h"

#include <string.h>

struct rift_daemon_lua {
    rift_plugin_host *host;
    rift_daemon_streams *streams;
    rift_server_stream_source source;
};

/* The token of a configured stream, which needs no pin (it stays open
 * until the host is gone). */
static char configured_token;

/* Worker threads: the configured streams are fixed, the source's acquire
 * and release take their own locks (a channel's release is atomic plus an
 * eventfd write, a run-time stream's may close a deleted stream). */
static rift_stream *acquire(void *ud, const char *name, void **token) {
    rift_daemon_lua *l = ud;
    rift_stream *st = rift_daemon_streams_find(l->streams, name);
    *token = &configured_token;
    if (st == NULL) {
        *token = NULL;
        st = l->source.acquire != NULL
                 ? l->source.acquire(l->source.ud, name, strlen(name), token)
                 : NULL;
    }
    return st;
}

static void release(void *ud, void *token, bool appended) {
    rift_daemon_lua *l = ud;
    if (token != &configured_token) {
        l->source.release(l->source.ud, token, appended);
    }
}

/* The host's view of |cfg| (pointers into it, valid for the call). */
static int apply(rift_daemon_lua *l, const rift_config *cfg, rift_error *err) {
    rift_plugin_spec *specs =
        rift_calloc(NULL, cfg->n_plugins + 1, sizeof(*specs));
    rift_plugin_subscription *subs =
        rift_calloc(NULL, cfg->messaging.n_subscriptions + 1, sizeof(*subs));
    if (specs == NULL || subs == NULL) {
        rift_free(NULL, specs);
        rift_free(NULL, subs);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        const rift_config_plugin *p = &cfg->plugins[i];
        specs[i] = (rift_plugin_spec){
            .name = p->name,
            .path = p->path,
            .restricted = p->restricted,
            .publish = (const char *const *)p->publish,
            .n_publish = p->n_publish,
            .subscribe = (const char *const *)p->subscribe,
            .n_subscribe = p->n_subscribe,
            .control = p->control,
            .memory_bytes = (size_t)p->memory_mb * 1024 * 1024,
            .instructions = p->instructions,
            .deadline_ms = p->deadline_ms,
        };
    }
    for (size_t i = 0; i < cfg->messaging.n_subscriptions; i++) {
        subs[i].subject = cfg->messaging.subscriptions[i].subject;
        subs[i].queue = cfg->messaging.subscriptions[i].queue;
    }
    /* The source always goes along: the host keeps a state for it only
     * when it defines message handlers, and checks the pairing rule. */
    /* The file's own name, not its path: the state's errors reach its
     * status and rift.events.plugin, which remote subscribers read. */
    const char *slash =
        cfg->source_name != NULL ? strrchr(cfg->source_name, '/') : NULL;
    rift_plugin_compat compat = {
        .name = slash != NULL ? slash + 1 : cfg->source_name,
        .source = cfg->source,
        .source_len = cfg->source_len,
        .subs = subs,
        .n_subs = cfg->messaging.n_subscriptions,
    };
    int rc =
        rift_plugin_host_apply(l->host, specs, cfg->n_plugins, &compat, err);
    rift_free(NULL, specs);
    rift_free(NULL, subs);
    return rc;
}

int rift_daemon_lua_start(rift_daemon_lua **pl, rift_broker *broker,
                          rift_daemon_streams *streams,
                          rift_server_stream_source source,
                          const rift_config *cfg, rift_error *err) {
    rift_daemon_lua *l = rift_calloc(NULL, 1, sizeof(*l));
    if (l == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    l->streams = streams;
    l->source = source;
    rift_plugin_host_settings s;
    rift_plugin_host_settings_default(&s);
    s.stream_acquire = acquire;
    s.stream_release = release;
    s.stream_ud = l;
    int rc = rift_plugin_host_new(&l->host, broker, &s, err);
    if (rc == 0) {
        rc = apply(l, cfg, err);
    }
    if (rc != 0) {
        rift_daemon_lua_stop(l);
        return rc;
    }
    if (cfg->n_plugins > 0) {
        rift_log(RIFT_LOG_INFO, "rift: %zu Lua plugin(s) loaded",
                 cfg->n_plugins);
    }
    *pl = l;
    return 0;
}

int rift_daemon_lua_reload(rift_daemon_lua *l, const rift_config *cfg,
                           rift_error *err) {
    return apply(l, cfg, err);
}

void rift_daemon_lua_stop(rift_daemon_lua *l) {
    if (l == NULL) {
        return;
    }
    rift_plugin_host_del(l->host);
    rift_free(NULL, l);
}

json_t *rift_daemon_lua_plugins(rift_daemon_lua *l, const rift_config *cfg) {
    (void)cfg;
    json_t *list = l != NULL ? rift_plugin_host_status_json(l->host) : NULL;
    return list != NULL ? list : json_array();
}
