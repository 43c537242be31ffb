/*
 * test_cluster_streams.c — replicated streams (replicas = 3) through the
 * backbone's JetStream (integration tests, docs/cluster.md "Replicated
 * streams"): three nats-servers with JetStream and routes, three riftd on
 * loopback, one stream "orders" with replicas = 3. STORED carries
 * JetStream's sequence; consumers opened, fetched and acked on other nodes;
 * many publishes in flight from one client (all STORED, each sequence
 * once, each record the publish its STORED named); a retried publish
 * deduplicated by its message id; ack-wait redelivery
 * with delivery counts, max ack pending held cluster-wide, a start
 * sequence; two identities with the same consumer name isolated; 10,000
 * publishes while a nats-server and a riftd are killed -9 and restarted
 * (every STORED sequence readable afterwards, none reused) and the RSS of
 * the six processes bounded; publishes on one node while the nats-server
 * leading the JetStream stream is killed -9 (libnats asks JetStream which
 * server leads; a new one is elected, nothing STORED is lost). Every wait polls
 * a condition (status, fetch) with a deadline.
 */
// labels: threads slow
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "cluster_client.h"
#include "cluster_fix.h"
#include "rift/client.h"
#include "test.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Generous bounds under ASan, whose quarantine (256 MiB by default) keeps
 * freed memory resident: riftd r1 measured ~200 MiB after this test's
 * 20,000 stream operations, 75 MiB with a 16 MiB quarantine. */
#define RIFTD_RSS_MAX_KIB (400L * 1024)
#define NS_RSS_MAX_KIB    (200L * 1024)

static void pause_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The cluster with JetStream and "orders", its stream ready everywhere. */
static bool start(cluster_fix *f, bool second_principal) {
    cluster_fix_opts o = {.jetstream = true,
                          .streams = CL_ORDERS_LUA,
                          .second_principal = second_principal};
    return cluster_fix_start_opts(f, &o) &&
           cluster_fix_wait_replicated(f, CL_READY_MS);
}

static int open_consumer(rift_client *c, const char *name, uint64_t start,
                         uint64_t ack_wait_ms, uint32_t max_pending,
                         rift_error *err) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "orders.>"; /* '>' would need the control flag */
    cfg.filter_len = strlen(cfg.filter);
    cfg.start_sequence = start;
    cfg.ack_wait_ms = ack_wait_ms;
    cfg.max_ack_pending = max_pending;
    return rift_client_consumer_open(c, CL_STREAM, strlen(CL_STREAM), name,
                                     strlen(name), &cfg, err);
}

static bool open1(rift_client *c, const char *name, uint64_t start,
                  uint64_t ack_wait_ms, uint32_t max_pending) {
    rift_error err = {0};
    if (open_consumer(c, name, start, ack_wait_ms, max_pending, &err) != 0) {
        fprintf(stderr, "  consumer open %s: %s\n", name, err.text);
        return false;
    }
    return true;
}

static long long repl_counter(cluster_fix *f, int i, const char *key) {
    json_t *r = cluster_fix_replicated(f, i);
    long long v = r ? json_integer_value(json_object_get(r, key)) : -1;
    json_decref(r);
    return v;
}

/* ---- Publish on one node, consume on the others ---- */

static void publish_fetch_ack_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c, *c3 = f->n[2].c;
    /* STORED carries JetStream's sequence: 1, 2, 3 in a new stream. */
    CHECK_EQ_U64(cl_spub1(c1, "m0"), 1);
    CHECK_EQ_U64(cl_spub1(c1, "m1"), 2);
    CHECK_EQ_U64(cl_spub1(c1, "m2"), 3);
    /* A subject outside the stream is refused before the backbone. */
    rift_error err = {0};
    CHECK(cl_spub(c1, "other.x", "no", NULL, &err) != 0);
    CHECK(strstr(err.text, "subject does not match this stream") != NULL);

    CHECK(open1(c2, "reader", 1, 30000, 128));
    cl_rec r[256];
    int n = cl_fetch(c2, "reader", 10, 0, r);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n; i++) {
        char want[16];
        snprintf(want, sizeof want, "m%d", i);
        CHECK_EQ_U64(r[i].seq, (uint64_t)i + 1);
        CHECK_EQ_STR(r[i].payload, want);
        CHECK_EQ_STR(r[i].subject, "orders.created");
        CHECK_EQ_INT(r[i].count, 1);
        CHECK(r[i].ts > 0);
        CHECK(cl_ack1(c2, "reader", r[i].seq));
    }
    /* The same durable from node 3: reopened with the same settings, and
     * everything node 2 acked is gone cluster-wide. */
    CHECK(open1(c3, "reader", 1, 30000, 128));
    CHECK_EQ_INT(cl_fetch(c3, "reader", 10, 0, r), 0);
    CHECK_EQ_U64(cl_spub1(c1, "m3"), 4);
    n = cl_fetch(c3, "reader", 10, 0, r);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_U64(r[0].seq, 4);
    CHECK(cl_ack1(c3, "reader", 4));
    /* Acking twice: no longer pending. */
    CHECK(cl_ack(c3, "reader", 4, &err) != 0);
    CHECK(strstr(err.text, "not pending") != NULL);
    /* Reopening with other settings is the store's error. */
    CHECK(open_consumer(c3, "reader", 1, 5000, 128, &err) != 0);
    CHECK(strstr(err.text, "different settings") != NULL);
    /* An unknown consumer says so, on any node. */
    CHECK(cl_fetch(c2, "nobody", 1, 0, r) < 0);

    json_t *st = cluster_fix_replicated(f, 0);
    CHECK(st != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "published")), 4);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "last_sequence")), 4);
    CHECK(json_is_true(json_object_get(st, "ready")));
    json_decref(st);
    CHECK(repl_counter(f, 1, "acked") == 3);
    CHECK(repl_counter(f, 2, "acked") == 1);
}

RIFT_TEST(publish_on_one_node_fetch_and_ack_on_others) {
    cluster_fix f;
    bool up = start(&f, false);
    if (up) {
        publish_fetch_ack_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- Many publishes in flight from one client ---- */

enum {
    N_WIN = 3000
};

typedef struct win {
    uint64_t seq[N_WIN];
    int status[N_WIN];
    atomic_size_t done;
} win;

typedef struct win_arg {
    win *w;
    size_t i;
} win_arg;

static void win_stored(void *user_data, int status, const rift_stored *stored,
                       const rift_error *err) {
    win_arg *a = user_data;
    (void)err;
    a->w->status[a->i] = status;
    a->w->seq[a->i] = status == 0 ? stored->sequence : 0;
    atomic_fetch_add(&a->w->done, 1);
}

static bool win_done(void *arg) {
    return atomic_load(&((win *)arg)->done) == N_WIN;
}

/* Every publish submitted at once: far more in flight than the 32 worker
 * threads that used to bound them. All STORED, the sequences 1..N_WIN
 * each once, and the record at seq[i] is publish i. */
static void window_body(cluster_fix *f, win *w, win_arg *a) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    for (size_t i = 0; i < N_WIN; i++) {
        char p[16];
        snprintf(p, sizeof p, "w%zu", i);
        a[i] = (win_arg){w, i};
        rift_error err = {0};
        int rc = rift_client_stream_publish_async(
            c1, CL_STREAM, strlen(CL_STREAM), "orders.created", 14, NULL, 0,
            (const uint8_t *)p, strlen(p), win_stored, &a[i], &err);
        CHECK_MSG(rc == 0, "submit %zu: %s", i, err.text);
        if (rc != 0) {
            return;
        }
    }
    CHECK(rift_test_wait_until(win_done, w, 60000));
    if (!win_done(w)) {
        return;
    }
    bool *seen = calloc(N_WIN + 1, sizeof *seen);
    CHECK(seen != NULL);
    size_t ok = 0, distinct = 0;
    for (size_t i = 0; seen != NULL && i < N_WIN; i++) {
        if (w->status[i] != 0) {
            continue;
        }
        ok++;
        if (w->seq[i] >= 1 && w->seq[i] <= N_WIN && !seen[w->seq[i]]) {
            seen[w->seq[i]] = true;
            distinct++;
        }
    }
    CHECK_EQ_U64(ok, N_WIN);
    CHECK_EQ_U64(distinct, N_WIN);
    CHECK_EQ_INT(repl_counter(f, 0, "published"), N_WIN);
    CHECK_EQ_INT(repl_counter(f, 0, "last_sequence"), N_WIN);
    /* Read back from node 2 in sequence order: record k is the publish
     * whose STORED said k. */
    uint64_t *who = calloc(N_WIN + 1, sizeof *who);
    CHECK(who != NULL);
    for (size_t i = 0; who != NULL && i < N_WIN; i++) {
        if (w->seq[i] >= 1 && w->seq[i] <= N_WIN) {
            who[w->seq[i]] = i;
        }
    }
    CHECK(open1(c2, "win", 1, 60000, N_WIN));
    cl_rec r[256];
    uint64_t next = 1;
    int64_t end = cl_now_ms() + CL_WAIT_MS;
    while (who != NULL && next <= N_WIN && cl_now_ms() < end) {
        int n = cl_fetch(c2, "win", 256, 0, r);
        CHECK(n >= 0);
        if (n < 0) {
            break;
        }
        for (int k = 0; k < n; k++) {
            char want[24];
            CHECK_EQ_U64(r[k].seq, next);
            if (r[k].seq > N_WIN) {
                break;
            }
            snprintf(want, sizeof want, "w%" PRIu64, who[r[k].seq]);
            CHECK_EQ_STR(r[k].payload, want);
            next = r[k].seq + 1;
        }
    }
    CHECK_EQ_U64(next, (uint64_t)N_WIN + 1);
    free(who);
    free(seen);
}

RIFT_TEST(many_publishes_in_flight_from_one_client) {
    cluster_fix f;
    win *w = calloc(1, sizeof *w);
    win_arg *a = calloc(N_WIN, sizeof *a);
    CHECK(w != NULL && a != NULL);
    bool up = w != NULL && a != NULL && start(&f, false);
    if (up) {
        window_body(&f, w, a);
    }
    /* Stopping the cluster closes c1: every callback has run after it. */
    bool down = w == NULL || a == NULL || cluster_fix_stop(&f);
    free(a);
    free(w);
    CHECK(up);
    CHECK(down);
}

/* ---- A retried publish is stored once ---- */

typedef struct pub_job {
    rift_client *c;
    uint64_t seq;
    int rc;
    rift_error err;
} pub_job;

static void *pub_thread(void *arg) {
    pub_job *j = arg;
    j->rc = cl_spub(j->c, "orders.created", "dedup", &j->seq, &j->err);
    return NULL;
}

static bool retried(void *arg) {
    return repl_counter(arg, 0, "retries") >= 1;
}

static void dedup_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    CHECK_EQ_U64(cl_spub1(c1, "first"), 1);
    /* r1's nats-server stops answering: the first try is written to it
     * and times out (2 s); riftd tries again with the same message id.
     * Resumed (before a Raft election would start), the server stores the
     * first try and answers the second as a duplicate of it. */
    CHECK(kill(f->n[0].ns.pid, SIGSTOP) == 0);
    pub_job j = {.c = c1};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pub_thread, &j) == 0);
    bool again = rift_test_wait_until(retried, f, CL_WAIT_MS);
    kill(f->n[0].ns.pid, SIGCONT);
    pthread_join(t, NULL);
    CHECK_MSG(again, "riftd did not retry the publish");
    CHECK_MSG(j.rc == 0, "publish: %s", j.err.text);
    CHECK_EQ_U64(j.seq, 2);
    CHECK(repl_counter(f, 0, "duplicates") >= 1);
    CHECK_EQ_U64(cl_spub1(c1, "last"), 3);
    CHECK(open1(c2, "all", 1, 30000, 128));
    cl_rec r[256];
    int n = cl_fetch(c2, "all", 10, 0, r);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(r[0].payload, "first");
    CHECK_EQ_STR(r[1].payload, "dedup");
    CHECK_EQ_STR(r[2].payload, "last");
}

RIFT_TEST(retried_publish_is_deduplicated) {
    cluster_fix f;
    bool up = start(&f, false);
    if (up) {
        dedup_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- A node without its backbone ---- */

static bool backbone_is(cluster_fix *f, int i, bool up) {
    json_t *cl = cluster_fix_cluster(f, i);
    bool is =
        cl != NULL && json_is_true(json_object_get(cl, "connected")) == up;
    json_decref(cl);
    return is;
}

static bool r1_down(void *arg) {
    return backbone_is(arg, 0, false);
}

static bool r1_up(void *arg) {
    return backbone_is(arg, 0, true);
}

static void backbone_down_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    CHECK_EQ_U64(cl_spub1(c1, "before"), 1);
    CHECK(open1(c1, "r", 1, 30000, 128));
    cluster_fix_ns_kill(f, 0);
    CHECK(rift_test_wait_until(r1_down, f, CL_WAIT_MS));
    /* Cluster-only operations fail at once, and say why. */
    rift_error err = {0};
    int64_t t0 = cl_now_ms();
    CHECK(cl_spub(c1, "orders.created", "lost", NULL, &err) != 0);
    CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL, "publish: %s",
              err.text);
    cl_rec r[256];
    rift_client_delivery d[1];
    size_t n = 0;
    CHECK(rift_client_fetch(c1, CL_STREAM, strlen(CL_STREAM), "r", 1, 1, d, &n,
                            &err) != 0);
    CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL, "fetch: %s",
              err.text);
    CHECK_MSG(cl_now_ms() - t0 < 5000, "took %lld ms",
              (long long)(cl_now_ms() - t0));
    /* The other nodes keep the stream (2 of 3 servers are a quorum). */
    CHECK_EQ_U64(cl_spub1(c2, "during"), 2);
    /* Back: riftd reconnects by itself and the stream works again. */
    CHECK(cluster_fix_ns_start(f, 0));
    CHECK(rift_test_wait_until(r1_up, f, CL_WAIT_MS));
    uint64_t seq = 0;
    int64_t end = cl_now_ms() + CL_WAIT_MS;
    while (seq == 0 && cl_now_ms() < end) {
        /* The restarted server may still be catching up: retry. */
        if (cl_spub(c1, "orders.created", "after", &seq, &err) != 0) {
            pause_ms(100);
        }
    }
    CHECK_MSG(seq == 3, "after the restart: sequence %llu (%s)",
              (unsigned long long)seq, err.text);
    /* The consumer's records come once its JetStream replica caught up
     * (a fetch waits 100 ms): fetch until all three are there. */
    int k = 0;
    end = cl_now_ms() + CL_WAIT_MS;
    while (k < 3 && cl_now_ms() < end) {
        int got = cl_fetch(c1, "r", 10, 0, r + k);
        k += got > 0 ? got : 0;
    }
    CHECK_EQ_INT(k, 3);
    CHECK_EQ_STR(r[0].payload, "before");
    CHECK_EQ_STR(r[1].payload, "during");
    CHECK_EQ_STR(r[2].payload, "after");
}

RIFT_TEST(backbone_down_clear_errors_then_recovers) {
    cluster_fix f;
    bool up = start(&f, false);
    if (up) {
        backbone_down_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- Ack wait, max ack pending, start sequence ---- */

static void redelivery_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c, *c3 = f->n[2].c;
    for (int i = 0; i < 5; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%d", i);
        CHECK_EQ_U64(cl_spub1(c1, p), (uint64_t)i + 1);
    }
    CHECK(open1(c2, "slow", 1, 1000, 2));
    cl_rec r[256];
    /* Max ack pending 2 holds cluster-wide: node 3 gets nothing more. */
    int n = cl_fetch(c2, "slow", 5, 0, r);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(r[0].seq, 1);
    CHECK_EQ_U64(r[1].seq, 2);
    CHECK_EQ_INT(r[0].count, 1);
    CHECK_EQ_INT(cl_fetch(c3, "slow", 5, 0, r), 0);
    CHECK(cl_ack1(c2, "slow", 1));
    /* Sequence 2 is not acked: after the ack wait JetStream delivers it
     * again, with delivery count 2, to whichever node fetches. */
    bool redelivered = false;
    int64_t end = cl_now_ms() + CL_WAIT_MS;
    while (!redelivered && cl_now_ms() < end) {
        n = cl_fetch(c3, "slow", 5, 0, r);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++) {
            CHECK(r[i].seq >= 2);
            if (r[i].seq == 2) {
                CHECK_EQ_INT(r[i].count, 2);
                redelivered = true;
            } else {
                CHECK_EQ_INT(r[i].count, 1);
            }
            CHECK(cl_ack1(c3, "slow", r[i].seq));
        }
        if (n == 0) {
            pause_ms(50); /* polling the redelivery */
        }
    }
    CHECK_MSG(redelivered, "sequence 2 was not redelivered");
    /* A sequence node 3 never fetched is not pending there. */
    rift_error err = {0};
    CHECK(cl_ack(c3, "slow", 99, &err) != 0);
    CHECK(strstr(err.text, "not pending") != NULL);

    /* A start sequence: the consumer begins at record 4. */
    CHECK(open1(c3, "late", 4, 30000, 128));
    n = cl_fetch(c3, "late", 10, 0, r);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(r[0].seq, 4);
    CHECK_EQ_U64(r[1].seq, 5);
    CHECK_EQ_STR(r[0].payload, "m3");
}

/* ---- NAK, TERM, PROGRESS (extension opcodes) ---- */

static void settle_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    for (int i = 0; i < 3; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%d", i);
        CHECK_EQ_U64(cl_spub1(c1, p), (uint64_t)i + 1);
    }
    const char *name = "settle";
    size_t nl = strlen(name);
    CHECK(open1(c2, name, 1, 1000, 128));
    cl_rec r[256];
    CHECK_EQ_INT(cl_fetch(c2, name, 10, 0, r), 3);
    rift_error err = {0};
    /* PROGRESS keeps 3 pending, the ACK that follows settles it. */
    CHECK_OK(rift_client_in_progress(c2, CL_STREAM, strlen(CL_STREAM), name, nl,
                                     3, &err));
    CHECK(cl_ack1(c2, name, 3));
    CHECK_OK(
        rift_client_term(c2, CL_STREAM, strlen(CL_STREAM), name, nl, 2, &err));
    CHECK_OK(rift_client_nak(c2, CL_STREAM, strlen(CL_STREAM), name, nl, 1, 0,
                             &err));
    /* The NAK'd record comes back at once; the TERM'd one never, also not
     * after its ack wait (1 s): watched for 2.5 s. */
    bool again = false, termed = false, acked_back = false;
    int64_t end = cl_now_ms() + 2500;
    while (cl_now_ms() < end) {
        int n = cl_fetch(c2, name, 10, 0, r);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++) {
            again = again || (r[i].seq == 1 && r[i].count >= 2);
            termed = termed || r[i].seq == 2;
            acked_back = acked_back || r[i].seq == 3;
        }
        if (n == 0) {
            pause_ms(50);
        }
    }
    CHECK_MSG(again, "the NAK'd record was not delivered again");
    CHECK_MSG(!termed, "the TERM'd record was delivered again");
    CHECK_MSG(!acked_back, "the acked record was delivered again");
    /* A sequence this node does not hold is not pending. */
    CHECK(rift_client_term(c2, CL_STREAM, strlen(CL_STREAM), name, nl, 99,
                           &err) != 0);
    CHECK(strstr(err.text, "not pending") != NULL);

    /* CONSUMER_DELETE from another node removes the JetStream durable:
     * node 2's binding says so, a second delete too; opened again under
     * the name it starts over, with every record new. */
    rift_client *c3 = f->n[2].c;
    CHECK_OK(rift_client_consumer_delete(c3, CL_STREAM, strlen(CL_STREAM), name,
                                         nl, &err));
    CHECK(cl_fetch(c2, name, 10, 0, r) < 0);
    CHECK(rift_client_consumer_delete(c3, CL_STREAM, strlen(CL_STREAM), name,
                                      nl, &err) != 0);
    CHECK(strstr(err.text, "consumer does not exist") != NULL);
    CHECK(open1(c2, name, 1, 30000, 128));
    int n = cl_fetch(c2, name, 10, 0, r);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_U64(r[0].seq, 1);
    CHECK_EQ_INT(r[0].count, 1);
    CHECK(cl_ack1(c2, name, 1));
}

RIFT_TEST(nak_term_progress_delete) {
    cluster_fix f;
    bool up = start(&f, false);
    if (up) {
        settle_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

RIFT_TEST(ack_wait_redelivery_max_pending_and_start) {
    cluster_fix f;
    bool up = start(&f, false);
    if (up) {
        redelivery_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- Two identities, one consumer name ---- */

static void identities_body(cluster_fix *f) {
    rift_client *app = f->n[0].c, *w = NULL;
    CHECK(riftd_fix_connect(&f->n[1].r, RIFTD_FIX_TOKEN2, &w));
    CHECK_EQ_U64(cl_spub1(app, "a"), 1);
    CHECK_EQ_U64(cl_spub1(app, "b"), 2);
    /* Different settings under the same name: no conflict, since each
     * identity's "worker" is its own JetStream durable. */
    CHECK(open1(app, "worker", 1, 30000, 128));
    bool ok = open1(w, "worker", 2, 5000, 16);
    cl_rec r[256];
    int n = ok ? cl_fetch(app, "worker", 10, 0, r) : -1;
    int m = -1;
    cl_rec q[256];
    if (n == 2 && cl_ack1(app, "worker", r[0].seq) &&
        cl_ack1(app, "worker", r[1].seq)) {
        m = cl_fetch(w, "worker", 10, 0, q);
    }
    int again = m >= 0 ? cl_fetch(app, "worker", 10, 0, r) : -1;
    rift_client_del(w);
    CHECK(ok);
    CHECK_EQ_INT(n, 2);
    /* The worker's consumer starts at 2 and saw none of app's acks. */
    CHECK_EQ_INT(m, 1);
    CHECK_EQ_U64(q[0].seq, 2);
    CHECK_EQ_INT(q[0].count, 1);
    CHECK_EQ_INT(again, 0);
}

RIFT_TEST(two_identities_same_consumer_name_isolated) {
    cluster_fix f;
    bool up = start(&f, true);
    if (up) {
        identities_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- 10,000 publishes through kill -9 of a nats-server and a riftd ---- */

enum {
    N_PUB = 10000,
    N_THREADS = 4
};

typedef struct load {
    rift_client *c;
    size_t n; /* publishes to make, at most N_PUB */
    uint64_t seq[N_PUB];
    atomic_size_t done;
    atomic_size_t failures;
    atomic_bool gave_up;
    pthread_mutex_t mu;
    char first_error[RIFT_ERROR_TEXT_MAX + 4];
    long rss0[CLUSTER_FIX_NODES];
} load;

typedef struct load_arg {
    load *l;
    size_t t;
} load_arg;

static void *load_thread(void *arg) {
    load_arg *a = arg;
    load *l = a->l;
    for (size_t i = a->t; i < l->n && !atomic_load(&l->gave_up);
         i += N_THREADS) {
        char p[24];
        snprintf(p, sizeof p, "m%zu", i);
        int64_t end = cl_now_ms() + 90000;
        for (;;) {
            rift_error err = {0};
            if (cl_spub(l->c, "orders.created", p, &l->seq[i], &err) == 0) {
                break;
            }
            /* Only STORED counts: a failed publish is retried. */
            atomic_fetch_add(&l->failures, 1);
            pthread_mutex_lock(&l->mu);
            if (l->first_error[0] == '\0') {
                snprintf(l->first_error, sizeof l->first_error, "%s", err.text);
            }
            pthread_mutex_unlock(&l->mu);
            if (cl_now_ms() >= end) {
                atomic_store(&l->gave_up, true);
                break;
            }
            pause_ms(100);
        }
        atomic_fetch_add(&l->done, 1);
    }
    return NULL;
}

static bool wait_done(load *l, size_t n) {
    int64_t end = cl_now_ms() + 120000;
    while (atomic_load(&l->done) < n && cl_now_ms() < end &&
           !atomic_load(&l->gave_up)) {
        pause_ms(10);
    }
    return atomic_load(&l->done) >= n;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void load_start(load *l, rift_client *c, size_t n, pthread_t *t,
                       load_arg *a) {
    l->c = c;
    l->n = n;
    pthread_mutex_init(&l->mu, NULL);
    for (size_t i = 0; i < N_THREADS; i++) {
        a[i] = (load_arg){l, i};
        if (pthread_create(&t[i], NULL, load_thread, &a[i]) != 0) {
            t[i] = 0;
        }
    }
}

/* Joins the publishers; true when every publish was STORED. */
static bool load_join(load *l, pthread_t *t, int64_t t0) {
    bool all = true;
    for (size_t i = 0; i < N_THREADS; i++) {
        all = all && t[i] != 0;
        if (t[i] != 0) {
            pthread_join(t[i], NULL);
        }
    }
    fprintf(stderr,
            "  %zu publishes in %" PRId64 " ms, %zu failed tries (first: %s)\n",
            l->n, cl_now_ms() - t0, atomic_load(&l->failures),
            l->first_error[0] ? l->first_error : "none");
    return all && !atomic_load(&l->gave_up) && atomic_load(&l->done) == l->n;
}

/* Every publish of |l| was STORED under a sequence of its own, and every
 * STORED sequence is readable on node |reader| with its payload (records
 * from failed tries that were stored anyway are extras, never in place
 * of a STORED one); consumer "audit" reads and acks them. */
static void check_stored_readable(cluster_fix *f, load *l, int reader) {
    CHECK(cluster_fix_wait_replicated(f, CL_READY_MS));
    uint64_t *sorted = malloc(l->n * sizeof *sorted);
    CHECK(sorted != NULL);
    memcpy(sorted, l->seq, l->n * sizeof *sorted);
    qsort(sorted, l->n, sizeof *sorted, cmp_u64);
    bool distinct = sorted[0] > 0;
    for (size_t i = 1; i < l->n; i++) {
        distinct = distinct && sorted[i] > sorted[i - 1];
    }
    uint64_t max_seq = sorted[l->n - 1];
    free(sorted);
    CHECK_MSG(distinct, "a STORED sequence is 0 or reused");

    rift_client *c = f->n[reader].c;
    unsigned char *seen = calloc(l->n, 1);
    CHECK(seen != NULL);
    /* Right after a failover JetStream's API may time out (a meta or
     * consumer leader still being elected); like a publish, a failed
     * open is retried, and the tries are reported. */
    bool opened = false;
    int open_tries = 0;
    for (int64_t oend = cl_now_ms() + 60000; !opened && cl_now_ms() < oend;
         open_tries++) {
        opened = open1(c, "audit", 1, 120000, 4096);
        if (!opened) {
            pause_ms(200);
        }
    }
    fprintf(stderr, "  consumer opened on try %d\n", open_tries);
    size_t got = 0, extra = 0, mismatch = 0;
    cl_rec *r = calloc(256, sizeof *r);
    int64_t t1 = cl_now_ms(), end = t1 + 120000;
    while (opened && r != NULL && got < l->n && cl_now_ms() < end) {
        int n = cl_fetch(c, "audit", 256, 0, r);
        if (n < 0) {
            break;
        }
        for (int k = 0; k < n; k++) {
            unsigned i;
            if (sscanf(r[k].payload, "m%u", &i) == 1 && i < l->n &&
                l->seq[i] == r[k].seq) {
                got += seen[i] == 0;
                seen[i] = 1;
            } else if (sscanf(r[k].payload, "m%u", &i) == 1 && i < l->n) {
                extra++;
            } else {
                mismatch++;
            }
            if (!cl_ack1(c, "audit", r[k].seq)) {
                mismatch++;
            }
        }
        if (n == 0 && got < l->n) {
            pause_ms(50);
        }
    }
    free(r);
    free(seen);
    fprintf(stderr,
            "  read back %zu of %zu STORED on node %d (%zu extra, %zu bad) "
            "in %" PRId64 " ms, newest sequence %" PRIu64 "\n",
            got, l->n, reader + 1, extra, mismatch, cl_now_ms() - t1, max_seq);
    CHECK(opened);
    CHECK_EQ_INT(got, l->n);
    CHECK_EQ_INT(mismatch, 0);
}

static void kills_body(cluster_fix *f, load *l) {
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        l->rss0[i] = cluster_fix_rss_kib(f->n[i].r.p.pid);
    }
    pthread_t t[N_THREADS];
    load_arg a[N_THREADS];
    int64_t t0 = cl_now_ms();
    load_start(l, f->n[0].c, N_PUB, t, a);
    bool steps = wait_done(l, N_PUB / 5);
    cluster_fix_ns_kill(f, 1); /* nats-server n2: kill -9 */
    steps = steps && wait_done(l, 2 * N_PUB / 5);
    steps = steps && cluster_fix_ns_start(f, 1);
    steps = steps && wait_done(l, 3 * N_PUB / 5);
    cluster_fix_riftd_kill(f, 2); /* riftd r3: kill -9 */
    steps = steps && wait_done(l, 4 * N_PUB / 5);
    steps = steps && cluster_fix_riftd_start(f, 2);
    bool all = load_join(l, t, t0);
    CHECK(steps);
    CHECK(all);
    check_stored_readable(f, l, 2); /* on the restarted node 3 */
    if (rift_test_failed()) {
        return;
    }

    /* The six processes stay bounded. */
    long riftd[CLUSTER_FIX_NODES], ns[CLUSTER_FIX_NODES];
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        riftd[i] = cluster_fix_rss_kib(f->n[i].r.p.pid);
        ns[i] = cluster_fix_rss_kib(f->n[i].ns.pid);
        fprintf(stderr,
                "  node %d: riftd %ld KiB (%ld at start), nats-server %ld "
                "KiB\n",
                i + 1, riftd[i], l->rss0[i], ns[i]);
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        CHECK_MSG(riftd[i] > 0 && riftd[i] < RIFTD_RSS_MAX_KIB,
                  "riftd r%d RSS %ld KiB", i + 1, riftd[i]);
        CHECK_MSG(ns[i] > 0 && ns[i] < NS_RSS_MAX_KIB,
                  "nats-server n%d RSS %ld KiB", i + 1, ns[i]);
    }
}

RIFT_TEST(ten_thousand_publishes_through_kill_9) {
    cluster_fix f;
    load *l = calloc(1, sizeof *l);
    bool up = l != NULL && start(&f, false);
    if (up) {
        kills_body(&f, l);
    }
    bool down = cluster_fix_stop(&f);
    free(l);
    CHECK(up);
    CHECK(down);
}

/* ---- Publishes through kill -9 of the stream's JetStream leader ---- */

/* "orders", named as replicated.c names a JetStream stream. */
#define ORDERS_JS    "RIFT_6f7264657273"
#define N_LEADER_PUB 3000

/* The nats-server (0..2) leading ORDERS_JS, as node |via|'s nats-server
 * answers; -1 while there is none (an election) or on any error. */
static int stream_leader(cluster_fix *f, int via) {
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", f->n[via].client_port);
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsOptions jo;
    int n = 0;
    bool ok = natsOptions_Create(&o) == NATS_OK &&
              natsOptions_SetURL(o, url) == NATS_OK &&
              natsOptions_SetTimeout(o, 1000) == NATS_OK &&
              natsOptions_SetAllowReconnect(o, false) == NATS_OK &&
              natsConnection_Connect(&nc, o) == NATS_OK &&
              jsOptions_Init(&jo) == NATS_OK;
    if (ok) {
        jo.Wait = 1000; /* no leader: nobody answers */
        ok = natsConnection_JetStream(&js, nc, &jo) == NATS_OK &&
             js_GetStreamInfo(&si, js, ORDERS_JS, NULL, NULL) == NATS_OK &&
             si->Cluster != NULL && si->Cluster->Leader != NULL &&
             sscanf(si->Cluster->Leader, "n%d", &n) == 1 && n >= 1 &&
             n <= CLUSTER_FIX_NODES;
    }
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    return ok ? n - 1 : -1;
}

static void leader_kill_body(cluster_fix *f, load *l) {
    int leader = -1;
    int64_t end = cl_now_ms() + CL_READY_MS;
    while ((leader = stream_leader(f, 0)) < 0 && cl_now_ms() < end) {
        pause_ms(100);
    }
    CHECK(leader >= 0);
    /* Publish and read through the nodes whose servers stay up. */
    int pub = (leader + 1) % CLUSTER_FIX_NODES;
    int reader = (leader + 2) % CLUSTER_FIX_NODES;
    fprintf(stderr, "  leader n%d; publishing on node %d, reading on node %d\n",
            leader + 1, pub + 1, reader + 1);
    pthread_t t[N_THREADS];
    load_arg a[N_THREADS];
    int64_t t0 = cl_now_ms();
    load_start(l, f->n[pub].c, N_LEADER_PUB, t, a);
    bool steps = wait_done(l, N_LEADER_PUB / 3);
    int64_t killed = cl_now_ms();
    cluster_fix_ns_kill(f, leader);
    int next = -1;
    end = killed + 30000;
    while (steps && ((next = stream_leader(f, pub)) < 0 || next == leader) &&
           cl_now_ms() < end) {
        pause_ms(20);
    }
    int64_t elected = cl_now_ms();
    /* Publishing goes on under the new leader, the old one still down. */
    steps = steps && wait_done(l, 2 * N_LEADER_PUB / 3);
    steps = steps && cluster_fix_ns_start(f, leader);
    bool all = load_join(l, t, t0);
    fprintf(stderr, "  new leader n%d known %" PRId64 " ms after the kill\n",
            next + 1, elected - killed);
    CHECK(steps);
    CHECK_MSG(next >= 0 && next != leader, "no new leader (n%d)", next + 1);
    CHECK(all);
    check_stored_readable(f, l, reader);
}

RIFT_TEST(publishes_through_kill_9_of_the_stream_leader) {
    cluster_fix f;
    load *l = calloc(1, sizeof *l);
    bool up = l != NULL && start(&f, false);
    if (up) {
        leader_kill_body(&f, l);
    }
    bool down = cluster_fix_stop(&f);
    free(l);
    nats_CloseAndWait(5000); /* libnats' global state */
    CHECK(up);
    CHECK(down);
}
