/*
 * stan_service.c — the NATS Streaming service as a riftd component
 * (daemon layer): started after the streams when the configuration has a
 * `streaming` table, stopped after the front ends (docs/streaming.md).
 */
#include "daemon/components.h"

#include "stan/stan.h"

int rift_daemon_stan_start(rift_stan **ps, rift_broker *broker,
                           const rift_config *cfg, rift_error *err) {
    *ps = NULL;
    const rift_config_streaming *c = &cfg->streaming;
    if (!c->enabled) {
        return 0;
    }
    rift_stan_settings s;
    rift_config_streaming_settings(c, &s);
    rift_error e = {0};
    int rc = rift_stan_start(ps, broker, &s, &e);
    if (rc != 0) {
        return rift_error_set(err, rc, "streaming: %s", e.text);
    }
    rift_log(RIFT_LOG_INFO, "rift: NATS Streaming cluster %s (%s store)",
             c->cluster_id, c->file_store ? "file" : "memory");
    return 0;
}

json_t *rift_daemon_stan_json(rift_stan *s) {
    if (s == NULL) {
        return json_null();
    }
    rift_stan_counts c;
    rift_stan_get_counts(s, &c);
    return json_pack("{sIsIsI}", "clients", (json_int_t)c.clients, "channels",
                     (json_int_t)c.channels, "subscriptions",
                     (json_int_t)c.subscriptions);
}
