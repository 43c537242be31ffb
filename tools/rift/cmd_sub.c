/*
 * cmd_sub.c — `rift sub PATTERN`: print the messages of a subscription
 * until --count messages arrived, SIGINT/SIGTERM, or the subscription
 * ends (tools layer).
 */
#include "cmd.h"
#include "conn.h"
#include "io.h"

#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift sub PATTERN [--queue GROUP] [--count N] [--raw] "
            "[connection flags]\n"
            "Prints each message as \"SUBJECT: PAYLOAD\", or \"SUBJECT (reply "
            "REPLY): PAYLOAD\"\nwhen it has a reply subject, non-printable "
            "bytes as \\xHH; --raw writes the\npayloads only, byte for "
            "byte. Stops after N messages (0: never).\n\n");
    rift_cli_conn_usage(out);
}

int rift_cmd_sub(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pattern = NULL, *queue = NULL, *count_s = NULL;
    bool raw = false;
    for (int i = 1; i < argc;) {
        int r = rift_cli_conn_flag(&cc, "sub", argc, argv, &i);
        if (r == 0) {
            r = rift_cli_opt_value("sub", "--queue", argc, argv, &i, &queue);
        }
        if (r == 0) {
            r = rift_cli_opt_value("sub", "--count", argc, argv, &i, &count_s);
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
        if (strcmp(a, "--raw") == 0) {
            raw = true;
            continue;
        }
        if (a[0] == '-' || pattern != NULL) {
            fprintf(stderr, "rift sub: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        pattern = a;
    }
    uint64_t count = 0;
    if (pattern == NULL) {
        usage(stderr);
        return 2;
    }
    if (count_s != NULL &&
        !rift_cli_parse_u64("sub", "--count", count_s, &count)) {
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&cc, "sub", &c) != 0) {
        return 1;
    }
    rift_cli_catch_signals();
    rift_error err;
    rift_subscription *sub;
    int rc = 0;
    if (rift_client_subscribe(c, pattern, strlen(pattern), queue,
                              queue ? strlen(queue) : 0, &sub, &err) != 0) {
        fprintf(stderr, "rift sub: %s\n", err.text);
        rift_client_close(c);
        return 1;
    }
    uint64_t got = 0;
    while ((count == 0 || got < count) && !rift_cli_stop_requested()) {
        rift_msg *m;
        /* Short waits so a signal is noticed promptly. */
        int r = rift_subscription_recv(sub, 200000000, &m, &err);
        if (r == RIFT_ERR_AGAIN) {
            continue;
        }
        if (r != 0) {
            fprintf(stderr, "rift sub: %s\n", err.text);
            rc = 1;
            break;
        }
        rift_cli_print_msg(stdout, m, raw);
        rift_msg_unref(m);
        got++;
    }
    rift_subscription_close(sub);
    rift_client_close(c);
    return rc;
}
