/*
 * cmd_bench_stream.c — retained-stream scenarios of `rift bench` (tools
 * layer).
 *
 * stream: --pubs publishers, one connection each, publish to --stream on
 * --subject and count STORED answers. The publisher keeps W = --batch
 * publications in flight with rift_client_stream_publish_async: it starts
 * W, and every completion (on the client thread) starts the next one, so
 * at most W are unacknowledged, like nats-load's async window, without a
 * thread per publication. With --batch 1 each publish therefore waits
 * for its STORED, and its latency is sampled ("ack"): the completion
 * starts the next publish, as a Go client's goroutine blocked in Publish
 * continues, without waking a thread of ours (two context switches per
 * publish, which made 64 publishers CPU-bound on the client). --ack-wait
 * blocking keeps the other way: a thread per publisher waiting in
 * rift_client_stream_publish.
 *
 * consume: prefill --msgs records (unmeasured, window of 256), open a
 * fresh durable consumer starting at the first of them (max ack pending
 * 65,536, ack wait 30 s), then measure: fetch --batch, queue every
 * delivered sequence for acknowledgement and go on fetching; the acks go
 * out with rift_client_ack_async, at most --ack-threads in flight, each
 * completion starting the next queued one (the fetch loop never waits for
 * an ack); repeat until all are fetched; the window closes when the last
 * ACK was answered. Latency samples are whole fetches ("fetch").
 */
#include "cmd_bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct srun srun;

/* One publisher: its connection, thread and window. */
typedef struct spub {
    srun *r;
    rift_client *client;
    uint8_t *payload; /* read-only while publications are in flight */
    unsigned window;
    uint64_t count;
    pthread_t thread;
    bool started;
    /* Shared with the completion callbacks (client thread), under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t begun;    /* publications started (or given up on) */
    uint64_t finished; /* ... completed or given up on */
    uint64_t ok;
    uint64_t failed;
    uint64_t min_seq; /* lowest sequence stored, UINT64_MAX if none */
    int64_t end_ns;
    /* --batch 1: latency samples (NULL otherwise) and, with callbacks,
     * when the publication in flight started (under mu). */
    int64_t *lat;
    size_t nlat;
    int64_t started_ns;
} spub;

struct srun {
    const bench_cfg *cfg;
    bench_gate gate;
    spub *pubs;
    unsigned npubs;
};

/* ---- Stream publishers ---- */

/* Records one outcome (under p->mu); the last one ends the publisher. */
static void outcome_locked(spub *p, uint64_t n, bool ok, uint64_t seq) {
    p->finished += n;
    if (ok) {
        p->ok += n;
        p->min_seq = seq < p->min_seq ? seq : p->min_seq;
    } else {
        p->failed += n;
    }
    if (p->finished == p->count) {
        p->end_ns = bench_now_ns();
        pthread_cond_broadcast(&p->cv);
    }
}

static void on_stored(void *arg, int rc, const rift_stored *st,
                      const rift_error *err);

/* Starts the next publication, if any is left. Returns false when none
 * was started. */
static bool start_next(spub *p) {
    const bench_cfg *cfg = p->r->cfg;
    pthread_mutex_lock(&p->mu);
    if (p->begun == p->count) {
        pthread_mutex_unlock(&p->mu);
        return false;
    }
    p->begun++;
    if (p->lat != NULL) {
        p->started_ns = bench_now_ns();
    }
    pthread_mutex_unlock(&p->mu);
    rift_error err;
    if (rift_client_stream_publish_async(p->client, cfg->stream,
                                         cfg->stream_len, cfg->subject,
                                         cfg->subject_len, NULL, 0, p->payload,
                                         cfg->size, on_stored, p, &err) == 0) {
        return true;
    }
    /* The connection is gone (or no memory): give up on the rest. */
    bench_note_error("stream publish", &err);
    pthread_mutex_lock(&p->mu);
    uint64_t rest = p->count - p->begun + 1;
    p->begun = p->count;
    outcome_locked(p, rest, false, 0);
    pthread_mutex_unlock(&p->mu);
    return false;
}

static void on_stored(void *arg, int rc, const rift_stored *st,
                      const rift_error *err) {
    spub *p = arg;
    if (rc != 0) {
        bench_note_error("stream publish", err);
    }
    pthread_mutex_lock(&p->mu);
    if (rc == 0 && p->lat != NULL) {
        /* Window 1: this is the only publication in flight. */
        p->lat[p->nlat++] = bench_now_ns() - p->started_ns;
    }
    outcome_locked(p, 1, rc == 0, rc == 0 ? st->sequence : 0);
    pthread_mutex_unlock(&p->mu);
    bench_progress_add(1);
    start_next(p);
}

/* --batch 1 --ack-wait blocking: one blocking publish after the other,
 * each timed. */
static void publish_blocking(spub *p) {
    const bench_cfg *cfg = p->r->cfg;
    for (uint64_t j = 0; j < p->count; j++) {
        rift_stored st;
        rift_error err;
        int64_t s = bench_now_ns();
        int rc = rift_client_stream_publish(
            p->client, cfg->stream, cfg->stream_len, cfg->subject,
            cfg->subject_len, NULL, 0, p->payload, cfg->size, &st, &err);
        if (rc != 0) {
            bench_note_error("stream publish", &err);
        } else if (p->lat != NULL) {
            p->lat[p->nlat++] = bench_now_ns() - s;
        }
        pthread_mutex_lock(&p->mu);
        p->begun++;
        outcome_locked(p, 1, rc == 0, rc == 0 ? st.sequence : 0);
        pthread_mutex_unlock(&p->mu);
        bench_progress_add(1);
    }
}

static void *spub_main(void *arg) {
    spub *p = arg;
    if (!bench_gate_pass(&p->r->gate)) {
        return NULL;
    }
    if (p->r->cfg->ack_blocking && p->window <= 1) {
        publish_blocking(p);
        return NULL;
    }
    for (unsigned k = 0; k < p->window && start_next(p); k++) {
    }
    pthread_mutex_lock(&p->mu);
    while (p->finished < p->count) {
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Connects |npubs| publishers, each with a window of |window| and a share
 * of |msgs|; their threads wait at the gate. */
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
        p->count = bench_share(msgs, npubs, i);
        p->window = window;
        p->min_seq = UINT64_MAX;
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
    }
    for (unsigned i = 0; i < npubs; i++) {
        spub *p = &r->pubs[i];
        p->payload = bench_payload_new(cfg->size);
        if (p->payload == NULL) {
            goto nomem;
        }
        if (sample && window <= 1) {
            p->lat = malloc((p->count > 0 ? p->count : 1) * sizeof(*p->lat));
            if (p->lat == NULL) {
                goto nomem;
            }
        }
        if (bench_connect(cfg, &p->client) != 0) {
            return -1;
        }
    }
    for (unsigned i = 0; i < npubs; i++) {
        spub *p = &r->pubs[i];
        if (bench_thread_start(&p->thread, spub_main, p) != 0) {
            return -1;
        }
        p->started = true;
    }
    return 0;
nomem:
    fprintf(stderr, "rift bench: out of memory\n");
    return -1;
}

/*
 * Fails at once when the stream does not exist, instead of after every
 * publish failed: an ACK of sequence 0 looks the stream up first (§2.9
 * ACK 2) and changes nothing (no sequence 0 is ever pending). Other
 * answers are left for the run itself to meet.
 */
static int stream_probe(const bench_cfg *cfg) {
    rift_client *c;
    if (bench_connect(cfg, &c) != 0) {
        return -1;
    }
    static const char probe[] = "rift-bench-probe";
    rift_error err;
    int rc = rift_client_ack(c, cfg->stream, cfg->stream_len, probe,
                             sizeof(probe) - 1, 0, &err);
    rift_client_del(c);
    if (rc != 0 && strcmp(err.text, "unknown stream") == 0) {
        fprintf(stderr,
                "rift bench: unknown stream \"%.*s\" (--stream); rift stream "
                "info lists the streams\n",
                (int)cfg->stream_len, cfg->stream);
        return -1;
    }
    return 0;
}

/* Opens the gate and waits for every publisher. */
static void srun_go(srun *r) {
    bench_gate_wait_ready(&r->gate, r->npubs);
    bench_gate_open(&r->gate);
    for (unsigned i = 0; i < r->npubs; i++) {
        pthread_join(r->pubs[i].thread, NULL);
        r->pubs[i].started = false;
    }
}

static void srun_free(srun *r) {
    bench_gate_cancel(&r->gate);
    for (unsigned i = 0; r->pubs != NULL && i < r->npubs; i++) {
        spub *p = &r->pubs[i];
        if (p->started) {
            pthread_join(p->thread, NULL);
        }
        /* Completes (fails) whatever is still in flight before the
         * publisher's state goes. */
        rift_client_del(p->client);
        free(p->lat);
        free(p->payload);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
    }
    free(r->pubs);
    bench_gate_free(&r->gate);
}

int bench_run_stream(const bench_cfg *cfg, bench_result *res) {
    srun r;
    int rc = 1;
    bool sample = cfg->batch <= 1;
    if (stream_probe(cfg) != 0) {
        return 1;
    }
    if (srun_start(&r, cfg, cfg->pubs, cfg->batch > 0 ? cfg->batch : 1,
                   cfg->msgs, sample) != 0) {
        goto done;
    }
    res->lat_what = sample ? "ack" : NULL;
    bench_progress_reset(cfg->msgs);
    bench_gate_wait_ready(&r.gate, r.npubs);
    res->cpu0 = bench_cpu_mark(cfg);
    srun_go(&r);
    res->cpu1 = bench_cpu_mark(cfg);
    int64_t t0 = r.gate.t0, end = t0;
    for (unsigned i = 0; i < r.npubs; i++) {
        spub *p = &r.pubs[i];
        res->errors += p->failed;
        if (p->lat != NULL && bench_result_add_lat(res, p->lat, p->nlat)) {
            goto nomem;
        }
        int64_t pend = p->end_ns > t0 ? p->end_ns : t0;
        end = pend > end ? pend : end;
        double secs = (double)(pend - t0) / 1e9;
        if (bench_result_add_rate(res, secs > 0 ? (double)p->ok / secs : 0)) {
            goto nomem;
        }
        res->msgs += p->ok;
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

/* The acknowledgements: a queue of sequences the fetch loop fills, sent
 * with at most |window| in flight; each completion starts the next. */
typedef struct ackq {
    const bench_cfg *cfg;
    rift_client *client;
    const char *name;
    size_t name_len;
    unsigned window;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t *seqs;
    uint64_t produced, taken;
    unsigned inflight;
    uint64_t acked;
    uint64_t failed;
} ackq;

static void on_acked(void *arg, int rc, const rift_error *err);

/* Starts queued acks while the window allows. */
static void ack_pump(ackq *q) {
    const bench_cfg *cfg = q->cfg;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        if (q->taken == q->produced || q->inflight >= q->window) {
            pthread_mutex_unlock(&q->mu);
            return;
        }
        uint64_t seq = q->seqs[q->taken++];
        q->inflight++;
        pthread_mutex_unlock(&q->mu);
        rift_error err;
        if (rift_client_ack_async(q->client, cfg->stream, cfg->stream_len,
                                  q->name, q->name_len, seq, on_acked, q,
                                  &err) != 0) {
            bench_note_error("ack", &err);
            pthread_mutex_lock(&q->mu);
            q->inflight--;
            q->failed++;
            pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->mu);
        }
    }
}

static void on_acked(void *arg, int rc, const rift_error *err) {
    ackq *q = arg;
    if (rc != 0) {
        bench_note_error("ack", err);
    }
    pthread_mutex_lock(&q->mu);
    q->inflight--;
    if (rc == 0) {
        q->acked++;
    } else {
        q->failed++;
    }
    if (q->inflight == 0 && q->taken == q->produced) {
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    ack_pump(q);
}

/* Waits until every queued ack was answered. */
static void ack_drain(ackq *q) {
    pthread_mutex_lock(&q->mu);
    while (q->inflight > 0 || q->taken < q->produced) {
        pthread_cond_wait(&q->cv, &q->mu);
    }
    pthread_mutex_unlock(&q->mu);
}

int bench_stream_prefill(const bench_cfg *cfg, uint64_t *first) {
    srun r;
    int rc = -1;
    if (stream_probe(cfg) != 0) {
        return -1;
    }
    if (srun_start(&r, cfg, 1, BENCH_FETCH_MAX, cfg->msgs, false) != 0) {
        goto done;
    }
    bench_progress_reset(cfg->msgs);
    srun_go(&r);
    *first = r.pubs[0].min_seq;
    if (r.pubs[0].ok != cfg->msgs) {
        fprintf(stderr, "rift bench: prefill of %llu messages failed\n",
                (unsigned long long)cfg->msgs);
        goto done;
    }
    rc = 0;
done:
    srun_free(&r);
    return rc;
}

int bench_consumer_open(const bench_cfg *cfg, rift_client *c, uint64_t first,
                        char *name, size_t len) {
    if (cfg->consumer != NULL) {
        snprintf(name, len, "%s", cfg->consumer);
    } else {
        /* Consumers cannot be deleted and reopening needs identical
         * settings, so every run opens its own. */
        snprintf(name, len, "bench-%d-%llx", (int)getpid(),
                 (unsigned long long)bench_wall_ns());
    }
    rift_consumer_config cc = {
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
        return -1;
    }
    return 0;
}

/* Appends one fetch latency, doubling res->lat when it is full. */
static int lat_push(bench_result *res, size_t *nlat, size_t *cap, int64_t ns) {
    if (*nlat == *cap) {
        int64_t *p = realloc(res->lat, 2 * *cap * sizeof(*p));
        if (p == NULL) {
            fprintf(stderr, "rift bench: out of memory\n");
            return -1;
        }
        res->lat = p;
        *cap *= 2;
    }
    res->lat[(*nlat)++] = ns;
    return 0;
}

/* Hands the fetched sequences to the ack threads and drops the messages;
 * returns how many payloads had the wrong size. */
static uint64_t take_batch(ackq *q, rift_client_delivery *out, size_t count) {
    uint64_t bad = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < count; i++) {
        size_t len;
        rift_msg_payload(out[i].msg, &len);
        bad += len != q->cfg->size;
        if (q->produced < q->cfg->msgs) {
            q->seqs[q->produced++] = out[i].sequence;
        }
        rift_msg_unref(out[i].msg);
    }
    pthread_mutex_unlock(&q->mu);
    return bad;
}

/* Fetches until cfg->msgs arrived, fetch fails, nothing comes for the
 * timeout or the user interrupts; -1 only when out of memory. */
static int fetch_all(ackq *q, rift_client_delivery *out, bench_result *res,
                     size_t lat_cap, uint64_t *got, uint64_t *bad) {
    const bench_cfg *cfg = q->cfg;
    size_t nlat = 0;
    rift_error err;
    int64_t idle_since = bench_now_ns();
    while (*got < cfg->msgs && !bench_interrupted()) {
        uint64_t want =
            cfg->msgs - *got < cfg->batch ? cfg->msgs - *got : cfg->batch;
        size_t count = 0;
        int64_t s = bench_now_ns();
        if (rift_client_fetch(q->client, cfg->stream, cfg->stream_len, q->name,
                              q->name_len, (uint32_t)want, out, &count,
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
        if (lat_push(res, &nlat, &lat_cap, now - s) != 0) {
            return -1;
        }
        *bad += take_batch(q, out, count);
        ack_pump(q);
        *got += count;
        bench_progress_add(count);
    }
    res->nlat = nlat;
    return 0;
}

int bench_run_consume(const bench_cfg *cfg, bench_result *res) {
    int rc = 1;
    uint64_t first;
    rift_client *c = NULL;
    rift_client_delivery *out = NULL;
    ackq q;
    memset(&q, 0, sizeof(q));
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    char name[96];
    if (bench_stream_prefill(cfg, &first) != 0 || bench_connect(cfg, &c) != 0 ||
        bench_consumer_open(cfg, c, first, name, sizeof(name)) != 0) {
        goto done;
    }
    q.cfg = cfg;
    q.client = c;
    q.name = name;
    q.name_len = strlen(name);
    q.window = cfg->ack_threads;
    q.seqs = malloc(cfg->msgs * sizeof(*q.seqs));
    out = calloc(BENCH_FETCH_MAX, sizeof(*out));
    size_t lat_cap = (size_t)(cfg->msgs / cfg->batch) + 16;
    res->lat = malloc(lat_cap * sizeof(*res->lat));
    if (q.seqs == NULL || out == NULL || res->lat == NULL) {
        fprintf(stderr, "rift bench: out of memory\n");
        goto done;
    }
    res->lat_what = "fetch";
    bench_progress_reset(cfg->msgs);
    uint64_t got = 0, bad = 0;
    res->cpu0 = bench_cpu_mark(cfg);
    int64_t t0 = bench_now_ns();
    if (fetch_all(&q, out, res, lat_cap, &got, &bad) != 0) {
        goto done;
    }
    /* The barrier: every ACK answered. */
    ack_drain(&q);
    int64_t end = bench_now_ns();
    res->cpu1 = bench_cpu_mark(cfg);
    res->seconds = (double)(end - t0) / 1e9;
    res->msgs = got;
    res->errors =
        (cfg->msgs - (got < cfg->msgs ? got : cfg->msgs)) + bad + q.failed;
    if (bench_result_add_rate(res, bench_result_rate(res)) != 0) {
        goto done;
    }
    rc = 0;
done:
    /* Completes every ack still in flight before the queue goes. */
    rift_client_del(c);
    free(out);
    free(q.seqs);
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&q.mu);
    return rc;
}
