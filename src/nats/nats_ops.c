/*
 * nats_ops.c — the client's operations (nats layer): CONNECT (options and
 * authentication against the principals), PUB/HPUB into the broker under
 * the identity's ACL, SUB/UNSUB with queue groups, max counts and inbox
 * claims, PING/PONG. Texts and which errors close the connection follow
 * nats-server 2.9: permission violations and invalid subjects keep it
 * open, authorization failures close it.
 */
#include "nats/nats_internal.h"

#include "broker/msg_ext.h"
#include "subject/quota.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define AUTH_VIOLATION "Authorization Violation"

static void ok(nats_conn *c) {
    if (c->verbose) {
        (void)rift_nats_conn_send(c, "+OK\r\n", 5);
    }
}

/* -ERR 'Permissions Violation for <what> to "<subject>"', kept open. */
static void violation(nats_conn *c, const char *what, const char *s,
                      size_t len) {
    char text[400];
    int n = (int)(len > 300 ? 300 : len);
    snprintf(text, sizeof(text), "Permissions Violation for %s to \"%.*s\"",
             what, n, s);
    rift_nats_conn_err(c, text);
}

/* ---- CONNECT ---- */

static bool flag(json_t *o, const char *key, bool dflt) {
    json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *text(json_t *o, const char *key, size_t *len) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        return NULL;
    }
    *len = json_string_length(v);
    return json_string_value(v);
}

/* The principal the credentials name, or NULL; *index is its entry. */
static const rift_identity *authenticate(rift_nats *srv, json_t *o,
                                         size_t *index) {
    size_t tlen = 0, ulen = 0, plen = 0;
    const char *token = text(o, "auth_token", &tlen);
    const char *user = text(o, "user", &ulen);
    const char *pass = text(o, "pass", &plen);
    const rift_identity *id = NULL;
    if (token != NULL) {
        id = rift_auth_table_lookup(&srv->auth, token, tlen);
    } else if (user != NULL && pass != NULL) {
        id = rift_auth_table_lookup(&srv->auth, pass, plen);
        if (id != NULL &&
            (id->name_len != ulen || memcmp(id->name, user, ulen) != 0)) {
            id = NULL;
        }
    } else if (user == NULL && pass == NULL && srv->anonymous != NULL) {
        for (size_t i = 0; i < srv->auth.count; i++) {
            if (strcmp(srv->auth.entries[i].identity.name, srv->anonymous) ==
                0) {
                id = &srv->auth.entries[i].identity;
            }
        }
    }
    if (id != NULL) {
        for (size_t i = 0; i < srv->auth.count; i++) {
            if (&srv->auth.entries[i].identity == id) {
                *index = i;
            }
        }
    }
    return id;
}

static bool do_connect(nats_conn *c, const rift_nats_op *op) {
    rift_nats *srv = c->srv;
    json_error_t je;
    json_t *o = json_loadb(op->args, op->args_len, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        rift_nats_conn_close(c, "Invalid CONNECT");
        return false;
    }
    if (c->connected) {
        /* A second CONNECT changes nothing (the identity stays). */
        json_decref(o);
        ok(c);
        return true;
    }
    c->verbose = flag(o, "verbose", true);
    c->pedantic = flag(o, "pedantic", true);
    c->echo = flag(o, "echo", true);
    c->headers = flag(o, "headers", false);
    c->no_responders = flag(o, "no_responders", false);
    size_t index = SIZE_MAX;
    const rift_identity *id = authenticate(srv, o, &index);
    json_decref(o);
    if (id == NULL) {
        atomic_fetch_add(&srv->auth_failures, 1);
        rift_nats_conn_close(c, AUTH_VIOLATION);
        return false;
    }
    if (c->no_responders && !c->headers) {
        rift_nats_conn_close(c, "no responders requires headers support");
        return false;
    }
    rift_error err;
    size_t slot = rift_quota_find(srv->s.quota, id->name, id->name_len);
    if (srv->s.quota != NULL &&
        rift_quota_take(srv->s.quota, slot, RIFT_QUOTA_CONNECTIONS, &err) !=
            0) {
        atomic_fetch_add(&srv->refused, 1);
        rift_nats_conn_close(c, "maximum connections exceeded");
        return false;
    }
    c->quota_slot = slot;
    c->quota_taken = srv->s.quota != NULL;
    c->id = id;
    c->id_index = index;
    c->connected = true;
    atomic_fetch_add(&srv->n_auth, 1);
    atomic_fetch_add(&srv->by_identity[index], 1);
    rift_timer_stop(&c->auth_timer);
    ok(c);
    return true;
}

/* ---- PUB, HPUB ---- */

/* A reply subject the connection may use: inside one of its own claims,
 * or a subject it may subscribe to that nobody else claimed (protocol v1
 * asks for an _INBOX subject; NATS clients pick their reply subjects
 * freely, and a responder still answers only where it may publish). */
static bool reply_allowed(nats_conn *c, const char *r, size_t rlen) {
    rift_error err;
    size_t tlen;
    const char *tok = rift_nats_inbox_token(r, rlen, &tlen);
    if (tok != NULL) {
        nats_conn *owner = rift_nats_claim_owner(c->srv, tok, tlen);
        if (owner == c) {
            return true;
        }
        if (owner != NULL) {
            return false;
        }
    }
    return rift_identity_can_subscribe(c->id, r, rlen, &err) == 0;
}

/* Is |op|'s subject one |c| may publish to? The last subject that passed
 * is remembered: publishers mostly repeat one subject, and a connection's
 * identity and grants never change after CONNECT, so a repeat skips the
 * validation and the grant walk. The reply is checked every time (inbox
 * claims come and go). */
static bool pub_subject_ok(nats_conn *c, const rift_nats_op *op,
                           bool *invalid) {
    rift_error err;
    if (op->subject_len == c->pub_ok_len &&
        memcmp(op->subject, c->pub_ok, op->subject_len) == 0) {
        return true;
    }
    if (rift_subject_validate_literal(op->subject, op->subject_len, &err) !=
        0) {
        *invalid = true;
        return false;
    }
    if (rift_identity_can_publish(c->id, op->subject, op->subject_len, NULL, 0,
                                  &err) != 0) {
        return false;
    }
    if (op->subject_len <= sizeof(c->pub_ok)) {
        memcpy(c->pub_ok, op->subject, op->subject_len);
        c->pub_ok_len = op->subject_len;
    }
    return true;
}

static bool do_pub(nats_conn *c, const rift_nats_op *op) {
    rift_nats *srv = c->srv;
    rift_error err;
    bool invalid = false;
    bool allowed = pub_subject_ok(c, op, &invalid);
    if (invalid ||
        (op->reply != NULL &&
         rift_subject_validate_literal(op->reply, op->reply_len, &err) != 0)) {
        rift_nats_conn_err(c, "Invalid Publish Subject");
        return true;
    }
    if (!allowed ||
        (op->reply != NULL && !reply_allowed(c, op->reply, op->reply_len))) {
        violation(c, "Publish", op->subject, op->subject_len);
        return true;
    }
    uint8_t ext[NATS_EXT_ORIGIN];
    memcpy(ext, &c->cid, sizeof(c->cid));
    size_t hlen = op->kind == RIFT_NATS_OP_HPUB ? op->header_len : 0;
    /* The block is origin + headers; the broker builds the message only
     * when a subscription matches. */
    rift_publish_report rep = {0};
    int rc = rift_broker_publish_ext(srv->broker, op->subject, op->subject_len,
                                     op->reply, op->reply_len, ext, sizeof(ext),
                                     op->data, hlen, op->data + hlen,
                                     op->total_len - hlen, &rep, &err);
    if (rc != 0) {
        rift_nats_conn_err(c, rc == RIFT_ERR_NOMEM ? "Server Out Of Memory"
                                                   : "Invalid Publish Subject");
        return true;
    }
    srv->undrained += rep.delivered;
    srv->tally.msgs_in++;
    srv->tally.bytes_in += op->total_len - hlen;
    if (op->reply != NULL && rep.delivered == 0 && rep.forwarded == 0 &&
        c->no_responders) {
        rift_nats_no_responders(c, op->reply, op->reply_len);
    }
    ok(c);
    return true;
}

/* ---- SUB, UNSUB ---- */

static nats_sub *find_sub(nats_conn *c, const char *sid, size_t len,
                          nats_sub ***link) {
    nats_sub **pp = &c->subs;
    for (; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->sid_len == len && memcmp((*pp)->sid, sid, len) == 0) {
            if (link != NULL) {
                *link = pp;
            }
            return *pp;
        }
    }
    return NULL;
}

static nats_sub *sub_new(nats_conn *c, const rift_nats_op *op) {
    nats_sub *ns =
        rift_calloc(NULL, 1, sizeof(*ns) + op->sid_len + op->subject_len + 2);
    if (ns == NULL) {
        return NULL;
    }
    ns->conn = c;
    memcpy(ns->buf, op->sid, op->sid_len);
    ns->sid = ns->buf;
    ns->sid_len = op->sid_len;
    char *pat = ns->buf + op->sid_len + 1;
    memcpy(pat, op->subject, op->subject_len);
    ns->pattern = pat;
    ns->pattern_len = op->subject_len;
    return ns;
}

/* May |c| subscribe to |op|'s pattern? Claims an inbox prefix on the way;
 * false after answering the refusal. */
static bool sub_allowed(nats_conn *c, const rift_nats_op *op, bool *in_claim) {
    rift_error err;
    if (rift_subject_validate_pattern(op->subject, op->subject_len, &err) !=
        0) {
        rift_nats_conn_err(c, "Invalid Subject");
        return false;
    }
    size_t tlen;
    const char *tok =
        rift_nats_inbox_token(op->subject, op->subject_len, &tlen);
    *in_claim = false;
    if (tok != NULL) {
        if (rift_nats_claim(c, tok, tlen) != 0) {
            violation(c, "Subscription", op->subject, op->subject_len);
            return false;
        }
        *in_claim = true;
        return true;
    }
    if (rift_identity_can_subscribe(c->id, op->subject, op->subject_len,
                                    &err) != 0) {
        violation(c, "Subscription", op->subject, op->subject_len);
        return false;
    }
    return true;
}

static bool do_sub(nats_conn *c, const rift_nats_op *op) {
    rift_nats *srv = c->srv;
    bool in_claim;
    if (find_sub(c, op->sid, op->sid_len, NULL) != NULL) {
        ok(c); /* nats-server keeps the first subscription of a sid */
        return true;
    }
    if (!sub_allowed(c, op, &in_claim)) {
        return true;
    }
    rift_error err;
    if (c->n_subs >= NATS_MAX_SUBS ||
        rift_quota_take(srv->s.quota, c->quota_slot, RIFT_QUOTA_SUBSCRIPTIONS,
                        &err) != 0) {
        rift_nats_conn_err(c, "Maximum Subscriptions Exceeded");
        return true;
    }
    nats_sub *ns = sub_new(c, op);
    rift_sub_options so = {
        .queue = op->queue,
        .queue_len = op->queue_len,
        .notifier = srv->notifier,
        .user_data = ns,
    };
    int rc = ns == NULL
                 ? RIFT_ERR_NOMEM
                 : rift_broker_subscribe(srv->broker, op->subject,
                                         op->subject_len, &so, &ns->sub, &err);
    if (rc != 0) {
        rift_quota_give(srv->s.quota, c->quota_slot, RIFT_QUOTA_SUBSCRIPTIONS);
        rift_free(NULL, ns);
        rift_nats_conn_err(c, rc == RIFT_ERR_SUBSCRIPTION_LIMIT
                                  ? "Maximum Subscriptions Exceeded"
                              : op->queue != NULL ? "Invalid Queue Name"
                                                  : "Invalid Subject");
        return true;
    }
    ns->in_claim = in_claim;
    ns->next = c->subs;
    c->subs = ns;
    c->n_subs++;
    ok(c);
    return true;
}

void rift_nats_sub_end(nats_sub *ns) {
    nats_conn *c = ns->conn;
    nats_sub **pp = &c->subs;
    while (*pp != NULL && *pp != ns) {
        pp = &(*pp)->next;
    }
    if (*pp == ns) {
        *pp = ns->next;
        c->n_subs--;
    }
    rift_sub_close(ns->sub);
    rift_quota_give(c->srv->s.quota, c->quota_slot, RIFT_QUOTA_SUBSCRIPTIONS);
    rift_free(NULL, ns);
}

void rift_nats_conn_unsub_all(nats_conn *c) {
    while (c->subs != NULL) {
        rift_nats_sub_end(c->subs);
    }
}

static bool do_unsub(nats_conn *c, const rift_nats_op *op) {
    nats_sub *ns = find_sub(c, op->sid, op->sid_len, NULL);
    if (ns != NULL) {
        if (op->max_msgs > ns->delivered) {
            ns->max = op->max_msgs;
        } else {
            rift_nats_sub_end(ns);
        }
    }
    ok(c);
    return true;
}

/* ---- Dispatch ---- */

bool rift_nats_handle_op(nats_conn *c, const rift_nats_op *op) {
    if (op->kind == RIFT_NATS_OP_CONNECT) {
        return do_connect(c, op);
    }
    if (!c->connected) {
        atomic_fetch_add(&c->srv->auth_failures, 1);
        rift_nats_conn_close(c, AUTH_VIOLATION);
        return false;
    }
    switch (op->kind) {
    case RIFT_NATS_OP_PUB:
    case RIFT_NATS_OP_HPUB:
        return do_pub(c, op);
    case RIFT_NATS_OP_SUB:
        return do_sub(c, op);
    case RIFT_NATS_OP_UNSUB:
        return do_unsub(c, op);
    case RIFT_NATS_OP_PING:
        /* PONG is the clients' flush barrier: what they published to
         * their own subscriptions goes out before it, as nats-server. */
        rift_nats_drain(c->srv);
        if (c->closing) {
            return false;
        }
        (void)rift_nats_conn_send(c, "PONG\r\n", 6);
        return true;
    case RIFT_NATS_OP_PONG:
        c->pings_out = 0;
        return true;
    default: /* +OK, -ERR from a client: nothing to do */
        return true;
    }
}
