/*
 * config_streaming.c — value operations on the `streaming` table (config
 * layer; see config_streaming.h).
 */
#include "config/config_streaming.h"

#include <string.h>

void rift_config_streaming_settings(const rift_config_streaming *c,
                                    rift_stan_settings *out) {
    rift_stan_settings_default(out);
    out->cluster_id = c->cluster_id;
    out->discover_prefix = c->discover_prefix;
    out->dir = c->file_store ? c->dir : NULL;
    out->sync_on_write = c->sync_on_write;
    out->max_channels = (uint32_t)c->max_channels;
    out->max_subs = (uint32_t)c->max_subs;
    out->limits = c->limits;
    out->channels = c->channels;
    out->channels_count = c->n_channels;
    out->hb_interval_ms = c->hb_interval_ms;
    out->hb_timeout_ms = c->hb_timeout_ms;
    out->hb_fail_count = (uint32_t)c->hb_fail_count;
}

void rift_config_streaming_free(rift_config_streaming *c) {
    rift_free(NULL, c->cluster_id);
    rift_free(NULL, c->discover_prefix);
    rift_free(NULL, c->nats_server);
    rift_free(NULL, c->dir);
    for (size_t i = 0; c->channels && i < c->n_channels; i++) {
        rift_free(NULL, c->channels[i].pattern);
    }
    rift_free(NULL, c->channels);
    memset(c, 0, sizeof *c);
}
