/*
 * cmd_stan.c — `rift stan server|clients|channels` (tools layer): riftd's
 * NATS Streaming service through its control commands streaming.server,
 * streaming.clients and streaming.channels (docs/riftd.md), printed as
 * tables, or the answer unchanged with --json.
 */
#include "args.h"
#include "cmd.h"
#include "conn_options.h"
#include "control_request.h"
#include "io.h"

#include "common/common.h"

#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift stan server [--json]\n"
            "       rift stan clients [CLIENT] [--json]\n"
            "       rift stan channels [CHANNEL] [--json]\n"
            "       rift stan import DIR --to STREAMING_DIR  (offline; see "
            "rift stan import --help)\n"
            "       (each takes the connection flags)\n\n"
            "server    the cluster ID, store type and counts.\n"
            "clients   the connected STAN clients with their heartbeat "
            "inbox and subscriptions.\n"
            "channels  the channels (messages, bytes, sequences) with their "
            "subscriptions:\n          client, inbox, durable name, queue "
            "group, max in flight, ack wait,\n          last sent, pending, "
            "stalled; offline durables too.\n"
            "They need control = true and a publish grant on "
            "rift.control.> (the command\nnames have two tokens).\n\n");
    rift_cli_conn_usage(out);
}

static void print_server(const json_t *d) {
    printf("cluster        %s\n", rift_cli_json_str(d, "cluster_id"));
    printf("store          %s\n", rift_cli_json_str(d, "store"));
    printf("clients        %lld\n", rift_cli_json_int(d, "clients"));
    printf("channels       %lld\n", rift_cli_json_int(d, "channels"));
    printf("subscriptions  %lld\n", rift_cli_json_int(d, "subscriptions"));
    char b[32];
    rift_cli_human_bytes(rift_cli_json_int(d, "total_bytes"), b, sizeof(b));
    printf("messages       %lld (%s)\n", rift_cli_json_int(d, "total_msgs"), b);
}

static void print_client(const json_t *c) {
    printf("%-24s %-40s %5lld\n", rift_cli_json_str(c, "id"),
           rift_cli_json_str(c, "hb_inbox"),
           rift_cli_json_int(c, "subscriptions_count"));
}

static void print_clients(const json_t *d) {
    const json_t *list = json_object_get(d, "clients");
    if (list == NULL) {
        list = d; /* one client */
    }
    printf("%-24s %-40s %5s\n", "CLIENT", "HEARTBEAT INBOX", "SUBS");
    if (json_is_array(list)) {
        size_t i;
        json_t *c;
        json_array_foreach((json_t *)list, i, c) {
            print_client(c);
        }
    } else {
        print_client(list);
    }
}

static void print_sub(const json_t *s) {
    const char *durable = rift_cli_json_str(s, "durable_name");
    const char *queue = rift_cli_json_str(s, "queue_name");
    printf("  %-18s %-14s %-14s %5lld %5lld %9lld %7lld %s%s\n",
           rift_cli_json_bool(s, "is_offline")
               ? "(offline)"
               : rift_cli_json_str(s, "client_id"),
           durable[0] ? durable : "-", queue[0] ? queue : "-",
           rift_cli_json_int(s, "max_inflight"),
           rift_cli_json_int(s, "ack_wait"), rift_cli_json_int(s, "last_sent"),
           rift_cli_json_int(s, "pending_count"),
           rift_cli_json_bool(s, "is_stalled") ? "stalled " : "",
           rift_cli_json_str(s, "inbox"));
}

static void print_channel(const json_t *c) {
    char b[32];
    rift_cli_human_bytes(rift_cli_json_int(c, "bytes"), b, sizeof(b));
    printf("%s: %lld messages (%s), sequences %lld..%lld\n",
           rift_cli_json_str(c, "name"), rift_cli_json_int(c, "msgs"), b,
           rift_cli_json_int(c, "first_seq"), rift_cli_json_int(c, "last_seq"));
    const json_t *subs = json_object_get(c, "subscriptions");
    if (json_array_size(subs) == 0) {
        return;
    }
    printf("  %-18s %-14s %-14s %5s %5s %9s %7s %s\n", "CLIENT", "DURABLE",
           "QUEUE", "MAXIF", "ACKW", "LAST SENT", "PENDING", "INBOX");
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)subs, i, s) {
        print_sub(s);
    }
}

static void print_channels(const json_t *d) {
    const json_t *list = json_object_get(d, "channels");
    if (list == NULL && json_object_get(d, "name") != NULL) {
        print_channel(d);
        return;
    }
    if (json_array_size(list) == 0) {
        printf("no channels\n");
    }
    size_t i;
    json_t *c;
    json_array_foreach((json_t *)list, i, c) {
        print_channel(c);
    }
}

int rift_cmd_stan(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "import") == 0) {
        return rift_cmd_stan_import(argc, argv);
    }
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    bool as_json = false;
    const char *pos[2] = {NULL, NULL};
    const rift_cli_opt opts[] = {{.name = "--json", .flag = &as_json},
                                 {.name = NULL}};
    rift_cli_args args = {.cmd = "stan",
                          .usage = usage,
                          .conn = &cc,
                          .opts = opts,
                          .first = 1,
                          .pos = pos,
                          .max_pos = 2};
    int parsed = rift_cli_parse(&args, argc, argv);
    if (parsed >= 0) {
        return parsed;
    }
    static const struct {
        const char *word, *command, *field;
        void (*print)(const json_t *);
    } subs[] = {{"server", "streaming.server", NULL, print_server},
                {"clients", "streaming.clients", "client", print_clients},
                {"channels", "streaming.channels", "name", print_channels}};
    size_t k = 0;
    while (pos[0] != NULL && k < RIFT_ARRAY_LEN(subs) &&
           strcmp(pos[0], subs[k].word) != 0) {
        k++;
    }
    if (pos[0] == NULL || k == RIFT_ARRAY_LEN(subs) ||
        (pos[1] != NULL && subs[k].field == NULL)) {
        usage(stderr);
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&cc, "stan", &c) != 0) {
        return 1;
    }
    json_t *req =
        pos[1] != NULL ? json_pack("{s:s}", subs[k].field, pos[1]) : NULL;
    json_t *data;
    int rc = rift_cli_control(c, "stan", subs[k].command, req, &data);
    rift_client_del(c);
    if (rc != 0) {
        return rc;
    }
    if (as_json) {
        rift_cli_json_print(stdout, data);
    } else {
        subs[k].print(data);
    }
    json_decref(data);
    return 0;
}
