/*
 * cmd_status.c — `rift status`: riftd's rift.control.status printed as a
 * readable summary with tables of connections, streams and plugins, or
 * the raw answer with --json (tools layer).
 */
#include "cmd.h"
#include "conn.h"
#include "control.h"
#include "io.h"

#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: rift status [--json] [connection flags]\n"
                 "Shows riftd's version, configuration revision, uptime, "
                 "listener, connections\nper identity, broker and QUIC "
                 "counters, streams and plugins. Needs a principal\nwith "
                 "control = true and a publish grant on rift.control.status.\n"
                 "--json prints the answer's data unchanged.\n\n");
    rift_cli_conn_usage(out);
}


static void human_uptime(long long ms, char *out, size_t cap) {
    long long s = ms / 1000;
    if (s < 60) {
        snprintf(out, cap, "%llds", s);
    } else if (s < 3600) {
        snprintf(out, cap, "%lldm%02llds", s / 60, s % 60);
    } else if (s < 86400) {
        snprintf(out, cap, "%lldh%02lldm", s / 3600, (s / 60) % 60);
    } else {
        snprintf(out, cap, "%lldd%02lldh", s / 86400, (s / 3600) % 24);
    }
}

static void print_connections(const json_t *data) {
    const json_t *conns = json_object_get(data, "connections");
    const json_t *by = json_object_get(conns, "by_identity");
    printf("connections  %lld", rift_cli_json_int(conns, "total"));
    if (json_object_size(by) > 0) {
        printf(" (");
        const char *name;
        json_t *n;
        bool first = true;
        json_object_foreach((json_t *)by, name, n) {
            printf("%s%s %lld", first ? "" : ", ", name,
                   (long long)json_integer_value(n));
            first = false;
        }
        printf(")");
    }
    printf("\n");
}

static void print_counters(const json_t *data) {
    char bin[32], bout[32];
    const json_t *msgs = json_object_get(data, "messages");
    const json_t *bytes = json_object_get(data, "bytes");
    rift_cli_human_bytes(rift_cli_json_int(bytes, "in"), bin, sizeof(bin));
    rift_cli_human_bytes(rift_cli_json_int(bytes, "out"), bout, sizeof(bout));
    printf("broker       %lld subscriptions, %lld slow consumers; messages "
           "in %lld (%s), out %lld (%s)\n",
           rift_cli_json_int(data, "subscriptions"),
           rift_cli_json_int(data, "slow_consumers"),
           rift_cli_json_int(msgs, "in"), bin, rift_cli_json_int(msgs, "out"),
           bout);
    const json_t *r = json_object_get(data, "remote");
    if (json_is_object(r)) {
        msgs = json_object_get(r, "messages");
        bytes = json_object_get(r, "bytes");
        rift_cli_human_bytes(rift_cli_json_int(bytes, "in"), bin, sizeof(bin));
        rift_cli_human_bytes(rift_cli_json_int(bytes, "out"), bout,
                             sizeof(bout));
        printf("quic         %lld subscriptions, %lld slow consumers; messages "
               "in %lld (%s), out %lld (%s)\n"
               "             %lld connections accepted, %lld refused, %lld "
               "failed authentications\n",
               rift_cli_json_int(r, "subscriptions"),
               rift_cli_json_int(r, "slow_consumers"),
               rift_cli_json_int(msgs, "in"), bin,
               rift_cli_json_int(msgs, "out"), bout,
               rift_cli_json_int(r, "accepted"),
               rift_cli_json_int(r, "refused"),
               rift_cli_json_int(r, "auth_failures"));
    }
}

static void print_streams(const json_t *streams) {
    if (json_array_size(streams) == 0) {
        printf("\nstreams: none\n");
        return;
    }
    printf("\n%-20s %-7s %10s %10s %10s %10s %9s\n", "STREAM", "STORAGE",
           "MESSAGES", "BYTES", "FIRST", "LAST", "CONSUMERS");
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)streams, i, s) {
        char bytes[32];
        rift_cli_human_bytes(rift_cli_json_int(s, "bytes"), bytes,
                             sizeof(bytes));
        printf("%-20s %-7s %10lld %10s %10lld %10lld %9lld%s\n",
               rift_cli_json_str(s, "name"), rift_cli_json_str(s, "storage"),
               rift_cli_json_int(s, "messages"), bytes,
               rift_cli_json_int(s, "first_seq"),
               rift_cli_json_int(s, "last_seq"),
               rift_cli_json_int(s, "consumers"),
               !rift_cli_json_bool(s, "open")      ? "  (not open)"
               : rift_cli_json_bool(s, "poisoned") ? "  (write failed)"
                                                   : "");
    }
}

static void print_plugins(const json_t *plugins) {
    if (json_array_size(plugins) == 0) {
        printf("\nplugins: none\n");
        return;
    }
    printf("\n%-20s %-10s %10s %8s %10s %s\n", "PLUGIN", "STATE", "MESSAGES",
           "ERRORS", "PUBLISHED", "LAST ERROR");
    size_t i;
    json_t *p;
    json_array_foreach((json_t *)plugins, i, p) {
        printf("%-20s %-10s %10lld %8lld %10lld %s\n",
               rift_cli_json_str(p, "name"), rift_cli_json_str(p, "state"),
               rift_cli_json_int(p, "messages"), rift_cli_json_int(p, "errors"),
               rift_cli_json_int(p, "published"),
               rift_cli_json_str(p, "last_error"));
    }
}

static void print_status(const json_t *data) {
    char up[32];
    human_uptime(rift_cli_json_int(data, "uptime_ms"), up, sizeof(up));
    printf("riftd        %s, up %s\n", rift_cli_json_str(data, "version"), up);
    printf("config       %s (revision %s)\n", rift_cli_json_str(data, "config"),
           rift_cli_json_str(data, "revision"));
    if (rift_cli_json_bool(data, "listening")) {
        printf("listening    %s (QUIC)\n", rift_cli_json_str(data, "address"));
    } else {
        printf("listening    no\n");
    }
    print_connections(data);
    print_counters(data);
    print_streams(json_object_get(data, "streams"));
    print_plugins(json_object_get(data, "plugins"));
}

int rift_cmd_status(int argc, char **argv) {
    rift_cli_conn cc;
    rift_cli_conn_init(&cc);
    bool as_json = false;
    for (int i = 1; i < argc;) {
        int r = rift_cli_conn_flag(&cc, "status", argc, argv, &i);
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
        if (strcmp(a, "--json") == 0) {
            as_json = true;
            continue;
        }
        fprintf(stderr, "rift status: unexpected argument '%s'\n", a);
        usage(stderr);
        return 2;
    }
    rift_client *c;
    if (rift_cli_connect(&cc, "status", &c) != 0) {
        return 1;
    }
    json_t *data;
    int rc = rift_cli_control(c, "status", "status", NULL, &data);
    rift_client_del(c);
    if (rc != 0) {
        return rc;
    }
    if (as_json) {
        rift_cli_json_print(stdout, data);
    } else {
        print_status(data);
    }
    json_decref(data);
    return 0;
}
