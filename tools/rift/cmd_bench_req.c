/*
 * cmd_bench_req.c — request/reply scenarios of `rift bench` (tools
 * layer). req: --pubs requesters, each on its own connection, make
 * sequential round trips after up to min(1,000, share/10) unmeasured
 * warm-up ones; like nats-load, the run starts its own echo responder on a
 * separate connection (--responders N; several form a queue group; 0
 * relies on `rift bench reply` running elsewhere). reply: responders only,
 * answering --msgs requests, measured from the first one received.
 *
 * A responder answers with the request's payload through a dedicated
 * publisher (PUBLISH without waiting, as NATS's Respond), so a round trip
 * costs REQUEST → MESSAGE → PUBLISH → MESSAGE and no extra
 * acknowledgement. After the --msgs-th answer, reply keeps answering
 * (uncounted) until requests stop for a second: a paired `rift bench req`
 * sends its warm-up round trips on top of --msgs.
 */
#include "cmd_bench.h"

#include <stdlib.h>
#include <string.h>

/* The queue group that several responders share. */
#define RESPONDER_QUEUE "bench.responders"

typedef struct rr rr;

typedef struct responder {
    atomic_uint_fast64_t n;
    atomic_int_fast64_t first_ns;
    atomic_int_fast64_t last_ns;
    atomic_bool finished;
    rr *r;
    rift_client *client;
    rift_client_sub *sub;
    rift_publisher *pub;
    uint64_t failed;
    pthread_t thread;
    bool started;
} responder;

typedef struct requester {
    rr *r;
    rift_client *client;
    uint8_t *payload;
    uint64_t count;
    int64_t *lat;
    size_t nlat;
    uint64_t failed;
    int64_t end_ns;
    pthread_t thread;
    bool started;
} requester;

struct rr {
    const bench_cfg *cfg;
    bench_gate gate;
    atomic_bool stop;
    /* Answers by all responders; those beyond |limit| are not counted. */
    atomic_uint_fast64_t total;
    uint64_t limit;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    responder *resp;
    unsigned nresp;
    requester *reqs;
    unsigned nreqs;
};

static void notify(rr *r) {
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* ---- Responders ---- */

static void *responder_main(void *arg) {
    responder *w = arg;
    rr *r = w->r;
    bool count_progress = r->cfg->scenario == BENCH_REPLY;
    uint64_t n = 0;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        rift_msg *m;
        rift_error err;
        int rc = rift_client_sub_recv(w->sub, 50000000, &m, &err);
        if (rc == RIFT_ERR_AGAIN) {
            continue;
        }
        if (rc != 0) {
            bench_note_error("responder subscription", &err);
            break;
        }
        size_t rlen, plen;
        const char *reply = rift_msg_reply(m, &rlen);
        const uint8_t *p = rift_msg_payload(m, &plen);
        bool ok = reply != NULL;
        if (ok && rift_publisher_publish(w->pub, reply, rlen, NULL, 0, p, plen,
                                         &err) != 0) {
            bench_note_error("responder", &err);
            ok = false;
        }
        rift_msg_unref(m);
        uint64_t t = atomic_fetch_add(&r->total, 1) + 1;
        if (t > r->limit) {
            continue;
        }
        w->failed += !ok;
        n++;
        int64_t now = bench_now_ns();
        if (n == 1) {
            atomic_store_explicit(&w->first_ns, now, memory_order_relaxed);
        }
        atomic_store_explicit(&w->last_ns, now, memory_order_relaxed);
        atomic_store_explicit(&w->n, n, memory_order_release);
        if (count_progress) {
            bench_progress_add(1);
        }
        if (n == 1 || t == r->limit) {
            notify(r);
        }
    }
    atomic_store_explicit(&w->finished, true, memory_order_release);
    notify(r);
    return NULL;
}

static int responders_start(rr *r) {
    const bench_cfg *cfg = r->cfg;
    bool group = r->nresp > 1;
    for (unsigned i = 0; i < r->nresp; i++) {
        responder *w = &r->resp[i];
        rift_error err;
        w->r = r;
        if (bench_connect(cfg, &w->client) != 0) {
            return -1;
        }
        if (rift_client_subscribe(w->client, cfg->subject, cfg->subject_len,
                                  group ? RESPONDER_QUEUE : NULL,
                                  group ? strlen(RESPONDER_QUEUE) : 0, &w->sub,
                                  &err) != 0) {
            fprintf(stderr, "rift bench: subscribe %s: %s\n", cfg->subject,
                    err.text);
            return -1;
        }
        if (rift_client_publisher_open(w->client, &w->pub, &err) != 0) {
            fprintf(stderr, "rift bench: publisher: %s\n", err.text);
            return -1;
        }
        if (bench_thread_start(&w->thread, responder_main, w) != 0) {
            return -1;
        }
        w->started = true;
    }
    return 0;
}

static uint64_t answered(const rr *r) {
    uint64_t t = 0;
    for (unsigned i = 0; i < r->nresp; i++) {
        t += atomic_load_explicit(&r->resp[i].n, memory_order_acquire);
    }
    return t;
}

static bool responders_finished(const rr *r) {
    for (unsigned i = 0; i < r->nresp; i++) {
        if (!atomic_load_explicit(&r->resp[i].finished, memory_order_acquire)) {
            return false;
        }
    }
    return true;
}

/* ---- Requesters ---- */

static void *requester_main(void *arg) {
    requester *w = arg;
    rr *r = w->r;
    const bench_cfg *cfg = r->cfg;
    uint64_t tmo = cfg->timeout_ns / 1000000;
    tmo = tmo < 1 ? 1
          : tmo > RIFT_CLIENT_REQUEST_TIMEOUT_MAX
              ? RIFT_CLIENT_REQUEST_TIMEOUT_MAX
              : tmo;
    rift_error err;
    rift_msg *m;
    /* Warm-up as the original: up to 1,000 unmeasured round trips. */
    uint64_t warm = w->count / 10 < 1000 ? w->count / 10 : 1000;
    for (uint64_t j = 0; j < warm; j++) {
        if (rift_client_request(w->client, cfg->subject, cfg->subject_len,
                                w->payload, cfg->size, tmo * RIFT_MSEC, &m,
                                &err) != 0) {
            break;
        }
        rift_msg_unref(m);
    }
    if (!bench_gate_pass(&r->gate)) {
        return NULL;
    }
    for (uint64_t j = 0; j < w->count; j++) {
        int64_t s = bench_now_ns();
        if (rift_client_request(w->client, cfg->subject, cfg->subject_len,
                                w->payload, cfg->size, tmo * RIFT_MSEC, &m,
                                &err) != 0) {
            bench_note_error("request", &err);
            w->failed++;
            continue;
        }
        w->lat[w->nlat++] = bench_now_ns() - s;
        rift_msg_unref(m);
        if ((j & (BENCH_PROGRESS_STEP - 1)) == BENCH_PROGRESS_STEP - 1) {
            bench_progress_add(BENCH_PROGRESS_STEP);
        }
    }
    w->end_ns = bench_now_ns();
    return NULL;
}

/* ---- Runs ---- */

static int rr_init(rr *r, const bench_cfg *cfg, unsigned nresp,
                   unsigned nreqs) {
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->limit = UINT64_MAX;
    bench_gate_init(&r->gate);
    pthread_mutex_init(&r->mu, NULL);
    bench_cond_init(&r->cv);
    r->nresp = nresp;
    r->nreqs = nreqs;
    r->resp = calloc(nresp > 0 ? nresp : 1, sizeof(*r->resp));
    r->reqs = calloc(nreqs > 0 ? nreqs : 1, sizeof(*r->reqs));
    if (r->resp == NULL || r->reqs == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        return -1;
    }
    return 0;
}

static void rr_free(rr *r) {
    bench_gate_cancel(&r->gate);
    for (unsigned i = 0; r->reqs != NULL && i < r->nreqs; i++) {
        requester *w = &r->reqs[i];
        if (w->started) {
            pthread_join(w->thread, NULL);
        }
        rift_client_del(w->client);
        free(w->payload);
        free(w->lat);
    }
    atomic_store(&r->stop, true);
    for (unsigned i = 0; r->resp != NULL && i < r->nresp; i++) {
        responder *w = &r->resp[i];
        if (w->started) {
            pthread_join(w->thread, NULL);
        }
        if (w->pub != NULL) {
            /* Answers still buffered go out before the close. */
            rift_publisher_flush(w->pub, NULL);
        }
        rift_publisher_close(w->pub);
        rift_client_sub_close(w->sub);
        rift_client_del(w->client);
    }
    free(r->reqs);
    free(r->resp);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    bench_gate_free(&r->gate);
}

int bench_run_req(const bench_cfg *cfg, bench_result *res) {
    rr r;
    int rc = 1;
    if (rr_init(&r, cfg, cfg->responders, cfg->pubs) != 0 ||
        responders_start(&r) != 0) {
        goto done;
    }
    for (unsigned i = 0; i < r.nreqs; i++) {
        requester *w = &r.reqs[i];
        w->r = &r;
        w->count = bench_share(cfg->msgs, r.nreqs, i);
        if (bench_connect(cfg, &w->client) != 0) {
            goto done;
        }
        w->payload = bench_payload_new(cfg->size);
        w->lat = malloc((w->count > 0 ? w->count : 1) * sizeof(*w->lat));
        if (w->payload == NULL || w->lat == NULL) {
            fprintf(stderr, "rift bench: out of memory\n");
            goto done;
        }
    }
    for (unsigned i = 0; i < r.nreqs; i++) {
        requester *w = &r.reqs[i];
        if (bench_thread_start(&w->thread, requester_main, w) != 0) {
            goto done;
        }
        w->started = true;
    }
    res->lat_what = "rtt";
    /* The gate opens once every requester has warmed up. */
    bench_gate_wait_ready(&r.gate, r.nreqs);
    bench_progress_reset(cfg->msgs);
    res->cpu0 = bench_cpu_mark(cfg);
    bench_gate_open(&r.gate);
    int64_t t0 = r.gate.t0, end = t0;
    for (unsigned i = 0; i < r.nreqs; i++) {
        requester *w = &r.reqs[i];
        pthread_join(w->thread, NULL);
        w->started = false;
        end = w->end_ns > end ? w->end_ns : end;
    }
    res->cpu1 = bench_cpu_mark(cfg);
    for (unsigned i = 0; i < r.nreqs; i++) {
        requester *w = &r.reqs[i];
        double secs = (double)(w->end_ns - t0) / 1e9;
        if (bench_result_add_lat(res, w->lat, w->nlat) != 0 ||
            bench_result_add_rate(res, secs > 0 ? (double)w->nlat / secs : 0) !=
                0) {
            fprintf(stderr, "rift bench: out of memory\n");
            goto done;
        }
        res->msgs += w->nlat;
        res->errors += w->failed;
    }
    res->seconds = (double)(end - t0) / 1e9;
    rc = 0;
done:
    rr_free(&r);
    return rc;
}

/* Waits for the first answered request: the measured run starts there, so
 * time spent waiting for requesters is not counted. */
static void wait_first(rr *r) {
    pthread_mutex_lock(&r->mu);
    while (answered(r) == 0 && !responders_finished(r) &&
           !bench_interrupted()) {
        struct timespec ts = bench_deadline(100000000);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Waits for the total, or until nothing moved for the timeout. */
static void wait_total(rr *r, const bench_cfg *cfg) {
    uint64_t last = answered(r);
    int64_t last_change = bench_now_ns();
    pthread_mutex_lock(&r->mu);
    while (answered(r) < cfg->msgs && !responders_finished(r)) {
        struct timespec ts = bench_deadline(50000000);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        uint64_t t = answered(r);
        int64_t now = bench_now_ns();
        if (t != last) {
            last = t;
            last_change = now;
        } else if (now - last_change > (int64_t)cfg->timeout_ns ||
                   bench_interrupted()) {
            fprintf(stderr, "rift bench: requesters stopped early\n");
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* Keeps answering (uncounted) until requests stop for 1 s, so that
 * requesters still running are not left waiting; then joins the
 * responders. */
static void linger_and_stop(rr *r) {
    uint64_t seen = atomic_load(&r->total);
    while (!responders_finished(r) && !bench_interrupted()) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        uint64_t now_total = atomic_load(&r->total);
        if (now_total == seen) {
            break;
        }
        seen = now_total;
    }
    atomic_store(&r->stop, true);
    for (unsigned i = 0; i < r->nresp; i++) {
        pthread_join(r->resp[i].thread, NULL);
        r->resp[i].started = false;
    }
}

/* Sums the responders' counts and rates into res. */
static int sum_responders(rr *r, const bench_cfg *cfg, bench_result *res) {
    int64_t t0 = INT64_MAX, end = 0;
    uint64_t total = 0;
    for (unsigned i = 0; i < r->nresp; i++) {
        responder *w = &r->resp[i];
        uint64_t n = atomic_load(&w->n);
        int64_t first = atomic_load(&w->first_ns);
        int64_t lst = atomic_load(&w->last_ns);
        if (n > 0) {
            t0 = first < t0 ? first : t0;
            end = lst > end ? lst : end;
        }
        double rate =
            lst > first ? (double)n / ((double)(lst - first) / 1e9) : 0;
        if (bench_result_add_rate(res, rate) != 0) {
            return -1;
        }
        total += n;
        res->errors += w->failed;
    }
    res->msgs = total;
    res->errors += total < cfg->msgs ? cfg->msgs - total : 0;
    res->seconds = end > t0 ? (double)(end - t0) / 1e9 : 0;
    return 0;
}

int bench_run_reply(const bench_cfg *cfg, bench_result *res) {
    rr r;
    int rc = 1;
    if (rr_init(&r, cfg, cfg->responders, 0) != 0) {
        goto done;
    }
    r.limit = cfg->msgs;
    if (responders_start(&r) != 0) {
        goto done;
    }
    bench_progress_reset(cfg->msgs);
    fprintf(stderr, "rift bench: answering %llu requests on %s\n",
            (unsigned long long)cfg->msgs, cfg->subject);
    wait_first(&r);
    if (answered(&r) == 0) {
        fprintf(stderr, "rift bench: no request arrived\n");
        goto done;
    }
    res->cpu0 = bench_cpu_mark(cfg);
    wait_total(&r, cfg);
    res->cpu1 = bench_cpu_mark(cfg);
    linger_and_stop(&r);
    if (sum_responders(&r, cfg, res) != 0) {
        goto done;
    }
    rc = 0;
done:
    rr_free(&r);
    return rc;
}
