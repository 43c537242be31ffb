/*
 * nats_face.c — riftd's core NATS listener (daemon layer): the listener of
 * src/nats/nats.h configured from the `nats` table and the principals of
 * `messaging` (tokens read at start-up), with the per-identity quotas the
 * QUIC face shares. See components.h.
 */
#include "daemon/components.h"

#include "daemon/credentials.h"
#include "nats/nats.h"

#include <string.h>

struct rift_daemon_nats {
    rift_nats *n;
};

static void free_ids(rift_identity *ids, size_t n) {
    for (size_t i = 0; ids != NULL && i < n; i++) {
        rift_identity_free(&ids[i]);
    }
    rift_free(NULL, ids);
}

/* The principals as identities, tokens included. */
static rift_identity *make_ids(const rift_config_messaging *m) {
    rift_identity *ids = rift_calloc(NULL, m->n_principals + 1, sizeof(*ids));
    for (size_t i = 0; ids != NULL && i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        rift_identity *id = &ids[i];
        rift_identity_init(id, NULL);
        int rc = rift_identity_set_name(id, p->name, strlen(p->name));
        if (rc == 0 && p->token != NULL) {
            rc = rift_identity_set_token(id, p->token, p->token_len);
        }
        for (size_t k = 0; rc == 0 && k < p->n_publish; k++) {
            rc = rift_identity_allow_publish(id, p->publish[k],
                                             strlen(p->publish[k]));
        }
        for (size_t k = 0; rc == 0 && k < p->n_subscribe; k++) {
            rc = rift_identity_allow_subscribe(id, p->subscribe[k],
                                               strlen(p->subscribe[k]));
        }
        id->control = p->control;
        if (rc != 0) {
            free_ids(ids, i + 1);
            return NULL;
        }
    }
    return ids;
}

static void settings_from(rift_nats_settings *s, const rift_config *cfg) {
    const rift_config_nats *c = &cfg->nats;
    rift_nats_settings_default(s);
    s->addr = c->listen_addr;
    s->addr_len = c->listen_addr_len;
    s->listen = c->listen;
    if (!c->allow_plaintext) {
        s->cert_file =
            c->certificate ? c->certificate : cfg->messaging.certificate;
        s->key_file =
            c->private_key ? c->private_key : cfg->messaging.private_key;
    }
    s->anonymous = c->anonymous;
    s->max_payload = (size_t)c->max_payload;
    s->max_pending = (size_t)c->max_pending;
    s->max_control_line = (size_t)c->max_control_line;
    s->ping_interval_ms = c->ping_interval_s * 1000;
    s->max_pings_out = (unsigned)c->max_pings_out;
    s->auth_timeout_ms = c->auth_timeout_s * 1000;
    s->write_deadline_ms = c->write_deadline_s * 1000;
    s->max_connections = (size_t)c->max_connections;
    s->producer_pause_ms = c->producer_pause_ms;
}

int rift_daemon_nats_start(rift_daemon_nats **pn, rift_broker *broker,
                           const rift_config *cfg, struct rift_quota *quota,
                           rift_error *err) {
    *pn = NULL;
    if (cfg->nats.listen == NULL) {
        return 0;
    }
    rift_nats_settings s;
    settings_from(&s, cfg);
    s.quota = quota;
    int rc;
    if (s.cert_file != NULL &&
        (rc = rift_daemon_tls_check(s.cert_file, s.key_file, NULL, err)) != 0) {
        return rc;
    }
    const rift_config_messaging *m = &cfg->messaging;
    rift_daemon_nats *d = rift_calloc(NULL, 1, sizeof(*d));
    rift_identity *ids = make_ids(m);
    if (d == NULL || ids == NULL) {
        rift_free(NULL, d);
        free_ids(ids, m->n_principals);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    s.identities = ids;
    s.identity_count = m->n_principals;
    rc = rift_nats_new(&d->n, broker, &s, err);
    free_ids(ids, m->n_principals);
    if (rc == 0) {
        rc = rift_nats_start(d->n, err);
    }
    if (rc != 0) {
        rift_daemon_nats_stop(d);
        return rc;
    }
    if (s.cert_file == NULL) {
        rift_log(RIFT_LOG_WARN,
                 "rift: NATS listener %s is plaintext (nats.allow_plaintext): "
                 "tokens cross it unencrypted; keep it on loopback",
                 rift_nats_address(d->n));
    }
    *pn = d;
    return 0;
}

const char *rift_daemon_nats_address(const rift_daemon_nats *d) {
    return rift_nats_address(d->n);
}

void rift_daemon_nats_stop(rift_daemon_nats *d) {
    if (d == NULL) {
        return;
    }
    rift_nats_del(d->n);
    rift_free(NULL, d);
}

bool rift_daemon_nats_alive(const rift_daemon_nats *d) {
    return d == NULL || rift_nats_running(d->n);
}

json_t *rift_daemon_nats_connections(const rift_daemon_nats *d) {
    rift_nats_stats st;
    if (d == NULL) {
        return json_null();
    }
    if (rift_nats_get_stats(d->n, &st) != 0) {
        return NULL;
    }
    json_t *by = json_object();
    for (size_t i = 0; by != NULL && i < st.identity_count; i++) {
        json_object_set_new(by, st.names[i],
                            json_integer((json_int_t)st.by_identity[i]));
    }
    rift_free(NULL, st.by_identity);
    return json_pack(
        "{s:s,s:I,s:I,s:o*,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I}}",
        "address", rift_nats_address(d->n), "total", (json_int_t)st.connections,
        "authenticated", (json_int_t)st.authenticated, "by_identity", by,
        "accepted", (json_int_t)st.accepted, "refused", (json_int_t)st.refused,
        "auth_failures", (json_int_t)st.auth_failures, "slow_consumers",
        (json_int_t)st.slow_consumers, "producer_pauses",
        (json_int_t)st.producer_pauses, "messages", "in",
        (json_int_t)st.msgs_in, "out", (json_int_t)st.msgs_out, "bytes", "in",
        (json_int_t)st.bytes_in, "out", (json_int_t)st.bytes_out);
}
