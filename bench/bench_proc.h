/*
 * bench_proc.h — what the load and soak programs need around a riftd they
 * did not start (bench layer): the client settings from the command line
 * (address, CA, token from an environment variable), the server's RSS and
 * CPU from /proc, a monotonic clock and a higher descriptor limit.
 * Header-only so every bench program stays a single .c file.
 */
#ifndef RIFT_BENCH_BENCH_PROC_H
#define RIFT_BENCH_BENCH_PROC_H

#include "rift/client.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline int64_t bench_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A field of /proc/PID/status in KiB ("VmRSS", "VmHWM"), or -1. */
static inline long bench_proc_status_kb(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    long kb = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* User + system CPU seconds of process |pid| so far, or -1. */
static inline double bench_proc_cpu_s(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1.0;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields count from
     * the last ')'. utime and stime are fields 14 and 15. */
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        return -1.0;
    }
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) != 2) {
        return -1.0;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* User + system CPU seconds of this process so far. */
static inline double bench_self_cpu_s(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return -1.0;
    }
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Peak RSS of this process in KiB. */
static inline long bench_self_maxrss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* Raises the soft descriptor limit to the hard one (every client holds a
 * UDP socket and a few event descriptors); returns the new soft limit. */
static inline long bench_raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return -1;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (long)rl.rlim_cur;
}

/* The connection options every such program takes. */
typedef struct bench_conn {
    const char *address;     /* --server HOST:PORT */
    const char *ca;          /* --ca FILE */
    const char *server_name; /* --server-name NAME (localhost) */
    const char *token_env;   /* --token-env VAR */
    pid_t server_pid;        /* --server-pid PID (0: not measured) */
} bench_conn;

/* Takes argv[*i] (and its value) when it is a connection option: 1 when
 * taken, 0 when not one, -1 when its value is missing. */
static inline int bench_conn_opt(bench_conn *c, int argc, char **argv, int *i) {
    static const char *const names[] = {"--server", "--ca", "--server-name",
                                        "--token-env", "--server-pid"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (strcmp(argv[*i], names[k]) != 0) {
            continue;
        }
        if (*i + 1 >= argc) {
            return -1;
        }
        const char *v = argv[++*i];
        switch (k) {
        case 0:
            c->address = v;
            break;
        case 1:
            c->ca = v;
            break;
        case 2:
            c->server_name = v;
            break;
        case 3:
            c->token_env = v;
            break;
        default:
            c->server_pid = (pid_t)strtol(v, NULL, 10);
            break;
        }
        return 1;
    }
    return 0;
}

/* Connects one client; prints the reason on failure. */
static inline int bench_conn_connect(const bench_conn *c, const char *prog,
                                     rift_client **pc) {
    const char *token = c->token_env ? getenv(c->token_env) : NULL;
    if (c->address == NULL || c->ca == NULL || token == NULL) {
        fprintf(stderr, "%s: --server, --ca and --token-env (set) needed\n",
                prog);
        return -1;
    }
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = c->address;
    s.ca_file = c->ca;
    s.server_name = c->server_name ? c->server_name : "localhost";
    s.token = token;
    /* A thousand handshakes queue behind each other on a loaded machine. */
    s.connect_timeout_ms = 120000;
    rift_error err = {0};
    int rc = rift_client_new(pc, &s, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: connect %s: %s\n", prog, c->address, err.text);
    }
    return rc;
}

#endif
