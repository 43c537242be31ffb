/*
 * tls.c — the start-up check of riftd's TLS credentials and the
 * development certificate generator (daemon layer). See tls.h.
 */
#include "daemon/tls.h"

#include "daemon/files.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- Credentials check ---- */

int rift_daemon_tls_check(const char *cert_path, const char *key_path,
                          size_t *chain_len, rift_error *err) {
    char *buf = NULL;
    size_t len = 0;
    int rc = rift_file_read(cert_path, RIFT_DAEMON_PEM_MAX, &buf, &len);
    if (rc != 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "certificate PEM (%s): %s",
                              cert_path, strerror(-rc));
    }
    gnutls_datum_t d = {(unsigned char *)buf, (unsigned)len};
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    int g = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    rift_free(NULL, buf);
    if (g == GNUTLS_E_NO_CERTIFICATE_FOUND || (g >= 0 && n == 0)) {
        return rift_error_set(err, RIFT_ERR_TLS,
                              "certificate PEM (%s): no certificates found",
                              cert_path);
    }
    if (g < 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "certificate PEM (%s): %s",
                              cert_path, gnutls_strerror(g));
    }
    for (unsigned i = 0; i < n; i++) {
        gnutls_x509_crt_deinit(crts[i]);
    }
    gnutls_free(crts);
    if (chain_len != NULL) {
        *chain_len = n;
    }

    rc = rift_file_read(key_path, RIFT_DAEMON_PEM_MAX, &buf, &len);
    if (rc != 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "private key PEM (%s): %s",
                              key_path, strerror(-rc));
    }
    gnutls_x509_privkey_t key;
    if ((g = gnutls_x509_privkey_init(&key)) < 0) {
        rift_free(NULL, buf);
        return rift_error_set(err, RIFT_ERR_TLS, "private key PEM (%s): %s",
                              key_path, gnutls_strerror(g));
    }
    d.data = (unsigned char *)buf;
    d.size = (unsigned)len;
    g = gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    gnutls_x509_privkey_deinit(key);
    explicit_bzero(buf, len);
    rift_free(NULL, buf);
    if (g < 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "private key PEM (%s): %s",
                              key_path, gnutls_strerror(g));
    }
    return 0;
}

/* ---- Development certificates ---- */

typedef struct devcert {
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
} devcert;

static int gen_key_and_crt(devcert *c, const char *cn, time_t now) {
    unsigned char serial[16];
    int g;
    if ((g = gnutls_x509_privkey_init(&c->key)) < 0 ||
        (g = gnutls_x509_privkey_generate(
             c->key, GNUTLS_PK_ECDSA,
             GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
        (g = gnutls_x509_crt_init(&c->crt)) < 0) {
        return g;
    }
    if (rift_random(serial, sizeof(serial)) != 0) {
        return GNUTLS_E_RANDOM_FAILED;
    }
    serial[0] &= 0x7F; /* a positive INTEGER */
    serial[0] |= 0x01;
    if ((g = gnutls_x509_crt_set_version(c->crt, 3)) < 0 ||
        (g = gnutls_x509_crt_set_serial(c->crt, serial, sizeof(serial))) < 0 ||
        (g = gnutls_x509_crt_set_activation_time(c->crt, now - 3600)) < 0 ||
        (g = gnutls_x509_crt_set_expiration_time(c->crt, now + 825L * 86400)) <
            0 ||
        (g = gnutls_x509_crt_set_dn_by_oid(c->crt, GNUTLS_OID_X520_COMMON_NAME,
                                           0, cn, (unsigned)strlen(cn))) < 0 ||
        (g = gnutls_x509_crt_set_key(c->crt, c->key)) < 0) {
        return g;
    }
    unsigned char id[64];
    size_t idlen = sizeof(id);
    if ((g = gnutls_x509_crt_get_key_id(c->crt, 0, id, &idlen)) < 0 ||
        (g = gnutls_x509_crt_set_subject_key_id(c->crt, id, idlen)) < 0) {
        return g;
    }
    return 0;
}

static int make_ca(devcert *ca, time_t now) {
    int g = gen_key_and_crt(ca, "rift development CA", now);
    if (g < 0 ||
        (g = gnutls_x509_crt_set_basic_constraints(ca->crt, 1, 0)) < 0 ||
        (g = gnutls_x509_crt_set_key_usage(
             ca->crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) < 0) {
        return g;
    }
    return gnutls_x509_crt_sign2(ca->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256,
                                 0);
}

static int make_server(devcert *srv, const devcert *ca, time_t now) {
    unsigned char v4[4], v6[16];
    inet_pton(AF_INET, "127.0.0.1", v4);
    inet_pton(AF_INET6, "::1", v6);
    int g = gen_key_and_crt(srv, "localhost", now);
    if (g < 0 ||
        (g = gnutls_x509_crt_set_basic_constraints(srv->crt, 0, -1)) < 0 ||
        (g = gnutls_x509_crt_set_key_usage(srv->crt,
                                           GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
        (g = gnutls_x509_crt_set_key_purpose_oid(
             srv->crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
        (g = gnutls_x509_crt_set_subject_alt_name(srv->crt, GNUTLS_SAN_DNSNAME,
                                                  "localhost", 9,
                                                  GNUTLS_FSAN_APPEND)) < 0 ||
        (g = gnutls_x509_crt_set_subject_alt_name(
             srv->crt, GNUTLS_SAN_IPADDRESS, v4, sizeof(v4),
             GNUTLS_FSAN_APPEND)) < 0 ||
        (g = gnutls_x509_crt_set_subject_alt_name(
             srv->crt, GNUTLS_SAN_IPADDRESS, v6, sizeof(v6),
             GNUTLS_FSAN_APPEND)) < 0) {
        return g;
    }
    unsigned char id[64];
    size_t idlen = sizeof(id);
    if ((g = gnutls_x509_crt_get_subject_key_id(ca->crt, id, &idlen, NULL)) <
            0 ||
        (g = gnutls_x509_crt_set_authority_key_id(srv->crt, id, idlen)) < 0) {
        return g;
    }
    return gnutls_x509_crt_sign2(srv->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256,
                                 0);
}

/* Writes a certificate (|key| false) or a PKCS#8 key as PEM into dir/name. */
static int write_pem(const char *dir, const char *name, const devcert *c,
                     bool key, rift_error *err) {
    gnutls_datum_t d = {NULL, 0};
    int g = key ? gnutls_x509_privkey_export2_pkcs8(c->key, GNUTLS_X509_FMT_PEM,
                                                    NULL, GNUTLS_PKCS_PLAIN, &d)
                : gnutls_x509_crt_export2(c->crt, GNUTLS_X509_FMT_PEM, &d);
    if (g < 0) {
        return rift_error_set(err, RIFT_ERR_TLS, "dev certificate: %s",
                              gnutls_strerror(g));
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = rift_file_write_atomic(path, d.data, d.size, key ? 0600 : 0644);
    if (key) {
        explicit_bzero(d.data, d.size);
    }
    gnutls_free(d.data);
    if (rc != 0) {
        return rift_error_set(err, rc, "cannot write %s: %s", path,
                              strerror(-rc));
    }
    return 0;
}

static void devcert_free(devcert *c) {
    if (c->crt != NULL) {
        gnutls_x509_crt_deinit(c->crt);
    }
    if (c->key != NULL) {
        gnutls_x509_privkey_deinit(c->key);
    }
}

int rift_daemon_devcert_generate(const char *dir, rift_error *err) {
    devcert ca = {0}, srv = {0};
    time_t now = time(NULL);
    int rc = 0;
    int g = make_ca(&ca, now);
    if (g >= 0) {
        g = make_server(&srv, &ca, now);
    }
    if (g < 0) {
        rc = rift_error_set(err, RIFT_ERR_TLS, "dev certificate: %s",
                            gnutls_strerror(g));
        goto out;
    }
    /* Keys first: a certificate file never exists without its key. */
    if ((rc = write_pem(dir, RIFT_DEV_CA_KEY, &ca, true, err)) != 0 ||
        (rc = write_pem(dir, RIFT_DEV_CA_CERT, &ca, false, err)) != 0 ||
        (rc = write_pem(dir, RIFT_DEV_SERVER_KEY, &srv, true, err)) != 0 ||
        (rc = write_pem(dir, RIFT_DEV_SERVER_CERT, &srv, false, err)) != 0) {
        goto out;
    }
out:
    devcert_free(&srv);
    devcert_free(&ca);
    return rc;
}
