/*
 * soak.c — a steady mixed load for a fixed time against a running riftd,
 * with the server's RSS sampled all along (bench). scripts/soak.sh starts
 * riftd with the streams this needs and runs it.
 *
 * Workers, each on its own connection, each paced to a fixed rate (so the
 * load is a steady state whatever the machine does; --scale multiplies
 * every rate):
 *   pubsub    a publisher sends batches to soak.ps.<0..15> (sizes 16 B to
 *             4 KiB), flushing each; a subscriber on soak.ps.> checks that
 *             every message arrives once and in order        (2,000 msg/s)
 *   request   requests to soak.rr, answered by a responder connection;
 *             every reply must carry the request's payload     (200 req/s)
 *   sync      stream publish to soak_sync (fsync before STORED) (50 rec/s)
 *   nosync    stream publish to soak_nosync (no fsync)         (500 rec/s)
 *   consumer  fetch (up to 64) + ack on a durable consumer of each stream;
 *             sequences must come in order without gaps or redeliveries
 *   churn     connect, subscribe, publish, receive it, close     (2 conn/s)
 * Every --interval seconds (10) it prints the server's VmRSS and the
 * counts. At the end the producers stop, the consumers drain, every count
 * is checked, and the RSS series is judged: the median of the last three
 * samples against the median of the first three after the warm-up
 * (--warmup percent of the run, 20; at least one interval), growth at most
 * --max-growth percent (5). Exit 0 when the counts are complete, nothing
 * failed and the growth is within bounds (--no-rss-judge: counts only).
 *
 *   soak --server ADDR --ca FILE --token-env VAR --server-pid PID
 *        [--server-name NAME] [--duration SECONDS (600)] [--interval S]
 *        [--warmup PCT] [--max-growth PCT] [--scale F] [--no-rss-judge]
 */
#include "bench_proc.h"

#include "rift/client.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECOND      1000000000ll
#define PROG        "soak"
#define MAX_SAMPLES 100000
#define FETCH_MAX   64

typedef struct soak {
    bench_conn conn;
    double scale;
    _Atomic bool stop;   /* producers stop */
    _Atomic bool finish; /* everything stops (after the drain) */
    _Atomic uint64_t errors;
    _Atomic uint64_t ps_sent, ps_recv;
    _Atomic uint64_t rr_ok;
    _Atomic uint64_t sync_stored, nosync_stored;
    _Atomic uint64_t sync_fetched, nosync_fetched;
    _Atomic uint64_t churned;
    _Atomic int producers; /* producer threads still running */
    _Atomic int receivers; /* receivers not yet subscribed */
} soak;

typedef struct worker {
    soak *sk;
    pthread_t thread;
    void *(*fn)(void *);
} worker;

static void fail(soak *sk, const char *what, const char *text) {
    if (atomic_fetch_add(&sk->errors, 1) < 20) {
        fprintf(stderr, PROG ": %s: %s\n", what, text);
    }
}

/* Sleeps until |t| (monotonic ns); false once the producers must stop. */
static bool pace(soak *sk, int64_t t) {
    int64_t now = bench_mono_ns();
    while (now < t && !atomic_load(&sk->stop)) {
        int64_t d = t - now;
        if (d > 100000000) {
            d = 100000000; /* notice a stop within 0.1 s */
        }
        struct timespec ts = {(time_t)(d / SECOND), (long)(d % SECOND)};
        nanosleep(&ts, NULL);
        now = bench_mono_ns();
    }
    return !atomic_load(&sk->stop);
}

/* A receiver is in place (subscribed, consumers open, or failed). */
static void receiver_ready(soak *sk) {
    atomic_fetch_sub(&sk->receivers, 1);
}

/* Producers start once every receiver is in place: a message published
 * before its subscription exists would count as lost. */
static void await_receivers(soak *sk) {
    while (atomic_load(&sk->receivers) > 0) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

static int64_t period_ns(soak *sk, double per_second) {
    double rate = per_second * sk->scale;
    return rate > 0 ? (int64_t)(1e9 / rate) : SECOND;
}

static rift_client *connect_or_fail(soak *sk, const char *who) {
    rift_client *c = NULL;
    if (bench_conn_connect(&sk->conn, PROG, &c) != 0) {
        fail(sk, who, "cannot connect");
        return NULL;
    }
    return c;
}

static void put_u64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- pub/sub ---- */

static const size_t ps_sizes[] = {16, 200, 1000, 4096};
#define PS_BATCH 50

static void *ps_pub_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    rift_client *c = connect_or_fail(sk, "pubsub publisher");
    rift_publisher *p = NULL;
    rift_error err = {0};
    if (c != NULL && rift_client_publisher_open(c, &p, &err) != 0) {
        fail(sk, "pubsub publisher", err.text);
    }
    uint8_t payload[4096] = {0};
    await_receivers(sk);
    int64_t period = period_ns(sk, 2000.0 / PS_BATCH);
    int64_t t = bench_mono_ns();
    uint64_t seq = 0;
    while (p != NULL && pace(sk, t)) {
        t += period;
        for (int k = 0; k < PS_BATCH; k++, seq++) {
            char subject[32];
            int n = snprintf(subject, sizeof(subject), "soak.ps.%u",
                             (unsigned)(seq % 16));
            put_u64(payload, seq);
            if (rift_publisher_publish(p, subject, (size_t)n, NULL, 0, payload,
                                       ps_sizes[seq % 4], &err) != 0) {
                fail(sk, "pubsub publish", err.text);
                goto out;
            }
        }
        if (rift_publisher_flush(p, &err) != 0) {
            fail(sk, "pubsub flush", err.text);
            goto out;
        }
        atomic_store(&sk->ps_sent, seq);
    }
out:
    atomic_fetch_sub(&sk->producers, 1);
    /* Keep the connection until the subscriber drained. */
    while (!atomic_load(&sk->finish)) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    rift_publisher_close(p);
    rift_client_del(c);
    return NULL;
}

static void *ps_sub_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    rift_client *c = connect_or_fail(sk, "pubsub subscriber");
    rift_client_sub *sub = NULL;
    rift_error err = {0};
    if (c != NULL &&
        rift_client_subscribe(c, "soak.ps.>", 9, NULL, 0, &sub, &err) != 0) {
        fail(sk, "pubsub subscribe", err.text);
    }
    receiver_ready(sk);
    uint64_t next = 0;
    while (sub != NULL && !atomic_load(&sk->finish)) {
        rift_msg *m = NULL;
        int rc = rift_client_sub_recv(sub, SECOND / 10, &m, &err);
        if (rc == RIFT_ERR_AGAIN) {
            continue;
        }
        if (rc != 0) {
            fail(sk, "pubsub receive", err.text);
            break;
        }
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        uint64_t seq = len >= 8 ? get_u64(p) : UINT64_MAX;
        if (seq != next || len != ps_sizes[seq % 4]) {
            char text[96];
            snprintf(text, sizeof(text),
                     "got message %" PRIu64 " (%zu bytes), expected %" PRIu64,
                     seq, len, next);
            fail(sk, "pubsub order", text);
            next = seq;
        }
        next++;
        rift_msg_unref(m);
        atomic_store(&sk->ps_recv, next);
    }
    rift_client_sub_close(sub);
    rift_client_del(c);
    return NULL;
}

/* ---- request/reply ---- */

static void *rr_responder_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    rift_client *c = connect_or_fail(sk, "responder");
    rift_client_sub *sub = NULL;
    rift_error err = {0};
    if (c != NULL &&
        rift_client_subscribe(c, "soak.rr", 7, NULL, 0, &sub, &err) != 0) {
        fail(sk, "responder subscribe", err.text);
    }
    receiver_ready(sk);
    while (sub != NULL && !atomic_load(&sk->finish)) {
        rift_msg *m = NULL;
        int rc = rift_client_sub_recv(sub, SECOND / 10, &m, &err);
        if (rc == RIFT_ERR_AGAIN) {
            continue;
        }
        if (rc != 0) {
            fail(sk, "responder receive", err.text);
            break;
        }
        size_t rlen, plen;
        const char *reply = rift_msg_reply(m, &rlen);
        const uint8_t *p = rift_msg_payload(m, &plen);
        if (rlen == 0) {
            fail(sk, "responder", "request without a reply subject");
        } else if (rift_client_publish(c, reply, rlen, p, plen, &err) != 0) {
            fail(sk, "responder publish", err.text);
        }
        rift_msg_unref(m);
    }
    rift_client_sub_close(sub);
    rift_client_del(c);
    return NULL;
}

static void *rr_requester_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    rift_client *c = connect_or_fail(sk, "requester");
    await_receivers(sk);
    int64_t period = period_ns(sk, 200.0);
    int64_t t = bench_mono_ns();
    uint8_t payload[64] = {0};
    for (uint64_t k = 0; c != NULL && pace(sk, t); k++) {
        t += period;
        put_u64(payload, k);
        rift_msg *reply = NULL;
        rift_error err = {0};
        size_t size = 8 + (size_t)(k % 57);
        if (rift_client_request(c, "soak.rr", 7, payload, size,
                                10000 * RIFT_MSEC, &reply, &err) != 0) {
            fail(sk, "request", err.text);
            continue;
        }
        size_t len;
        const uint8_t *p = rift_msg_payload(reply, &len);
        if (len != size || memcmp(p, payload, size) != 0) {
            fail(sk, "request", "reply does not carry the request's payload");
        } else {
            atomic_fetch_add(&sk->rr_ok, 1);
        }
        rift_msg_unref(reply);
    }
    rift_client_del(c);
    atomic_fetch_sub(&sk->producers, 1);
    return NULL;
}

/* ---- stream publish ---- */

static void stream_publisher(soak *sk, const char *stream, const char *subject,
                             double rate, _Atomic uint64_t *stored_count) {
    rift_client *c = connect_or_fail(sk, stream);
    await_receivers(sk);
    int64_t period = period_ns(sk, rate);
    int64_t t = bench_mono_ns();
    uint8_t payload[256] = {0};
    uint64_t last = 0;
    for (uint64_t k = 0; c != NULL && pace(sk, t); k++) {
        t += period;
        put_u64(payload, k);
        rift_stored st;
        rift_error err = {0};
        if (rift_client_stream_publish(c, stream, strlen(stream), subject,
                                       strlen(subject), NULL, 0, payload,
                                       sizeof(payload), &st, &err) != 0) {
            fail(sk, "stream publish", err.text);
            continue;
        }
        if (st.sequence != last + 1) {
            fail(sk, "stream publish", "sequence is not the next one");
        }
        last = st.sequence;
        atomic_fetch_add(stored_count, 1);
    }
    rift_client_del(c);
    atomic_fetch_sub(&sk->producers, 1);
}

static void *sync_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    stream_publisher(sk, "soak_sync", "soak.sync.x", 50.0, &sk->sync_stored);
    return NULL;
}

static void *nosync_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    stream_publisher(sk, "soak_nosync", "soak.nosync.x", 500.0,
                     &sk->nosync_stored);
    return NULL;
}

/* ---- fetch + ack ---- */

typedef struct consumer_state {
    const char *stream;
    uint64_t next; /* sequence expected next */
    _Atomic uint64_t *fetched;
} consumer_state;

/* The acks of one fetch, in flight together (one round trip per fetch,
 * not per record). */
typedef struct ack_batch {
    soak *sk;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t pending;
} ack_batch;

static void ack_done(void *arg, int rc, const rift_error *err) {
    ack_batch *b = arg;
    if (rc != 0) {
        fail(b->sk, "ack", err->text);
    }
    pthread_mutex_lock(&b->mu);
    b->pending--;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* One fetch and its acks; returns the number of records, -1 on error. */
static int fetch_once(soak *sk, rift_client *c, consumer_state *cs,
                      ack_batch *b) {
    rift_client_delivery d[FETCH_MAX];
    size_t n = 0;
    rift_error err = {0};
    size_t slen = strlen(cs->stream);
    if (rift_client_fetch(c, cs->stream, slen, "soak", 4, FETCH_MAX, d, &n,
                          &err) != 0) {
        fail(sk, "fetch", err.text);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (d[i].sequence != cs->next || d[i].delivery_count != 1) {
            char text[128];
            snprintf(text, sizeof(text),
                     "%s: got sequence %" PRIu64
                     " (delivery %u), expected %" PRIu64,
                     cs->stream, d[i].sequence, d[i].delivery_count, cs->next);
            fail(sk, "fetch order", text);
        }
        cs->next = d[i].sequence + 1;
        pthread_mutex_lock(&b->mu);
        b->pending++;
        pthread_mutex_unlock(&b->mu);
        if (rift_client_ack_async(c, cs->stream, slen, "soak", 4, d[i].sequence,
                                  ack_done, b, &err) != 0) {
            fail(sk, "ack", err.text);
            pthread_mutex_lock(&b->mu);
            b->pending--;
            pthread_mutex_unlock(&b->mu);
        }
        rift_msg_unref(d[i].msg);
    }
    /* Every ack completes (the client fails them when the connection
     * ends), so this wait is bounded by the operation deadline. */
    pthread_mutex_lock(&b->mu);
    while (b->pending > 0) {
        pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    atomic_fetch_add(cs->fetched, n);
    return (int)n;
}

static void *consumer_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    rift_client *c = connect_or_fail(sk, "consumer");
    consumer_state cs[2] = {
        {"soak_sync", 1, &sk->sync_fetched},
        {"soak_nosync", 1, &sk->nosync_fetched},
    };
    ack_batch b = {.sk = sk};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    for (int k = 0; k < 2 && c != NULL; k++) {
        rift_consumer_config cfg = {
            .filter = "soak.>", /* what the principal may subscribe to */
            .filter_len = 6,
            .start_sequence = 1,
            .ack_wait_ms = 60000,
            .max_ack_pending = 1024,
        };
        rift_error err = {0};
        if (rift_client_consumer_open(c, cs[k].stream, strlen(cs[k].stream),
                                      "soak", 4, &cfg, &err) != 0) {
            fail(sk, "consumer open", err.text);
        }
    }
    receiver_ready(sk);
    while (c != NULL && !atomic_load(&sk->finish)) {
        int got = 0;
        for (int k = 0; k < 2; k++) {
            int n = fetch_once(sk, c, &cs[k], &b);
            got += n > 0 ? n : 0;
        }
        if (got == 0) {
            /* Fetch never waits for new records: poll at 50 Hz when idle. */
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
    }
    rift_client_del(c);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    return NULL;
}

/* ---- connection churn ---- */

static void *churn_main(void *arg) {
    soak *sk = ((worker *)arg)->sk;
    await_receivers(sk);
    int64_t period = period_ns(sk, 2.0);
    int64_t t = bench_mono_ns();
    for (uint64_t k = 0; pace(sk, t); k++) {
        t += period;
        rift_client *c = connect_or_fail(sk, "churn");
        if (c == NULL) {
            continue;
        }
        char subject[48];
        int n = snprintf(subject, sizeof(subject), "soak.churn.%" PRIu64, k);
        rift_client_sub *sub = NULL;
        rift_msg *m = NULL;
        rift_error err = {0};
        if (rift_client_subscribe(c, subject, (size_t)n, NULL, 0, &sub, &err) !=
                0 ||
            rift_client_publish(c, subject, (size_t)n, (const uint8_t *)"x", 1,
                                &err) != 0 ||
            rift_client_sub_recv(sub, 10 * SECOND, &m, &err) != 0) {
            fail(sk, "churn", err.text);
        } else {
            atomic_fetch_add(&sk->churned, 1);
        }
        rift_msg_unref(m);
        rift_client_sub_close(sub);
        rift_client_del(c);
    }
    atomic_fetch_sub(&sk->producers, 1);
    return NULL;
}

/* ---- main: sampling, drain, verdict ---- */

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static long median3(const long *v, size_t n) {
    long t[3];
    size_t k = n < 3 ? n : 3;
    memcpy(t, v, k * sizeof(long));
    qsort(t, k, sizeof(long), cmp_long);
    return t[k / 2];
}

static void print_counts(soak *sk) {
    printf("ps %" PRIu64 "/%" PRIu64 " rr %" PRIu64 " sync %" PRIu64 "/%" PRIu64
           " nosync %" PRIu64 "/%" PRIu64 " churn %" PRIu64 " errors %" PRIu64,
           atomic_load(&sk->ps_recv), atomic_load(&sk->ps_sent),
           atomic_load(&sk->rr_ok), atomic_load(&sk->sync_fetched),
           atomic_load(&sk->sync_stored), atomic_load(&sk->nosync_fetched),
           atomic_load(&sk->nosync_stored), atomic_load(&sk->churned),
           atomic_load(&sk->errors));
}

static bool drained(soak *sk) {
    return atomic_load(&sk->ps_recv) == atomic_load(&sk->ps_sent) &&
           atomic_load(&sk->sync_fetched) == atomic_load(&sk->sync_stored) &&
           atomic_load(&sk->nosync_fetched) == atomic_load(&sk->nosync_stored);
}

static void usage(void) {
    fprintf(stderr,
            "usage: " PROG " --server ADDR --ca FILE --token-env VAR "
            "--server-pid PID\n"
            "       [--server-name NAME] [--duration SECONDS (600)] "
            "[--interval S (10)]\n"
            "       [--warmup PCT (20)] [--max-growth PCT (5)] [--scale F "
            "(1)] [--no-rss-judge]\n");
}

int main(int argc, char **argv) {
    static soak s;
    soak *sk = &s;
    sk->scale = 1.0;
    double duration = 600, interval = 10, warmup_pct = 20, max_growth = 5;
    bool judge_rss = true;
    for (int i = 1; i < argc; i++) {
        int r = bench_conn_opt(&sk->conn, argc, argv, &i);
        if (r == 1) {
            continue;
        }
        if (r == 0 && strcmp(argv[i], "--no-rss-judge") == 0) {
            judge_rss = false;
            continue;
        }
        static const char *const names[] = {
            "--duration", "--interval", "--warmup", "--max-growth", "--scale"};
        double *dst[] = {&duration, &interval, &warmup_pct, &max_growth,
                         &sk->scale};
        size_t k = 0;
        while (r == 0 && k < 5 && strcmp(argv[i], names[k]) != 0) {
            k++;
        }
        char *end = NULL;
        if (r != 0 || k == 5 || i + 1 >= argc ||
            (*dst[k] = strtod(argv[i + 1], &end), *end != '\0') ||
            *dst[k] <= 0) {
            usage();
            return 2;
        }
        i++;
    }
    if (sk->conn.address == NULL || sk->conn.server_pid == 0) {
        usage();
        return 2;
    }
    pid_t spid = sk->conn.server_pid;
    static worker ws[] = {{.fn = ps_sub_main},       {.fn = rr_responder_main},
                          {.fn = consumer_main},     {.fn = ps_pub_main},
                          {.fn = rr_requester_main}, {.fn = sync_main},
                          {.fn = nosync_main},       {.fn = churn_main}};
    const size_t nw = sizeof(ws) / sizeof(ws[0]);
    atomic_store(&sk->producers, 5);
    atomic_store(&sk->receivers, 3);
    printf("soak: %.0f s, RSS of riftd pid %ld every %.0f s, rates x%.2f\n",
           duration, (long)spid, interval, sk->scale);
    fflush(stdout);
    double scpu0 = bench_proc_cpu_s(spid);
    for (size_t k = 0; k < nw; k++) {
        ws[k].sk = sk;
        if (pthread_create(&ws[k].thread, NULL, ws[k].fn, &ws[k]) != 0) {
            fprintf(stderr, PROG ": cannot start a thread\n");
            return 2;
        }
    }
    static long rss[MAX_SAMPLES];
    static double at[MAX_SAMPLES];
    size_t ns = 0;
    int64_t t0 = bench_mono_ns();
    int64_t step = (int64_t)(interval * 1e9);
    for (int64_t next = t0 + step; ns < MAX_SAMPLES; next += step) {
        int64_t now = bench_mono_ns();
        if (next > now) {
            struct timespec ts = {(time_t)((next - now) / SECOND),
                                  (long)((next - now) % SECOND)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            }
        }
        rss[ns] = bench_proc_status_kb(spid, "VmRSS");
        at[ns] = (double)(bench_mono_ns() - t0) / 1e9;
        printf("soak: t=%5.0fs rss=%ld KiB ", at[ns], rss[ns]);
        print_counts(sk);
        printf("\n");
        fflush(stdout);
        if (rss[ns] < 0) {
            fail(sk, "sample", "riftd is gone");
            break;
        }
        ns++;
        if (at[ns - 1] + 1e-3 >= duration) {
            break;
        }
    }
    atomic_store(&sk->stop, true);
    /* Drain: the producers end, then every count must meet its total. */
    int64_t limit = bench_mono_ns() + 60 * SECOND;
    while ((atomic_load(&sk->producers) > 0 || !drained(sk)) &&
           bench_mono_ns() < limit) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    bool complete = atomic_load(&sk->producers) == 0 && drained(sk);
    atomic_store(&sk->finish, true);
    for (size_t k = 0; k < nw; k++) {
        pthread_join(ws[k].thread, NULL);
    }
    double scpu = bench_proc_cpu_s(spid) - scpu0;

    /* The verdict. */
    size_t w = 0;
    double warm = duration * warmup_pct / 100.0;
    if (warm < interval) {
        warm = interval;
    }
    while (w < ns && at[w] + 1e-3 < warm) {
        w++;
    }
    long base = -1, last = -1, peak = -1, low = -1;
    double growth = 0, peak_growth = 0;
    if (ns > w) {
        base = median3(rss + w, ns - w);
        last =
            median3(rss + (ns - w >= 3 ? ns - 3 : w), ns - w >= 3 ? 3 : ns - w);
        for (size_t k = w; k < ns; k++) {
            peak = rss[k] > peak ? rss[k] : peak;
            low = low < 0 || rss[k] < low ? rss[k] : low;
        }
        growth = 100.0 * (double)(last - base) / (double)base;
        peak_growth = 100.0 * (double)(peak - base) / (double)base;
    }
    printf("soak: RSS series (KiB):");
    for (size_t k = 0; k < ns; k++) {
        printf(" %ld", rss[k]);
    }
    printf("\n");
    printf("soak: after warm-up (%.0f s, %zu samples): start %ld KiB, end "
           "%ld KiB, min %ld, max %ld: growth %+.1f%% (max %+.1f%%), "
           "limit %.1f%%\n",
           warm, ns > w ? ns - w : 0, base, last, low, peak, growth,
           peak_growth, max_growth);
    printf("soak: totals: ");
    print_counts(sk);
    printf("\nsoak: riftd CPU %.1f s, client CPU %.1f s\n", scpu,
           bench_self_cpu_s());
    bool rss_ok = ns > w && growth <= max_growth;
    uint64_t errors = atomic_load(&sk->errors);
    bool ok = complete && errors == 0 && (!judge_rss || rss_ok);
    printf("soak: deliveries %s, %" PRIu64 " errors, RSS %s: %s\n",
           complete ? "complete" : "INCOMPLETE", errors,
           !judge_rss ? "not judged"
           : rss_ok   ? "within bounds"
                      : "GREW (or too few samples)",
           ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
