/*
 * inbox.c — inbox claims (nats layer): request/reply for NATS clients
 * without a broad `_INBOX.>` grant, and without one identity reading
 * another's replies.
 *
 * A subject "_INBOX.<token>" or "_INBOX.<token>.<...>" whose token has at
 * least NATS_INBOX_MIN_TOKEN letters and digits (the 22-character NUIDs
 * nats.go, nats.c and nats.js generate) is under an unguessable prefix.
 * The first connection that subscribes under a prefix claims it: from
 * then on it may subscribe there and use replies there without a grant,
 * no other connection may subscribe under it, and NATS subscriptions of
 * other connections whose wildcards reach into it (`_INBOX.>`, `>`) do not
 * get its messages (deliver.c). The claim ends with the connection. The
 * rule is docs/riftd.md's "NATS inboxes".
 */
#include "nats/internal.h"

#include <string.h>

#define NATS_INBOX_MIN_TOKEN 16
/* Claims one connection may hold (a client uses one or a few). */
#define NATS_MAX_CLAIMS 256
#define INITIAL_BUCKETS 256

struct nats_claim {
    nats_claim *bucket_next;
    nats_claim *conn_next;
    nats_conn *owner;
    size_t len;
    char token[];
};

static const char prefix[] = "_INBOX.";
#define PREFIX_LEN (sizeof(prefix) - 1)

static bool alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

const char *rift_nats_inbox_token(const char *subject, size_t len,
                                  size_t *tlen) {
    if (len <= PREFIX_LEN || memcmp(subject, prefix, PREFIX_LEN) != 0) {
        return NULL;
    }
    const char *t = subject + PREFIX_LEN;
    size_t n = 0;
    while (PREFIX_LEN + n < len && t[n] != '.') {
        if (!alnum(t[n])) {
            return NULL;
        }
        n++;
    }
    if (n < NATS_INBOX_MIN_TOKEN) {
        return NULL;
    }
    *tlen = n;
    return t;
}

static size_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    }
    return (size_t)h;
}

nats_conn *rift_nats_claim_owner(rift_nats *srv, const char *token,
                                 size_t tlen) {
    if (srv->claim_table == NULL) {
        return NULL;
    }
    nats_claim *k = srv->claim_table[hash(token, tlen) % srv->claim_buckets];
    for (; k != NULL; k = k->bucket_next) {
        if (k->len == tlen && memcmp(k->token, token, tlen) == 0) {
            return k->owner;
        }
    }
    return NULL;
}

static int grow(rift_nats *srv) {
    size_t nb = srv->claim_buckets ? srv->claim_buckets * 2 : INITIAL_BUCKETS;
    nats_claim **t = rift_calloc(NULL, nb, sizeof(*t));
    if (t == NULL) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < srv->claim_buckets; i++) {
        nats_claim *k = srv->claim_table[i];
        while (k != NULL) {
            nats_claim *next = k->bucket_next;
            size_t b = hash(k->token, k->len) % nb;
            k->bucket_next = t[b];
            t[b] = k;
            k = next;
        }
    }
    rift_free(NULL, srv->claim_table);
    srv->claim_table = t;
    srv->claim_buckets = nb;
    return 0;
}

int rift_nats_claim(nats_conn *c, const char *token, size_t tlen) {
    rift_nats *srv = c->srv;
    nats_conn *owner = rift_nats_claim_owner(srv, token, tlen);
    if (owner == c) {
        return 0;
    }
    if (owner != NULL) {
        return RIFT_ERR_PERMISSION;
    }
    size_t mine = 0;
    for (nats_claim *k = c->claims; k != NULL; k = k->conn_next) {
        mine++;
    }
    if (mine >= NATS_MAX_CLAIMS) {
        return RIFT_ERR_LIMIT;
    }
    if (srv->n_claims >= srv->claim_buckets && grow(srv) != 0) {
        return RIFT_ERR_NOMEM;
    }
    nats_claim *k = rift_malloc(NULL, sizeof(*k) + tlen);
    if (k == NULL) {
        return RIFT_ERR_NOMEM;
    }
    memcpy(k->token, token, tlen);
    k->len = tlen;
    k->owner = c;
    size_t b = hash(token, tlen) % srv->claim_buckets;
    k->bucket_next = srv->claim_table[b];
    srv->claim_table[b] = k;
    k->conn_next = c->claims;
    c->claims = k;
    srv->n_claims++;
    return 0;
}

void rift_nats_claims_release(nats_conn *c) {
    rift_nats *srv = c->srv;
    while (c->claims != NULL) {
        nats_claim *k = c->claims;
        c->claims = k->conn_next;
        nats_claim **pp =
            &srv->claim_table[hash(k->token, k->len) % srv->claim_buckets];
        while (*pp != k) {
            pp = &(*pp)->bucket_next;
        }
        *pp = k->bucket_next;
        srv->n_claims--;
        rift_free(NULL, k);
    }
}

void rift_nats_claims_free(rift_nats *srv) {
    rift_free(NULL, srv->claim_table);
    srv->claim_table = NULL;
    srv->claim_buckets = 0;
}
