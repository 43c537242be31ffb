/*
 * cluster_node.c — the cluster backbone as a riftd component (daemon
 * layer): started right after the broker when the configuration has a
 * `cluster` table, stopped after the front ends; the credentials from the
 * environment, the rift.events.cluster events and the `cluster` entry of
 * `rift status` (docs/cluster.md); and the replicated streams
 * (replicas > 1), which the QUIC server reaches as its stream backend.
 */
#include "daemon/components.h"
#include "daemon/events.h"

#include "cluster/cluster.h"
#include "cluster/replicated.h"

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

static int start_replicated(rift_daemon_cluster *n, const rift_config *cfg,
                            rift_error *err);

int rift_daemon_cluster_start(rift_daemon_cluster *n, rift_broker *broker,
                              const rift_config *cfg, rift_error *err) {
    const rift_config_cluster *c = &cfg->cluster;
    n->c = NULL;
    n->repl = NULL;
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
    return start_replicated(n, cfg, err);
}

/* The replicated streams of cfg, if any, over the backbone just joined. */
static int start_replicated(rift_daemon_cluster *n, const rift_config *cfg,
                            rift_error *err) {
    const rift_config_messaging *m = &cfg->messaging;
    rift_repl_stream_config *v =
        rift_calloc(NULL, m->n_streams ? m->n_streams : 1, sizeof *v);
    if (v == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < m->n_streams; i++) {
        const rift_config_stream *s = &m->streams[i];
        if (s->replicas > 1) {
            v[k++] = (rift_repl_stream_config){
                .name = s->name,
                .subjects = (const char *const *)s->subjects,
                .n_subjects = s->n_subjects,
                .max_messages = s->max_messages,
                .max_bytes = s->max_bytes,
                .max_payload_bytes = s->max_payload_bytes,
                .max_consumers = s->max_consumers,
                .max_age_ms = s->max_age_ms,
                .replicas = (uint32_t)s->replicas,
            };
        }
    }
    int rc = k > 0 ? rift_repl_start(&n->repl, n->c, cfg->cluster.node,
                                     cfg->cluster.prefix, v, k, err)
                   : 0;
    rift_free(NULL, v);
    if (rc == 0 && k > 0) {
        rift_log(RIFT_LOG_INFO,
                 "rift: %zu replicated stream(s) in the backbone's "
                 "JetStream",
                 k);
    }
    return rc;
}

void rift_daemon_cluster_end_waits(rift_daemon_cluster *n) {
    rift_repl_end_waits(n->repl);
}

void rift_daemon_cluster_stop(rift_daemon_cluster *n) {
    rift_repl_stop(n->repl); /* before the connection it runs over */
    n->repl = NULL;
    rift_cluster_stop(n->c);
    n->c = NULL;
}

rift_server_stream_backend rift_daemon_cluster_backend(rift_daemon_cluster *n) {
    if (n->repl == NULL) {
        return (rift_server_stream_backend){0};
    }
    return rift_repl_backend(n->repl);
}

static json_t *replicated_json(rift_daemon_cluster *n) {
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < rift_repl_stream_count(n->repl); i++) {
        rift_repl_stream_status st;
        rift_repl_get_status(n->repl, i, &st);
        json_array_append_new(
            a,
            json_pack("{s:s,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}",
                      "name", st.name, "replicas", (json_int_t)st.replicas,
                      "ready", st.ready, "published", (json_int_t)st.published,
                      "duplicates", (json_int_t)st.duplicates, "retries",
                      (json_int_t)st.retries, "fetched", (json_int_t)st.fetched,
                      "acked", (json_int_t)st.acked, "errors",
                      (json_int_t)st.errors, "last_sequence",
                      (json_int_t)st.last_sequence, "consumers",
                      (json_int_t)st.consumers, "fetch_waits",
                      (json_int_t)st.fetch_waits, "last_error", st.last_error));
    }
    return a;
}

json_t *rift_daemon_cluster_json(rift_daemon_cluster *n) {
    if (n->c == NULL) {
        return json_null();
    }
    rift_cluster_status st;
    rift_cluster_get_status(n->c, &st);
    return json_pack(
        "{s:s,s:s,s:b,s:s,s:I,s:{s:I,s:I,s:I},s:I,s:I,s:o}", "node", n->node,
        "backbone", st.connected ? "up" : "down", "connected", st.connected,
        "server", st.server, "subscriptions", (json_int_t)st.subscriptions,
        "messages", "out", (json_int_t)st.msgs_out, "in",
        (json_int_t)st.msgs_in, "echoes_dropped", (json_int_t)st.echoes_dropped,
        "errors", (json_int_t)st.errors, "reconnects",
        (json_int_t)st.reconnects, "replicated", replicated_json(n));
}
