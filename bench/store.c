/*
 * store.c — retained-stream benchmark (bench layer): 64-byte records in
 * one process. Prints each figure next to its target; every figure is the
 * median of --runs runs (the machine is shared and noisy).
 *
 *   store [--dir DIR] [--runs N] [--seconds S] [--recovery-mib MIB]
 *         [--only NAME]
 *
 * NAME: disk, sync1, sync64, async64, unsynced (1 blocking publisher),
 * unsynced4 (4 and 16 blocking publishers), unsyncedasync (one thread,
 * async window of 1024), memory, fetchack, recovery ("disk" measures raw append
 * + fdatasync for context). Files go to a fresh directory under --dir (default
 * $TMPDIR or /tmp) and are removed at the end. The recovery figure builds a
 * stream of
 * --recovery-mib MiB (default 1024) once and times opening it (page cache
 * warm: dropping caches needs root and hurts everybody else).
 */
#include "bench_csv.h"

#include "rift/stream.h"
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PAYLOAD  64
#define MAX_RUNS 9

static const char *base_dir;
static double seconds = 2.0;
static int runs = 3;
static uint64_t recovery_mib = 1024;
static const char *only;
static uint8_t payload[PAYLOAD];

/* ---- Helpers ---- */

static double now_s(void) {
    return (double)rift_now_ns() / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

/* p-th percentile of |n| nanosecond samples (sorted here), in µs. */
static double pct_us(uint64_t *v, size_t n, unsigned p) {
    qsort(v, n, sizeof(uint64_t), bench_cmp_u64);
    return bench_pct_us(v, n, p);
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static char *fresh_dir(const char *tag) {
    char tmpl[4096];
    snprintf(tmpl, sizeof(tmpl), "%s/rift-bench-%s-XXXXXX", base_dir, tag);
    if (mkdtemp(tmpl) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    return strdup(tmpl);
}

static void drop_dir(char *dir) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* A stream without retention limits in the way (|unlimited|), or with the
 * default ones. */
static rift_stream *open_stream(const char *dir, bool sync, bool unlimited) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.sync_on_write = sync;
    if (unlimited) {
        s.max_messages = UINT64_MAX;
        s.max_bytes = UINT64_MAX;
    }
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "open %s: %s\n", dir ? dir : "(memory)", err.text);
        exit(1);
    }
    return st;
}

static bool want(const char *name) {
    return only == NULL || strcmp(only, name) == 0;
}

static void line(const char *what, double value, const char *unit,
                 const char *target) {
    printf("%-44s %12.0f %-8s %s\n", what, value, unit, target);
    fflush(stdout);
}

/* ---- The disk itself: append + fdatasync, as context for the synced
 * figures (the targets assume about 1.2 ms per fdatasync). ---- */

typedef struct raw_sync {
    int fd;
    double until;
    atomic_llong *off;
    uint64_t count;
} raw_sync;

static void *raw_sync_main(void *p) {
    raw_sync *r = p;
    uint8_t buf[128];
    memset(buf, 'r', sizeof(buf));
    while (now_s() < r->until) {
        long long off = atomic_fetch_add(r->off, (long long)sizeof(buf));
        if (pwrite(r->fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf) ||
            fdatasync(r->fd) != 0) {
            perror("raw sync");
            exit(1);
        }
        r->count++;
    }
    return NULL;
}

static double raw_syncs(int nthreads, double secs) {
    char *dir = fresh_dir("raw");
    char path[4200];
    snprintf(path, sizeof(path), "%s/raw", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    atomic_llong off = 0;
    raw_sync r[16];
    pthread_t th[16];
    double start = now_s();
    for (int i = 0; i < nthreads; i++) {
        r[i] = (raw_sync){.fd = fd, .until = start + secs, .off = &off};
        pthread_create(&th[i], NULL, raw_sync_main, &r[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += r[i].count;
    }
    close(fd);
    drop_dir(dir);
    return (double)total / (now_s() - start);
}

/* ---- Synced publishers (blocking) ---- */

typedef struct pub_thread {
    rift_stream *st;
    double until;
    uint64_t count;
    uint64_t *lat;
    size_t nlat;
    size_t cap;
} pub_thread;

static void *pub_main(void *p) {
    pub_thread *t = p;
    while (now_s() < t->until) {
        uint64_t t0 = rift_now_ns();
        if (rift_stream_publish(t->st, "bench.rec", 9, NULL, 0, payload,
                                PAYLOAD, NULL, NULL) != 0) {
            fprintf(stderr, "publish failed\n");
            exit(1);
        }
        uint64_t dt = rift_now_ns() - t0;
        if (t->nlat < t->cap) {
            t->lat[t->nlat++] = dt;
        }
        t->count++;
    }
    return NULL;
}

/* |nthreads| blocking publishers; unsynced streams keep the default
 * retention, so the steady state also evicts and drops segments. */
static void publishers(int nthreads, bool sync, double *rate, double *p99) {
    char *dir = fresh_dir(sync ? "sync" : "unsynced");
    rift_stream *st = open_stream(dir, sync, sync);
    pub_thread *t = calloc((size_t)nthreads, sizeof(*t));
    pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
    double start = now_s();
    for (int i = 0; i < nthreads; i++) {
        t[i].st = st;
        t[i].until = start + seconds;
        t[i].cap = 200000;
        t[i].lat = malloc(t[i].cap * sizeof(uint64_t));
        pthread_create(&th[i], NULL, pub_main, &t[i]);
    }
    uint64_t total = 0;
    size_t nlat = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += t[i].count;
        nlat += t[i].nlat;
    }
    double elapsed = now_s() - start;
    uint64_t *all = malloc(nlat * sizeof(uint64_t));
    size_t k = 0;
    for (int i = 0; i < nthreads; i++) {
        memcpy(all + k, t[i].lat, t[i].nlat * sizeof(uint64_t));
        k += t[i].nlat;
        free(t[i].lat);
    }
    *rate = (double)total / elapsed;
    *p99 = pct_us(all, nlat, 99);
    rift_stream_info info;
    if (getenv("BENCH_DEBUG") && rift_stream_get_info(st, &info, NULL) == 0) {
        fprintf(stderr,
                "  %llu records, %llu syncs, %.1f records/sync, p50 %.0f us\n",
                (unsigned long long)total, (unsigned long long)info.syncs,
                (double)total / (double)(info.syncs ? info.syncs : 1),
                pct_us(all, nlat, 50));
        rift_stream_info_free(&info);
    }
    free(all);
    free(t);
    free(th);
    rift_stream_del(st);
    drop_dir(dir);
}

/* ---- Async publishing with a window (the server loop's pattern) ---- */

typedef struct window {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int outstanding;
    /* The submitter, once the window is full, sleeps until no more than
     * |low| are outstanding (an event loop drains completions in
     * batches, not one wake-up per completion). */
    int low;
    bool waiting;
    uint64_t done;
} window;

static void on_stored(void *ud, int status, const rift_error *err) {
    window *w = ud;
    if (status != 0) {
        fprintf(stderr, "async publish failed: %s\n", err->text);
        exit(1);
    }
    pthread_mutex_lock(&w->mu);
    w->outstanding--;
    w->done++;
    if (w->waiting && w->outstanding <= w->low) {
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

static void window_wait(window *w, int above, int low) {
    pthread_mutex_lock(&w->mu);
    if (w->outstanding > above) {
        w->low = low;
        w->waiting = true;
        while (w->outstanding > low) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        w->waiting = false;
    }
    w->outstanding++;
    pthread_mutex_unlock(&w->mu);
}

/* One thread publishing asynchronously with at most |depth| publishes
 * outstanding, refilling once |low| or fewer are. */
static double async_window(int depth, int low, bool sync) {
    char *dir = fresh_dir("async");
    rift_stream *st = open_stream(dir, sync, sync);
    window w = {.outstanding = 0};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    double start = now_s(), until = start + seconds;
    for (uint64_t i = 0;; i++) {
        if (i % 256 == 0 && now_s() >= until) {
            break;
        }
        window_wait(&w, depth - 1, low);
        bool completed = false;
        int rc = rift_stream_publish_async(st, "bench.rec", 9, NULL, 0, payload,
                                           PAYLOAD, NULL, &completed, on_stored,
                                           &w, NULL);
        if (rc == 0 && completed) {
            pthread_mutex_lock(&w.mu);
            w.outstanding--;
            w.done++;
            pthread_mutex_unlock(&w.mu);
        } else if (rc != 0) {
            fprintf(stderr, "publish_async: %d\n", rc);
            exit(1);
        }
    }
    pthread_mutex_lock(&w.mu);
    w.low = 0;
    w.waiting = true;
    while (w.outstanding > 0) {
        pthread_cond_wait(&w.cv, &w.mu);
    }
    uint64_t done = w.done;
    pthread_mutex_unlock(&w.mu);
    double rate = (double)done / (now_s() - start);
    rift_stream_del(st);
    drop_dir(dir);
    return rate;
}

/* ---- Unsynced publishing ---- */

static double unsynced(void) {
    char *dir = fresh_dir("unsynced");
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.sync_on_write = false;
    rift_stream *st = NULL;
    if (rift_stream_new(&st, &s, NULL) != 0) {
        exit(1);
    }
    /* Default retention (100,000 records): the steady state evicts one
     * record per publish and drops whole segments. */
    uint64_t n = 0;
    double start = now_s(), until = start + seconds;
    while (true) {
        for (int i = 0; i < 1000; i++) {
            if (rift_stream_publish(st, "bench.rec", 9, NULL, 0, payload,
                                    PAYLOAD, NULL, NULL) != 0) {
                exit(1);
            }
        }
        n += 1000;
        if (now_s() >= until) {
            break;
        }
    }
    double rate = (double)n / (now_s() - start);
    rift_stream_del(st);
    drop_dir(dir);
    return rate;
}

/* ---- Publish + fetch + ack ---- */

static void on_acked(void *ud, int status, const rift_error *err) {
    (void)err;
    window *w = ud;
    if (status != 0) {
        exit(1);
    }
    pthread_mutex_lock(&w->mu);
    w->outstanding--;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/*
 * Fetches batches of 256 and acks each record until |total| are acked.
 * With |async_acks| the acks of a batch share one group commit.
 */
static double fetch_ack(rift_stream *st, uint64_t total, bool publish_too,
                        bool async_acks) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = 1024;
    rift_consumer *c = NULL;
    char name[32];
    static int seq;
    snprintf(name, sizeof(name), "bench%d", seq++);
    if (rift_stream_consumer_open(st, name, strlen(name), &cfg, &c, NULL) !=
        0) {
        exit(1);
    }
    window w = {.outstanding = 0};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    uint64_t acked = 0;
    double start = now_s();
    while (acked < total) {
        if (publish_too) {
            for (int i = 0; i < 256; i++) {
                rift_stream_publish(st, "bench.rec", 9, NULL, 0, payload,
                                    PAYLOAD, NULL, NULL);
            }
        }
        rift_batch b = {0};
        if (rift_consumer_fetch(c, 256, &b, NULL) != 0) {
            exit(1);
        }
        if (b.count == 0) {
            break;
        }
        for (size_t i = 0; i < b.count; i++) {
            uint64_t q = b.items[i].record.sequence;
            if (async_acks) {
                pthread_mutex_lock(&w.mu);
                w.outstanding++;
                pthread_mutex_unlock(&w.mu);
                bool completed = false;
                int rc = rift_consumer_ack_async(c, q, &completed, on_acked, &w,
                                                 NULL);
                if (rc == 0 && completed) {
                    pthread_mutex_lock(&w.mu);
                    w.outstanding--;
                    pthread_mutex_unlock(&w.mu);
                } else if (rc != 0) {
                    exit(1);
                }
            } else if (rift_consumer_ack(c, q, NULL) != 0) {
                exit(1);
            }
        }
        acked += b.count;
        rift_batch_free(&b);
        if (async_acks) {
            pthread_mutex_lock(&w.mu);
            while (w.outstanding > 0) {
                pthread_cond_wait(&w.cv, &w.mu);
            }
            pthread_mutex_unlock(&w.mu);
        }
    }
    double rate = (double)acked / (now_s() - start);
    rift_consumer_close(c);
    return rate;
}

static void fill(rift_stream *st, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (rift_stream_publish(st, "bench.rec", 9, NULL, 0, payload, PAYLOAD,
                                NULL, NULL) != 0) {
            exit(1);
        }
    }
}

/* ---- Recovery ---- */

static double recovery(const char *dir) {
    double t0 = now_s();
    rift_stream *st = open_stream(dir, false, true);
    double t = now_s() - t0;
    rift_stream_del(st);
    return t;
}

int main(int argc, char **argv) {
    base_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            base_dir = argv[++i];
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--recovery-mib") == 0 && i + 1 < argc) {
            recovery_mib = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: store [--dir DIR] [--runs N] [--seconds S] "
                            "[--recovery-mib MIB] [--only NAME]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS) {
        runs = 3;
    }
    memset(payload, 'x', sizeof(payload));
    printf("rift store benchmark: %d-byte payloads, median of %d runs, %.1f s "
           "each, in %s\n\n",
           PAYLOAD, runs, seconds, base_dir);
    double a[MAX_RUNS], b[MAX_RUNS];

    if (want("disk")) {
        double one = raw_syncs(1, 1.0), four = raw_syncs(4, 1.0);
        printf("disk: %.0f append+fdatasync/s from 1 thread (%.2f ms each), "
               "%.0f/s from 4 threads\n\n",
               one, 1000.0 / one, four);
    }
    if (want("sync1")) {
        for (int r = 0; r < runs; r++) {
            publishers(1, true, &a[r], &b[r]);
        }
        line("synced publish, 1 publisher (msgs/s)", median(a, runs), "msgs/s",
             "(fdatasync-bound)");
        line("  p99 latency", median(b, runs), "us", "");
    }
    if (want("sync64")) {
        for (int r = 0; r < runs; r++) {
            publishers(64, true, &a[r], &b[r]);
        }
        line("synced publish, 64 publishers (msgs/s)", median(a, runs),
             "msgs/s", "target >= 50,000");
        line("  p99 latency", median(b, runs), "us", "");
    }
    if (want("async64")) {
        for (int r = 0; r < runs; r++) {
            a[r] = async_window(64, 63, true);
        }
        line("synced publish, async window of 64 (msgs/s)", median(a, runs),
             "msgs/s", "(server-loop pattern)");
    }
    if (want("unsynced")) {
        for (int r = 0; r < runs; r++) {
            a[r] = unsynced();
        }
        line("unsynced publish, 1 publisher (msgs/s)", median(a, runs),
             "msgs/s", "(a write() per publish)");
    }
    if (want("unsynced4")) {
        for (int r = 0; r < runs; r++) {
            publishers(4, false, &a[r], &b[r]);
        }
        line("unsynced publish, 4 publishers (msgs/s)", median(a, runs),
             "msgs/s", "target >= 1,000,000");
        line("  p99 latency", median(b, runs), "us", "");
        for (int r = 0; r < runs; r++) {
            publishers(16, false, &a[r], &b[r]);
        }
        line("unsynced publish, 16 publishers (msgs/s)", median(a, runs),
             "msgs/s", "target >= 1,000,000");
        line("  p99 latency", median(b, runs), "us", "");
    }
    if (want("unsyncedasync")) {
        for (int r = 0; r < runs; r++) {
            a[r] = async_window(1024, 512, false);
        }
        line("unsynced publish, async window of 1024", median(a, runs),
             "msgs/s", "target >= 1,000,000");
    }
    if (want("memory")) {
        for (int r = 0; r < runs; r++) {
            rift_stream *st = open_stream(NULL, false, false);
            a[r] = fetch_ack(st, 1000000, true, false);
            rift_stream_del(st);
        }
        line("memory publish+fetch+ack (msgs/s)", median(a, runs), "msgs/s",
             "");
    }
    if (want("fetchack")) {
        const uint64_t n = 500000;
        for (int r = 0; r < runs; r++) {
            rift_stream *st = open_stream(NULL, false, true);
            fill(st, n);
            a[r] = fetch_ack(st, n, false, false);
            rift_stream_del(st);
        }
        line("fetch+ack, batches of 256, memory (msgs/s)", median(a, runs),
             "msgs/s", "target >= 500,000");
        for (int r = 0; r < runs; r++) {
            char *dir = fresh_dir("fetch");
            rift_stream *st = open_stream(dir, false, true);
            fill(st, n);
            a[r] = fetch_ack(st, n, false, false);
            rift_stream_del(st);
            drop_dir(dir);
        }
        line("fetch+ack, batches of 256, file unsynced", median(a, runs),
             "msgs/s", "(a write() per ack)");
        for (int r = 0; r < runs; r++) {
            char *dir = fresh_dir("fetcha");
            rift_stream *st = open_stream(dir, false, true);
            fill(st, n);
            a[r] = fetch_ack(st, n, false, true);
            rift_stream_del(st);
            drop_dir(dir);
        }
        line("fetch+ack, batches of 256, unsynced, async acks", median(a, runs),
             "msgs/s", "target >= 500,000");
        for (int r = 0; r < runs; r++) {
            char *dir = fresh_dir("fetchs");
            rift_stream *st = open_stream(dir, false, true);
            fill(st, 100000);
            rift_stream_del(st);
            st = open_stream(dir, true, true);
            a[r] = fetch_ack(st, 100000, false, true);
            rift_stream_del(st);
            drop_dir(dir);
        }
        line("fetch+ack, batches of 256, synced, async acks", median(a, runs),
             "msgs/s", "(2 group commits per batch)");
    }
    if (want("recovery")) {
        char *dir = fresh_dir("recovery");
        struct statvfs vs;
        uint64_t need = recovery_mib << 20;
        if (statvfs(dir, &vs) == 0 &&
            (uint64_t)vs.f_bavail * vs.f_frsize < 3 * need) {
            fprintf(stderr, "recovery: not enough free space for %llu MiB\n",
                    (unsigned long long)recovery_mib);
            drop_dir(dir);
            return 1;
        }
        rift_stream_settings s;
        rift_stream_settings_default(&s);
        s.storage_path = dir;
        s.sync_on_write = false;
        s.max_messages = UINT64_MAX;
        s.max_bytes = UINT64_MAX;
        rift_stream *st = NULL;
        if (rift_stream_new(&st, &s, NULL) != 0) {
            return 1;
        }
        uint64_t rec = PAYLOAD + 9 + 32, n = need / rec;
        double t0 = now_s();
        fill(st, n);
        rift_stream_info info;
        rift_stream_get_info(st, &info, NULL);
        rift_stream_del(st);
        printf("(built %llu records, %llu MiB in %zu segments, in %.1f s)\n",
               (unsigned long long)n,
               (unsigned long long)(info.disk_bytes >> 20), info.segments,
               now_s() - t0);
        rift_stream_info_free(&info);
        for (int r = 0; r < runs; r++) {
            a[r] = recovery(dir) * 1000;
        }
        char what[64];
        snprintf(what, sizeof(what), "recovery of %llu MiB (ms, warm cache)",
                 (unsigned long long)recovery_mib);
        line(what, median(a, runs), "ms",
             recovery_mib == 1024 ? "target <= 2,000" : "");
        drop_dir(dir);
    }
    return 0;
}
