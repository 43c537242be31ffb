/*
 * tls_session.c — GnuTLS set-up for QUIC (quic layer): credentials, the TLS 1.3
 * priority, ALPN enforcement on both sides, certificate verification
 * against an explicit CA file and server name, no 0-RTT, no tickets.
 */
#include "quic/quic_internal.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <stdio.h>
#include <string.h>

/* QUIC needs TLS 1.3 and forbids the middlebox compatibility mode (RFC
 * 9001 §8.4); only the AEADs QUIC defines. */
#define QUIC_PRIORITY                                                          \
 "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"        \
 "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:"                   \
 "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:"                         \
 "%DISABLE_TLS13_COMPAT_MODE"

static int init_priority(rift_quic_endpoint *ep, rift_error *err) {
    const char *errpos = NULL;
    int rv = gnutls_priority_init(&ep->prio, QUIC_PRIORITY, &errpos);
    if (rv < 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "TLS priority: %s",
                              gnutls_strerror(rv));
    }
    return 0;
}

int rift_quic_tls_server_cred(rift_quic_endpoint *ep, const char *cert,
                              const char *key, rift_error *err) {
    if (cert == NULL || key == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "certificate and key files required");
    }
    int rv = gnutls_certificate_allocate_credentials(&ep->cred);
    if (rv < 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rv = gnutls_certificate_set_x509_key_file2(ep->cred, cert, key,
                                               GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rv < 0) {
        rift_error_set(err, RIFT_ERR_TLS,
                       "cannot load certificate %s and key %s: %s", cert, key,
                       gnutls_strerror(rv));
        gnutls_certificate_free_credentials(ep->cred);
        ep->cred = NULL;
        return RIFT_ERR_TLS;
    }
    if ((rv = init_priority(ep, err)) != 0) {
        gnutls_certificate_free_credentials(ep->cred);
        ep->cred = NULL;
    }
    return rv;
}

int rift_quic_tls_client_cred(rift_quic_endpoint *ep, const char *ca,
                              rift_error *err) {
    if (ca == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "CA file required");
    }
    int rv = gnutls_certificate_allocate_credentials(&ep->cred);
    if (rv < 0) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    /* Only the given roots: never gnutls_certificate_set_x509_system_trust.
     */
    rv = gnutls_certificate_set_x509_trust_file(ep->cred, ca,
                                                GNUTLS_X509_FMT_PEM);
    if (rv <= 0) {
        rift_error_set(err, RIFT_ERR_TLS, "cannot load CA file %s: %s", ca,
                       rv < 0 ? gnutls_strerror(rv) : "no certificates");
        gnutls_certificate_free_credentials(ep->cred);
        ep->cred = NULL;
        return RIFT_ERR_TLS;
    }
    if ((rv = init_priority(ep, err)) != 0) {
        gnutls_certificate_free_credentials(ep->cred);
        ep->cred = NULL;
    }
    return rv;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) {
    rift_quic_conn *c = ref->user_data;
    return c->qc;
}

/* GNUTLS_ALPN_MANDATORY only fails a ClientHello whose ALPN list has no
 * overlap; one without the extension gets through. This hook, run after
 * the ClientHello is parsed, refuses both with no_application_protocol. */
static int client_hello_hook(gnutls_session_t s, unsigned htype, unsigned when,
                             unsigned incoming, const gnutls_datum_t *msg) {
    (void)htype;
    (void)when;
    (void)incoming;
    (void)msg;
    gnutls_datum_t p;
    if (gnutls_alpn_get_selected_protocol(s, &p) != 0 ||
        p.size != sizeof(RIFT_ALPN) - 1 ||
        memcmp(p.data, RIFT_ALPN, p.size) != 0) {
        return GNUTLS_E_NO_APPLICATION_PROTOCOL;
    }
    return 0;
}

static bool is_ip_literal(const char *name) {
    uint8_t buf[16];
    return inet_pton(AF_INET, name, buf) == 1 ||
           inet_pton(AF_INET6, name, buf) == 1;
}

int rift_quic_tls_session(rift_quic_conn *c, rift_error *err) {
    rift_quic_endpoint *ep = c->ep;
    gnutls_session_t s;
    /* No GNUTLS_ENABLE_EARLY_DATA on either side: no 0-RTT. The server
     * also sends no tickets, so there is nothing to resume. */
    unsigned flags = ep->server ? GNUTLS_SERVER | GNUTLS_NO_TICKETS
                                : GNUTLS_CLIENT | GNUTLS_NO_TICKETS;
    int rv = gnutls_init(&s, flags);
    if (rv < 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "TLS session: %s",
                              gnutls_strerror(rv));
    }
    if ((rv = gnutls_priority_set(s, ep->prio)) < 0 ||
        (rv = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, ep->cred)) <
            0) {
        goto fail;
    }
    if (ep->server) {
        if (ngtcp2_crypto_gnutls_configure_server_session(s) != 0) {
            rv = GNUTLS_E_INTERNAL_ERROR;
            goto fail;
        }
        gnutls_datum_t alpn = {(unsigned char *)RIFT_ALPN,
                               sizeof(RIFT_ALPN) - 1};
        if ((rv = gnutls_alpn_set_protocols(
                 s, &alpn, 1,
                 GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE)) < 0) {
            goto fail;
        }
        gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_CLIENT_HELLO,
                                           GNUTLS_HOOK_POST, client_hello_hook);
    } else {
        if (ngtcp2_crypto_gnutls_configure_client_session(s) != 0) {
            rv = GNUTLS_E_INTERNAL_ERROR;
            goto fail;
        }
        /* SNI carries DNS names only (RFC 6066); the certificate check is a
         * separate switch and covers IP literals as well. */
        if (!is_ip_literal(ep->server_name) &&
            (rv = gnutls_server_name_set(s, GNUTLS_NAME_DNS, ep->server_name,
                                         strlen(ep->server_name))) < 0) {
            goto fail;
        }
        gnutls_session_set_verify_cert(s, ep->server_name, 0);
        if (ep->offer_alpn) {
            gnutls_datum_t alpn = {(unsigned char *)ep->alpn,
                                   (unsigned)ep->alpn_len};
            if ((rv = gnutls_alpn_set_protocols(s, &alpn, 1,
                                                GNUTLS_ALPN_MANDATORY)) < 0) {
                goto fail;
            }
        }
    }
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    gnutls_session_set_ptr(s, &c->ref);
    c->tls = s;
    return 0;

fail:
    gnutls_deinit(s);
    return rift_error_set(err, RIFT_ERR_TLS, "TLS session: %s",
                          gnutls_strerror(rv));
}

bool rift_quic_tls_alpn_ok(rift_quic_conn *c) {
    gnutls_datum_t p;
    /* The client always checks against the real protocol name, also when
     * a test made it offer something else. */
    return gnutls_alpn_get_selected_protocol(c->tls, &p) == 0 &&
           p.size == sizeof(RIFT_ALPN) - 1 &&
           memcmp(p.data, RIFT_ALPN, p.size) == 0;
}

bool rift_quic_tls_verify_failure(rift_quic_conn *c, char *out, size_t cap) {
    if (c->tls == NULL || c->ep->server) {
        return false;
    }
    unsigned status = gnutls_session_get_verify_cert_status(c->tls);
    if (status == 0) {
        return false;
    }
    gnutls_datum_t txt = {NULL, 0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
                                                     &txt, 0) == 0) {
        snprintf(out, cap, "certificate verification failed: %.*s",
                 (int)txt.size, (const char *)txt.data);
        gnutls_free(txt.data);
    } else {
        snprintf(out, cap, "certificate verification failed");
    }
    return true;
}
