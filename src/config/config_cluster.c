/*
 * config_cluster.c — value operations on the `cluster` table (config
 * layer; see config_cluster.h).
 */
#include "config/config_cluster.h"

#include "common/common.h"
#include "stan/stan.h"

#include <string.h>

static bool same_str(const char *a, const char *b) {
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

bool rift_config_cluster_equal(const rift_config_cluster *a,
                               const rift_config_cluster *b) {
    if (a->enabled != b->enabled || a->n_servers != b->n_servers ||
        !same_str(a->user, b->user) ||
        !same_str(a->password_env, b->password_env) ||
        !same_str(a->token_env, b->token_env) || !same_str(a->ca, b->ca) ||
        !same_str(a->node, b->node) || !same_str(a->prefix, b->prefix)) {
        return false;
    }
    for (size_t i = 0; i < a->n_servers; i++) {
        if (!same_str(a->servers[i], b->servers[i])) {
            return false;
        }
    }
    return true;
}

void rift_config_cluster_print(const rift_config_cluster *c, FILE *out) {
    if (!c->enabled) {
        return;
    }
    fprintf(out, "cluster: node=%s prefix=%s\n", c->node, c->prefix);
    for (size_t i = 0; i < c->n_servers; i++) {
        char shown[1100] = "";
        (void)rift_stan_nats_url_check(c->servers[i], shown, sizeof shown,
                                       NULL);
        fprintf(out, "  cluster: backbone %s\n", shown);
    }
    if (c->user != NULL) {
        fprintf(out, "  cluster: user=%s password from $%s\n", c->user,
                c->password_env ? c->password_env : "(none)");
    }
    if (c->token_env != NULL) {
        fprintf(out, "  cluster: token from $%s\n", c->token_env);
    }
    if (c->ca != NULL) {
        fprintf(out, "  cluster: tls ca=%s\n", c->ca);
    }
}

void rift_config_cluster_free(rift_config_cluster *c) {
    for (size_t i = 0; c->servers && i < c->n_servers; i++) {
        rift_free(NULL, c->servers[i]);
    }
    rift_free(NULL, c->servers);
    rift_free(NULL, c->user);
    rift_free(NULL, c->password_env);
    rift_free(NULL, c->token_env);
    rift_free(NULL, c->ca);
    rift_free(NULL, c->node);
    rift_free(NULL, c->prefix);
    memset(c, 0, sizeof *c);
}
