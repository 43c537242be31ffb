/*
 * clients.c — STAN client registrations (stan layer): connect with the
 * client ID rules and the duplicate-ID probe, close, protocol-1 pings and
 * the server's heartbeats to each client (see internal.h).
 */
#include "stan/internal.h"

#include "subject/subject.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long the old client of a duplicate ID has to answer the probe. */
#define DUP_PROBE_MS 500

static void reply_bytes(rift_stan *svc, const rift_msg *m, const uint8_t *p,
                        size_t len) {
    size_t rl;
    const char *reply = rift_msg_reply(m, &rl);
    if (reply && rl) {
        stan_send(svc, reply, rl, p, len);
    }
}

static void connect_reply_error(rift_stan *svc, const rift_msg *m,
                                const char *text) {
    rift_stan_connect_resp r = {0};
    r.error = (rift_stan_str){text, strlen(text)};
    uint8_t buf[512];
    size_t n = rift_stan_encode_connect_resp(&r, buf, sizeof buf);
    reply_bytes(svc, m, buf, n);
}

static rift_stan_str str_of(const char *s) {
    return (rift_stan_str){s, strlen(s)};
}

stan_client *stan_client_find(rift_stan *svc, rift_stan_str id) {
    for (stan_client *c = svc->clients; c; c = c->next) {
        if (strlen(c->id) == id.len && memcmp(c->id, id.p, id.len) == 0) {
            return c;
        }
    }
    return NULL;
}

stan_client *stan_client_by_conn(rift_stan *svc, rift_stan_str conn_id) {
    if (conn_id.len == 0) {
        return NULL;
    }
    for (stan_client *c = svc->clients; c; c = c->next) {
        if (c->conn_id_len == conn_id.len &&
            memcmp(c->conn_id, conn_id.p, conn_id.len) == 0) {
            return c;
        }
    }
    return NULL;
}

static void client_free(rift_stan *svc, stan_client *c) {
    rift_free(svc->s.mem, c->id);
    rift_free(svc->s.mem, c->hb_inbox);
    rift_free(svc->s.mem, c->conn_id);
    rift_free(svc->s.mem, c);
}

/* client_remove unlinks |c|, closes its subscriptions and frees it. */
static void client_remove(rift_stan *svc, stan_client *c) {
    stan_subs_drop_client(svc, c);
    for (stan_client **pp = &svc->clients; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            svc->nclients--;
            break;
        }
    }
    client_free(svc, c);
}

/* old_client_alive probes the heartbeat inbox of the registered client
 * (the original's duplicate-ID check); a silent client is replaced. */
static bool old_client_alive(rift_stan *svc, stan_client *old) {
    return stan_probe(svc, old->hb_inbox, DUP_PROBE_MS);
}

static stan_client *client_add(rift_stan *svc, const rift_stan_connect_req *q) {
    stan_client *c = rift_calloc(svc->s.mem, 1, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->id = stan_strdup(svc, q->client_id);
    c->hb_inbox = stan_strdup(svc, q->heartbeat_inbox);
    if (q->conn_id.len) {
        c->conn_id = rift_malloc(svc->s.mem, q->conn_id.len);
        if (c->conn_id) {
            memcpy(c->conn_id, q->conn_id.p, q->conn_id.len);
            c->conn_id_len = q->conn_id.len;
        }
    }
    if (!c->id || !c->hb_inbox || (q->conn_id.len && !c->conn_id)) {
        client_free(svc, c);
        return NULL;
    }
    c->serial = ++svc->next_serial;
    c->next = svc->clients;
    svc->clients = c;
    svc->nclients++;
    return c;
}

static void connect_reply_ok(rift_stan *svc, const rift_msg *m,
                             const rift_stan_connect_req *q) {
    rift_stan_connect_resp r = {0};
    r.pub_prefix = str_of(svc->pub_prefix);
    r.sub_requests = str_of(svc->sub_subj);
    r.unsub_requests = str_of(svc->unsub_subj);
    r.close_requests = str_of(svc->close_subj);
    r.sub_close_requests = str_of(svc->subclose_subj);
    if (q->protocol >= 1) {
        /* Echoed unchanged, however small or negative (clients' tests use
         * negative intervals for milliseconds). */
        r.ping_requests = str_of(svc->ping_subj);
        r.ping_interval = q->ping_interval;
        r.ping_max_out = q->ping_max_out;
        r.protocol = 1;
    }
    uint8_t buf[2048];
    size_t n = rift_stan_encode_connect_resp(&r, buf, sizeof buf);
    reply_bytes(svc, m, buf, n);
}

void stan_on_connect(rift_stan *svc, const rift_msg *m) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_connect_req q;
    if (rift_stan_decode_connect_req(p, len, &q, NULL) != 0 ||
        q.heartbeat_inbox.len == 0 ||
        !rift_subject_valid(q.heartbeat_inbox.p, q.heartbeat_inbox.len, false,
                            RIFT_MAX_SUBJECT_BYTES)) {
        connect_reply_error(svc, m, STAN_ERR_CONN_REQ);
        return;
    }
    if (!stan_client_id_valid(q.client_id)) {
        connect_reply_error(svc, m, STAN_ERR_INVALID_CLIENT_ID);
        return;
    }
    stan_client *old = stan_client_find(svc, q.client_id);
    if (old) {
        if (old_client_alive(svc, old)) {
            connect_reply_error(svc, m, STAN_ERR_DUP_CLIENT);
            return;
        }
        rift_log(RIFT_LOG_INFO, "stan: client %s replaced (heartbeat silent)",
                 old->id);
        client_remove(svc, old);
    }
    if (!client_add(svc, &q)) {
        connect_reply_error(svc, m, STAN_ERR_CONN_REQ);
        return;
    }
    connect_reply_ok(svc, m, &q);
}

static void one_str_reply(rift_stan *svc, const rift_msg *m, const char *err) {
    rift_stan_one_str r = {{err, err ? strlen(err) : 0}};
    uint8_t buf[512];
    size_t n = rift_stan_encode_one_str(&r, buf, sizeof buf);
    reply_bytes(svc, m, buf, n);
}

void stan_on_close(rift_stan *svc, const rift_msg *m) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_one_str q;
    if (rift_stan_decode_one_str(p, len, &q, NULL) != 0) {
        one_str_reply(svc, m, STAN_ERR_CLOSE_REQ);
        return;
    }
    stan_client *c = stan_client_find(svc, q.value);
    if (!c) {
        one_str_reply(svc, m, STAN_ERR_UNKNOWN_CLIENT);
        return;
    }
    client_remove(svc, c);
    one_str_reply(svc, m, NULL);
}

void stan_on_ping(rift_stan *svc, const rift_msg *m) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_ping q;
    if (rift_stan_decode_ping(p, len, &q, NULL) != 0 ||
        !stan_client_by_conn(svc, q.conn_id)) {
        one_str_reply(svc, m, STAN_ERR_PING_UNKNOWN);
        return;
    }
    one_str_reply(svc, m, NULL);
}

/* ---- Server heartbeats ---- */

void stan_on_hb_reply(rift_stan *svc, const rift_msg *m) {
    size_t sl;
    const char *subj = rift_msg_subject(m, &sl);
    size_t pl = strlen(svc->hb_prefix) + 1;
    if (sl <= pl) {
        return;
    }
    uint64_t serial = strtoull(subj + pl, NULL, 10);
    for (stan_client *c = svc->clients; c; c = c->next) {
        if (c->serial == serial) {
            c->hb_outstanding = false;
            c->hb_fails = 0;
            return;
        }
    }
}

/* A probe unanswered by the next round counts as one failure; a client
 * with more than hb_fail_count failures in a row is closed. */
void stan_heartbeat_tick(rift_stan *svc, uint64_t now_ms) {
    if (svc->s.hb_interval_ms == 0 ||
        now_ms - svc->last_hb_ms < svc->s.hb_interval_ms) {
        return;
    }
    svc->last_hb_ms = now_ms;
    stan_client *next;
    for (stan_client *c = svc->clients; c; c = next) {
        next = c->next;
        if (c->hb_outstanding && ++c->hb_fails > svc->s.hb_fail_count) {
            rift_log(RIFT_LOG_INFO,
                     "stan: client %s closed: %" PRIu32 " heartbeats missed",
                     c->id, c->hb_fails);
            client_remove(svc, c);
            continue;
        }
        char reply[1200];
        int n = snprintf(reply, sizeof reply, "%s.%" PRIu64, svc->hb_prefix,
                         c->serial);
        c->hb_outstanding = true;
        if (stan_publish(svc, c->hb_inbox, strlen(c->hb_inbox), reply,
                         (size_t)n, NULL, 0, NULL) != 0) {
            continue; /* counted as a miss at the next round */
        }
    }
}

void stan_clients_free(rift_stan *svc) {
    while (svc->clients) {
        stan_client *c = svc->clients;
        svc->clients = c->next;
        client_free(svc, c);
    }
    svc->nclients = 0;
}
