/*
 * cmd_bench.h — internals of `rift bench` (tools layer), the load generator
 * in the spirit of `nats bench` that drives the same workloads as
 * bench/nats-load and writes the same CSV row (docs/performance.md, "CSV
 * columns"). The pieces, one file each:
 *   cmd_bench.c          entry point, connections, start gate, timing
 *   cmd_bench_args.c     flags and their validation
 *   cmd_bench_pubsub.c   pub, sub, pubsub
 *   cmd_bench_req.c      req, reply
 *   cmd_bench_stream.c   stream, consume
 *   cmd_bench_push.c     push, wait, idle (push and waiting consumers)
 *   cmd_bench_report.c   percentiles, per-client figures, CPU, the report
 *   cmd_bench_csv.c      the CSV row
 *   cmd_bench_progress.c the progress bar
 *
 * Every publisher, subscriber, requester and responder is its own client
 * connection driven by its own thread, like nats bench.
 */
#ifndef RIFT_TOOLS_CMD_BENCH_H
#define RIFT_TOOLS_CMD_BENCH_H

#include "conn_options.h"

#include "rift/client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* One published message in this many carries its send time (payload
 * bytes 0..7, little-endian CLOCK_REALTIME ns; 0 = no stamp), as
 * nats-load does. */
#define BENCH_SAMPLE_EVERY 64
/* Hot loops add to the progress counter in steps of this many. */
#define BENCH_PROGRESS_STEP 256
/* Most records one consumer fetch may ask for (the protocol's limit). */
#define BENCH_FETCH_MAX 256
/* --server-pid takes at most this many processes. */
#define BENCH_MAX_SERVER_PIDS 8
/* Most stream publishes in flight (threads) over all publishers. */
#define BENCH_STREAM_WINDOW_MAX 4096

typedef enum bench_scenario {
    BENCH_PUB,
    BENCH_SUB,
    BENCH_PUBSUB,
    BENCH_REQ,
    BENCH_REPLY,
    BENCH_STREAM,
    BENCH_CONSUME,
    BENCH_PUSH,
    BENCH_WAIT,
    BENCH_IDLE,
} bench_scenario;

typedef enum bench_progress_mode {
    BENCH_PROGRESS_AUTO,
    BENCH_PROGRESS_ON,
    BENCH_PROGRESS_OFF,
} bench_progress_mode;

/* Everything the command line says, validated. */
typedef struct bench_cfg {
    bench_scenario scenario;
    const char *scenario_name;
    uint64_t msgs;
    size_t size;
    unsigned pubs;
    unsigned subs;
    unsigned batch;
    unsigned responders;
    const char *subject;
    size_t subject_len;
    const char *stream;
    size_t stream_len;
    const char *consumer; /* NULL: a fresh name per run */
    uint32_t max_ack_pending;
    unsigned ack_threads;
    bool ack_blocking; /* stream --batch 1: --ack-wait blocking */
    const char *csv;
    const char *label;
    /* --server-pid PID[,PID...]: their CPU is summed (a cluster's
     * servers are several); none when n_server_pids is 0. */
    int server_pids[BENCH_MAX_SERVER_PIDS];
    size_t n_server_pids;
    uint64_t timeout_ns;
    bench_progress_mode progress;
    /* Connection flags, and the settings resolved from them that every
     * client of the run shares (they point into |cc|). */
    rift_cli_conn cc;
    rift_client_settings conn;
    char subject_buf[64];
} bench_cfg;

/* CPU seconds of this process and of the server (< 0 when unknown). */
typedef struct bench_cpu {
    double self;
    double server;
} bench_cpu;

/* One measurement (what the report and the CSV row are made of). */
typedef struct bench_result {
    uint64_t msgs;        /* counted in msgs_per_s */
    uint64_t errors;      /* lost, dropped or failed */
    double seconds;       /* measured window */
    const char *lat_what; /* NULL: no latency samples */
    int64_t *lat;         /* samples in ns (sorted by bench_result_finish) */
    size_t nlat;
    double *rates; /* per-client msgs/s */
    size_t nrates;
    bench_cpu cpu0, cpu1;
} bench_result;

/* ---- cmd_bench_args.c ---- */

/* Parses argv (argv[0] = "bench") into |cfg|: returns 0, 1 when the
 * usage was printed on request (exit 0), or 2 after printing why. */
int bench_args_parse(bench_cfg *cfg, int argc, char **argv);

/* ---- cmd_bench.c: shared machinery ---- */

/* Monotonic and wall-clock time in ns. */
int64_t bench_now_ns(void);
int64_t bench_wall_ns(void);

/* Opens one client connection; on failure prints why and returns -1. */
int bench_connect(const bench_cfg *cfg, rift_client **pc);

/* A start gate: worker threads report ready and wait; the main thread
 * waits until all are ready, marks the start, then opens the gate. */
typedef struct bench_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned ready;
    bool open;
    bool cancelled;
    int64_t t0; /* monotonic ns when the gate opened */
} bench_gate;

void bench_gate_init(bench_gate *g);
void bench_gate_free(bench_gate *g);
/* Worker side: returns false when the run was cancelled instead. */
bool bench_gate_pass(bench_gate *g);
/* Main side: waits until |n| workers are ready. */
void bench_gate_wait_ready(bench_gate *g, unsigned n);
/* Main side: marks the start (t0) and releases every worker. */
void bench_gate_open(bench_gate *g);
void bench_gate_cancel(bench_gate *g);

/* A condition variable timed on CLOCK_MONOTONIC, and the absolute
 * deadline |ns| from now on that clock. */
void bench_cond_init(pthread_cond_t *cv);
struct timespec bench_deadline(int64_t ns);

/* Starts a thread (a small stack: workers hold little). */
int bench_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* The payload of every scenario: |size| bytes of 0x2A with bytes 0..7
 * zero when size >= 8. malloc'ed; NULL when out of memory. */
uint8_t *bench_payload_new(size_t size);
/* Writes |v| little-endian into p[0..7]. */
void bench_put_le64(uint8_t *p, uint64_t v);
uint64_t bench_get_le64(const uint8_t *p);

/* The share of |total| that client |i| of |n| takes (the first ones take
 * the remainder). */
uint64_t bench_share(uint64_t total, unsigned n, unsigned i);

/* Reports the first of possibly many errors of a run once. */
void bench_note_error(const char *what, const rift_error *err);

/* True once SIGINT or SIGTERM arrived (sub and reply catch them; other
 * scenarios end on them). */
bool bench_interrupted(void);

/* ---- Scenarios (return 0 with |res| filled, or 1 after printing why) ---- */

int bench_run_pub(const bench_cfg *cfg, bench_result *res);
int bench_run_sub(const bench_cfg *cfg, bench_result *res);
int bench_run_pubsub(const bench_cfg *cfg, bench_result *res);
int bench_run_req(const bench_cfg *cfg, bench_result *res);
int bench_run_reply(const bench_cfg *cfg, bench_result *res);
int bench_run_stream(const bench_cfg *cfg, bench_result *res);
int bench_run_consume(const bench_cfg *cfg, bench_result *res);

/* ---- cmd_bench_report.c ---- */

/* Marks CPU use now (getrusage, and /proc/<pid>/stat when pid > 0). */
bench_cpu bench_cpu_mark(const bench_cfg *cfg);
/* Adds |n| latency samples to |res| (copied). Returns -1 on no memory. */
int bench_result_add_lat(bench_result *res, const int64_t *lat, size_t n);
/* Adds one per-client rate. Returns -1 on no memory. */
int bench_result_add_rate(bench_result *res, double rate);
/* Sorts the samples; call once before reading percentiles. */
void bench_result_finish(bench_result *res);
void bench_result_free(bench_result *res);
/* The sorted sample at index floor((n-1)*p/100), in µs; < 0 when none. */
double bench_result_pct_us(const bench_result *res, unsigned p);
double bench_result_max_us(const bench_result *res);
double bench_result_rate(const bench_result *res);
void bench_result_clients(const bench_result *res, double *min, double *avg,
                          double *max);
/* The subscriber count that took part (CSV column 8). */
unsigned bench_subs_column(const bench_cfg *cfg);
/* Prints the human report. */
void bench_report_print(FILE *out, const bench_cfg *cfg,
                        const bench_result *res);

/* ---- cmd_bench_stream.c, for cmd_bench_push.c ---- */

/* Prefills |cfg->msgs| records; *first is the lowest sequence stored.
 * 0 or -1 after printing why. */
int bench_stream_prefill(const bench_cfg *cfg, uint64_t *first);
/* Opens the run's consumer from sequence |first| (cfg->consumer or a
 * fresh name, into name[len]). 0 or -1 after printing why. */
int bench_consumer_open(const bench_cfg *cfg, rift_client *c, uint64_t first,
                        char *name, size_t len);

/* ---- cmd_bench_push.c ---- */

int bench_run_push(const bench_cfg *cfg, bench_result *res);
int bench_run_wait(const bench_cfg *cfg, bench_result *res);
int bench_run_idle(const bench_cfg *cfg, bench_result *res);

/* ---- cmd_bench_csv.c ---- */

/* Appends the row to cfg->csv (header first when the file is new or
 * empty). Returns 0, or -1 after printing why. */
int bench_csv_write(const bench_cfg *cfg, const bench_result *res);

/* ---- cmd_bench_progress.c ---- */

/* The counters the bar shows; hot loops add in BENCH_PROGRESS_STEP. */
void bench_progress_add(uint64_t n);
void bench_progress_reset(uint64_t total);
/* Starts the bar on stderr when the mode (and for auto, a terminal)
 * says so; bench_progress_stop erases it. */
void bench_progress_start(const bench_cfg *cfg);
void bench_progress_stop(void);

#endif /* RIFT_TOOLS_CMD_BENCH_H */
