/*
 * cluster_node.c — the cluster backbone as a riftd component (daemon
 * layer): started right after the broker when the configuration has a
 * `cluster` table, stopped after the front ends; the credentials from the
 * environment, the rift.events.cluster events and the `cluster` entry of
 * `rift status` (docs/cluster.md).
 */
#include "daemon/components.h"
#include "daemon/events.h"

#include "cluster/cluster.h"

#include <stdlib.h>

static void on_state(void *ud, bool up, const char *server) {
    rift_daemon_cluster *n = ud;
    json_t *ev = json_pack("{s:s,s:s,s:s}", "node", n->node, "server", server,
                           "state", up ? "up" : "down");
    if (ev != NULL) {
        rift_error err;
        (void)rift_events_publish(n->broker, RIFT_EVENTS_CLUSTER, ev, &err);
        json_decref(ev);
    }
}

static int env_secret(const char *name, const char *key, const char **out,
                      rift_error *err) {
    *out = NULL;
    if (name == NULL) {
        return 0;
    }
    if ((*out = getenv(name)) == NULL || (*out)[0] == '\0') {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "cluster.nats.%s: environment variable %s is "
                              "not set",
                              key, name);
    }
    return 0;
}

int rift_daemon_cluster_start(rift_daemon_cluster *n, rift_broker *broker,
                              const rift_config *cfg, rift_error *err) {
    const rift_config_cluster *c = &cfg->cluster;
    n->c = NULL;
    n->broker = broker;
    if (!c->enabled) {
        return 0;
    }
    snprintf(n->node, sizeof n->node, "%s", c->node);
    rift_cluster_settings s = {
        .servers = (const char *const *)c->servers,
        .n_servers = c->n_servers,
        .node = c->node,
        .prefix = c->prefix,
        .user = c->user,
        .ca_file = c->ca,
        .on_state = on_state,
        .ud = n,
    };
    int rc;
    if ((rc = env_secret(c->password_env, "password_env", &s.password, err)) !=
            0 ||
        (rc = env_secret(c->token_env, "token_env", &s.token, err)) != 0 ||
        (rc = rift_cluster_start(&n->c, broker, &s, err)) != 0) {
        return rc;
    }
    rift_log(RIFT_LOG_INFO, "rift: cluster node %s, subjects under %s.",
             c->node, c->prefix);
    return 0;
}

void rift_daemon_cluster_stop(rift_daemon_cluster *n) {
    rift_cluster_stop(n->c);
    n->c = NULL;
}

json_t *rift_daemon_cluster_json(rift_daemon_cluster *n) {
    if (n->c == NULL) {
        return json_null();
    }
    rift_cluster_status st;
    rift_cluster_get_status(n->c, &st);
    return json_pack(
        "{s:s,s:s,s:b,s:s,s:I,s:{s:I,s:I,s:I},s:I,s:I}", "node", n->node,
        "backbone", st.connected ? "up" : "down", "connected", st.connected,
        "server", st.server, "subscriptions", (json_int_t)st.subscriptions,
        "messages", "out", (json_int_t)st.msgs_out, "in",
        (json_int_t)st.msgs_in, "echoes_dropped", (json_int_t)st.echoes_dropped,
        "errors", (json_int_t)st.errors, "reconnects",
        (json_int_t)st.reconnects);
}
