/*
 * certgen.h — development certificates with GnuTLS X.509 (quic layer): an
 * ECDSA P-256 CA and a server leaf signed by it, written as PEM files.
 * riftd's development default, `rift certs init` and the QUIC tests use
 * it. Production deployments bring their own certificates.
 *
 * The leaf is an end-entity certificate (basicConstraints CA:FALSE,
 * keyUsage digitalSignature, extendedKeyUsage serverAuth) because
 * rustls/webpki reject a CA certificate used as the server certificate.
 * Its subjectAltName holds localhost, 127.0.0.1 and ::1 plus the caller's
 * names (IP literals become iPAddress entries, everything else dNSName).
 */
#ifndef RIFT_QUIC_CERTGEN_H
#define RIFT_QUIC_CERTGEN_H

#include "rift/rift.h"

#include <stdbool.h>
#include <stddef.h>

/* File names written inside the target directory. */
#define RIFT_CERTGEN_CA_CERT     "ca.pem"
#define RIFT_CERTGEN_CA_KEY      "ca.key"
#define RIFT_CERTGEN_SERVER_CERT "server.pem"
#define RIFT_CERTGEN_SERVER_KEY  "server.key"

typedef struct rift_certgen_options {
    /** Extra subjectAltNames for the leaf (DNS names or IP literals). */
    const char *const *names;
    size_t n_names;
    /** Validity of both certificates, in days. Default 825. */
    unsigned validity_days;
    /** Replace existing files instead of failing. Default false. */
    bool overwrite;
    /** Common name of the CA. Default "rift development CA". */
    const char *ca_common_name;
} rift_certgen_options;

/** rift_certgen_options_default fills |o| with the defaults above. */
void rift_certgen_options_default(rift_certgen_options *o);

/**
 * rift_certgen_dev creates |dir| (mode 0700) when missing and writes
 * ca.pem, ca.key, server.pem and server.key into it. Certificates are
 * 0644, keys 0600 (PKCS#8 PEM, unencrypted). Each file is written to a
 * temporary name and renamed, so readers never see a partial file. |opts|
 * may be NULL for the defaults.
 *
 * Errors: RIFT_ERR_EXISTS ("<path> already exists") when a file exists and
 * overwrite is off (nothing is written then); RIFT_ERR_INVALID_ARGUMENT
 * ("invalid certificate name: <name>", see rift_certgen_name_valid);
 * RIFT_ERR_TLS ("certificate generation failed: ..."); RIFT_ERR_IO ("cannot
 * write <path>: ..."); RIFT_ERR_NOMEM.
 */
int rift_certgen_dev(const char *dir, const rift_certgen_options *opts,
                     rift_error *err);

/**
 * rift_certgen_server writes a new server.pem and server.key into |dir|,
 * signed by the CA already there (ca.pem, ca.key, which stay as they
 * are), for the same names as rift_certgen_dev. |opts|'s ca_common_name
 * is ignored; overwrite replaces an existing server certificate.
 *
 * Errors: RIFT_ERR_IO ("cannot read the CA ..."); RIFT_ERR_TLS ("cannot
 * load the CA ..."); the errors of rift_certgen_dev.
 */
int rift_certgen_server(const char *dir, const rift_certgen_options *opts,
                        rift_error *err);

/**
 * rift_certgen_name_valid is true for a name a certificate may carry: an
 * IPv4 or IPv6 literal, or a DNS name (labels of 1..63 letters, digits and
 * inner hyphens, at most 253 bytes; "*." may start it).
 */
bool rift_certgen_name_valid(const char *name);

#endif /* RIFT_QUIC_CERTGEN_H */
