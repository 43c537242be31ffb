/*
 * plugins.c — riftd's Lua plugin host component (daemon layer). Until the
 * plugin host of src/lua lands, plugins and message handlers are
 * validated and listed but do not run. See components.h.
 */
#include "daemon/components.h"

struct rift_daemon_lua {
    int unused;
};

int rift_daemon_lua_start(rift_daemon_lua **pl, rift_broker *broker,
                          rift_daemon_streams *streams, const rift_config *cfg,
                          rift_error *err) {
    (void)broker;
    (void)streams;
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
    (void)l;
    (void)cfg;
    (void)err;
    return 0;
}

void rift_daemon_lua_stop(rift_daemon_lua *l) {
    rift_free(NULL, l);
}

json_t *rift_daemon_lua_plugins(rift_daemon_lua *l, const rift_config *cfg) {
    (void)l;
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < cfg->n_plugins; i++) {
        json_array_append_new(list, json_pack("{s:s,s:s}", "name",
                                              cfg->plugins[i].name, "state",
                                              "not loaded"));
    }
    return list;
}
