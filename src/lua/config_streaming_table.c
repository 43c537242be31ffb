/*
 * config_streaming_table.c — reads the `streaming` table of a riftd
 * configuration into rift_config_streaming (lua layer; the model is
 * config/config_streaming.h, the reference docs/streaming.md). Key names
 * are the contract of issue 16; unknown keys are refused like everywhere
 * else.
 */
#include "config_lua.h"

#include "subject/subject.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

static const char *const streaming_keys[] = {
    "cluster_id",    "discover_prefix", "nats_server", "store", "dir",
    "sync_on_write", "limits",          "heartbeat",   NULL,
};
static const char *const limits_keys[] = {
    "max_channels", "max_subs",          "max_msgs", "max_bytes",
    "max_age_ms",   "max_inactivity_ms", "channels", NULL,
};
static const char *const channel_keys[] = {
    "max_msgs", "max_bytes", "max_age_ms", "max_inactivity_ms", NULL,
};
static const char *const heartbeat_keys[] = {"interval_ms", "timeout_ms",
                                             "fail_count", NULL};

#define MAX_U32          4294967295ull
#define MAX_TEN_YEARS_MS 315360000000ull

static int expect_table(lua_State *L, int idx, const char *path,
                        rift_error *err) {
    if (lua_type(L, idx) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a table", path);
    }
    return 0;
}

/* read_limits reads the four message limits of |path| (0 = unlimited). */
static int read_limits(lua_State *L, int t, const char *path,
                       rift_stan_limits *l, rift_error *err) {
    bool present;
    int rc;
    if ((rc = rift_config_get_int(L, t, path, "max_msgs", 0, UINT64_MAX / 2,
                                  false, &l->max_msgs, &present, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_bytes", 0, UINT64_MAX / 2,
                                  false, &l->max_bytes, &present, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_age_ms", 0, MAX_TEN_YEARS_MS,
                                  false, &l->max_age_ms, &present, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_inactivity_ms", 0,
                                  MAX_TEN_YEARS_MS, false,
                                  &l->max_inactivity_ms, &present, err)) != 0) {
        return rc;
    }
    return 0;
}

/* parse_channels reads limits.channels = { [pattern] = { limits } }; each
 * override starts from the table-wide limits. */
static int parse_channels(lua_State *L, int limits, rift_config_streaming *c,
                          rift_error *err) {
    int type = rift_config_push_field(L, limits, "channels");
    int t = lua_gettop(L);
    int rc = 0;
    if (type == LUA_TNIL) {
        goto out;
    }
    if ((rc = expect_table(L, t, "streaming.limits.channels", err)) != 0) {
        goto out;
    }
    size_t n = 0;
    for (lua_pushnil(L); lua_next(L, t) != 0; lua_pop(L, 1)) {
        n++;
    }
    c->channels = rift_calloc(NULL, n ? n : 1, sizeof *c->channels);
    if (!c->channels) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (lua_pushnil(L); lua_next(L, t) != 0; lua_pop(L, 1)) {
        size_t pl;
        const char *pat =
            lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &pl) : NULL;
        if (!pat || !rift_subject_valid(pat, pl, true, 1024)) {
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "streaming.limits.channels: keys must be "
                                "channel names or patterns");
            lua_pop(L, 2);
            goto out;
        }
        char path[RIFT_CONFIG_PATH_MAX];
        snprintf(path, sizeof path, "streaming.limits.channels[\"%.100s\"]",
                 pat);
        rift_stan_channel_limits *cl = &c->channels[c->n_channels];
        cl->limits = c->limits;
        cl->pattern = rift_strndup(NULL, pat, pl);
        if (cl->pattern) {
            c->n_channels++;
        }
        int v = lua_gettop(L);
        if (!cl->pattern) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        } else if ((rc = expect_table(L, v, path, err)) == 0 &&
                   (rc = rift_config_check_keys(L, v, path, channel_keys,
                                                err)) == 0) {
            rc = read_limits(L, v, path, &cl->limits, err);
        }
        if (rc != 0) {
            lua_pop(L, 2);
            goto out;
        }
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

static int parse_limits(lua_State *L, int s, rift_config_streaming *c,
                        rift_error *err) {
    int type = rift_config_push_field(L, s, "limits");
    int t = lua_gettop(L);
    int rc = 0;
    bool present;
    if (type != LUA_TNIL &&
        ((rc = expect_table(L, t, "streaming.limits", err)) != 0 ||
         (rc = rift_config_check_keys(L, t, "streaming.limits", limits_keys,
                                      err)) != 0 ||
         (rc = rift_config_get_int(L, t, "streaming.limits", "max_channels", 1,
                                   65536, false, &c->max_channels, &present,
                                   err)) != 0 ||
         (rc = rift_config_get_int(L, t, "streaming.limits", "max_subs", 1,
                                   65536, false, &c->max_subs, &present,
                                   err)) != 0 ||
         (rc = read_limits(L, t, "streaming.limits", &c->limits, err)) != 0 ||
         (rc = parse_channels(L, t, c, err)) != 0)) {
        lua_settop(L, t - 1);
        return rc;
    }
    lua_settop(L, t - 1);
    return 0;
}

static int parse_heartbeat(lua_State *L, int s, rift_config_streaming *c,
                           rift_error *err) {
    int type = rift_config_push_field(L, s, "heartbeat");
    int t = lua_gettop(L);
    int rc = 0;
    bool present;
    const char *p = "streaming.heartbeat";
    if (type != LUA_TNIL &&
        ((rc = expect_table(L, t, p, err)) != 0 ||
         (rc = rift_config_check_keys(L, t, p, heartbeat_keys, err)) != 0 ||
         (rc = rift_config_get_int(L, t, p, "interval_ms", 1, MAX_U32, true,
                                   &c->hb_interval_ms, &present, err)) != 0 ||
         (rc = rift_config_get_int(L, t, p, "timeout_ms", 1, MAX_U32, true,
                                   &c->hb_timeout_ms, &present, err)) != 0 ||
         (rc = rift_config_get_int(L, t, p, "fail_count", 1, 1000000, false,
                                   &c->hb_fail_count, &present, err)) != 0)) {
        lua_settop(L, t - 1);
        return rc;
    }
    lua_settop(L, t - 1);
    return 0;
}

static void defaults(rift_config_streaming *c) {
    rift_stan_settings d;
    rift_stan_settings_default(&d);
    c->enabled = true;
    c->sync_on_write = true;
    c->max_channels = d.max_channels;
    c->max_subs = d.max_subs;
    c->limits = d.limits;
    c->hb_interval_ms = d.hb_interval_ms;
    c->hb_timeout_ms = d.hb_timeout_ms;
    c->hb_fail_count = d.hb_fail_count;
}

static int dup_default(char **out, const char *v, rift_error *err) {
    if (*out == NULL && (*out = rift_strndup(NULL, v, strlen(v))) == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* check_values applies the rules the keys' types cannot express. */
static int check_values(rift_config_streaming *c, const char *store,
                        const char *data_dir, rift_error *err) {
    if (!rift_stan_id_valid(c->cluster_id, strlen(c->cluster_id))) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.cluster_id: only alphanumeric and "
                              "`-` or `_` characters allowed");
    }
    if (!rift_subject_valid(c->discover_prefix, strlen(c->discover_prefix),
                            false, 512)) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.discover_prefix: invalid subject");
    }
    if (c->nats_server) {
        int rc = rift_stan_nats_url_check(c->nats_server, NULL, 0, err);
        if (rc != 0) {
            return rc;
        }
    }
    if (store && strcmp(store, "memory") != 0 && strcmp(store, "file") != 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.store: expected \"memory\" or "
                              "\"file\"");
    }
    c->file_store = store && strcmp(store, "file") == 0;
    if (c->file_store && !c->dir) {
        if (!data_dir) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                  "streaming.dir: required with store = "
                                  "\"file\" when data_dir is not set");
        }
        size_t n = strlen(data_dir) + sizeof "/streaming";
        if (!(c->dir = rift_malloc(NULL, n))) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        snprintf(c->dir, n, "%s/streaming", data_dir);
    }
    if (c->dir && c->dir[0] == '\0') {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.dir: path must not be empty");
    }
    return 0;
}

int rift_config_parse_streaming(lua_State *L, int root, rift_config *cfg,
                                rift_error *err) {
    rift_config_streaming *c = &cfg->streaming;
    int type = rift_config_push_field(L, root, "streaming");
    int t = lua_gettop(L);
    int rc = 0;
    char *store = NULL;
    const char *p = "streaming";
    if (type == LUA_TNIL) {
        goto out;
    }
    defaults(c);
    if ((rc = expect_table(L, t, p, err)) != 0 ||
        (rc = rift_config_check_keys(L, t, p, streaming_keys, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "cluster_id", &c->cluster_id,
                                     err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "discover_prefix",
                                     &c->discover_prefix, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "nats_server", &c->nats_server,
                                     err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "store", &store, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "dir", &c->dir, err)) != 0 ||
        (rc = rift_config_get_bool(L, t, p, "sync_on_write", &c->sync_on_write,
                                   err)) != 0 ||
        (rc = parse_limits(L, t, c, err)) != 0 ||
        (rc = parse_heartbeat(L, t, c, err)) != 0 ||
        (rc = dup_default(&c->cluster_id, "test-cluster", err)) != 0 ||
        (rc = dup_default(&c->discover_prefix, "_STAN.discover", err)) != 0) {
        goto out;
    }
    rc = check_values(c, store, cfg->data_dir, err);
out:
    rift_free(NULL, store);
    lua_settop(L, t - 1);
    return rc;
}
