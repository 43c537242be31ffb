/*
 * config_streaming.h — the `streaming` table of riftd's configuration
 * (config layer): the NATS Streaming service's settings as written, with
 * defaults filled in. Parsed by lua/config_streaming_table.c, started by
 * daemon/stan_service.c; docs/streaming.md is the reference of every key.
 */
#ifndef RIFT_CONFIG_CONFIG_STREAMING_H
#define RIFT_CONFIG_CONFIG_STREAMING_H

#include "stan/stan.h"

#include <stdio.h>

typedef struct rift_config_streaming {
    bool enabled; /* the table is present */
    char *cluster_id;
    char *discover_prefix;
    char *nats_server; /* NULL: riftd's own NATS face */
    bool file_store;   /* store = "file" */
    char *dir;         /* file store directory, resolved */
    bool sync_on_write;
    uint64_t max_channels, max_subs;
    rift_stan_limits limits;
    rift_stan_channel_limits *channels; /* per-channel overrides */
    size_t n_channels;
    uint64_t hb_interval_ms, hb_timeout_ms, hb_fail_count;
} rift_config_streaming;

/* The service settings |c| stands for (strings borrowed from |c|). */
void rift_config_streaming_settings(const rift_config_streaming *c,
                                    rift_stan_settings *out);

/* Same `streaming` table as written (a change needs a restart). */
bool rift_config_streaming_equal(const rift_config_streaming *a,
                                 const rift_config_streaming *b);

/* The --check lines: cluster, store and transport (the nats_server URL
 * with credentials masked). */
void rift_config_streaming_print(const rift_config_streaming *c, FILE *out);

void rift_config_streaming_free(rift_config_streaming *c);

#endif /* RIFT_CONFIG_CONFIG_STREAMING_H */
