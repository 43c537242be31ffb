/*
 * test_riftd_cli_push.c — `rift consumer push` against a real riftd on
 * its development default (integration tests): deliveries printed as
 * fetch prints them, each acknowledged, --count, --max-in-flight and its
 * text.
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

RIFT_TEST(push_prints_and_acks) {
    devfix f;
    CHECK(dev_start(&f));
    int p1 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p1");
    int p2 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p2");
    int p3 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p3");
    int a1 = CLI(&f, NULL, NULL, "consumer", "open", "events", "w", "--filter",
                 "events.>");
    char *o1 = NULL, *o2 = NULL, *o3 = NULL, *e1 = NULL, *e2 = NULL;
    int a2 = CLI(&f, &o1, NULL, "consumer", "push", "events", "w",
                 "--max-in-flight", "1", "--count", "2", "--ack-wait", "200");
    /* The two printed were acknowledged; 3 may have been on its way when
     * the first push ended: then it comes again after the 200 ms. */
    int a3 = CLI(&f, &o2, NULL, "consumer", "push", "events", "w", "--count",
                 "1", "--raw");
    int a4 = CLI(&f, NULL, &e1, "consumer", "push", "events", "w",
                 "--max-in-flight", "0");
    int a5 = CLI(&f, NULL, &e2, "consumer", "push", "events", "nobody",
                 "--count", "1");
    char *o4 = NULL;
    int a6 = CLI(&f, &o4, NULL, "consumer", "info", "events", "w", "--json");
    (void)o3;
    CHECK_EQ_INT(dev_stop(&f), 0);
    CHECK(p1 == 0 && p2 == 0 && p3 == 0 && a1 == 0);
    CHECK_EQ_INT(a2, 0);
    CHECK_MSG(o1 && strstr(o1, "#1 (delivery 1)") &&
                  strstr(o1, "events.x: p1") && strstr(o1, "#2 (delivery 1)") &&
                  !strstr(o1, "#3"),
              "%s", o1 ? o1 : "");
    CHECK_EQ_INT(a3, 0);
    CHECK_EQ_STR(o2, "p3"); /* --raw: the payload alone */
    CHECK_EQ_INT(a4, 2);
    CHECK_EQ_STR(e1, "rift consumer: --max-in-flight expects 1..65535\n");
    CHECK_EQ_INT(a5, 1);
    CHECK_EQ_STR(e2, "rift consumer: consumer does not exist\n");
    CHECK_EQ_INT(a6, 0);
    CHECK_MSG(o4 && strstr(o4, "\"pending\": 0"), "%s", o4 ? o4 : "");
    free(o1);
    free(o2);
    free(o4);
    free(e1);
    free(e2);
}
