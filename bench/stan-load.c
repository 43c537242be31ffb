/*
 * stan-load.c — NATS Streaming load client on nats.c's STAN API (Debian's
 * libnats, NATS_HAS_STREAMING) for bench/compare.sh's STAN rows (bench
 * layer). It drives any STAN server (riftd's service, nats-streaming-server)
 * and writes one CSV row in the contract of bench_csv.h.
 *
 *   stan-load pub [--pubs P] [--window W] ...   P publishers, one connection
 *       each, W PubAcks outstanding per publisher (1 = synced publish: the
 *       next message waits for the previous PubAck; latency is publish→ack).
 *       A message counts when its PubAck arrives without an error.
 *   stan-load sub [--max-inflight M] ...   pre-publishes --msgs (not
 *       measured), then one subscription, deliver all, manual acks, at most
 *       M unacknowledged: measured from the subscribe request until every
 *       message was delivered once.
 *
 * Each run uses a channel of its own (bench.stan.<label>.<pid> unless
 * --channel), so runs do not read each other's messages.
 */
#define NATS_HAS_STREAMING 1
#include <nats/nats.h>

#include "bench_csv.h"
#include "bench_proc.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PUBS       1024
#define PREFILL_WINDOW 256

typedef struct config {
    const char *mode;
    const char *url;
    const char *cluster;
    const char *channel;
    const char *csv;
    const char *label;
    long msgs;
    long size;
    long pubs;
    long window;
    long inflight;
    long timeout_s;
    long server_pid;
} config;

static void usage(void) {
    fprintf(stderr,
            "usage: stan-load pub|sub [--url URL] [--cluster ID] [--msgs N]\n"
            "         [--size B] [--pubs P] [--window W] [--max-inflight M]\n"
            "         [--channel NAME] [--csv FILE] [--label TEXT]\n"
            "         [--server-pid PID] [--timeout S]\n");
}

static bool parse_long(const char *flag, const char *v, long lo, long hi,
                       long *out) {
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (v == NULL || *v == '\0' || *end != '\0' || errno != 0 || x < lo ||
        x > hi) {
        fprintf(stderr, "stan-load: %s wants an integer in %ld..%ld, not %s\n",
                flag, lo, hi, v ? v : "nothing");
        return false;
    }
    *out = x;
    return true;
}

static bool parse_args(int argc, char **argv, config *c) {
    *c = (config){.url = "nats://127.0.0.1:4222",
                  .cluster = "test-cluster",
                  .label = "",
                  .msgs = 10000,
                  .size = 64,
                  .pubs = 1,
                  .window = 1,
                  .inflight = 1024,
                  .timeout_s = 60};
    if (argc < 2 ||
        (strcmp(argv[1], "pub") != 0 && strcmp(argv[1], "sub") != 0)) {
        usage();
        return false;
    }
    c->mode = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        if (!ok) {
            fprintf(stderr, "stan-load: %s wants a value\n", f);
        } else if (strcmp(f, "--url") == 0) {
            c->url = v;
        } else if (strcmp(f, "--cluster") == 0) {
            c->cluster = v;
        } else if (strcmp(f, "--channel") == 0) {
            c->channel = v;
        } else if (strcmp(f, "--csv") == 0) {
            c->csv = v;
        } else if (strcmp(f, "--label") == 0) {
            c->label = v;
            ok = bench_label_ok(v);
            if (!ok) {
                fprintf(stderr, "stan-load: --label must not hold , \" or "
                                "a newline\n");
            }
        } else if (strcmp(f, "--msgs") == 0) {
            ok = parse_long(f, v, 1, 100000000, &c->msgs);
        } else if (strcmp(f, "--size") == 0) {
            ok = parse_long(f, v, 0, 1 << 20, &c->size);
        } else if (strcmp(f, "--pubs") == 0) {
            ok = parse_long(f, v, 1, MAX_PUBS, &c->pubs);
        } else if (strcmp(f, "--window") == 0) {
            ok = parse_long(f, v, 1, 1 << 20, &c->window);
        } else if (strcmp(f, "--max-inflight") == 0) {
            ok = parse_long(f, v, 1, 1 << 20, &c->inflight);
        } else if (strcmp(f, "--timeout") == 0) {
            ok = parse_long(f, v, 1, 3600, &c->timeout_s);
        } else if (strcmp(f, "--server-pid") == 0) {
            ok = parse_long(f, v, 1, 1L << 30, &c->server_pid);
        } else {
            fprintf(stderr, "stan-load: unknown option %s\n", f);
            ok = false;
        }
        if (!ok) {
            usage();
            return false;
        }
    }
    return true;
}

static stanConnection *stan_connect(const config *c, const char *id,
                                    int window) {
    stanConnOptions *o = NULL;
    stanConnection *sc = NULL;
    natsStatus s = stanConnOptions_Create(&o);
    if (s == NATS_OK) {
        s = stanConnOptions_SetURL(o, c->url);
    }
    if (s == NATS_OK) {
        s = stanConnOptions_SetPubAckWait(o, c->timeout_s * 1000);
    }
    if (s == NATS_OK) {
        /* Publish blocks at |window| outstanding and resumes below it. */
        s = stanConnOptions_SetMaxPubAcksInflight(o, window, 1.0f);
    }
    if (s == NATS_OK) {
        s = stanConnection_Connect(&sc, c->cluster, id, o);
    }
    stanConnOptions_Destroy(o);
    if (s != NATS_OK) {
        fprintf(stderr, "stan-load: connect %s to %s: %s (%s)\n", id, c->url,
                natsStatus_GetText(s), nats_GetLastError(NULL));
        return NULL;
    }
    return sc;
}

/* ---- Completion counting, shared by the PubAck and message callbacks. */

typedef struct counter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long done;   /* acknowledged (pub) or delivered once (sub) */
    long failed; /* PubAcks with an error, or redeliveries */
    long want;
} counter;

static void counter_init(counter *k, long want) {
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->done = k->failed = 0;
    k->want = want;
}

static void counter_add(counter *k, long done, long failed) {
    pthread_mutex_lock(&k->mu);
    k->done += done;
    k->failed += failed;
    if (k->done + k->failed >= k->want) {
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
}

/* Waits until done + failed reaches want, giving up after |timeout_s| of
 * no progress; returns done. */
static long counter_wait(counter *k, long timeout_s) {
    pthread_mutex_lock(&k->mu);
    long last = -1;
    while (k->done + k->failed < k->want) {
        if (k->done + k->failed == last) {
            break; /* a whole timeout without progress */
        }
        last = k->done + k->failed;
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += timeout_s;
        while (k->done + k->failed < k->want &&
               pthread_cond_timedwait(&k->cv, &k->mu, &dl) == 0) {
        }
    }
    long done = k->done;
    pthread_mutex_unlock(&k->mu);
    return done;
}

static void on_pub_ack(const char *guid, const char *error, void *closure) {
    (void)guid;
    counter *k = closure;
    if (error != NULL) {
        static bool told;
        if (!told) {
            told = true;
            fprintf(stderr, "stan-load: PubAck error: %s\n", error);
        }
    }
    counter_add(k, error == NULL, error != NULL);
}

/* ---- pub ---------------------------------------------------------------- */

typedef struct publisher {
    const config *c;
    stanConnection *sc;
    pthread_barrier_t *start;
    long n;
    int64_t *lat; /* synced: one publish→ack latency per message, ns */
    long lat_n;
    counter acks;
    long failed_calls;
} publisher;

static void *publish_loop(void *arg) {
    publisher *p = arg;
    char *payload = calloc(1, (size_t)p->c->size + 1);
    pthread_barrier_wait(p->start);
    for (long i = 0; payload != NULL && i < p->n; i++) {
        natsStatus s;
        if (p->c->window == 1) {
            int64_t t = bench_mono_ns();
            s = stanConnection_Publish(p->sc, p->c->channel, payload,
                                       (int)p->c->size);
            if (s == NATS_OK) {
                p->lat[p->lat_n++] = bench_mono_ns() - t;
                counter_add(&p->acks, 1, 0);
            }
        } else {
            s = stanConnection_PublishAsync(p->sc, p->c->channel, payload,
                                            (int)p->c->size, on_pub_ack,
                                            &p->acks);
        }
        if (s != NATS_OK) {
            if (p->failed_calls++ == 0) {
                fprintf(stderr, "stan-load: publish: %s (%s)\n",
                        natsStatus_GetText(s), nats_GetLastError(NULL));
            }
            counter_add(&p->acks, 0, 1);
        }
    }
    if (payload == NULL) {
        counter_add(&p->acks, 0, p->n);
    }
    /* The run ends for this publisher when its last PubAck arrived. */
    counter_wait(&p->acks, p->c->timeout_s);
    free(payload);
    return NULL;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(const int64_t *v, long n, double q) {
    if (n == 0) {
        return -1;
    }
    long i = (long)(q * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e3;
}

typedef struct outcome {
    double seconds;
    long msgs, errors;
    double client_cpu, server_cpu;
    int64_t *lat;
    long lat_n;
} outcome;

static int run_pub(const config *c, outcome *o) {
    publisher *ps = calloc((size_t)c->pubs, sizeof *ps);
    pthread_t *th = calloc((size_t)c->pubs, sizeof *th);
    pthread_barrier_t start;
    if (ps == NULL || th == NULL) {
        fprintf(stderr, "stan-load: out of memory\n");
        free(ps);
        free(th);
        return -1;
    }
    pthread_barrier_init(&start, NULL, (unsigned)c->pubs + 1);
    int rc = 0;
    long connected = 0;
    for (long i = 0; i < c->pubs && rc == 0; i++) {
        char id[64];
        snprintf(id, sizeof id, "stan-load-%ld-%ld", (long)getpid(), i);
        ps[i] = (publisher){.c = c, .start = &start};
        ps[i].n = c->msgs / c->pubs + (i < c->msgs % c->pubs ? 1 : 0);
        counter_init(&ps[i].acks, ps[i].n);
        ps[i].lat = c->window == 1 ? calloc((size_t)ps[i].n + 1, 8) : NULL;
        ps[i].sc = stan_connect(c, id, (int)c->window);
        if (ps[i].sc == NULL || (c->window == 1 && ps[i].lat == NULL)) {
            rc = -1;
            break;
        }
        connected++;
    }
    for (long i = 0; i < connected && rc == 0; i++) {
        pthread_create(&th[i], NULL, publish_loop, &ps[i]);
    }
    if (rc == 0) {
        double s0 = c->server_pid ? bench_proc_cpu_s((pid_t)c->server_pid) : -1;
        double c0 = bench_self_cpu_s();
        int64_t t0 = bench_mono_ns();
        pthread_barrier_wait(&start);
        for (long i = 0; i < c->pubs; i++) {
            pthread_join(th[i], NULL);
        }
        o->seconds = (double)(bench_mono_ns() - t0) / 1e9;
        o->client_cpu = bench_self_cpu_s() - c0;
        o->server_cpu =
            s0 >= 0 ? bench_proc_cpu_s((pid_t)c->server_pid) - s0 : -1;
        for (long i = 0; i < c->pubs; i++) {
            o->msgs += ps[i].acks.done;
            o->lat_n += ps[i].lat_n;
        }
        o->errors = c->msgs - o->msgs;
        if (c->window == 1) {
            o->lat = calloc((size_t)o->lat_n + 1, 8);
            long k = 0;
            for (long i = 0; o->lat != NULL && i < c->pubs; i++) {
                memcpy(o->lat + k, ps[i].lat, (size_t)ps[i].lat_n * 8);
                k += ps[i].lat_n;
            }
            o->lat_n = o->lat ? k : 0;
        }
    }
    for (long i = 0; i < connected; i++) {
        stanConnection_Close(ps[i].sc);
        stanConnection_Destroy(ps[i].sc);
    }
    for (long i = 0; i < c->pubs; i++) {
        free(ps[i].lat);
    }
    pthread_barrier_destroy(&start);
    free(ps);
    free(th);
    return rc;
}

/* ---- sub ---------------------------------------------------------------- */

typedef struct receiver {
    counter got;
    uint8_t *seen; /* one flag per sequence 1..msgs */
    long msgs;
    long dups; /* redeliveries, under got.mu */
} receiver;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    receiver *r = closure;
    uint64_t seq = stanMsg_GetSequence(msg);
    bool fresh = seq >= 1 && seq <= (uint64_t)r->msgs && !r->seen[seq];
    if (fresh) {
        r->seen[seq] = 1; /* only this callback thread writes it */
    }
    stanSubscription_AckMsg(sub, msg);
    stanMsg_Destroy(msg);
    /* A redelivery is an error but does not count towards the end. */
    if (fresh) {
        counter_add(&r->got, 1, 0);
    } else {
        pthread_mutex_lock(&r->got.mu);
        r->dups++;
        pthread_mutex_unlock(&r->got.mu);
    }
}

static int run_sub(const config *c, outcome *o) {
    char id[64];
    snprintf(id, sizeof id, "stan-load-%ld-fill", (long)getpid());
    stanConnection *fill = stan_connect(c, id, PREFILL_WINDOW);
    if (fill == NULL) {
        return -1;
    }
    counter acks;
    counter_init(&acks, c->msgs);
    char *payload = calloc(1, (size_t)c->size + 1);
    for (long i = 0; payload != NULL && i < c->msgs; i++) {
        if (stanConnection_PublishAsync(fill, c->channel, payload, (int)c->size,
                                        on_pub_ack, &acks) != NATS_OK) {
            counter_add(&acks, 0, 1);
        }
    }
    free(payload);
    long filled = counter_wait(&acks, c->timeout_s);
    stanConnection_Close(fill);
    stanConnection_Destroy(fill);
    if (filled != c->msgs) {
        fprintf(stderr, "stan-load: prefill: %ld of %ld PubAcks\n", filled,
                c->msgs);
        return -1;
    }
    snprintf(id, sizeof id, "stan-load-%ld-sub", (long)getpid());
    stanConnection *sc = stan_connect(c, id, PREFILL_WINDOW);
    receiver r = {.msgs = c->msgs};
    r.seen = calloc((size_t)c->msgs + 1, 1);
    stanSubOptions *so = NULL;
    if (sc == NULL || r.seen == NULL || stanSubOptions_Create(&so) != NATS_OK) {
        free(r.seen);
        if (sc) {
            stanConnection_Destroy(sc);
        }
        return -1;
    }
    counter_init(&r.got, c->msgs);
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetMaxInflight(so, (int)c->inflight);
    stanSubOptions_SetAckWait(so, 30000);
    stanSubscription *sub = NULL;
    double s0 = c->server_pid ? bench_proc_cpu_s((pid_t)c->server_pid) : -1;
    double c0 = bench_self_cpu_s();
    int64_t t0 = bench_mono_ns();
    natsStatus s =
        stanConnection_Subscribe(&sub, sc, c->channel, on_msg, &r, so);
    int rc = 0;
    if (s != NATS_OK) {
        fprintf(stderr, "stan-load: subscribe: %s (%s)\n",
                natsStatus_GetText(s), nats_GetLastError(NULL));
        rc = -1;
    } else {
        o->msgs = counter_wait(&r.got, c->timeout_s);
        o->seconds = (double)(bench_mono_ns() - t0) / 1e9;
        o->client_cpu = bench_self_cpu_s() - c0;
        o->server_cpu =
            s0 >= 0 ? bench_proc_cpu_s((pid_t)c->server_pid) - s0 : -1;
        pthread_mutex_lock(&r.got.mu);
        o->errors = (c->msgs - o->msgs) + r.dups;
        pthread_mutex_unlock(&r.got.mu);
        stanSubscription_Unsubscribe(sub);
        stanSubscription_Destroy(sub);
    }
    stanSubOptions_Destroy(so);
    stanConnection_Close(sc);
    stanConnection_Destroy(sc);
    free(r.seen);
    return rc;
}

int main(int argc, char **argv) {
    config c;
    if (!parse_args(argc, argv, &c)) {
        return 2;
    }
    char channel[160];
    if (c.channel == NULL) {
        snprintf(channel, sizeof channel, "bench.stan.%s%s%ld", c.label,
                 c.label[0] ? "." : "", (long)getpid());
        c.channel = channel;
    }
    bool pub = strcmp(c.mode, "pub") == 0;
    outcome o = {0};
    int rc = pub ? run_pub(&c, &o) : run_sub(&c, &o);
    nats_Close();
    if (rc != 0) {
        free(o.lat);
        return 1;
    }
    if (o.lat_n > 0) {
        qsort(o.lat, (size_t)o.lat_n, sizeof *o.lat, cmp_i64);
    }
    bench_row row = {
        .impl = "riftd-stan",
        .transport = "tcp",
        .label = c.label,
        .scenario = pub ? "stan-pub" : "stan-sub",
        .size = (uint64_t)c.size,
        .msgs = (uint64_t)o.msgs,
        .pubs = pub ? (unsigned)c.pubs : 0,
        .subs = pub ? 0 : 1,
        .batch = (unsigned)(pub ? c.window : c.inflight),
        .seconds = o.seconds,
        .lat_what = o.lat_n > 0 ? "ack" : "",
        .p50_us = pct_us(o.lat, o.lat_n, 0.50),
        .p95_us = pct_us(o.lat, o.lat_n, 0.95),
        .p99_us = pct_us(o.lat, o.lat_n, 0.99),
        .max_us = o.lat_n > 0 ? (double)o.lat[o.lat_n - 1] / 1e3 : -1,
        .errors = (uint64_t)o.errors,
        .client_cpu_s = o.client_cpu,
        .server_cpu_s = o.server_cpu,
    };
    free(o.lat);
    printf("stan-load %s: %ld msgs in %.3f s = %.0f msg/s, %ld errors\n",
           c.mode, o.msgs, o.seconds,
           o.seconds > 0 ? (double)o.msgs / o.seconds : 0.0, o.errors);
    if (c.csv != NULL && bench_csv_append(c.csv, &row) != 0) {
        fprintf(stderr, "stan-load: %s: %s\n", c.csv, strerror(errno));
        return 1;
    }
    return o.errors == 0 ? 0 : 1;
}
