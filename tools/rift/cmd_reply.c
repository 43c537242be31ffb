/*
 * cmd_reply.c — `rift reply SUBJECT [DATA|--echo]`: answer requests on a
 * subject with fixed data or their own payload, printing each request
 * (tools layer).
 */
#include "args.h"
#include "cmd.h"
#include "conn_options.h"
#include "io.h"
#include "subjects.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: rift reply SUBJECT [DATA|-|--echo] [--queue GROUP] "
                 "[--count N] [--raw]\n"
                 "                  [connection flags]\n"
                 "Answers every request on SUBJECT (a pattern) with DATA ('-' "
                 "reads stdin once;\nempty when absent) or, with --echo, with "
                 "the request's payload. Prints each\nrequest like `rift sub`. "
                 "Stops after N answers (0: never).\n\n");
    rift_cli_conn_usage(out);
}

/* Answers one request with data (or its own payload when echoing);
 * returns whether the answer went out. */
static bool answer(rift_client *c, rift_msg *m, const uint8_t *data, size_t len,
                   bool echo) {
    size_t rlen;
    const char *reply = rift_msg_reply(m, &rlen);
    if (reply == NULL) {
        fprintf(stderr, "rift reply: message without a reply subject "
                        "ignored\n");
        return false;
    }
    size_t plen = len;
    const uint8_t *p = data;
    if (echo) {
        p = rift_msg_payload(m, &plen);
    }
    rift_error err;
    if (rift_client_publish(c, reply, rlen, p, plen, &err) != 0) {
        fprintf(stderr, "rift reply: answering: %s\n", err.text);
        return false;
    }
    return true;
}

/* Prints and answers requests until count were answered (0: forever), a
 * signal arrives or receiving fails (then 1). */
static int serve(rift_client *c, rift_client_sub *sub, uint64_t count,
                 const uint8_t *data, size_t len, bool echo, bool raw) {
    uint64_t answered = 0;
    rift_error err;
    while ((count == 0 || answered < count) && !rift_cli_stop_requested()) {
        rift_msg *m;
        int r = rift_client_sub_recv(sub, 200000000, &m, &err);
        if (r == RIFT_ERR_AGAIN) {
            continue;
        }
        if (r != 0) {
            fprintf(stderr, "rift reply: %s\n", err.text);
            return 1;
        }
        rift_cli_print_msg(stdout, m, raw);
        answered += answer(c, m, data, len, echo);
        rift_msg_unref(m);
    }
    return 0;
}

int rift_cmd_reply(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pos[2] = {NULL, NULL};
    const char *queue = NULL, *count_s = NULL;
    bool echo = false, raw = false;
    const rift_cli_opt opts[] = {{.name = "--queue", .value = &queue},
                                 {.name = "--count", .value = &count_s},
                                 {.name = "--echo", .flag = &echo},
                                 {.name = "--raw", .flag = &raw},
                                 {.name = NULL}};
    rift_cli_args args = {.cmd = "reply",
                          .usage = usage,
                          .conn = &cc,
                          .opts = opts,
                          .first = 1,
                          .pos = pos,
                          .max_pos = 2,
                          .dash_is_arg = true};
    int parsed = rift_cli_parse(&args, argc, argv);
    if (parsed >= 0) {
        return parsed;
    }
    uint64_t count = 0;
    if (args.npos == 0 || (echo && args.npos == 2)) {
        usage(stderr);
        return 2;
    }
    if (count_s != NULL &&
        !rift_cli_parse_u64("reply", "--count", count_s, &count)) {
        return 2;
    }
    if (!rift_cli_subject_ok("reply", "subject", pos[0], false) ||
        (queue != NULL && !rift_cli_queue_ok("reply", queue))) {
        return 2;
    }
    uint8_t *data;
    size_t len;
    bool owned;
    if (rift_cli_read_data("reply", pos[1], &data, &len, &owned) != 0) {
        return 1;
    }
    rift_client *c;
    if (rift_cli_connect(&cc, "reply", &c) != 0) {
        if (owned) {
            free(data);
        }
        return 1;
    }
    rift_cli_catch_signals();
    rift_error err;
    rift_client_sub *sub;
    int rc = 0;
    if (rift_client_subscribe(c, pos[0], strlen(pos[0]), queue,
                              queue ? strlen(queue) : 0, &sub, &err) != 0) {
        fprintf(stderr, "rift reply: %s\n", err.text);
        rift_client_del(c);
        if (owned) {
            free(data);
        }
        return 1;
    }
    rc = serve(c, sub, count, data, len, echo, raw);
    rift_client_sub_close(sub);
    rift_client_del(c);
    if (owned) {
        free(data);
    }
    return rc;
}
