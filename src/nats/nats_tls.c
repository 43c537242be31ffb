/*
 * nats_tls.c — a connection's TLS session over its non-blocking socket
 * (nats layer): started right after INFO, as nats-server does with
 * tls_required, and fed through a per-connection input buffer.
 *
 * Why the buffer: GnuTLS's own transport reads a record's header and its
 * body with separate recv calls, and the record layer hands out at most one
 * record (16 KiB) per gnutls_record_recv, so a publisher streaming small
 * messages cost about three syscalls per 16 KiB. Reading NATS_TLS_IN bytes
 * at once serves several records per recv. Writes keep GnuTLS's own push
 * (one writev per record) through the socket given as the send pointer.
 */
#include "nats/nats_internal.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

/* GnuTLS's pull: serves buffered ciphertext, refilling with one recv. */
static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t len) {
    nats_conn *c = ptr;
    if (c->tls_in_off == c->tls_in_len) {
        ssize_t n = recv(c->fd, c->tls_in, NATS_TLS_IN, 0);
        if (n < 0) {
            gnutls_transport_set_errno(c->tls, errno);
            return -1;
        }
        c->tls_in_off = 0;
        c->tls_in_len = (size_t)n;
        if (n == 0) {
            return 0;
        }
    }
    size_t avail = c->tls_in_len - c->tls_in_off;
    size_t take = len < avail ? len : avail;
    memcpy(data, c->tls_in + c->tls_in_off, take);
    c->tls_in_off += take;
    return (ssize_t)take;
}

/* GnuTLS asks whether input is waiting (it never blocks here: the session
 * is non-blocking, so |ms| is 0 or the handshake's own wait). */
static int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned ms) {
    nats_conn *c = ptr;
    if (c->tls_in_off < c->tls_in_len) {
        return 1;
    }
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int timeout = ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms;
    int rc = poll(&pfd, 1, timeout);
    if (rc < 0) {
        gnutls_transport_set_errno(c->tls, errno);
    }
    return rc;
}

bool rift_nats_tls_buffered(const nats_conn *c) {
    return c->tls_in_off < c->tls_in_len ||
           gnutls_record_check_pending(c->tls) > 0;
}

int rift_nats_tls_start(nats_conn *c) {
    rift_nats *srv = c->srv;
    c->tls_in = rift_malloc(NULL, NATS_TLS_IN);
    if (c->tls_in == NULL) {
        return RIFT_ERR_NOMEM;
    }
    if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK) != 0) {
        c->tls = NULL;
        return RIFT_ERR_TLS;
    }
    if (gnutls_priority_set(c->tls, srv->prio) != 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, srv->cred) !=
            0) {
        return RIFT_ERR_TLS;
    }
    gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_IGNORE);
    /* Reads through the buffer; writes straight to the socket with
     * GnuTLS's default push, which takes the send pointer as the fd. */
    gnutls_transport_set_ptr2(c->tls, c,
                              (gnutls_transport_ptr_t)(intptr_t)c->fd);
    gnutls_transport_set_pull_function(c->tls, tls_pull);
    gnutls_transport_set_pull_timeout_function(c->tls, tls_pull_timeout);
    c->handshaking = true;
    return 0;
}
