/*
 * commands.c — the rift command-line tool (tools layer): dispatches to the
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
    {"consumer", rift_cmd_consumer,
     "open, fetch, next, ack, list or delete consumers"},
    {"stan", rift_cmd_stan,
     "show NATS Streaming clients and channels, or import a store"},
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
    fprintf(out, "\nrift <command> --help or rift help <command> shows a "
                 "command's options;\nrift --version prints the version.\n");
}

int rift_cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("rift %s (protocol %s)\n", rift_version(), RIFT_ALPN);
    return 0;
}

static rift_cmd_fn find(const char *name) {
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(name, commands[i].name) == 0) {
            return commands[i].fn;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *a = argv[1];
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
        return rift_cmd_version(argc - 1, argv + 1);
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 ||
        strcmp(a, "help") == 0) {
        if (argc == 2) {
            usage(stdout);
            return 0;
        }
        /* `rift help CMD` is `rift CMD --help`. */
        rift_cmd_fn fn = find(argv[2]);
        if (fn == NULL || argc > 3) {
            fprintf(stderr, "rift help: unknown command '%s'\n", argv[2]);
            usage(stderr);
            return 2;
        }
        static char help_flag[] = "--help";
        char *help_argv[] = {argv[2], help_flag, NULL};
        return fn(2, help_argv);
    }
    rift_cmd_fn fn = find(a);
    if (fn != NULL) {
        return fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "rift: unknown command '%s'\n", a);
    usage(stderr);
    return 2;
}
