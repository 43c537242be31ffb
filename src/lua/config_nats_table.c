/*
 * config_nats_table.c — the `nats` table of the Lua configuration (lua layer;
 * fills the daemon's rift_config_nats). Read before `messaging`, so the
 * messaging parser knows a NATS face serves the principals, and finished
 * after it (rift_config_nats_finish): defaults and ceilings that come from
 * messaging, and the anonymous principal.
 */
#include "lua/config_lua.h"

#include <inttypes.h>
#include <string.h>

static const char *const nats_keys[] = {
    "listen",
    "tls",
    "allow_plaintext",
    "anonymous",
    "max_payload",
    "max_pending",
    "max_control_line",
    "ping_interval",
    "max_pings_out",
    "auth_timeout",
    "write_deadline",
    "max_connections",
    "producer_pause_ms",
    NULL,
};

static const char *const tls_keys[] = {"certificate", "private_key", NULL};

#define DAY_S 86400u

static int parse_tls(lua_State *L, int t, rift_config_nats *n,
                     rift_error *err) {
    int type = rift_config_push_field(L, t, "tls");
    int u = lua_gettop(L);
    int rc = 0;
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "nats.tls: expected a table");
        goto out;
    }
    if ((rc = rift_config_check_keys(L, u, "nats.tls", tls_keys, err)) != 0 ||
        (rc = rift_config_get_string(L, u, "nats.tls", "certificate",
                                     &n->certificate, err)) != 0 ||
        (rc = rift_config_get_string(L, u, "nats.tls", "private_key",
                                     &n->private_key, err)) != 0) {
        goto out;
    }
    if ((n->certificate == NULL) != (n->private_key == NULL)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "nats.tls: certificate and private_key go "
                            "together");
    }
out:
    lua_settop(L, u - 1);
    return rc;
}

static int parse_limits(lua_State *L, int t, rift_config_nats *n,
                        rift_error *err) {
    const char *p = "nats";
    int rc;
    if ((rc = rift_config_get_int(L, t, p, "max_payload", 1,
                                  RIFT_CONFIG_STREAM_MAX_PAYLOAD, false,
                                  &n->max_payload, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "max_pending", 1, 1ull << 32, false,
                                  &n->max_pending, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "max_control_line", 1, 1u << 20,
                                  false, &n->max_control_line, NULL, err)) !=
            0 ||
        (rc = rift_config_get_int(L, t, p, "ping_interval", 1, DAY_S, false,
                                  &n->ping_interval_s, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "max_pings_out", 1, 1000, false,
                                  &n->max_pings_out, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "auth_timeout", 1, DAY_S, false,
                                  &n->auth_timeout_s, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "write_deadline", 1, DAY_S, false,
                                  &n->write_deadline_s, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "max_connections", 1, 1000000, false,
                                  &n->max_connections, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, p, "producer_pause_ms", 0, UINT32_MAX,
                                  false, &n->producer_pause_ms,
                                  &n->producer_pause_set, err)) != 0) {
        return rc;
    }
    if (n->producer_pause_ms > 1000) {
        /* Checked here: the shared reader's text says 1..= and 0 (never
         * pause) is a value. */
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.producer_pause_ms: expected 0..=1000 "
                              "milliseconds (0: never pause)");
    }
    if (n->max_control_line != 0 && n->max_control_line < 256) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.max_control_line: expected at least 256 "
                              "bytes");
    }
    return 0;
}

int rift_config_parse_nats(lua_State *L, int root, rift_config *cfg,
                           rift_error *err) {
    int type = rift_config_push_field(L, root, "nats");
    int t = lua_gettop(L);
    rift_config_nats *n = &cfg->nats;
    int rc = 0;
    if (type == LUA_TNIL) {
        goto out;
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "nats: expected a table");
        goto out;
    }
    if ((rc = rift_config_check_keys(L, t, "nats", nats_keys, err)) != 0 ||
        (rc = rift_config_get_string(L, t, "nats", "listen", &n->listen,
                                     err)) != 0 ||
        (rc = rift_config_get_bool(L, t, "nats", "allow_plaintext",
                                   &n->allow_plaintext, err)) != 0 ||
        (rc = rift_config_get_string(L, t, "nats", "anonymous", &n->anonymous,
                                     err)) != 0 ||
        (rc = parse_tls(L, t, n, err)) != 0 ||
        (rc = parse_limits(L, t, n, err)) != 0) {
        goto out;
    }
    if (n->listen != NULL &&
        !rift_config_parse_listen(n->listen, &n->listen_addr,
                                  &n->listen_addr_len)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "nats.listen: expected an ip:port socket address");
    } else if (n->allow_plaintext && n->listen != NULL &&
               !rift_config_nats_loopback(&n->listen_addr)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "nats.allow_plaintext: only with a loopback "
                            "nats.listen address");
    }
out:
    lua_settop(L, t - 1);
    return rc;
}

static uint64_t or_default(uint64_t v, uint64_t d) {
    return v != 0 ? v : d;
}

int rift_config_nats_finish(rift_config *cfg, rift_error *err) {
    rift_config_nats *n = &cfg->nats;
    const rift_config_messaging *m = &cfg->messaging;
    if (n->listen == NULL) {
        return 0;
    }
    if (!n->allow_plaintext && n->certificate == NULL &&
        m->certificate == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.tls: a certificate and private_key are "
                              "required (here or in messaging), or "
                              "allow_plaintext on a loopback address");
    }
    if (n->max_payload > m->max_payload_bytes) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.max_payload: at most "
                              "messaging.max_payload_bytes (%" PRIu64 ")",
                              m->max_payload_bytes);
    }
    n->max_payload = or_default(n->max_payload, m->max_payload_bytes);
    n->max_pending = or_default(n->max_pending, RIFT_CONFIG_NATS_MAX_PENDING);
    if (n->max_pending < n->max_payload) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.max_pending: at least nats.max_payload");
    }
    n->max_control_line =
        or_default(n->max_control_line, RIFT_CONFIG_NATS_MAX_CONTROL_LINE);
    n->ping_interval_s =
        or_default(n->ping_interval_s, RIFT_CONFIG_NATS_PING_INTERVAL_S);
    n->max_pings_out =
        or_default(n->max_pings_out, RIFT_CONFIG_NATS_MAX_PINGS_OUT);
    n->auth_timeout_s =
        or_default(n->auth_timeout_s, RIFT_CONFIG_NATS_AUTH_TIMEOUT_S);
    n->write_deadline_s =
        or_default(n->write_deadline_s, RIFT_CONFIG_NATS_WRITE_DEADLINE_S);
    n->max_connections = or_default(n->max_connections, m->max_connections);
    if (!n->producer_pause_set) {
        n->producer_pause_ms = RIFT_CONFIG_NATS_PRODUCER_PAUSE_MS;
    }
    if (n->anonymous != NULL) {
        for (size_t i = 0; i < m->n_principals; i++) {
            if (strcmp(m->principals[i].name, n->anonymous) == 0) {
                return 0;
            }
        }
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "nats.anonymous: no messaging principal is "
                              "named %s",
                              n->anonymous);
    }
    return 0;
}
