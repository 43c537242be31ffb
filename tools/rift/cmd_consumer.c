/*
 * cmd_consumer.c — `rift consumer open|fetch|next|push|ack|nak|term|
 * progress|ls|info|delete` (tools layer): durable consumers of a retained
 * stream (push: cmd_consumer_push.c). open (with a sequence start), fetch
 * and ack are protocol v1 opcodes 12, 13 and 15;
 * ls (CONSUMER_LIST), next (the waiting fetch), nak, term, progress and
 * delete (alias rm, CONSUMER_DELETE) are extensions any principal may use
 * for its own consumers; the other start positions (NATS Streaming's
 * first, last received, new only, by time), info, and delete with
 * --identity or on a server without the extensions go through riftd's
 * control commands, which act on the consumer of the identity the CLI
 * authenticated as (or --identity).
 */
#include "args.h"
#include "cmd.h"
#include "cmd_consumer_push.h"
#include "conn_options.h"
#include "control_request.h"
#include "io.h"
#include "subjects.h"
#include "timefmt.h"

#include "rift/stream.h"
#include "subject/acl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FETCH_MAX       256
#define ACK_WAIT_MAX    3600000
#define ACK_PENDING_MAX 65536

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: rift consumer open STREAM NAME [--filter PATTERN] [--start "
        "POS]\n"
        "                     [--ack-wait MS] [--max-pending N] [--identity "
        "ID]\n"
        "       rift consumer fetch STREAM NAME [--count N] [--wait DURATION] "
        "[--ack]\n"
        "                     [--raw [--sep SEP]]\n"
        "       rift consumer next STREAM NAME [--count N] [--wait DURATION] "
        "[--ack]\n"
        "                     [--raw [--sep SEP]]\n"
        "       rift consumer ls STREAM [--json]\n"
        "       rift consumer push STREAM NAME [--max-in-flight N] [--count "
        "N]\n"
        "                     [--ack-wait MS] [--raw]\n"
        "       rift consumer ack STREAM NAME SEQ...\n"
        "       rift consumer nak STREAM NAME SEQ [--delay DURATION]\n"
        "       rift consumer term STREAM NAME SEQ\n"
        "       rift consumer progress STREAM NAME SEQ...\n"
        "       rift consumer info STREAM NAME [--identity ID] [--json]\n"
        "       rift consumer delete|rm STREAM NAME [--identity ID] [--json]\n"
        "       (each takes the connection flags)\n\n"
        "open    creates the durable consumer NAME (or reopens it with the "
        "same settings).\n"
        "        --start POS: seq:N (default seq:1), first, last (the newest "
        "record),\n"
        "        new (only later records), time:T (T is RFC 3339, e.g.\n"
        "        2026-01-02T15:04:05Z, or Unix milliseconds) or since:D (D "
        "ago, e.g. 90s,\n"
        "        5m, 1h30m). Defaults: filter '>', ack wait 30000 ms, 128 "
        "pending.\n"
        "fetch   delivers up to N records (1..256, default 1) as \"#SEQ "
        "(delivery K) TIME\n"
        "        SUBJECT: PAYLOAD\"; --ack acknowledges each once printed. "
        "--wait D (e.g.\n"
        "        500ms, 10s) waits until a record arrives or D has passed "
        "(on the server\n"
        "        when it offers the waiting fetch, else retrying with a "
        "growing pause).\n"
        "        --raw writes payloads only, each followed by SEP with "
        "--sep.\n"
        "next    as fetch, but the server waits for a record (--wait, "
        "default 5s, at\n"
        "        most 2m) and answers as soon as one is stored: no polling.\n"
        "ls      lists your consumers of STREAM: name, filter, next "
        "sequence, pending\n"
        "        acks, ack wait, max deliver (--json: one array).\n"
        "push    prints the records the server pushes (as fetch does), at "
        "most N\n"
        "        unacknowledged (--max-in-flight, default 1024), and "
        "acknowledges each once\n"
        "        printed; stops after --count records, or at Ctrl-C. "
        "--ack-wait MS\n"
        "        redelivers what is not acknowledged after MS (default: "
        "the consumer's).\n"
        "ack     acknowledges delivered records.\n"
        "nak     gives a delivery back: redelivered at once, or after "
        "--delay (e.g. 30s, \n"
        "        at most 1h). term ends a delivery for good (never "
        "redelivered).\n"
        "progress restarts the ack wait of deliveries you are still working "
        "on.\n"
        "delete  (rm) removes your consumer and its state.\n"
        "--max-deliver N (open): a record is delivered at most N times "
        "(0 = unlimited);\n"
        "        then riftd drops it and publishes rift.events.consumer.\n"
        "Consumers are scoped by identity: NAME is yours, as on the wire. "
        "Start positions\nother than seq:N (without --max-deliver), info "
        "and --identity use riftd's\ncontrol commands (control = true and a "
        "publish grant on rift.control.>);\n--identity acts on another "
        "identity's consumer.\n\n");
    rift_cli_conn_usage(out);
}

typedef struct consumer_args {
    rift_cli_conn cc;
    const char *pos[64];
    int npos;
    const char *filter, *start, *ack_wait, *max_pending, *identity, *count;
    const char *wait, *sep_s, *max_deliver, *delay, *max_in_flight;
    bool ack, raw, json;
} consumer_args;

static int parse(consumer_args *a, int argc, char **argv) {
    const rift_cli_opt opts[] = {
        {.name = "--filter", .value = &a->filter},
        {.name = "--start", .value = &a->start},
        {.name = "--ack-wait", .value = &a->ack_wait},
        {.name = "--max-pending", .value = &a->max_pending},
        {.name = "--identity", .value = &a->identity},
        {.name = "--count", .value = &a->count},
        {.name = "--wait", .value = &a->wait},
        {.name = "--sep", .value = &a->sep_s},
        {.name = "--max-deliver", .value = &a->max_deliver},
        {.name = "--delay", .value = &a->delay},
        {.name = "--max-in-flight", .value = &a->max_in_flight},
        {.name = "--ack", .flag = &a->ack},
        {.name = "--raw", .flag = &a->raw},
        {.name = "--json", .flag = &a->json},
        {.name = NULL},
    };
    rift_cli_args args = {.cmd = "consumer",
                          .usage = usage,
                          .conn = &a->cc,
                          .opts = opts,
                          .first = 2,
                          .pos = a->pos,
                          .max_pos = 64};
    int rc = rift_cli_parse(&args, argc, argv);
    a->npos = args.npos;
    return rc;
}

/* ---- open ---- */

/* --start POS as control arguments (added to |args|); *wire_seq is set
 * when POS is a plain sequence the wire's CONSUMER_OPEN can carry. */
static bool parse_start(const char *pos, json_t *args, uint64_t *wire_seq) {
    *wire_seq = 0;
    if (pos == NULL) {
        *wire_seq = 1;
        return true;
    }
    /* One spelling with Lua's config.start: the store reads it. */
    rift_consumer_config cc;
    rift_consumer_config_default(&cc);
    rift_error err;
    if (rift_consumer_start_parse(pos, strlen(pos), &cc, &err) != 0) {
        fprintf(stderr, "rift consumer: --start %s\n", err.text);
        return false;
    }
    static const char *const names[] = {
        [RIFT_START_SEQUENCE] = "sequence",  [RIFT_START_FIRST] = "first",
        [RIFT_START_LAST_RECEIVED] = "last", [RIFT_START_NEW_ONLY] = "new",
        [RIFT_START_TIME] = "time",          [RIFT_START_TIME_DELTA] = "since",
    };
    json_object_set_new(args, "start", json_string(names[cc.start]));
    if (cc.start == RIFT_START_SEQUENCE) {
        *wire_seq = cc.start_sequence;
        json_object_set_new(args, "start_sequence",
                            json_integer((json_int_t)cc.start_sequence));
    } else if (cc.start == RIFT_START_TIME) {
        json_object_set_new(args, "start_time_ms",
                            json_integer((json_int_t)cc.start_time_ms));
    } else if (cc.start == RIFT_START_TIME_DELTA) {
        json_object_set_new(args, "since_ms",
                            json_integer((json_int_t)cc.start_time_ms));
    }
    return true;
}

static void print_consumer(const json_t *d) {
    printf("consumer %s on %s", rift_cli_json_str(d, "name"),
           rift_cli_json_str(d, "stream"));
    if (json_object_get(d, "identity") != NULL) {
        printf(" (identity %s)", rift_cli_json_str(d, "identity"));
    }
    printf("\n");
    printf("  filter          %s\n", rift_cli_json_str(d, "filter"));
    printf("  start           %s", rift_cli_json_str(d, "start"));
    if (json_object_get(d, "start_time_ms") != NULL) {
        char when[RIFT_CLI_TIME_LEN];
        rift_cli_time_format((uint64_t)rift_cli_json_int(d, "start_time_ms"),
                             when);
        printf(" %s", when);
    } else if (json_object_get(d, "since_ms") != NULL) {
        printf(" %lld ms before creation", rift_cli_json_int(d, "since_ms"));
    }
    printf(" (sequence %lld)\n", rift_cli_json_int(d, "start_sequence"));
    printf("  next sequence   %lld\n", rift_cli_json_int(d, "next_sequence"));
    printf("  pending acks    %lld\n", rift_cli_json_int(d, "pending"));
    printf("  ack wait        %lld ms\n", rift_cli_json_int(d, "ack_wait_ms"));
    printf("  max pending     %lld\n", rift_cli_json_int(d, "max_ack_pending"));
    if (json_object_get(d, "max_deliver") != NULL) {
        printf("  max deliver     %lld\n", rift_cli_json_int(d, "max_deliver"));
        printf("  terminated      %lld\n", rift_cli_json_int(d, "terminated"));
    }
}

/* The stream's subjects from stream.info: the CLI checks --filter
 * against them, since a filter outside them opens a consumer that never
 * delivers. Returns 0 (also when stream.info is not allowed: then the
 * server alone decides), or prints why and returns the exit code. */
static int check_filter(rift_client *c, const char *stream,
                        const char *filter) {
    json_t *info;
    char why[RIFT_ERROR_TEXT_MAX + 1];
    if (rift_cli_control_quiet(c, "consumer", "stream.info",
                               json_pack("{s:s}", "name", stream), &info, why,
                               sizeof(why)) != 0) {
        if (strncmp(why, "unknown stream", 14) == 0) {
            rift_cli_control_error("consumer", why);
            return 1;
        }
        return 0;
    }
    const json_t *subjects = json_object_get(info, "subjects");
    bool overlap = json_array_size(subjects) == 0;
    size_t i;
    json_t *subj;
    json_array_foreach((json_t *)subjects, i, subj) {
        const char *p = json_string_value(subj);
        overlap = overlap ||
                  (p != NULL &&
                   rift_subject_overlaps(filter, strlen(filter), p, strlen(p)));
    }
    if (!overlap) {
        fprintf(stderr,
                "rift consumer: --filter '%s' matches none of the subjects "
                "of stream %s (",
                filter, stream);
        json_array_foreach((json_t *)subjects, i, subj) {
            fprintf(stderr, "%s%s", i ? ", " : "", json_string_value(subj));
        }
        fprintf(stderr, "): the consumer would never deliver a record\n");
    }
    json_decref(info);
    return overlap ? 0 : 1;
}

/* The protocol's "consumer already exists with different settings" names
 * no setting: compare with consumer.info (when allowed) and name each
 * one that differs from what |want| asked for. */
static void explain_differs(rift_client *c, const consumer_args *a,
                            const json_t *want) {
    json_t *args =
        json_pack("{s:s,s:s}", "stream", a->pos[0], "name", a->pos[1]);
    if (args != NULL && a->identity != NULL) {
        json_object_set_new(args, "identity", json_string(a->identity));
    }
    json_t *have;
    char why[RIFT_ERROR_TEXT_MAX + 1];
    if (rift_cli_control_quiet(c, "consumer", "consumer.info", args, &have, why,
                               sizeof(why)) != 0) {
        fprintf(stderr,
                "rift consumer: rift consumer info %s %s shows the existing "
                "settings\n",
                a->pos[0], a->pos[1]);
        return;
    }
    const char *want_start = rift_cli_json_str(want, "start");
    if (*want_start == '\0') {
        want_start = "sequence";
    }
    bool same_start = strcmp(want_start, rift_cli_json_str(have, "start")) == 0;
    const char *arg_key = strcmp(want_start, "sequence") == 0 ? "start_sequence"
                          : strcmp(want_start, "time") == 0   ? "start_time_ms"
                          : strcmp(want_start, "since") == 0  ? "since_ms"
                                                              : NULL;
    long long want_arg = 1;
    if (arg_key != NULL && json_object_get(want, arg_key) != NULL) {
        want_arg = rift_cli_json_int(want, arg_key);
    }
    if (same_start && arg_key != NULL &&
        rift_cli_json_int(have, arg_key) != want_arg) {
        same_start = false;
    }
    fprintf(stderr, "rift consumer: %s on %s differs in:", a->pos[1],
            a->pos[0]);
    int n = 0;
    if (strcmp(rift_cli_json_str(have, "filter"),
               rift_cli_json_str(want, "filter")) != 0) {
        fprintf(stderr, " filter (it has %s, you asked for %s)",
                rift_cli_json_str(have, "filter"),
                rift_cli_json_str(want, "filter"));
        n++;
    }
    if (!same_start) {
        fprintf(stderr, "%s start (it has %s", n++ ? "," : "",
                rift_cli_json_str(have, "start"));
        if (arg_key != NULL && json_object_get(have, arg_key) != NULL) {
            fprintf(stderr, " %s=%lld", arg_key,
                    rift_cli_json_int(have, arg_key));
        }
        fprintf(stderr, ", you asked for %s", want_start);
        if (arg_key != NULL) {
            fprintf(stderr, " %s=%lld", arg_key, want_arg);
        }
        fprintf(stderr, ")");
    }
    static const char *const limits[][2] = {
        {"ack_wait_ms", "--ack-wait"}, {"max_ack_pending", "--max-pending"}};
    for (size_t i = 0; i < 2; i++) {
        long long h = rift_cli_json_int(have, limits[i][0]);
        long long w = rift_cli_json_int(want, limits[i][0]);
        if (h != w) {
            fprintf(stderr, "%s %s (it has %lld, you asked for %lld)",
                    n++ ? "," : "", limits[i][1], h, w);
        }
    }
    if (n == 0) {
        fprintf(stderr, " nothing the CLI can see (rift consumer info %s %s)",
                a->pos[0], a->pos[1]);
    }
    fprintf(stderr, "; rift consumer delete %s %s removes it\n", a->pos[0],
            a->pos[1]);
    json_decref(have);
}

static bool differs(const char *text) {
    return strstr(text, "consumer already exists with different settings") !=
           NULL;
}

/* Opens at a sequence with the wire's own CONSUMER_OPEN; drops args. */
static int open_wire(consumer_args *a, rift_client *c, json_t *args,
                     const char *filter, uint64_t seq, uint64_t ack_wait,
                     uint64_t pending) {
    rift_consumer_config cfg = {
        .filter = filter,
        .filter_len = strlen(filter),
        .start_sequence = seq,
        .ack_wait_ms = ack_wait,
        .max_ack_pending = pending,
    };
    rift_error err;
    if (rift_client_consumer_open(c, a->pos[0], strlen(a->pos[0]), a->pos[1],
                                  strlen(a->pos[1]), &cfg, &err) != 0) {
        if (strcmp(err.text, "unknown stream") == 0) {
            fprintf(stderr,
                    "rift consumer: unknown stream \"%s\"; rift stream "
                    "info lists the streams\n",
                    a->pos[0]);
        } else {
            fprintf(stderr, "rift consumer: %s\n", err.text);
        }
        if (differs(err.text)) {
            explain_differs(c, a, args);
        }
        json_decref(args);
        return 1;
    }
    json_decref(args);
    printf("consumer %s on %s: open (filter %s, start sequence %llu)\n",
           a->pos[1], a->pos[0], filter, (unsigned long long)seq);
    return 0;
}

/* Opens with the extension CONSUMER_OPEN_EXT, the path of --max-deliver:
 * the start of |args| (parse_start's keys) as a rift_consumer_config;
 * drops args. */
static int open_ext(consumer_args *a, rift_client *c, json_t *args,
                    const char *filter, uint64_t ack_wait, uint64_t pending,
                    uint32_t max_deliver) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = filter;
    cfg.filter_len = strlen(filter);
    cfg.ack_wait_ms = ack_wait;
    cfg.max_ack_pending = (uint32_t)pending;
    cfg.max_deliver = max_deliver;
    const char *start =
        a->start != NULL ? rift_cli_json_str(args, "start") : "sequence";
    static const char *const names[] = {"sequence", "first", "last",
                                        "new",      "time",  "since"};
    for (unsigned i = 0; i < 6; i++) {
        if (strcmp(start, names[i]) == 0) {
            cfg.start = (rift_consumer_start)i;
        }
    }
    cfg.start_sequence =
        a->start != NULL && cfg.start == RIFT_START_SEQUENCE
            ? (uint64_t)rift_cli_json_int(args, "start_sequence")
            : 1;
    if (cfg.start == RIFT_START_TIME) {
        cfg.start_time_ms = (uint64_t)rift_cli_json_int(args, "start_time_ms");
    } else if (cfg.start == RIFT_START_TIME_DELTA) {
        cfg.start_time_ms = (uint64_t)rift_cli_json_int(args, "since_ms");
    }
    json_decref(args);
    rift_client_consumer_info info;
    rift_error err;
    if (rift_client_consumer_open_ext(c, a->pos[0], strlen(a->pos[0]),
                                      a->pos[1], strlen(a->pos[1]), &cfg, &info,
                                      &err) != 0) {
        fprintf(stderr, "rift consumer: %s\n", err.text);
        return 1;
    }
    printf("consumer %s on %s: %s (filter %s, next sequence %llu, max "
           "deliver %u)\n",
           a->pos[1], a->pos[0], info.created ? "open" : "resumed", filter,
           (unsigned long long)info.next_sequence, max_deliver);
    return 0;
}

static int use_ext(consumer_args *a, rift_client *c, const char *feature);

/* Opens through the consumer.open control call, the path for any other
 * start and for an identity; a principal without control rights opening
 * its own consumer takes CONSUMER_OPEN_EXT instead (the control answer's
 * layout is kept for those who may use it). Drops args. */
static int open_control(consumer_args *a, rift_client *c, json_t *args,
                        const char *filter, uint64_t ack_wait,
                        uint64_t pending) {
    json_t *data;
    char why[RIFT_ERROR_TEXT_MAX + 1];
    if (rift_cli_control_quiet(c, "consumer", "consumer.open",
                               json_incref(args), &data, why,
                               sizeof(why)) != 0) {
        if (strcmp(why, "publication not permitted") == 0 &&
            use_ext(a, c, "consumer-open") > 0) {
            return open_ext(a, c, args, filter, ack_wait, pending, 0);
        }
        rift_cli_control_error("consumer", why);
        if (differs(why)) {
            explain_differs(c, a, args);
        }
        json_decref(args);
        return 1;
    }
    json_decref(args);
    print_consumer(data);
    json_decref(data);
    return 0;
}

static int cmd_open(consumer_args *a, rift_client *c) {
    uint64_t ack_wait = 30000, pending = 128, seq;
    if ((a->ack_wait != NULL && (!rift_cli_parse_u64("consumer", "--ack-wait",
                                                     a->ack_wait, &ack_wait) ||
                                 ack_wait == 0 || ack_wait > ACK_WAIT_MAX)) ||
        (a->max_pending != NULL &&
         (!rift_cli_parse_u64("consumer", "--max-pending", a->max_pending,
                              &pending) ||
          pending == 0 || pending > ACK_PENDING_MAX))) {
        fprintf(stderr,
                "rift consumer: --ack-wait expects 1..%d ms and "
                "--max-pending 1..%d\n",
                ACK_WAIT_MAX, ACK_PENDING_MAX);
        return 2;
    }
    uint64_t max_deliver = 0;
    if (a->max_deliver != NULL &&
        (!rift_cli_parse_u64("consumer", "--max-deliver", a->max_deliver,
                             &max_deliver) ||
         max_deliver > UINT32_MAX || a->identity != NULL)) {
        fprintf(stderr,
                "rift consumer: --max-deliver expects 0..%u and "
                "acts on your own consumer (no --identity)\n",
                UINT32_MAX);
        return 2;
    }
    const char *filter = a->filter ? a->filter : ">";
    if (!rift_cli_subject_ok("consumer", "--filter", filter, false)) {
        return 2;
    }
    json_t *args =
        json_pack("{s:s,s:s,s:s,s:I,s:I}", "stream", a->pos[0], "name",
                  a->pos[1], "filter", filter, "ack_wait_ms",
                  (json_int_t)ack_wait, "max_ack_pending", (json_int_t)pending);
    if (args == NULL || !parse_start(a->start, args, &seq)) {
        json_decref(args);
        return 2;
    }
    if (a->identity != NULL) {
        json_object_set_new(args, "identity", json_string(a->identity));
    }
    int rc = check_filter(c, a->pos[0], filter);
    if (rc != 0) {
        json_decref(args);
        return rc;
    }
    if (a->max_deliver != NULL) {
        return open_ext(a, c, args, filter, ack_wait, pending,
                        (uint32_t)max_deliver);
    }
    if (seq != 0 && a->identity == NULL) {
        /* A sequence start is the wire's own CONSUMER_OPEN. */
        return open_wire(a, c, args, filter, seq, ack_wait, pending);
    }
    return open_control(a, c, args, filter, ack_wait, pending);
}

/* ---- fetch, ack ---- */

/* Why a fetch came back empty, when consumer.info can tell: the
 * consumer's max pending is reached. */
static void explain_empty(rift_client *c, const consumer_args *a) {
    json_t *args =
        json_pack("{s:s,s:s}", "stream", a->pos[0], "name", a->pos[1]);
    json_t *d;
    char why[RIFT_ERROR_TEXT_MAX + 1];
    if (rift_cli_control_quiet(c, "consumer", "consumer.info", args, &d, why,
                               sizeof(why)) != 0) {
        fprintf(stderr, "rift consumer: nothing to fetch\n");
        return;
    }
    long long pending = rift_cli_json_int(d, "pending");
    long long max = rift_cli_json_int(d, "max_ack_pending");
    if (max > 0 && pending >= max) {
        fprintf(stderr,
                "rift consumer: nothing to fetch: %lld delivered records "
                "await acknowledgement, the consumer's max pending (%lld);\n"
                "ack them (rift consumer ack %s %s SEQ...) or wait %lld ms "
                "for their redelivery\n",
                pending, max, a->pos[0], a->pos[1],
                rift_cli_json_int(d, "ack_wait_ms"));
    } else {
        fprintf(stderr, "rift consumer: nothing to fetch\n");
    }
    json_decref(d);
}

/* Pauses between the fetches of --wait against a server without the
 * waiting fetch: 50 ms, doubling up to 1 s, never past the deadline. */
static void pause_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Prints (and with --ack acknowledges) |n| deliveries, releasing each;
 * 0, or 1 after a failed ack (the rest is printed, not acked). */
static int print_deliveries(const consumer_args *a, rift_client *c,
                            rift_client_delivery *d, size_t n, const char *sep,
                            size_t sep_len) {
    const char *stream = a->pos[0], *name = a->pos[1];
    rift_error err;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!a->raw) {
            char when[RIFT_CLI_TIME_LEN];
            rift_cli_time_format(d[i].timestamp_ms, when);
            printf("#%llu (delivery %u) %s ", (unsigned long long)d[i].sequence,
                   d[i].delivery_count, when);
        }
        rift_cli_print_msg(stdout, d[i].msg, a->raw);
        if (sep_len > 0) {
            fwrite(sep, 1, sep_len, stdout);
            fflush(stdout);
        }
        if (a->ack && rc == 0 &&
            rift_client_ack(c, stream, strlen(stream), name, strlen(name),
                            d[i].sequence, &err) != 0) {
            fprintf(stderr, "rift consumer: ack %llu: %s\n",
                    (unsigned long long)d[i].sequence, err.text);
            rc = 1;
        }
        rift_msg_unref(d[i].msg);
    }
    return rc;
}

/* --count of fetch and next: 1..FETCH_MAX records (printed when not). */
static bool parse_count(const consumer_args *a, uint64_t *count) {
    if (a->count != NULL &&
        (!rift_cli_parse_u64("consumer", "--count", a->count, count) ||
         *count == 0 || *count > FETCH_MAX)) {
        fprintf(stderr, "rift consumer: --count expects 1..%d\n", FETCH_MAX);
        return false;
    }
    return true;
}

/* --sep of fetch and next (rift_cli_parse_sep prints what is wrong). */
static bool parse_sep(const consumer_args *a, char *sep, size_t *sep_len) {
    return a->sep_s == NULL ||
           rift_cli_parse_sep("consumer", a->sep_s, sep, sep_len);
}

/* Whether the space-separated |features| of EXT_INFO name |want|. */
static bool has_feature(const char *features, const char *want) {
    size_t n = strlen(want);
    for (const char *p = features; (p = strstr(p, want)) != NULL; p += n) {
        if ((p == features || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

/* Whether the server has the waiting fetch (EXT_HELLO's "fetch-wait"):
 * fetch --wait then waits on the server; a v1 server is polled. */
static bool offers_fetch_wait(rift_client *c) {
    bool ext = false;
    char features[4096];
    rift_error err;
    return rift_client_extensions(c, &ext, features, sizeof(features), &err) ==
               0 &&
           ext && has_feature(features, "fetch-wait");
}

static int cmd_fetch(consumer_args *a, rift_client *c) {
    uint64_t count = 1, wait = 0;
    if (!parse_count(a, &count)) {
        return 2;
    }
    if (a->wait != NULL && !rift_cli_duration_parse(a->wait, &wait)) {
        fprintf(stderr, "rift consumer: --wait expects a duration such as "
                        "500ms, 10s or 1m\n");
        return 2;
    }
    char sep[RIFT_CLI_SEP_MAX];
    size_t sep_len = 0;
    if (!parse_sep(a, sep, &sep_len)) {
        return 2;
    }
    rift_client_delivery d[FETCH_MAX];
    size_t n = 0;
    rift_error err;
    const char *stream = a->pos[0], *name = a->pos[1];
    uint64_t deadline = now_ms() + wait, backoff = 50;
    bool waits = wait > 0 && offers_fetch_wait(c);
    rift_cli_catch_signals();
    for (;;) {
        uint64_t start = now_ms();
        uint64_t left = start < deadline ? deadline - start : 0;
        /* The waiting fetch in slices of at most 1 s, so that Ctrl-C ends
         * the wait within one; a record wakes it at once either way. */
        int rc =
            waits && left > 0
                ? rift_client_fetch_wait(c, stream, strlen(stream), name,
                                         strlen(name), (uint32_t)count,
                                         left < 1000 ? (uint32_t)left : 1000u,
                                         d, &n, &err)
                : rift_client_fetch(c, stream, strlen(stream), name,
                                    strlen(name), (uint32_t)count, d, &n, &err);
        if (rc != 0) {
            fprintf(stderr, "rift consumer: %s\n", err.text);
            return 1;
        }
        uint64_t now = now_ms();
        if (n > 0 || now >= deadline || rift_cli_stop_requested()) {
            break;
        }
        if (!waits) {
            pause_ms(backoff < deadline - now ? backoff : deadline - now);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        }
    }
    int rc = print_deliveries(a, c, d, n, sep, sep_len);
    if (n == 0 && !a->raw) {
        explain_empty(c, a);
    }
    return rc;
}

/* next: the waiting fetch (CONSUMER_FETCH_WAIT), --wait 1 ms..2 min. */
static int cmd_next(consumer_args *a, rift_client *c) {
    uint64_t count = 1, wait = 5000;
    if (!parse_count(a, &count)) {
        return 2;
    }
    if (a->wait != NULL && (!rift_cli_duration_parse(a->wait, &wait) ||
                            wait == 0 || wait > 120000)) {
        fprintf(stderr, "rift consumer: --wait expects a duration from 1ms "
                        "to 2m, such as 500ms or 10s\n");
        return 2;
    }
    char sep[RIFT_CLI_SEP_MAX];
    size_t sep_len = 0;
    if (!parse_sep(a, sep, &sep_len)) {
        return 2;
    }
    rift_client_delivery d[FETCH_MAX];
    size_t n = 0;
    rift_error err;
    const char *stream = a->pos[0], *name = a->pos[1];
    if (rift_client_fetch_wait(c, stream, strlen(stream), name, strlen(name),
                               (uint32_t)count, (uint32_t)wait, d, &n,
                               &err) != 0) {
        fprintf(stderr, "rift consumer: %s\n", err.text);
        return 1;
    }
    int rc = print_deliveries(a, c, d, n, sep, sep_len);
    if (n == 0 && !a->raw) {
        fprintf(stderr, "rift consumer: nothing to fetch within %llu ms\n",
                (unsigned long long)wait);
    }
    return rc;
}

/* ack STREAM NAME SEQ... and progress STREAM NAME SEQ...: each sequence
 * in turn (acknowledged, or its ack wait restarted with the extension
 * CONSUMER_PROGRESS); the first failure ends the command. */
static int cmd_ack(consumer_args *a, rift_client *c, bool progress) {
    const char *stream = a->pos[0], *name = a->pos[1];
    for (int i = 2; i < a->npos; i++) {
        uint64_t seq;
        if (!rift_cli_parse_u64("consumer", "SEQ", a->pos[i], &seq)) {
            return 2;
        }
    }
    for (int i = 2; i < a->npos; i++) {
        uint64_t seq;
        rift_error err;
        rift_cli_parse_u64("consumer", "SEQ", a->pos[i], &seq);
        int rc = progress
                     ? rift_client_in_progress(c, stream, strlen(stream), name,
                                               strlen(name), seq, &err)
                     : rift_client_ack(c, stream, strlen(stream), name,
                                       strlen(name), seq, &err);
        if (rc != 0) {
            fprintf(stderr, "rift consumer: %s %llu: %s\n",
                    progress ? "progress" : "ack", (unsigned long long)seq,
                    err.text);
            return 1;
        }
    }
    return 0;
}

/* nak STREAM NAME SEQ [--delay D] and term STREAM NAME SEQ: one
 * delivery settled through the extension opcodes. */
static int cmd_settle(consumer_args *a, rift_client *c, bool nak) {
    const char *stream = a->pos[0], *name = a->pos[1];
    uint64_t seq, delay = 0;
    if (!rift_cli_parse_u64("consumer", "SEQ", a->pos[2], &seq)) {
        return 2;
    }
    if (a->delay != NULL &&
        (!nak || !rift_cli_duration_parse(a->delay, &delay) ||
         delay > 3600000)) {
        fprintf(stderr, "rift consumer: --delay (nak only) expects a duration "
                        "up to 1h, such as 500ms or 30s\n");
        return 2;
    }
    rift_error err;
    int rc = nak ? rift_client_nak(c, stream, strlen(stream), name,
                                   strlen(name), seq, (uint32_t)delay, &err)
                 : rift_client_term(c, stream, strlen(stream), name,
                                    strlen(name), seq, &err);
    if (rc != 0) {
        fprintf(stderr, "rift consumer: %s %llu: %s\n", nak ? "nak" : "term",
                (unsigned long long)seq, err.text);
        return 1;
    }
    return 0;
}

/* ---- ls ---- */

/* ls STREAM: every page of CONSUMER_LIST, as a table or one JSON array. */
static int cmd_ls(consumer_args *a, rift_client *c) {
    const char *stream = a->pos[0];
    json_t *all = a->json ? json_array() : NULL;
    char after[sizeof(((rift_client_consumer_entry *)0)->name)] = "";
    size_t after_len = 0, total = 0;
    bool more = true;
    while (more) {
        rift_client_consumer_entry *e = NULL;
        size_t n = 0;
        rift_error err;
        if (rift_client_consumer_list(c, stream, strlen(stream), after,
                                      after_len, 256, &e, &n, &more,
                                      &err) != 0) {
            fprintf(stderr, "rift consumer: %s\n", err.text);
            json_decref(all);
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            const rift_client_consumer_info *in = &e[i].info;
            if (all != NULL) {
                json_array_append_new(
                    all,
                    json_pack("{s:s,s:s%,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name",
                              e[i].name, "filter", in->config.filter,
                              in->config.filter_len, "start_sequence",
                              (json_int_t)in->start_sequence, "next_sequence",
                              (json_int_t)in->next_sequence, "pending",
                              (json_int_t)in->pending, "ack_wait_ms",
                              (json_int_t)in->config.ack_wait_ms,
                              "max_ack_pending",
                              (json_int_t)in->config.max_ack_pending,
                              "max_deliver", (json_int_t)in->config.max_deliver,
                              "terminated", (json_int_t)in->terminated));
                continue;
            }
            if (total + i == 0) {
                printf("%-24s %-20s %10s %8s %10s %11s\n", "NAME", "FILTER",
                       "NEXT", "PENDING", "ACK WAIT", "MAX DELIVER");
            }
            printf("%-24s %-20.*s %10llu %8u %8llums %11u\n", e[i].name,
                   (int)in->config.filter_len, in->config.filter,
                   (unsigned long long)in->next_sequence, in->pending,
                   (unsigned long long)in->config.ack_wait_ms,
                   in->config.max_deliver);
        }
        if (n > 0) {
            memcpy(after, e[n - 1].name, e[n - 1].name_len + 1);
            after_len = e[n - 1].name_len;
        } else {
            more = false; /* never loop on an empty page */
        }
        total += n;
        rift_client_consumer_list_free(e);
    }
    if (all != NULL) {
        rift_cli_json_print(stdout, all);
        json_decref(all);
    } else if (total == 0) {
        printf("no consumers of yours on %s\n", stream);
    }
    return 0;
}

/* ---- info, delete ---- */

/* Whether this call of your own consumer takes the extension: no
 * --identity, and a server whose EXT_INFO lists |feature|. 1 = yes,
 * 0 = use the control command, -1 = the probe failed (printed). */
static int use_ext(consumer_args *a, rift_client *c, const char *feature) {
    char features[4096];
    bool ext = false;
    rift_error err;
    if (a->identity != NULL) {
        return 0;
    }
    if (rift_client_extensions(c, &ext, features, sizeof(features), &err) !=
        0) {
        fprintf(stderr, "rift consumer: %s\n", err.text);
        return -1;
    }
    return ext && has_feature(features, feature) ? 1 : 0;
}

static void print_ext_error(const char *stream, const rift_error *err) {
    if (strcmp(err->text, "unknown stream") == 0) {
        fprintf(stderr,
                "rift consumer: unknown stream \"%s\"; rift stream info "
                "lists the streams\n",
                stream);
    } else {
        fprintf(stderr, "rift consumer: %s\n", err->text);
    }
}

/* info of your own consumer over CONSUMER_INFO_GET, so that a principal
 * without control rights reads it too; the fields and layout of the
 * control command's answer, without the identity (the wire does not tell
 * the client its own). */
static int cmd_info_ext(consumer_args *a, rift_client *c) {
    static const char *const starts[] = {"sequence", "first", "last",
                                         "new",      "time",  "since"};
    const char *stream = a->pos[0], *name = a->pos[1];
    rift_client_consumer_info in;
    rift_error err;
    if (rift_client_consumer_get_info(c, stream, strlen(stream), name,
                                      strlen(name), &in, &err) != 0) {
        print_ext_error(stream, &err);
        return 1;
    }
    unsigned s = (unsigned)in.config.start;
    json_t *d = json_pack(
        "{s:s,s:s,s:s%,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name", name,
        "stream", stream, "filter", in.config.filter, in.config.filter_len,
        "start", s < 6 ? starts[s] : "?", "start_sequence",
        (json_int_t)in.start_sequence, "next_sequence",
        (json_int_t)in.next_sequence, "pending", (json_int_t)in.pending,
        "ack_wait_ms", (json_int_t)in.config.ack_wait_ms, "max_ack_pending",
        (json_int_t)in.config.max_ack_pending, "max_deliver",
        (json_int_t)in.config.max_deliver, "terminated",
        (json_int_t)in.terminated);
    if (d == NULL) {
        fprintf(stderr, "rift consumer: out of memory\n");
        return 1;
    }
    if (in.config.start == RIFT_START_TIME) {
        json_object_set_new(d, "start_time_ms",
                            json_integer((json_int_t)in.config.start_time_ms));
    } else if (in.config.start == RIFT_START_TIME_DELTA) {
        json_object_set_new(d, "since_ms",
                            json_integer((json_int_t)in.config.start_time_ms));
    }
    if (a->json) {
        rift_cli_json_print(stdout, d);
    } else {
        print_consumer(d);
    }
    json_decref(d);
    return 0;
}

static int cmd_control(consumer_args *a, rift_client *c, const char *command) {
    json_t *args =
        json_pack("{s:s,s:s}", "stream", a->pos[0], "name", a->pos[1]);
    if (args != NULL && a->identity != NULL) {
        json_object_set_new(args, "identity", json_string(a->identity));
    }
    json_t *data;
    if (rift_cli_control(c, "consumer", command, args, &data) != 0) {
        return 1;
    }
    if (a->json) {
        rift_cli_json_print(stdout, data);
    } else if (strcmp(command, "consumer.info") == 0) {
        print_consumer(data);
    } else {
        printf("consumer %s on %s (identity %s): deleted\n",
               rift_cli_json_str(data, "name"),
               rift_cli_json_str(data, "stream"),
               rift_cli_json_str(data, "identity"));
    }
    json_decref(data);
    return 0;
}

/* delete (rm) of your own consumer over CONSUMER_DELETE, so a principal
 * without control rights removes its own consumer (use_ext decides:
 * --identity, or a server without it, takes consumer.delete). */
static int cmd_delete_ext(consumer_args *a, rift_client *c) {
    const char *stream = a->pos[0], *name = a->pos[1];
    rift_error err;
    if (rift_client_consumer_delete(c, stream, strlen(stream), name,
                                    strlen(name), &err) != 0) {
        print_ext_error(stream, &err);
        return 1;
    }
    if (a->json) {
        json_t *d = json_pack("{s:s,s:s,s:b}", "stream", stream, "name", name,
                              "deleted", 1);
        rift_cli_json_print(stdout, d);
        json_decref(d);
    } else {
        /* The wire does not tell the client its identity: yours. */
        printf("consumer %s on %s: deleted\n", name, stream);
    }
    return 0;
}

int rift_cmd_consumer(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    static const char *const subs[] = {"open",   "fetch", "ack",  "info",
                                       "delete", "nak",   "term", "next",
                                       "ls",     "rm",    "push", "progress"};
    const char *sub = argv[1];
    size_t k = 0;
    while (k < sizeof(subs) / sizeof(subs[0]) && strcmp(sub, subs[k]) != 0) {
        k++;
    }
    if (k == sizeof(subs) / sizeof(subs[0])) {
        fprintf(stderr, "rift consumer: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    consumer_args a;
    memset(&a, 0, sizeof(a));
    rift_cli_conn_init(&a.cc);
    int rc = parse(&a, argc, argv);
    if (rc >= 0) {
        return rc;
    }
    bool progress = strcmp(sub, "progress") == 0;
    bool is_ack = strcmp(sub, "ack") == 0 || progress;
    bool settle = strcmp(sub, "nak") == 0 || strcmp(sub, "term") == 0;
    bool ls = strcmp(sub, "ls") == 0;
    if (ls ? a.npos != 1
           : a.npos < 2 || (is_ack && a.npos < 3) || (settle && a.npos != 3) ||
                 (!is_ack && !settle && a.npos > 2)) {
        usage(stderr);
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&a.cc, "consumer", &c) != 0) {
        return 1;
    }
    if (strcmp(sub, "open") == 0) {
        rc = cmd_open(&a, c);
    } else if (strcmp(sub, "fetch") == 0) {
        rc = cmd_fetch(&a, c);
    } else if (strcmp(sub, "next") == 0) {
        rc = cmd_next(&a, c);
    } else if (ls) {
        rc = cmd_ls(&a, c);
    } else if (strcmp(sub, "push") == 0) {
        rc = rift_cli_consumer_push(c, a.pos[0], a.pos[1], a.max_in_flight,
                                    a.count, a.ack_wait, a.raw);
    } else if (is_ack) {
        rc = cmd_ack(&a, c, progress);
    } else if (settle) {
        rc = cmd_settle(&a, c, sub[0] == 'n');
    } else {
        /* info and delete (rm is its short name) of your own consumer go
         * over the extension when the server has it. */
        bool info = sub[0] == 'i';
        int ext = use_ext(&a, c, info ? "consumer-info" : "consumer-delete");
        if (ext < 0) {
            rc = 1;
        } else if (ext > 0) {
            rc = info ? cmd_info_ext(&a, c) : cmd_delete_ext(&a, c);
        } else {
            rc = cmd_control(&a, c, info ? "consumer.info" : "consumer.delete");
        }
    }
    rift_client_del(c);
    return rc;
}
