/*
 * fsync_ceiling.c — synced-append ceiling of a filesystem (bench layer):
 * how many append + fdatasync pairs per second one thread gets in a
 * directory, and their latency. A stream that syncs before acknowledging
 * a publish cannot beat it without group commit; bench/compare.sh prints
 * it next to the durable rows.
 *
 *   fsync_ceiling [--dir DIR] [--size B] [--seconds S] [--csv FILE]
 *                 [--label TEXT]
 */
#include "bench_csv.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SAMPLES 1000000

static void usage(void) {
    fprintf(stderr, "usage: fsync_ceiling [--dir DIR] [--size B] "
                    "[--seconds S] [--csv FILE] [--label TEXT]\n");
}

int main(int argc, char **argv) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *csv = NULL;
    const char *label = NULL;
    size_t size = 4096;
    double seconds = 1.0;
    char path[4096];
    uint8_t *buf = NULL;
    uint64_t *lat = NULL;
    size_t n = 0;
    int fd = -1;
    int rc = 1;
    double cpu0, cpu1, secs;
    rift_tstamp t0, end, now;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--dir") == 0) {
            dir = v;
        } else if (strcmp(a, "--size") == 0) {
            size = (size_t)strtoul(v, NULL, 10);
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
        } else if (strcmp(a, "--csv") == 0) {
            csv = v;
        } else if (strcmp(a, "--label") == 0) {
            label = v;
        } else {
            usage();
            return 2;
        }
    }
    if (size < 1 || size > (1u << 20) || !(seconds > 0 && seconds <= 60) ||
        !bench_label_ok(label)) {
        usage();
        return 2;
    }
    snprintf(path, sizeof(path), "%s/fsync_ceiling.XXXXXX", dir);
    fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "fsync_ceiling: %s: %s\n", path, strerror(errno));
        return 1;
    }
    buf = malloc(size);
    lat = malloc(MAX_SAMPLES * sizeof(*lat));
    if (buf == NULL || lat == NULL) {
        fprintf(stderr, "fsync_ceiling: out of memory\n");
        goto fail;
    }
    memset(buf, 0x2A, size);

    cpu0 = bench_cpu_seconds();
    t0 = rift_now_ns();
    end = t0 + (rift_tstamp)(seconds * 1e9);
    now = t0;
    while (now < end && n < MAX_SAMPLES) {
        rift_tstamp s = now;
        if (write(fd, buf, size) != (ssize_t)size || fdatasync(fd) != 0) {
            fprintf(stderr, "fsync_ceiling: write/fdatasync: %s\n",
                    strerror(errno));
            goto fail;
        }
        now = rift_now_ns();
        lat[n++] = now - s;
    }
    cpu1 = bench_cpu_seconds();
    secs = (double)(now - t0) / 1e9;

    qsort(lat, n, sizeof(*lat), bench_cmp_u64);
    printf("fsync_ceiling: %zu B append + fdatasync in %s: %.0f ops/s, "
           "p50 %.1f us p99 %.1f us max %.1f us (%zu ops in %.2f s)\n",
           size, dir, (double)n / secs, bench_pct_us(lat, n, 50),
           bench_pct_us(lat, n, 99), bench_pct_us(lat, n, 100), n, secs);
    if (csv != NULL) {
        bench_row row = {
            .impl = "disk",
            .transport = "fdatasync",
            .label = label,
            .scenario = "fsync-ceiling",
            .size = size,
            .msgs = n,
            .pubs = 1,
            .subs = 0,
            .batch = 1,
            .seconds = secs,
            .lat_what = "sync",
            .p50_us = bench_pct_us(lat, n, 50),
            .p95_us = bench_pct_us(lat, n, 95),
            .p99_us = bench_pct_us(lat, n, 99),
            .max_us = bench_pct_us(lat, n, 100),
            .errors = 0,
            .client_cpu_s = cpu1 - cpu0,
            .server_cpu_s = -1,
        };
        if (bench_csv_append(csv, &row) != 0) {
            perror("fsync_ceiling: csv");
            goto fail;
        }
    }
    rc = 0;

fail:
    free(lat);
    free(buf);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    return rc;
}
