/*
 * cid_routes.c — the connection IDs a QUIC connection has registered in
 * its endpoint's routing map (quic layer), and the stateless reset token
 * of a CID (derived from the endpoint's secret). Both the connection
 * (conn_lifecycle.c, conn_callbacks.c) and the endpoint (endpoint.c) use them;
 * they call neither.
 */
#include "quic/quic_internal.h"

#include <ngtcp2/ngtcp2_crypto.h>

int rift_quic_endpoint_reset_token(rift_quic_endpoint *ep, uint8_t *token,
                                   const ngtcp2_cid *cid) {
    return ngtcp2_crypto_generate_stateless_reset_token(
               token, ep->secret, sizeof(ep->secret), cid) == 0
               ? 0
               : RIFT_ERR_IO;
}

/* ---- Routing ---- */

int rift_quic_endpoint_add_cid(rift_quic_endpoint *ep, rift_quic_conn *c,
                               const ngtcp2_cid *cid) {
    if (c->ncids == RIFT_QUIC_MAX_CIDS) {
        return RIFT_ERR_LIMIT;
    }
    int rv = rift_cidmap_put(&ep->map, cid->data, cid->datalen, c);
    if (rv != 0) {
        return rv;
    }
    c->cids[c->ncids++] = *cid;
    return 0;
}

void rift_quic_endpoint_remove_cid(rift_quic_endpoint *ep, rift_quic_conn *c,
                                   const ngtcp2_cid *cid) {
    for (size_t i = 0; i < c->ncids; i++) {
        if (ngtcp2_cid_eq(&c->cids[i], cid)) {
            rift_cidmap_del(&ep->map, cid->data, cid->datalen, c);
            c->cids[i] = c->cids[--c->ncids];
            return;
        }
    }
}
