/*
 * cmd_pub.c — `rift pub SUBJECT [DATA|-]`: publish one message and wait
 * until the server has routed it (tools layer).
 */
#include "cmd.h"
#include "conn.h"
#include "io.h"
#include "subjects.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: rift pub SUBJECT [DATA|-] [--reply SUBJECT] "
                 "[connection flags]\n"
                 "Publishes DATA (empty when absent; '-' reads stdin) and "
                 "waits for the server's\nacknowledgement.\n\n");
    rift_cli_conn_usage(out);
}

int rift_cmd_pub(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    const char *reply = NULL;
    for (int i = 1; i < argc;) {
        int r = rift_cli_conn_flag(&cc, "pub", argc, argv, &i);
        if (r == 0) {
            r = rift_cli_opt_value("pub", "--reply", argc, argv, &i, &reply);
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
        if ((a[0] == '-' && a[1] != '\0') || npos == 2) {
            fprintf(stderr, "rift pub: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        pos[npos++] = a;
    }
    if (npos == 0) {
        usage(stderr);
        return 2;
    }
    if (!rift_cli_subject_ok("pub", "subject", pos[0], true) ||
        (reply != NULL &&
         !rift_cli_subject_ok("pub", "--reply", reply, true))) {
        return 2;
    }
    uint8_t *data;
    size_t len;
    bool owned;
    if (rift_cli_read_data("pub", pos[1], &data, &len, &owned) != 0) {
        return 1;
    }
    rift_client *c;
    int rc = rift_cli_connect(&cc, "pub", &c);
    if (rc == 0) {
        rift_error err;
        if (rift_client_publish_with_reply(c, pos[0], strlen(pos[0]), reply,
                                           reply ? strlen(reply) : 0, data, len,
                                           &err) != 0) {
            fprintf(stderr, "rift pub: %s\n", err.text);
            rc = 1;
        }
        rift_client_del(c);
    }
    if (owned) {
        free(data);
    }
    return rc;
}
