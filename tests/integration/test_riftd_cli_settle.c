/*
 * test_riftd_cli_settle.c — `rift consumer nak|term|progress`, `rift
 * consumer open --max-deliver` and `rift consumer rm|delete` against a
 * real riftd, on its development default and as principals without
 * control rights (integration tests): the extension opcodes through the
 * CLI, their output, exit codes and error texts, and that one principal's
 * rm leaves another's consumer of the same name alone.
 */
// labels: threads
#include "procs.h"
#include "riftd_fix.h"
#include "test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct devfix {
    char *dir;
    char listen[96];
    const char *env[2];
    rift_proc p;
} devfix;

static bool dev_start(devfix *f) {
    memset(f, 0, sizeof(*f));
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    snprintf(f->listen, sizeof(f->listen), "RIFT_DEV_LISTEN=127.0.0.1:0");
    f->env[0] = f->listen;
    f->env[1] = NULL;
    if (!rift_proc_start(&f->p, rift_proc_riftd(), f->dir, "riftd", NULL,
                         f->env, NULL, 0) ||
        !rift_proc_riftd_ready(&f->p)) {
        return false;
    }
    snprintf(f->listen, sizeof(f->listen), "RIFT_DEV_LISTEN=%s", f->p.address);
    return true;
}

static int dev_stop(devfix *f) {
    int rc = rift_proc_stop(&f->p, SIGTERM);
    rift_test_rmdir(f->dir);
    return rc;
}

static int cli(devfix *f, char **out, char **err, const char *const *args) {
    return rift_proc_run(rift_proc_cli(), f->dir, args, f->env, out, err);
}

#define CLI(f, out, err, ...)                                                  \
 cli((f), (out), (err), (const char *const[]){__VA_ARGS__, NULL})

RIFT_TEST(nak_term_and_max_deliver) {
    devfix f;
    CHECK(dev_start(&f));
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p1"), 0);
    char *o1 = NULL, *o2 = NULL, *o3 = NULL, *e1 = NULL, *e2 = NULL;
    char *e3 = NULL, *e4 = NULL;
    int a1 = CLI(&f, &o1, NULL, "consumer", "open", "events", "w", "--filter",
                 "events.>", "--ack-wait", "60000", "--max-deliver", "2");
    int a2 = CLI(&f, NULL, NULL, "consumer", "fetch", "events", "w");
    int a3 = CLI(&f, NULL, NULL, "consumer", "nak", "events", "w", "1");
    int a4 = CLI(&f, &o2, NULL, "consumer", "fetch", "events", "w");
    int a5 = CLI(&f, NULL, &e1, "consumer", "nak", "events", "w", "1",
                 "--delay", "2h");
    int a6 = CLI(&f, NULL, NULL, "consumer", "nak", "events", "w", "1",
                 "--delay", "1h");
    int a7 = CLI(&f, NULL, NULL, "consumer", "term", "events", "w", "1");
    int a8 = CLI(&f, NULL, &e2, "consumer", "term", "events", "w", "1");
    int a9 = CLI(&f, NULL, &e3, "consumer", "open", "events", "w", "--filter",
                 "events.>", "--ack-wait", "60000", "--max-deliver", "3");
    int a10 = CLI(&f, &o3, NULL, "consumer", "open", "events", "w", "--filter",
                  "events.>", "--ack-wait", "60000", "--max-deliver", "2");
    int a11 = CLI(&f, NULL, &e4, "consumer", "term", "events", "w");
    char *o4 = NULL;
    int a12 = CLI(&f, &o4, NULL, "consumer", "info", "events", "w", "--json");
    CHECK_EQ_INT(dev_stop(&f), 0);
    CHECK_EQ_INT(a1, 0);
    CHECK_MSG(o1 && strstr(o1, "consumer w on events: open") &&
                  strstr(o1, "max deliver 2"),
              "%s", o1 ? o1 : "");
    CHECK_EQ_INT(a2, 0);
    CHECK_EQ_INT(a3, 0);
    CHECK_EQ_INT(a4, 0);
    CHECK_MSG(o2 && strstr(o2, "#1 (delivery 2)"), "%s", o2 ? o2 : "");
    CHECK_EQ_INT(a5, 2);
    CHECK(e1 && strstr(e1, "--delay"));
    CHECK_EQ_INT(a6, 0);
    CHECK_EQ_INT(a7, 0);
    CHECK_EQ_INT(a8, 1);
    CHECK_EQ_STR(e2, "rift consumer: term 1: sequence is not pending "
                     "acknowledgement\n");
    CHECK_EQ_INT(a9, 1);
    CHECK_MSG(e3 && strstr(e3, "consumer already exists with different "
                               "max_deliver"),
              "%s", e3 ? e3 : "");
    CHECK_EQ_INT(a10, 0);
    CHECK(o3 && strstr(o3, "resumed"));
    CHECK_EQ_INT(a11, 2);
    CHECK_EQ_INT(a12, 0);
    CHECK_MSG(o4 && strstr(o4, "\"max_deliver\": 2") &&
                  strstr(o4, "\"terminated\": 1"),
              "%s", o4 ? o4 : "");
    free(o4);
    free(o1);
    free(o2);
    free(o3);
    free(e1);
    free(e2);
    free(e3);
    free(e4);
}

/* Two principals without control rights, the same grants. */
static const char plain_config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'orders.>' }, subscribe = { 'orders.>' } },\n"
    "      { name = 'other', token_env = 'RIFT_TEST_TOKEN2',\n"
    "        publish = { 'orders.>' }, subscribe = { 'orders.>' } },\n"
    "    },\n"
    "    streams = { orders = { subjects = { 'orders.>' } } },\n"
    "  },\n"
    "}\n";

/* The CLI with |token| against |f|; the exit status, *out and *err as
 * rift_proc_run. */
static int cli_as(riftd_fix *f, const char *token, char **out, char **err,
                  const char *const *words) {
    char server[96], tok[128];
    snprintf(server, sizeof(server), "--server=%s", f->p.address);
    snprintf(tok, sizeof(tok), "--token=%s", token);
    const char *args[20];
    size_t n = 0;
    for (; words[n] != NULL && n < 16; n++) {
        args[n] = words[n];
    }
    args[n++] = server;
    args[n++] = "--ca=tls/ca.pem";
    args[n++] = tok;
    args[n] = NULL;
    return rift_proc_run(rift_proc_cli(), f->dir, args, NULL, out, err);
}

#define AS(f, token, out, err, ...)                                            \
 cli_as((f), (token), (out), (err), (const char *const[]){__VA_ARGS__, NULL})

RIFT_TEST(progress_info_and_rm_without_control) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, plain_config));
    CHECK(riftd_fix_start(&f, NULL));
    const char *w = RIFTD_FIX_TOKEN, *o = RIFTD_FIX_TOKEN2;
    char *out[10] = {0}, *err[10] = {0};
    int pub =
        AS(&f, w, NULL, NULL, "stream", "pub", "orders", "orders.x", "p1");
    int ow = AS(&f, w, NULL, &err[0], "consumer", "open", "orders", "w",
                "--filter", "orders.>", "--ack-wait", "60000");
    int oo = AS(&f, o, NULL, NULL, "consumer", "open", "orders", "w",
                "--filter", "orders.>");
    int fw = AS(&f, w, &out[0], NULL, "consumer", "fetch", "orders", "w");
    int p1 = AS(&f, w, &out[1], &err[1], "consumer", "progress", "orders", "w",
                "1", "1");
    int p2 =
        AS(&f, w, NULL, &err[2], "consumer", "progress", "orders", "w", "2");
    int p3 = AS(&f, w, NULL, &err[3], "consumer", "progress", "orders", "w",
                "1", "x");
    int p4 = AS(&f, w, NULL, NULL, "consumer", "progress", "orders", "w");
    int i1 = AS(&f, w, &out[7], &err[8], "consumer", "info", "orders", "w");
    int i2 = AS(&f, w, NULL, &err[9], "consumer", "info", "orders", "nope");
    char *so = NULL, *se = NULL;
    int s1 = AS(&f, w, &so, &se, "consumer", "open", "orders", "last1",
                "--start", "last", "--filter", "orders.>");
    int s2 = AS(&f, w, NULL, NULL, "consumer", "rm", "orders", "last1");
    /* Another identity's --identity needs control rights. */
    int r0 = AS(&f, w, NULL, &err[4], "consumer", "rm", "orders", "w",
                "--identity", "other");
    int r1 = AS(&f, w, &out[2], &err[5], "consumer", "rm", "orders", "w");
    int r2 = AS(&f, w, NULL, &err[6], "consumer", "delete", "orders", "w");
    int r3 = AS(&f, w, NULL, &err[7], "consumer", "rm", "nope", "w");
    int lw = AS(&f, w, &out[3], NULL, "consumer", "ls", "orders");
    int lo = AS(&f, o, &out[4], NULL, "consumer", "ls", "orders");
    int r4 =
        AS(&f, o, &out[5], NULL, "consumer", "delete", "orders", "w", "--json");
    int lo2 = AS(&f, o, &out[6], NULL, "consumer", "ls", "orders");
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    CHECK_EQ_INT(pub, 0);
    /* info of one's own consumer without control rights (the extension). */
    CHECK_MSG(i1 == 0, "%s", err[8] ? err[8] : "");
    CHECK_MSG(out[7] && strstr(out[7], "consumer w on orders\n") &&
                  strstr(out[7], "filter          orders.>") &&
                  strstr(out[7], "ack wait        60000 ms") &&
                  strstr(out[7], "pending acks    1"),
              "%s", out[7] ? out[7] : "");
    CHECK_EQ_INT(i2, 1);
    /* Any start position for a principal without control rights. */
    CHECK_MSG(s1 == 0, "%s", se ? se : "");
    CHECK_MSG(so && strstr(so, "consumer last1 on orders: open (filter "
                               "orders.>, next sequence 1"),
              "%s", so ? so : "");
    CHECK_EQ_INT(s2, 0);
    free(so);
    free(se);
    CHECK_EQ_STR(err[9], "rift consumer: consumer does not exist\n");
    CHECK_MSG(ow == 0, "%s", err[0] ? err[0] : "");
    CHECK_EQ_INT(oo, 0);
    CHECK_EQ_INT(fw, 0);
    CHECK_MSG(out[0] && strstr(out[0], "#1 (delivery 1)"), "%s",
              out[0] ? out[0] : "");
    CHECK_MSG(p1 == 0, "%s", err[1] ? err[1] : "");
    CHECK(out[1] && out[1][0] == '\0');
    CHECK_EQ_INT(p2, 1);
    CHECK_EQ_STR(err[2], "rift consumer: progress 2: sequence is not pending "
                         "acknowledgement\n");
    CHECK_EQ_INT(p3, 2); /* nothing sent: every SEQ is checked first */
    CHECK(err[3] && strstr(err[3], "SEQ"));
    CHECK_EQ_INT(p4, 2);
    CHECK_EQ_INT(r0, 1);
    CHECK(err[4] && err[4][0] != '\0');
    CHECK_MSG(r1 == 0, "%s", err[5] ? err[5] : "");
    CHECK_EQ_STR(out[2], "consumer w on orders: deleted\n");
    CHECK_EQ_INT(r2, 1);
    CHECK_EQ_STR(err[6], "rift consumer: consumer does not exist\n");
    CHECK_EQ_INT(r3, 1);
    CHECK_MSG(err[7] && strstr(err[7], "unknown stream \"nope\""), "%s",
              err[7] ? err[7] : "");
    CHECK_EQ_INT(lw, 0);
    CHECK_MSG(out[3] && strstr(out[3], "no consumers of yours on orders"), "%s",
              out[3] ? out[3] : "");
    /* The other principal's "w" is another consumer: still there. */
    CHECK_EQ_INT(lo, 0);
    CHECK_MSG(out[4] && strstr(out[4], "w "), "%s", out[4] ? out[4] : "");
    CHECK_EQ_INT(r4, 0);
    CHECK_MSG(out[5] && strstr(out[5], "\"deleted\": true") &&
                  strstr(out[5], "\"name\": \"w\"") &&
                  strstr(out[5], "\"stream\": \"orders\""),
              "%s", out[5] ? out[5] : "");
    CHECK_EQ_INT(lo2, 0);
    CHECK_MSG(out[6] && strstr(out[6], "no consumers of yours on orders"), "%s",
              out[6] ? out[6] : "");
    for (int i = 0; i < 10; i++) {
        free(out[i]);
        free(err[i]);
    }
}
