/*
 * main.c — the rift command-line tool (tools layer): dispatches to the
 * subcommand named by the first argument.
 */
#include "cmd.h"

#include "rift/rift.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    rift_cmd_fn fn;
    const char *help;
} commands[] = {
    {"version", rift_cmd_version, "print the version"},
    {"pub", rift_cmd_pub, "publish a message"},
    {"sub", rift_cmd_sub, "print the messages of a subscription"},
    {"req", rift_cmd_req, "send a request and print the reply"},
    {"reply", rift_cmd_reply, "answer requests on a subject"},
    {"status", rift_cmd_status, "show riftd's status"},
    {"stream", rift_cmd_stream, "publish to, inspect or replay a stream"},
    {"consumer", rift_cmd_consumer, "open, fetch, ack or delete a consumer"},
    {"bench", rift_cmd_bench,
     "measure throughput and latency (like nats bench)"},
    {"store", rift_cmd_store, "verify or repair a stream directory"},
    {"certs", rift_cmd_certs, "create development TLS certificates"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: rift <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    }
    fprintf(out, "\nrift <command> --help shows a command's options.\n");
}

int rift_cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("rift %s (protocol %s)\n", rift_version(), RIFT_ALPN);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            return commands[i].fn(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "rift: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
