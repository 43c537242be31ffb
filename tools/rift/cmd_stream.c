/*
 * cmd_stream.c — `rift stream pub|info|replay|reopen` (tools layer; add,
 * edit, purge and rm are cmd_stream_admin.c): append
 * to a retained stream with STREAM_PUBLISH (opcode 10), and, through riftd's
 * control commands (protocol v1 has no opcode for them), list streams,
 * show one, replay its records without a consumer, and get one that a
 * failed write stopped going again.
 */
#include "args.h"
#include "cmd.h"
#include "cmd_stream_admin.h"
#include "conn_options.h"
#include "control_request.h"
#include "io.h"
#include "subjects.h"
#include "timefmt.h"

#include "common/base64.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift stream pub STREAM SUBJECT [DATA|-] [--reply SUBJECT]\n"
            "       rift stream info [STREAM] [--json]\n"
            "       rift stream replay STREAM [--from SEQ] [--limit N]\n"
            "                          [--raw [--sep SEP] | --json]\n"
            "       rift stream reopen STREAM\n"
            "       rift stream add|edit|purge|rm NAME ... (rift stream add "
            "--help)\n"
            "       (each takes the connection flags)\n\n"
            "pub     appends DATA ('-' reads stdin) and prints the sequence "
            "once it is stored.\n"
            "info    lists the streams, or shows STREAM with its "
            "configuration.\n"
            "replay  prints the retained records from SEQ on (default: the "
            "first), at most N\n        (default: all), as \"#SEQ TIME "
            "SUBJECT: PAYLOAD\"; --raw writes the payloads\n        only "
            "(each followed by SEP with --sep, e.g. --sep '\\n'), --json one "
            "JSON\n        object per record (payload in base64). A record "
            "too large for a control\n        answer (about 1 MiB) is "
            "skipped with a note; the exit status is then 1.\n"
            "reopen  gets a stream that a failed write stopped (a full disk "
            "given space,\n        an I/O error dealt with) going again "
            "without restarting riftd.\n"
            "info, replay and reopen use riftd's control commands: they need "
            "control = true and a\npublish grant on rift.control.> (the "
            "command names have two tokens).\nWithout them, info STREAM "
            "asks the server itself (a stream whose subjects\nyou may "
            "subscribe to).\n\n");
    rift_cli_conn_usage(out);
}

/* Arguments shared by the three subcommands. */
typedef struct stream_args {
    rift_cli_conn cc;
    const char *pos[3];
    int npos;
    const char *reply, *from, *limit, *sep_s;
    char sep[RIFT_CLI_SEP_MAX];
    size_t sep_len;
    bool raw, json;
} stream_args;

/* Returns -1 to go on, else an exit code. */
static int parse(stream_args *a, int argc, char **argv, int max_pos) {
    const rift_cli_opt opts[] = {
        {.name = "--reply", .value = &a->reply},
        {.name = "--from", .value = &a->from},
        {.name = "--limit", .value = &a->limit},
        {.name = "--sep", .value = &a->sep_s},
        {.name = "--raw", .flag = &a->raw},
        {.name = "--json", .flag = &a->json},
        {.name = NULL},
    };
    rift_cli_args args = {.cmd = "stream",
                          .usage = usage,
                          .conn = &a->cc,
                          .opts = opts,
                          .first = 2,
                          .pos = a->pos,
                          .max_pos = max_pos,
                          .dash_is_arg = true};
    int rc = rift_cli_parse(&args, argc, argv);
    a->npos = args.npos;
    if (rc >= 0) {
        return rc;
    }
    if (a->sep_s != NULL &&
        !rift_cli_parse_sep("stream", a->sep_s, a->sep, &a->sep_len)) {
        return 2;
    }
    return -1;
}

/* ---- pub ---- */

static int cmd_pub(stream_args *a) {
    if (a->npos < 2) {
        usage(stderr);
        return 2;
    }
    if (!rift_cli_subject_ok("stream", "subject", a->pos[1], true) ||
        (a->reply != NULL &&
         !rift_cli_subject_ok("stream", "--reply", a->reply, true))) {
        return 2;
    }
    uint8_t *data;
    size_t len;
    bool owned;
    if (rift_cli_read_data("stream", a->pos[2], &data, &len, &owned) != 0) {
        return 1;
    }
    rift_client *c;
    int rc = rift_cli_connect(&a->cc, "stream", &c);
    if (rc == 0) {
        rift_error err;
        rift_stored st;
        const char *stream = a->pos[0], *subject = a->pos[1];
        if (rift_client_stream_publish(
                c, stream, strlen(stream), subject, strlen(subject), a->reply,
                a->reply ? strlen(a->reply) : 0, data, len, &st, &err) != 0) {
            /* The wire's texts name neither the stream nor the subject. */
            if (err.code == RIFT_ERR_REMOTE &&
                strcmp(err.text, "unknown stream") == 0) {
                fprintf(stderr,
                        "rift stream: unknown stream \"%s\"; rift stream "
                        "info lists the streams\n",
                        stream);
            } else if (strcmp(err.text, "subject does not match this "
                                        "stream") == 0) {
                fprintf(stderr,
                        "rift stream: subject does not match this stream: "
                        "\"%s\" is not among the subjects of %s (rift stream "
                        "info %s shows them)\n",
                        subject, stream, stream);
            } else {
                fprintf(stderr, "rift stream: %s: %s\n", stream, err.text);
            }
            rc = 1;
        } else {
            char when[RIFT_CLI_TIME_LEN];
            rift_cli_time_format(st.timestamp_ms, when);
            printf("%s: stored as sequence %llu at %s\n", stream,
                   (unsigned long long)st.sequence, when);
        }
        rift_client_del(c);
    }
    if (owned) {
        free(data);
    }
    return rc;
}

/* ---- info ---- */

static void print_list(const json_t *data) {
    const json_t *streams = json_object_get(data, "streams");
    if (json_array_size(streams) == 0) {
        printf("no streams\n");
        return;
    }
    printf("%-20s %-7s %10s %10s %10s %10s %9s\n", "STREAM", "STORAGE",
           "MESSAGES", "BYTES", "FIRST", "LAST", "CONSUMERS");
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)streams, i, s) {
        char bytes[32];
        rift_cli_human_bytes(rift_cli_json_int(s, "bytes"), bytes,
                             sizeof(bytes));
        printf("%-20s %-7s %10lld %10s %10lld %10lld %9lld\n",
               rift_cli_json_str(s, "name"), rift_cli_json_str(s, "storage"),
               rift_cli_json_int(s, "messages"), bytes,
               rift_cli_json_int(s, "first_seq"),
               rift_cli_json_int(s, "last_seq"),
               rift_cli_json_int(s, "consumers"));
    }
}

static void print_limit(const json_t *s, const char *key, const char *label,
                        bool bytes) {
    const json_t *v = json_object_get(s, key);
    if (json_is_integer(v) && bytes) {
        char h[32];
        rift_cli_human_bytes((long long)json_integer_value(v), h, sizeof(h));
        printf("%-18s %s\n", label, h);
    } else if (json_is_integer(v)) {
        printf("%-18s %lld\n", label, (long long)json_integer_value(v));
    } else {
        printf("%-18s none\n", label);
    }
}

static void print_info(const json_t *s) {
    printf("%-18s %s\n", "stream", rift_cli_json_str(s, "name"));
    const char *path = json_string_value(json_object_get(s, "storage_path"));
    printf("%-18s %s%s%s\n", "storage", rift_cli_json_str(s, "storage"),
           path ? " " : "", path ? path : "");
    printf("%-18s", "subjects");
    size_t i;
    json_t *subj;
    json_array_foreach(json_object_get(s, "subjects"), i, subj) {
        printf("%s%s", i ? ", " : " ", json_string_value(subj));
    }
    printf("\n%-18s %lld\n", "messages", rift_cli_json_int(s, "messages"));
    char h[32];
    rift_cli_human_bytes(rift_cli_json_int(s, "bytes"), h, sizeof(h));
    printf("%-18s %s\n", "bytes", h);
    if (rift_cli_json_int(s, "messages") > 0) {
        printf("%-18s %lld..%lld\n", "sequences",
               rift_cli_json_int(s, "first_seq"),
               rift_cli_json_int(s, "last_seq"));
    } else {
        printf("%-18s none (last %lld)\n", "sequences",
               rift_cli_json_int(s, "last_seq"));
    }
    printf("%-18s %lld\n", "consumers", rift_cli_json_int(s, "consumers"));
    print_limit(s, "max_messages", "max_messages", false);
    print_limit(s, "max_bytes", "max_bytes", true);
    print_limit(s, "max_payload_bytes", "max_payload_bytes", true);
    print_limit(s, "max_consumers", "max_consumers", false);
    print_limit(s, "max_age_ms", "max_age_ms", false);
    printf("%-18s %s\n", "sync_on_write",
           rift_cli_json_bool(s, "sync_on_write") ? "yes" : "no");
    if (json_object_get(s, "segments") != NULL) {
        rift_cli_human_bytes(rift_cli_json_int(s, "disk_bytes"), h, sizeof(h));
        printf("%-18s %lld (%s on disk)\n", "segments",
               rift_cli_json_int(s, "segments"), h);
    }
    if (rift_cli_json_bool(s, "poisoned")) {
        printf("%-18s a write failed; writes resume by themselves once a "
               "full disk has\n%-18s space again, or run rift stream reopen "
               "%s\n",
               "state", "", rift_cli_json_str(s, "name"));
    }
}

static int cmd_info(stream_args *a) {
    rift_client *c;
    if (rift_cli_connect(&a->cc, "stream", &c) != 0) {
        return 1;
    }
    json_t *data;
    int rc;
    if (a->npos == 0) {
        rc = rift_cli_control(c, "stream", "streams", NULL, &data);
    } else {
        char why[1100];
        rc = rift_cli_control_quiet(c, "stream", "stream.info",
                                    json_pack("{s:s}", "name", a->pos[0]),
                                    &data, why, sizeof(why));
        if (rc != 0 && strstr(why, "not permitted") != NULL) {
            /* No control rights: the extension, for a stream this
             * principal may read. */
            rc = rift_cli_stream_info_ext(c, a->pos[0], a->json);
            rift_client_del(c);
            return rc;
        }
        if (rc != 0) {
            rift_cli_control_error("stream", why);
        }
    }
    rift_client_del(c);
    if (rc != 0) {
        return rc;
    }
    if (a->json) {
        rift_cli_json_print(stdout, data);
    } else if (a->npos == 0) {
        print_list(data);
    } else {
        print_info(data);
    }
    json_decref(data);
    return 0;
}

/* ---- reopen ---- */

static int cmd_reopen(stream_args *a) {
    if (a->npos != 1) {
        usage(stderr);
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&a->cc, "stream", &c) != 0) {
        return 1;
    }
    json_t *data;
    int rc = rift_cli_control(c, "stream", "stream.reopen",
                              json_pack("{s:s}", "name", a->pos[0]), &data);
    rift_client_del(c);
    if (rc != 0) {
        return rc;
    }
    printf("%s: reopened, last sequence %lld%s\n", a->pos[0],
           rift_cli_json_int(data, "last_seq"),
           rift_cli_json_bool(data, "poisoned") ? " (writes still refused)"
                                                : "");
    json_decref(data);
    return 0;
}

/* ---- replay ---- */

/* Prints one record; false when its payload is not valid base64. */
static bool print_record(const json_t *r, const stream_args *a) {
    if (a->json) {
        json_dumpf(r, stdout, JSON_COMPACT | JSON_SORT_KEYS);
        fputc('\n', stdout);
        return true;
    }
    const char *b64 = rift_cli_json_str(r, "payload");
    size_t blen = strlen(b64), len = 0;
    uint8_t *payload = malloc(blen / 4 * 3 + 1);
    if (payload == NULL || !rift_base64_decode(b64, blen, payload, &len)) {
        free(payload);
        return false;
    }
    if (a->raw) {
        fwrite(payload, 1, len, stdout);
        fwrite(a->sep, 1, a->sep_len, stdout);
    } else {
        char when[RIFT_CLI_TIME_LEN];
        rift_cli_time_format((uint64_t)rift_cli_json_int(r, "time_ms"), when);
        const char *subject = rift_cli_json_str(r, "subject");
        const char *reply = json_string_value(json_object_get(r, "reply"));
        printf("#%lld %s ", rift_cli_json_int(r, "seq"), when);
        rift_cli_print_escaped(stdout, (const uint8_t *)subject,
                               strlen(subject));
        if (reply != NULL) {
            printf(" (reply ");
            rift_cli_print_escaped(stdout, (const uint8_t *)reply,
                                   strlen(reply));
            printf(")");
        }
        printf(": ");
        rift_cli_print_escaped(stdout, payload, len);
        printf("\n");
    }
    free(payload);
    return true;
}

/* A record alone larger than an answer: says so and moves *from past it
 * (riftd skips nothing itself); false when why is another failure. */
static bool skip_oversized(const char *why, uint64_t *from) {
    unsigned long long big;
    if (sscanf(why, "record %llu does not fit a control answer", &big) != 1 ||
        big < *from) {
        return false;
    }
    fflush(stdout);
    fprintf(stderr,
            "rift stream: record %llu does not fit a control "
            "answer (about 1 MiB); skipped, read it with a "
            "consumer\n",
            big);
    *from = big + 1;
    return true;
}

/* Prints one answer's records, counting them in *printed; 1 at the first
 * malformed one. */
static int print_records(const json_t *records, stream_args *a,
                         uint64_t *printed) {
    size_t i;
    json_t *r;
    json_array_foreach((json_t *)records, i, r) {
        if (!print_record(r, a)) {
            fprintf(stderr,
                    "rift stream: record %lld has a malformed "
                    "payload\n",
                    rift_cli_json_int(r, "seq"));
            return 1;
        }
        (*printed)++;
    }
    return 0;
}

static int cmd_replay(stream_args *a) {
    uint64_t from = 1, limit = 0;
    if (a->npos != 1) {
        usage(stderr);
        return 2;
    }
    if ((a->from != NULL &&
         !rift_cli_parse_u64("stream", "--from", a->from, &from)) ||
        (a->limit != NULL &&
         !rift_cli_parse_u64("stream", "--limit", a->limit, &limit))) {
        return 2;
    }
    if (from == 0) {
        from = 1;
    }
    rift_client *c;
    if (rift_cli_connect(&a->cc, "stream", &c) != 0) {
        return 1;
    }
    int rc = 0;
    uint64_t printed = 0, skipped = 0;
    /* One answer holds at most 1,000 records (and about 1 MiB): ask again
     * from where the last one ended until the limit or the end. */
    while (rc == 0 && (limit == 0 || printed + skipped < limit)) {
        uint64_t want = limit == 0 ? 1000 : limit - printed - skipped;
        json_t *data;
        char why[RIFT_ERROR_TEXT_MAX + 1];
        if (rift_cli_control_quiet(
                c, "stream", "stream.replay",
                json_pack("{s:s,s:I,s:I}", "stream", a->pos[0], "from",
                          (json_int_t)from, "limit",
                          (json_int_t)(want > 1000 ? 1000 : want)),
                &data, why, sizeof(why)) != 0) {
            if (skip_oversized(why, &from)) {
                skipped++;
                continue;
            }
            rift_cli_control_error("stream", why);
            rc = 1;
            break;
        }
        const json_t *records = json_object_get(data, "records");
        rc = print_records(records, a, &printed);
        uint64_t next = (uint64_t)rift_cli_json_int(data, "next");
        bool end = json_array_size(records) == 0 || next <= from ||
                   next > (uint64_t)rift_cli_json_int(data, "last_seq");
        from = next;
        json_decref(data);
        if (end) {
            break;
        }
    }
    if (rc == 0 && skipped > 0) {
        rc = 1;
    }
    fflush(stdout);
    rift_client_del(c);
    return rc;
}

int rift_cmd_stream(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    stream_args a;
    memset(&a, 0, sizeof(a));
    rift_cli_conn_init(&a.cc);
    const char *sub = argv[1];
    if (strcmp(sub, "add") == 0 || strcmp(sub, "edit") == 0 ||
        strcmp(sub, "purge") == 0 || strcmp(sub, "rm") == 0) {
        return rift_cli_stream_admin(argc, argv);
    }
    int max_pos = strcmp(sub, "pub") == 0 ? 3 : 1;
    int rc = parse(&a, argc, argv, max_pos);
    if (rc >= 0) {
        return rc;
    }
    if (strcmp(sub, "pub") == 0) {
        return cmd_pub(&a);
    }
    if (strcmp(sub, "info") == 0) {
        return cmd_info(&a);
    }
    if (strcmp(sub, "replay") == 0) {
        return cmd_replay(&a);
    }
    if (strcmp(sub, "reopen") == 0) {
        return cmd_reopen(&a);
    }
    fprintf(stderr, "rift stream: unknown subcommand '%s'\n", sub);
    usage(stderr);
    return 2;
}
