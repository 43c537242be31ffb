/*
 * cmd_req.c — `rift req SUBJECT [DATA|-]`: send a request and print the
 * reply's payload (tools layer).
 */
#include "cmd.h"
#include "conn.h"
#include "io.h"
#include "subjects.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: rift req SUBJECT [DATA|-] [--timeout MS] [--raw] "
                 "[connection flags]\n"
                 "Sends DATA ('-' reads stdin) and prints the first reply's "
                 "payload followed by\na newline (--raw: the payload only). "
                 "MS is 1..120000 (default 5000).\n\n");
    rift_cli_conn_usage(out);
}

int rift_cmd_req(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    const char *timeout_s = NULL;
    bool raw = false;
    for (int i = 1; i < argc;) {
        int r = rift_cli_conn_flag(&cc, "req", argc, argv, &i);
        if (r == 0) {
            r = rift_cli_opt_value("req", "--timeout", argc, argv, &i,
                                   &timeout_s);
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
        if ((a[0] == '-' && a[1] != '\0') || npos == 2) {
            fprintf(stderr, "rift req: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        pos[npos++] = a;
    }
    uint64_t timeout = 5000;
    if (npos == 0) {
        usage(stderr);
        return 2;
    }
    if (timeout_s != NULL &&
        !rift_cli_parse_u64("req", "--timeout", timeout_s, &timeout)) {
        return 2;
    }
    if (timeout == 0 || timeout > 120000) {
        /* The library's text, checked here so that it is a usage error. */
        fprintf(stderr, "rift req: request timeout must be 1..120000 ms\n");
        return 2;
    }
    if (!rift_cli_subject_ok("req", "subject", pos[0], true)) {
        return 2;
    }
    uint8_t *data;
    size_t len;
    bool owned;
    if (rift_cli_read_data("req", pos[1], &data, &len, &owned) != 0) {
        return 1;
    }
    rift_client *c;
    int rc = rift_cli_connect(&cc, "req", &c);
    if (rc == 0) {
        rift_error err;
        rift_msg *m;
        if (rift_client_request(c, pos[0], strlen(pos[0]), data, len,
                                timeout * RIFT_MSEC, &m, &err) != 0) {
            fprintf(stderr, "rift req: %s\n", err.text);
            rc = 1;
        } else {
            size_t plen;
            const uint8_t *p = rift_msg_payload(m, &plen);
            if (plen > 0) {
                fwrite(p, 1, plen, stdout);
            }
            if (!raw) {
                fputc('\n', stdout);
            }
            fflush(stdout);
            rift_msg_unref(m);
        }
        rift_client_del(c);
    }
    if (owned) {
        free(data);
    }
    return rc;
}
