/*
 * test_riftd_cli.c — the rift CLI against a real riftd (integration
 * tests): the development default from an empty directory (riftd and the
 * CLI both run there; the CLI finds ./rift-data; pub/sub works; modes of
 * the data directory, token and keys), `rift status` as a table and as
 * JSON, `rift stream pub|info|replay` and `rift consumer
 * open|fetch|ack|info|delete` with start positions, and `rift certs init`.
 */
// labels: threads
#include "procs.h"
#include "rift/rift.h"
#include "test.h"

#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

/* A riftd on its development default in a fresh directory. */
typedef struct devfix {
    char *dir;
    char listen[96]; /* "RIFT_DEV_LISTEN=<address riftd bound>" */
    const char *env[2];
    rift_proc p;
} devfix;

static bool dev_start(devfix *f) {
    memset(f, 0, sizeof(*f));
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    /* riftd picks a free port; the CLI then gets the address it bound
     * through riftd's own override variable, which it honours (everything
     * else it finds in ./rift-data). */
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

/* Runs the CLI in the fixture's directory; returns its exit status. */
static int cli(devfix *f, char **out, char **err, const char *const *args) {
    return rift_proc_run(rift_proc_cli(), f->dir, args, f->env, out, err);
}

#define CLI(f, out, err, ...)                                                  \
 cli((f), (out), (err), (const char *const[]){__VA_ARGS__, NULL})

static int mode_of(const char *dir, const char *name) {
    char path[700];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

/* Publishes demo.hello until the background subscriber printed it (the
 * subscriber's start races the first publication). */
typedef struct pubsub {
    devfix *f;
    rift_proc *sub;
} pubsub;

static bool delivered(void *arg) {
    pubsub *ps = arg;
    if (CLI(ps->f, NULL, NULL, "pub", "demo.hello", "hi") != 0) {
        return false;
    }
    return rift_proc_wait_text(ps->sub, false, "demo.hello: hi", 200);
}

RIFT_TEST(dev_default_from_an_empty_directory) {
    devfix f;
    CHECK(dev_start(&f));
    int m_dir = mode_of(f.dir, "rift-data");
    int m_tok = mode_of(f.dir, "rift-data/dev.token");
    int m_key = mode_of(f.dir, "rift-data/tls/server.key");
    int m_cakey = mode_of(f.dir, "rift-data/tls/ca.key");
    int m_stream = mode_of(f.dir, "rift-data/streams/events");
    /* The banner follows the ready line: wait for its last line. */
    bool banner_end =
        rift_proc_wait_text(&f.p, true, "rift status", RIFT_PROC_WAIT_MS);
    char *log = rift_proc_read(f.p.err);
    bool banner = banner_end && log && strstr(log, "rift sub '>'") &&
                  strstr(log, "rift pub demo.hello hi") &&
                  strstr(log, "rift status") &&
                  strstr(log, "DEVELOPMENT CONFIGURATION");
    free(log);
    /* The banner's own commands: rift sub '>' and rift pub demo.hello hi,
     * run where riftd runs, with no connection flags. */
    rift_proc sub;
    const char *sub_args[] = {"sub", ">", "--count", "1", NULL};
    CHECK(rift_proc_start(&sub, rift_proc_cli(), f.dir, "sub", sub_args, f.env,
                          NULL, 0));
    pubsub ps = {&f, &sub};
    bool got = rift_test_wait_until(delivered, &ps, RIFT_PROC_WAIT_MS);
    int sub_rc = rift_proc_wait(&sub, RIFT_PROC_WAIT_MS);
    /* The bundled echo plugin answers, and status lists both plugins. */
    char *echo = NULL, *status = NULL;
    int req_rc = CLI(&f, &echo, NULL, "req", "demo.echo", "hi");
    int st_rc = CLI(&f, &status, NULL, "status");
    bool plugins = status && strstr(status, "echo ") &&
                   strstr(status, "stats ") && strstr(status, "running");
    bool written =
        mode_of(f.dir, "rift-data/plugins/echo/init.lua") > 0 &&
        mode_of(f.dir, "rift-data/plugins/stats/lua/counter.lua") > 0;
    if (!plugins) {
        fprintf(stderr, "  status:\n%s\n", status);
    }
    bool echoed = echo && strcmp(echo, "hi\n") == 0;
    free(echo);
    free(status);
    int rc = dev_stop(&f);
    CHECK_EQ_INT(m_dir, 0700);
    CHECK_EQ_INT(m_tok, 0600);
    CHECK_EQ_INT(m_key, 0600);
    CHECK_EQ_INT(m_cakey, 0600);
    CHECK(m_stream > 0);
    CHECK(banner);
    CHECK(got);
    CHECK_EQ_INT(sub_rc, 0);
    CHECK_EQ_INT(req_rc, 0);
    CHECK(echoed);
    CHECK_EQ_INT(st_rc, 0);
    CHECK(plugins);
    CHECK(written);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(status_table_and_json) {
    devfix f;
    CHECK(dev_start(&f));
    char *table = NULL, *json = NULL, *err = NULL;
    int r1 = CLI(&f, &table, NULL, "status");
    int r2 = CLI(&f, &json, NULL, "status", "--json");
    int r3 = CLI(&f, NULL, &err, "status", "--bogus");
    char want[100];
    snprintf(want, sizeof(want), "listening    %s (QUIC)", f.p.address);
    int rc = dev_stop(&f);
    bool ok_table = table && strstr(table, "riftd        " RIFT_VERSION) &&
                    strstr(table, want) &&
                    strstr(table, "config       (built-in development "
                                  "configuration) (revision runtime)") &&
                    strstr(table, "connections  1 (dev 1)") &&
                    strstr(table, "STREAM") && strstr(table, "events") &&
                    !strstr(table, "{");
    json_t *v = json ? json_loads(json, 0, NULL) : NULL;
    bool ok_json = json_is_object(v) &&
                   strcmp(json_string_value(json_object_get(v, "version")),
                          RIFT_VERSION) == 0 &&
                   json_is_array(json_object_get(v, "streams")) &&
                   strcmp(json_string_value(json_object_get(v, "address")),
                          f.p.address) == 0;
    if (!ok_table || !ok_json) {
        fprintf(stderr, "  table:\n%s\n  json:\n%s\n", table, json);
    }
    json_decref(v);
    free(table);
    free(json);
    bool ok_usage = err && strstr(err, "unexpected argument '--bogus'");
    free(err);
    CHECK_EQ_INT(r1, 0);
    CHECK(ok_table);
    CHECK_EQ_INT(r2, 0);
    CHECK(ok_json);
    CHECK_EQ_INT(r3, 2);
    CHECK(ok_usage);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(stream_commands) {
    devfix f;
    CHECK(dev_start(&f));
    char *o1 = NULL, *o2 = NULL, *o3 = NULL, *o4 = NULL, *o5 = NULL;
    char *o6 = NULL, *o7 = NULL, *e1 = NULL, *e2 = NULL;
    int p1 = CLI(&f, &o1, NULL, "stream", "pub", "events", "events.a", "one");
    int p2 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.b", "two");
    int p3 = CLI(&f, NULL, NULL, "stream", "pub", "events", "events.c", "three",
                 "--reply", "_INBOX.r");
    int bad = CLI(&f, NULL, &e1, "stream", "pub", "events", "other.x", "no");
    int r1 = CLI(&f, &o2, NULL, "stream", "replay", "events");
    int r2 = CLI(&f, &o3, NULL, "stream", "replay", "events", "--from", "2",
                 "--limit", "1");
    int r3 = CLI(&f, &o4, NULL, "stream", "replay", "events", "--raw");
    int r4 = CLI(&f, &o5, NULL, "stream", "replay", "events", "--json",
                 "--limit", "1");
    int i1 = CLI(&f, &o6, NULL, "stream", "info");
    int i2 = CLI(&f, &o7, NULL, "stream", "info", "events");
    int i3 = CLI(&f, NULL, &e2, "stream", "info", "nope");
    int rc = dev_stop(&f);
    bool ok_pub =
        o1 && strncmp(o1, "events: stored as sequence 1 at ", 32) == 0;
    bool ok_bad = e1 && strstr(e1, "rift stream: subject does not match this "
                                   "stream");
    /* "#SEQ TIME SUBJECT: PAYLOAD", the reply shown when there is one. */
    bool ok_replay = o2 && strstr(o2, "#1 ") &&
                     strstr(o2, "Z events.a: one\n") && strstr(o2, "#2 ") &&
                     strstr(o2, " events.b: two\n") &&
                     strstr(o2, " events.c (reply _INBOX.r): three\n");
    bool ok_range = o3 && strstr(o3, "events.b: two") && !strstr(o3, "one") &&
                    !strstr(o3, "three");
    bool ok_raw = o4 && strcmp(o4, "onetwothree") == 0;
    json_t *rec = o5 ? json_loads(o5, 0, NULL) : NULL;
    bool ok_json =
        json_integer_value(json_object_get(rec, "seq")) == 1 &&
        strcmp(json_string_value(json_object_get(rec, "payload")), "b25l") == 0;
    json_decref(rec);
    bool ok_list = o6 && strstr(o6, "STREAM") && strstr(o6, "events") &&
                   strstr(o6, "file");
    bool ok_info = o7 && strstr(o7, "subjects           events.>") &&
                   strstr(o7, "messages           3") &&
                   strstr(o7, "sequences          1..3") &&
                   strstr(o7, "storage            file "
                              "rift-data/streams/events");
    bool ok_unknown = e2 && strstr(e2, "unknown stream \"nope\"");
    if (!(ok_replay && ok_info && ok_raw)) {
        fprintf(stderr, "  replay:\n%s\n  info:\n%s\n  raw: %s\n", o2, o7, o4);
    }
    free(o1);
    free(o2);
    free(o3);
    free(o4);
    free(o5);
    free(o6);
    free(o7);
    free(e1);
    free(e2);
    CHECK_EQ_INT(p1 | p2 | p3, 0);
    CHECK(ok_pub);
    CHECK_EQ_INT(bad, 1);
    CHECK(ok_bad);
    CHECK_EQ_INT(r1 | r2 | r3 | r4, 0);
    CHECK(ok_replay);
    CHECK(ok_range);
    CHECK(ok_raw);
    CHECK(ok_json);
    CHECK_EQ_INT(i1 | i2, 0);
    CHECK(ok_list);
    CHECK(ok_info);
    CHECK_EQ_INT(i3, 1);
    CHECK(ok_unknown);
    CHECK_EQ_INT(rc, 0);
}

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

RIFT_TEST(replay_splits_large_records_across_answers) {
    devfix f;
    CHECK(dev_start(&f));
    /* Two 700 KB records: one control answer (about 1 MiB) holds one of
     * them in base64, so the CLI asks twice. A 1 MiB record never fits. */
    CHECK_EQ_INT(pub_big(&f, 700000, 'a'), 0);
    CHECK_EQ_INT(pub_big(&f, 700000, 'b'), 0);
    char *raw = NULL;
    int r1 = CLI(&f, &raw, NULL, "stream", "replay", "events", "--raw");
    size_t raw_len = raw ? strlen(raw) : 0;
    bool order = raw_len == 1400000 && raw[0] == 'a' && raw[699999] == 'a' &&
                 raw[700000] == 'b' && raw[1399999] == 'b';
    free(raw);
    CHECK_EQ_INT(pub_big(&f, 1048576, 'c'), 0);
    char *err = NULL;
    int r2 = CLI(&f, NULL, &err, "stream", "replay", "events", "--from", "3");
    int rc = dev_stop(&f);
    bool too_big = err && strstr(err, "record 3 does not fit a control "
                                      "answer (about 1 MiB); skipped, read "
                                      "it with a consumer");
    if (!too_big) {
        fprintf(stderr, "  replay --from 3 said: %s\n", err);
    }
    free(err);
    CHECK_EQ_INT(r1, 0);
    CHECK_EQ_INT(raw_len, 1400000);
    CHECK(order);
    CHECK_EQ_INT(r2, 1);
    CHECK(too_big);
    CHECK_EQ_INT(rc, 0);
}

/* Runs `rift consumer info events NAME --json` and returns one field. */
static long long consumer_field(devfix *f, const char *name,
                                const char *field) {
    char *out = NULL;
    long long v = -1;
    if (CLI(f, &out, NULL, "consumer", "info", "events", name, "--json") == 0) {
        json_t *j = json_loads(out, 0, NULL);
        v = json_integer_value(json_object_get(j, field));
        json_decref(j);
    }
    free(out);
    return v;
}

RIFT_TEST(consumer_commands_and_start_positions) {
    devfix f;
    CHECK(dev_start(&f));
    for (int i = 1; i <= 3; i++) {
        char payload[8];
        snprintf(payload, sizeof(payload), "p%d", i);
        CHECK_EQ_INT(
            CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", payload),
            0);
    }
    char *o1 = NULL, *o2 = NULL, *o3 = NULL, *o4 = NULL, *o5 = NULL;
    char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL;
    /* The wire's own consumer: a sequence start. */
    int a1 = CLI(&f, &o1, NULL, "consumer", "open", "events", "w", "--filter",
                 "events.>", "--ack-wait", "60000");
    int a2 =
        CLI(&f, &o2, NULL, "consumer", "fetch", "events", "w", "--count", "2");
    int a3 = CLI(&f, NULL, NULL, "consumer", "ack", "events", "w", "1");
    int a4 = CLI(&f, NULL, &e1, "consumer", "ack", "events", "w", "1");
    long long pending = consumer_field(&f, "w", "pending");
    long long next = consumer_field(&f, "w", "next_sequence");
    /* NATS Streaming start positions through the control commands. */
    int b1 = CLI(&f, NULL, NULL, "consumer", "open", "events", "last",
                 "--start", "last");
    long long last_start = consumer_field(&f, "last", "start_sequence");
    int b2 = CLI(&f, NULL, NULL, "consumer", "open", "events", "new", "--start",
                 "new");
    int b3 = CLI(&f, NULL, NULL, "consumer", "open", "events", "first",
                 "--start", "first");
    int b4 = CLI(&f, NULL, NULL, "consumer", "open", "events", "since",
                 "--start", "since:1h");
    int b5 = CLI(&f, NULL, NULL, "consumer", "open", "events", "future",
                 "--start", "time:2999-01-01T00:00:00Z");
    int b6 = CLI(&f, NULL, NULL, "consumer", "open", "events", "past",
                 "--start", "time:0");
    /* RFC 3339 with a fraction and an offset, kept in UTC milliseconds. */
    int b7 = CLI(&f, NULL, NULL, "consumer", "open", "events", "offset",
                 "--start", "time:2026-01-01T00:00:00.5+01:00");
    long long offset_ms = consumer_field(&f, "offset", "start_time_ms");
    long long new_start = consumer_field(&f, "new", "start_sequence");
    long long first_start = consumer_field(&f, "first", "start_sequence");
    long long since_start = consumer_field(&f, "since", "start_sequence");
    long long future_start = consumer_field(&f, "future", "start_sequence");
    long long past_start = consumer_field(&f, "past", "start_sequence");
    /* A new record reaches "new" (and only it is delivered). */
    CHECK_EQ_INT(
        CLI(&f, NULL, NULL, "stream", "pub", "events", "events.x", "p4"), 0);
    int c1 = CLI(&f, &o3, NULL, "consumer", "fetch", "events", "new", "--count",
                 "10", "--ack");
    /* Reopening with other settings is refused; deletion frees the name. */
    int d1 = CLI(&f, NULL, &e2, "consumer", "open", "events", "last", "--start",
                 "first");
    int d2 = CLI(&f, &o4, NULL, "consumer", "delete", "events", "last");
    int d3 = CLI(&f, NULL, &e3, "consumer", "info", "events", "last");
    int d4 = CLI(&f, &o5, NULL, "consumer", "open", "events", "last", "--start",
                 "first");
    int d5 = CLI(&f, NULL, &e4, "consumer", "delete", "events", "last",
                 "--identity", "nobody");
    int usage = CLI(&f, NULL, NULL, "consumer", "open", "events", "x",
                    "--start", "sometime");
    int rc = dev_stop(&f);
    bool ok_open = o1 && strstr(o1, "consumer w on events: open (filter "
                                    "events.>, start sequence 1)");
    bool ok_fetch = o2 && strstr(o2, "#1 (delivery 1) ") &&
                    strstr(o2, " events.x: p1\n") && strstr(o2, "#2 ") &&
                    !strstr(o2, "p3");
    bool ok_reack = e1 && strstr(e1, "sequence is not pending "
                                     "acknowledgement");
    bool ok_new = o3 && strstr(o3, "#4 (delivery 1)") && strstr(o3, "p4") &&
                  !strstr(o3, "p3");
    bool ok_differs = e2 && strstr(e2, "consumer already exists with "
                                       "different settings");
    bool ok_deleted = o4 && strstr(o4, "consumer last on events: deleted");
    bool ok_gone = e3 && strstr(e3, "consumer does not exist");
    bool ok_fresh = o5 && strstr(o5, "start           first (sequence 1)");
    bool ok_identity = e4 && strstr(e4, "unknown identity \"nobody\"");
    if (!(ok_fetch && ok_new && ok_fresh)) {
        fprintf(stderr, "  fetch:\n%s\n  new:\n%s\n  fresh:\n%s\n", o2, o3, o5);
    }
    free(o1);
    free(o2);
    free(o3);
    free(o4);
    free(o5);
    free(e1);
    free(e2);
    free(e3);
    free(e4);
    CHECK_EQ_INT(a1 | a2 | a3, 0);
    CHECK(ok_open);
    CHECK(ok_fetch);
    CHECK_EQ_INT(a4, 1);
    CHECK(ok_reack);
    CHECK_EQ_INT(pending, 1);
    CHECK_EQ_INT(next, 3);
    CHECK_EQ_INT(b1 | b2 | b3 | b4 | b5 | b6 | b7, 0);
    CHECK_EQ_INT(offset_ms, 1767222000500LL);
    CHECK_EQ_INT(last_start, 3);
    CHECK_EQ_INT(new_start, 4);
    CHECK_EQ_INT(first_start, 1);
    CHECK_EQ_INT(since_start, 1);
    CHECK_EQ_INT(future_start, 4);
    CHECK_EQ_INT(past_start, 1);
    CHECK_EQ_INT(c1, 0);
    CHECK(ok_new);
    CHECK_EQ_INT(d1, 1);
    CHECK(ok_differs);
    CHECK_EQ_INT(d2, 0);
    CHECK(ok_deleted);
    CHECK_EQ_INT(d3, 1);
    CHECK(ok_gone);
    CHECK_EQ_INT(d4, 0);
    CHECK(ok_fresh);
    CHECK_EQ_INT(d5, 1);
    CHECK(ok_identity);
    CHECK_EQ_INT(usage, 2);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(certs_init) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char *o1 = NULL, *e2 = NULL, *o3 = NULL;
    int r1 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"certs", "init", NULL}, NULL,
                           &o1, NULL);
    int m_data = mode_of(dir, "rift-data");
    int m_tls = mode_of(dir, "rift-data/tls");
    int m_key = mode_of(dir, "rift-data/tls/server.key");
    int m_cakey = mode_of(dir, "rift-data/tls/ca.key");
    int m_cert = mode_of(dir, "rift-data/tls/server.pem");
    int r2 = rift_proc_run(rift_proc_cli(), dir,
                           (const char *const[]){"certs", "init", NULL}, NULL,
                           NULL, &e2);
    int r3 = rift_proc_run(
        rift_proc_cli(), dir,
        (const char *const[]){"certs", "init", "--dir", "other", "--name",
                              "rift.example", "--name", "10.0.0.7", "--days",
                              "30", "--force", NULL},
        NULL, &o3, NULL);
    int m_other = mode_of(dir, "other/ca.pem");
    int r4 = rift_proc_run(
        rift_proc_cli(), dir,
        (const char *const[]){"certs", "init", "--days", "0", NULL}, NULL, NULL,
        NULL);
    rift_test_rmdir(dir);
    bool ok1 = o1 && strstr(o1, "wrote rift-data/tls/ca.pem") &&
               strstr(o1, "clients trust rift-data/tls/ca.pem");
    bool ok2 = e2 && strstr(e2, "already exists (--force replaces it, and "
                                "the CA; rift certs server replaces only the "
                                "server certificate)");
    bool ok3 = o3 &&
               strstr(o3, "server names: localhost, 127.0.0.1, ::1, "
                          "rift.example, 10.0.0.7") &&
               strstr(o3, "valid for 30 days");
    free(o1);
    free(e2);
    free(o3);
    CHECK_EQ_INT(r1, 0);
    CHECK(ok1);
    CHECK_EQ_INT(m_data, 0700);
    CHECK_EQ_INT(m_tls, 0700);
    CHECK_EQ_INT(m_key, 0600);
    CHECK_EQ_INT(m_cakey, 0600);
    CHECK_EQ_INT(m_cert, 0644);
    CHECK_EQ_INT(r2, 1);
    CHECK(ok2);
    CHECK_EQ_INT(r3, 0);
    CHECK(ok3);
    CHECK(m_other > 0);
    CHECK_EQ_INT(r4, 2);
}
