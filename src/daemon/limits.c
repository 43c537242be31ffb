/*
 * limits.c — riftd's per-identity quotas (daemon layer): the `limits`
 * table's defaults, and the accounting (subject/quota.h) built from it and
 * the principals, which the front ends share. See components.h and
 * docs/riftd.md ("limits").
 */
#include "daemon/components.h"

#include "subject/quota.h"

/* One identity may hold half of a capacity by default: the other half is
 * left to everybody else, whoever fills up first. */
static uint64_t half(uint64_t capacity) {
    return capacity / 2 > 0 ? capacity / 2 : 1;
}

/* A sixteenth of a capacity, at most |cap|: room for a few administrators'
 * connections and the inbox of each of their requests. */
static uint64_t reserve(uint64_t capacity, uint64_t cap) {
    uint64_t r = capacity / 16;
    return r < cap ? r : cap;
}

void rift_config_limits_resolve(const rift_config *cfg,
                                rift_config_limits *out) {
    const rift_config_messaging *m = &cfg->messaging;
    *out = cfg->limits;
    if (out->connections == 0) {
        out->connections = half(m->max_connections);
    }
    if (out->subscriptions == 0) {
        out->subscriptions = half(m->max_subscriptions);
    }
    if (out->consumers == 0) {
        uint64_t most = 0;
        for (size_t i = 0; i < m->n_streams; i++) {
            if (m->streams[i].max_consumers > most) {
                most = m->streams[i].max_consumers;
            }
        }
        out->consumers = half(most > 0 ? most : 128);
    }
    if (!out->reserve_connections_set) {
        out->reserve_connections = reserve(m->max_connections, 16);
    }
    if (!out->reserve_subscriptions_set) {
        out->reserve_subscriptions = reserve(m->max_subscriptions, 64);
    }
}

bool rift_config_limits_equal(const rift_config_limits *a,
                              const rift_config_limits *b) {
    return a->connections == b->connections &&
           a->subscriptions == b->subscriptions &&
           a->consumers == b->consumers &&
           a->reserve_connections_set == b->reserve_connections_set &&
           a->reserve_subscriptions_set == b->reserve_subscriptions_set &&
           a->reserve_connections == b->reserve_connections &&
           a->reserve_subscriptions == b->reserve_subscriptions;
}

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
