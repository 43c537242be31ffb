/*
 * nats_deliver.c — broker queues to MSG and HMSG (nats layer). Every NATS
 * subscription reports to the listener's notifier; a drain moves what is
 * queued straight into the connection's outbound buffer, so publishers on
 * any face never wait for a NATS client. A client whose unwritten output
 * would pass max_pending (or whose broker queue overflowed first) gets
 * -ERR 'Slow Consumer' and is closed.
 */
#include "nats/nats_internal.h"

#include "broker/broker_face.h"
#include "broker/msg_ext.h"

#include <string.h>

/* Room for "HMSG " + sid + sizes + separators beyond subject and reply. */
#define LINE_SLACK 64

enum {
    DELIVER_OK = 0,
    DELIVER_SUB_DONE = 1,
    DELIVER_CONN_CLOSED = 2
};

static void slow(nats_conn *c) {
    atomic_fetch_add(&c->srv->slow_consumers, 1);
    rift_nats_conn_close(c, "Slow Consumer");
}

/* Writes |v| in decimal at |p|; returns the digits written. (sprintf was
 * a sixth of the delivery path's time.) */
static size_t put_size(uint8_t *p, size_t v) {
    uint8_t tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    for (size_t i = 0; i < n; i++) {
        p[i] = tmp[n - 1 - i];
    }
    return n;
}

/* Appends "<op> <subject> <sid> [<reply>] [<hlen>] <total>\r\n". */
static size_t put_line(uint8_t *p, bool hmsg, const char *subj, size_t slen,
                       const nats_sub *ns, const char *reply, size_t rlen,
                       size_t hlen, size_t total) {
    uint8_t *start = p;
    memcpy(p, hmsg ? "HMSG " : "MSG ", hmsg ? 5 : 4);
    p += hmsg ? 5 : 4;
    memcpy(p, subj, slen);
    p += slen;
    *p++ = ' ';
    memcpy(p, ns->sid, ns->sid_len);
    p += ns->sid_len;
    *p++ = ' ';
    if (rlen > 0) {
        memcpy(p, reply, rlen);
        p += rlen;
        *p++ = ' ';
    }
    if (hmsg) {
        p += put_size(p, hlen);
        *p++ = ' ';
    }
    p += put_size(p, total);
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - start);
}

/* Is |subject| under an inbox prefix that another connection claimed? */
static bool foreign_inbox(nats_conn *c, const char *subject, size_t len) {
    size_t tlen;
    const char *tok = rift_nats_inbox_token(subject, len, &tlen);
    if (tok == NULL) {
        return false;
    }
    nats_conn *owner = rift_nats_claim_owner(c->srv, tok, tlen);
    return owner != NULL && owner != c;
}

static int deliver(nats_sub *ns, const rift_msg *msg) {
    nats_conn *c = ns->conn;
    size_t elen, slen, rlen, plen;
    const uint8_t *ext = rift_msg_ext(msg, &elen);
    const char *subj = rift_msg_subject(msg, &slen);
    const char *reply = rift_msg_reply(msg, &rlen);
    const uint8_t *pay = rift_msg_payload(msg, &plen);
    uint64_t origin = 0;
    const uint8_t *hdr = NULL;
    size_t hlen = 0;
    if (elen >= NATS_EXT_ORIGIN) {
        memcpy(&origin, ext, NATS_EXT_ORIGIN);
        hdr = ext + NATS_EXT_ORIGIN;
        hlen = elen - NATS_EXT_ORIGIN;
    }
    if (RIFT_UNLIKELY(rift_msg_no_responders(msg))) {
        /* The cluster backbone's 503 (docs/cluster.md), for clients that
         * asked for it. */
        static const char status[] = "NATS/1.0 503\r\n\r\n";
        if (!c->no_responders || !c->headers) {
            return DELIVER_OK;
        }
        hdr = (const uint8_t *)status;
        hlen = sizeof(status) - 1;
        plen = 0;
    }
    if ((!c->echo && origin == c->cid) ||
        (!ns->in_claim && foreign_inbox(c, subj, slen))) {
        return DELIVER_OK;
    }
    bool hmsg = hlen > 0 && c->headers;
    if (!hmsg) {
        hlen = 0;
    }
    size_t need = LINE_SLACK + slen + rlen + ns->sid_len + hlen + plen + 2;
    /* Output is written at the end of each loop callback, but one callback
     * may route several MiB; what the socket takes now is not pending, so
     * write before judging the client slow (nats-server flushes between
     * reads for the same reason). */
    if (rift_nats_conn_pending(c) + need > c->srv->s.max_pending &&
        (!rift_nats_conn_flush(c) ||
         rift_nats_conn_pending(c) + need > c->srv->s.max_pending)) {
        if (!c->closing) {
            slow(c);
        }
        return DELIVER_CONN_CLOSED;
    }
    uint8_t *p = rift_nats_conn_reserve(c, need);
    if (p == NULL) {
        rift_nats_conn_close(c, "Server Out Of Memory");
        return DELIVER_CONN_CLOSED;
    }
    size_t n =
        put_line(p, hmsg, subj, slen, ns, reply, rlen, hlen, hlen + plen);
    if (hlen > 0) {
        memcpy(p + n, hdr, hlen);
        n += hlen;
    }
    if (plen > 0) {
        memcpy(p + n, pay, plen);
        n += plen;
    }
    p[n++] = '\r';
    p[n++] = '\n';
    rift_nats_conn_commit(c, n);
    rift_nats_pace_delivered(c);
    c->srv->tally.msgs_out++;
    c->srv->tally.bytes_out += plen;
    if (ns->max > 0 && ++ns->delivered >= ns->max) {
        rift_nats_sub_end(ns);
        return DELIVER_SUB_DONE;
    }
    if (ns->max == 0) {
        ns->delivered++;
    }
    return DELIVER_OK;
}

static void drain_sub(nats_sub *ns) {
    rift_msg *msgs[NATS_BATCH];
    for (;;) {
        rift_error err;
        rift_ssize n = rift_sub_recv_batch(ns->sub, 0, msgs, NATS_BATCH, &err);
        if (n == RIFT_ERR_AGAIN) {
            return;
        }
        if (n < 0) {
            if (n == RIFT_ERR_SLOW_CONSUMER) {
                slow(ns->conn);
            } else {
                rift_nats_conn_close(ns->conn, NULL);
            }
            return;
        }
        int st = DELIVER_OK;
        for (rift_ssize i = 0; i < n; i++) {
            if (st == DELIVER_OK) {
                st = deliver(ns, msgs[i]);
            }
            rift_msg_unref(msgs[i]);
        }
        if (st != DELIVER_OK || n < NATS_BATCH) {
            return;
        }
    }
}

void rift_nats_drain(rift_nats *srv) {
    rift_sub *ready[NATS_BATCH];
    size_t n;
    srv->undrained = 0;
    while ((n = rift_notifier_poll(srv->notifier, ready, NATS_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            nats_sub *ns = rift_sub_user_data(ready[i]);
            if (!ns->conn->closing) {
                drain_sub(ns);
            }
        }
    }
}

void rift_nats_no_responders(nats_conn *c, const char *reply, size_t rlen) {
    static const char status[] = "NATS/1.0 503\r\n\r\n";
    for (nats_sub *ns = c->subs; ns != NULL; ns = ns->next) {
        if (!rift_subject_matches(ns->pattern, ns->pattern_len, reply, rlen)) {
            continue;
        }
        size_t hlen = sizeof(status) - 1;
        size_t need = LINE_SLACK + rlen + ns->sid_len + hlen + 2;
        uint8_t *p = rift_nats_conn_reserve(c, need);
        if (p == NULL) {
            return;
        }
        size_t n = put_line(p, true, reply, rlen, ns, NULL, 0, hlen, hlen);
        memcpy(p + n, status, hlen);
        n += hlen;
        p[n++] = '\r';
        p[n++] = '\n';
        rift_nats_conn_commit(c, n);
        return;
    }
}
