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
#define DUP_PROBE_MS 500u
/* The first gap between the probes of a restored client not heard from
 * yet. */
#define HOLD_PROBE_MS 200u
/* Connects parked on a probe at once; more get "already registered". */
#define MAX_PENDING_CONNECTS 1024u

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
    stan_sessions_client_removed(svc, c);
    for (stan_client **pp = &svc->clients; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            svc->nclients--;
            break;
        }
    }
    client_free(svc, c);
}

static stan_client *client_new(rift_stan *svc, const rift_stan_connect_req *q) {
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
    c->protocol = q->protocol;
    c->ping_interval = q->ping_interval;
    c->ping_max_out = q->ping_max_out;
    c->serial = ++svc->next_serial;
    c->hb_next_ms = stan_mono_ms() + svc->s.hb_interval_ms;
    c->next = svc->clients;
    svc->clients = c;
    svc->nclients++;
    return c;
}

stan_client *stan_client_restore(rift_stan *svc,
                                 const rift_stan_connect_req *q) {
    if (!stan_client_id_valid(q->client_id) || q->heartbeat_inbox.len == 0 ||
        stan_client_find(svc, q->client_id)) {
        return NULL;
    }
    stan_client *c = client_new(svc, q);
    if (c) {
        c->held = true;
        c->hold_probe_ms = stan_mono_ms();
        c->hold_gap_ms = HOLD_PROBE_MS;
    }
    return c;
}

void stan_client_heard(rift_stan *svc, stan_client *c) {
    if (c && c->held) {
        c->held = false;
        stan_subs_attach_client(svc, c);
    }
}

static stan_client *client_add(rift_stan *svc, const rift_stan_connect_req *q) {
    stan_client *c = client_new(svc, q);
    if (c) {
        stan_sessions_client_added(svc, c);
    }
    return c;
}

static void connect_reply_ok(rift_stan *svc, const char *reply,
                             size_t reply_len, const rift_stan_connect_req *q) {
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
    if (reply && reply_len) {
        stan_send(svc, reply, reply_len, buf, n);
    }
}

static void connect_error_to(rift_stan *svc, const char *reply,
                             const char *text) {
    rift_stan_connect_resp r = {0};
    r.error = (rift_stan_str){text, strlen(text)};
    uint8_t buf[512];
    size_t n = rift_stan_encode_connect_resp(&r, buf, sizeof buf);
    if (reply && reply[0]) {
        stan_send(svc, reply, strlen(reply), buf, n);
    }
}

/* ---- The duplicate-ID probe ---- */

/* probe_send asks |inbox| for an answer on <hb_prefix>.<serial>.<probe>. */
static bool probe_send(rift_stan *svc, const char *inbox, uint64_t serial,
                       uint64_t probe) {
    char reply[1200];
    int n = snprintf(reply, sizeof reply, "%s.%" PRIu64 ".%" PRIu64,
                     svc->hb_prefix, serial, probe);
    return n > 0 && (size_t)n < sizeof reply &&
           stan_publish(svc, inbox, strlen(inbox), reply, (size_t)n, NULL, 0,
                        NULL) == 0;
}

static stan_pending_connect *pending_find(rift_stan *svc, rift_stan_str id) {
    for (stan_pending_connect *p = svc->pending; p; p = p->next) {
        if (strlen(p->client_id) == id.len &&
            memcmp(p->client_id, id.p, id.len) == 0) {
            return p;
        }
    }
    return NULL;
}

static void pending_free(rift_stan *svc, stan_pending_connect *p) {
    rift_free(svc->s.mem, p->client_id);
    rift_free(svc->s.mem, p->request);
    rift_free(svc->s.mem, p->reply);
    rift_free(svc->s.mem, p);
}

static void pending_unlink(rift_stan *svc, stan_pending_connect *p) {
    for (stan_pending_connect **pp = &svc->pending; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            svc->npending--;
            return;
        }
    }
}

/* pending_start parks the connect and probes the old client's heartbeat
 * inbox (the original's duplicate-ID check) without waiting: the answer
 * (stan_on_hb_reply) refuses the new client, the deadline
 * (stan_heartbeat_tick) replaces the old one. */
static void pending_start(rift_stan *svc, const rift_msg *m,
                          const stan_client *old, rift_stan_str id) {
    size_t len, rl;
    const uint8_t *payload = rift_msg_payload(m, &len);
    const char *reply = rift_msg_reply(m, &rl);
    stan_pending_connect *p = NULL;
    if (svc->npending < MAX_PENDING_CONNECTS) {
        p = rift_calloc(svc->s.mem, 1, sizeof *p);
    }
    if (p) {
        p->client_id = stan_strdup(svc, id);
        p->request = rift_malloc(svc->s.mem, len ? len : 1);
        p->reply = rift_strndup(svc->s.mem, reply ? reply : "", rl);
    }
    if (!p || !p->client_id || !p->request || !p->reply) {
        if (p) {
            pending_free(svc, p);
        }
        connect_reply_error(svc, m, STAN_ERR_DUP_CLIENT);
        return;
    }
    memcpy(p->request, payload, len);
    p->request_len = len;
    p->old_serial = old->serial;
    p->probe = ++svc->next_serial;
    p->deadline_ms = stan_mono_ms() + DUP_PROBE_MS;
    p->next = svc->pending;
    svc->pending = p;
    svc->npending++;
    /* Not sent: nobody can answer, the deadline replaces the old client. */
    (void)probe_send(svc, old->hb_inbox, old->serial, p->probe);
}

/* pending_settle finishes a parked connect: |alive| refuses it, else the
 * old registration (if still the probed one) is replaced. */
static void pending_settle(rift_stan *svc, stan_pending_connect *p,
                           bool alive) {
    pending_unlink(svc, p);
    rift_stan_connect_req q;
    if (alive) {
        connect_error_to(svc, p->reply, STAN_ERR_DUP_CLIENT);
    } else if (rift_stan_decode_connect_req(p->request, p->request_len, &q,
                                            NULL) == 0) {
        stan_client *old = stan_client_find(svc, q.client_id);
        if (old && old->serial == p->old_serial) {
            rift_log(RIFT_LOG_INFO,
                     "stan: client %s replaced (heartbeat silent)", old->id);
            client_remove(svc, old);
        }
        if (stan_client_find(svc, q.client_id) || !client_add(svc, &q)) {
            connect_error_to(svc, p->reply, STAN_ERR_CONN_REQ);
        } else {
            connect_reply_ok(svc, p->reply, strlen(p->reply), &q);
        }
    }
    pending_free(svc, p);
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
    if (pending_find(svc, q.client_id)) {
        /* One probe per ID at a time, as the original. */
        connect_reply_error(svc, m, STAN_ERR_DUP_CLIENT);
        return;
    }
    stan_client *old = stan_client_find(svc, q.client_id);
    if (old) {
        pending_start(svc, m, old, q.client_id);
        return;
    }
    if (!client_add(svc, &q)) {
        connect_reply_error(svc, m, STAN_ERR_CONN_REQ);
        return;
    }
    size_t rl;
    const char *reply = rift_msg_reply(m, &rl);
    connect_reply_ok(svc, reply, rl, &q);
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
    stan_client *c = rift_stan_decode_ping(p, len, &q, NULL) == 0
                         ? stan_client_by_conn(svc, q.conn_id)
                         : NULL;
    if (!c) {
        one_str_reply(svc, m, STAN_ERR_PING_UNKNOWN);
        return;
    }
    stan_client_heard(svc, c);
    one_str_reply(svc, m, NULL);
}

/* ---- Server heartbeats ---- */

/* A reply names <hb_prefix>.<serial>.<probe>: the client, and which probe
 * (a late answer to a probe already counted as missed counts for none). */
void stan_on_hb_reply(rift_stan *svc, const rift_msg *m) {
    size_t sl;
    const char *subj = rift_msg_subject(m, &sl);
    size_t pl = strlen(svc->hb_prefix) + 1;
    char tail[64];
    if (sl <= pl || sl - pl >= sizeof tail) {
        return;
    }
    memcpy(tail, subj + pl, sl - pl);
    tail[sl - pl] = '\0';
    char *dot = NULL;
    uint64_t serial = strtoull(tail, &dot, 10);
    if (!dot || *dot != '.') {
        return;
    }
    uint64_t probe = strtoull(dot + 1, NULL, 10);
    for (stan_pending_connect *p = svc->pending; p; p = p->next) {
        if (p->old_serial == serial && p->probe == probe) {
            pending_settle(svc, p, true);
            break; /* and the old client is alive: heard, below */
        }
    }
    for (stan_client *c = svc->clients; c; c = c->next) {
        if (c->serial == serial) {
            stan_client_heard(svc, c); /* any probe's answer, late or not */
            if (c->hb_probe == probe && probe != 0) {
                c->hb_probe = 0;
                c->hb_fails = 0;
                c->hb_next_ms = stan_mono_ms() + svc->s.hb_interval_ms;
            }
            return;
        }
    }
}

/* As the original: a probe every interval_ms after the previous one was
 * settled; one unanswered within timeout_ms is a miss, and a client with
 * more than fail_count misses in a row is closed. */
static uint64_t client_tick(rift_stan *svc, stan_client *c, uint64_t now_ms,
                            bool *closed) {
    *closed = false;
    if (c->hb_probe && now_ms - c->hb_sent_ms >= svc->s.hb_timeout_ms) {
        c->hb_probe = 0;
        c->hb_next_ms = now_ms + svc->s.hb_interval_ms;
        if (++c->hb_fails > svc->s.hb_fail_count) {
            rift_log(RIFT_LOG_INFO,
                     "stan: client %s closed: %" PRIu32 " heartbeats missed",
                     c->id, c->hb_fails);
            client_remove(svc, c);
            *closed = true;
            return UINT64_MAX;
        }
    }
    if (!c->hb_probe && now_ms >= c->hb_next_ms) {
        c->hb_probe = ++svc->next_serial;
        c->hb_sent_ms = now_ms;
        /* Not sent: counted as a miss at its timeout. */
        (void)probe_send(svc, c->hb_inbox, c->serial, c->hb_probe);
    }
    uint64_t due =
        c->hb_probe ? c->hb_sent_ms + svc->s.hb_timeout_ms : c->hb_next_ms;
    if (c->held) {
        if (now_ms >= c->hold_probe_ms) {
            /* Probe 0 is never awaited: any answer just releases it. */
            (void)probe_send(svc, c->hb_inbox, c->serial, 0);
            c->hold_probe_ms = now_ms + c->hold_gap_ms;
            /* Doubling: a client that never comes back costs little until
             * the heartbeats close it. */
            if (c->hold_gap_ms < svc->s.hb_interval_ms / 2) {
                c->hold_gap_ms *= 2;
            }
        }
        due = c->hold_probe_ms < due ? c->hold_probe_ms : due;
    }
    return due;
}

uint64_t stan_heartbeat_tick(rift_stan *svc, uint64_t now_ms) {
    uint64_t due = UINT64_MAX;
    stan_pending_connect *pn;
    for (stan_pending_connect *p = svc->pending; p; p = pn) {
        pn = p->next;
        if (now_ms >= p->deadline_ms) {
            pending_settle(svc, p, false);
        } else if (p->deadline_ms < due) {
            due = p->deadline_ms;
        }
    }
    if (svc->s.hb_interval_ms == 0) {
        return due;
    }
    stan_client *next;
    for (stan_client *c = svc->clients; c; c = next) {
        next = c->next;
        bool closed;
        uint64_t d = client_tick(svc, c, now_ms, &closed);
        if (!closed) { /* a close frees |c| only: |next| stays */
            due = d < due ? d : due;
        }
    }
    return due;
}

void stan_clients_free(rift_stan *svc) {
    while (svc->pending) {
        stan_pending_connect *p = svc->pending;
        svc->pending = p->next;
        pending_free(svc, p);
    }
    svc->npending = 0;
    while (svc->clients) {
        stan_client *c = svc->clients;
        svc->clients = c->next;
        client_free(svc, c);
    }
    svc->nclients = 0;
}
