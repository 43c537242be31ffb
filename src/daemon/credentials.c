/*
 * credentials.c — the start-up check of riftd's TLS credentials and the
 * development certificate generator (daemon layer). See credentials.h.
 */
#include "daemon/credentials.h"

#include "daemon/files.h"
#include "quic/certgen.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <string.h>

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

    if ((rc = rift_file_check_private(key_path, "private key", err)) != 0) {
        return rc;
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

int rift_daemon_devcert_generate(const char *dir, rift_error *err) {
    /* The quic layer's generator: ECDSA P-256 CA and leaf for localhost,
     * 127.0.0.1 and ::1, keys rustls accepts. Overwrite, because riftd only
     * gets here when part of the set is missing. */
    rift_certgen_options o;
    rift_certgen_options_default(&o);
    o.overwrite = true;
    return rift_certgen_dev(dir, &o, err);
}
