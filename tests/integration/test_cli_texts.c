/*
 * test_cli_texts.c — what the rift CLI says when something is wrong or
 * empty (integration tests, against riftd's development default):
 * subjects, replies and queue groups checked locally and named; usage
 * errors exit 2; `rift sub '>'` without riftd's control traffic unless
 * --all; --raw --sep; stream texts in the CLI's words and units; a replay
 * that goes on past an oversized record; consumer settings that differ,
 * an empty fetch at max pending, a filter outside the stream, fetch
 * --wait; the example program finding ./rift-data.
 */
// labels: threads
#include "devfix.h"
#include "procs.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI DEVFIX_CLI

static bool has(const char *s, const char *needle) {
    bool ok = s != NULL && strstr(s, needle) != NULL;
    if (!ok) {
        fprintf(stderr, "  expected \"%s\" in:\n%s\n", needle,
                s ? s : "(nothing)");
    }
    return ok;
}

RIFT_TEST(subjects_and_usage_errors_are_named) {
    devfix f;
    CHECK(devfix_start(&f));
    char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL;
    char *e6 = NULL;
    int r1 = CLI(&f, NULL, &e1, "pub", "a..b", "x");
    int r2 = CLI(&f, NULL, &e2, "pub", "a", "x", "--reply", "b.*");
    int r3 = CLI(&f, NULL, &e3, "sub", "x", "--queue", "");
    int r4 = CLI(&f, NULL, &e4, "req", "svc.x", "hi", "--timeout", "0");
    int r5 = CLI(&f, NULL, &e5, "pub", "a.*", "x");
    int r6 = CLI(&f, NULL, &e6, "consumer", "open", "events", "x", "--start",
                 "seq:0");
    int rc = devfix_stop(&f);
    CHECK_EQ_INT(r1, 2);
    CHECK(has(e1, "rift pub: subject \"a..b\" is not a valid subject: it has "
                  "an empty token (two dots in a row)"));
    CHECK_EQ_INT(r2, 2);
    CHECK(has(e2, "rift pub: --reply \"b.*\" has a wildcard token; it must be "
                  "a literal subject"));
    CHECK_EQ_INT(r3, 2);
    CHECK(has(e3, "rift sub: queue group \"\" is not valid"));
    CHECK_EQ_INT(r4, 2);
    CHECK(has(e4, "rift req: request timeout must be 1..120000 ms"));
    CHECK_EQ_INT(r5, 2);
    CHECK(has(e5, "rift pub: subject \"a.*\" has a wildcard token"));
    CHECK_EQ_INT(r6, 2);
    CHECK(has(e6, "--start seq:N expects N >= 1"));
    free(e1);
    free(e2);
    free(e3);
    free(e4);
    free(e5);
    free(e6);
    CHECK_EQ_INT(rc, 0);
}

/* ---- rift sub and riftd's control traffic ---- */

typedef struct seen {
    devfix *f;
    rift_proc *subs[3];
} seen;

/* Runs `rift status` and publishes until every subscriber printed the
 * publication (their start races the first one). */
static bool all_seen(void *arg) {
    seen *s = arg;
    if (CLI(s->f, NULL, NULL, "status") != 0 ||
        CLI(s->f, NULL, NULL, "pub", "demo.hello", "hi") != 0) {
        return false;
    }
    bool all = true;
    for (int i = 0; i < 3; i++) {
        all = all && rift_proc_wait_text(s->subs[i], false, "hi", 200);
    }
    return all;
}

static char *stop_and_read(rift_proc *p, int *rc) {
    *rc = rift_proc_stop(p, SIGTERM);
    return rift_proc_read(p->out);
}

RIFT_TEST(sub_leaves_out_control_traffic_unless_asked) {
    devfix f;
    CHECK(devfix_start(&f));
    rift_proc plain, all, raw;
    const char *a1[] = {"sub", ">", NULL};
    const char *a2[] = {"sub", ">", "--all", NULL};
    const char *a3[] = {"sub", "demo.hello", "--raw", "--sep", "\\n", NULL};
    CHECK(rift_proc_start(&plain, rift_proc_cli(), f.dir, "plain", a1, f.env,
                          NULL, 0));
    CHECK(rift_proc_start(&all, rift_proc_cli(), f.dir, "all", a2, f.env, NULL,
                          0));
    CHECK(rift_proc_start(&raw, rift_proc_cli(), f.dir, "raw", a3, f.env, NULL,
                          0));
    seen s = {&f, {&plain, &all, &raw}};
    bool got = rift_test_wait_until(all_seen, &s, RIFT_PROC_WAIT_MS);
    /* An explicit pattern shows the control namespace. */
    rift_proc ctl;
    const char *a4[] = {"sub", "rift.control.>", "--count", "1", NULL};
    CHECK(rift_proc_start(&ctl, rift_proc_cli(), f.dir, "ctl", a4, f.env, NULL,
                          0));
    bool ctl_seen = false;
    for (int i = 0; i < 100 && !ctl_seen; i++) {
        CLI(&f, NULL, NULL, "status");
        ctl_seen = rift_proc_wait_text(&ctl, false, "rift.control.status", 200);
    }
    int rc_p, rc_a, rc_r, rc_c;
    char *o_plain = stop_and_read(&plain, &rc_p);
    char *o_all = stop_and_read(&all, &rc_a);
    char *o_raw = stop_and_read(&raw, &rc_r);
    char *o_ctl = stop_and_read(&ctl, &rc_c);
    int rc = devfix_stop(&f);
    CHECK(got);
    CHECK(has(o_plain, "demo.hello: hi\n"));
    CHECK_MSG(strstr(o_plain, "rift.control.") == NULL &&
                  strstr(o_plain, "\n_INBOX.") == NULL &&
                  strncmp(o_plain, "_INBOX.", 7) != 0,
              "%s", o_plain);
    CHECK(has(o_all, "rift.control.status"));
    CHECK(has(o_all, "\n_INBOX."));
    /* --raw --sep '\n': payloads one per line. */
    bool lines = o_raw != NULL && *o_raw != '\0' && strlen(o_raw) % 3 == 0;
    for (size_t i = 0; lines && o_raw[i] != '\0'; i += 3) {
        lines = strncmp(o_raw + i, "hi\n", 3) == 0;
    }
    CHECK_MSG(lines, "%s", o_raw);
    CHECK(ctl_seen);
    CHECK(has(o_ctl, "rift.control.status"));
    free(o_plain);
    free(o_all);
    free(o_raw);
    free(o_ctl);
    CHECK_EQ_INT(rc_p | rc_a | rc_r, 0);
    CHECK_EQ_INT(rc, 0);
}

/* ---- Streams ---- */

/* `rift stream pub events events.big -` with |len| bytes of |fill|. */
static int pub_big(devfix *f, size_t len, char fill) {
    char *body = malloc(len);
    if (body == NULL) {
        return -1;
    }
    memset(body, fill, len);
    rift_proc p;
    const char *args[] = {"stream", "pub", "events", "events.big", "-", NULL};
    bool started = rift_proc_start(&p, rift_proc_cli(), f->dir, "big", args,
                                   f->env, body, len);
    free(body);
    return started ? rift_proc_wait(&p, RIFT_PROC_WAIT_MS) : -1;
}

RIFT_TEST(stream_texts_units_and_replay_past_a_big_record) {
    devfix f;
    CHECK(devfix_start(&f));
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.a", "one"), 0);
    CHECK_EQ_INT(pub_big(&f, 1048576, 'c'), 0);
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.b", "three"), 0);
    char *info = NULL, *list = NULL, *e1 = NULL, *e2 = NULL, *e3 = NULL;
    char *rep = NULL, *rep_err = NULL;
    int i1 = CLI(&f, &info, NULL, "stream", "info", "events");
    int i2 = CLI(&f, &list, NULL, "stream", "info");
    int i3 = CLI(&f, NULL, &e1, "stream", "info", "x");
    int p1 = CLI(&f, NULL, &e2, "stream", "pub", "nosuch", "a.b", "x");
    int p2 = CLI(&f, NULL, &e3, "stream", "pub", "events", "other.x", "x");
    int r1 = CLI(&f, &rep, &rep_err, "stream", "replay", "events", "--raw",
                 "--sep", "\\n");
    int rc = devfix_stop(&f);
    CHECK_EQ_INT(i1 | i2, 0);
    CHECK(has(info, "bytes              1.0 MiB"));
    CHECK(has(info, "max_bytes          64.0 MiB"));
    CHECK(has(list, " MiB "));
    CHECK_EQ_INT(i3, 1);
    CHECK(has(e1, "rift stream: unknown stream \"x\"; rift stream info lists "
                  "the streams"));
    CHECK_EQ_INT(p1, 1);
    CHECK(has(e2, "rift stream: unknown stream \"nosuch\"; rift stream info "
                  "lists the streams"));
    CHECK_EQ_INT(p2, 1);
    CHECK(has(e3, "\"other.x\" is not among the subjects of events"));
    /* The 1 MiB record does not fit a control answer: skipped with a
     * note, and the replay goes on to record 3 (exit 1: incomplete). */
    CHECK_EQ_INT(r1, 1);
    CHECK_MSG(rep != NULL && strcmp(rep, "one\nthree\n") == 0, "%s", rep);
    CHECK(has(rep_err, "record 2 does not fit a control answer"));
    CHECK(has(rep_err, "skipped"));
    free(info);
    free(list);
    free(e1);
    free(e2);
    free(e3);
    free(rep);
    free(rep_err);
    CHECK_EQ_INT(rc, 0);
}

/* ---- Consumers ---- */

RIFT_TEST(consumer_texts_and_fetch_wait) {
    devfix f;
    CHECK(devfix_start(&f));
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p1"), 0);
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p2"), 0);
    char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *o1 = NULL;
    int a1 = CLI(&f, NULL, NULL, "consumer", "open", "events", "w",
                 "--max-pending", "1");
    /* Reopening with other settings names each difference. */
    int a2 = CLI(&f, NULL, &e1, "consumer", "open", "events", "w", "--filter",
                 "events.x", "--max-pending", "1");
    int a3 = CLI(&f, NULL, NULL, "consumer", "open", "events", "v", "--start",
                 "new");
    int a4 = CLI(&f, NULL, &e2, "consumer", "open", "events", "v", "--start",
                 "first");
    /* The first fetch fills max pending; the second says so. */
    int b1 = CLI(&f, &o1, NULL, "consumer", "fetch", "events", "w");
    int b2 = CLI(&f, NULL, &e3, "consumer", "fetch", "events", "w");
    /* A filter outside the stream's subjects. */
    int c1 = CLI(&f, NULL, &e4, "consumer", "open", "events", "z", "--filter",
                 "other.>");
    /* fetch --wait: started before the record exists, gets it. */
    int d1 = CLI(&f, NULL, NULL, "consumer", "open", "events", "late",
                 "--start", "new");
    rift_proc waiter;
    const char *wargs[] = {"consumer", "fetch", "events", "late", "--wait",
                           "60s",      "--raw", "--sep",  "\\n",  NULL};
    CHECK(rift_proc_start(&waiter, rift_proc_cli(), f.dir, "waiter", wargs,
                          f.env, NULL, 0));
    int d2 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p3");
    int d3 = rift_proc_wait(&waiter, RIFT_PROC_WAIT_MS);
    char *o2 = rift_proc_read(waiter.out);
    /* --wait gives up after the duration with the usual note. */
    char *e5 = NULL;
    int d4 = CLI(&f, NULL, &e5, "consumer", "fetch", "events", "late", "--wait",
                 "300ms");
    int rc = devfix_stop(&f);
    CHECK_EQ_INT(a1, 0);
    CHECK_EQ_INT(a2, 1);
    CHECK(has(e1, "consumer already exists with different settings"));
    CHECK(has(e1, "w on events differs in: filter (it has >, you asked for "
                  "events.x)"));
    CHECK_EQ_INT(a3, 0);
    CHECK_EQ_INT(a4, 1);
    CHECK(has(e2, "start (it has new, you asked for first)"));
    CHECK_EQ_INT(b1, 0);
    CHECK(has(o1, "p1"));
    CHECK_EQ_INT(b2, 0);
    CHECK(has(e3, "nothing to fetch: 1 delivered records await "
                  "acknowledgement, the consumer's max pending (1)"));
    CHECK_EQ_INT(c1, 1);
    CHECK(has(e4, "--filter 'other.>' matches none of the subjects of stream "
                  "events (events.>)"));
    CHECK_EQ_INT(d1 | d2, 0);
    CHECK_EQ_INT(d3, 0);
    CHECK_MSG(o2 != NULL && strcmp(o2, "p3\n") == 0, "%s", o2);
    CHECK_EQ_INT(d4, 0);
    CHECK(has(e5, "nothing to fetch"));
    free(e1);
    free(e2);
    free(e3);
    free(e4);
    free(e5);
    free(o1);
    free(o2);
    CHECK_EQ_INT(rc, 0);
}

/* ---- The example program ---- */

RIFT_TEST(example_client_pubsub_finds_rift_data) {
    const char *bin = getenv("RIFT_BINARY_DIR");
    CHECK_MSG(bin && *bin, "RIFT_BINARY_DIR is not set");
    char path[4200];
    snprintf(path, sizeof(path), "%s/example_client_pubsub", bin);
    devfix f;
    CHECK(devfix_start(&f));
    char *out = NULL, *err = NULL;
    int r = rift_proc_run(path, f.dir, (const char *const[]){NULL}, f.env, &out,
                          &err);
    int rc = devfix_stop(&f);
    CHECK_MSG(r == 0, "example exited %d: %s", r, err);
    CHECK(has(out, "demo.greeting: hello #0\n"));
    CHECK(has(out, "demo.greeting: hello #4\n"));
    free(out);
    free(err);
    CHECK_EQ_INT(rc, 0);
}
