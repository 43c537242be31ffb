/*
 * bench/broker.c — throughput and latency of the in-process broker
 * (benchmark program, public API only). 64-byte payloads throughout.
 *
 *   1. one publisher -> one exact subscriber: same thread, and across threads
 *   2. fan-out to 10 subscribers
 *   3. queue group of 4
 *   4. routing with 10,000 exact + 10,000 wildcard subscriptions installed:
 *      hit and miss subjects, hot (cached) and cold (rotating subjects)
 *   5. request/reply round trip with a responder thread, p50/p99
 *   6. peak RSS for 1,000,000 subscriptions
 *
 * Every figure is the median of several repetitions (the machine is shared
 * and noisy), printed next to its target where there is one. Throughput is
 * given twice: wall-clock, and per CPU-second of the whole process (CPU
 * time is what a loaded shared machine inflates least; for the threaded
 * scenarios it includes every thread, spinning receivers too).
 *
 * Usage: broker [repetitions (default 5)] [scale percent (default 100)]
 *        [scenarios, e.g. "15" (default: all of 1-6)]
 */
#include "rift/broker.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int reps = 5;
static double scale = 1.0;
static uint8_t payload[64];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A measurement window: wall and process CPU nanoseconds per message. */
typedef struct window {
    uint64_t wall0, cpu0;
} window;

static window window_start(void) {
    return (window){now_ns(), cpu_ns()};
}

static double cpu_per_msg[64];

static double window_end(window w, size_t msgs, int rep) {
    uint64_t wall = now_ns() - w.wall0;
    cpu_per_msg[rep] = (double)(cpu_ns() - w.cpu0) / (double)msgs;
    return (double)wall / (double)msgs;
}

static size_t scaled(size_t n) {
    size_t v = (size_t)((double)n * scale);
    return v ? v : 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int rc) {
    fprintf(stderr, "%s failed: %s\n", what, rift_strerror(rc));
    exit(1);
}

static rift_broker *new_broker(size_t cap, size_t max_subs) {
    rift_broker_settings s;
    rift_broker_settings_default(&s);
    s.subscription_capacity = cap;
    s.max_subscriptions = max_subs;
    rift_broker *b;
    int rc = rift_broker_new(&b, &s, NULL);
    if (rc != 0) {
        die("rift_broker_new", rc);
    }
    return b;
}

static rift_sub *subscribe(rift_broker *b, const char *pattern,
                           const char *queue) {
    rift_sub_options o = {0};
    o.queue = queue;
    o.queue_len = queue ? strlen(queue) : 0;
    rift_sub *s;
    int rc = rift_broker_subscribe(b, pattern, strlen(pattern), &o, &s, NULL);
    if (rc != 0) {
        die("rift_broker_subscribe", rc);
    }
    return s;
}

static inline void publish(rift_broker *b, const char *subject, size_t len) {
    int rc = rift_broker_publish(b, subject, len, NULL, 0, payload,
                                 sizeof(payload), NULL, NULL);
    if (rc != 0) {
        die("rift_broker_publish", rc);
    }
}

static inline void recv_one(rift_sub *s, int64_t timeout) {
    rift_msg *m;
    int rc = rift_sub_recv(s, timeout, &m, NULL);
    if (rc != 0) {
        die("rift_sub_recv", rc);
    }
    rift_msg_unref(m);
}

/* report prints wall and CPU figures (medians) for the last scenario. */
static void report(const char *name, double *ns_per_msg, const char *target) {
    double ns = median(ns_per_msg, reps);
    double cpu = median(cpu_per_msg, reps);
    printf("%-46s wall %6.2f M/s %7.1f ns | cpu %6.2f M/s %7.1f ns%s%s\n", name,
           1e3 / ns, ns, 1e3 / cpu, cpu, target ? "  " : "",
           target ? target : "");
}

/* verdict formats a throughput target check on wall and CPU figures. */
static void verdict(char *out, size_t len, double wall_ns, double cpu_ns_,
                    double limit_ns, const char *what) {
    snprintf(out, len, "%s: wall %s, cpu %s", what,
             wall_ns <= limit_ns ? "MET" : "NOT MET",
             cpu_ns_ <= limit_ns ? "MET" : "NOT MET");
}

/* ---- 1. one publisher, one exact subscriber ---- */

static double same_thread_ns, same_thread_cpu;

static void bench_same_thread(void) {
    double v[64];
    size_t n = scaled(2000000);
    rift_broker *b = new_broker(1024, 65536);
    rift_sub *s = subscribe(b, "bench.local", NULL);
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, "bench.local", 11);
            recv_one(s, 0);
        }
        v[r] = window_end(w, n, r);
    }
    char target[96];
    report("1a publish+recv, same thread", v, NULL);
    same_thread_ns = median(v, reps);
    same_thread_cpu = median(cpu_per_msg, reps);
    verdict(target, sizeof(target), same_thread_ns, same_thread_cpu, 100.0,
            "target >= 10 M msgs/s");
    printf("%-46s %s\n", "", target);
    rift_sub_close(s);
    rift_broker_del(b);
}

typedef struct xarg {
    rift_sub *s;
    size_t n;
    size_t batch;
} xarg;

static void *consumer(void *arg) {
    xarg *a = arg;
    rift_msg *m[256];
    for (size_t got = 0; got < a->n;) {
        rift_ssize k = rift_sub_recv_batch(a->s, -1, m, a->batch, NULL);
        if (k < 0) {
            die("rift_sub_recv_batch", (int)k);
        }
        for (rift_ssize i = 0; i < k; i++) {
            rift_msg_unref(m[i]);
        }
        got += (size_t)k;
    }
    return NULL;
}

static void bench_cross_thread(size_t batch) {
    double v[64];
    size_t n = scaled(2000000);
    const size_t cap = 65536;
    rift_broker *b = new_broker(cap, 65536);
    for (int r = 0; r < reps; r++) {
        rift_sub *s = subscribe(b, "bench.x", NULL);
        xarg a = {s, n, batch};
        pthread_t t;
        pthread_create(&t, NULL, consumer, &a);
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            /* Publishers never block, so the benchmark paces itself
             * instead of letting the queue overflow. */
            while (rift_sub_pending(s) > cap - 64) {
                sched_yield();
            }
            publish(b, "bench.x", 7);
        }
        pthread_join(t, NULL);
        v[r] = window_end(w, n, r);
        rift_sub_close(s);
    }
    report(batch == 1 ? "1b publish -> recv across threads"
                      : "1c same, receiver drains with recv_batch(64)",
           v, NULL);
    rift_broker_del(b);
}

/* ---- 2. fan-out ---- */

static void bench_fanout(void) {
    double v[64], per_pub[64];
    size_t n = scaled(400000);
    rift_broker *b = new_broker(1024, 65536);
    rift_sub *s[10];
    for (int i = 0; i < 10; i++) {
        s[i] = subscribe(b, "bench.fan", NULL);
    }
    double cpu_pub[64];
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, "bench.fan", 9);
            for (int k = 0; k < 10; k++) {
                recv_one(s[k], 0);
            }
        }
        per_pub[r] = window_end(w, n, r);
        cpu_pub[r] = cpu_per_msg[r];
        v[r] = per_pub[r] / 10;
        cpu_per_msg[r] /= 10;
    }
    report("2  fan-out to 10, per delivery", v, NULL);
    memcpy(cpu_per_msg, cpu_pub, sizeof(cpu_pub));
    report("   fan-out to 10, per publish (10 recvs)", per_pub, NULL);
    for (int i = 0; i < 10; i++) {
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

/* ---- 3. queue group ---- */

static void bench_queue_group(void) {
    double v[64];
    size_t n = scaled(2000000);
    rift_broker *b = new_broker(1024, 65536);
    rift_sub *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = subscribe(b, "bench.q", "workers");
    }
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, "bench.q", 7);
            /* Members are served round-robin in candidate order. */
            recv_one(s[i % 4], 0);
        }
        v[r] = window_end(w, n, r);
    }
    report("3  queue group of 4, publish+recv", v, NULL);
    for (int i = 0; i < 4; i++) {
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

/* ---- 4. routing with many subscriptions ---- */

static void routing_target(char *out, size_t len, double *v) {
    double wall = median(v, reps), cpu = median(cpu_per_msg, reps);
    snprintf(out, len, "target <= 2x of 1a: wall %.2fx, cpu %.2fx %s",
             wall / same_thread_ns, cpu / same_thread_cpu,
             cpu <= 2 * same_thread_cpu ? "MET" : "NOT MET");
}

static void bench_routing(void) {
    enum {
        NEXACT = 10000,
        NWILD = 10000
    };
    rift_broker *b = new_broker(1024, 65536);
    static rift_sub *ex[NEXACT], *wi[NWILD];
    char subj[64];
    for (int i = 0; i < NEXACT; i++) {
        snprintf(subj, sizeof(subj), "route.exact.%d.x", i);
        ex[i] = subscribe(b, subj, NULL);
    }
    for (int i = 0; i < NWILD; i++) {
        /* Alternate '*' and '>' at different depths. */
        snprintf(subj, sizeof(subj), i % 2 ? "route.wild.%d.*" : "route.*.%d.>",
                 i);
        wi[i] = subscribe(b, subj, NULL);
    }
    double v[64];
    size_t n = scaled(2000000);
    char target[96];

    /* Hot exact hit on an odd index: route.*.<even>.> would also match an
     * even one, so this subject reaches exactly one subscriber. */
    const char *hit = "route.exact.5001.x";
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, hit, strlen(hit));
            recv_one(ex[5001], 0);
        }
        v[r] = window_end(w, n, r);
    }
    routing_target(target, sizeof(target), v);
    report("4a 20k subs, exact hit, publish+recv", v, target);

    const char *whit = "route.wild.5001.y";
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, whit, strlen(whit));
            recv_one(wi[5001], 0);
        }
        v[r] = window_end(w, n, r);
    }
    routing_target(target, sizeof(target), v);
    report("4b 20k subs, wildcard hit, publish+recv", v, target);

    const char *miss = "route.exact.5001.nope";
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < n; i++) {
            publish(b, miss, strlen(miss));
        }
        v[r] = window_end(w, n, r);
    }
    report("4c 20k subs, miss (no receiver), publish only", v, NULL);

    /* Cold: rotate over all 10,000 exact subjects, more than the cache
     * holds, so every publish walks the trie and refills a slot. */
    static char names[NEXACT][32];
    static size_t lens[NEXACT];
    for (int i = 0; i < NEXACT; i++) {
        lens[i] =
            (size_t)snprintf(names[i], sizeof(names[i]), "route.exact.%d.x", i);
    }
    size_t cn = scaled(1000000);
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < cn; i++) {
            size_t k = (i * 7919) % NEXACT;
            publish(b, names[k], lens[k]);
            recv_one(ex[k], 0);
            if (k % 2 == 0) {
                recv_one(wi[k], 0); /* route.*.<even>.> matches too */
            }
        }
        v[r] = window_end(w, cn, r);
    }
    report("4d 20k subs, 10k rotating subjects (cache-cold)", v, NULL);
    for (int i = 0; i < NEXACT; i++) {
        lens[i] =
            (size_t)snprintf(names[i], sizeof(names[i]), "route.none.%d", i);
    }
    for (int r = 0; r < reps; r++) {
        window w = window_start();
        for (size_t i = 0; i < cn; i++) {
            size_t k = (i * 7919) % NEXACT;
            publish(b, names[k], lens[k]);
        }
        v[r] = window_end(w, cn, r);
    }
    report("4e 20k subs, 10k rotating miss subjects (cold)", v, NULL);

    for (int i = 0; i < NEXACT; i++) {
        rift_sub_close(ex[i]);
    }
    for (int i = 0; i < NWILD; i++) {
        rift_sub_close(wi[i]);
    }
    rift_broker_del(b);
}

/* ---- 5. request/reply ---- */

typedef struct responder {
    rift_broker *b;
    rift_sub *s;
} responder;

static void *respond(void *arg) {
    responder *r = arg;
    rift_msg *m;
    while (rift_sub_recv(r->s, -1, &m, NULL) == 0) {
        size_t rlen, plen;
        const char *reply = rift_msg_reply(m, &rlen);
        const uint8_t *p = rift_msg_payload(m, &plen);
        rift_broker_publish(r->b, reply, rlen, NULL, 0, p, plen, NULL, NULL);
        rift_msg_unref(m);
    }
    return NULL;
}

/* pin binds |t| to CPU |cpu|; false when the machine has no such CPU. */
static bool pin(pthread_t t, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(t, sizeof(set), &set) == 0;
}

static void unpin(pthread_t t) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < CPU_SETSIZE; i++) {
        CPU_SET(i, &set);
    }
    pthread_setaffinity_np(t, sizeof(set), &set);
}

/*
 * bench_request measures rift_broker_request against a responder thread.
 * With |pinned|, requester and responder are bound to different cores,
 * which is where the scheduler puts them on an idle machine; unpinned on a
 * loaded machine they often share one core and every hop costs a
 * context switch.
 */
static void bench_request(bool pinned) {
    size_t n = scaled(20000);
    double *lat = malloc(n * sizeof(*lat));
    double p50[64], p99[64];
    rift_broker *b = new_broker(1024, 65536);
    responder r = {b, subscribe(b, "bench.svc", NULL)};
    pthread_t t;
    pthread_create(&t, NULL, respond, &r);
    if (pinned && !(pin(pthread_self(), 0) && pin(t, 1))) {
        printf("5  (pinning unavailable)\n");
        pinned = false;
    }
    for (int k = 0; k < reps; k++) {
        for (size_t i = 0; i < n + 1000; i++) {
            uint64_t t0 = now_ns();
            rift_msg *m;
            int rc =
                rift_broker_request(b, "bench.svc", 9, payload, sizeof(payload),
                                    1000000000LL, &m, NULL);
            uint64_t t1 = now_ns();
            if (rc != 0) {
                die("rift_broker_request", rc);
            }
            rift_msg_unref(m);
            if (i >= 1000) { /* warm-up discarded */
                lat[i - 1000] = (double)(t1 - t0) / 1e3;
            }
        }
        qsort(lat, n, sizeof(*lat), cmp_double);
        p50[k] = lat[(n - 1) * 50 / 100];
        p99[k] = lat[(n - 1) * 99 / 100];
    }
    double m50 = median(p50, reps), m99 = median(p99, reps);
    printf("%-46s p50 %6.2f us  p99 %7.2f us  [p50 min %.2f max %.2f]  "
           "target p50 <= 5 us: %s\n",
           pinned ? "5b request/reply, threads on separate cores"
                  : "5a request/reply, responder thread",
           m50, m99, p50[0], p50[reps - 1], m50 <= 5.0 ? "MET" : "NOT MET");
    rift_broker_del(b); /* the responder's recv returns CLOSED */
    pthread_join(t, NULL);
    if (pinned) {
        unpin(pthread_self());
    }
    rift_sub_close(r.s);
    free(lat);
}

/* ---- 6. memory ---- */

static long max_rss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void bench_rss(void) {
    size_t n = scaled(1000000);
    long before = max_rss_kib();
    rift_broker *b = new_broker(1024, n + 16);
    rift_sub **s = malloc(n * sizeof(*s));
    char subj[64];
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        /* Three shapes: plain exact, wildcard, queue member. */
        switch (i % 4) {
        case 0:
        case 1:
            snprintf(subj, sizeof(subj), "mem.%zu.data", i);
            s[i] = subscribe(b, subj, NULL);
            break;
        case 2:
            snprintf(subj, sizeof(subj), "mem.%zu.*", i);
            s[i] = subscribe(b, subj, NULL);
            break;
        default:
            snprintf(subj, sizeof(subj), "mem.%zu.job", i);
            s[i] = subscribe(b, subj, "workers");
            break;
        }
    }
    double sub_ns = (double)(now_ns() - t0) / (double)n;
    long after = max_rss_kib();
    t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        rift_sub_close(s[i]);
    }
    double unsub_ns = (double)(now_ns() - t0) / (double)n;
    printf("%-52s peak RSS %ld MiB (+%ld MiB, %.0f bytes/sub); "
           "subscribe %.0f ns, close %.0f ns\n",
           "6  1,000,000 subscriptions", after / 1024, (after - before) / 1024,
           (double)(after - before) * 1024.0 / (double)n, sub_ns, unsub_ns);
    free(s);
    rift_broker_del(b);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        reps = atoi(argv[1]);
        if (reps < 1 || reps > 64) {
            reps = 5;
        }
    }
    if (argc > 2) {
        scale = atof(argv[2]) / 100.0;
        if (scale <= 0) {
            scale = 1.0;
        }
    }
    memset(payload, 0x2A, sizeof(payload));
    printf("rift broker benchmark: 64-byte payloads, median of %d runs\n",
           reps);
    const char *only = argc > 3 ? argv[3] : "123456";
    if (strchr(only, '1') || strchr(only, '4')) {
        bench_same_thread(); /* also the reference for scenario 4 */
    }
    if (strchr(only, '1')) {
        bench_cross_thread(1);
        bench_cross_thread(64);
    }
    if (strchr(only, '2')) {
        bench_fanout();
    }
    if (strchr(only, '3')) {
        bench_queue_group();
    }
    if (strchr(only, '4')) {
        bench_routing();
    }
    if (strchr(only, '5')) {
        bench_request(false);
        bench_request(true);
    }
    if (strchr(only, '6')) {
        bench_rss();
    }
    return 0;
}
