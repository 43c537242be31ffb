/*
 * cmd_stream_admin.c — `rift stream add|edit|purge|rm` and the stream
 * info of a principal without control rights (tools layer): streams made
 * at run time with the protocol extensions STREAM_CREATE, STREAM_UPDATE,
 * STREAM_PURGE, STREAM_DELETE and STREAM_INFO_GET (docs/protocol-v1.md
 * "Extensions"), for principals with a `streams` grant (docs/riftd.md).
 */
#include "cmd_stream_admin.h"

#include "args.h"
#include "io.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SUBJECTS 64

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift stream add NAME --subjects S1,S2,... "
            "[--storage file|memory]\n"
            "                       [--max-msgs N] [--max-bytes N] "
            "[--max-age MS]\n"
            "                       [--max-payload N] [--max-consumers N]\n"
            "       rift stream edit NAME [--subjects ...] [the limits as "
            "for add]\n"
            "       rift stream purge NAME\n"
            "       rift stream rm NAME\n"
            "       (each takes the connection flags)\n\n"
            "add    makes a stream at run time (file storage under riftd's "
            "data_dir unless\n       --storage memory); limits left out "
            "take riftd's defaults.\n"
            "edit   changes the limits (and subjects) of a run-time stream; "
            "its records and\n       consumers are kept, what the new "
            "limits no longer retain is dropped.\n"
            "purge  drops every record of a run-time or a replicated "
            "stream; its sequence\n       and consumers carry on.\n"
            "rm     deletes a run-time stream with its consumers and data.\n"
            "They need a `streams` grant in riftd's principal covering "
            "NAME, and subscribe\nrights on every subject; configured "
            "streams change in the configuration only\n(a replicated one "
            "may be purged).\n\n");
    rift_cli_conn_usage(out);
}

typedef struct admin_args {
    rift_cli_conn cc;
    const char *pos[1];
    const char *subjects, *storage, *max_msgs, *max_bytes, *max_age,
        *max_payload, *max_consumers;
} admin_args;

/* The numbers given; false after printing why. */
static bool take_limits(const admin_args *a, rift_client_stream_spec *s) {
    uint64_t mc = s->max_consumers;
    bool ok = (a->max_msgs == NULL ||
               rift_cli_parse_u64("stream", "--max-msgs", a->max_msgs,
                                  &s->max_messages)) &&
              (a->max_bytes == NULL ||
               rift_cli_parse_u64("stream", "--max-bytes", a->max_bytes,
                                  &s->max_bytes)) &&
              (a->max_age == NULL ||
               rift_cli_parse_u64("stream", "--max-age", a->max_age,
                                  &s->max_age_ms)) &&
              (a->max_payload == NULL ||
               rift_cli_parse_u64("stream", "--max-payload", a->max_payload,
                                  &s->max_payload_bytes)) &&
              (a->max_consumers == NULL ||
               rift_cli_parse_u64("stream", "--max-consumers", a->max_consumers,
                                  &mc));
    if (ok && mc > UINT32_MAX) {
        fprintf(stderr, "rift stream: --max-consumers is too large\n");
        return false;
    }
    s->max_consumers = (uint32_t)mc;
    return ok;
}

/* Splits "a,b c" at commas and spaces into |v| (pointers into |buf|). */
static size_t split(char *buf, const char **v) {
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t != NULL && n < MAX_SUBJECTS;
         t = strtok_r(NULL, ", ", &save)) {
        v[n++] = t;
    }
    return n;
}

static void print_info(const rift_client_stream_info *i) {
    printf("%-18s %s\n", "stream", i->name);
    printf("%-18s %s%s\n", "storage", i->file ? "file" : "memory",
           i->runtime ? " (made at run time)" : "");
    printf("%-18s %s\n", "subjects", i->subjects);
    printf("%-18s %llu\n", "messages", (unsigned long long)i->messages);
    char h[32];
    rift_cli_human_bytes((long long)i->bytes, h, sizeof(h));
    printf("%-18s %s\n", "bytes", h);
    if (i->messages > 0) {
        printf("%-18s %llu..%llu\n", "sequences",
               (unsigned long long)i->first_sequence,
               (unsigned long long)i->last_sequence);
    } else {
        printf("%-18s none (last %llu)\n", "sequences",
               (unsigned long long)i->last_sequence);
    }
    printf("%-18s %u\n", "consumers", i->consumers);
    printf("%-18s %llu\n", "max_messages", (unsigned long long)i->max_messages);
    rift_cli_human_bytes((long long)i->max_bytes, h, sizeof(h));
    printf("%-18s %s\n", "max_bytes", h);
    rift_cli_human_bytes((long long)i->max_payload_bytes, h, sizeof(h));
    printf("%-18s %s\n", "max_payload_bytes", h);
    printf("%-18s %u\n", "max_consumers", i->max_consumers);
    if (i->max_age_ms > 0) {
        printf("%-18s %llu\n", "max_age_ms", (unsigned long long)i->max_age_ms);
    } else {
        printf("%-18s none\n", "max_age_ms");
    }
}

static json_t *info_json(const rift_client_stream_info *i) {
    json_t *subs = json_array();
    char buf[sizeof(i->subjects)];
    memcpy(buf, i->subjects, sizeof(buf));
    const char *v[MAX_SUBJECTS];
    size_t n = split(buf, v);
    for (size_t k = 0; subs != NULL && k < n; k++) {
        json_array_append_new(subs, json_string(v[k]));
    }
    return json_pack(
        "{s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "name",
        i->name, "storage", i->file ? "file" : "memory", "subjects", subs,
        "messages", (json_int_t)i->messages, "bytes", (json_int_t)i->bytes,
        "first_seq", (json_int_t)i->first_sequence, "last_seq",
        (json_int_t)i->last_sequence, "consumers", (json_int_t)i->consumers,
        "max_messages", (json_int_t)i->max_messages, "max_bytes",
        (json_int_t)i->max_bytes, "max_payload_bytes",
        (json_int_t)i->max_payload_bytes, "max_consumers",
        (json_int_t)i->max_consumers, "max_age_ms", (json_int_t)i->max_age_ms,
        "runtime", i->runtime);
}

static void report(const char *name, const rift_error *err) {
    if (err->code == RIFT_ERR_REMOTE &&
        strcmp(err->text, "unknown stream") == 0) {
        fprintf(stderr,
                "rift stream: unknown stream \"%s\" (or not readable with "
                "your subscribe grants)\n",
                name);
    } else if (err->code == RIFT_ERR_REMOTE &&
               strcmp(err->text, "unknown opcode") == 0) {
        fprintf(stderr, "rift stream: the server does not offer run-time "
                        "streams (an older rift or the original server)\n");
    } else {
        fprintf(stderr, "rift stream: %s: %s\n", name, err->text);
    }
}

int rift_cli_stream_info_ext(rift_client *c, const char *name, bool json) {
    rift_client_stream_info info;
    rift_error err = {0};
    if (rift_client_stream_get_info(c, name, strlen(name), &info, &err) != 0) {
        report(name, &err);
        return 1;
    }
    if (json) {
        json_t *o = info_json(&info);
        rift_cli_json_print(stdout, o);
        json_decref(o);
    } else {
        print_info(&info);
    }
    return 0;
}

static int run(const char *sub, admin_args *a, rift_client *c) {
    const char *name = a->pos[0];
    size_t len = strlen(name);
    rift_error err = {0};
    bool add = strcmp(sub, "add") == 0;
    if (strcmp(sub, "purge") == 0 || strcmp(sub, "rm") == 0) {
        int rc = sub[0] == 'p' ? rift_client_stream_purge(c, name, len, &err)
                               : rift_client_stream_delete(c, name, len, &err);
        if (rc != 0) {
            report(name, &err);
            return 1;
        }
        printf("%s: %s\n", name, sub[0] == 'p' ? "purged" : "deleted");
        return 0;
    }
    rift_client_stream_spec spec = {0};
    rift_client_stream_info cur;
    if (!add) {
        /* edit: what is not given stays as it is. */
        if (rift_client_stream_get_info(c, name, len, &cur, &err) != 0) {
            report(name, &err);
            return 1;
        }
        spec.file = cur.file;
        spec.max_messages = cur.max_messages;
        spec.max_bytes = cur.max_bytes;
        spec.max_age_ms = cur.max_age_ms;
        spec.max_payload_bytes = cur.max_payload_bytes;
        spec.max_consumers = cur.max_consumers;
    } else {
        spec.file = a->storage == NULL || strcmp(a->storage, "file") == 0;
    }
    if (a->storage != NULL && strcmp(a->storage, "file") != 0 &&
        strcmp(a->storage, "memory") != 0) {
        fprintf(stderr, "rift stream: --storage must be file or memory\n");
        return 2;
    }
    if (!add && a->storage != NULL && spec.file != (a->storage[0] == 'f')) {
        fprintf(stderr,
                "rift stream: %s: the storage of a stream cannot "
                "change (rm and add it again)\n",
                name);
        return 2;
    }
    if (!take_limits(a, &spec)) {
        return 2;
    }
    char buf[4097];
    const char *v[MAX_SUBJECTS];
    if (a->subjects != NULL) {
        snprintf(buf, sizeof(buf), "%s", a->subjects);
        spec.subjects = v;
        spec.subjects_count = split(buf, v);
    }
    if (add && spec.subjects_count == 0) {
        fprintf(stderr, "rift stream: add needs --subjects\n");
        return 2;
    }
    rift_client_stream_info info;
    int rc = add ? rift_client_stream_create(c, name, len, &spec, &info, &err)
                 : rift_client_stream_update(c, name, len, &spec, &info, &err);
    if (rc != 0) {
        report(name, &err);
        return 1;
    }
    print_info(&info);
    return 0;
}

int rift_cli_stream_admin(int argc, char **argv) {
    admin_args a;
    memset(&a, 0, sizeof(a));
    rift_cli_conn_init(&a.cc);
    const rift_cli_opt opts[] = {
        {.name = "--subjects", .value = &a.subjects},
        {.name = "--storage", .value = &a.storage},
        {.name = "--max-msgs", .value = &a.max_msgs},
        {.name = "--max-bytes", .value = &a.max_bytes},
        {.name = "--max-age", .value = &a.max_age},
        {.name = "--max-payload", .value = &a.max_payload},
        {.name = "--max-consumers", .value = &a.max_consumers},
        {.name = NULL},
    };
    rift_cli_args args = {.cmd = "stream",
                          .usage = usage,
                          .conn = &a.cc,
                          .opts = opts,
                          .first = 2,
                          .pos = a.pos,
                          .max_pos = 1};
    int rc = rift_cli_parse(&args, argc, argv);
    if (rc >= 0) {
        return rc;
    }
    if (args.npos != 1) {
        usage(stderr);
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&a.cc, "stream", &c) != 0) {
        return 1;
    }
    rc = run(argv[1], &a, c);
    rift_client_del(c);
    return rc;
}
