/*
 * config_cluster_table.c — reads the `cluster` table of a riftd
 * configuration into rift_config_cluster (lua layer; the model is
 * config/config_cluster.h, the reference docs/cluster.md). Unknown keys
 * are refused like everywhere else; credentials come only from the
 * environment, by name.
 */
#include "config_lua.h"

#include "stan/stan.h"
#include "subject/name.h"
#include "subject/subject.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

static const char *const cluster_keys[] = {"nats", "node", "prefix", NULL};
static const char *const nats_keys[] = {"servers",   "user", "password_env",
                                        "token_env", "tls",  NULL};
static const char *const tls_keys[] = {"ca", NULL};

#define MAX_SERVERS 64

#define bad(err, ...)                                                          \
 rift_error_set((err), RIFT_ERR_INVALID_CONFIG, __VA_ARGS__)

static int expect_table(lua_State *L, int idx, const char *path,
                        rift_error *err) {
    if (lua_type(L, idx) != LUA_TTABLE) {
        return bad(err, "%s: expected a table", path);
    }
    return 0;
}

/* A URL error of rift_stan_nats_url_check names streaming.nats_server;
 * the same rule here names the list entry. */
static int check_url(const char *url, size_t i, rift_error *err) {
    rift_error e = {0};
    if (rift_stan_nats_url_check(url, NULL, 0, &e) == 0) {
        return 0;
    }
    const char *why = strchr(e.text, ':');
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "cluster.nats.servers[%zu]:%s", i + 1,
                          why ? why + 1 : " invalid URL");
}

static int parse_servers(lua_State *L, int nats, rift_config_cluster *c,
                         rift_error *err) {
    const char *p = "cluster.nats.servers";
    int type = rift_config_push_field(L, nats, "servers");
    int t = lua_gettop(L);
    int rc = 0;
    size_t n = 0;
    if (type == LUA_TNIL) {
        rc = bad(err, "%s: required (a list of nats:// or tls:// URLs)", p);
        goto out;
    }
    if ((rc = rift_config_list_len(L, t, p, &n, err)) != 0) {
        goto out;
    }
    if (n == 0 || n > MAX_SERVERS) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "%s: expected 1..=%d URLs", p, MAX_SERVERS);
        goto out;
    }
    if ((c->servers = rift_calloc(NULL, n, sizeof *c->servers)) == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, t, (lua_Integer)i + 1);
        size_t len = 0;
        const char *s =
            lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (s == NULL || strlen(s) != len) {
            lua_pop(L, 1);
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "%s[%zu]: expected a string", p, i + 1);
            goto out;
        }
        c->servers[i] = rift_config_strdup(s, len);
        c->n_servers = i + 1;
        lua_pop(L, 1);
        if (c->servers[i] == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        if ((rc = check_url(c->servers[i], i, err)) != 0) {
            goto out;
        }
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

static int parse_tls(lua_State *L, int nats, rift_config_cluster *c,
                     rift_error *err) {
    int type = rift_config_push_field(L, nats, "tls");
    int t = lua_gettop(L);
    const char *p = "cluster.nats.tls";
    int rc = 0;
    if (type != LUA_TNIL &&
        ((rc = expect_table(L, t, p, err)) != 0 ||
         (rc = rift_config_check_keys(L, t, p, tls_keys, err)) != 0 ||
         (rc = rift_config_get_string(L, t, p, "ca", &c->ca, err)) != 0)) {
        goto out;
    }
    if (c->ca != NULL && c->ca[0] == '\0') {
        rc = bad(err, "%s.ca: path must not be empty", p);
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

static int check_env(const char *name, const char *key, rift_error *err) {
    if (name != NULL && !rift_env_name_valid(name, strlen(name))) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "cluster.nats.%s: invalid environment variable "
                              "name",
                              key);
    }
    return 0;
}

static int parse_nats(lua_State *L, int root, rift_config_cluster *c,
                      rift_error *err) {
    int type = rift_config_push_field(L, root, "nats");
    int t = lua_gettop(L);
    const char *p = "cluster.nats";
    int rc = 0;
    if (type == LUA_TNIL) {
        rc = bad(err, "%s: required (the backbone's servers)", p);
        goto out;
    }
    if ((rc = expect_table(L, t, p, err)) != 0 ||
        (rc = rift_config_check_keys(L, t, p, nats_keys, err)) != 0 ||
        (rc = parse_servers(L, t, c, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "user", &c->user, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "password_env", &c->password_env,
                                     err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "token_env", &c->token_env,
                                     err)) != 0 ||
        (rc = parse_tls(L, t, c, err)) != 0 ||
        (rc = check_env(c->password_env, "password_env", err)) != 0 ||
        (rc = check_env(c->token_env, "token_env", err)) != 0) {
        goto out;
    }
    if (c->password_env != NULL && c->user == NULL) {
        rc = bad(err, "%s.password_env: needs user", p);
    } else if (c->token_env != NULL && c->user != NULL) {
        rc = bad(err, "%s.token_env: use either user or token_env", p);
    } else if (c->user != NULL &&
               (c->user[0] == '\0' || strpbrk(c->user, " \t\r\n"))) {
        rc = bad(err, "%s.user: expected a name without spaces", p);
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

static bool node_valid(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '-' || ch == '_')) {
            return false;
        }
    }
    return true;
}

int rift_config_parse_cluster(lua_State *L, int root, rift_config *cfg,
                              rift_error *err) {
    rift_config_cluster *c = &cfg->cluster;
    int type = rift_config_push_field(L, root, "cluster");
    int t = lua_gettop(L);
    const char *p = "cluster";
    int rc = 0;
    if (type == LUA_TNIL) {
        goto out;
    }
    c->enabled = true;
    if ((rc = expect_table(L, t, p, err)) != 0 ||
        (rc = rift_config_check_keys(L, t, p, cluster_keys, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "node", &c->node, err)) != 0 ||
        (rc = rift_config_get_string(L, t, p, "prefix", &c->prefix, err)) !=
            0 ||
        (rc = parse_nats(L, t, c, err)) != 0) {
        goto out;
    }
    if (c->node == NULL || !node_valid(c->node)) {
        rc = bad(err,
                 "%s.node: required, 1..64 of A-Z a-z 0-9 - _ (unique "
                 "per node)",
                 p);
        goto out;
    }
    if (c->prefix == NULL &&
        (c->prefix = rift_config_strdup("rift", 4)) == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t n = strlen(c->prefix);
    if (n > 128 || !rift_subject_valid(c->prefix, n, false, 128) ||
        c->prefix[0] == '$' || c->prefix[0] == '_') {
        rc = bad(err,
                 "%s.prefix: expected a literal subject of at most 128 "
                 "bytes, not starting with $ or _",
                 p);
    }
out:
    lua_settop(L, t - 1);
    return rc;
}
