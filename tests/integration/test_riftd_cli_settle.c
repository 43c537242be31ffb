/*
 * test_riftd_cli_settle.c — `rift consumer nak|term` and `rift consumer
 * open --max-deliver` against a real riftd on its development default
 * (integration tests): the extension opcodes through the CLI, their
 * output, exit codes and error texts.
 */
// labels: threads
#include "procs.h"
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
