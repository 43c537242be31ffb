/*
 * test_cli_admin.c — an operator's first configuration (integration
 * tests): `riftd --check` and the start warn about a subscribe grant that
 * covers every _INBOX reply; `rift sub '>'` explains why a principal
 * without control is refused; a reload that needs a restart logs the key
 * that changed; `rift certs server` re-issues the server certificate from
 * the existing CA, certificate names are checked, and an unknown `certs`
 * subcommand is named.
 */
// labels: threads
#include "procs.h"
#include "riftd_fix.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has(const char *s, const char *needle) {
    bool ok = s != NULL && strstr(s, needle) != NULL;
    if (!ok) {
        fprintf(stderr, "  expected \"%s\" in:\n%s\n", needle,
                s ? s : "(nothing)");
    }
    return ok;
}

/* A listener whose principal "app" may subscribe to everything but has no
 * control; |capacity| is messaging.subscription_capacity. */
static void config(char *buf, size_t size, int capacity) {
    snprintf(buf, size,
             "return { messaging = {\n"
             "  listen = '127.0.0.1:0', certificate = 'tls/server.pem',\n"
             "  private_key = 'tls/server.key', subscription_capacity = %d,\n"
             "  principals = { { name = 'app', token_env = 'RIFT_TEST_TOKEN',\n"
             "    publish = { 'app.>' }, subscribe = { '>' } } } } }\n",
             capacity);
}

RIFT_TEST(inbox_wide_grant_warns_and_refused_sub_explains) {
    char cfg[1024];
    config(cfg, sizeof(cfg), 1024);
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN, NULL};
    char *check = NULL;
    int c1 =
        rift_proc_run(rift_proc_riftd(), f.dir,
                      (const char *const[]){"-c", "rift.lua", "--check", NULL},
                      env, &check, NULL);
    CHECK(riftd_fix_start(&f, NULL));
    char server[96];
    snprintf(server, sizeof(server), "--server=%s", f.p.address);
    char *err = NULL;
    int s1 = rift_proc_run(rift_proc_cli(), f.dir,
                           (const char *const[]){"sub", ">", server, "--ca",
                                                 "tls/ca.pem", "--token",
                                                 RIFTD_FIX_TOKEN, NULL},
                           NULL, NULL, &err);
    /* A reload that changes messaging is refused with the protocol's text;
     * the log names the key. */
    config(cfg, sizeof(cfg), 2048);
    CHECK(rift_proc_write_file(f.dir, "rift.lua", cfg));
    kill(f.p.pid, SIGHUP);
    bool logged = rift_proc_wait_text(
        &f.p, true, "reload: messaging.subscription_capacity changed",
        RIFT_PROC_WAIT_MS);
    bool refused =
        rift_proc_wait_text(&f.p, true, "require a restart", RIFT_PROC_WAIT_MS);
    char *log = rift_proc_read(f.p.err);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    CHECK_EQ_INT(c1, 0);
    CHECK(has(check, "warning: principal \"app\": subscribe grant \">\" covers "
                     "every _INBOX reply subject"));
    CHECK(has(check, "configuration OK"));
    CHECK(has(log, "warn rift: principal \"app\": subscribe grant \">\""));
    CHECK_EQ_INT(s1, 1);
    CHECK(has(err, "rift sub: subscription not permitted\n"));
    CHECK(has(err, "also covers rift.control, which only a principal with "
                   "control = true"));
    CHECK(logged);
    CHECK(refused);
    free(check);
    free(err);
    free(log);
    CHECK_EQ_INT(rc, 0);
}

static char *read_file(const char *dir, const char *name) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return rift_proc_read(path);
}

RIFT_TEST(certs_server_reissues_from_the_existing_ca) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char *e_bad = NULL, *e_foo = NULL, *out = NULL;
    int r1 = rift_proc_run(
        rift_proc_cli(), dir,
        (const char *const[]){"certs", "init", "--name", "bad name", NULL},
        NULL, NULL, &e_bad);
    int r2 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"certs", "init", NULL}, NULL,
                           NULL, NULL);
    char *ca0 = read_file(dir, "rift-data/tls/ca.pem");
    char *leaf0 = read_file(dir, "rift-data/tls/server.pem");
    int r3 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"certs", "server", "--name",
                                                 "rift.example", NULL},
                           NULL, &out, NULL);
    char *ca1 = read_file(dir, "rift-data/tls/ca.pem");
    char *leaf1 = read_file(dir, "rift-data/tls/server.pem");
    int r4 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"certs", "foo", NULL}, NULL,
                           NULL, &e_foo);
    /* riftd's development default accepts the new pair, and the CLI,
     * trusting the unchanged CA, talks to it. */
    rift_proc riftd;
    const char *env[] = {"RIFT_DEV_LISTEN=127.0.0.1:0", NULL};
    CHECK(rift_proc_start(&riftd, rift_proc_riftd(), dir, "riftd", NULL, env,
                          NULL, 0));
    bool ready = rift_proc_riftd_ready(&riftd);
    char listen[96];
    snprintf(listen, sizeof(listen), "RIFT_DEV_LISTEN=%s", riftd.address);
    const char *cenv[] = {listen, NULL};
    int r5 = ready ? rift_proc_run(rift_proc_cli(), dir,
                                   (const char *const[]){"status", NULL}, cenv,
                                   NULL, NULL)
                   : -1;
    int rc = rift_proc_stop(&riftd, SIGTERM);
    rift_test_rmdir(dir);
    CHECK_EQ_INT(r1, 2);
    CHECK(has(e_bad, "--name 'bad name' is neither a DNS name"));
    CHECK_EQ_INT(r2, 0);
    CHECK_EQ_INT(r3, 0);
    CHECK(has(out, "server names: localhost, 127.0.0.1, ::1, rift.example"));
    CHECK(ca0 && ca1 && strcmp(ca0, ca1) == 0);
    CHECK(leaf0 && leaf1 && strcmp(leaf0, leaf1) != 0);
    CHECK_EQ_INT(r4, 2);
    CHECK(has(e_foo, "rift certs: unknown subcommand 'foo'"));
    CHECK(ready);
    CHECK_EQ_INT(r5, 0);
    CHECK_EQ_INT(rc, 0);
    free(e_bad);
    free(e_foo);
    free(out);
    free(ca0);
    free(ca1);
    free(leaf0);
    free(leaf1);
}
