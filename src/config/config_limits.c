/*
 * config_limits.c — the `limits` table's defaults and comparison (config
 * layer): what each identity may hold when the file leaves a limit out,
 * derived from the messaging capacities. The daemon builds its quota
 * accounting from the result (daemon/limits.c). See docs/riftd.md
 * ("limits").
 */
#include "config/config.h"

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
