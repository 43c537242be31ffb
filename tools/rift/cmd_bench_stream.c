/*
 * cmd_bench_stream.c — retained-stream scenarios of `rift bench` (tools
 * layer).
 *
 * stream: --pubs publishers, one connection each, publish to --stream on
 * --subject and count STORED answers. Protocol v1 carries one
 * STREAM_PUBLISH per stream and the client call waits for its answer, so
 * a publisher's in-flight window of --batch W is W threads sharing its
 * connection, each publishing synchronously: at most W unacknowledged,
 * like nats-load's async window. With --batch 1 each publish waits for
 * its STORED and its latency is sampled ("ack").
 *
 * consume: prefill --msgs records (unmeasured, window of 256), open a
 * fresh durable consumer starting at the first of them (max ack pending
 * 65,536, ack wait 30 s), then measure: fetch --batch, hand every
 * delivered sequence to a pool of acknowledging threads (each ACK is its
 * own stream and waits for OK, so the pool is the ack window; the fetch
 * loop never waits for an ack), repeat until all are fetched; the window
 * closes when the last ACK was answered. Latency samples are whole
 * fetches ("fetch").
 */
#include "cmd_bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct spub spub;
typedef struct srun srun;

typedef struct sworker {
    spub *p;
    uint64_t count;
    uint64_t ok;
    uint64_t failed;
    uint64_t min_seq; /* lowest sequence stored, UINT64_MAX if none */
    int64_t *lat;     /* NULL: not sampled */
    size_t nlat;
    int64_t end_ns;
    pthread_t thread;
    bool started;
} sworker;

struct spub {
    srun *r;
    rift_client *client;
    uint8_t *payload; /* shared read-only by the workers */
    sworker *workers;
    unsigned nworkers;
};

struct srun {
    const bench_cfg *cfg;
    bench_gate gate;
    spub *pubs;
    unsigned npubs;
    unsigned nthreads;
};

/* ---- Stream publishers ---- */

static void *sworker_main(void *arg) {
    sworker *w = arg;
    spub *p = w->p;
    const bench_cfg *cfg = p->r->cfg;
    if (!bench_gate_pass(&p->r->gate)) {
        return NULL;
    }
    for (uint64_t j = 0; j < w->count; j++) {
        rift_client_stored st;
        rift_error err;
        int64_t s = w->lat != NULL ? bench_now_ns() : 0;
        if (rift_client_stream_publish(p->client, cfg->stream, cfg->stream_len,
                                       cfg->subject, cfg->subject_len, NULL, 0,
                                       p->payload, cfg->size, &st, &err) != 0) {
            bench_note_error("stream publish", &err);
            w->failed++;
            continue;
        }
        if (w->lat != NULL) {
            w->lat[w->nlat++] = bench_now_ns() - s;
        }
        w->ok++;
        w->min_seq = st.sequence < w->min_seq ? st.sequence : w->min_seq;
        bench_progress_add(1);
    }
    w->end_ns = bench_now_ns();
    return NULL;
}

/* Connects |npubs| publishers and starts |window| workers on each,
 * splitting |msgs| over all; they wait at the gate. */
static int srun_start(srun *r, const bench_cfg *cfg, unsigned npubs,
                      unsigned window, uint64_t msgs, bool sample) {
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    bench_gate_init(&r->gate);
    r->npubs = npubs;
    r->pubs = calloc(npubs, sizeof(*r->pubs));
    if (r->pubs == NULL) {
        goto nomem;
    }
    for (unsigned i = 0; i < npubs; i++) {
        spub *p = &r->pubs[i];
        p->r = r;
        uint64_t share = bench_share(msgs, npubs, i);
        p->nworkers = (uint64_t)window < share ? window : (unsigned)share;
        p->nworkers = p->nworkers > 0 ? p->nworkers : 1;
        p->workers = calloc(p->nworkers, sizeof(*p->workers));
        p->payload = bench_payload_new(cfg->size);
        if (p->workers == NULL || p->payload == NULL) {
            goto nomem;
        }
        for (unsigned k = 0; k < p->nworkers; k++) {
            sworker *w = &p->workers[k];
            w->p = p;
            w->count = bench_share(share, p->nworkers, k);
            w->min_seq = UINT64_MAX;
            if (sample) {
                w->lat =
                    malloc((w->count > 0 ? w->count : 1) * sizeof(*w->lat));
                if (w->lat == NULL) {
                    goto nomem;
                }
            }
        }
        if (bench_connect(cfg, &p->client) != 0) {
            return -1;
        }
    }
    for (unsigned i = 0; i < npubs; i++) {
        spub *p = &r->pubs[i];
        for (unsigned k = 0; k < p->nworkers; k++) {
            sworker *w = &p->workers[k];
            if (bench_thread_start(&w->thread, sworker_main, w) != 0) {
                return -1;
            }
            w->started = true;
            r->nthreads++;
        }
    }
    return 0;
nomem:
    fprintf(stderr, "rift bench: out of memory\n");
    return -1;
}

/* Opens the gate and waits for every worker. */
static void srun_go(srun *r) {
    bench_gate_wait_ready(&r->gate, r->nthreads);
    bench_gate_open(&r->gate);
    for (unsigned i = 0; i < r->npubs; i++) {
        spub *p = &r->pubs[i];
        for (unsigned k = 0; k < p->nworkers; k++) {
            pthread_join(p->workers[k].thread, NULL);
            p->workers[k].started = false;
        }
    }
}

static void srun_free(srun *r) {
    bench_gate_cancel(&r->gate);
    for (unsigned i = 0; r->pubs != NULL && i < r->npubs; i++) {
        spub *p = &r->pubs[i];
        for (unsigned k = 0; p->workers != NULL && k < p->nworkers; k++) {
            if (p->workers[k].started) {
                pthread_join(p->workers[k].thread, NULL);
            }
            free(p->workers[k].lat);
        }
        rift_client_close(p->client);
        free(p->workers);
        free(p->payload);
    }
    free(r->pubs);
    bench_gate_free(&r->gate);
}

int bench_run_stream(const bench_cfg *cfg, bench_result *res) {
    srun r;
    int rc = 1;
    bool sample = cfg->batch <= 1;
    if (srun_start(&r, cfg, cfg->pubs, cfg->batch > 0 ? cfg->batch : 1,
                   cfg->msgs, sample) != 0) {
        goto done;
    }
    res->lat_what = sample ? "ack" : NULL;
    bench_progress_reset(cfg->msgs);
    bench_gate_wait_ready(&r.gate, r.nthreads);
    res->cpu0 = bench_cpu_mark(cfg->server_pid);
    srun_go(&r);
    res->cpu1 = bench_cpu_mark(cfg->server_pid);
    int64_t t0 = r.gate.t0, end = t0;
    for (unsigned i = 0; i < r.npubs; i++) {
        spub *p = &r.pubs[i];
        uint64_t ok = 0;
        int64_t pend = t0;
        for (unsigned k = 0; k < p->nworkers; k++) {
            sworker *w = &p->workers[k];
            ok += w->ok;
            res->errors += w->failed;
            pend = w->end_ns > pend ? w->end_ns : pend;
            if (w->lat != NULL && bench_result_add_lat(res, w->lat, w->nlat)) {
                goto nomem;
            }
        }
        end = pend > end ? pend : end;
        double secs = (double)(pend - t0) / 1e9;
        if (bench_result_add_rate(res, secs > 0 ? (double)ok / secs : 0)) {
            goto nomem;
        }
        res->msgs += ok;
    }
    res->seconds = (double)(end - t0) / 1e9;
    rc = 0;
    goto done;
nomem:
    fprintf(stderr, "rift bench: out of memory\n");
done:
    srun_free(&r);
    return rc;
}

/* ---- Consumer ---- */

typedef struct ackq {
    const bench_cfg *cfg;
    rift_client *client;
    const char *name;
    size_t name_len;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t *seqs;
    uint64_t produced, taken;
    bool closed;
    atomic_uint_fast64_t acked;
    atomic_uint_fast64_t failed;
} ackq;

static void *acker_main(void *arg) {
    ackq *q = arg;
    const bench_cfg *cfg = q->cfg;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (q->taken == q->produced && !q->closed) {
            pthread_cond_wait(&q->cv, &q->mu);
        }
        if (q->taken == q->produced) {
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        uint64_t seq = q->seqs[q->taken++];
        pthread_mutex_unlock(&q->mu);
        rift_error err;
        if (rift_client_ack(q->client, cfg->stream, cfg->stream_len, q->name,
                            q->name_len, seq, &err) != 0) {
            bench_note_error("ack", &err);
            atomic_fetch_add(&q->failed, 1);
        } else {
            atomic_fetch_add_explicit(&q->acked, 1, memory_order_relaxed);
        }
    }
}

/* Prefills |cfg->msgs| records; *first is the lowest sequence stored. */
static int prefill(const bench_cfg *cfg, uint64_t *first) {
    srun r;
    int rc = -1;
    if (srun_start(&r, cfg, 1, BENCH_FETCH_MAX, cfg->msgs, false) != 0) {
        goto done;
    }
    bench_progress_reset(cfg->msgs);
    srun_go(&r);
    uint64_t ok = 0;
    *first = UINT64_MAX;
    for (unsigned k = 0; k < r.pubs[0].nworkers; k++) {
        sworker *w = &r.pubs[0].workers[k];
        ok += w->ok;
        *first = w->min_seq < *first ? w->min_seq : *first;
    }
    if (ok != cfg->msgs) {
        fprintf(stderr, "rift bench: prefill of %llu messages failed\n",
                (unsigned long long)cfg->msgs);
        goto done;
    }
    rc = 0;
done:
    srun_free(&r);
    return rc;
}

int bench_run_consume(const bench_cfg *cfg, bench_result *res) {
    int rc = 1;
    uint64_t first;
    rift_client *c = NULL;
    rift_client_delivery *out = NULL;
    pthread_t *ackers = NULL;
    unsigned nackers = 0;
    ackq q;
    memset(&q, 0, sizeof(q));
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    if (prefill(cfg, &first) != 0 || bench_connect(cfg, &c) != 0) {
        goto done;
    }
    char name[96];
    if (cfg->consumer != NULL) {
        snprintf(name, sizeof(name), "%s", cfg->consumer);
    } else {
        /* Consumers cannot be deleted and reopening needs identical
         * settings, so every run opens its own. */
        snprintf(name, sizeof(name), "bench-%d-%llx", (int)getpid(),
                 (unsigned long long)bench_wall_ns());
    }
    rift_client_consumer_config cc = {
        .filter = cfg->subject,
        .filter_len = cfg->subject_len,
        .start_sequence = first,
        .ack_wait_ms = 30000,
        .max_ack_pending = cfg->max_ack_pending,
    };
    rift_error err;
    if (rift_client_consumer_open(c, cfg->stream, cfg->stream_len, name,
                                  strlen(name), &cc, &err) != 0) {
        fprintf(stderr, "rift bench: consumer %s on %s: %s\n", name,
                cfg->stream, err.text);
        goto done;
    }
    q.cfg = cfg;
    q.client = c;
    q.name = name;
    q.name_len = strlen(name);
    q.seqs = malloc(cfg->msgs * sizeof(*q.seqs));
    out = calloc(BENCH_FETCH_MAX, sizeof(*out));
    size_t lat_cap = (size_t)(cfg->msgs / cfg->batch) + 16, nlat = 0;
    res->lat = malloc(lat_cap * sizeof(*res->lat));
    ackers = calloc(cfg->ack_threads, sizeof(*ackers));
    if (q.seqs == NULL || out == NULL || res->lat == NULL || ackers == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        goto done;
    }
    for (; nackers < cfg->ack_threads; nackers++) {
        if (bench_thread_start(&ackers[nackers], acker_main, &q) != 0) {
            goto done;
        }
    }
    res->lat_what = "fetch";
    bench_progress_reset(cfg->msgs);
    uint64_t got = 0, bad = 0;
    res->cpu0 = bench_cpu_mark(cfg->server_pid);
    int64_t t0 = bench_now_ns(), idle_since = t0;
    while (got < cfg->msgs && !bench_interrupted()) {
        uint64_t want =
            cfg->msgs - got < cfg->batch ? cfg->msgs - got : cfg->batch;
        size_t count = 0;
        int64_t s = bench_now_ns();
        if (rift_client_fetch(c, cfg->stream, cfg->stream_len, name,
                              strlen(name), (uint32_t)want, out, &count,
                              &err) != 0) {
            fprintf(stderr, "rift bench: fetch: %s\n", err.text);
            break;
        }
        int64_t now = bench_now_ns();
        if (count == 0) {
            /* Nothing eligible: max ack pending reached while the acks
             * catch up. Fetch never waits, so back off briefly. */
            if (now - idle_since > (int64_t)cfg->timeout_ns) {
                fprintf(stderr, "rift bench: fetch returned nothing for "
                                "the timeout\n");
                break;
            }
            usleep(200);
            continue;
        }
        idle_since = now;
        if (nlat == lat_cap) {
            int64_t *p = realloc(res->lat, 2 * lat_cap * sizeof(*p));
            if (p == NULL) {
                fprintf(stderr, "rift bench: out of memory\n");
                goto done;
            }
            res->lat = p;
            lat_cap *= 2;
        }
        res->lat[nlat++] = now - s;
        pthread_mutex_lock(&q.mu);
        for (size_t i = 0; i < count; i++) {
            size_t len;
            rift_msg_payload(out[i].msg, &len);
            bad += len != cfg->size;
            if (q.produced < cfg->msgs) {
                q.seqs[q.produced++] = out[i].sequence;
            }
            rift_msg_unref(out[i].msg);
        }
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        got += count;
        bench_progress_add(count);
    }
    res->nlat = nlat;
    /* The barrier: every ACK answered. */
    pthread_mutex_lock(&q.mu);
    q.closed = true;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    for (unsigned i = 0; i < nackers; i++) {
        pthread_join(ackers[i], NULL);
    }
    nackers = 0;
    int64_t end = bench_now_ns();
    res->cpu1 = bench_cpu_mark(cfg->server_pid);
    res->seconds = (double)(end - t0) / 1e9;
    res->msgs = got;
    res->errors = (cfg->msgs - (got < cfg->msgs ? got : cfg->msgs)) + bad +
                  atomic_load(&q.failed);
    if (bench_result_add_rate(res, bench_result_rate(res)) != 0) {
        goto done;
    }
    rc = 0;
done:
    if (nackers > 0) {
        pthread_mutex_lock(&q.mu);
        q.closed = true;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        for (unsigned i = 0; i < nackers; i++) {
            pthread_join(ackers[i], NULL);
        }
    }
    rift_client_close(c);
    free(ackers);
    free(out);
    free(q.seqs);
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&q.mu);
    return rc;
}
