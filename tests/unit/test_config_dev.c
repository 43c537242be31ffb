/*
 * test_config_dev.c — unit tests of the built-in development configuration
 * and of TLS credential checks (daemon layer): rift-data preparation, the
 * dev token, the development certificates, the embedded Lua source and its
 * copy in docs/riftd.md.
 */
#include "lua/config_eval.h"
#include "daemon/dev.h"
#include "daemon/files.h"
#include "daemon/tls.h"
#include "test.h"

#include <arpa/inet.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Runs in a fresh temporary working directory; restores the old one. */
typedef struct cwd_guard {
    char old[4096];
    char *dir;
} cwd_guard;

static bool enter_tmp(cwd_guard *g) {
    if (getcwd(g->old, sizeof(g->old)) == NULL) {
        return false;
    }
    g->dir = rift_test_tmpdir();
    return g->dir != NULL && chdir(g->dir) == 0;
}

static void leave_tmp(cwd_guard *g) {
    if (chdir(g->old) != 0) {
        perror("chdir");
    }
    rift_test_rmdir(g->dir);
}

static int mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

static bool all_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return s[n] == '\0';
}

RIFT_TEST(dev_prepare_creates_private_data) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_dev_state st;
    rift_error err = {0};
    int rc = rift_dev_prepare(&st, true, &err);
    bool ok = rc == 0 && st.created_dir && st.created_token &&
              st.created_certs && mode_of("rift-data") == 0700 &&
              mode_of("rift-data/dev.token") == 0600 &&
              mode_of("rift-data/tls/server.key") == 0600 &&
              mode_of("rift-data/tls/ca.key") == 0600 &&
              strlen(st.token) == 64 && all_hex(st.token, 64);
    char first[RIFT_DEV_TOKEN_MAX + 1];
    snprintf(first, sizeof(first), "%s", st.token);
    /* A second start reuses token and certificates. */
    struct stat before, after;
    stat("rift-data/tls/server.pem", &before);
    int rc2 = rift_dev_prepare(&st, true, &err);
    stat("rift-data/tls/server.pem", &after);
    bool reused = rc2 == 0 && !st.created_dir && !st.created_token &&
                  !st.created_certs && strcmp(first, st.token) == 0 &&
                  before.st_ino == after.st_ino;
    /* Check mode reads but never writes. */
    int rc3 = rift_dev_prepare(&st, false, &err);
    bool checked = rc3 == 0 && strcmp(first, st.token) == 0;
    size_t chain = 0;
    int tls = rift_daemon_tls_check("rift-data/tls/server.pem",
                                    "rift-data/tls/server.key", &chain, &err);
    leave_tmp(&g);
    CHECK_OK(rc);
    CHECK(ok);
    CHECK(reused);
    CHECK(checked);
    CHECK_OK(tls);
    CHECK_EQ_INT(chain, 1);
}

RIFT_TEST(dev_check_mode_writes_nothing) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_dev_state st;
    rift_error err = {0};
    int rc = rift_dev_prepare(&st, false, &err);
    bool absent = access("rift-data", F_OK) != 0;
    leave_tmp(&g);
    CHECK_OK(rc);
    CHECK(absent);
    CHECK_EQ_STR(st.token, "");
}

RIFT_TEST(dev_token_file_is_validated) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_error err = {0};
    rift_dev_state st;
    bool made =
        mkdir("rift-data", 0700) == 0 &&
        rift_file_write_atomic("rift-data/dev.token", "short\n", 6, 0600) == 0;
    int rc = rift_dev_prepare(&st, true, &err);
    leave_tmp(&g);
    CHECK(made);
    CHECK_EQ_INT(rc, RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "rift-data/dev.token must hold 32..=1024 bytes "
                           "without control characters; delete it to "
                           "generate a new token");
}

RIFT_TEST(dev_certificates_verify_for_local_names) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_error err = {0};
    rift_dev_state st;
    int rc = rift_dev_prepare(&st, true, &err);
    char *ca_pem = NULL, *srv_pem = NULL;
    size_t ca_len = 0, srv_len = 0;
    if (rc == 0) {
        rc = rift_file_read("rift-data/tls/ca.pem", 65536, &ca_pem, &ca_len);
    }
    if (rc == 0) {
        rc = rift_file_read("rift-data/tls/server.pem", 65536, &srv_pem,
                            &srv_len);
    }
    leave_tmp(&g);
    CHECK_OK(rc);
    gnutls_x509_crt_t ca, srv;
    gnutls_x509_crt_init(&ca);
    gnutls_x509_crt_init(&srv);
    gnutls_datum_t d1 = {(unsigned char *)ca_pem, (unsigned)ca_len};
    gnutls_datum_t d2 = {(unsigned char *)srv_pem, (unsigned)srv_len};
    int i1 = gnutls_x509_crt_import(ca, &d1, GNUTLS_X509_FMT_PEM);
    int i2 = gnutls_x509_crt_import(srv, &d2, GNUTLS_X509_FMT_PEM);
    unsigned status = 1;
    int v = gnutls_x509_crt_verify(srv, &ca, 1, 0, &status);
    unsigned char v4[4], v6[16];
    inet_pton(AF_INET, "127.0.0.1", v4);
    inet_pton(AF_INET6, "::1", v6);
    unsigned host = gnutls_x509_crt_check_hostname(srv, "localhost");
    unsigned ip4 = gnutls_x509_crt_check_ip(srv, v4, 4, 0);
    unsigned ip6 = gnutls_x509_crt_check_ip(srv, v6, 16, 0);
    unsigned other = gnutls_x509_crt_check_hostname(srv, "example.com");
    unsigned is_ca = 0;
    int bc = gnutls_x509_crt_get_basic_constraints(ca, NULL, &is_ca, NULL);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(srv);
    free(ca_pem);
    free(srv_pem);
    CHECK_EQ_INT(i1, 0);
    CHECK_EQ_INT(i2, 0);
    CHECK_EQ_INT(v, 0);
    CHECK_EQ_INT(status, 0);
    CHECK(host && ip4 && ip6 && !other);
    CHECK(bc >= 0 && is_ca);
}

RIFT_TEST(dev_source_is_a_valid_config) {
    rift_dev_state st;
    memset(&st, 0, sizeof(st));
    memset(st.token, 'a', 64);
    unsetenv("RIFT_DEV_LISTEN");
    size_t len;
    const char *src = rift_dev_config_source(&len);
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(rift_config_load_string(&cfg, src, len, RIFT_DEV_LABEL, false,
                                     NULL, &err));
    int tok = rift_config_load_tokens(&cfg, rift_dev_getenv, &st, &err);
    rift_config_messaging m = cfg.messaging;
    bool shape =
        strcmp(m.listen, "127.0.0.1:7443") == 0 && m.n_principals == 1 &&
        strcmp(m.principals[0].name, "dev") == 0 && m.principals[0].control &&
        m.principals[0].n_publish == 1 &&
        strcmp(m.principals[0].publish[0], ">") == 0 &&
        strcmp(m.principals[0].subscribe[0], ">") == 0 &&
        m.principals[0].token_len == 64 && m.n_streams == 1 &&
        strcmp(m.streams[0].name, "events") == 0 &&
        strcmp(m.streams[0].subjects[0], "events.>") == 0 &&
        strcmp(m.streams[0].storage_path, "rift-data/streams/events") == 0 &&
        strcmp(cfg.data_dir, "rift-data") == 0 &&
        strcmp(cfg.revision, "runtime") == 0;
    rift_config_free(&cfg);
    CHECK_OK(tok);
    CHECK(shape);
    /* RIFT_DEV_LISTEN moves the listener. */
    setenv("RIFT_DEV_LISTEN", "127.0.0.1:17443", 1);
    CHECK_OK(rift_config_load_string(&cfg, src, len, RIFT_DEV_LABEL, false,
                                     NULL, &err));
    unsetenv("RIFT_DEV_LISTEN");
    bool moved = strcmp(cfg.messaging.listen, "127.0.0.1:17443") == 0;
    rift_config_free(&cfg);
    CHECK(moved);
    /* Without a token the dev principal cannot start. */
    st.token[0] = '\0';
    CHECK_OK(rift_config_load_string(&cfg, src, len, RIFT_DEV_LABEL, false,
                                     NULL, &err));
    tok = rift_config_load_tokens(&cfg, rift_dev_getenv, &st, &err);
    rift_config_free(&cfg);
    CHECK_EQ_INT(tok, RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "messaging: set RIFT_DEV_TOKEN to a secret of at "
                           "least 32 bytes");
}

RIFT_TEST(dev_source_is_documented_verbatim) {
    const char *root = getenv("RIFT_SOURCE_DIR");
    CHECK(root != NULL);
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/riftd.md", root);
    char *doc = NULL;
    size_t dlen = 0;
    CHECK_OK(rift_file_read(path, 1 << 20, &doc, &dlen));
    size_t len;
    const char *src = rift_dev_config_source(&len);
    bool found = strstr(doc, src) != NULL;
    free(doc);
    CHECK_MSG(found, "docs/riftd.md must quote the dev configuration verbatim");
}

RIFT_TEST(bundled_plugins_match_the_examples) {
    const char *root = getenv("RIFT_SOURCE_DIR");
    CHECK(root != NULL);
    CHECK(rift_dev_n_plugin_files >= 2);
    for (size_t i = 0; i < rift_dev_n_plugin_files; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/examples/plugins/%s", root,
                 rift_dev_plugin_files[i].path);
        char *text = NULL;
        size_t len = 0;
        int rc = rift_file_read(path, 1 << 20, &text, &len);
        bool same =
            rc == 0 && strcmp(text, rift_dev_plugin_files[i].content) == 0;
        free(text);
        CHECK_MSG(same,
                  "%s differs from src/daemon/dev_plugins.c: run "
                  "scripts/gen-dev-plugins.py",
                  path);
    }
}

RIFT_TEST(dev_prepare_writes_plugins_once) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_dev_state st;
    rift_error err = {0};
    int rc1 = rift_dev_prepare(&st, true, &err);
    bool first = st.created_plugins;
    char *echo = NULL;
    size_t len = 0;
    int r_echo =
        rift_file_read("rift-data/plugins/echo/init.lua", 1 << 20, &echo, &len);
    bool counter = access("rift-data/plugins/stats/lua/counter.lua", R_OK) == 0;
    /* An edited plugin is kept; a file deleted from a kept folder stays
     * deleted. */
    rift_file_write_atomic("rift-data/plugins/echo/init.lua", "-- mine\n", 8,
                           0644);
    unlink("rift-data/plugins/stats/lua/counter.lua");
    int rc2 = rift_dev_prepare(&st, true, &err);
    bool second = st.created_plugins;
    char *mine = NULL;
    rift_file_read("rift-data/plugins/echo/init.lua", 1 << 20, &mine, &len);
    bool still_deleted =
        access("rift-data/plugins/stats/lua/counter.lua", F_OK) != 0;
    leave_tmp(&g);
    bool ok_echo = r_echo == 0 && echo && strstr(echo, "demo.echo");
    bool ok_mine = mine && strcmp(mine, "-- mine\n") == 0;
    free(echo);
    free(mine);
    CHECK_OK(rc1);
    CHECK(first);
    CHECK(ok_echo);
    CHECK(counter);
    CHECK_OK(rc2);
    CHECK(!second);
    CHECK(ok_mine);
    CHECK(still_deleted);
}

RIFT_TEST(tls_check_texts) {
    cwd_guard g;
    CHECK(enter_tmp(&g));
    rift_error e1 = {0}, e2 = {0}, e3 = {0}, e4 = {0};
    rift_dev_state st;
    int prep = rift_dev_prepare(&st, true, &e1);
    rift_file_write_atomic("empty.pem", "hello\n", 6, 0600);
    int r1 = rift_daemon_tls_check("absent.pem", "rift-data/tls/server.key",
                                   NULL, &e1);
    int r2 = rift_daemon_tls_check("empty.pem", "rift-data/tls/server.key",
                                   NULL, &e2);
    int r3 = rift_daemon_tls_check("rift-data/tls/server.pem", "empty.pem",
                                   NULL, &e3);
    int r4 = rift_daemon_tls_check("rift-data/tls/server.pem", "absent.key",
                                   NULL, &e4);
    leave_tmp(&g);
    CHECK_OK(prep);
    CHECK_EQ_INT(r1, RIFT_ERR_TLS);
    CHECK_EQ_STR(e1.text,
                 "certificate PEM (absent.pem): No such file or directory");
    CHECK_EQ_INT(r2, RIFT_ERR_TLS);
    CHECK_EQ_STR(e2.text, "certificate PEM (empty.pem): no certificates found");
    CHECK_EQ_INT(r3, RIFT_ERR_TLS);
    CHECK(strncmp(e3.text, "private key PEM (empty.pem): ", 29) == 0);
    CHECK_EQ_INT(r4, RIFT_ERR_TLS);
    CHECK_EQ_STR(e4.text,
                 "private key PEM (absent.key): No such file or directory");
}
