/*
 * bench_csv.h — the CSV row written by the bench programs (one .c file each)
 * (bench layer). The columns are the contract shared with bench/nats-load and
 * `rift bench --csv`; docs/performance.md ("CSV columns") defines each one.
 * Header-only so every bench program stays a single .c file.
 */
#ifndef RIFT_BENCH_BENCH_CSV_H
#define RIFT_BENCH_BENCH_CSV_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define BENCH_CSV_HEADER                                                       \
 "impl,transport,label,scenario,size,msgs,pubs,subs,batch,seconds,"            \
 "msgs_per_s,mb_per_s,lat_what,p50_us,p95_us,p99_us,max_us,"                   \
 "client_min_mps,client_avg_mps,client_max_mps,errors,client_cpu_s,"           \
 "server_cpu_s\n"

/* One measurement. A negative latency or CPU figure is written empty. */
typedef struct bench_row {
    const char *impl;
    const char *transport;
    const char *label;
    const char *scenario;
    uint64_t size;
    uint64_t msgs;
    unsigned pubs;
    unsigned subs;
    unsigned batch;
    double seconds;
    const char *lat_what;
    double p50_us, p95_us, p99_us, max_us;
    uint64_t errors;
    double client_cpu_s;
    double server_cpu_s;
} bench_row;

/* CPU seconds (user + system) used so far by this whole process. */
static inline double bench_cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0.0;
    }
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* qsort comparator of uint64_t samples (nanoseconds), ascending. */
static inline int bench_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The |p|-th percentile of |n| sorted nanosecond samples, in µs: the
 * original's rule, the sample at index floor((n-1)*p/100); 0 without
 * samples. */
static inline double bench_pct_us(const uint64_t *sorted, size_t n,
                                  unsigned p) {
    return n == 0 ? 0 : (double)sorted[(n - 1) * p / 100] / 1e3;
}

static inline void bench_csv_opt(FILE *f, double v, int prec, int last) {
    if (v >= 0) {
        fprintf(f, "%.*f", prec, v);
    }
    fputs(last ? "\n" : ",", f);
}

/*
 * bench_csv_append appends |r| to |path|, writing the header first when
 * the file is new or empty. Texts must not contain commas or newlines
 * (callers reject such labels). Returns 0, or -1 with errno set.
 */
static inline int bench_csv_append(const char *path, const bench_row *r) {
    struct stat st;
    int fresh = stat(path, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        return -1;
    }
    double rate = r->seconds > 0 ? (double)r->msgs / r->seconds : 0.0;
    if (fresh) {
        fputs(BENCH_CSV_HEADER, f);
    }
    fprintf(f, "%s,%s,%s,%s,%llu,%llu,%u,%u,%u,%.6f,%.1f,%.3f,%s,", r->impl,
            r->transport, r->label ? r->label : "", r->scenario,
            (unsigned long long)r->size, (unsigned long long)r->msgs, r->pubs,
            r->subs, r->batch, r->seconds, rate, rate * (double)r->size / 1e6,
            r->lat_what ? r->lat_what : "");
    bench_csv_opt(f, r->p50_us, 1, 0);
    bench_csv_opt(f, r->p95_us, 1, 0);
    bench_csv_opt(f, r->p99_us, 1, 0);
    bench_csv_opt(f, r->max_us, 1, 0);
    /* One client: its rate is the min, average and max. */
    fprintf(f, "%.1f,%.1f,%.1f,%llu,", rate, rate, rate,
            (unsigned long long)r->errors);
    bench_csv_opt(f, r->client_cpu_s, 3, 0);
    bench_csv_opt(f, r->server_cpu_s, 3, 1);
    return fclose(f) == 0 ? 0 : -1;
}

/* A label goes into one CSV field unquoted. */
static inline int bench_label_ok(const char *s) {
    return s == NULL || strpbrk(s, ",\n\r\"") == NULL;
}

#endif /* RIFT_BENCH_BENCH_CSV_H */
