/*
 * cmd_bench.c — `rift bench SCENARIO` (tools layer): the entry point and
 * the machinery every scenario shares (connections, the start gate,
 * clocks, payloads). See cmd_bench.h for the file layout and
 * docs/performance.md for the workloads and the CSV contract.
 */
#include "cmd.h"
#include "cmd_bench.h"
#include "io.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Clocks ---- */

int64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

struct timespec bench_deadline(int64_t ns) {
    int64_t t = bench_now_ns() + ns;
    struct timespec ts = {t / 1000000000, t % 1000000000};
    return ts;
}

/* ---- Connections ---- */

int bench_connect(const bench_cfg *cfg, rift_client **pc) {
    rift_error err;
    if (rift_client_new(pc, &cfg->conn, &err) != 0) {
        *pc = NULL;
        fprintf(stderr, "rift bench: %s: %s\n", cfg->conn.address, err.text);
        return -1;
    }
    return 0;
}

/* ---- Start gate ---- */

void bench_gate_init(bench_gate *g) {
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

void bench_gate_free(bench_gate *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

bool bench_gate_pass(bench_gate *g) {
    pthread_mutex_lock(&g->mu);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open && !g->cancelled) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    bool go = g->open;
    pthread_mutex_unlock(&g->mu);
    return go;
}

void bench_gate_wait_ready(bench_gate *g, unsigned n) {
    pthread_mutex_lock(&g->mu);
    while (g->ready < n) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
}

void bench_gate_open(bench_gate *g) {
    pthread_mutex_lock(&g->mu);
    g->t0 = bench_now_ns();
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void bench_gate_cancel(bench_gate *g) {
    pthread_mutex_lock(&g->mu);
    g->cancelled = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* ---- Threads, payloads, shares ---- */

int bench_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    /* Workers keep their buffers on the heap; a modest stack lets a
     * stream run start a thread per in-flight publish. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    int rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "rift bench: cannot start a thread: %s\n",
                strerror(rc));
        return -1;
    }
    return 0;
}

uint8_t *bench_payload_new(size_t size) {
    uint8_t *p = malloc(size > 0 ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        return NULL;
    }
    memset(p, 0x2A, size);
    if (size >= 8) {
        bench_put_le64(p, 0);
    }
    return p;
}

void bench_put_le64(uint8_t *p, uint64_t v) {
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

uint64_t bench_get_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

uint64_t bench_share(uint64_t total, unsigned n, unsigned i) {
    return total / n + (i < total % n ? 1 : 0);
}

/* ---- Errors and signals ---- */

static atomic_bool error_noted;

void bench_note_error(const char *what, const rift_error *err) {
    if (!atomic_exchange(&error_noted, true)) {
        fprintf(stderr, "rift bench: %s: %s\n", what, err->text);
    }
}

bool bench_interrupted(void) {
    /* Set only where the handlers are installed (sub, reply). */
    return rift_cli_stop_requested();
}

/* ---- Entry point ---- */

int rift_cmd_bench(int argc, char **argv) {
    static int (*const run[])(const bench_cfg *, bench_result *) = {
        [BENCH_PUB] = bench_run_pub,         [BENCH_SUB] = bench_run_sub,
        [BENCH_PUBSUB] = bench_run_pubsub,   [BENCH_REQ] = bench_run_req,
        [BENCH_REPLY] = bench_run_reply,     [BENCH_STREAM] = bench_run_stream,
        [BENCH_CONSUME] = bench_run_consume, [BENCH_PUSH] = bench_run_push,
        [BENCH_WAIT] = bench_run_wait,       [BENCH_IDLE] = bench_run_idle,
    };
    /* The configuration holds the connection flags' buffers (~8 KiB). */
    bench_cfg *cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        return 1;
    }
    int rc = bench_args_parse(cfg, argc, argv);
    if (rc != 0) {
        free(cfg);
        return rc == 1 ? 0 : 2;
    }
    if (rift_cli_conn_settings(&cfg->cc, "bench", &cfg->conn) != 0) {
        free(cfg);
        return 1;
    }
    /* A blocked operation gives up after --timeout, like a stall. */
    uint64_t op_ms = cfg->timeout_ns / 1000000;
    cfg->conn.op_timeout_ms = (uint32_t)(op_ms < 1000          ? 1000
                                         : op_ms > 0xffffffffu ? 0xffffffffu
                                                               : op_ms);
    /* sub and reply wait for someone else's traffic: there SIGINT or
     * SIGTERM ends the wait and reports what arrived. Elsewhere they keep
     * their default action, as with nats-load. */
    if (cfg->scenario == BENCH_SUB || cfg->scenario == BENCH_REPLY) {
        rift_cli_catch_signals();
    }
    bench_result res;
    memset(&res, 0, sizeof(res));
    bench_progress_start(cfg);
    rc = run[cfg->scenario](cfg, &res);
    bench_progress_stop();
    if (rc == 0) {
        bench_result_finish(&res);
        bench_report_print(stdout, cfg, &res);
        fflush(stdout);
        if (cfg->csv != NULL && bench_csv_write(cfg, &res) != 0) {
            rc = 1;
        } else if (res.errors > 0) {
            /* The row is written (its errors column says how many were
             * lost); the status tells scripts the run was not clean. */
            rc = 3;
        }
    }
    bench_result_free(&res);
    free(cfg);
    return rc;
}
