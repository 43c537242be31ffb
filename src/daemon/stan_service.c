/*
 * stan_service.c — the NATS Streaming service as a riftd component
 * (daemon layer): started after the streams when the configuration has a
 * `streaming` table, stopped after the front ends (docs/streaming.md).
 */
#include "daemon/components.h"

#include <stdio.h>

#include "stan/stan.h"
#include "stan/transport_nats.h"

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
    char via[1200] = "riftd's NATS face";
    if (c->nats_server) {
        /* An unreachable server fails the start: a STAN service nobody can
         * reach should not look healthy (docs/streaming.md). */
        char shown[1100];
        (void)rift_stan_nats_url_check(c->nats_server, shown, sizeof shown,
                                       NULL);
        snprintf(via, sizeof via, "NATS server %s", shown);
        int rc =
            stan_transport_nats_new(&s.transport, c->nats_server, NULL, err);
        if (rc != 0) {
            return rc;
        }
    }
    int rc = rift_stan_start(ps, broker, &s, &e);
    if (rc != 0) {
        return rift_error_set(err, rc, "streaming: %s", e.text);
    }
    rift_log(RIFT_LOG_INFO, "rift: NATS Streaming cluster %s (%s store) on %s",
             c->cluster_id, c->file_store ? "file" : "memory", via);
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
