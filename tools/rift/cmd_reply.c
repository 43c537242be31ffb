/*
 * cmd_reply.c — `rift reply SUBJECT [DATA|--echo]`: answer requests on a
 * subject with fixed data or their own payload, printing each request
 * (tools layer).
 */
#include "cmd.h"
#include "conn.h"
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

int rift_cmd_reply(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    const char *queue = NULL, *count_s = NULL;
    bool echo = false, raw = false;
    for (int i = 1; i < argc;) {
        int r = rift_cli_conn_flag(&cc, "reply", argc, argv, &i);
        if (r == 0) {
            r = rift_cli_opt_value("reply", "--queue", argc, argv, &i, &queue);
        }
        if (r == 0) {
            r = rift_cli_opt_value("reply", "--count", argc, argv, &i,
                                   &count_s);
        }
        if (r < 0) {
            return 2;
        }
        if (r > 0) {
            continue;
        }
        const char *a = argv[i++];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--echo") == 0) {
            echo = true;
            continue;
        }
        if (strcmp(a, "--raw") == 0) {
            raw = true;
            continue;
        }
        if ((a[0] == '-' && a[1] != '\0') || npos == 2) {
            fprintf(stderr, "rift reply: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        pos[npos++] = a;
    }
    uint64_t count = 0;
    if (npos == 0 || (echo && npos == 2)) {
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
    uint64_t answered = 0;
    while ((count == 0 || answered < count) && !rift_cli_stop_requested()) {
        rift_msg *m;
        int r = rift_client_sub_recv(sub, 200000000, &m, &err);
        if (r == RIFT_ERR_AGAIN) {
            continue;
        }
        if (r != 0) {
            fprintf(stderr, "rift reply: %s\n", err.text);
            rc = 1;
            break;
        }
        rift_cli_print_msg(stdout, m, raw);
        size_t rlen;
        const char *reply = rift_msg_reply(m, &rlen);
        if (reply == NULL) {
            fprintf(stderr, "rift reply: message without a reply subject "
                            "ignored\n");
        } else {
            size_t plen = len;
            const uint8_t *p = data;
            if (echo) {
                p = rift_msg_payload(m, &plen);
            }
            if (rift_client_publish(c, reply, rlen, p, plen, &err) != 0) {
                fprintf(stderr, "rift reply: answering: %s\n", err.text);
            } else {
                answered++;
            }
        }
        rift_msg_unref(m);
    }
    rift_client_sub_close(sub);
    rift_client_del(c);
    if (owned) {
        free(data);
    }
    return rc;
}
