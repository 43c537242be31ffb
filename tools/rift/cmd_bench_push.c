/*
 * cmd_bench_push.c — push and waiting-consumer scenarios of `rift bench`
 * (tools layer), over the extensions of docs/protocol-v1.md (E.5 push,
 * E.3 CONSUMER_FETCH_WAIT).
 *
 * push: prefill --msgs records (unmeasured), open a fresh consumer at the
 * first of them, then measure one push stream with max_in_flight --batch
 * (1,024): the callback (client thread) acks every delivery at once; the
 * window closes when the last record arrived.
 *
 * wait: --subs fetchers (1), each a thread looping in
 * rift_client_fetch_wait on one shared consumer (a work queue: every
 * record wakes all of them, the first takes it, the others wait again),
 * plus one push consumer (max_in_flight 1,024) on the same records; a
 * publisher stores --msgs records one at a time, each stamped with its
 * send time, and waits until a fetcher and the push have it. Latency
 * samples "fetched" are publish -> fetch answered; the push's publish ->
 * delivered percentiles are printed beside them ("pushed").
 *
 * idle: --subs waiting fetchers (1,000) on one consumer, parked on a
 * stream nobody publishes to, for 5 s: the CPU of this process and of
 * --server-pid over that window (a waiting fetch should cost the server
 * nothing).
 *
 * The consumers a run made are deleted at its end (a stream's consumer
 * limit would otherwise end the rounds), unless --consumer named one.
 */
#include "cmd_bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fetchers sharing one connection (well under a server's stream limit). */
#define FETCHERS_PER_CONN 50
#define IDLE_SECONDS      5

static int64_t stamp_of(const rift_msg *m) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    return len >= 8 ? (int64_t)bench_get_le64(p) : 0;
}

/* Deletes the run's consumer |name| (not one named by --consumer). */
static void drop_consumer(const bench_cfg *cfg, rift_client *c,
                          const char *name) {
    if (c != NULL && cfg->consumer == NULL && name[0] != '\0') {
        (void)rift_client_consumer_delete(c, cfg->stream, cfg->stream_len, name,
                                          strlen(name), NULL);
    }
}

/* ---- push ---- */

typedef struct prun {
    const bench_cfg *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t got, bad, failed;
    bool ended;
    int64_t end_ns;
    /* wait: publish -> pushed samples */
    int64_t *lat;
    size_t nlat, lat_cap;
} prun;

static void on_push(void *arg, rift_client_push *p, int status,
                    const rift_client_delivery *d, const rift_error *err) {
    prun *r = arg;
    if (status != 0) {
        pthread_mutex_lock(&r->mu);
        r->ended = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        bench_note_error("push", err);
        return;
    }
    int64_t now = bench_wall_ns();
    size_t len;
    rift_msg_payload(d->msg, &len);
    int64_t sent = stamp_of(d->msg);
    rift_msg_unref(d->msg);
    rift_error e;
    bool ack_ok = rift_client_push_ack(p, d->sequence, &e) == 0;
    pthread_mutex_lock(&r->mu);
    r->bad += len != r->cfg->size;
    r->failed += !ack_ok;
    if (d->delivery_count == 1) {
        r->got++;
        if (r->lat != NULL && sent > 0 && r->nlat < r->lat_cap) {
            r->lat[r->nlat++] = now - sent;
        }
    }
    if (r->got >= r->cfg->msgs && r->end_ns == 0) {
        r->end_ns = bench_now_ns();
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (d->delivery_count == 1 && (r->got % BENCH_PROGRESS_STEP) == 0) {
        bench_progress_add(BENCH_PROGRESS_STEP);
    }
}

/* Waits until |n| records came, the push ended, or nothing progressed
 * for the timeout. */
static bool prun_await(prun *r, uint64_t n) {
    pthread_mutex_lock(&r->mu);
    uint64_t last = r->got;
    while (r->got < n && !r->ended && !bench_interrupted()) {
        struct timespec until = bench_deadline((int64_t)r->cfg->timeout_ns);
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until) != 0 &&
            r->got == last) {
            break;
        }
        last = r->got;
    }
    bool ok = r->got >= n;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void prun_init(prun *r, const bench_cfg *cfg) {
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    pthread_mutex_init(&r->mu, NULL);
    bench_cond_init(&r->cv);
}

static void prun_free(prun *r) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->lat);
}

int bench_run_push(const bench_cfg *cfg, bench_result *res) {
    int rc = 1;
    uint64_t first;
    rift_client *c = NULL;
    rift_client_push *p = NULL;
    char name[96] = "";
    prun r;
    prun_init(&r, cfg);
    if (bench_stream_prefill(cfg, &first) != 0 || bench_connect(cfg, &c) != 0 ||
        bench_consumer_open(cfg, c, first, name, sizeof(name)) != 0) {
        goto done;
    }
    rift_client_push_config pc = {cfg->batch, 0};
    rift_error err;
    bench_progress_reset(cfg->msgs);
    res->cpu0 = bench_cpu_mark(cfg);
    int64_t t0 = bench_now_ns();
    if (rift_client_push_open(c, cfg->stream, cfg->stream_len, name,
                              strlen(name), &pc, on_push, &r, &p, &err) != 0) {
        fprintf(stderr, "rift bench: push: %s\n", err.text);
        goto done;
    }
    (void)prun_await(&r, cfg->msgs);
    res->cpu1 = bench_cpu_mark(cfg);
    rift_client_push_close(p);
    pthread_mutex_lock(&r.mu);
    int64_t end = r.end_ns != 0 ? r.end_ns : bench_now_ns();
    uint64_t got = r.got;
    res->errors =
        (cfg->msgs - (got < cfg->msgs ? got : cfg->msgs)) + r.bad + r.failed;
    pthread_mutex_unlock(&r.mu);
    res->seconds = (double)(end - t0) / 1e9;
    res->msgs = got;
    if (bench_result_add_rate(res, bench_result_rate(res)) != 0) {
        goto done;
    }
    rc = 0;
done:
    drop_consumer(cfg, c, name);
    rift_client_del(c);
    prun_free(&r);
    return rc;
}

/* ---- wait and idle: waiting fetchers ---- */

typedef struct wrun wrun;

typedef struct fetcher {
    wrun *w;
    rift_client *client; /* shared by FETCHERS_PER_CONN */
    const char *name;    /* the run's one consumer */
    pthread_t thread;
    bool started;
} fetcher;

struct wrun {
    const bench_cfg *cfg;
    unsigned n;
    fetcher *f;
    rift_client **conns;
    unsigned nconns;
    char name[96];
    uint32_t max_wait_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t got; /* deliveries over all fetchers */
    uint64_t failed;
    bool stop;
    unsigned parked; /* fetchers that sent their first waiting fetch */
    int64_t *lat;
    size_t nlat, lat_cap;
};

static void on_acked(void *arg, int status, const rift_error *err) {
    (void)arg;
    if (status != 0) {
        bench_note_error("ack", err);
    }
}

static void *fetcher_main(void *arg) {
    fetcher *f = arg;
    wrun *w = f->w;
    const bench_cfg *cfg = w->cfg;
    rift_client_delivery d;
    rift_error err;
    bool first = true;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        bool stop = w->stop;
        if (first) {
            w->parked++;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mu);
        first = false;
        if (stop) {
            break;
        }
        size_t count = 0;
        int rc = rift_client_fetch_wait(f->client, cfg->stream, cfg->stream_len,
                                        f->name, strlen(f->name), 1,
                                        w->max_wait_ms, &d, &count, &err);
        int64_t now = bench_wall_ns();
        if (rc != 0) {
            pthread_mutex_lock(&w->mu);
            bool quiet = w->stop;
            w->failed += !quiet;
            pthread_mutex_unlock(&w->mu);
            if (!quiet) {
                bench_note_error("fetch wait", &err);
            }
            break;
        }
        if (count == 0) {
            continue;
        }
        int64_t sent = stamp_of(d.msg);
        uint64_t seq = d.sequence;
        rift_msg_unref(d.msg);
        (void)rift_client_ack_async(f->client, cfg->stream, cfg->stream_len,
                                    f->name, strlen(f->name), seq, on_acked,
                                    NULL, NULL);
        pthread_mutex_lock(&w->mu);
        w->got++;
        if (sent > 0 && w->nlat < w->lat_cap) {
            w->lat[w->nlat++] = now - sent;
        }
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

/* Connects, opens the consumer from |first| and starts the fetchers; 0
 * or -1 after printing why. */
static int wrun_start(wrun *w, const bench_cfg *cfg, unsigned n, uint64_t first,
                      uint32_t max_wait_ms) {
    memset(w, 0, sizeof(*w));
    w->cfg = cfg;
    w->n = n;
    w->max_wait_ms = max_wait_ms;
    pthread_mutex_init(&w->mu, NULL);
    bench_cond_init(&w->cv);
    w->nconns = (n + FETCHERS_PER_CONN - 1) / FETCHERS_PER_CONN;
    w->f = calloc(n, sizeof(*w->f));
    w->conns = calloc(w->nconns, sizeof(*w->conns));
    if (w->f == NULL || w->conns == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        return -1;
    }
    for (unsigned i = 0; i < w->nconns; i++) {
        if (bench_connect(cfg, &w->conns[i]) != 0) {
            return -1;
        }
    }
    if (bench_consumer_open(cfg, w->conns[0], first, w->name,
                            sizeof(w->name)) != 0) {
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        fetcher *f = &w->f[i];
        f->w = w;
        f->client = w->conns[i / FETCHERS_PER_CONN];
        f->name = w->name;
    }
    for (unsigned i = 0; i < n; i++) {
        if (bench_thread_start(&w->f[i].thread, fetcher_main, &w->f[i]) != 0) {
            fprintf(stderr, "rift bench: cannot start a fetcher thread\n");
            return -1;
        }
        w->f[i].started = true;
    }
    /* Every fetcher is about to wait (its first fetch may still be on its
     * way: the first publish of wait comes after a short settling). */
    pthread_mutex_lock(&w->mu);
    while (w->parked < n) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void wrun_free(wrun *w) {
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    if (w->cfg != NULL && w->conns != NULL) {
        drop_consumer(w->cfg, w->conns[0], w->name);
    }
    /* Closing the connections ends the waits at once. */
    for (unsigned i = 0; w->conns != NULL && i < w->nconns; i++) {
        rift_client_del(w->conns[i]);
        w->conns[i] = NULL;
    }
    for (unsigned i = 0; w->f != NULL && i < w->n; i++) {
        if (w->f[i].started) {
            pthread_join(w->f[i].thread, NULL);
        }
    }
    free(w->f);
    free(w->conns);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* The next sequence the stream will store: a probe record's + 1. */
static int next_sequence(const bench_cfg *cfg, rift_client *c, uint64_t *seq) {
    uint8_t probe[8] = {0};
    rift_stored st;
    rift_error err;
    if (rift_client_stream_publish(c, cfg->stream, cfg->stream_len,
                                   cfg->subject, cfg->subject_len, NULL, 0,
                                   probe, sizeof(probe), &st, &err) != 0) {
        fprintf(stderr, "rift bench: stream %s: %s\n", cfg->stream, err.text);
        return -1;
    }
    *seq = st.sequence + 1;
    return 0;
}

static void print_pushed(prun *r) {
    if (r->nlat == 0) {
        return;
    }
    bench_result tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.lat = r->lat;
    tmp.nlat = r->nlat;
    tmp.lat_what = "pushed";
    bench_result_finish(&tmp);
    printf("pushed (live, max_in_flight 1024): publish -> delivered p50 "
           "%.1f us, p99 %.1f us (%zu samples)\n",
           bench_result_pct_us(&tmp, 50), bench_result_pct_us(&tmp, 99),
           tmp.nlat);
}

int bench_run_wait(const bench_cfg *cfg, bench_result *res) {
    int rc = 1;
    rift_client *pubc = NULL, *pushc = NULL;
    char pname[96] = "";
    rift_client_push *p = NULL;
    uint8_t *payload = NULL;
    uint64_t first = 0;
    wrun w;
    memset(&w, 0, sizeof(w));
    prun r;
    prun_init(&r, cfg);
    if (bench_connect(cfg, &pubc) != 0 || bench_connect(cfg, &pushc) != 0 ||
        next_sequence(cfg, pubc, &first) != 0) {
        goto done;
    }
    if (bench_consumer_open(cfg, pushc, first, pname, sizeof(pname)) != 0) {
        goto done;
    }
    if (wrun_start(&w, cfg, cfg->subs, first, 60000) != 0) {
        goto done;
    }
    size_t lat_cap = (size_t)cfg->msgs;
    res->lat = malloc((lat_cap ? lat_cap : 1) * sizeof(*res->lat));
    r.lat_cap = (size_t)cfg->msgs;
    r.lat = malloc((r.lat_cap ? r.lat_cap : 1) * sizeof(*r.lat));
    payload = bench_payload_new(cfg->size < 8 ? 8 : cfg->size);
    if (res->lat == NULL || r.lat == NULL || payload == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        goto done;
    }
    pthread_mutex_lock(&w.mu);
    w.lat = res->lat;
    w.lat_cap = lat_cap;
    pthread_mutex_unlock(&w.mu);
    rift_client_push_config pc = {1024, 0};
    rift_error err;
    if (rift_client_push_open(pushc, cfg->stream, cfg->stream_len, pname,
                              strlen(pname), &pc, on_push, &r, &p, &err) != 0) {
        fprintf(stderr, "rift bench: push: %s\n", err.text);
        goto done;
    }
    /* Let the fetchers' first waits reach the server before measuring. */
    usleep(200000);
    bench_progress_reset(cfg->msgs);
    res->lat_what = "fetched";
    res->cpu0 = bench_cpu_mark(cfg);
    int64_t t0 = bench_now_ns();
    uint64_t sent = 0;
    for (; sent < cfg->msgs && !bench_interrupted(); sent++) {
        bench_put_le64(payload, (uint64_t)bench_wall_ns());
        if (rift_client_stream_publish(pubc, cfg->stream, cfg->stream_len,
                                       cfg->subject, cfg->subject_len, NULL, 0,
                                       payload, cfg->size < 8 ? 8 : cfg->size,
                                       NULL, &err) != 0) {
            fprintf(stderr, "rift bench: publish: %s\n", err.text);
            break;
        }
        /* A fetcher and the push have it before the next one. */
        uint64_t want = sent + 1;
        pthread_mutex_lock(&w.mu);
        bool timed_out = false;
        while (w.got < want && !timed_out) {
            struct timespec until = bench_deadline((int64_t)cfg->timeout_ns);
            timed_out = pthread_cond_timedwait(&w.cv, &w.mu, &until) != 0;
        }
        pthread_mutex_unlock(&w.mu);
        if (timed_out || !prun_await(&r, sent + 1)) {
            fprintf(stderr, "rift bench: a record was not fetched in time\n");
            break;
        }
        bench_progress_add(1);
    }
    int64_t end = bench_now_ns();
    res->cpu1 = bench_cpu_mark(cfg);
    pthread_mutex_lock(&w.mu);
    res->nlat = w.nlat;
    res->msgs = w.got;
    res->errors = (cfg->msgs - sent) + w.failed;
    pthread_mutex_unlock(&w.mu);
    res->seconds = (double)(end - t0) / 1e9;
    rift_client_push_close(p);
    p = NULL;
    print_pushed(&r);
    if (bench_result_add_rate(res, bench_result_rate(res)) != 0) {
        goto done;
    }
    rc = 0;
done:
    rift_client_push_close(p);
    wrun_free(&w);
    drop_consumer(cfg, pushc, pname);
    rift_client_del(pushc);
    rift_client_del(pubc);
    free(payload);
    prun_free(&r);
    return rc;
}

int bench_run_idle(const bench_cfg *cfg, bench_result *res) {
    int rc = 1;
    rift_client *c = NULL;
    uint64_t first = 0;
    wrun w;
    memset(&w, 0, sizeof(w));
    if (bench_connect(cfg, &c) != 0 || next_sequence(cfg, c, &first) != 0 ||
        wrun_start(&w, cfg, cfg->subs, first, 120000) != 0) {
        goto done;
    }
    /* Their first waits reach the server; then nothing happens. */
    usleep(500000);
    res->cpu0 = bench_cpu_mark(cfg);
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < IDLE_SECONDS * 10 && !bench_interrupted(); i++) {
        usleep(100000);
    }
    int64_t end = bench_now_ns();
    res->cpu1 = bench_cpu_mark(cfg);
    res->seconds = (double)(end - t0) / 1e9;
    pthread_mutex_lock(&w.mu);
    res->msgs = w.got; /* nobody publishes: 0 */
    res->errors = w.failed;
    pthread_mutex_unlock(&w.mu);
    if (bench_result_add_rate(res, 0) != 0) {
        goto done;
    }
    rc = 0;
done:
    wrun_free(&w);
    rift_client_del(c);
    return rc;
}
