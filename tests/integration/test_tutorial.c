/*
 * test_tutorial.c — docs/tutorial.md, run as printed (integration tests):
 * every ```sh block becomes part of one shell script, in order, and every
 * ```lua file=NAME block is written to NAME at its place in the script;
 * the script then runs in a fresh directory against the built riftd and
 * rift, and its output must show what the page says it shows. A tutorial
 * edit that breaks a step fails here.
 */
#include "procs.h"
#include "test.h"

#include "common/common.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct script {
    char *text;
    size_t len, cap;
    int sh_blocks;
    int file_blocks;
} script;

static void add(script *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(script *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = (s->cap + (size_t)n + 1) * 2;
        char *t = realloc(s->text, cap);
        if (t == NULL) {
            return;
        }
        s->text = t;
        s->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(s->text + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* The directory part of a program path, for PATH. */
static void dir_of(const char *prog, char *out, size_t size) {
    snprintf(out, size, "%s", prog);
    char *slash = strrchr(out, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
}

/*
 * Turns the page into a script. A fence line "```sh" opens a block that
 * is run; "```lua file=NAME" one that is saved as NAME (through a quoted
 * here-document, so nothing in it is expanded); any other fence opens a
 * block that is only shown.
 */
static void build_script(script *s, const char *doc) {
    const char *p = doc;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        const char *next = eol ? eol + 1 : p + n;
        if (n < 3 || strncmp(p, "```", 3) != 0) {
            p = next;
            continue;
        }
        char info[256];
        snprintf(info, sizeof(info), "%.*s", (int)(n - 3), p + 3);
        const char *body = next;
        const char *end = body;
        while (*end != '\0' && strncmp(end, "```", 3) != 0) {
            const char *e = strchr(end, '\n');
            end = e ? e + 1 : end + strlen(end);
        }
        int body_len = (int)(end - body);
        if (strcmp(info, "sh") == 0) {
            add(s, "%.*s", body_len, body);
            s->sh_blocks++;
        } else if (strncmp(info, "lua file=", 9) == 0) {
            const char *name = info + 9;
            add(s,
                "mkdir -p \"$(dirname '%s')\"\n"
                "cat > '%s' <<'RIFT_TUTORIAL_EOF'\n%.*sRIFT_TUTORIAL_EOF\n",
                name, name, body_len, body);
            s->file_blocks++;
        }
        const char *close = strchr(end, '\n');
        p = close ? close + 1 : end + strlen(end);
    }
}

RIFT_TEST(tutorial_runs_as_printed) {
    const char *src = getenv("RIFT_SOURCE_DIR");
    CHECK(src != NULL);
    CHECK(rift_proc_riftd()[0] != '\0' && rift_proc_cli()[0] != '\0');
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/tutorial.md", src);
    char *doc = rift_proc_read(path);
    CHECK_MSG(doc != NULL, "cannot read %s", path);

    char cli_dir[2048], riftd_dir[2048];
    dir_of(rift_proc_cli(), cli_dir, sizeof(cli_dir));
    dir_of(rift_proc_riftd(), riftd_dir, sizeof(riftd_dir));
    int port = rift_test_free_udp_port();
    CHECK(port > 0);

    script s = {0};
    /* The page's own "export PATH" is shown, not run: the programs under
     * test are these. RIFT_SERVER picks a free port (the page keeps a
     * value already set). Whatever happens, the riftd the page starts in
     * the background does not outlive the script. */
    add(&s,
        "set -eu\n"
        "PATH='%s:%s':\"$PATH\"; export PATH\n"
        "RIFT_SERVER=127.0.0.1:%d; export RIFT_SERVER\n"
        "RIFTD_PID=\n"
        "trap '[ -z \"$RIFTD_PID\" ] || kill \"$RIFTD_PID\" 2>/dev/null "
        "|| true' EXIT\n",
        cli_dir, riftd_dir, port);
    build_script(&s, doc);
    free(doc);
    /* The page must still hold its steps; a page whose blocks lost their
     * markers would otherwise pass by running nothing. */
    CHECK(s.sh_blocks >= 8);
    CHECK_EQ_INT(s.file_blocks, 2);

    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    CHECK(rift_proc_write_file(dir, "tutorial.sh", s.text));
    free(s.text);

    rift_proc p;
    CHECK(rift_proc_start(&p, "/bin/sh", dir, "tutorial",
                          (const char *const[]){"tutorial.sh", NULL}, NULL,
                          NULL, 0));
    int rc = rift_proc_wait(&p, 120000);
    char *out = rift_proc_read(p.out);
    char *err = rift_proc_read(p.err);
    CHECK(out != NULL && err != NULL);
    CHECK_MSG(rc == 0,
              "tutorial script exited %d\n--- stdout\n%s--- stderr\n%s", rc,
              out, err);

    /* What the page says each step prints. */
    static const char *const stdout_has[] = {
        "configuration OK",
        "rift: messaging QUIC on 127.0.0.1:",
        "consumer audit-log on orders: open (filter orders.>",
        "stored as #1\n",
        "#1 (delivery 1) ",
        " orders.created: {\"id\":1,\"item\":\"book\"}\n",
        "refused (exit 1)\n",
        "rift: stopped",
    };
    for (size_t i = 0; i < sizeof(stdout_has) / sizeof(stdout_has[0]); i++) {
        CHECK_MSG(strstr(out, stdout_has[i]) != NULL,
                  "missing \"%s\" in\n%s--- stderr\n%s", stdout_has[i], out,
                  err);
    }
    CHECK(strstr(err, "rift pub: publication not permitted\n") != NULL);
    CHECK(strstr(err, "authentication failed\n") != NULL);
    /* Both refusals were refusals, nothing more: exactly two. */
    size_t refused = 0;
    for (const char *q = out; (q = strstr(q, "refused (exit 1)")); q++) {
        refused++;
    }
    CHECK_EQ_INT((int)refused, 2);
    free(out);
    free(err);
    rift_test_rmdir(dir);
}
