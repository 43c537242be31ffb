/*
 * certgen.c — development CA and server certificate generation with
 * GnuTLS X.509 (quic layer). See certgen.h.
 */
#include "quic/certgen.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN 253

void rift_certgen_options_default(rift_certgen_options *o) {
    memset(o, 0, sizeof(*o));
    o->validity_days = 825;
    o->ca_common_name = "rift development CA";
}

typedef struct keypair {
    gnutls_x509_privkey_t x509;
    gnutls_privkey_t priv;
    gnutls_x509_crt_t crt;
} keypair;

static void keypair_free(keypair *k) {
    if (k->crt) {
        gnutls_x509_crt_deinit(k->crt);
    }
    if (k->priv) {
        gnutls_privkey_deinit(k->priv);
    }
    if (k->x509) {
        gnutls_x509_privkey_deinit(k->x509);
    }
    memset(k, 0, sizeof(*k));
}

static int tls_fail(rift_error *err, const char *what, int gerr) {
    return rift_error_set(err, RIFT_ERR_TLS,
                          "certificate generation failed: %s: %s", what,
                          gnutls_strerror(gerr));
}

/* Generates a P-256 key and an unsigned certificate skeleton around it:
 * version 3, random positive serial, validity, CN, subject key id. */
/*
 * GnuTLS 3.7 writes the ECPrivateKey scalar as a signed integer: 33 bytes
 * with a leading zero when its top bit is set, 31 when its top byte is
 * zero. RFC 5915 wants exactly 32, and ring (under rustls/quinn) rejects
 * anything else as "invalid private key" — so about half of all keys would
 * not load in the Rust peer. Keep generating until the PKCS#8 encoding is
 * the canonical one: 150 bytes for P-256 with the public key, holding
 * "version 1, OCTET STRING (32)".
 */
static bool canonical_p256(gnutls_x509_privkey_t key) {
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_DER, NULL,
                                          GNUTLS_PKCS_PLAIN, &d) < 0) {
        return false;
    }
    static const uint8_t scalar32[] = {0x02, 0x01, 0x01, 0x04, 0x20};
    bool ok = d.size == 150 &&
              memmem(d.data, d.size, scalar32, sizeof(scalar32)) != NULL;
    gnutls_memset(d.data, 0, d.size);
    gnutls_free(d.data);
    return ok;
}

static int keypair_new(keypair *k, const char *cn, unsigned days,
                       rift_error *err) {
    int rv = 0;
    memset(k, 0, sizeof(*k));
    for (int attempt = 0; attempt < 32; attempt++) {
        if (k->x509) {
            gnutls_x509_privkey_deinit(k->x509);
            k->x509 = NULL;
        }
        if ((rv = gnutls_x509_privkey_init(&k->x509)) < 0 ||
            (rv = gnutls_x509_privkey_generate2(
                 k->x509, GNUTLS_PK_ECDSA,
                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL,
                 0)) < 0) {
            keypair_free(k);
            return tls_fail(err, "key", rv);
        }
        if (canonical_p256(k->x509)) {
            break;
        }
        rv = GNUTLS_E_INTERNAL_ERROR;
    }
    if (rv < 0) {
        keypair_free(k);
        return tls_fail(err, "key encoding", rv);
    }
    if ((rv = gnutls_privkey_init(&k->priv)) < 0 ||
        (rv = gnutls_privkey_import_x509(k->priv, k->x509, 0)) < 0) {
        keypair_free(k);
        return tls_fail(err, "key import", rv);
    }
    uint8_t serial[16];
    if (rift_random(serial, sizeof(serial)) != 0) {
        keypair_free(k);
        return rift_error_set(err, RIFT_ERR_TLS,
                              "certificate generation failed: no entropy");
    }
    serial[0] = (uint8_t)((serial[0] & 0x7f) | 0x01); /* positive, nonzero */
    time_t now = time(NULL);
    uint8_t keyid[64];
    size_t keyid_len = sizeof(keyid);
    if ((rv = gnutls_x509_crt_init(&k->crt)) < 0 ||
        (rv = gnutls_x509_crt_set_version(k->crt, 3)) < 0 ||
        (rv = gnutls_x509_crt_set_serial(k->crt, serial, sizeof(serial))) < 0 ||
        (rv = gnutls_x509_crt_set_activation_time(k->crt, now - 3600)) < 0 ||
        (rv = gnutls_x509_crt_set_expiration_time(
             k->crt, now + (time_t)days * 86400)) < 0 ||
        (rv = gnutls_x509_crt_set_dn_by_oid(k->crt, GNUTLS_OID_X520_COMMON_NAME,
                                            0, cn, (unsigned)strlen(cn))) < 0 ||
        (rv = gnutls_x509_crt_set_key(k->crt, k->x509)) < 0 ||
        (rv = gnutls_x509_crt_get_key_id(k->crt, GNUTLS_KEYID_USE_SHA1, keyid,
                                         &keyid_len)) < 0 ||
        (rv = gnutls_x509_crt_set_subject_key_id(k->crt, keyid, keyid_len)) <
            0) {
        keypair_free(k);
        return tls_fail(err, "certificate", rv);
    }
    return 0;
}

bool rift_certgen_name_valid(const char *name) {
    uint8_t ip[16];
    if (inet_pton(AF_INET, name, ip) == 1 ||
        inet_pton(AF_INET6, name, ip) == 1) {
        return true;
    }
    /* A DNS name: dot-separated labels of 1..63 letters, digits and
     * hyphens, no hyphen at either end; the first label may be "*". */
    size_t len = strlen(name), label = 0;
    if (len == 0 || len > NAME_MAX_LEN) {
        return false;
    }
    for (size_t i = 0; i <= len; i++) {
        char c = name[i];
        if (c == '.' || c == '\0') {
            const char *l = name + i - label;
            bool star = label == 1 && l[0] == '*' && l == name && c == '.';
            if (label == 0 || label > 63 ||
                (!star &&
                 (l[0] == '-' || l[0] == '*' || l[label - 1] == '-'))) {
                return false;
            }
            label = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '-' || (c == '*' && i == 0);
        if (!ok) {
            return false;
        }
        label++;
    }
    return true;
}

static int add_san(gnutls_x509_crt_t crt, const char *name, rift_error *err) {
    size_t len = strlen(name);
    if (!rift_certgen_name_valid(name)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid certificate name: %s", name);
    }
    uint8_t ip[16];
    int rv;
    if (inet_pton(AF_INET, name, ip) == 1) {
        rv = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip,
                                                  4, GNUTLS_FSAN_APPEND);
    } else if (inet_pton(AF_INET6, name, ip) == 1) {
        rv = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip,
                                                  16, GNUTLS_FSAN_APPEND);
    } else {
        rv = gnutls_x509_crt_set_subject_alt_name(
            crt, GNUTLS_SAN_DNSNAME, name, (unsigned)len, GNUTLS_FSAN_APPEND);
    }
    if (rv < 0) {
        return tls_fail(err, "subjectAltName", rv);
    }
    return 0;
}

static int sign(keypair *subject, keypair *issuer, rift_error *err) {
    uint8_t keyid[64];
    size_t keyid_len = sizeof(keyid);
    int rv;
    if ((rv = gnutls_x509_crt_get_subject_key_id(issuer->crt, keyid, &keyid_len,
                                                 NULL)) < 0 ||
        (rv = gnutls_x509_crt_set_authority_key_id(subject->crt, keyid,
                                                   keyid_len)) < 0 ||
        (rv = gnutls_x509_crt_privkey_sign(subject->crt, issuer->crt,
                                           issuer->priv, GNUTLS_DIG_SHA256,
                                           0)) < 0) {
        return tls_fail(err, "signature", rv);
    }
    return 0;
}

/* ---- Files ---- */

static int path_join(char *out, size_t cap, const char *dir, const char *name,
                     rift_error *err) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "path too long: %s", dir);
    }
    return 0;
}

/* Writes |data| to |path| atomically: a 0600 temporary file in the same
 * directory, chmod to |mode|, fsync, rename. */
static int write_file(const char *path, const gnutls_datum_t *data, mode_t mode,
                      rift_error *err) {
    char tmp[4200];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "path too long: %s", path);
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "cannot write %s: %s", path,
                              strerror(errno));
    }
    size_t off = 0;
    while (off < data->size) {
        ssize_t w = write(fd, data->data + off, data->size - off);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            goto fail;
        }
        off += (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        goto fail;
    }
    return 0;

fail:;
    int e = errno;
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    return rift_error_set(err, RIFT_ERR_IO, "cannot write %s: %s", path,
                          strerror(e));
}

static int export_crt(gnutls_x509_crt_t crt, const char *path,
                      rift_error *err) {
    gnutls_datum_t d = {NULL, 0};
    int rv = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d);
    if (rv < 0) {
        return tls_fail(err, "export", rv);
    }
    rv = write_file(path, &d, 0644, err);
    gnutls_free(d.data);
    return rv;
}

static int export_key(gnutls_x509_privkey_t key, const char *path,
                      rift_error *err) {
    gnutls_datum_t d = {NULL, 0};
    int rv = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL,
                                               GNUTLS_PKCS_PLAIN, &d);
    if (rv < 0) {
        return tls_fail(err, "key export", rv);
    }
    rv = write_file(path, &d, 0600, err);
    gnutls_memset(d.data, 0, d.size);
    gnutls_free(d.data);
    return rv;
}

/* ---- Entry points ---- */

/* Makes |leaf| a server certificate for the built-in names and |opts|'s,
 * signed by |ca|. */
static int leaf_build(keypair *leaf, keypair *ca,
                      const rift_certgen_options *opts, unsigned days,
                      rift_error *err) {
    int rv, g;
    if ((rv = keypair_new(leaf, "localhost", days, err)) != 0) {
        return rv;
    }
    if ((g = gnutls_x509_crt_set_basic_constraints(leaf->crt, 0, -1)) < 0 ||
        (g = gnutls_x509_crt_set_key_usage(leaf->crt,
                                           GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
        (g = gnutls_x509_crt_set_key_purpose_oid(
             leaf->crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0) {
        return tls_fail(err, "extensions", g);
    }
    static const char *const builtin[] = {"localhost", "127.0.0.1", "::1"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(builtin); i++) {
        if ((rv = add_san(leaf->crt, builtin[i], err)) != 0) {
            return rv;
        }
    }
    for (size_t i = 0; i < opts->n_names; i++) {
        if (opts->names[i] == NULL) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "invalid certificate name: (null)");
        }
        if ((rv = add_san(leaf->crt, opts->names[i], err)) != 0) {
            return rv;
        }
    }
    return sign(leaf, ca, err);
}

/* Checks every extra name before anything is generated or written. */
static int names_check(const rift_certgen_options *opts, rift_error *err) {
    for (size_t i = 0; i < opts->n_names; i++) {
        if (opts->names[i] == NULL ||
            !rift_certgen_name_valid(opts->names[i])) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "invalid certificate name: %s",
                                  opts->names[i] ? opts->names[i] : "(null)");
        }
    }
    return 0;
}

/* The four files' paths in |dir|: CA cert, CA key, server cert, key. */
static int file_paths(const char *dir, char paths[4][4096], rift_error *err) {
    static const char *const files[4] = {
        RIFT_CERTGEN_CA_CERT, RIFT_CERTGEN_CA_KEY, RIFT_CERTGEN_SERVER_CERT,
        RIFT_CERTGEN_SERVER_KEY};
    for (int i = 0; i < 4; i++) {
        int rv = path_join(paths[i], sizeof(paths[i]), dir, files[i], err);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

int rift_certgen_dev(const char *dir, const rift_certgen_options *opts,
                     rift_error *err) {
    rift_certgen_options def;
    if (opts == NULL) {
        rift_certgen_options_default(&def);
        opts = &def;
    }
    char paths[4][4096];
    int rv;
    if ((rv = file_paths(dir, paths, err)) != 0) {
        return rv;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return rift_error_set(err, RIFT_ERR_IO, "cannot write %s: %s", dir,
                              strerror(errno));
    }
    if (!opts->overwrite) {
        for (int i = 0; i < 4; i++) {
            if (access(paths[i], F_OK) == 0) {
                return rift_error_set(err, RIFT_ERR_EXISTS, "%s already exists",
                                      paths[i]);
            }
        }
    }
    if ((rv = names_check(opts, err)) != 0) {
        return rv;
    }
    unsigned days = opts->validity_days ? opts->validity_days : 825;
    const char *ca_cn =
        opts->ca_common_name ? opts->ca_common_name : "rift development CA";

    keypair ca, leaf;
    memset(&leaf, 0, sizeof(leaf));
    if ((rv = keypair_new(&ca, ca_cn, days, err)) != 0) {
        return rv;
    }
    int g;
    if ((g = gnutls_x509_crt_set_basic_constraints(ca.crt, 1, 0)) < 0 ||
        (g = gnutls_x509_crt_set_key_usage(
             ca.crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                         GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0) {
        rv = tls_fail(err, "extensions", g);
        goto out;
    }
    /* The CA signs itself, then the leaf. */
    if ((rv = sign(&ca, &ca, err)) != 0 ||
        (rv = leaf_build(&leaf, &ca, opts, days, err)) != 0) {
        goto out;
    }
    /* Keys first: a reader that finds server.pem also finds its key. */
    if ((rv = export_key(ca.x509, paths[1], err)) != 0 ||
        (rv = export_crt(ca.crt, paths[0], err)) != 0 ||
        (rv = export_key(leaf.x509, paths[3], err)) != 0 ||
        (rv = export_crt(leaf.crt, paths[2], err)) != 0) {
        goto out;
    }
    rv = 0;
out:
    keypair_free(&leaf);
    keypair_free(&ca);
    return rv;
}

/* Loads DIR/ca.pem and DIR/ca.key into |ca|. */
static int ca_load(keypair *ca, const char *cert_path, const char *key_path,
                   rift_error *err) {
    memset(ca, 0, sizeof(*ca));
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    int rv;
    if ((rv = gnutls_load_file(cert_path, &cert)) < 0 ||
        (rv = gnutls_load_file(key_path, &key)) < 0) {
        gnutls_free(cert.data);
        return rift_error_set(err, RIFT_ERR_IO,
                              "cannot read the CA (%s, %s): %s", cert_path,
                              key_path, gnutls_strerror(rv));
    }
    if ((rv = gnutls_x509_crt_init(&ca->crt)) < 0 ||
        (rv = gnutls_x509_crt_import(ca->crt, &cert, GNUTLS_X509_FMT_PEM)) <
            0 ||
        (rv = gnutls_x509_privkey_init(&ca->x509)) < 0 ||
        (rv = gnutls_x509_privkey_import2(ca->x509, &key, GNUTLS_X509_FMT_PEM,
                                          NULL, GNUTLS_PKCS_PLAIN)) < 0 ||
        (rv = gnutls_privkey_init(&ca->priv)) < 0 ||
        (rv = gnutls_privkey_import_x509(ca->priv, ca->x509, 0)) < 0) {
        keypair_free(ca);
        rv = rift_error_set(err, RIFT_ERR_TLS, "cannot load the CA (%s): %s",
                            cert_path, gnutls_strerror(rv));
    } else {
        rv = 0;
    }
    gnutls_free(cert.data);
    gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
    return rv;
}

int rift_certgen_server(const char *dir, const rift_certgen_options *opts,
                        rift_error *err) {
    rift_certgen_options def;
    if (opts == NULL) {
        rift_certgen_options_default(&def);
        opts = &def;
    }
    char paths[4][4096];
    int rv;
    if ((rv = file_paths(dir, paths, err)) != 0) {
        return rv;
    }
    if ((rv = names_check(opts, err)) != 0) {
        return rv;
    }
    if (!opts->overwrite) {
        for (int i = 2; i < 4; i++) {
            if (access(paths[i], F_OK) == 0) {
                return rift_error_set(err, RIFT_ERR_EXISTS, "%s already exists",
                                      paths[i]);
            }
        }
    }
    unsigned days = opts->validity_days ? opts->validity_days : 825;
    keypair ca, leaf;
    memset(&leaf, 0, sizeof(leaf));
    if ((rv = ca_load(&ca, paths[0], paths[1], err)) != 0) {
        return rv;
    }
    if ((rv = leaf_build(&leaf, &ca, opts, days, err)) == 0 &&
        (rv = export_key(leaf.x509, paths[3], err)) == 0) {
        rv = export_crt(leaf.crt, paths[2], err);
    }
    keypair_free(&leaf);
    keypair_free(&ca);
    return rv;
}
