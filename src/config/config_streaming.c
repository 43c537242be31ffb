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

static bool same_str(const char *a, const char *b) {
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_limits(const rift_stan_limits *a, const rift_stan_limits *b) {
    return a->max_msgs == b->max_msgs && a->max_bytes == b->max_bytes &&
           a->max_age_ms == b->max_age_ms &&
           a->max_inactivity_ms == b->max_inactivity_ms;
}

bool rift_config_streaming_equal(const rift_config_streaming *a,
                                 const rift_config_streaming *b) {
    if (a->enabled != b->enabled || !same_str(a->cluster_id, b->cluster_id) ||
        !same_str(a->discover_prefix, b->discover_prefix) ||
        !same_str(a->nats_server, b->nats_server) ||
        a->file_store != b->file_store || !same_str(a->dir, b->dir) ||
        a->sync_on_write != b->sync_on_write ||
        a->max_channels != b->max_channels || a->max_subs != b->max_subs ||
        !same_limits(&a->limits, &b->limits) ||
        a->n_channels != b->n_channels ||
        a->hb_interval_ms != b->hb_interval_ms ||
        a->hb_timeout_ms != b->hb_timeout_ms ||
        a->hb_fail_count != b->hb_fail_count) {
        return false;
    }
    for (size_t i = 0; i < a->n_channels; i++) {
        if (!same_str(a->channels[i].pattern, b->channels[i].pattern) ||
            !same_limits(&a->channels[i].limits, &b->channels[i].limits)) {
            return false;
        }
    }
    return true;
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

void rift_config_streaming_print(const rift_config_streaming *c, FILE *out) {
    if (!c->enabled) {
        return;
    }
    if (c->file_store) {
        fprintf(out, "streaming: cluster_id=%s store=file dir=%s\n",
                c->cluster_id, c->dir);
    } else {
        fprintf(out, "streaming: cluster_id=%s store=memory\n", c->cluster_id);
    }
    if (c->nats_server) {
        char shown[1100] = "";
        (void)rift_stan_nats_url_check(c->nats_server, shown, sizeof shown,
                                       NULL);
        fprintf(out, "  streaming: transport=nats_server %s (libnats)\n",
                shown);
    } else {
        fprintf(out, "  streaming: transport=broker (riftd's NATS face)\n");
    }
}
