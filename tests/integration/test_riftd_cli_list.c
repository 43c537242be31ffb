/*
 * test_riftd_cli_list.c — `rift consumer ls|next|rm` against a real riftd
 * on its development default (integration tests): the consumer list and
 * the waiting fetch through the CLI, their output, exit codes and error
 * texts.
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

RIFT_TEST(ls_next_rm) {
    devfix f;
    CHECK(dev_start(&f));
    char *o[8] = {0}, *e[8] = {0};
    int empty = CLI(&f, &o[0], NULL, "consumer", "ls", "events");
    int a1 = CLI(&f, NULL, NULL, "consumer", "open", "events", "w1", "--filter",
                 "events.>");
    int a2 = CLI(&f, NULL, NULL, "consumer", "open", "events", "w2", "--filter",
                 "events.>", "--max-deliver", "4");
    int ls = CLI(&f, &o[1], NULL, "consumer", "ls", "events");
    int js = CLI(&f, &o[2], NULL, "consumer", "ls", "events", "--json");
    int pub = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p1");
    int n1 = CLI(&f, &o[3], NULL, "consumer", "next", "events", "w1", "--wait",
                 "5s", "--ack");
    int n2 = CLI(&f, &o[4], &e[0], "consumer", "next", "events", "w1", "--wait",
                 "100ms");
    int bad = CLI(&f, NULL, &e[1], "consumer", "next", "events", "w1", "--wait",
                  "3m");
    int rm = CLI(&f, NULL, NULL, "consumer", "rm", "events", "w2");
    int ls2 = CLI(&f, &o[5], NULL, "consumer", "ls", "events");
    int nope = CLI(&f, NULL, &e[2], "consumer", "ls", "nope");
    CHECK_EQ_INT(dev_stop(&f), 0);
    CHECK_EQ_INT(empty, 0);
    CHECK_MSG(o[0] && strstr(o[0], "no consumers of yours on events"), "%s",
              o[0] ? o[0] : "");
    CHECK_EQ_INT(a1, 0);
    CHECK_EQ_INT(a2, 0);
    CHECK_EQ_INT(ls, 0);
    CHECK_MSG(o[1] && strstr(o[1], "NAME") && strstr(o[1], "w1 ") &&
                  strstr(o[1], "w2 ") && strstr(o[1], "events.>") &&
                  strstr(o[1], "w1 ") < strstr(o[1], "w2 "),
              "%s", o[1] ? o[1] : "");
    CHECK_EQ_INT(js, 0);
    CHECK_MSG(o[2] && strstr(o[2], "\"name\": \"w1\"") &&
                  strstr(o[2], "\"max_deliver\": 4"),
              "%s", o[2] ? o[2] : "");
    CHECK_EQ_INT(pub, 0);
    CHECK_EQ_INT(n1, 0);
    CHECK_MSG(o[3] && strstr(o[3], "#1 (delivery 1)"), "%s", o[3] ? o[3] : "");
    /* Acked: nothing comes back after the wait. */
    CHECK_EQ_INT(n2, 0);
    CHECK(o[4] && o[4][0] == '\0');
    CHECK_MSG(e[0] && strstr(e[0], "nothing to fetch within 100 ms"), "%s",
              e[0] ? e[0] : "");
    CHECK_EQ_INT(bad, 2);
    CHECK(e[1] && strstr(e[1], "--wait"));
    CHECK_EQ_INT(rm, 0);
    CHECK_EQ_INT(ls2, 0);
    CHECK_MSG(o[5] && strstr(o[5], "w1 ") && !strstr(o[5], "w2 "), "%s",
              o[5] ? o[5] : "");
    CHECK_EQ_INT(nope, 1);
    CHECK_MSG(e[2] && strstr(e[2], "unknown stream"), "%s", e[2] ? e[2] : "");
    for (int i = 0; i < 8; i++) {
        free(o[i]);
        free(e[i]);
    }
}
