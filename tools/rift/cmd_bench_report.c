/*
 * cmd_bench_report.c — what `rift bench` makes of a run (tools layer):
 * latency percentiles by the original benchmark's rule, per-client
 * min/avg/max, CPU accounting (getrusage for this process,
 * /proc/<pid>/stat for the server) and the human report on stdout.
 */
#include "cmd_bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- CPU ---- */

/* utime + stime of a whole process, fields 14 and 15 of /proc/PID/stat,
 * counted after the ')' that ends the command name (which may hold
 * spaces). < 0 when unreadable. */
static double proc_cpu(int pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        return -1;
    }
    unsigned long long ut = 0, st = 0;
    /* After ")": state ppid pgrp session tty_nr tpgid flags minflt
     * cminflt majflt cmajflt utime stime. */
    if (sscanf(p + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu",
               &ut, &st) != 2) {
        return -1;
    }
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(ut + st) / (double)(hz > 0 ? hz : 100);
}

bench_cpu bench_cpu_mark(const bench_cfg *cfg) {
    bench_cpu m = {0, -1};
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        m.self = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    }
    for (size_t i = 0; i < cfg->n_server_pids; i++) {
        double t = proc_cpu(cfg->server_pids[i]);
        if (t < 0) {
            m.server = -1; /* one unknown makes the sum unknown */
            break;
        }
        m.server = (i == 0 ? 0 : m.server) + t;
    }
    return m;
}

/* ---- Samples and rates ---- */

int bench_result_add_lat(bench_result *res, const int64_t *lat, size_t n) {
    if (n == 0) {
        return 0;
    }
    int64_t *p = realloc(res->lat, (res->nlat + n) * sizeof(*p));
    if (p == NULL) {
        return -1;
    }
    memcpy(p + res->nlat, lat, n * sizeof(*p));
    res->lat = p;
    res->nlat += n;
    return 0;
}

int bench_result_add_rate(bench_result *res, double rate) {
    double *p = realloc(res->rates, (res->nrates + 1) * sizeof(*p));
    if (p == NULL) {
        return -1;
    }
    p[res->nrates++] = rate;
    res->rates = p;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bench_result_finish(bench_result *res) {
    if (res->nlat > 1) {
        qsort(res->lat, res->nlat, sizeof(res->lat[0]), cmp_i64);
    }
}

void bench_result_free(bench_result *res) {
    free(res->lat);
    free(res->rates);
    memset(res, 0, sizeof(*res));
}

double bench_result_pct_us(const bench_result *res, unsigned p) {
    if (res->nlat == 0) {
        return -1;
    }
    /* The original benchmark's rule: index floor((n - 1) * p / 100). */
    return (double)res->lat[(res->nlat - 1) * p / 100] / 1e3;
}

double bench_result_max_us(const bench_result *res) {
    return res->nlat == 0 ? -1 : (double)res->lat[res->nlat - 1] / 1e3;
}

double bench_result_rate(const bench_result *res) {
    return res->seconds > 0 ? (double)res->msgs / res->seconds : 0.0;
}

void bench_result_clients(const bench_result *res, double *min, double *avg,
                          double *max) {
    *min = *avg = *max = 0;
    if (res->nrates == 0) {
        return;
    }
    *min = *max = res->rates[0];
    double sum = 0;
    for (size_t i = 0; i < res->nrates; i++) {
        double v = res->rates[i];
        sum += v;
        *min = v < *min ? v : *min;
        *max = v > *max ? v : *max;
    }
    *avg = sum / (double)res->nrates;
}

unsigned bench_subs_column(const bench_cfg *cfg) {
    switch (cfg->scenario) {
    case BENCH_SUB:
    case BENCH_PUBSUB:
        return cfg->subs;
    case BENCH_REQ:
    case BENCH_REPLY:
    case BENCH_CONSUME:
    case BENCH_PUSH:
        return 1;
    case BENCH_WAIT:
    case BENCH_IDLE:
        return cfg->subs;
    default:
        return 0;
    }
}

/* ---- The report ---- */

static const char *human(double v, char *buf, size_t cap) {
    if (v >= 1e6) {
        snprintf(buf, cap, "%.2fM", v / 1e6);
    } else if (v >= 1e3) {
        snprintf(buf, cap, "%.1fk", v / 1e3);
    } else {
        snprintf(buf, cap, "%.0f", v);
    }
    return buf;
}

void bench_report_print(FILE *out, const bench_cfg *cfg,
                        const bench_result *res) {
    char a[32], b[32], c[32];
    double rate = bench_result_rate(res);
    fprintf(out,
            "rift quic %s: %zu B, %llu msgs in %.3f s = %s msg/s, %.2f MB/s",
            cfg->scenario_name, cfg->size, (unsigned long long)res->msgs,
            res->seconds, human(rate, a, sizeof(a)),
            rate * (double)cfg->size / 1e6);
    if (res->errors > 0) {
        fprintf(out, " (%llu lost or failed)", (unsigned long long)res->errors);
    }
    fputc('\n', out);
    if (res->nlat > 0) {
        fprintf(out,
                "  latency (%s, %zu samples): p50 %.1f us  p95 %.1f us  "
                "p99 %.1f us  max %.1f us\n",
                res->lat_what, res->nlat, bench_result_pct_us(res, 50),
                bench_result_pct_us(res, 95), bench_result_pct_us(res, 99),
                bench_result_max_us(res));
    }
    if (res->nrates > 0) {
        double mn, avg, mx;
        bench_result_clients(res, &mn, &avg, &mx);
        fprintf(out, "  per client (%zu): min %s  avg %s  max %s msg/s\n",
                res->nrates, human(mn, a, sizeof(a)), human(avg, b, sizeof(b)),
                human(mx, c, sizeof(c)));
    }
    double ccpu = res->cpu1.self - res->cpu0.self;
    if (res->cpu0.server >= 0 && res->cpu1.server >= 0 && res->msgs > 0) {
        double scpu = res->cpu1.server - res->cpu0.server;
        fprintf(out,
                "  cpu: client %.2f s, server %.2f s = %.2f s per million "
                "msgs\n",
                ccpu, scpu, (ccpu + scpu) / (double)res->msgs * 1e6);
    } else if (res->cpu0.server >= 0 && res->cpu1.server >= 0) {
        /* Nothing counted (idle): the seconds alone. */
        fprintf(out, "  cpu: client %.3f s, server %.3f s over %.1f s\n", ccpu,
                res->cpu1.server - res->cpu0.server, res->seconds);
    } else {
        fprintf(out, "  cpu: client %.2f s\n", ccpu);
    }
}
