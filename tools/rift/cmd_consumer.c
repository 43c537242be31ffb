/*
 * cmd_consumer.c — `rift consumer open|fetch|ack|info|delete` (tools
 * layer): durable pull consumers of a retained stream. open (with a
 * sequence start), fetch and ack are protocol v1 opcodes 12, 13 and 15;
 * the other start positions (NATS Streaming's first, last received, new
 * only, by time), info and delete have no opcode and go through riftd's
 * control commands, which act on the consumer of the identity the CLI
 * authenticated as (or --identity).
 */
#include "cmd.h"
#include "conn.h"
#include "control.h"
#include "io.h"
#include "timefmt.h"

#include <stdlib.h>
#include <string.h>

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
        "       rift consumer fetch STREAM NAME [--count N] [--ack] [--raw]\n"
        "       rift consumer ack STREAM NAME SEQ...\n"
        "       rift consumer info STREAM NAME [--identity ID] [--json]\n"
        "       rift consumer delete STREAM NAME [--identity ID]\n"
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
        "        SUBJECT: PAYLOAD\"; --ack acknowledges each once printed.\n"
        "ack     acknowledges delivered records.\n"
        "Consumers are scoped by identity: NAME is yours, as on the wire. "
        "Start positions\nother than seq:N, info and delete use riftd's "
        "control commands (control = true\nand a publish grant on "
        "rift.control.>); --identity acts on another identity's\n"
        "consumer.\n\n");
    rift_cli_conn_usage(out);
}

typedef struct consumer_args {
    rift_cli_conn cc;
    const char *pos[64];
    int npos;
    const char *filter, *start, *ack_wait, *max_pending, *identity, *count;
    bool ack, raw, json;
} consumer_args;

static int parse(consumer_args *a, int argc, char **argv) {
    static const struct {
        const char *flag;
        size_t offset;
    } opts[] = {
        {"--filter", offsetof(consumer_args, filter)},
        {"--start", offsetof(consumer_args, start)},
        {"--ack-wait", offsetof(consumer_args, ack_wait)},
        {"--max-pending", offsetof(consumer_args, max_pending)},
        {"--identity", offsetof(consumer_args, identity)},
        {"--count", offsetof(consumer_args, count)},
    };
    for (int i = 2; i < argc;) {
        int r = rift_cli_conn_flag(&a->cc, "consumer", argc, argv, &i);
        for (size_t k = 0; r == 0 && k < sizeof(opts) / sizeof(opts[0]); k++) {
            const char *v = NULL;
            r = rift_cli_opt_value("consumer", opts[k].flag, argc, argv, &i,
                                   &v);
            if (r > 0) {
                memcpy((char *)a + opts[k].offset, &v, sizeof(v));
            }
        }
        if (r < 0) {
            return 2;
        }
        if (r > 0) {
            continue;
        }
        const char *s = argv[i++];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(s, "--ack") == 0 || strcmp(s, "--raw") == 0 ||
            strcmp(s, "--json") == 0) {
            *(s[2] == 'a' ? &a->ack : s[2] == 'r' ? &a->raw : &a->json) = true;
            continue;
        }
        if (s[0] == '-' || a->npos == 64) {
            fprintf(stderr, "rift consumer: unexpected argument '%s'\n", s);
            usage(stderr);
            return 2;
        }
        a->pos[a->npos++] = s;
    }
    return -1;
}

/* ---- open ---- */

/* --start POS as control arguments (added to |args|); *wire_seq is set
 * when POS is a plain sequence the wire's CONSUMER_OPEN can carry. */
static bool parse_start(const char *pos, json_t *args, uint64_t *wire_seq) {
    uint64_t v = 0;
    *wire_seq = 0;
    if (pos == NULL) {
        *wire_seq = 1;
        return true;
    }
    if (strncmp(pos, "seq:", 4) == 0) {
        if (!rift_cli_parse_u64("consumer", "--start seq:", pos + 4, &v) ||
            v == 0) {
            return false;
        }
        *wire_seq = v;
        json_object_set_new(args, "start", json_string("sequence"));
        json_object_set_new(args, "start_sequence",
                            json_integer((json_int_t)v));
        return true;
    }
    if (strcmp(pos, "first") == 0 || strcmp(pos, "last") == 0 ||
        strcmp(pos, "new") == 0) {
        json_object_set_new(args, "start", json_string(pos));
        return true;
    }
    if (strncmp(pos, "time:", 5) == 0) {
        if (!rift_cli_time_parse(pos + 5, &v)) {
            fprintf(stderr, "rift consumer: --start time: expects RFC 3339 "
                            "(2026-01-02T15:04:05Z) or Unix milliseconds\n");
            return false;
        }
        json_object_set_new(args, "start", json_string("time"));
        json_object_set_new(args, "start_time_ms", json_integer((json_int_t)v));
        return true;
    }
    if (strncmp(pos, "since:", 6) == 0) {
        if (!rift_cli_duration_parse(pos + 6, &v)) {
            fprintf(stderr, "rift consumer: --start since: expects a duration "
                            "such as 90s, 5m or 1h30m\n");
            return false;
        }
        json_object_set_new(args, "start", json_string("since"));
        json_object_set_new(args, "since_ms", json_integer((json_int_t)v));
        return true;
    }
    fprintf(stderr, "rift consumer: --start expects seq:N, first, last, new, "
                    "time:T or since:D\n");
    return false;
}

static void print_consumer(const json_t *d) {
    printf("consumer %s on %s (identity %s)\n", rift_cli_json_str(d, "name"),
           rift_cli_json_str(d, "stream"), rift_cli_json_str(d, "identity"));
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
    const char *filter = a->filter ? a->filter : ">";
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
    if (seq != 0 && a->identity == NULL) {
        /* A sequence start is the wire's own CONSUMER_OPEN. */
        json_decref(args);
        rift_client_consumer_config cfg = {
            .filter = filter,
            .filter_len = strlen(filter),
            .start_sequence = seq,
            .ack_wait_ms = ack_wait,
            .max_ack_pending = pending,
        };
        rift_error err;
        if (rift_client_consumer_open(c, a->pos[0], strlen(a->pos[0]),
                                      a->pos[1], strlen(a->pos[1]), &cfg,
                                      &err) != 0) {
            fprintf(stderr, "rift consumer: %s\n", err.text);
            return 1;
        }
        printf("consumer %s on %s: open (filter %s, start sequence %llu)\n",
               a->pos[1], a->pos[0], filter, (unsigned long long)seq);
        return 0;
    }
    json_t *data;
    if (rift_cli_control(c, "consumer", "consumer.open", args, &data) != 0) {
        return 1;
    }
    print_consumer(data);
    json_decref(data);
    return 0;
}

/* ---- fetch, ack ---- */

static int cmd_fetch(consumer_args *a, rift_client *c) {
    uint64_t count = 1;
    if (a->count != NULL &&
        (!rift_cli_parse_u64("consumer", "--count", a->count, &count) ||
         count == 0 || count > FETCH_MAX)) {
        fprintf(stderr, "rift consumer: --count expects 1..%d\n", FETCH_MAX);
        return 2;
    }
    rift_client_delivery d[FETCH_MAX];
    size_t n = 0;
    rift_error err;
    const char *stream = a->pos[0], *name = a->pos[1];
    if (rift_client_fetch(c, stream, strlen(stream), name, strlen(name),
                          (uint32_t)count, d, &n, &err) != 0) {
        fprintf(stderr, "rift consumer: %s\n", err.text);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!a->raw) {
            char when[RIFT_CLI_TIME_LEN];
            rift_cli_time_format(d[i].timestamp_ms, when);
            printf("#%llu (delivery %u) %s ", (unsigned long long)d[i].sequence,
                   d[i].delivery_count, when);
        }
        rift_cli_print_msg(stdout, d[i].msg, a->raw);
        if (a->ack && rc == 0 &&
            rift_client_ack(c, stream, strlen(stream), name, strlen(name),
                            d[i].sequence, &err) != 0) {
            fprintf(stderr, "rift consumer: ack %llu: %s\n",
                    (unsigned long long)d[i].sequence, err.text);
            rc = 1;
        }
        rift_msg_unref(d[i].msg);
    }
    if (n == 0 && !a->raw) {
        fprintf(stderr, "rift consumer: nothing to fetch\n");
    }
    return rc;
}

static int cmd_ack(consumer_args *a, rift_client *c) {
    const char *stream = a->pos[0], *name = a->pos[1];
    for (int i = 2; i < a->npos; i++) {
        uint64_t seq;
        rift_error err;
        if (!rift_cli_parse_u64("consumer", "SEQ", a->pos[i], &seq)) {
            return 2;
        }
        if (rift_client_ack(c, stream, strlen(stream), name, strlen(name), seq,
                            &err) != 0) {
            fprintf(stderr, "rift consumer: ack %llu: %s\n",
                    (unsigned long long)seq, err.text);
            return 1;
        }
    }
    return 0;
}

/* ---- info, delete ---- */

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

int rift_cmd_consumer(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    static const char *const subs[] = {"open", "fetch", "ack", "info",
                                       "delete"};
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
    bool is_ack = strcmp(sub, "ack") == 0;
    if (a.npos < 2 || (is_ack && a.npos < 3) || (!is_ack && a.npos > 2)) {
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
    } else if (is_ack) {
        rc = cmd_ack(&a, c);
    } else {
        rc = cmd_control(&a, c,
                         sub[0] == 'i' ? "consumer.info" : "consumer.delete");
    }
    rift_client_close(c);
    return rc;
}
