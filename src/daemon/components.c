/*
 * components.c — stand-ins for the components riftd composes (daemon
 * layer): streams, QUIC server, Lua plugin host. See components.h. Every
 * function below is a stub until its component lands; each TODO says what
 * the real body does.
 */
#include "daemon/components.h"

#include "daemon/tls.h"

/* ---- Streams ---- */

struct rift_daemon_streams {
    int unused;
};

int rift_daemon_streams_open(rift_daemon_streams **ps, const rift_config *cfg,
                             rift_error *err) {
    /* TODO(issue 6): open each cfg->messaging.streams[i] with the durable
     * store (rift_stream_open from include/rift/stream.h, memory when
     * storage_path is NULL, max_age_ms included) and report failures as
     * "messaging.streams.<name>: <error>". */
    (void)err;
    *ps = rift_calloc(NULL, 1, sizeof(**ps));
    if (*ps == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (cfg->messaging.n_streams > 0) {
        rift_log(RIFT_LOG_WARN,
                 "rift: %zu stream(s) configured but the stream store is not "
                 "built in yet; they are not opened",
                 cfg->messaging.n_streams);
    }
    return 0;
}

void rift_daemon_streams_close(rift_daemon_streams *s) {
    rift_free(NULL, s);
}

json_t *rift_daemon_stream_summary(rift_daemon_streams *s,
                                   const rift_config_stream *cfg) {
    /* TODO(issue 6): real counters from the open stream. */
    (void)s;
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "name", cfg->name,
                     "storage", cfg->storage_path ? "file" : "memory",
                     "messages", (json_int_t)0, "bytes", (json_int_t)0,
                     "first_seq", (json_int_t)0, "last_seq", (json_int_t)0,
                     "consumers", (json_int_t)0, "open", 0);
}

/* ---- QUIC server ---- */

struct rift_daemon_quic {
    int unused;
};

int rift_daemon_quic_start(rift_daemon_quic **pq, rift_broker *broker,
                           rift_daemon_streams *streams, const rift_config *cfg,
                           rift_error *err) {
    (void)broker;
    (void)streams;
    *pq = NULL;
    const rift_config_messaging *m = &cfg->messaging;
    if (m->listen == NULL) {
        return 0;
    }
    /* Credentials are validated before anything binds (§5.2). */
    int rc = rift_daemon_tls_check(m->certificate, m->private_key, NULL, err);
    if (rc != 0) {
        return rc;
    }
    /* TODO(issue 6): bind the QUIC server (src/server) on m->listen_addr
     * with the principals, limits and streams, then let the caller log
     * "rift: messaging QUIC on <addr>". */
    rift_log(RIFT_LOG_WARN,
             "rift: messaging listener %s configured but the QUIC server is "
             "not built in yet; not listening",
             m->listen);
    return 0;
}

void rift_daemon_quic_stop(rift_daemon_quic *q) {
    (void)q;
}

bool rift_daemon_quic_alive(const rift_daemon_quic *q) {
    (void)q;
    return true;
}

json_t *rift_daemon_quic_connections(const rift_daemon_quic *q) {
    /* TODO(issue 6): per-identity connection counts from the server. */
    (void)q;
    return json_pack("{s:I,s:{}}", "total", (json_int_t)0, "by_identity");
}

/* ---- Lua plugin host ---- */

struct rift_daemon_lua {
    int unused;
};

int rift_daemon_lua_start(rift_daemon_lua **pl, rift_broker *broker,
                          const rift_config *cfg, rift_error *err) {
    /* TODO(issue 6): start the plugin host of src/lua: load cfg->plugins,
     * evaluate on_message/rift.on("message") from cfg->source and subscribe
     * cfg->messaging.subscriptions before ready. */
    (void)broker;
    *pl = rift_calloc(NULL, 1, sizeof(**pl));
    if (*pl == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (cfg->n_plugins > 0 || cfg->messaging.n_subscriptions > 0) {
        rift_log(RIFT_LOG_WARN,
                 "rift: Lua plugins and message handlers are configured but "
                 "the plugin host is not built in yet; they do not run");
    }
    return 0;
}

int rift_daemon_lua_reload(rift_daemon_lua *l, const rift_config *cfg,
                           rift_error *err) {
    /* TODO(issue 6): hand the new sources to the plugin host. */
    (void)l;
    (void)cfg;
    (void)err;
    return 0;
}

void rift_daemon_lua_stop(rift_daemon_lua *l) {
    rift_free(NULL, l);
}

json_t *rift_daemon_lua_plugins(const rift_daemon_lua *l,
                                const rift_config *cfg) {
    (void)l;
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < cfg->n_plugins; i++) {
        json_array_append_new(list, json_pack("{s:s,s:s}", "name",
                                              cfg->plugins[i].name, "state",
                                              "not loaded"));
    }
    return list;
}
