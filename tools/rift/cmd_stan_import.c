/*
 * cmd_stan_import.c — `rift stan import DIR --to STREAMING_DIR` (tools layer):
 * converts a stopped nats-streaming-server's file store into riftd's
 * streaming directory (the dir of `streaming = { store = "file", dir =
 * ... }`) through rift_stan_import (src/stan/import.h). Offline: riftd
 * must not be running on STREAMING_DIR. Exit status: 0 imported, 1 an
 * error (nothing of the failing channel is left behind), 2 usage.
 */
#include "cmd.h"

#include "stan/import.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: rift stan import DIR --to STREAMING_DIR\n\n"
            "Reads the file store of a stopped nats-streaming-server (its "
            "--dir: server.dat,\nclients.dat, one directory per channel) "
            "and writes each channel, with its\nsequence numbers, timestamps "
            "and durable subscriptions, into STREAMING_DIR,\nthe dir of "
            "riftd's `streaming = { store = \"file\", dir = ... }`. Stop "
            "riftd\nfirst. A channel already present and not empty in "
            "STREAMING_DIR is refused.\nClient registrations and "
            "non-durable subscriptions are not imported.\n");
}

static void on_channel(void *ud, const char *channel, uint64_t messages,
                       uint64_t first, uint64_t last, size_t consumers) {
    (void)ud;
    if (messages) {
        printf("channel %s: %" PRIu64 " messages (sequences %" PRIu64
               "..%" PRIu64 "), %zu durables\n",
               channel, messages, first, last, consumers);
    } else {
        printf("channel %s: no messages, %zu durables\n", channel, consumers);
    }
}

int rift_cmd_stan_import(int argc, char **argv) {
    if (argc == 3 &&
        (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    const char *src = NULL, *dst = NULL;
    for (int i = 2; argc >= 2 && strcmp(argv[1], "import") == 0 && i < argc;
         i++) {
        if (strcmp(argv[i], "--to") == 0 && i + 1 < argc) {
            dst = argv[++i];
        } else if (!src && argv[i][0] != '-') {
            src = argv[i];
        } else {
            src = dst = NULL;
            break;
        }
    }
    if (!src || !dst) {
        usage(stderr);
        return 2;
    }
    rift_stan_import_report rep;
    rift_error err = {0};
    int rc = rift_stan_import(src, dst, &rep, on_channel, NULL, &err);
    if (rc != 0) {
        fprintf(stderr, "rift stan import: %s\n", err.text);
        return 1;
    }
    printf("imported:      %zu channels, %" PRIu64 " messages, %zu durable "
           "consumers\n",
           rep.channels, rep.messages, rep.consumers);
    printf("cluster id:    %s (set riftd's streaming cluster_id to it)\n",
           rep.cluster_id);
    if (rep.holes) {
        printf("gaps:          %" PRIu64 " (kept: those sequences stay "
               "unused)\n",
               rep.holes);
    }
    printf("not imported:  %" PRIu64 " client registrations (clients "
           "register again on connect),\n               %zu non-durable "
           "subscriptions, %" PRIu64 " pending sequences no longer "
           "stored\n",
           rep.clients, rep.skipped_subs, rep.dropped_pending);
    return 0;
}
