/*
 * cmd_bench_args.c — the command line of `rift bench` (tools layer): the
 * same flags, defaults and checks as bench/nats-load, so that
 * bench/compare.sh drives both tools with one argument list (only the
 * connection flags differ), plus the CLI's usual connection flags.
 */
#include "args.h"
#include "cmd_bench.h"
#include "conn_options.h"
#include "io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    bench_scenario id;
    const char *help;
} scenarios[] = {
    {"pub", BENCH_PUB,
     "publish only: --pubs publishers, no subscriber; --batch N = flush "
     "barrier every N"},
    {"sub", BENCH_SUB,
     "subscribe only: --subs subscribers each receive --msgs messages "
     "published by someone else"},
    {"pubsub", BENCH_PUBSUB,
     "--pubs publishers -> --subs subscribers; --batch N = publish N, flush, "
     "wait until received"},
    {"req", BENCH_REQ,
     "sequential request/reply round trips (--pubs requesters, --responders "
     "in-process echo responders)"},
    {"reply", BENCH_REPLY,
     "echo responders only: answer --msgs requests sent by someone else"},
    {"stream", BENCH_STREAM,
     "retained-stream publish, each waits for STORED; --batch W = in-flight "
     "window per publisher (1 = synchronous)"},
    {"consume", BENCH_CONSUME,
     "durable consumer: prefill --msgs, then fetch --batch (<=256) + ack "
     "each"},
    {"push", BENCH_PUSH,
     "push consumer: prefill --msgs, then push with max_in_flight --batch "
     "(1024), ack each from the callback"},
    {"wait", BENCH_WAIT,
     "--subs waiting fetchers (1) on one shared consumer: --msgs records "
     "published one at a time, latency publish -> fetched (and -> pushed)"},
    {"idle", BENCH_IDLE,
     "--subs waiting fetchers (1000) parked for 5 s: the CPU they cost"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: rift bench SCENARIO [flags] [connection flags]\n\n"
                 "scenarios:\n");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        fprintf(out, "  %-8s %s\n", scenarios[i].name, scenarios[i].help);
    }
    fprintf(
        out,
        "\nflags (the same as bench/nats-load):\n"
        "  --msgs N             messages (or requests) to measure, in total "
        "(100000)\n"
        "  --size N             payload bytes, 0..1048576 (64)\n"
        "  --pubs N             publishers (requesters for req), one "
        "connection each (1)\n"
        "  --subs N             subscribers, one connection each (1)\n"
        "  --batch N            pub/pubsub: flush barrier every N (0 = only "
        "at the end);\n"
        "                       stream: in-flight window (1); consume: fetch "
        "size (256)\n"
        "  --subject S          subject (bench.SCENARIO)\n"
        "  --stream NAME        retained stream for stream and consume "
        "(bench)\n"
        "  --max-ack-pending N  consume: the consumer's max ack pending "
        "(65536)\n"
        "  --csv FILE           append one CSV row (header when FILE is new "
        "or empty)\n"
        "  --label TEXT         copied into the CSV label column\n"
        "  --server-pid PID[,PID...]  also measure these local server "
        "processes' CPU (summed)\n"
        "  --timeout DURATION   give up when nothing progresses this long "
        "(30s)\n"
        "  --progress MODE      auto (bar on stderr when it is a terminal), "
        "on, off\n"
        "rift only:\n"
        "  --responders N       req: in-process echo responders, 0 = rely on "
        "`rift bench reply`\n"
        "                       elsewhere (1); reply: responders (1); several "
        "form a queue group\n"
        "  --consumer NAME      consume: durable consumer name (a fresh one "
        "per run)\n"
        "  --ack-threads N      consume: acknowledgements in flight (256)\n"
        "  --ack-wait MODE      stream --batch 1: callback (the next publish "
        "starts from\n"
        "                       the previous one's completion) or blocking "
        "(a thread per\n"
        "                       publisher waits in rift_client_stream_publish)"
        " (callback)\n\n"
        "Prints a report (msgs/s, MB/s, latency p50/p95/p99/max, per-client "
        "min/avg/max).\nExit status: 0 clean, 3 the row was written but "
        "messages were lost or failed,\n1 failure (no row), 2 usage.\n\n");
    rift_cli_conn_usage(out);
}

/* A Go-style duration: "30s", "1m30s", "250ms", "1.5h"; a bare number is
 * seconds. */
static bool parse_duration(const char *s, uint64_t *out_ns) {
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1},  {"us", 1e3}, {"µs", 1e3},  {"ms", 1e6},
                 {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    double total = 0;
    const char *p = s;
    if (*p == '\0') {
        return false;
    }
    while (*p != '\0') {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno != 0 || v < 0) {
            return false;
        }
        p = end;
        if (*p == '\0' && total == 0) {
            total = v * 1e9; /* a bare number */
            break;
        }
        size_t best = 0;
        double mult = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t n = strlen(units[i].unit);
            /* Longest match: "ms" before "m", "ns" before nothing. */
            if (strncmp(p, units[i].unit, n) == 0 && n > best) {
                best = n;
                mult = units[i].ns;
            }
        }
        if (best == 0) {
            return false;
        }
        total += v * mult;
        p += best;
    }
    if (total > 1e18) {
        return false;
    }
    *out_ns = (uint64_t)total;
    return true;
}

static bool parse_uint(const char *opt, const char *s, uint64_t max,
                       uint64_t *out) {
    if (!rift_cli_parse_u64("bench", opt, s, out)) {
        return false;
    }
    if (*out > max) {
        fprintf(stderr, "rift bench: %s must be at most %llu\n", opt,
                (unsigned long long)max);
        return false;
    }
    return true;
}

/* The value options, in a table so parsing stays one loop. */
enum {
    OPT_MSGS,
    OPT_SIZE,
    OPT_PUBS,
    OPT_SUBS,
    OPT_BATCH,
    OPT_SUBJECT,
    OPT_STREAM,
    OPT_MAX_ACK_PENDING,
    OPT_CSV,
    OPT_LABEL,
    OPT_SERVER_PID,
    OPT_TIMEOUT,
    OPT_PROGRESS,
    OPT_RESPONDERS,
    OPT_CONSUMER,
    OPT_ACK_THREADS,
    OPT_ACK_WAIT,
    OPT_COUNT
};

static const char *const opt_names[OPT_COUNT] = {
    "--msgs",     "--size",       "--pubs",       "--subs",
    "--batch",    "--subject",    "--stream",     "--max-ack-pending",
    "--csv",      "--label",      "--server-pid", "--timeout",
    "--progress", "--responders", "--consumer",   "--ack-threads",
    "--ack-wait",
};

/* The numeric options, each with its default and its bound. */
static int check_numbers(bench_cfg *cfg, const char *const *v) {
    uint64_t n;
    cfg->msgs = 100000;
    if (v[OPT_MSGS] != NULL) {
        if (!parse_uint("--msgs", v[OPT_MSGS], UINT64_MAX / 2, &cfg->msgs)) {
            return 2;
        }
    }
    cfg->size = 64;
    if (v[OPT_SIZE] != NULL) {
        if (!parse_uint("--size", v[OPT_SIZE], 1048576, &n)) {
            return 2;
        }
        cfg->size = (size_t)n;
    }
    unsigned *counts[] = {&cfg->pubs, &cfg->subs, &cfg->batch, &cfg->responders,
                          &cfg->ack_threads};
    const int which[] = {OPT_PUBS, OPT_SUBS, OPT_BATCH, OPT_RESPONDERS,
                         OPT_ACK_THREADS};
    const unsigned defaults[] = {1, 1, 0, 1, 256};
    for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
        *counts[i] = defaults[i];
        if (v[which[i]] != NULL) {
            if (!parse_uint(opt_names[which[i]], v[which[i]], 100000, &n)) {
                return 2;
            }
            *counts[i] = (unsigned)n;
        }
    }
    cfg->max_ack_pending = 65536;
    if (v[OPT_MAX_ACK_PENDING] != NULL) {
        if (!parse_uint("--max-ack-pending", v[OPT_MAX_ACK_PENDING], 65536,
                        &n)) {
            return 2;
        }
        cfg->max_ack_pending = (uint32_t)n;
    }
    cfg->n_server_pids = 0;
    for (const char *p = v[OPT_SERVER_PID]; p != NULL;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char one[24];
        if (len == 0 || len >= sizeof(one) ||
            cfg->n_server_pids == BENCH_MAX_SERVER_PIDS) {
            fprintf(stderr,
                    "rift bench: --server-pid takes 1..%d process ids, "
                    "comma-separated\n",
                    BENCH_MAX_SERVER_PIDS);
            return 2;
        }
        memcpy(one, p, len);
        one[len] = '\0';
        if (!parse_uint("--server-pid", one, 0x7fffffff, &n)) {
            return 2;
        }
        if (n > 0) { /* 0: not measured, as before lists */
            cfg->server_pids[cfg->n_server_pids++] = (int)n;
        }
        p = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

/* The duration and the two word-valued options. */
static int check_words(bench_cfg *cfg, const char *const *v) {
    cfg->timeout_ns = 30000000000ull;
    if (v[OPT_TIMEOUT] != NULL &&
        (!parse_duration(v[OPT_TIMEOUT], &cfg->timeout_ns) ||
         cfg->timeout_ns == 0)) {
        fprintf(stderr,
                "rift bench: --timeout expects a duration like 30s or "
                "500ms, not '%s'\n",
                v[OPT_TIMEOUT]);
        return 2;
    }
    cfg->progress = BENCH_PROGRESS_AUTO;
    if (v[OPT_PROGRESS] != NULL) {
        if (strcmp(v[OPT_PROGRESS], "on") == 0) {
            cfg->progress = BENCH_PROGRESS_ON;
        } else if (strcmp(v[OPT_PROGRESS], "off") == 0) {
            cfg->progress = BENCH_PROGRESS_OFF;
        } else if (strcmp(v[OPT_PROGRESS], "auto") != 0) {
            fprintf(stderr, "rift bench: --progress must be auto, on or off\n");
            return 2;
        }
    }
    cfg->ack_blocking = false;
    if (v[OPT_ACK_WAIT] != NULL) {
        if (strcmp(v[OPT_ACK_WAIT], "blocking") == 0) {
            cfg->ack_blocking = true;
        } else if (strcmp(v[OPT_ACK_WAIT], "callback") != 0) {
            fprintf(stderr,
                    "rift bench: --ack-wait must be callback or blocking\n");
            return 2;
        }
    }
    return 0;
}

/* The string options; the subject defaults to bench.<scenario>. */
static void set_strings(bench_cfg *cfg, const char *const *v) {
    cfg->csv = v[OPT_CSV];
    cfg->label = v[OPT_LABEL] != NULL ? v[OPT_LABEL] : "";
    cfg->stream = v[OPT_STREAM] != NULL ? v[OPT_STREAM] : "bench";
    cfg->stream_len = strlen(cfg->stream);
    cfg->consumer = v[OPT_CONSUMER];
    if (v[OPT_SUBJECT] != NULL) {
        cfg->subject = v[OPT_SUBJECT];
    } else {
        snprintf(cfg->subject_buf, sizeof(cfg->subject_buf), "bench.%s",
                 cfg->scenario_name);
        cfg->subject = cfg->subject_buf;
    }
    cfg->subject_len = strlen(cfg->subject);
}

/* The limits that involve more than one option or the scenario; NULL
 * when the combination is fine. */
static const char *cross_check(const bench_cfg *cfg) {
    const char *why = NULL;
    if (cfg->msgs < 1) {
        why = "--msgs must be at least 1";
    } else if (cfg->pubs < 1 || cfg->subs < 1) {
        why = "--pubs and --subs must be at least 1";
    } else if (cfg->scenario == BENCH_CONSUME && cfg->batch > BENCH_FETCH_MAX) {
        why = "--batch for consume is at most 256 (the protocol's fetch "
              "limit)";
    } else if (cfg->scenario == BENCH_PUBSUB && cfg->batch > 0 &&
               cfg->pubs != 1) {
        why = "pubsub --batch needs exactly one publisher";
    } else if (cfg->scenario == BENCH_STREAM &&
               (uint64_t)cfg->pubs * (cfg->batch > 0 ? cfg->batch : 1) >
                   BENCH_STREAM_WINDOW_MAX) {
        why = "stream runs one thread per publish in flight: --pubs times "
              "--batch is at most 4096";
    } else if (cfg->scenario == BENCH_REPLY && cfg->responders < 1) {
        why = "reply needs at least one responder";
    } else if (cfg->max_ack_pending < 1) {
        why = "--max-ack-pending must be 1..65536";
    } else if (cfg->ack_threads < 1 || cfg->ack_threads > 4096) {
        why = "--ack-threads must be 1..4096";
    }
    return why;
}

static int check(bench_cfg *cfg, const char *const *v) {
    if (check_numbers(cfg, v) != 0 || check_words(cfg, v) != 0) {
        return 2;
    }
    set_strings(cfg, v);
    const char *why = cross_check(cfg);
    if (why != NULL) {
        fprintf(stderr, "rift bench: %s\n", why);
        return 2;
    }
    if (cfg->scenario == BENCH_CONSUME && cfg->batch == 0) {
        cfg->batch = BENCH_FETCH_MAX;
    }
    if (cfg->scenario == BENCH_PUSH &&
        (cfg->batch == 0 || cfg->batch > 65535)) {
        cfg->batch = cfg->batch == 0 ? 1024 : 65535;
    }
    if (cfg->scenario == BENCH_IDLE && v[OPT_SUBS] == NULL) {
        cfg->subs = 1000;
    }
    if (cfg->scenario == BENCH_STREAM && cfg->batch == 0) {
        cfg->batch = 1;
    }
    return 0;
}

/* The scenario word (or "help"), the one positional argument. */
static int take_scenario(void *ud, const char *a) {
    bench_cfg *cfg = ud;
    if (strcmp(a, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (cfg->scenario_name != NULL) {
        fprintf(stderr, "rift bench: unexpected argument '%s'\n", a);
        usage(stderr);
        return 2;
    }
    for (size_t k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); k++) {
        if (strcmp(a, scenarios[k].name) == 0) {
            cfg->scenario = scenarios[k].id;
            cfg->scenario_name = scenarios[k].name;
        }
    }
    if (cfg->scenario_name == NULL) {
        fprintf(stderr, "rift bench: unknown scenario '%s'\n", a);
        usage(stderr);
        return 2;
    }
    return -1;
}

int bench_args_parse(bench_cfg *cfg, int argc, char **argv) {
    const char *v[OPT_COUNT] = {NULL};
    rift_cli_opt opts[OPT_COUNT + 1];
    for (int k = 0; k < OPT_COUNT; k++) {
        opts[k] = (rift_cli_opt){.name = opt_names[k], .value = &v[k]};
    }
    opts[OPT_COUNT] = (rift_cli_opt){.name = NULL};
    memset(cfg, 0, sizeof(*cfg));
    rift_cli_conn_init(&cfg->cc);
    rift_cli_args args = {.cmd = "bench",
                          .usage = usage,
                          .conn = &cfg->cc,
                          .opts = opts,
                          .ud = cfg,
                          .first = 1,
                          .take_pos = take_scenario};
    int parsed = rift_cli_parse(&args, argc, argv);
    if (parsed >= 0) {
        /* bench_args_parse's 1: the usage was asked for. */
        return parsed == 0 ? 1 : parsed;
    }
    if (cfg->scenario_name == NULL) {
        usage(stderr);
        return 2;
    }
    return check(cfg, v);
}
