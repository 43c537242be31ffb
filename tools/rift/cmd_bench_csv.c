/*
 * cmd_bench_csv.c — the CSV row of `rift bench --csv FILE` (tools layer):
 * the 23 columns of docs/performance.md ("CSV columns"), in the order and
 * number formats bench/nats-load writes, with a header line when the file
 * is new or empty. impl is "rift", transport "quic".
 */
#include "cmd_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CSV_HEADER                                                             \
 "impl,transport,label,scenario,size,msgs,pubs,subs,batch,seconds,"            \
 "msgs_per_s,mb_per_s,lat_what,p50_us,p95_us,p99_us,max_us,"                   \
 "client_min_mps,client_avg_mps,client_max_mps,errors,client_cpu_s,"           \
 "server_cpu_s\n"

typedef struct line {
    char b[8192];
    size_t n;
} line;

static void put(line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(line *l, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->b + l->n, sizeof(l->b) - l->n, fmt, ap);
    va_end(ap);
    if (n > 0) {
        l->n += (size_t)n;
        if (l->n >= sizeof(l->b)) {
            l->n = sizeof(l->b) - 1;
        }
    }
}

/* An optional figure: empty when negative (unknown). */
static void put_opt(line *l, double v, int prec, char sep) {
    if (v >= 0) {
        put(l, "%.*f", prec, v);
    }
    put(l, "%c", sep);
}

/* The label is free text in an unquoted field: like nats-load, commas
 * become ';' and line breaks spaces. */
static void put_label(line *l, const char *s) {
    for (; *s != '\0' && l->n < sizeof(l->b) - 2; s++) {
        char ch = *s;
        if (ch == ',') {
            ch = ';';
        } else if (ch == '\n' || ch == '\r') {
            ch = ' ';
        }
        l->b[l->n++] = ch;
    }
    l->b[l->n++] = ',';
    l->b[l->n] = '\0';
}

int bench_csv_write(const bench_cfg *cfg, const bench_result *res) {
    static line l;
    l.n = 0;
    l.b[0] = '\0';
    double rate = bench_result_rate(res);
    double mn, avg, mx;
    bench_result_clients(res, &mn, &avg, &mx);
    double ccpu = res->cpu1.self - res->cpu0.self;
    double scpu = -1;
    if (res->cpu0.server >= 0 && res->cpu1.server >= 0) {
        scpu = res->cpu1.server - res->cpu0.server;
    }
    put(&l, "rift,quic,");
    put_label(&l, cfg->label);
    put(&l, "%s,%zu,%llu,%u,%u,%u,%.6f,%.1f,%.3f,%s,", cfg->scenario_name,
        cfg->size, (unsigned long long)res->msgs, cfg->pubs,
        bench_subs_column(cfg), cfg->batch, res->seconds, rate,
        rate * (double)cfg->size / 1e6,
        res->nlat > 0 && res->lat_what != NULL ? res->lat_what : "");
    put_opt(&l, bench_result_pct_us(res, 50), 1, ',');
    put_opt(&l, bench_result_pct_us(res, 95), 1, ',');
    put_opt(&l, bench_result_pct_us(res, 99), 1, ',');
    put_opt(&l, bench_result_max_us(res), 1, ',');
    put(&l, "%.1f,%.1f,%.1f,%llu,%.3f,", mn, avg, mx,
        (unsigned long long)res->errors, ccpu);
    put_opt(&l, scpu, 3, '\n');

    int fd = open(cfg->csv, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        goto fail;
    }
    /* Header and row in one append, so runs sharing a file never
     * interleave inside a line. */
    static char out[sizeof(CSV_HEADER) + sizeof(l.b)];
    size_t n = 0;
    if (st.st_size == 0) {
        memcpy(out, CSV_HEADER, sizeof(CSV_HEADER) - 1);
        n = sizeof(CSV_HEADER) - 1;
    }
    memcpy(out + n, l.b, l.n);
    n += l.n;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, out + off, n - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            goto fail;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "rift bench: %s: %s\n", cfg->csv, strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}
