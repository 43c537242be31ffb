/*
 * config_cluster.h — the `cluster` table of riftd's configuration (config
 * layer): the NATS backbone that joins riftd nodes, as written. Parsed by
 * lua/config_cluster_table.c, started by daemon/cluster_node.c;
 * docs/cluster.md is the reference of every key.
 */
#ifndef RIFT_CONFIG_CONFIG_CLUSTER_H
#define RIFT_CONFIG_CONFIG_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct rift_config_cluster {
    bool enabled;   /* the table is present */
    char **servers; /* nats:// or tls:// URLs */
    size_t n_servers;
    char *user;         /* NULL: none */
    char *password_env; /* names of environment variables, or NULL */
    char *token_env;
    char *ca; /* tls.ca, or NULL */
    char *node;
    char *prefix; /* default "rift" */
} rift_config_cluster;

/* Same `cluster` table as written (a change needs a restart). */
bool rift_config_cluster_equal(const rift_config_cluster *a,
                               const rift_config_cluster *b);

/* The --check lines: node, prefix, servers with credentials masked, and
 * where the credentials come from (never their values). */
void rift_config_cluster_print(const rift_config_cluster *c, FILE *out);

void rift_config_cluster_free(rift_config_cluster *c);

#endif /* RIFT_CONFIG_CONFIG_CLUSTER_H */
