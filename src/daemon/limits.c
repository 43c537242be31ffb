/*
 * limits.c — riftd's per-identity quotas (daemon layer): the accounting
 * (subject/quota.h) built from the `limits` table (its defaults are
 * resolved by config/config_limits.c) and the principals, which the front
 * ends share. See components.h and docs/riftd.md ("limits").
 */
#include "daemon/components.h"

#include "subject/quota.h"

int rift_daemon_quota_new(rift_quota **pq, const rift_config *cfg,
                          rift_error *err) {
    const rift_config_messaging *m = &cfg->messaging;
    rift_config_limits l;
    rift_config_limits_resolve(cfg, &l);
    const char **names = rift_calloc(NULL, m->n_principals + 1, sizeof(*names));
    bool *control = rift_calloc(NULL, m->n_principals + 1, sizeof(*control));
    int rc = 0;
    if (names == NULL || control == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->n_principals; i++) {
        names[i] = m->principals[i].name;
        control[i] = m->principals[i].control;
    }
    rift_quota_settings s = {
        .capacity = {m->max_connections, m->max_subscriptions, 0},
        .per_identity = {l.connections, l.subscriptions, l.consumers},
        .control_reserve = {l.reserve_connections, l.reserve_subscriptions, 0},
        .names = names,
        .control = control,
        .count = m->n_principals,
    };
    rc = rift_quota_new(pq, &s, err);
out:
    rift_free(NULL, names);
    rift_free(NULL, control);
    return rc;
}
