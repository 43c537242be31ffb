/*
 * test_cli_newcomer.c — the first minutes with rift (integration tests):
 * scripts/run.sh started from an empty directory outside the repository
 * (against the build tree the tests were built in), then every command
 * its banner prints, run verbatim in that directory; the CLI's --version
 * and help; and the development default's subscriber queue, which holds a
 * subscriber that falls tens of thousands of messages behind.
 */
// labels: threads
#include "devfix.h"
#include "procs.h"
#include "rift/client.h"
#include "rift/rift.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- run.sh and its banner ---- */

#define MAX_HINTS 16

typedef struct hints {
    char *setup;          /* the cd and export lines, one script */
    char *cmd[MAX_HINTS]; /* every other command, comment included */
    size_t n;
} hints;

/* The banner is the block of lines starting with two spaces after
 * "In another terminal, try:". */
static bool parse_hints(const char *log, hints *h) {
    memset(h, 0, sizeof(*h));
    const char *p = strstr(log, "In another terminal, try:\n");
    if (p == NULL) {
        return false;
    }
    p = strchr(p, '\n') + 1;
    size_t setup_len = 0;
    h->setup = calloc(1, 8192);
    while (strncmp(p, "  ", 2) == 0 && h->n < MAX_HINTS) {
        const char *end = strchr(p, '\n');
        if (end == NULL) {
            break;
        }
        size_t len = (size_t)(end - p) - 2;
        const char *line = p + 2;
        if (strncmp(line, "cd ", 3) == 0 || strncmp(line, "export ", 7) == 0) {
            if (setup_len + len + 2 < 8192) {
                memcpy(h->setup + setup_len, line, len);
                setup_len += len;
                h->setup[setup_len++] = '\n';
            }
        } else {
            h->cmd[h->n++] = strndup(line, len);
        }
        p = end + 1;
    }
    return h->n > 0 && setup_len > 0;
}

static void hints_free(hints *h) {
    free(h->setup);
    for (size_t i = 0; i < h->n; i++) {
        free(h->cmd[i]);
    }
}

/* Starts one hint as the user would: a shell in |dir| that first runs the
 * banner's cd/export lines. */
static bool start_hint(rift_proc *p, const char *dir, const char *tag,
                       const hints *h, const char *cmd) {
    char script[9000];
    snprintf(script, sizeof(script), "%s%s\n", h->setup, cmd);
    const char *args[] = {"-c", script, NULL};
    return rift_proc_start(p, "/bin/sh", dir, tag, args, NULL, NULL, 0);
}

/* The one child of the shell |pid| runs a hint in (the command itself). */
static pid_t child_of(pid_t pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
             (int)pid);
    FILE *f = fopen(path, "r");
    int child = -1;
    if (f != NULL) {
        if (fscanf(f, "%d", &child) != 1) {
            child = -1;
        }
        fclose(f);
    }
    return (pid_t)child;
}

typedef struct pubwait {
    const char *dir;
    const hints *h;
    const char *pub;
    rift_proc *sub;
    int rc;
} pubwait;

/* Runs the banner's pub until its subscriber printed the message (the
 * subscriber's start races the first publication). */
static bool pub_seen(void *arg) {
    pubwait *w = arg;
    rift_proc p;
    if (!start_hint(&p, w->dir, "hint-pub", w->h, w->pub)) {
        return false;
    }
    w->rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    return w->rc == 0 &&
           rift_proc_wait_text(w->sub, false, "demo.hello: hi", 200);
}

RIFT_TEST(run_sh_from_an_empty_directory_and_every_hint_works) {
    const char *src = getenv("RIFT_SOURCE_DIR");
    const char *bin = getenv("RIFT_BINARY_DIR");
    CHECK_MSG(src && *src && bin && *bin,
              "RIFT_SOURCE_DIR and RIFT_BINARY_DIR must be set");
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char runsh[4200], build[4200];
    snprintf(runsh, sizeof(runsh), "%s/scripts/run.sh", src);
    snprintf(build, sizeof(build), "RIFT_BUILD_DIR=%s", bin);
    const char *env[] = {build, "RIFT_DEV_LISTEN=127.0.0.1:0", NULL};
    rift_proc riftd;
    CHECK(rift_proc_start(&riftd, runsh, dir, "riftd", NULL, env, NULL, 0));
    /* run.sh says what it does, builds, then execs riftd, whose banner
     * ends with the status hint. */
    bool up = rift_proc_riftd_ready(&riftd) &&
              rift_proc_wait_text(&riftd, true, " status\n", RIFT_PROC_WAIT_MS);
    char *log = rift_proc_read(riftd.err);
    hints h;
    bool parsed = up && log != NULL && parse_hints(log, &h);
    if (!parsed) {
        fprintf(stderr, "  run.sh said:\n%s\n", log ? log : "(nothing)");
        rift_proc_kill(&riftd);
        free(log);
        rift_test_rmdir(dir);
        CHECK(parsed);
        return;
    }
    bool progress = strstr(log, "run.sh: building riftd and rift") != NULL &&
                    strstr(log, "run.sh: starting ") != NULL;
    /* The commands name a rift that exists: an absolute path here, as the
     * build tree's rift is not on PATH. */
    bool absolute = strncmp(h.cmd[0], bin, strlen(bin)) == 0;
    /* The hints carry no log prefix (timestamp, level). */
    bool clean = true;
    for (size_t i = 0; i < h.n; i++) {
        clean = clean && strstr(h.cmd[i], " info ") == NULL &&
                strncmp(h.cmd[i], "20", 2) != 0;
    }
    /* Every hint, verbatim: sub '>' in the background until pub's message
     * reaches it, every other one to completion with exit status 0. */
    rift_proc sub;
    bool sub_started = false, delivered = false;
    int failed = 0, ran = 0;
    const char *pub = NULL;
    for (size_t i = 0; i < h.n; i++) {
        if (strstr(h.cmd[i], " pub demo.hello hi") != NULL) {
            pub = h.cmd[i];
        }
    }
    for (size_t i = 0; i < h.n; i++) {
        const char *cmd = h.cmd[i];
        if (strstr(cmd, " sub '>'") != NULL) {
            sub_started = start_hint(&sub, dir, "hint-sub", &h, cmd);
            pubwait w = {dir, &h, pub, &sub, -1};
            delivered = sub_started && pub != NULL &&
                        rift_test_wait_until(pub_seen, &w, RIFT_PROC_WAIT_MS);
            ran += 2;
            continue;
        }
        if (cmd == pub) {
            continue; /* run with the subscriber above */
        }
        rift_proc p;
        char tag[32];
        snprintf(tag, sizeof(tag), "hint-%zu", i);
        int rc = start_hint(&p, dir, tag, &h, cmd)
                     ? rift_proc_wait(&p, RIFT_PROC_WAIT_MS)
                     : -2;
        ran++;
        if (rc != 0) {
            char *o = rift_proc_read(p.out), *e = rift_proc_read(p.err);
            fprintf(stderr, "  hint `%s` exited %d:\n%s%s\n", cmd, rc,
                    o ? o : "", e ? e : "");
            free(o);
            free(e);
            failed++;
        }
    }
    /* rift sub stops cleanly on SIGTERM (sent to it, not to its shell),
     * having shown none of the CLI's own control traffic. */
    pid_t child = sub_started ? child_of(sub.pid) : -1;
    if (child > 0) {
        kill(child, SIGTERM);
    }
    int sub_rc = child > 0 ? rift_proc_wait(&sub, RIFT_PROC_WAIT_MS) : -2;
    if (child <= 0 && sub_started) {
        rift_proc_kill(&sub);
    }
    char *sub_out = sub_started ? rift_proc_read(sub.out) : NULL;
    bool quiet = sub_out != NULL &&
                 strstr(sub_out, "\nrift.control.") == NULL &&
                 strstr(sub_out, "\n_INBOX.") == NULL &&
                 strncmp(sub_out, "rift.control.", 13) != 0 &&
                 strncmp(sub_out, "_INBOX.", 7) != 0;
    if (!quiet) {
        fprintf(stderr, "  sub printed:\n%s\n", sub_out);
    }
    /* run.sh exec'd riftd: SIGTERM reaches riftd itself. */
    int rc = rift_proc_stop(&riftd, SIGTERM);
    free(sub_out);
    free(log);
    size_t n = h.n;
    hints_free(&h);
    rift_test_rmdir(dir);
    CHECK(progress);
    CHECK(absolute);
    CHECK(clean);
    CHECK(n >= 6);
    CHECK(delivered);
    CHECK_EQ_INT(failed, 0);
    CHECK_EQ_INT(ran, (int)n);
    CHECK_EQ_INT(sub_rc, 0);
    CHECK(quiet);
    CHECK_EQ_INT(rc, 0);
}

/* ---- --version and help ---- */

RIFT_TEST(version_and_help_for_a_command) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char *v = NULL, *dv = NULL, *help = NULL, *own = NULL, *bad = NULL;
    int r1 =
        rift_proc_run(rift_proc_cli(), dir,
                      (const char *const[]){"--version", NULL}, NULL, &v, NULL);
    int r2 = rift_proc_run(rift_proc_riftd(), dir,
                           (const char *const[]){"--version", NULL}, NULL, &dv,
                           NULL);
    int r3 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"help", "pub", NULL}, NULL,
                           &help, NULL);
    int r4 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"pub", "--help", NULL}, NULL,
                           &own, NULL);
    int r5 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"help", "nope", NULL}, NULL,
                           NULL, &bad);
    rift_test_rmdir(dir);
    static const char want_v[] = "rift " RIFT_VERSION " (protocol ";
    static const char want_dv[] = "riftd " RIFT_VERSION " (protocol ";
    bool ok_v = v && strncmp(v, want_v, sizeof(want_v) - 1) == 0;
    bool ok_dv = dv && strncmp(dv, want_dv, sizeof(want_dv) - 1) == 0;
    bool ok_help = help && own && strncmp(help, "usage: rift pub ", 16) == 0 &&
                   strcmp(help, own) == 0;
    bool ok_bad = bad && strstr(bad, "rift help: unknown command 'nope'");
    free(v);
    free(dv);
    free(help);
    free(own);
    free(bad);
    CHECK_EQ_INT(r1, 0);
    CHECK(ok_v);
    CHECK_EQ_INT(r2, 0);
    CHECK(ok_dv);
    CHECK_EQ_INT(r3, 0);
    CHECK_EQ_INT(r4, 0);
    CHECK(ok_help);
    CHECK_EQ_INT(r5, 2);
    CHECK(ok_bad);
}

/* ---- The development default's subscriber queue ---- */

static char *slurp(const char *dir, const char *name) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *s = rift_proc_read(path);
    if (s != NULL) {
        s[strcspn(s, "\n")] = '\0';
    }
    return s;
}

RIFT_TEST(dev_default_keeps_a_subscriber_that_falls_far_behind) {
    devfix f;
    CHECK(devfix_start(&f));
    char ca[700];
    snprintf(ca, sizeof(ca), "%s/rift-data/tls/ca.pem", f.dir);
    char *token = slurp(f.dir, "rift-data/dev.token");
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = f.p.address;
    s.ca_file = ca;
    s.server_name = "localhost";
    s.token = token;
    rift_client *c = NULL;
    rift_client_sub *sub = NULL;
    rift_error err;
    CHECK_OK(rift_client_new(&c, &s, &err));
    CHECK_OK(rift_client_subscribe(c, "demo.backlog", 12, NULL, 0, &sub, &err));
    /* 60,000 messages while this subscriber reads nothing: about 26,000
     * fit the client's 2 MiB window, the rest wait in riftd's queue for
     * the subscriber — far more than a file's default of 1,024. */
    enum {
        N = 60000
    };
    char *out = NULL;
    int pub_rc =
        DEVFIX_CLI(&f, &out, NULL, "bench", "pub", "--subject", "demo.backlog",
                   "--msgs", "60000", "--size", "64", "--progress", "off");
    size_t got = 0;
    int recv_rc = 0;
    while (got < N) {
        rift_msg *m;
        recv_rc = rift_client_sub_recv(sub, 10000000000LL, &m, &err);
        if (recv_rc != 0) {
            fprintf(stderr, "  after %zu messages: %s\n", got, err.text);
            break;
        }
        rift_msg_unref(m);
        got++;
    }
    rift_client_sub_close(sub);
    rift_client_del(c);
    free(token);
    free(out);
    int rc = devfix_stop(&f);
    CHECK_EQ_INT(pub_rc, 0);
    CHECK_EQ_INT(recv_rc, 0);
    CHECK_EQ_INT((int)got, N);
    CHECK_EQ_INT(rc, 0);
}
