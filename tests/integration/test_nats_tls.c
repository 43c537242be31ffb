/*
 * test_nats_tls.c — the NATS listener with TLS (src/nats/conn.c): INFO in
 * the clear with tls_required, then a TLS 1.3 handshake on the same
 * socket verified against the development CA, and the protocol inside
 * it; a client that skips TLS is dropped while others keep being served.
 */
#include "natsraw.h"
#include "quic/certgen.h"
#include "test.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <string.h>

#define T 5000

static char cert_path[512];
static char key_path[512];

static void with_tls(rift_nats_settings *s) {
    s->cert_file = cert_path;
    s->key_file = key_path;
}

/* Reads TLS records until |needle| arrived. */
static bool tls_expect(gnutls_session_t s, const char *needle) {
    char buf[8192];
    size_t len = 0;
    while (len < sizeof(buf) - 1) {
        ssize_t n = gnutls_record_recv(s, buf + len, sizeof(buf) - 1 - len);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, needle) != NULL) {
            return true;
        }
    }
    return false;
}

RIFT_TEST(tls13_after_info_with_the_ca) {
    char *dir = rift_test_tmpdir();
    rift_error err = {0};
    CHECK_OK(rift_certgen_dev(dir, NULL, &err));
    snprintf(cert_path, sizeof(cert_path), "%s/%s", dir,
             RIFT_CERTGEN_SERVER_CERT);
    snprintf(key_path, sizeof(key_path), "%s/%s", dir, RIFT_CERTGEN_SERVER_KEY);
    char ca[512];
    snprintf(ca, sizeof(ca), "%s/%s", dir, RIFT_CERTGEN_CA_CERT);
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, with_tls));

    /* A client that never starts TLS is dropped... */
    char info[1024];
    natsraw *plain = natsraw_connect(&f, 0, info, sizeof(info));
    CHECK(strstr(info, "\"tls_required\":true") != NULL);
    CHECK(natsraw_send(
        plain, "CONNECT {\"auth_token\":\"" NATSRAW_ALICE "\"}\r\nPING\r\n",
        0));
    CHECK(natsraw_wait_closed(plain, T));
    CHECK(!natsraw_has(plain, "PONG"));
    natsraw_close(plain);

    /* ...and a proper one is served. */
    natsraw *c = natsraw_connect(&f, 0, info, sizeof(info));
    CHECK(c != NULL);
    gnutls_certificate_credentials_t cred;
    gnutls_session_t s;
    CHECK_OK(gnutls_certificate_allocate_credentials(&cred));
    CHECK(gnutls_certificate_set_x509_trust_file(cred, ca,
                                                 GNUTLS_X509_FMT_PEM) == 1);
    CHECK_OK(gnutls_init(&s, GNUTLS_CLIENT));
    CHECK_OK(gnutls_set_default_priority(s));
    CHECK_OK(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred));
    CHECK_OK(gnutls_server_name_set(s, GNUTLS_NAME_DNS, "localhost", 9));
    gnutls_session_set_verify_cert(s, "localhost", 0);
    gnutls_transport_set_int(s, c->fd);
    int rc;
    do {
        rc = gnutls_handshake(s);
    } while (rc < 0 && gnutls_error_is_fatal(rc) == 0);
    CHECK_MSG(rc == 0, "handshake: %s", gnutls_strerror(rc));
    CHECK_EQ_INT(gnutls_protocol_get_version(s), GNUTLS_TLS1_3);
    static const char script[] =
        "CONNECT {\"verbose\":false,\"auth_token\":\"" NATSRAW_ALICE "\"}\r\n"
        "SUB a.tls 1\r\nPUB a.tls 6\r\nsecret\r\nPING\r\n";
    CHECK(gnutls_record_send(s, script, sizeof(script) - 1) ==
          (ssize_t)(sizeof(script) - 1));
    CHECK(tls_expect(s, "MSG a.tls 1 6\r\nsecret\r\nPONG\r\n"));
    gnutls_bye(s, GNUTLS_SHUT_WR);
    gnutls_deinit(s);
    gnutls_certificate_free_credentials(cred);
    natsraw_close(c);
    natsraw_stop(&f);
    rift_test_rmdir(dir);
}

RIFT_TEST(bad_key_files_are_refused_at_start) {
    natsraw_fix f;
    snprintf(cert_path, sizeof(cert_path), "/nonexistent/cert.pem");
    snprintf(key_path, sizeof(key_path), "/nonexistent/key.pem");
    CHECK(natsraw_start(&f, with_tls) == RIFT_ERR_TLS);
}
