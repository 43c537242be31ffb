/*
 * load.c — many connections, every stream held open, traffic on all of
 * them (bench). Against a running riftd (scripts/load.sh starts one):
 *
 *   1. opens --connections holder connections (default 1,024) and on each
 *      --streams subscriptions (default 128, the per-connection stream
 *      limit: a subscription holds its stream open), subject
 *      load.<conn>.<stream>, so every stream of every connection is open;
 *   2. opens --publishers extra connections (default 4), each with one
 *      dedicated publisher;
 *   3. for --rounds rounds publishes one message to every subject (the
 *      publishers split the subjects) and reads every message back on its
 *      subscription, checking round and subject. A round starts when the
 *      previous one was read completely, so the queues stay small;
 *   4. closes everything, prints connections, streams, messages delivered,
 *      errors, server RSS (before, held open, peak, after), client and
 *      server CPU and times, and exits 0 only when every subscription got
 *      every message in order and nothing failed.
 *
 * One client is one connection with its own thread (src/client), so the
 * process runs --connections + --publishers client threads plus a few of
 * its own; the descriptor limit is raised to the hard limit. Bounded in
 * count (rounds) and time (--timeout, default 900 s: then it stops and
 * fails). Loopback only in practice: it connects where --server says.
 *
 *   load --server ADDR --ca FILE --token-env VAR [--server-name NAME]
 *        [--server-pid PID] [--connections N] [--streams M]
 *        [--publishers P] [--rounds R] [--size BYTES] [--threads T]
 *        [--timeout SECONDS]
 */
#include "bench_proc.h"

#include "rift/client.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECOND 1000000000ll
#define PROG   "load"

typedef struct holder {
    rift_client *client;
    rift_client_sub **subs;
    uint32_t *next_round; /* per subscription: the round expected next */
} holder;

typedef struct load {
    bench_conn conn;
    unsigned conns, streams, pubs, rounds, threads;
    size_t size;
    int64_t deadline; /* monotonic ns */
    holder *holders;
    rift_client **pub_clients;
    rift_publisher **publishers;
    _Atomic uint64_t delivered;
    _Atomic uint64_t errors;
    _Atomic unsigned connected;
    _Atomic bool stop;
    _Atomic bool traffic_done;
} load;

typedef struct worker {
    load *ld;
    unsigned index;
    pthread_t thread;
} worker;

static void fail(load *ld, const char *what, unsigned conn, unsigned stream,
                 const char *text) {
    /* The first few failures are worth reading; the rest are counted. */
    if (atomic_fetch_add(&ld->errors, 1) < 20) {
        fprintf(stderr, PROG ": %s (connection %u, stream %u): %s\n", what,
                conn, stream, text);
    }
}

static bool past_deadline(load *ld) {
    if (bench_mono_ns() > ld->deadline) {
        atomic_store(&ld->stop, true);
    }
    return atomic_load(&ld->stop);
}

static int subject_of(char *buf, size_t cap, unsigned conn, unsigned stream) {
    return snprintf(buf, cap, "load.%u.%u", conn, stream);
}

/* ---- Set-up: worker t connects holders t, t + T, ... ---- */

static void *setup_main(void *arg) {
    worker *w = arg;
    load *ld = w->ld;
    for (unsigned i = w->index; i < ld->conns && !past_deadline(ld);
         i += ld->threads) {
        holder *h = &ld->holders[i];
        if (bench_conn_connect(&ld->conn, PROG, &h->client) != 0) {
            atomic_fetch_add(&ld->errors, 1);
            continue;
        }
        for (unsigned j = 0; j < ld->streams; j++) {
            char subject[64];
            int n = subject_of(subject, sizeof(subject), i, j);
            rift_error err = {0};
            if (rift_client_subscribe(h->client, subject, (size_t)n, NULL, 0,
                                      &h->subs[j], &err) != 0) {
                h->subs[j] = NULL;
                fail(ld, "subscribe", i, j, err.text);
            }
        }
        unsigned c = atomic_fetch_add(&ld->connected, 1) + 1;
        if (c % 128 == 0 || c == ld->conns) {
            fprintf(stderr, PROG ": %u connections with %u streams each\n", c,
                    ld->streams);
        }
    }
    return NULL;
}

static void *teardown_main(void *arg) {
    worker *w = arg;
    load *ld = w->ld;
    for (unsigned i = w->index; i < ld->conns; i += ld->threads) {
        holder *h = &ld->holders[i];
        for (unsigned j = 0; j < ld->streams; j++) {
            rift_client_sub_close(h->subs[j]);
        }
        rift_client_del(h->client);
    }
    return NULL;
}

/* ---- Traffic ---- */

/* Publisher k sends round r to the subjects of holders k, k + P, ...;
 * round r starts once every message of round r - 1 was read, so at most
 * one message per subscription is queued anywhere. */
static void *publisher_main(void *arg) {
    worker *w = arg;
    load *ld = w->ld;
    rift_publisher *p = ld->publishers[w->index];
    uint8_t *payload = calloc(1, ld->size);
    uint64_t per_round = (uint64_t)ld->conns * ld->streams;
    for (unsigned r = 0; r < ld->rounds && !past_deadline(ld); r++) {
        while (r >= 1 && atomic_load(&ld->delivered) < r * per_round) {
            if (past_deadline(ld)) {
                goto out;
            }
            /* The readers take a round in tens of milliseconds or more;
             * checking every millisecond costs nothing measurable. */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        for (unsigned i = w->index; i < ld->conns; i += ld->pubs) {
            for (unsigned j = 0; j < ld->streams; j++) {
                char subject[64];
                int n = subject_of(subject, sizeof(subject), i, j);
                uint32_t tag[3] = {r, i, j};
                memcpy(payload, tag, ld->size < 12 ? ld->size : 12);
                rift_error err = {0};
                if (rift_publisher_publish(p, subject, (size_t)n, NULL, 0,
                                           payload, ld->size, &err) != 0) {
                    fail(ld, "publish", i, j, err.text);
                    goto out;
                }
            }
            /* A flush per holder: one flush behind a whole round (tens of
             * thousands of fan-outs) can outlast the 30 s operation
             * deadline on a loaded machine. */
            rift_error err = {0};
            if (rift_publisher_flush(p, &err) != 0) {
                fail(ld, "flush", i, 0, err.text);
                goto out;
            }
        }
    }
out:
    free(payload);
    return NULL;
}

/* Reader t takes, round after round, the next message of every
 * subscription of holders t, t + T, ... (each gets one per round). */
static void *reader_main(void *arg) {
    worker *w = arg;
    load *ld = w->ld;
    for (unsigned r = 0; r < ld->rounds; r++) {
        for (unsigned i = w->index; i < ld->conns; i += ld->threads) {
            holder *h = &ld->holders[i];
            for (unsigned j = 0; j < ld->streams; j++) {
                if (h->subs[j] == NULL || h->next_round[j] == UINT32_MAX) {
                    continue;
                }
                rift_msg *m = NULL;
                rift_error err = {0};
                int rc = -1;
                while (!past_deadline(ld)) {
                    rc = rift_client_sub_recv(h->subs[j], SECOND, &m, &err);
                    if (rc != RIFT_ERR_AGAIN) {
                        break;
                    }
                }
                if (rc != 0) {
                    fail(ld, "receive", i, j,
                         rc == RIFT_ERR_AGAIN ? "deadline" : err.text);
                    h->next_round[j] = UINT32_MAX; /* give up on it */
                    if (atomic_load(&ld->stop)) {
                        return NULL;
                    }
                    continue;
                }
                size_t len;
                const uint8_t *p = rift_msg_payload(m, &len);
                uint32_t tag[3] = {0};
                memcpy(tag, p, len < 12 ? len : 12);
                if (len != ld->size || tag[0] != h->next_round[j] ||
                    (ld->size >= 12 && (tag[1] != i || tag[2] != j))) {
                    char text[96];
                    snprintf(text, sizeof(text),
                             "got round %u of %u.%u (%zu bytes), expected "
                             "round %u",
                             tag[0], tag[1], tag[2], len, h->next_round[j]);
                    fail(ld, "wrong message", i, j, text);
                }
                h->next_round[j]++;
                rift_msg_unref(m);
                atomic_fetch_add(&ld->delivered, 1);
            }
        }
    }
    return NULL;
}

/* Runs |fn| on |n| workers and joins them. */
static void run_workers(load *ld, unsigned n, void *(*fn)(void *)) {
    worker *ws = calloc(n, sizeof(*ws));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (unsigned k = 0; k < n; k++) {
        ws[k].ld = ld;
        ws[k].index = k;
        if (pthread_create(&ws[k].thread, &attr, fn, &ws[k]) != 0) {
            fprintf(stderr, PROG ": cannot start a thread\n");
            exit(2);
        }
    }
    pthread_attr_destroy(&attr);
    for (unsigned k = 0; k < n; k++) {
        pthread_join(ws[k].thread, NULL);
    }
    free(ws);
}

/* Every 5 s while the traffic runs: how far it got (a stall shows as a
 * count that stops moving). */
static void *progress_main(void *arg) {
    load *ld = arg;
    int64_t t0 = bench_mono_ns();
    while (!atomic_load(&ld->traffic_done)) {
        for (int k = 0; k < 50 && !atomic_load(&ld->traffic_done); k++) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        if (!atomic_load(&ld->traffic_done)) {
            pid_t spid = ld->conn.server_pid;
            printf(PROG ": %5.0f s: %" PRIu64 " delivered, %" PRIu64
                        " errors, server RSS %ld KiB\n",
                   (double)(bench_mono_ns() - t0) / 1e9,
                   atomic_load(&ld->delivered), atomic_load(&ld->errors),
                   spid ? bench_proc_status_kb(spid, "VmRSS") : -1L);
            fflush(stdout);
        }
    }
    return NULL;
}

/* The publishers run beside the readers. */
static void *publishers_main(void *arg) {
    load *ld = arg;
    run_workers(ld, ld->pubs, publisher_main);
    return NULL;
}

static void usage(void) {
    fprintf(stderr,
            "usage: " PROG " --server ADDR --ca FILE --token-env VAR "
            "[--server-name NAME]\n"
            "       [--server-pid PID] [--connections N (1024)] [--streams M "
            "(128)]\n"
            "       [--publishers P (4)] [--rounds R (10)] [--size BYTES "
            "(64)]\n"
            "       [--threads T (16)] [--timeout SECONDS (900)]\n");
}

static bool parse_num(const char *s, unsigned long max, unsigned long *out) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v == 0 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    load *ld = calloc(1, sizeof(*ld));
    ld->conns = 1024;
    ld->streams = 128;
    ld->pubs = 4;
    ld->rounds = 10;
    ld->threads = 16;
    ld->size = 64;
    unsigned long timeout_s = 900;
    for (int i = 1; i < argc; i++) {
        int r = bench_conn_opt(&ld->conn, argc, argv, &i);
        if (r == 1) {
            continue;
        }
        static const char *const names[] = {
            "--connections", "--streams", "--publishers", "--rounds",
            "--size",        "--threads", "--timeout"};
        static const unsigned long max[] = {100000,  65535, 1024, 1000000,
                                            1 << 20, 1024,  86400};
        size_t k = 0;
        while (r == 0 && k < sizeof(names) / sizeof(names[0]) &&
               strcmp(argv[i], names[k]) != 0) {
            k++;
        }
        unsigned long v = 0;
        if (r != 0 || k == sizeof(names) / sizeof(names[0]) || i + 1 >= argc ||
            !parse_num(argv[i + 1], max[k], &v)) {
            usage();
            return 2;
        }
        i++;
        switch (k) {
        case 0:
            ld->conns = (unsigned)v;
            break;
        case 1:
            ld->streams = (unsigned)v;
            break;
        case 2:
            ld->pubs = (unsigned)v;
            break;
        case 3:
            ld->rounds = (unsigned)v;
            break;
        case 4:
            ld->size = v;
            break;
        case 5:
            ld->threads = (unsigned)v;
            break;
        default:
            timeout_s = v;
            break;
        }
    }
    if (ld->conn.address == NULL) {
        usage();
        return 2;
    }
    if (ld->threads > ld->conns) {
        ld->threads = ld->conns;
    }
    if (ld->pubs > ld->conns) {
        ld->pubs = ld->conns;
    }
    long nofile = bench_raise_nofile();
    int64_t t0 = bench_mono_ns();
    ld->deadline = t0 + (int64_t)timeout_s * SECOND;
    pid_t spid = ld->conn.server_pid;
    long rss_before = spid ? bench_proc_status_kb(spid, "VmRSS") : -1;
    double scpu0 = spid ? bench_proc_cpu_s(spid) : -1.0;
    printf("load: %u connections x %u streams (+%u publisher connections), "
           "%u rounds of %zu-byte messages, descriptor limit %ld\n",
           ld->conns, ld->streams, ld->pubs, ld->rounds, ld->size, nofile);
    fflush(stdout);

    ld->holders = calloc(ld->conns, sizeof(holder));
    for (unsigned i = 0; i < ld->conns; i++) {
        ld->holders[i].subs = calloc(ld->streams, sizeof(rift_client_sub *));
        ld->holders[i].next_round = calloc(ld->streams, sizeof(uint32_t));
    }
    run_workers(ld, ld->threads, setup_main);
    ld->pub_clients = calloc(ld->pubs, sizeof(rift_client *));
    ld->publishers = calloc(ld->pubs, sizeof(rift_publisher *));
    for (unsigned k = 0; k < ld->pubs; k++) {
        rift_error err = {0};
        if (bench_conn_connect(&ld->conn, PROG, &ld->pub_clients[k]) != 0 ||
            rift_client_publisher_open(ld->pub_clients[k], &ld->publishers[k],
                                       &err) != 0) {
            fprintf(stderr, PROG ": publisher %u: %s\n", k, err.text);
            atomic_store(&ld->stop, true);
            atomic_fetch_add(&ld->errors, 1);
        }
    }
    int64_t t_setup = bench_mono_ns();
    unsigned open_streams = 0;
    for (unsigned i = 0; i < ld->conns; i++) {
        for (unsigned j = 0; j < ld->streams; j++) {
            open_streams += ld->holders[i].subs[j] != NULL;
        }
    }
    long rss_held = spid ? bench_proc_status_kb(spid, "VmRSS") : -1;
    printf("load: set-up %.1f s: %u connections, %u subscription streams "
           "open; server RSS %ld KiB (%ld before)\n",
           (double)(t_setup - t0) / 1e9, atomic_load(&ld->connected),
           open_streams, rss_held, rss_before);
    fflush(stdout);

    pthread_t pubs_thread, progress_thread;
    bool pubs_started = false;
    if (!atomic_load(&ld->stop)) {
        pubs_started =
            pthread_create(&pubs_thread, NULL, publishers_main, ld) == 0;
        bool progress =
            pthread_create(&progress_thread, NULL, progress_main, ld) == 0;
        run_workers(ld, ld->threads, reader_main);
        atomic_store(&ld->traffic_done, true);
        if (progress) {
            pthread_join(progress_thread, NULL);
        }
    }
    if (pubs_started) {
        pthread_join(pubs_thread, NULL);
    }
    int64_t t_traffic = bench_mono_ns();
    long rss_traffic = spid ? bench_proc_status_kb(spid, "VmRSS") : -1;
    long hwm = spid ? bench_proc_status_kb(spid, "VmHWM") : -1;
    double scpu1 = spid ? bench_proc_cpu_s(spid) : -1.0;
    double ccpu = bench_self_cpu_s();

    for (unsigned k = 0; k < ld->pubs; k++) {
        rift_publisher_close(ld->publishers[k]);
        rift_client_del(ld->pub_clients[k]);
    }
    run_workers(ld, ld->threads, teardown_main);
    int64_t t_end = bench_mono_ns();
    long rss_after = spid ? bench_proc_status_kb(spid, "VmRSS") : -1;

    uint64_t expected = (uint64_t)ld->conns * ld->streams * ld->rounds;
    uint64_t delivered = atomic_load(&ld->delivered);
    uint64_t errors = atomic_load(&ld->errors);
    double traffic_s = (double)(t_traffic - t_setup) / 1e9;
    printf("load: traffic %.1f s: %" PRIu64 " of %" PRIu64
           " messages delivered (%.0f msg/s), %" PRIu64 " errors\n",
           traffic_s, delivered, expected,
           traffic_s > 0 ? (double)delivered / traffic_s : 0.0, errors);
    printf("load: server RSS KiB: before %ld, held open %ld, after traffic "
           "%ld, peak %ld, after close %ld\n",
           rss_before, rss_held, rss_traffic, hwm, rss_after);
    printf("load: CPU s: client %.1f (peak RSS %ld KiB), server %.1f; "
           "total time %.1f s\n",
           ccpu, bench_self_maxrss_kb(),
           scpu0 >= 0 && scpu1 >= 0 ? scpu1 - scpu0 : -1.0,
           (double)(t_end - t0) / 1e9);
    bool ok = errors == 0 && delivered == expected &&
              open_streams == ld->conns * ld->streams;
    printf("load: %s\n", ok ? "PASS" : "FAIL");
    for (unsigned i = 0; i < ld->conns; i++) {
        free(ld->holders[i].subs);
        free(ld->holders[i].next_round);
    }
    free(ld->holders);
    free(ld->pub_clients);
    free(ld->publishers);
    free(ld);
    return ok ? 0 : 1;
}
