/*
 * cmd_sub.c — `rift sub PATTERN`: print the messages of a subscription
 * until --count messages arrived, SIGINT/SIGTERM, or the subscription
 * ends (tools layer).
 *
 * riftd's control traffic (requests on rift.control.> and the answers to
 * every _INBOX.> reply subject, the CLI's own `rift status` among them)
 * is left out unless --all is given or PATTERN names it (a literal first
 * token), the way nats-server keeps $SYS out of '>'. The filter is the
 * CLI's: the subscription on the wire is PATTERN unchanged.
 */
#include "args.h"
#include "cmd.h"
#include "conn_options.h"
#include "io.h"
#include "subjects.h"

#include "subject/acl.h"
#include "subject/subject.h"

#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift sub PATTERN [--queue GROUP] [--count N] [--all] "
            "[--raw [--sep SEP]]\n"
            "                [connection flags]\n"
            "Prints each message as \"SUBJECT: PAYLOAD\", or \"SUBJECT (reply "
            "REPLY): PAYLOAD\"\nwhen it has a reply subject, non-printable "
            "bytes as \\xHH; --raw writes the\npayloads only, byte for "
            "byte, each followed by SEP when --sep is given\n(\\n, \\t, \\0 "
            "and \\xHH escapes, e.g. --sep '\\n'). Stops after N messages "
            "(0: never).\n"
            "A PATTERN that starts with a wildcard (such as '>') leaves out "
            "riftd's control\ntraffic, rift.control.> and the _INBOX.> "
            "answers; --all shows it, and so does a\npattern that names it "
            "(rift.control.>, _INBOX.>).\n\n");
    rift_cli_conn_usage(out);
}

/* The namespaces a wildcard first token does not show. */
static const char *const hidden[] = {"rift.control.>", "_INBOX.>"};

/* True when PATTERN reaches the hidden namespaces only through a
 * wildcard first token. */
static bool hides_control(const char *pattern) {
    return (pattern[0] == '*' || pattern[0] == '>') &&
           (pattern[1] == '\0' || pattern[1] == '.');
}

static bool is_hidden(const rift_msg *m) {
    size_t len;
    const char *subject = rift_msg_subject(m, &len);
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
        if (rift_subject_matches(hidden[i], strlen(hidden[i]), subject, len)) {
            return true;
        }
    }
    return false;
}

/* The server's "subscription not permitted" names neither the pattern
 * nor the rule; this says which one applies. */
static void explain_refusal(const char *pattern) {
    static const char below[] = "rift.control.>", bare[] = "rift.control";
    size_t len = strlen(pattern);
    if (rift_subject_overlaps(pattern, len, below, sizeof(below) - 1) ||
        rift_subject_overlaps(pattern, len, bare, sizeof(bare) - 1)) {
        fprintf(stderr,
                "rift sub: '%s' also covers rift.control, which only a "
                "principal with control = true\nmay subscribe to; subscribe "
                "to the subjects you need instead (e.g. 'demo.>')\n",
                pattern);
    } else {
        fprintf(stderr,
                "rift sub: the principal's subscribe grants do not cover "
                "'%s'\n",
                pattern);
    }
}

/* Prints what arrives until count messages were shown (0: forever), a
 * signal arrives or receiving fails (then 1); hidden control messages are
 * dropped unshown when filter is set. */
static int print_loop(rift_client_sub *sub, uint64_t count, bool filter,
                      bool raw, const char *sep, size_t sep_len) {
    uint64_t got = 0;
    rift_error err;
    while ((count == 0 || got < count) && !rift_cli_stop_requested()) {
        rift_msg *m;
        /* Short waits so a signal is noticed promptly. */
        int r = rift_client_sub_recv(sub, 200000000, &m, &err);
        if (r == RIFT_ERR_AGAIN) {
            continue;
        }
        if (r != 0) {
            fprintf(stderr, "rift sub: %s\n", err.text);
            return 1;
        }
        if (filter && is_hidden(m)) {
            rift_msg_unref(m);
            continue;
        }
        rift_cli_print_msg(stdout, m, raw);
        if (sep_len > 0) {
            fwrite(sep, 1, sep_len, stdout);
            fflush(stdout);
        }
        rift_msg_unref(m);
        got++;
    }
    return 0;
}

int rift_cmd_sub(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pattern = NULL, *queue = NULL, *count_s = NULL, *sep_s = NULL;
    bool raw = false, all = false;
    const rift_cli_opt opts[] = {{.name = "--queue", .value = &queue},
                                 {.name = "--count", .value = &count_s},
                                 {.name = "--sep", .value = &sep_s},
                                 {.name = "--raw", .flag = &raw},
                                 {.name = "--all", .flag = &all},
                                 {.name = NULL}};
    rift_cli_args args = {.cmd = "sub",
                          .usage = usage,
                          .conn = &cc,
                          .opts = opts,
                          .first = 1,
                          .pos = &pattern,
                          .max_pos = 1};
    int parsed = rift_cli_parse(&args, argc, argv);
    if (parsed >= 0) {
        return parsed;
    }
    uint64_t count = 0;
    if (pattern == NULL) {
        usage(stderr);
        return 2;
    }
    char sep[RIFT_CLI_SEP_MAX];
    size_t sep_len = 0;
    if ((count_s != NULL &&
         !rift_cli_parse_u64("sub", "--count", count_s, &count)) ||
        (sep_s != NULL && !rift_cli_parse_sep("sub", sep_s, sep, &sep_len)) ||
        !rift_cli_subject_ok("sub", "pattern", pattern, false) ||
        (queue != NULL && !rift_cli_queue_ok("sub", queue))) {
        return 2;
    }
    if (sep_s != NULL && !raw) {
        fprintf(stderr, "rift sub: --sep goes with --raw\n");
        return 2;
    }
    bool filter = !all && hides_control(pattern);
    rift_client *c;
    if (rift_cli_connect(&cc, "sub", &c) != 0) {
        return 1;
    }
    rift_cli_catch_signals();
    rift_error err;
    rift_client_sub *sub;
    int rc = 0;
    if (rift_client_subscribe(c, pattern, strlen(pattern), queue,
                              queue ? strlen(queue) : 0, &sub, &err) != 0) {
        fprintf(stderr, "rift sub: %s\n", err.text);
        if (err.code == RIFT_ERR_PERMISSION) {
            explain_refusal(pattern);
        }
        rift_client_del(c);
        return 1;
    }
    rc = print_loop(sub, count, filter, raw, sep, sep_len);
    rift_client_sub_close(sub);
    rift_client_del(c);
    return rc;
}
