/*
 * cmd_bench_pubsub.c — the core scenarios of `rift bench` (tools layer):
 * pub (dedicated publishers, pipelined: publish without waiting, flush
 * barrier every --batch and at the end), sub (subscribers counting what
 * someone else publishes) and pubsub (subscribers subscribe first, then
 * publishers run; with --batch N the original's pipelined delivery:
 * publish N, flush, wait until every subscriber has them, repeat).
 *
 * Each client is its own connection and thread. Hot loops allocate
 * nothing: payloads are per-publisher buffers, latency samples go into
 * arrays sized up front, counters are published with plain atomic stores
 * and progress in steps. End-to-end latency comes from the send time
 * stamped into every 64th payload (docs/performance.md).
 */
#include "cmd_bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct run run;

typedef struct sub_worker {
    /* Written by the worker only; read by others. */
    atomic_uint_fast64_t n;
    atomic_int_fast64_t first_ns;
    atomic_int_fast64_t last_ns;
    atomic_bool finished;
    run *r;
    rift_client *client;
    rift_client_sub *sub;
    uint64_t expect;
    uint64_t bad; /* messages of the wrong size */
    int64_t *lat;
    size_t nlat, cap;
    pthread_t thread;
    bool started;
} sub_worker;

typedef struct pub_worker {
    run *r;
    rift_client *client;
    rift_publisher *pub;
    uint8_t *payload;
    uint64_t count;
    uint64_t failed;
    int64_t end_ns;
    pthread_t thread;
    bool started;
} pub_worker;

struct run {
    const bench_cfg *cfg;
    bench_gate gate;
    atomic_bool stop; /* subscribers give up */
    /* Subscribers signal batch boundaries, their first message and their
     * end here; the batch barrier and the main thread wait on it. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stamp;
    bool barrier_subs; /* pubsub --batch: wait for the subscribers */
    sub_worker *subs;
    unsigned nsubs;
    pub_worker *pubs;
    unsigned npubs;
};

static void notify(run *r) {
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* ---- Subscribers ---- */

static void *sub_main(void *arg) {
    sub_worker *w = arg;
    run *r = w->r;
    const bench_cfg *cfg = r->cfg;
    uint64_t batch = r->barrier_subs ? cfg->batch : 0;
    uint64_t n = 0;
    while (n < w->expect) {
        rift_msg *m;
        rift_error err;
        int rc = rift_client_sub_recv(w->sub, 50000000, &m, &err);
        if (rc == RIFT_ERR_AGAIN) {
            if (atomic_load_explicit(&r->stop, memory_order_relaxed)) {
                break;
            }
            continue;
        }
        if (rc != 0) {
            bench_note_error("subscription", &err);
            break;
        }
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        uint64_t ts = len >= 8 ? bench_get_le64(p) : 0;
        w->bad += len != cfg->size;
        rift_msg_unref(m);
        n++;
        /* The clock is read for stamped messages, the first and the last,
         * and every 16th (so a run that stops short still knows when its
         * last messages came): ~3 ns a message instead of ~45. */
        if (ts != 0 || n == 1 || n == w->expect || (n & 15) == 0) {
            int64_t now = bench_now_ns();
            if (ts != 0 && w->nlat < w->cap) {
                w->lat[w->nlat++] = bench_wall_ns() - (int64_t)ts;
            }
            if (n == 1) {
                atomic_store_explicit(&w->first_ns, now, memory_order_relaxed);
            }
            atomic_store_explicit(&w->last_ns, now, memory_order_relaxed);
        }
        atomic_store_explicit(&w->n, n, memory_order_release);
        if ((n & (BENCH_PROGRESS_STEP - 1)) == 0) {
            bench_progress_add(BENCH_PROGRESS_STEP);
        }
        if (n == 1 || (batch > 0 && n % batch == 0)) {
            notify(r);
        }
    }
    bench_progress_add(n & (BENCH_PROGRESS_STEP - 1));
    atomic_store_explicit(&w->finished, true, memory_order_release);
    notify(r);
    return NULL;
}

/* Connects, subscribes (the OK means the server has the interest) and
 * starts every subscriber, each expecting |expect| messages. */
static int subs_start(run *r, uint64_t expect) {
    const bench_cfg *cfg = r->cfg;
    for (unsigned i = 0; i < r->nsubs; i++) {
        sub_worker *w = &r->subs[i];
        w->r = r;
        w->expect = expect;
        if (bench_connect(cfg, &w->client) != 0) {
            return -1;
        }
    }
    /* Stamped messages: at most one in 64 per publisher, plus slack for
     * the remainders. */
    size_t cap = (size_t)(expect / BENCH_SAMPLE_EVERY) + cfg->pubs + 2;
    for (unsigned i = 0; i < r->nsubs; i++) {
        sub_worker *w = &r->subs[i];
        rift_error err;
        w->lat = malloc(cap * sizeof(*w->lat));
        if (w->lat == NULL) {
            fprintf(stderr, "rift bench: out of memory\n");
            return -1;
        }
        w->cap = cap;
        if (rift_client_subscribe(w->client, cfg->subject, cfg->subject_len,
                                  NULL, 0, &w->sub, &err) != 0) {
            fprintf(stderr, "rift bench: subscribe %s: %s\n", cfg->subject,
                    err.text);
            return -1;
        }
        if (bench_thread_start(&w->thread, sub_main, w) != 0) {
            return -1;
        }
        w->started = true;
    }
    return 0;
}

static uint64_t subs_total(const run *r) {
    uint64_t t = 0;
    for (unsigned i = 0; i < r->nsubs; i++) {
        t += atomic_load_explicit(&r->subs[i].n, memory_order_acquire);
    }
    return t;
}

static bool subs_all_finished(const run *r) {
    for (unsigned i = 0; i < r->nsubs; i++) {
        if (!atomic_load_explicit(&r->subs[i].finished, memory_order_acquire)) {
            return false;
        }
    }
    return true;
}

/* Waits until every subscriber is done, or none progressed for the
 * timeout, or the user interrupts; then tells them to stop. Returns true
 * when all finished on their own. */
static bool subs_wait(run *r) {
    const bench_cfg *cfg = r->cfg;
    uint64_t last_total = subs_total(r);
    int64_t last_change = bench_now_ns();
    bool ok = true;
    pthread_mutex_lock(&r->mu);
    while (!subs_all_finished(r)) {
        struct timespec ts = bench_deadline(50000000);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        uint64_t t = subs_total(r);
        int64_t now = bench_now_ns();
        if (t != last_total) {
            last_total = t;
            last_change = now;
        } else if (now - last_change > (int64_t)cfg->timeout_ns ||
                   bench_interrupted()) {
            ok = false;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    atomic_store(&r->stop, true);
    return ok;
}

/* Adds the subscribers' counts, rates, losses and samples to |res|; the
 * window ends at the last message any of them received. Each rate runs
 * from |t0|, or with |first_as_start| from its own first message. */
static int subs_collect(run *r, bench_result *res, int64_t t0,
                        bool first_as_start) {
    int64_t end = 0;
    for (unsigned i = 0; i < r->nsubs; i++) {
        sub_worker *w = &r->subs[i];
        uint64_t n = atomic_load(&w->n);
        int64_t last = atomic_load(&w->last_ns);
        int64_t start = first_as_start ? atomic_load(&w->first_ns) : t0;
        end = last > end ? last : end;
        double rate =
            last > start ? (double)n / ((double)(last - start) / 1e9) : 0;
        if (bench_result_add_rate(res, rate) != 0 ||
            bench_result_add_lat(res, w->lat, w->nlat) != 0) {
            fprintf(stderr, "rift bench: out of memory\n");
            return -1;
        }
        res->msgs += n;
        res->errors += (w->expect - n) + w->bad;
    }
    res->seconds = end > t0 ? (double)(end - t0) / 1e9 : 0;
    return 0;
}

/* ---- Publishers ---- */

/* The flush barrier; in pubsub --batch mode it also waits until every
 * subscriber has the |sent| messages published so far (one publisher). */
static int barrier(pub_worker *w, uint64_t sent, rift_error *err) {
    run *r = w->r;
    int rc = rift_publisher_flush(w->pub, err);
    if (rc != 0 || !r->barrier_subs) {
        return rc;
    }
    struct timespec dl = bench_deadline((int64_t)r->cfg->timeout_ns);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        bool all = true;
        for (unsigned i = 0; i < r->nsubs && all; i++) {
            sub_worker *s = &r->subs[i];
            all = atomic_load_explicit(&s->n, memory_order_acquire) >= sent ||
                  atomic_load_explicit(&s->finished, memory_order_acquire);
        }
        if (all) {
            break;
        }
        if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT) {
            pthread_mutex_unlock(&r->mu);
            err->code = RIFT_ERR_TIMEOUT;
            snprintf(err->text, sizeof(err->text),
                     "batch not delivered within the timeout");
            return RIFT_ERR_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static void *pub_main(void *arg) {
    pub_worker *w = arg;
    run *r = w->r;
    const bench_cfg *cfg = r->cfg;
    if (!bench_gate_pass(&r->gate)) {
        return NULL;
    }
    uint8_t *p = w->payload;
    const size_t size = cfg->size;
    const bool stamp = r->stamp && size >= 8;
    const uint64_t batch = cfg->batch;
    const bool count_progress = cfg->scenario == BENCH_PUB;
    rift_error err;
    int rc = 0;
    for (uint64_t j = 0; j < w->count; j++) {
        bool st = stamp && j % BENCH_SAMPLE_EVERY == 0;
        if (st) {
            bench_put_le64(p, (uint64_t)bench_wall_ns());
        }
        rc = rift_publisher_publish(w->pub, cfg->subject, cfg->subject_len,
                                    NULL, 0, p, size, &err);
        if (st) {
            /* The publisher copied the bytes. */
            bench_put_le64(p, 0);
        }
        if (rc != 0) {
            break;
        }
        if (count_progress &&
            (j & (BENCH_PROGRESS_STEP - 1)) == BENCH_PROGRESS_STEP - 1) {
            bench_progress_add(BENCH_PROGRESS_STEP);
        }
        if (batch > 0 && (j + 1) % batch == 0 && j + 1 < w->count) {
            rc = barrier(w, j + 1, &err);
            if (rc != 0) {
                break;
            }
        }
    }
    if (rc == 0) {
        rc = barrier(w, w->count, &err);
    }
    w->end_ns = bench_now_ns();
    if (rc != 0) {
        bench_note_error("publisher", &err);
        w->failed = w->count;
    }
    return NULL;
}

/* Connects the publishers, opens one dedicated publisher each and starts
 * their threads, which wait at the gate. */
static int pubs_start(run *r) {
    const bench_cfg *cfg = r->cfg;
    for (unsigned i = 0; i < r->npubs; i++) {
        pub_worker *w = &r->pubs[i];
        w->r = r;
        w->count = bench_share(cfg->msgs, r->npubs, i);
        if (bench_connect(cfg, &w->client) != 0) {
            return -1;
        }
    }
    for (unsigned i = 0; i < r->npubs; i++) {
        pub_worker *w = &r->pubs[i];
        rift_error err;
        if (rift_client_publisher_open(w->client, &w->pub, &err) != 0) {
            fprintf(stderr, "rift bench: publisher: %s\n", err.text);
            return -1;
        }
        w->payload = bench_payload_new(cfg->size);
        if (w->payload == NULL ||
            bench_thread_start(&w->thread, pub_main, w) != 0) {
            return -1;
        }
        w->started = true;
    }
    return 0;
}

/* ---- Runs ---- */

static int run_init(run *r, const bench_cfg *cfg, unsigned npubs,
                    unsigned nsubs) {
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    bench_gate_init(&r->gate);
    pthread_mutex_init(&r->mu, NULL);
    bench_cond_init(&r->cv);
    r->npubs = npubs;
    r->nsubs = nsubs;
    r->pubs = calloc(npubs > 0 ? npubs : 1, sizeof(*r->pubs));
    r->subs = calloc(nsubs > 0 ? nsubs : 1, sizeof(*r->subs));
    if (r->pubs == NULL || r->subs == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        return -1;
    }
    return 0;
}

/* Stops and joins every thread, then closes and frees everything. */
static void run_free(run *r) {
    bench_gate_cancel(&r->gate);
    atomic_store(&r->stop, true);
    for (unsigned i = 0; r->pubs != NULL && i < r->npubs; i++) {
        pub_worker *w = &r->pubs[i];
        if (w->started) {
            pthread_join(w->thread, NULL);
        }
        rift_publisher_close(w->pub);
        rift_client_del(w->client);
        free(w->payload);
    }
    for (unsigned i = 0; r->subs != NULL && i < r->nsubs; i++) {
        sub_worker *w = &r->subs[i];
        if (w->started) {
            pthread_join(w->thread, NULL);
        }
        rift_client_sub_close(w->sub);
        rift_client_del(w->client);
        free(w->lat);
    }
    free(r->pubs);
    free(r->subs);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    bench_gate_free(&r->gate);
}

/* Opens the gate for the publishers and waits for them. Returns t0. */
static int64_t pubs_go(run *r, bench_result *res) {
    bench_gate_wait_ready(&r->gate, r->npubs);
    res->cpu0 = bench_cpu_mark(r->cfg);
    bench_gate_open(&r->gate);
    for (unsigned i = 0; i < r->npubs; i++) {
        pthread_join(r->pubs[i].thread, NULL);
        r->pubs[i].started = false;
    }
    return r->gate.t0;
}

int bench_run_pub(const bench_cfg *cfg, bench_result *res) {
    run r;
    int rc = 1;
    if (run_init(&r, cfg, cfg->pubs, 0) != 0 || pubs_start(&r) != 0) {
        goto done;
    }
    bench_progress_reset(cfg->msgs);
    int64_t t0 = pubs_go(&r, res);
    int64_t end = t0;
    uint64_t failed = 0;
    for (unsigned i = 0; i < r.npubs; i++) {
        pub_worker *w = &r.pubs[i];
        end = w->end_ns > end ? w->end_ns : end;
        failed += w->failed;
        double secs = (double)(w->end_ns - t0) / 1e9;
        double rate = w->failed == 0 && secs > 0 ? (double)w->count / secs : 0;
        if (bench_result_add_rate(res, rate) != 0) {
            goto done;
        }
    }
    res->cpu1 = bench_cpu_mark(cfg);
    res->seconds = (double)(end - t0) / 1e9;
    res->errors = failed;
    res->msgs = cfg->msgs - failed;
    rc = 0;
done:
    run_free(&r);
    return rc;
}

int bench_run_pubsub(const bench_cfg *cfg, bench_result *res) {
    run r;
    int rc = 1;
    if (run_init(&r, cfg, cfg->pubs, cfg->subs) != 0) {
        goto done;
    }
    r.stamp = true;
    r.barrier_subs = cfg->batch > 0;
    res->lat_what = "e2e";
    /* Subscribers first, so every publication finds its interest. */
    if (subs_start(&r, cfg->msgs) != 0 || pubs_start(&r) != 0) {
        goto done;
    }
    bench_progress_reset(cfg->msgs * cfg->subs);
    int64_t t0 = pubs_go(&r, res);
    if (!subs_wait(&r)) {
        fprintf(stderr, "rift bench: subscribers stalled; counting what "
                        "arrived\n");
    }
    res->cpu1 = bench_cpu_mark(cfg);
    if (subs_collect(&r, res, t0, false) != 0) {
        goto done;
    }
    rc = 0;
done:
    run_free(&r);
    return rc;
}

int bench_run_sub(const bench_cfg *cfg, bench_result *res) {
    run r;
    int rc = 1;
    if (run_init(&r, cfg, 0, cfg->subs) != 0 ||
        subs_start(&r, cfg->msgs) != 0) {
        goto done;
    }
    res->lat_what = "e2e";
    bench_progress_reset(cfg->msgs * cfg->subs);
    fprintf(stderr,
            "rift bench: subscribed to %s, waiting for %llu "
            "messages\n",
            cfg->subject, (unsigned long long)cfg->msgs);
    /* Wait without limit for the first message, then measure from it. */
    sub_worker *first = &r.subs[0];
    pthread_mutex_lock(&r.mu);
    while (atomic_load(&first->n) == 0 && !atomic_load(&first->finished) &&
           !bench_interrupted()) {
        struct timespec ts = bench_deadline(100000000);
        pthread_cond_timedwait(&r.cv, &r.mu, &ts);
    }
    pthread_mutex_unlock(&r.mu);
    if (atomic_load(&first->n) == 0) {
        fprintf(stderr, "rift bench: no message arrived\n");
        goto done;
    }
    res->cpu0 = bench_cpu_mark(cfg);
    int64_t t0 = atomic_load(&first->first_ns);
    if (!subs_wait(&r)) {
        fprintf(stderr, "rift bench: publisher stopped early; counting what "
                        "arrived\n");
    }
    res->cpu1 = bench_cpu_mark(cfg);
    if (subs_collect(&r, res, t0, true) != 0) {
        goto done;
    }
    rc = 0;
done:
    run_free(&r);
    return rc;
}
