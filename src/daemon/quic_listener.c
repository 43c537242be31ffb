/*
 * quic_listener.c — riftd's QUIC listener (daemon layer): the protocol
 * server of include/rift/server.h configured from `messaging` (principals
 * with the tokens read at start-up, limits, the open streams), plus the
 * per-identity views the control commands need. See components.h.
 */
#include "daemon/components.h"

#include "daemon/credentials.h"
#include "rift/server.h"

#include <string.h>

struct rift_daemon_quic {
    rift_server *srv;
    char address[64];
    /* The principals as identities (names and grants, no tokens), for
     * the control commands that act on an identity's behalf. */
    rift_identity *ids;
    size_t n_ids;
};

static void free_ids(rift_daemon_quic *q) {
    for (size_t i = 0; i < q->n_ids; i++) {
        rift_identity_free(&q->ids[i]);
    }
    rift_free(NULL, q->ids);
    q->ids = NULL;
    q->n_ids = 0;
}

static int make_ids(rift_daemon_quic *q, const rift_config_messaging *m) {
    if (m->n_principals == 0) {
        return 0;
    }
    q->ids = rift_calloc(NULL, m->n_principals, sizeof(*q->ids));
    if (q->ids == NULL) {
        return RIFT_ERR_NOMEM;
    }
    q->n_ids = m->n_principals;
    int rc = 0;
    for (size_t i = 0; i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        rift_identity *id = &q->ids[i];
        rift_identity_init(id, NULL);
        rc = rift_identity_set_name(id, p->name, strlen(p->name));
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
            return rc;
        }
    }
    return 0;
}

/* The server's view of the principals: pointers into |cfg|. */
static rift_server_identity *server_ids(const rift_config_messaging *m) {
    rift_server_identity *v =
        rift_calloc(NULL, m->n_principals + 1, sizeof(*v));
    for (size_t i = 0; v != NULL && i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        v[i] = (rift_server_identity){
            .name = p->name,
            .name_len = strlen(p->name),
            .token = p->token,
            .token_len = p->token_len,
            .publish = (const char *const *)p->publish,
            .publish_count = p->n_publish,
            .subscribe = (const char *const *)p->subscribe,
            .subscribe_count = p->n_subscribe,
            .control = p->control,
        };
    }
    return v;
}

static rift_server_stream *server_streams(rift_daemon_streams *streams) {
    size_t n = rift_daemon_streams_count(streams);
    rift_server_stream *v = rift_calloc(NULL, n + 1, sizeof(*v));
    for (size_t i = 0; v != NULL && i < n; i++) {
        const char *name;
        v[i].stream = rift_daemon_streams_at(streams, i, &name);
        v[i].name = name;
        v[i].name_len = strlen(name);
    }
    return v;
}

int rift_daemon_quic_start(rift_daemon_quic **pq, rift_broker *broker,
                           rift_daemon_streams *streams,
                           rift_server_stream_source source,
                           rift_server_stream_admin admin,
                           rift_server_stream_backend backend,
                           const rift_config *cfg, struct rift_quota *quota,
                           rift_error *err) {
    *pq = NULL;
    const rift_config_messaging *m = &cfg->messaging;
    if (m->listen == NULL) {
        return 0;
    }
    /* Credentials are validated before anything binds (§5.2), with the
     * reference's texts. */
    int rc = rift_daemon_tls_check(m->certificate, m->private_key, NULL, err);
    if (rc != 0) {
        return rc;
    }
    rift_daemon_quic *q = rift_calloc(NULL, 1, sizeof(*q));
    rift_server_identity *ids = server_ids(m);
    rift_server_stream *sst = server_streams(streams);
    if (q == NULL || ids == NULL || sst == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = make_ids(q, m)) != 0) {
        rift_error_set(err, rc, "out of memory");
        goto done;
    }
    rift_server_settings s;
    rift_server_settings_default(&s);
    s.cert_file = m->certificate;
    s.key_file = m->private_key;
    s.identities = ids;
    s.identity_count = m->n_principals;
    s.max_connections = (size_t)m->max_connections;
    s.max_streams_per_connection = (size_t)m->max_streams_per_connection;
    s.handshake_timeout_ms = m->handshake_timeout_ms;
    s.io_timeout_ms = m->io_timeout_ms;
    s.retry = cfg->quic.retry;
    s.quota = quota;
    s.streams = sst;
    s.stream_count = rift_daemon_streams_count(streams);
    s.stream_source = source;
    s.stream_admin = admin;
    s.stream_backend = backend;
    rift_error why = {0};
    if ((rc = rift_server_new(&q->srv, broker, &s, &why)) != 0) {
        rift_error_set(err, rc, "invalid messaging configuration: %s",
                       why.text);
        goto done;
    }
    if ((rc = rift_server_start(q->srv, m->listen, err)) != 0 ||
        (rc = rift_server_address(q->srv, q->address, sizeof(q->address),
                                  NULL)) != 0) {
        goto done;
    }
done:
    if (ids != NULL) {
        explicit_bzero(ids, (m->n_principals + 1) * sizeof(*ids));
    }
    rift_free(NULL, ids);
    rift_free(NULL, sst);
    if (rc != 0) {
        rift_daemon_quic_stop(q);
        return rc;
    }
    *pq = q;
    return 0;
}

const char *rift_daemon_quic_address(const rift_daemon_quic *q) {
    return q->address;
}

void rift_daemon_quic_flush(rift_daemon_quic *q, uint64_t timeout_ms) {
    if (q != NULL && rift_server_flush(q->srv, (int64_t)timeout_ms * 1000000,
                                       NULL) == RIFT_ERR_TIMEOUT) {
        rift_log(RIFT_LOG_DEBUG, "rift: some remote subscribers did not "
                                 "acknowledge their last messages");
    }
}

void rift_daemon_quic_stop(rift_daemon_quic *q) {
    if (q == NULL) {
        return;
    }
    rift_server_del(q->srv);
    free_ids(q);
    rift_free(NULL, q);
}

bool rift_daemon_quic_alive(const rift_daemon_quic *q) {
    return q == NULL || rift_server_is_running(q->srv);
}

json_t *rift_daemon_quic_connections(const rift_daemon_quic *q) {
    json_t *by = json_object();
    rift_server_stats st = {0};
    if (q != NULL && rift_server_get_stats(q->srv, &st, NULL) != 0) {
        memset(&st, 0, sizeof(st));
    }
    for (size_t i = 0; by != NULL && i < st.identity_count; i++) {
        json_object_set_new(
            by, st.identities[i].name,
            json_integer((json_int_t)st.identities[i].connections));
    }
    json_t *o = json_pack("{s:I,s:I,s:o*}", "total", (json_int_t)st.connections,
                          "authenticated", (json_int_t)st.authenticated,
                          "by_identity", by);
    rift_server_stats_free(&st);
    return o;
}

json_t *rift_daemon_quic_stats(const rift_daemon_quic *q) {
    rift_server_stats st;
    if (q == NULL) {
        return json_null();
    }
    if (rift_server_get_stats(q->srv, &st, NULL) != 0) {
        return NULL;
    }
    json_t *o = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I}}", "accepted",
        (json_int_t)st.connections_accepted, "refused",
        (json_int_t)st.connections_refused, "auth_failures",
        (json_int_t)st.auth_failures, "streams", (json_int_t)st.streams,
        "subscriptions", (json_int_t)st.subscriptions, "slow_consumers",
        (json_int_t)st.slow_consumers, "messages", "in", (json_int_t)st.msgs_in,
        "out", (json_int_t)st.msgs_out, "bytes", "in", (json_int_t)st.bytes_in,
        "out", (json_int_t)st.bytes_out);
    rift_server_stats_free(&st);
    return o;
}

const rift_identity *rift_daemon_quic_identity(const rift_daemon_quic *q,
                                               const char *name) {
    for (size_t i = 0; q != NULL && i < q->n_ids; i++) {
        if (strcmp(q->ids[i].name, name) == 0) {
            return &q->ids[i];
        }
    }
    return NULL;
}

int rift_daemon_quic_requester(const rift_daemon_quic *q, const char *inbox,
                               size_t len, char name[RIFT_NAME_MAX + 1]) {
    if (q == NULL) {
        return RIFT_ERR_CLOSED;
    }
    return rift_server_requester(q->srv, inbox, len, name, RIFT_NAME_MAX + 1,
                                 NULL);
}
