/*
 * test_certgen.c — unit tests of the development certificate generator
 * (quic layer): chain verification for DNS and IP names, end-entity leaf,
 * file modes, refusal to overwrite.
 */
#include "common/common.h"
#include "quic/certgen.h"
#include "test.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <sys/stat.h>

static int load_crt(const char *dir, const char *name, gnutls_x509_crt_t *crt) {
    char path[8300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    gnutls_datum_t d;
    int rv = gnutls_load_file(path, &d);
    if (rv < 0) {
        return rv;
    }
    gnutls_x509_crt_init(crt);
    rv = gnutls_x509_crt_import(*crt, &d, GNUTLS_X509_FMT_PEM);
    gnutls_free(d.data);
    return rv;
}

static mode_t file_mode(const char *dir, const char *name) {
    char path[8300];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (stat(path, &st) != 0) {
        return 0;
    }
    return st.st_mode & 0777;
}

RIFT_TEST(dev_chain_verifies_for_dns_and_ip_names) {
    char *tmp = rift_test_tmpdir();
    CHECK(tmp != NULL);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/certs", tmp);
    rift_certgen_options o;
    rift_certgen_options_default(&o);
    const char *names[] = {"rift.example", "10.1.2.3"};
    o.names = names;
    o.n_names = 2;
    rift_error err;
    CHECK_OK(rift_certgen_dev(dir, &o, &err));

    gnutls_x509_crt_t ca, leaf;
    CHECK_OK(load_crt(dir, RIFT_CERTGEN_CA_CERT, &ca));
    CHECK_OK(load_crt(dir, RIFT_CERTGEN_SERVER_CERT, &leaf));
    unsigned status = 1;
    CHECK_OK(gnutls_x509_crt_verify(leaf, &ca, 1, 0, &status));
    CHECK_EQ_INT(status, 0);
    CHECK(gnutls_x509_crt_check_hostname(leaf, "localhost"));
    CHECK(gnutls_x509_crt_check_hostname(leaf, "127.0.0.1"));
    CHECK(gnutls_x509_crt_check_hostname(leaf, "::1"));
    CHECK(gnutls_x509_crt_check_hostname(leaf, "rift.example"));
    CHECK(gnutls_x509_crt_check_hostname(leaf, "10.1.2.3"));
    CHECK(!gnutls_x509_crt_check_hostname(leaf, "other.example"));
    /* The leaf is an end entity, the CA a CA. */
    unsigned critical;
    CHECK_EQ_INT(gnutls_x509_crt_get_ca_status(leaf, &critical), 0);
    CHECK_EQ_INT(gnutls_x509_crt_get_ca_status(ca, &critical), 1);
    CHECK_EQ_INT(gnutls_x509_crt_get_pk_algorithm(leaf, NULL), GNUTLS_PK_ECDSA);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(leaf);

    CHECK_EQ_INT(file_mode(dir, RIFT_CERTGEN_SERVER_KEY), 0600);
    CHECK_EQ_INT(file_mode(dir, RIFT_CERTGEN_CA_KEY), 0600);
    CHECK_EQ_INT(file_mode(dir, RIFT_CERTGEN_SERVER_CERT), 0644);
    CHECK_EQ_INT(file_mode(tmp, "certs"), 0700);

    /* No overwrite by default; allowed when asked. */
    CHECK_EQ_INT(rift_certgen_dev(dir, NULL, &err), RIFT_ERR_EXISTS);
    CHECK(strstr(err.text, "already exists") != NULL);
    o.overwrite = true;
    CHECK_OK(rift_certgen_dev(dir, &o, &err));
    rift_test_rmdir(tmp);
}

RIFT_TEST(bad_name_is_refused) {
    char *tmp = rift_test_tmpdir();
    rift_certgen_options o;
    rift_certgen_options_default(&o);
    const char *names[] = {""};
    o.names = names;
    o.n_names = 1;
    rift_error err;
    CHECK_EQ_INT(rift_certgen_dev(tmp, &o, &err), RIFT_ERR_INVALID_ARGUMENT);
    rift_test_rmdir(tmp);
}

/* rustls/ring accept only the RFC 5915 form (a 32-byte scalar); GnuTLS
 * writes 31 or 33 bytes for about half of all keys unless certgen
 * regenerates them. */
RIFT_TEST(keys_use_the_canonical_32_byte_scalar) {
    char *tmp = rift_test_tmpdir();
    rift_certgen_options o;
    rift_certgen_options_default(&o);
    o.overwrite = true;
    rift_error err;
    for (int i = 0; i < 8; i++) {
        CHECK_OK(rift_certgen_dev(tmp, &o, &err));
        const char *names[] = {RIFT_CERTGEN_SERVER_KEY, RIFT_CERTGEN_CA_KEY};
        for (int k = 0; k < 2; k++) {
            char path[8300];
            snprintf(path, sizeof(path), "%s/%s", tmp, names[k]);
            gnutls_datum_t pem, der;
            CHECK_OK(gnutls_load_file(path, &pem));
            CHECK_OK(gnutls_pem_base64_decode2("PRIVATE KEY", &pem, &der));
            CHECK_EQ_INT(der.size, 150);
            CHECK(memmem(der.data, der.size, "\x02\x01\x01\x04\x20", 5));
            gnutls_free(pem.data);
            gnutls_free(der.data);
        }
    }
    rift_test_rmdir(tmp);
}
