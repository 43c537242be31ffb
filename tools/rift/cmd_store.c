/*
 * cmd_store.c — `rift store verify DIR` and `rift store repair DIR` (tools
 * layer): offline checks of a stream directory through the public
 * rift_store_verify / rift_store_repair. Exit status: 0 clean (after
 * repair: repaired), 1 a problem remains, 2 usage.
 */
#include "cmd.h"

#include "rift/stream.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: rift store verify DIR   check every record and state "
                 "event\n"
                 "       rift store repair DIR   cut the log at the first bad "
                 "record\n\n"
                 "Both take the directory lock: stop the server using DIR "
                 "first.\nrepair loses every record after the cut; their "
                 "sequence numbers are never\nreused (the next publish gets "
                 "the next sequence shown).\n");
}

static void print_report(const rift_store_report *r, bool repair) {
    printf("segments:      %zu (%" PRIu64 " bytes)\n", r->segments,
           r->segment_bytes);
    printf("records:       %" PRIu64, r->records);
    if (r->records > 0) {
        printf(" (sequences %" PRIu64 "..%" PRIu64 ")", r->first_sequence,
               r->last_sequence);
    }
    printf("\nnext sequence: %" PRIu64 "\n", r->next_sequence);
    printf("consumers:     %zu\n", r->consumers);
    printf("state events:  %" PRIu64 "\n", r->state_events);
    if (r->torn) {
        printf("%s %s at offset %" PRIu64 "\n",
               repair ? "cut:          " : "torn tail:    ", r->torn_file,
               r->torn_offset);
    }
    if (repair) {
        printf("removed:       %" PRIu64 " bytes, %zu segment files\n",
               r->repaired_bytes, r->deleted_segments);
    }
}

/* True for "NNNNNNNNNNNNNNNNNNNN.seg" (docs/storage-format.md). */
static bool is_segment_name(const char *name) {
    size_t n = strlen(name);
    if (n != 24 || strcmp(name + 20, ".seg") != 0) {
        return false;
    }
    for (size_t i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return false;
        }
    }
    return true;
}

/* A stream directory holds a state log or a segment. Checked before the
 * store opens |dir|, which would take the lock by creating stream.lock
 * there and find an empty, hence clean, stream in any directory. */
static bool is_stream_dir(const char *cmd, const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "rift store %s: cannot open %s: %s\n", cmd, dir,
                strerror(errno));
        return false;
    }
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        found =
            strcmp(e->d_name, "state.log") == 0 || is_segment_name(e->d_name);
    }
    closedir(d);
    if (!found) {
        fprintf(stderr,
                "rift store %s: %s is not a stream directory (it holds no "
                "state.log and no NNNNNNNNNNNNNNNNNNNN.seg segment); give "
                "a stream's storage_path\n",
                cmd, dir);
    }
    return found;
}

int rift_cmd_store(int argc, char **argv) {
    if (argc == 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 ||
        (strcmp(argv[1], "verify") != 0 && strcmp(argv[1], "repair") != 0)) {
        usage(stderr);
        return 2;
    }
    bool repair = strcmp(argv[1], "repair") == 0;
    if (!is_stream_dir(argv[1], argv[2])) {
        return 1;
    }
    rift_store_report rep;
    rift_error err = {0};
    int rc = repair ? rift_store_repair(argv[2], &rep, &err)
                    : rift_store_verify(argv[2], &rep, &err);
    if (rc != 0) {
        fprintf(stderr, "rift store %s: %s\n", argv[1], err.text);
        return 1;
    }
    print_report(&rep, repair);
    if (!repair && rep.torn) {
        printf("status:        ok (the torn tail is cut when the stream "
               "opens)\n");
    } else {
        printf("status:        ok\n");
    }
    return 0;
}
