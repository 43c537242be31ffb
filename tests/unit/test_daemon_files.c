/*
 * test_daemon_files.c — modes of riftd's own files (tests of the daemon
 * layer): directories open to group or others are narrowed to 0700, and a
 * secret file (the TLS private key) that others may read is refused with
 * the chmod to run.
 */
#include "daemon/files.h"
#include "daemon/credentials.h"
#include "quic/certgen.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

static int mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

RIFT_TEST(open_directories_are_narrowed) {
    char *root = rift_test_tmpdir();
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/data", root);
    bool created;
    CHECK_OK(rift_dir_ensure_private(dir, &created));
    CHECK(created);
    CHECK_EQ_INT(mode_of(dir), 0700);
    CHECK_OK(chmod(dir, 0755));
    CHECK_OK(rift_dir_ensure_private(dir, &created));
    CHECK(!created);
    CHECK_EQ_INT(mode_of(dir), 0700);
    CHECK_OK(chmod(dir, 0750));
    CHECK_OK(rift_dir_narrow(dir));
    CHECK_EQ_INT(mode_of(dir), 0700);
    CHECK_EQ_INT(rift_dir_narrow("/nonexistent/x"), -ENOENT);
    rift_test_rmdir(root);
}

RIFT_TEST(readable_private_keys_are_refused) {
    char *root = rift_test_tmpdir();
    rift_error err;
    CHECK_OK(rift_certgen_dev(root, NULL, &err));
    char cert[600], key[600];
    snprintf(cert, sizeof(cert), "%s/server.pem", root);
    snprintf(key, sizeof(key), "%s/server.key", root);
    CHECK_OK(rift_daemon_tls_check(cert, key, NULL, &err));
    CHECK_OK(chmod(key, 0640));
    CHECK_EQ_INT(rift_daemon_tls_check(cert, key, NULL, &err),
                 RIFT_ERR_PERMISSION);
    char want[1400];
    snprintf(want, sizeof(want),
             "private key (%s) is accessible by group or others (mode "
             "0640); run chmod 600 %s",
             key, key);
    CHECK_EQ_STR(err.text, want);
    rift_test_rmdir(root);
}
