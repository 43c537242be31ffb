/*
 * test_bench_cli.c — `rift bench` against an in-process protocol server
 * (integration tests): every scenario runs as a CLI process with small
 * --msgs and appends its CSV row, which must carry the 23 columns of
 * docs/performance.md with impl=rift, transport=quic, the counts the
 * scenario promises, ordered latency percentiles and the server CPU column
 * (--server-pid is this process, which hosts the server); pairings of
 * separate processes (sub + pub, reply + req); the exit statuses (0 clean,
 * 3 row written but messages lost, 1 failure without a row, 2 usage); and
 * the same scenarios against the independent Quinn stub server
 * (tests/quinn-peer), which speaks protocol v1 only.
 */
// labels: threads
#include "quinn_stub.h"
#include "test.h"

#include "quic/certgen.h"
#include "rift/broker.h"
#include "rift/server.h"
#include "rift/stream.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "bench-cli-token-0123456789abcdef0123"

#define CSV_HEADER                                                             \
 "impl,transport,label,scenario,size,msgs,pubs,subs,batch,seconds,"            \
 "msgs_per_s,mb_per_s,lat_what,p50_us,p95_us,p99_us,max_us,"                   \
 "client_min_mps,client_avg_mps,client_max_mps,errors,client_cpu_s,"           \
 "server_cpu_s"

/* ---- Server fixture ---- */

typedef struct fix {
    char *tmp;
    char ca[4200], cert[4200], key[4200], csv[4200];
    char addr[64];
    char pid[32];
    const char *token;
    quinn_stub stub; /* when stub.pid > 0, the server is the Quinn stub */
    rift_broker *broker;
    rift_stream *mem;  /* memory, bench.mem.> */
    rift_stream *file; /* file, synced, bench.file.> */
    rift_server *srv;
} fix;

static bool fix_up(fix *f) {
    memset(f, 0, sizeof(*f));
    f->tmp = rift_test_tmpdir();
    if (f->tmp == NULL) {
        return false;
    }
    char dir[4000], path[4300];
    snprintf(dir, sizeof(dir), "%s/certs", f->tmp);
    rift_error err;
    if (rift_certgen_dev(dir, NULL, &err) != 0) {
        fprintf(stderr, "certgen: %s\n", err.text);
        return false;
    }
    snprintf(f->ca, sizeof(f->ca), "%s/" RIFT_CERTGEN_CA_CERT, dir);
    snprintf(f->cert, sizeof(f->cert), "%s/" RIFT_CERTGEN_SERVER_CERT, dir);
    snprintf(f->key, sizeof(f->key), "%s/" RIFT_CERTGEN_SERVER_KEY, dir);
    snprintf(f->csv, sizeof(f->csv), "%s/results.csv", f->tmp);
    /* A list, as compare.sh's cluster rows pass it: this process (the
     * server) and its parent, summed. */
    snprintf(f->pid, sizeof(f->pid), "%d,%d", (int)getpid(), (int)getppid());
    f->token = TOKEN;
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    /* Deep queues, as compare.sh configures riftd: the benchmark counts
     * every message instead of losing a slow subscriber. */
    bs.subscription_capacity = 1000000;
    if (rift_broker_new(&f->broker, &bs, &err) != 0) {
        fprintf(stderr, "broker: %s\n", err.text);
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *mem_subjects[] = {"bench.mem.>"};
    ss.subjects = mem_subjects;
    ss.subjects_count = 1;
    if (rift_stream_new(&f->mem, &ss, &err) != 0) {
        fprintf(stderr, "stream: %s\n", err.text);
        return false;
    }
    const char *file_subjects[] = {"bench.file.>"};
    snprintf(path, sizeof(path), "%s/file", f->tmp);
    ss.subjects = file_subjects;
    ss.storage_path = path;
    ss.sync_on_write = true;
    if (rift_stream_new(&f->file, &ss, &err) != 0) {
        fprintf(stderr, "stream: %s\n", err.text);
        return false;
    }
    static const char *const grants[] = {"bench.>", "_INBOX.>"};
    rift_server_identity id = {
        .name = "bench",
        .name_len = 5,
        .token = TOKEN,
        .token_len = strlen(TOKEN),
        .publish = grants,
        .publish_count = 2,
        .subscribe = grants,
        .subscribe_count = 2,
    };
    rift_server_stream streams[] = {{"mem", 3, f->mem}, {"file", 4, f->file}};
    rift_server_settings s;
    rift_server_settings_default(&s);
    s.cert_file = f->cert;
    s.key_file = f->key;
    s.identities = &id;
    s.identity_count = 1;
    s.streams = streams;
    s.stream_count = 2;
    s.max_streams_per_connection = 1024;
    if (rift_server_new(&f->srv, f->broker, &s, &err) != 0 ||
        rift_server_start(f->srv, "127.0.0.1:0", &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return false;
    }
    return rift_server_address(f->srv, f->addr, sizeof(f->addr), NULL) == 0;
}

/* The Quinn stub instead of our server; --server-pid is its process. */
static bool fix_up_stub(fix *f) {
    memset(f, 0, sizeof(*f));
    f->tmp = rift_test_tmpdir();
    if (f->tmp == NULL) {
        return false;
    }
    if (!quinn_stub_start(&f->stub, TOKEN)) {
        fprintf(stderr, "quinn stub: %s\n", f->stub.why);
        return false;
    }
    snprintf(f->csv, sizeof(f->csv), "%s/results.csv", f->tmp);
    snprintf(f->ca, sizeof(f->ca), "%s", f->stub.ca);
    snprintf(f->addr, sizeof(f->addr), "%s", f->stub.addr);
    snprintf(f->pid, sizeof(f->pid), "%d", (int)f->stub.pid);
    f->token = f->stub.token;
    return true;
}

static void fix_down(fix *f) {
    if (f->stub.pid > 0) {
        quinn_stub_stop(&f->stub);
    }
    rift_server_del(f->srv);
    rift_stream_del(f->mem);
    rift_stream_del(f->file);
    rift_broker_del(f->broker);
    rift_test_rmdir(f->tmp);
}

/* ---- CLI processes ---- */

typedef struct proc {
    pid_t pid;
    char out[4300], err[4300]; /* files holding stdout and stderr */
} proc;

/* Starts `rift bench ARGS... --server .. --ca .. --token ..
 * --server-pid .. --csv ..` with stdin from /dev/null and stdout and
 * stderr in files. */
static proc start(fix *f, const char *name, const char *const *args) {
    proc p;
    memset(&p, 0, sizeof(p));
    p.pid = -1;
    const char *cli = getenv("RIFT_TEST_CLI");
    if (cli == NULL || *cli == '\0') {
        return p;
    }
    snprintf(p.out, sizeof(p.out), "%s/%s.out", f->tmp, name);
    snprintf(p.err, sizeof(p.err), "%s/%s.err", f->tmp, name);
    const char *argv[48];
    size_t n = 0;
    argv[n++] = cli;
    argv[n++] = "bench";
    for (size_t i = 0; args[i] != NULL && n < 32; i++) {
        argv[n++] = args[i];
    }
    /* The connection flags after the row's, as compare.sh passes them. */
    const char *conn[] = {
        "--server",     f->addr, "--ca",  f->ca,  "--token", f->token,
        "--server-pid", f->pid,  "--csv", f->csv, NULL};
    for (size_t i = 0; conn[i] != NULL; i++) {
        argv[n++] = conn[i];
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int in = open("/dev/null", O_RDONLY);
        int out = open(p.out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(p.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) {
            _exit(126);
        }
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        for (int fd = 3; fd < 1024; fd++) {
            close(fd);
        }
        /* execv's prototype predates const; it does not modify them. */
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    p.pid = pid;
    return p;
}

static bool exited(void *arg) {
    proc *p = arg;
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) ==
               0 &&
           info.si_pid == p->pid;
}

static void dump(const char *path) {
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        return;
    }
    char line[1024];
    while (fgets(line, sizeof(line), fp) != NULL) {
        fprintf(stderr, "  | %s", line);
    }
    fclose(fp);
}

/* Waits (at most 120 s, sanitizer builds are slow) for the exit status;
 * -1 when it had to be killed. Prints the output when |expect| differs. */
static int finish(proc *p, int expect) {
    if (p->pid < 0) {
        return -2;
    }
    bool done = rift_test_wait_until(exited, p, 120000);
    if (!done) {
        kill(p->pid, SIGKILL);
    }
    int status = 0;
    waitpid(p->pid, &status, 0);
    int rc = done && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != expect) {
        fprintf(stderr, "rift bench exited %d (expected %d); stdout:\n", rc,
                expect);
        dump(p->out);
        fprintf(stderr, "stderr:\n");
        dump(p->err);
    }
    return rc;
}

static int run(fix *f, const char *name, const char *const *args, int expect) {
    proc p = start(f, name, args);
    return finish(&p, expect);
}

static bool subscribed(void *arg) {
    return rift_broker_subscription_count(arg) > 0;
}

/* ---- The CSV ---- */

typedef struct row {
    char buf[2048];
    char *col[32];
    int ncol;
} row;

/* Finds the data row whose label is |label| in the CSV (checking the
 * header); *nrows is the number of data rows. Rows of processes running
 * side by side may land in either order, hence the lookup by label. */
static bool csv_row(fix *f, const char *label, row *r, int *nrows) {
    *nrows = 0;
    FILE *fp = fopen(f->csv, "r");
    if (fp == NULL) {
        return false;
    }
    char line[2048];
    bool found = false, header = true;
    while (fgets(line, sizeof(line), fp) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (header) {
            header = false;
            if (strcmp(line, CSV_HEADER) != 0) {
                fprintf(stderr, "bad CSV header: %s\n", line);
                break;
            }
            continue;
        }
        (*nrows)++;
        /* Split keeping empty fields (strtok would merge them). */
        row t;
        snprintf(t.buf, sizeof(t.buf), "%s", line);
        t.ncol = 0;
        char *s = t.buf;
        for (;;) {
            t.col[t.ncol++] = s;
            char *comma = strchr(s, ',');
            if (comma == NULL || t.ncol == 32) {
                break;
            }
            *comma = '\0';
            s = comma + 1;
        }
        if (!found && t.ncol >= 3 && strcmp(t.col[2], label) == 0) {
            *r = t;
            /* The pointers must point into r's own buffer. */
            for (int i = 0; i < t.ncol; i++) {
                r->col[i] = r->buf + (t.col[i] - t.buf);
            }
            found = true;
        }
    }
    fclose(fp);
    return found;
}

static double num(const row *r, int col) {
    return strtod(r->col[col - 1], NULL);
}

static const char *text(const row *r, int col) {
    return r->col[col - 1];
}

/* The checks every row must pass. */
static void check_row(const row *r, const char *label, const char *scenario,
                      uint64_t msgs, const char *lat_what) {
    CHECK_EQ_INT(r->ncol, 23);
    if (r->ncol != 23) {
        return;
    }
    CHECK_EQ_STR(text(r, 1), "rift");
    CHECK_EQ_STR(text(r, 2), "quic");
    CHECK_EQ_STR(text(r, 3), label);
    CHECK_EQ_STR(text(r, 4), scenario);
    CHECK_EQ_U64((uint64_t)num(r, 6), msgs);
    CHECK(num(r, 10) > 0); /* seconds */
    CHECK(num(r, 11) > 0); /* msgs_per_s */
    CHECK(num(r, 11) * num(r, 10) > (double)msgs * 0.99);
    CHECK(num(r, 11) * num(r, 10) < (double)msgs * 1.01);
    CHECK(num(r, 12) > 0 || num(r, 5) == 0); /* mb_per_s */
    CHECK_EQ_STR(text(r, 13), lat_what);
    if (*lat_what != '\0') {
        for (int c = 14; c <= 17; c++) {
            CHECK_MSG(*text(r, c) != '\0', "column %d empty", c);
        }
        CHECK(num(r, 14) > 0);
        CHECK(num(r, 14) <= num(r, 15));
        CHECK(num(r, 15) <= num(r, 16));
        CHECK(num(r, 16) <= num(r, 17));
    } else {
        for (int c = 14; c <= 17; c++) {
            CHECK_MSG(*text(r, c) == '\0', "column %d not empty", c);
        }
    }
    CHECK(num(r, 18) > 0);
    CHECK(num(r, 18) <= num(r, 19) + 0.05);
    CHECK(num(r, 19) <= num(r, 20) + 0.05);
    CHECK_EQ_STR(text(r, 21), "0");
    CHECK(*text(r, 22) != '\0' && num(r, 22) >= 0); /* client_cpu_s */
    CHECK(*text(r, 23) != '\0' && num(r, 23) >= 0); /* server_cpu_s */
}

#define FIX_UP(f)                                                              \
 do {                                                                          \
  CHECK_MSG(getenv("RIFT_TEST_CLI") && *getenv("RIFT_TEST_CLI"),               \
            "RIFT_TEST_CLI is not set");                                       \
  CHECK(fix_up(&(f)));                                                         \
 } while (0)

/* ---- Usage ---- */

RIFT_TEST(help_and_usage_errors) {
    fix f;
    FIX_UP(f);
    /* compare.sh's probe: `rift bench --help` exits 0. */
    const char *help[] = {"--help", NULL};
    CHECK_EQ_INT(run(&f, "help", help, 0), 0);
    const char *none[] = {NULL};
    CHECK_EQ_INT(run(&f, "none", none, 2), 2);
    const char *unknown[] = {"nope", NULL};
    CHECK_EQ_INT(run(&f, "unknown", unknown, 2), 2);
    const char *two_pubs[] = {"pubsub", "--batch", "4", "--pubs", "2", NULL};
    CHECK_EQ_INT(run(&f, "two", two_pubs, 2), 2);
    const char *big_fetch[] = {"consume", "--batch", "300", NULL};
    CHECK_EQ_INT(run(&f, "fetch", big_fetch, 2), 2);
    const char *bad_timeout[] = {"pub", "--timeout", "soon", NULL};
    CHECK_EQ_INT(run(&f, "timeout", bad_timeout, 2), 2);
    const char *big_size[] = {"pub", "--size", "1048577", NULL};
    CHECK_EQ_INT(run(&f, "size", big_size, 2), 2);
    int n;
    row r;
    CHECK(!csv_row(&f, "", &r, &n));
    CHECK_EQ_INT(n, 0);
    fix_down(&f);
}

/* ---- Core scenarios ---- */

RIFT_TEST(pubsub_streaming_and_batched) {
    fix f;
    FIX_UP(f);
    const char *stream[] = {"pubsub", "--msgs",  "2000",    "--subs",
                            "2",      "--pubs",  "2",       "--size",
                            "100",    "--label", "fan,out", NULL};
    CHECK_EQ_INT(run(&f, "pubsub", stream, 0), 0);
    const char *batched[] = {"pubsub", "--msgs",  "1000",  "--batch",
                             "64",     "--label", "batch", NULL};
    CHECK_EQ_INT(run(&f, "batched", batched, 0), 0);
    row r;
    int n;
    /* Received by all subscribers together; the label's comma became
     * ';' like nats-load's. */
    CHECK(csv_row(&f, "fan;out", &r, &n));
    check_row(&r, "fan;out", "pubsub", 4000, "e2e");
    CHECK_EQ_INT((int)num(&r, 5), 100);
    CHECK_EQ_INT((int)num(&r, 7), 2);
    CHECK_EQ_INT((int)num(&r, 8), 2);
    CHECK_EQ_INT((int)num(&r, 9), 0);
    CHECK(csv_row(&f, "batch", &r, &n));
    CHECK_EQ_INT(n, 2); /* one header, two rows */
    check_row(&r, "batch", "pubsub", 1000, "e2e");
    CHECK_EQ_INT((int)num(&r, 9), 64);
    fix_down(&f);
}

RIFT_TEST(pub_then_sub_in_another_process) {
    fix f;
    FIX_UP(f);
    const char *pub[] = {"pub", "--msgs",  "3000", "--pubs",  "3",   "--size",
                         "16",  "--batch", "100",  "--label", "pub", NULL};
    CHECK_EQ_INT(run(&f, "pub", pub, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "pub", &r, &n));
    check_row(&r, "pub", "pub", 3000, "");
    CHECK_EQ_INT((int)num(&r, 7), 3);
    CHECK_EQ_INT((int)num(&r, 8), 0);
    CHECK_EQ_INT((int)num(&r, 9), 100);

    /* sub waits for someone else's messages: it is subscribed once the
     * broker has the subscription. */
    const char *sub[] = {"sub",     "--msgs",  "500", "--subject",
                         "bench.x", "--label", "sub", NULL};
    proc s = start(&f, "sub", sub);
    CHECK(s.pid > 0);
    CHECK(rift_test_wait_until(subscribed, f.broker, 60000));
    /* pubsub-style stamps do not matter to sub; plain pub sends none. */
    const char *feed[] = {"pub",     "--msgs",  "500",  "--subject",
                          "bench.x", "--label", "feed", NULL};
    CHECK_EQ_INT(run(&f, "feed", feed, 0), 0);
    CHECK_EQ_INT(finish(&s, 0), 0);
    CHECK(csv_row(&f, "sub", &r, &n));
    check_row(&r, "sub", "sub", 500, "");
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT((int)num(&r, 8), 1);
    fix_down(&f);
}

/* ---- Request/reply ---- */

RIFT_TEST(req_with_in_process_responders) {
    fix f;
    FIX_UP(f);
    const char *req[] = {"req",          "--msgs", "300",     "--pubs", "2",
                         "--responders", "2",      "--label", "req",    NULL};
    CHECK_EQ_INT(run(&f, "req", req, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "req", &r, &n));
    check_row(&r, "req", "req", 300, "rtt");
    CHECK_EQ_INT((int)num(&r, 7), 2);
    CHECK_EQ_INT((int)num(&r, 8), 1);
    fix_down(&f);
}

RIFT_TEST(reply_answers_an_external_requester) {
    fix f;
    FIX_UP(f);
    const char *reply[] = {"reply", "--msgs",    "200",      "--label",
                           "reply", "--subject", "bench.rr", NULL};
    proc s = start(&f, "reply", reply);
    CHECK(s.pid > 0);
    CHECK(rift_test_wait_until(subscribed, f.broker, 60000));
    /* 200 measured plus 20 warm-up round trips: reply counts 200 and
     * keeps answering until the requests stop. */
    const char *req[] = {"req",     "--msgs",    "200",      "--responders",
                         "0",       "--subject", "bench.rr", "--label",
                         "req-ext", NULL};
    CHECK_EQ_INT(run(&f, "req", req, 0), 0);
    CHECK_EQ_INT(finish(&s, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "req-ext", &r, &n));
    check_row(&r, "req-ext", "req", 200, "rtt");
    CHECK(csv_row(&f, "reply", &r, &n));
    check_row(&r, "reply", "reply", 200, "");
    fix_down(&f);
}

/* ---- Retained streams ---- */

static uint64_t stream_messages(rift_stream *s) {
    rift_stream_info info;
    if (rift_stream_get_info(s, &info, NULL) != 0) {
        return 0;
    }
    uint64_t n = info.messages;
    rift_stream_info_free(&info);
    return n;
}

RIFT_TEST(stream_synced_and_windowed) {
    fix f;
    FIX_UP(f);
    const char *sync[] = {
        "stream",       "--msgs",  "100",      "--pubs", "2",
        "--batch",      "1",       "--stream", "file",   "--subject",
        "bench.file.x", "--label", "sync",     NULL};
    CHECK_EQ_INT(run(&f, "sync", sync, 0), 0);
    const char *window[] = {"stream",      "--msgs",   "2000",   "--batch",
                            "32",          "--stream", "mem",    "--subject",
                            "bench.mem.y", "--label",  "window", NULL};
    CHECK_EQ_INT(run(&f, "window", window, 0), 0);
    /* The same synced row with a thread per publisher blocked in
     * rift_client_stream_publish instead of completion callbacks. */
    const char *blocking[] = {"stream",
                              "--msgs",
                              "60",
                              "--pubs",
                              "3",
                              "--batch",
                              "1",
                              "--stream",
                              "file",
                              "--subject",
                              "bench.file.z",
                              "--ack-wait",
                              "blocking",
                              "--label",
                              "blocking",
                              NULL};
    CHECK_EQ_INT(run(&f, "blocking", blocking, 0), 0);
    const char *bad[] = {"stream", "--ack-wait", "spin", NULL};
    CHECK_EQ_INT(run(&f, "bad", bad, 2), 2);
    row r;
    int n;
    CHECK(csv_row(&f, "sync", &r, &n));
    check_row(&r, "sync", "stream", 100, "ack");
    CHECK_EQ_INT((int)num(&r, 7), 2);
    CHECK_EQ_INT((int)num(&r, 8), 0);
    CHECK_EQ_INT((int)num(&r, 9), 1);
    CHECK(csv_row(&f, "blocking", &r, &n));
    check_row(&r, "blocking", "stream", 60, "ack");
    CHECK_EQ_INT((int)num(&r, 7), 3);
    CHECK(csv_row(&f, "window", &r, &n));
    check_row(&r, "window", "stream", 2000, "");
    CHECK_EQ_INT((int)num(&r, 9), 32);
    /* Every STORED counted is in the streams. */
    CHECK_EQ_U64(stream_messages(f.file), 160);
    CHECK_EQ_U64(stream_messages(f.mem), 2000);
    fix_down(&f);
}

RIFT_TEST(consume_fetch_and_ack) {
    fix f;
    FIX_UP(f);
    /* Records already in the stream are not the run's: the consumer
     * starts at the first prefilled one. */
    const char *before[] = {"stream", "--msgs",    "50",          "--stream",
                            "mem",    "--subject", "bench.mem.c", "--label",
                            "before", NULL};
    CHECK_EQ_INT(run(&f, "before", before, 0), 0);
    const char *consume[] = {"consume",     "--msgs",   "1000",  "--batch",
                             "100",         "--stream", "mem",   "--subject",
                             "bench.mem.c", "--label",  "fetch", NULL};
    CHECK_EQ_INT(run(&f, "consume", consume, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "fetch", &r, &n));
    check_row(&r, "fetch", "consume", 1000, "fetch");
    CHECK_EQ_INT((int)num(&r, 8), 1);
    CHECK_EQ_INT((int)num(&r, 9), 100);
    CHECK_EQ_U64(stream_messages(f.mem), 1050);
    /* The run's own consumer starts at the first prefilled record, has
     * examined all of them and has nothing pending: every ACK applied. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(f.mem, &info, NULL));
    CHECK_EQ_INT((int)info.consumer_count, 1);
    rift_consumer *c = NULL;
    if (info.consumer_count == 1) {
        CHECK_OK(rift_stream_consumer_get(f.mem, info.consumer_names[0],
                                          strlen(info.consumer_names[0]), &c,
                                          NULL));
    }
    rift_stream_info_free(&info);
    rift_consumer_info ci;
    CHECK(c != NULL);
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.start_sequence, 51);
    CHECK_EQ_U64(ci.next_sequence, 1051);
    CHECK_EQ_INT((int)ci.pending, 0);
    CHECK_EQ_INT((int)ci.config.max_ack_pending, 65536);
    rift_consumer_close(c);
    fix_down(&f);
}

RIFT_TEST(push_wait_and_idle) {
    fix f;
    FIX_UP(f);
    const char *push[] = {"push",        "--msgs",   "1000", "--batch",
                          "64",          "--stream", "mem",  "--subject",
                          "bench.mem.p", "--label",  "push", NULL};
    CHECK_EQ_INT(run(&f, "push", push, 0), 0);
    const char *wait[] = {"wait",        "--msgs",   "20",   "--subs",
                          "1",           "--stream", "mem",  "--subject",
                          "bench.mem.w", "--label",  "wait", NULL};
    CHECK_EQ_INT(run(&f, "wait", wait, 0), 0);
    const char *idle[] = {"idle", "--subs",    "20",          "--stream",
                          "mem",  "--subject", "bench.mem.i", "--label",
                          "idle", NULL};
    CHECK_EQ_INT(run(&f, "idle", idle, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "push", &r, &n));
    check_row(&r, "push", "push", 1000, "");
    CHECK_EQ_INT((int)num(&r, 9), 64);
    CHECK(csv_row(&f, "wait", &r, &n));
    check_row(&r, "wait", "wait", 20, "fetched");
    CHECK(csv_row(&f, "idle", &r, &n));
    CHECK_EQ_STR(text(&r, 4), "idle");
    CHECK_EQ_INT((int)num(&r, 8), 20);
    /* Every run deleted the consumers it made. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(f.mem, &info, NULL));
    CHECK_EQ_INT((int)info.consumer_count, 0);
    rift_stream_info_free(&info);
    fix_down(&f);
}

/* ---- Exit statuses ---- */

RIFT_TEST(lost_messages_exit_3_with_a_row) {
    fix f;
    FIX_UP(f);
    /* Every publish fails ("subject does not match this stream"): the
     * row says so. */
    const char *args[] = {"stream", "--msgs",    "20",           "--stream",
                          "mem",    "--subject", "bench.file.z", "--label",
                          "lost",   NULL};
    CHECK_EQ_INT(run(&f, "lost", args, 3), 3);
    row r;
    int n;
    CHECK(csv_row(&f, "lost", &r, &n));
    CHECK_EQ_INT(r.ncol, 23);
    CHECK_EQ_STR(text(&r, 6), "0");
    CHECK_EQ_STR(text(&r, 21), "20");
    fix_down(&f);
}

RIFT_TEST(failures_exit_1_without_a_row) {
    fix f;
    FIX_UP(f);
    /* The prefill cannot store anything. */
    const char *args[] = {"consume", "--msgs",    "10",          "--stream",
                          "missing", "--subject", "bench.mem.z", NULL};
    CHECK_EQ_INT(run(&f, "consume", args, 1), 1);
    /* A subscription the identity may not have. */
    const char *denied[] = {"pubsub",    "--msgs",  "10",
                            "--subject", "other.x", NULL};
    CHECK_EQ_INT(run(&f, "denied", denied, 1), 1);
    /* A missing stream fails before the run, naming the stream, instead
     * of after every publish failed (which left a row of errors). */
    const char *missing[] = {"stream",  "--msgs",    "20",          "--stream",
                             "missing", "--subject", "bench.mem.z", NULL};
    proc mp = start(&f, "missing", missing);
    CHECK_EQ_INT(finish(&mp, 1), 1);
    FILE *fp = fopen(mp.err, "r");
    char said[1024] = "";
    size_t n_said = fp ? fread(said, 1, sizeof(said) - 1, fp) : 0;
    said[n_said] = '\0';
    if (fp != NULL) {
        fclose(fp);
    }
    CHECK_MSG(strstr(said, "unknown stream \"missing\" (--stream)") != NULL,
              "%s", said);
    row r;
    int n;
    CHECK(!csv_row(&f, "", &r, &n));
    CHECK_EQ_INT(n, 0);
    fix_down(&f);
}

/* ---- Another implementation of protocol v1 ---- */

RIFT_TEST(scenarios_against_the_quinn_stub) {
    fix f;
    CHECK_MSG(getenv("RIFT_TEST_CLI") && *getenv("RIFT_TEST_CLI"),
              "RIFT_TEST_CLI is not set");
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(fix_up_stub(&f));
    const char *pubsub[] = {"pubsub", "--msgs",  "1000",   "--subs",
                            "2",      "--label", "pubsub", NULL};
    CHECK_EQ_INT(run(&f, "pubsub", pubsub, 0), 0);
    const char *batched[] = {"pubsub", "--msgs",  "500",   "--batch",
                             "50",     "--label", "batch", NULL};
    CHECK_EQ_INT(run(&f, "batch", batched, 0), 0);
    const char *req[] = {"req", "--msgs", "100", "--label", "req", NULL};
    CHECK_EQ_INT(run(&f, "req", req, 0), 0);
    const char *stream[] = {"stream",  "--msgs",   "200",    "--batch",
                            "8",       "--stream", "bench",  "--subject",
                            "bench.s", "--label",  "stream", NULL};
    CHECK_EQ_INT(run(&f, "stream", stream, 0), 0);
    const char *consume[] = {"consume", "--msgs",   "300",     "--batch",
                             "64",      "--stream", "bench",   "--subject",
                             "bench.s", "--label",  "consume", NULL};
    CHECK_EQ_INT(run(&f, "consume", consume, 0), 0);
    row r;
    int n;
    CHECK(csv_row(&f, "pubsub", &r, &n));
    check_row(&r, "pubsub", "pubsub", 2000, "e2e");
    CHECK(csv_row(&f, "batch", &r, &n));
    check_row(&r, "batch", "pubsub", 500, "e2e");
    CHECK(csv_row(&f, "req", &r, &n));
    check_row(&r, "req", "req", 100, "rtt");
    CHECK(csv_row(&f, "stream", &r, &n));
    check_row(&r, "stream", "stream", 200, "");
    CHECK(csv_row(&f, "consume", &r, &n));
    check_row(&r, "consume", "consume", 300, "fetch");
    CHECK_EQ_INT(n, 5);
    fix_down(&f);
}
