/*
 * config_parse.c — the root table of the Lua configuration (lua layer; fills
 * the daemon's rift_config): riftd's own keys (plugins, data_dir, log, quic,
 * monitor, limits),
 * on_message and the §7.1 pairing rule, and the hand-off to the messaging
 * parser.
 */
#include "lua/config_lua.h"

#include "subject/name.h"

#include <inttypes.h>
#include <string.h>

static const char *const root_keys[] = {
    "messaging", "plugins", "data_dir", "log",       "on_message", "quic",
    "monitor",   "limits",  "nats",     "streaming", "cluster",    NULL,
};

static const char *const limits_keys[] = {"per_identity", "control_reserve",
                                          NULL};
static const char *const per_identity_keys[] = {"connections", "subscriptions",
                                                "consumers", NULL};
static const char *const reserve_keys[] = {"connections", "subscriptions",
                                           NULL};

static const char *const plugin_keys[] = {
    "name", "path", "grants", "memory_mb", "instructions", "deadline_ms", NULL,
};

static const char *const grant_keys[] = {"publish", "subscribe", "control",
                                         NULL};

static const char *const log_keys[] = {"level", NULL};

static const char *const quic_keys[] = {"retry", NULL};

static const char *const monitor_keys[] = {"listen", NULL};

static const char plugin_names_text[] =
    "plugins: names must be unique and contain 1..=128 letters, digits, "
    "underscores or hyphens";

/* ---- plugins ---- */

static int set_plugin_defaults(rift_config_plugin *p, rift_error *err) {
    size_t n = strlen(p->name);
    p->path = rift_malloc(NULL, n + sizeof("plugins/"));
    if (p->path == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    memcpy(p->path, "plugins/", 8);
    memcpy(p->path + 8, p->name, n + 1);
    p->memory_mb = RIFT_CONFIG_PLUGIN_MEMORY_MB;
    p->instructions = RIFT_CONFIG_PLUGIN_INSTRUCTIONS;
    p->deadline_ms = RIFT_CONFIG_PLUGIN_DEADLINE_MS;
    return 0;
}

static int parse_grants(lua_State *L, int t, const char *path,
                        const rift_config *cfg, rift_config_plugin *p,
                        rift_error *err) {
    int rc = 0;
    char gpath[RIFT_CONFIG_PATH_MAX + 16];
    snprintf(gpath, sizeof(gpath), "%s.grants", path);
    int type = rift_config_push_field(L, t, "grants");
    int g = lua_gettop(L);
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "%s: expected a table", gpath);
        goto out;
    }
    p->restricted = true;
    size_t max = cfg->messaging.max_subject_bytes;
    if ((rc = rift_config_check_keys(L, g, gpath, grant_keys, err)) != 0 ||
        (rc = rift_config_get_patterns(L, g, gpath, "publish", "plugins", max,
                                       0, &p->publish, &p->n_publish, NULL,
                                       err)) != 0 ||
        (rc = rift_config_get_patterns(L, g, gpath, "subscribe", "plugins", max,
                                       0, &p->subscribe, &p->n_subscribe, NULL,
                                       err)) != 0 ||
        (rc = rift_config_get_bool(L, g, gpath, "control", &p->control, err)) !=
            0) {
        goto out;
    }
out:
    lua_settop(L, g - 1);
    return rc;
}

static int parse_plugin(lua_State *L, int t, const rift_config *cfg,
                        rift_config_plugin *p, rift_error *err) {
    int rc;
    size_t len;
    if (lua_type(L, t) == LUA_TSTRING) {
        const char *s = lua_tolstring(L, t, &len);
        if (!rift_plugin_name_valid(s, len)) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                  plugin_names_text);
        }
        if ((p->name = rift_config_strdup(s, len)) == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        return set_plugin_defaults(p, err);
    }
    if (lua_type(L, t) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "plugins: expected a list of names or tables");
    }
    if ((rc = rift_config_check_keys(L, t, "plugins", plugin_keys, err)) != 0) {
        return rc;
    }
    int type = rift_config_push_field(L, t, "name");
    const char *s = type == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (s == NULL || !rift_plugin_name_valid(s, len)) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                              plugin_names_text);
    }
    p->name = rift_config_strdup(s, len);
    lua_pop(L, 1);
    if (p->name == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if ((rc = set_plugin_defaults(p, err)) != 0) {
        return rc;
    }
    char path[RIFT_CONFIG_PATH_MAX];
    snprintf(path, sizeof(path), "plugins.%s", p->name);
    char *dir = NULL;
    rc = rift_config_get_string(L, t, path, "path", &dir, err);
    if (dir != NULL) {
        rift_free(NULL, p->path);
        p->path = dir;
    }
    if (rc != 0) {
        return rc;
    }
    if (p->path[0] == '\0') {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.path: path must not be empty", path);
    }
    uint64_t mem = p->memory_mb, deadline = p->deadline_ms;
    if ((rc = parse_grants(L, t, path, cfg, p, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "memory_mb", 1, 1024, false, &mem,
                                  NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "instructions", 1, 1000000000,
                                  false, &p->instructions, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "deadline_ms", 1, 60000, true,
                                  &deadline, NULL, err)) != 0) {
        return rc;
    }
    p->memory_mb = (uint32_t)mem;
    p->deadline_ms = (uint32_t)deadline;
    return 0;
}

static bool plugin_declared(const rift_config *cfg, const char *name,
                            size_t len) {
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        if (cfg->plugins[i].name != NULL &&
            strlen(cfg->plugins[i].name) == len &&
            memcmp(cfg->plugins[i].name, name, len) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * The `plugins` list, then the names loaded with rift.plugin("name") during
 * evaluation (table at |names|, in call order) that the list does not
 * already declare; those get default settings.
 */
static int parse_plugins(lua_State *L, int root, int names, rift_config *cfg,
                         rift_error *err) {
    int rc = 0;
    size_t n = 0;
    int type = rift_config_push_field(L, root, "plugins");
    int t = lua_gettop(L);
    if (type != LUA_TNIL &&
        (rc = rift_config_list_len(L, t, "plugins", &n, err)) != 0) {
        goto out;
    }
    size_t n_names = (size_t)lua_rawlen(L, names);
    if (n + n_names > RIFT_CONFIG_MAX_PLUGINS) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "plugins: at most %d plugins are allowed",
                            RIFT_CONFIG_MAX_PLUGINS);
        goto out;
    }
    cfg->plugins = rift_calloc(NULL, n + n_names + 1, sizeof(*cfg->plugins));
    if (cfg->plugins == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        rift_config_plugin *p = &cfg->plugins[cfg->n_plugins++];
        lua_rawgeti(L, t, (lua_Integer)(i + 1));
        rc = parse_plugin(L, lua_gettop(L), cfg, p, err);
        lua_pop(L, 1);
        if (rc != 0) {
            goto out;
        }
        for (size_t j = 0; j + 1 < cfg->n_plugins; j++) {
            if (strcmp(cfg->plugins[j].name, p->name) == 0) {
                rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                    plugin_names_text);
                goto out;
            }
        }
    }
    for (size_t i = 0; i < n_names; i++) {
        lua_rawgeti(L, names, (lua_Integer)(i + 1));
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (s != NULL && !plugin_declared(cfg, s, len)) {
            rift_config_plugin *p = &cfg->plugins[cfg->n_plugins++];
            p->name = rift_config_strdup(s, len);
            if (p->name == NULL || (rc = set_plugin_defaults(p, err)) != 0) {
                lua_pop(L, 1);
                rc = rc ? rc
                        : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                goto out;
            }
        }
        lua_pop(L, 1);
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

/* ---- data_dir, log ---- */

static int parse_data_dir(lua_State *L, int root, rift_config *cfg,
                          rift_error *err) {
    int rc =
        rift_config_get_string(L, root, "", "data_dir", &cfg->data_dir, err);
    if (rc == 0 && cfg->data_dir != NULL && cfg->data_dir[0] == '\0') {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "data_dir: path must not be empty");
    }
    return rc;
}

static int level_from(const char *s, size_t len, rift_log_level *out) {
    static const struct {
        const char *name;
        rift_log_level level;
    } levels[] = {
        {"debug", RIFT_LOG_DEBUG}, {"info", RIFT_LOG_INFO},
        {"warn", RIFT_LOG_WARN},   {"error", RIFT_LOG_ERROR},
        {"off", RIFT_LOG_OFF},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(levels); i++) {
        if (strlen(levels[i].name) == len &&
            memcmp(levels[i].name, s, len) == 0) {
            *out = levels[i].level;
            return 0;
        }
    }
    return -1;
}

/* `log = "info"` or `log = { level = "info" }`. */
static int parse_log(lua_State *L, int root, rift_config *cfg,
                     rift_error *err) {
    int rc = 0;
    int type = rift_config_push_field(L, root, "log");
    int t = lua_gettop(L);
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type == LUA_TTABLE) {
        if ((rc = rift_config_check_keys(L, t, "log", log_keys, err)) != 0) {
            goto out;
        }
        type = rift_config_push_field(L, t, "level");
        if (type == LUA_TNIL) {
            goto out;
        }
    }
    size_t len = 0;
    const char *s =
        lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (s == NULL || level_from(s, len, &cfg->log_level) != 0) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "log.level: expected one of debug, info, warn, "
                            "error, off");
        goto out;
    }
    cfg->log_level_set = true;
out:
    lua_settop(L, t - 1);
    return rc;
}

/* `quic = { retry = bool }`: transport options the original's messaging
 * table does not have (so they live outside it). */
static int parse_quic(lua_State *L, int root, rift_config *cfg,
                      rift_error *err) {
    int rc = 0;
    int type = rift_config_push_field(L, root, "quic");
    int t = lua_gettop(L);
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "quic: expected a table");
        goto out;
    }
    if ((rc = rift_config_check_keys(L, t, "quic", quic_keys, err)) != 0) {
        goto out;
    }
    rc = rift_config_get_bool(L, t, "quic", "retry", &cfg->quic.retry, err);
out:
    lua_settop(L, t - 1);
    return rc;
}

/* `monitor = { listen = "ip:port" }`: the HTTP monitoring listener; an
 * empty table takes the loopback default. */
static int parse_monitor(lua_State *L, int root, rift_config *cfg,
                         rift_error *err) {
    int rc = 0;
    int type = rift_config_push_field(L, root, "monitor");
    int t = lua_gettop(L);
    rift_config_monitor *mon = &cfg->monitor;
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "monitor: expected a table");
        goto out;
    }
    if ((rc = rift_config_check_keys(L, t, "monitor", monitor_keys, err)) !=
            0 ||
        (rc = rift_config_get_string(L, t, "monitor", "listen", &mon->listen,
                                     err)) != 0) {
        goto out;
    }
    if (mon->listen == NULL &&
        (mon->listen = rift_strndup(NULL, RIFT_CONFIG_MONITOR_DEFAULT_LISTEN,
                                    sizeof(RIFT_CONFIG_MONITOR_DEFAULT_LISTEN) -
                                        1)) == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!rift_config_parse_listen(mon->listen, &mon->listen_addr,
                                  &mon->listen_addr_len)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "monitor.listen: expected an ip:port socket "
                            "address");
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

/* ---- limits ---- */

#define LIMITS_MAX 1000000

/* An integer in |min|..=LIMITS_MAX at t[key]; absent leaves *out as is. */
static int get_count(lua_State *L, int t, const char *path, const char *key,
                     uint64_t min, uint64_t *out, bool *present,
                     rift_error *err) {
    int type = rift_config_push_field(L, t, key);
    lua_pop(L, 1);
    if (present != NULL) {
        *present = type != LUA_TNIL;
    }
    if (type == LUA_TNIL) {
        return 0;
    }
    uint64_t v = 0;
    rift_error ignored;
    if (rift_config_get_int(L, t, path, key, 0, LIMITS_MAX, false, &v, NULL,
                            &ignored) != 0 ||
        v < min) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.%s: expected an integer in %" PRIu64 "..=%d",
                              path, key, min, LIMITS_MAX);
    }
    *out = v;
    return 0;
}

static int open_table(lua_State *L, int parent, const char *key,
                      const char *path, const char *const *keys, int *t,
                      rift_error *err) {
    int type = rift_config_push_field(L, parent, key);
    *t = lua_gettop(L);
    if (type == LUA_TNIL) {
        *t = 0;
        lua_pop(L, 1);
        return 0;
    }
    if (type != LUA_TTABLE) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a table", path);
    }
    int rc = rift_config_check_keys(L, *t, path, keys, err);
    if (rc != 0) {
        lua_pop(L, 1);
    }
    return rc;
}

/*
 * `limits = { per_identity = {...}, control_reserve = {...} }`: riftd's
 * per-identity quotas, kept outside `messaging` so that block stays the
 * original's. Reserves are checked against the capacities they cut into.
 */
static int parse_limits(lua_State *L, int root, rift_config *cfg,
                        rift_error *err) {
    int t, u, rc;
    rift_config_limits *l = &cfg->limits;
    if ((rc = open_table(L, root, "limits", "limits", limits_keys, &t, err)) !=
            0 ||
        t == 0) {
        return rc;
    }
    if ((rc = open_table(L, t, "per_identity", "limits.per_identity",
                         per_identity_keys, &u, err)) != 0) {
        goto out;
    }
    if (u != 0) {
        const char *p = "limits.per_identity";
        rc = get_count(L, u, p, "connections", 1, &l->connections, NULL, err);
        if (rc == 0) {
            rc = get_count(L, u, p, "subscriptions", 1, &l->subscriptions, NULL,
                           err);
        }
        if (rc == 0) {
            rc = get_count(L, u, p, "consumers", 1, &l->consumers, NULL, err);
        }
        lua_pop(L, 1);
        if (rc != 0) {
            goto out;
        }
    }
    if ((rc = open_table(L, t, "control_reserve", "limits.control_reserve",
                         reserve_keys, &u, err)) != 0) {
        goto out;
    }
    if (u != 0) {
        const char *p = "limits.control_reserve";
        rc = get_count(L, u, p, "connections", 0, &l->reserve_connections,
                       &l->reserve_connections_set, err);
        if (rc == 0) {
            rc = get_count(L, u, p, "subscriptions", 0,
                           &l->reserve_subscriptions,
                           &l->reserve_subscriptions_set, err);
        }
        lua_pop(L, 1);
        if (rc != 0) {
            goto out;
        }
    }
    const rift_config_messaging *m = &cfg->messaging;
    if (l->reserve_connections_set &&
        l->reserve_connections >= m->max_connections) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "limits.control_reserve.connections: must be "
                            "below messaging.max_connections");
    } else if (l->reserve_subscriptions_set &&
               l->reserve_subscriptions >= m->max_subscriptions) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "limits.control_reserve.subscriptions: must be "
                            "below messaging.max_subscriptions");
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

/*
 * A plugin and a principal of the same name would read as one identity in
 * logs and status while holding different grants and consumers; refusing
 * the configuration is clearer than guessing which one an operator meant.
 */
/* A replicated stream lives in the cluster backbone's JetStream. */
static int check_replicas(const rift_config *cfg, rift_error *err) {
    for (size_t i = 0; i < cfg->messaging.n_streams; i++) {
        const rift_config_stream *s = &cfg->messaging.streams[i];
        if (s->replicas > 1 && !cfg->cluster.enabled) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                  "messaging.streams.%s.replicas: %llu "
                                  "replicas need a `cluster` table "
                                  "(docs/cluster.md)",
                                  s->name, (unsigned long long)s->replicas);
        }
    }
    return 0;
}

static int check_names_disjoint(const rift_config *cfg, rift_error *err) {
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        const char *name = cfg->plugins[i].name;
        for (size_t j = 0; j < cfg->messaging.n_principals; j++) {
            if (strcmp(cfg->messaging.principals[j].name, name) == 0) {
                return rift_error_set(
                    err, RIFT_ERR_INVALID_CONFIG,
                    "plugins.%s: a messaging principal has the same name; "
                    "plugins and principals need distinct names",
                    name);
            }
        }
    }
    return 0;
}

/* ---- Root ---- */

int rift_config_parse_root(lua_State *L, int root, int plugin_names,
                           rift_config *cfg, rift_error *err) {
    int rc;
    if ((rc = rift_config_check_keys(L, root, "", root_keys, err)) != 0) {
        return rc;
    }
    int type = rift_config_push_field(L, root, "on_message");
    lua_pop(L, 1);
    if (type != LUA_TNIL && type != LUA_TFUNCTION) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "on_message: expected a function");
    }
    cfg->has_on_message = type == LUA_TFUNCTION;
    if ((rc = rift_config_parse_nats(L, root, cfg, err)) != 0 ||
        (rc = rift_config_parse_messaging(L, root, cfg, err)) != 0 ||
        (rc = rift_config_nats_finish(cfg, err)) != 0 ||
        (rc = parse_plugins(L, root, plugin_names, cfg, err)) != 0 ||
        (rc = parse_data_dir(L, root, cfg, err)) != 0 ||
        (rc = parse_log(L, root, cfg, err)) != 0 ||
        (rc = parse_quic(L, root, cfg, err)) != 0 ||
        (rc = parse_monitor(L, root, cfg, err)) != 0 ||
        (rc = parse_limits(L, root, cfg, err)) != 0 ||
        (rc = rift_config_parse_streaming(L, root, cfg, err)) != 0 ||
        (rc = rift_config_parse_cluster(L, root, cfg, err)) != 0 ||
        (rc = check_replicas(cfg, err)) != 0 ||
        (rc = check_names_disjoint(cfg, err)) != 0) {
        return rc;
    }
    /* §7.1: handlers without subscriptions never run, subscriptions without
     * handlers only fill queues; either is a configuration mistake. Folder
     * plugins register their rift.on("message") handlers only when the
     * plugin host loads them, so with plugins configured the host makes
     * the subscriptions-without-handlers check across everything. */
    bool handlers = cfg->has_on_message || cfg->n_message_handlers > 0;
    bool subs = cfg->messaging.n_subscriptions > 0;
    if ((handlers && !subs) || (subs && !handlers && cfg->n_plugins == 0)) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "on_message and messaging.subscriptions must be "
                              "configured together");
    }
    return 0;
}
