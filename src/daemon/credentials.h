/*
 * credentials.h — TLS material for riftd (daemon layer): the start-up check of
 * the configured certificate chain and private key (§5.2 error texts), and the
 * development CA + server certificate of the built-in dev configuration.
 */
#ifndef RIFT_DAEMON_CREDENTIALS_H
#define RIFT_DAEMON_CREDENTIALS_H

#include "common/common.h"

/* Largest PEM file accepted. */
#define RIFT_DAEMON_PEM_MAX (1024 * 1024)

/*
 * rift_daemon_tls_check loads the PEM certificate chain at |cert_path| and
 * the unencrypted PEM private key at |key_path| (paths relative to the
 * working directory) and reports, with RIFT_ERR_TLS, the first problem as
 * "certificate PEM (<path>): no certificates found",
 * "certificate PEM (<path>): <error>" or "private key PEM (<path>):
 * <error>". *chain_len receives the number of certificates (may be NULL).
 */
int rift_daemon_tls_check(const char *cert_path, const char *key_path,
                          size_t *chain_len, rift_error *err);

/* File names inside the development TLS directory (quic/certgen.h). */
#define RIFT_DEV_CA_CERT     "ca.pem"
#define RIFT_DEV_CA_KEY      "ca.key"
#define RIFT_DEV_SERVER_CERT "server.pem"
#define RIFT_DEV_SERVER_KEY  "server.key"

/*
 * rift_daemon_devcert_generate writes (or rewrites) into |dir|, creating it
 * with mode 0700 when missing, a development CA (ca.pem, ca.key) and a
 * server certificate it signed for DNS localhost and IP 127.0.0.1 and ::1
 * (server.pem, server.key): rift_certgen_dev of the quic layer, ECDSA
 * P-256, 825 days, keys as unencrypted PKCS#8 with mode 0600.
 *
 * Errors: those of rift_certgen_dev (RIFT_ERR_TLS, RIFT_ERR_IO, ...).
 */
int rift_daemon_devcert_generate(const char *dir, rift_error *err);

#endif /* RIFT_DAEMON_CREDENTIALS_H */
