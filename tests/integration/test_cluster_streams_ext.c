/*
 * test_cluster_streams_ext.c — the extension opcodes on a replicated
 * stream (replicas = 3, integration tests; docs/cluster.md "Replicated
 * streams"): CONSUMER_OPEN_EXT with every start position, resumes and
 * the store's "different <field>" text, max_deliver, CONSUMER_INFO_GET,
 * CONSUMER_LIST scoped to the identity, the identity's consumer quota,
 * STREAM_INFO_GET, STREAM_PURGE keeping sequences and CONSUMER_FETCH_WAIT,
 * each asked of a node other
 * than the publishing one; riftd started while its backbone is down; and
 * nodes configured with other limits naming them in their logs.
 * Every wait polls a condition or is the protocol's own wait.
 */
// labels: threads slow
#include "cluster_client.h"
#include "cluster_fix.h"
#include "rift/client.h"
#include "rift/client_stream.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ext_config(rift_consumer_config *cfg, rift_consumer_start start,
                       uint64_t value) {
    rift_consumer_config_default(cfg);
    cfg->filter = "orders.>";
    cfg->filter_len = strlen(cfg->filter);
    cfg->start = start;
    if (start == RIFT_START_SEQUENCE) {
        cfg->start_sequence = value;
    } else {
        cfg->start_time_ms = value;
    }
}

static int open_ext(rift_client *c, const char *name,
                    const rift_consumer_config *cfg,
                    rift_client_consumer_info *info, rift_error *err) {
    return rift_client_consumer_open_ext(c, CL_STREAM, strlen(CL_STREAM), name,
                                         strlen(name), cfg, info, err);
}

static bool open1(rift_client *c, const char *name, rift_consumer_start start,
                  uint64_t value, rift_client_consumer_info *info) {
    rift_consumer_config cfg;
    ext_config(&cfg, start, value);
    rift_error err = {0};
    if (open_ext(c, name, &cfg, info, &err) != 0) {
        fprintf(stderr, "  consumer open %s: %s\n", name, err.text);
        return false;
    }
    return true;
}

static bool info1(rift_client *c, const char *name,
                  rift_client_consumer_info *info) {
    rift_error err = {0};
    if (rift_client_consumer_get_info(c, CL_STREAM, strlen(CL_STREAM), name,
                                      strlen(name), info, &err) != 0) {
        fprintf(stderr, "  consumer info %s: %s\n", name, err.text);
        return false;
    }
    return true;
}

/* The names of one page of |c|'s consumers, space-separated, in |out|. */
static int list_names(rift_client *c, const char *after, uint32_t limit,
                      char *out, size_t size, bool *more) {
    rift_client_consumer_entry *e = NULL;
    size_t n = 0;
    rift_error err = {0};
    out[0] = '\0';
    if (rift_client_consumer_list(c, CL_STREAM, strlen(CL_STREAM), after,
                                  after ? strlen(after) : 0, limit, &e, &n,
                                  more, &err) != 0) {
        fprintf(stderr, "  consumer list: %s\n", err.text);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? " " : "",
                               e[i].name);
    }
    rift_client_consumer_list_free(e);
    return (int)n;
}

/* ---- Start positions, info, list, max_deliver ---- */

/* The consumer quota (limits.per_identity.consumers = 2 on every node):
 * |w| ('worker') made "first" and "zed" through node 2, so a third is
 * refused there by either open and nothing is made; reopening its own is
 * free at the quota; a delete gives the unit back. Each node counts its
 * own (docs/cluster.md), so node 3 lets the worker make one. */
static void quota_checks(cluster_fix *f, rift_client *w) {
    rift_client_consumer_info in;
    rift_consumer_config cfg;
    ext_config(&cfg, RIFT_START_FIRST, 0);
    rift_error err = {0};
    CHECK(open_ext(w, "third", &cfg, &in, &err) != 0);
    CHECK_MSG(strstr(err.text, "stream consumer limit reached") != NULL, "%s",
              err.text);
    rift_consumer_config v1;
    ext_config(&v1, RIFT_START_SEQUENCE, 1);
    CHECK(rift_client_consumer_open(w, CL_STREAM, strlen(CL_STREAM), "third", 5,
                                    &v1, &err) != 0);
    CHECK_MSG(strstr(err.text, "stream consumer limit reached") != NULL, "%s",
              err.text);
    CHECK(open1(w, "first", RIFT_START_FIRST, 0, &in));
    CHECK(!in.created);
    char names[256];
    bool more = false;
    CHECK_EQ_INT(list_names(w, NULL, 256, names, sizeof names, &more), 2);
    CHECK_EQ_STR(names, "first zed");
    CHECK_OK(rift_client_consumer_delete(w, CL_STREAM, strlen(CL_STREAM), "zed",
                                         3, &err));
    CHECK(open1(w, "third", RIFT_START_FIRST, 0, &in));
    CHECK(in.created);
    CHECK_EQ_INT(list_names(w, NULL, 256, names, sizeof names, &more), 2);
    CHECK_EQ_STR(names, "first third");
    rift_client *w3 = NULL;
    CHECK(riftd_fix_connect(&f->n[2].r, RIFTD_FIX_TOKEN2, &w3));
    if (w3 != NULL) {
        CHECK(open1(w3, "on3", RIFT_START_FIRST, 0, &in));
        CHECK(in.created);
        rift_client_del(w3);
    }
}

static void starts_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c, *c3 = f->n[2].c;
    CHECK_EQ_U64(cl_spub1(c1, "m1"), 1);
    CHECK_EQ_U64(cl_spub1(c1, "m2"), 2);
    /* A time between m2 and m3: m2 was stored before it. */
    uint64_t t = wall_ms() + 2;
    while (wall_ms() <= t) {
    }
    CHECK_EQ_U64(cl_spub1(c1, "m3"), 3);

    rift_client_consumer_info in;
    cl_rec r[32];
    /* first: from 1; created, the start and the cursor reported. */
    CHECK(open1(c2, "first", RIFT_START_FIRST, 0, &in));
    CHECK(in.created);
    CHECK_EQ_INT(in.config.start, RIFT_START_FIRST);
    CHECK_EQ_U64(in.start_sequence, 1);
    CHECK_EQ_U64(in.next_sequence, 1);
    CHECK_EQ_STR(in.filter, "orders.>");
    CHECK_EQ_INT(cl_fetch(c3, "first", 32, 0, r), 3);
    CHECK_EQ_U64(r[0].seq, 1);
    /* last: the newest record. */
    CHECK(open1(c2, "last", RIFT_START_LAST_RECEIVED, 0, &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_LAST_RECEIVED);
    CHECK_EQ_U64(in.start_sequence, 3);
    CHECK_EQ_INT(cl_fetch(c3, "last", 32, 0, r), 1);
    CHECK_EQ_U64(r[0].seq, 3);
    /* new: only later records. */
    CHECK(open1(c2, "new", RIFT_START_NEW_ONLY, 0, &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_NEW_ONLY);
    CHECK_EQ_U64(in.start_sequence, 4);
    CHECK_EQ_INT(cl_fetch(c3, "new", 32, 0, r), 0);
    /* seq:2 and time: from the record after the time. */
    CHECK(open1(c2, "seq2", RIFT_START_SEQUENCE, 2, &in));
    CHECK_EQ_U64(in.start_sequence, 2);
    CHECK(open1(c2, "time", RIFT_START_TIME, t, &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_TIME);
    CHECK_EQ_U64(in.config.start_time_ms, t);
    CHECK_EQ_U64(in.start_sequence, 3);
    /* since: an hour back reaches everything. */
    CHECK(open1(c2, "since", RIFT_START_TIME_DELTA, 3600000, &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_TIME_DELTA);
    CHECK(in.config.start_time_ms >= 3599000 &&
          in.config.start_time_ms <= 3601000);
    CHECK_EQ_U64(in.start_sequence, 1);
    CHECK_EQ_U64(cl_spub1(c1, "m4"), 4);
    CHECK_EQ_INT(cl_fetch(c3, "new", 32, 0, r), 1);
    CHECK_EQ_U64(r[0].seq, 4);
    CHECK_EQ_INT(cl_fetch(c3, "seq2", 32, 0, r), 3);
    CHECK_EQ_U64(r[0].seq, 2);
    CHECK_EQ_INT(cl_fetch(c1, "time", 32, 0, r), 2);
    CHECK_EQ_U64(r[0].seq, 3);
    CHECK_EQ_INT(cl_fetch(c3, "since", 32, 0, r), 4);
    CHECK_EQ_U64(r[0].seq, 1);

    /* A resume from another node ignores the start; other settings are
     * the store's error naming the field. */
    CHECK(open1(c3, "first", RIFT_START_NEW_ONLY, 0, &in));
    CHECK(!in.created);
    CHECK_EQ_INT(in.config.start, RIFT_START_FIRST);
    rift_consumer_config cfg;
    ext_config(&cfg, RIFT_START_FIRST, 0);
    cfg.ack_wait_ms = 5000;
    rift_error err = {0};
    CHECK(open_ext(c3, "first", &cfg, NULL, &err) != 0);
    CHECK_EQ_STR(err.text, "invalid messaging configuration: consumer "
                           "already exists with different ack_wait_ms");

    /* The resolved starts stay known after deliveries, on any node. */
    CHECK(info1(c1, "last", &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_LAST_RECEIVED);
    CHECK_EQ_U64(in.start_sequence, 3);
    CHECK(info1(c1, "new", &in));
    CHECK_EQ_INT(in.config.start, RIFT_START_NEW_ONLY);
    CHECK_EQ_U64(in.start_sequence, 4);
    CHECK_EQ_U64(in.next_sequence, 5);
    CHECK(info1(c1, "time", &in));
    CHECK_EQ_U64(in.start_sequence, 3);
    /* CONSUMER_INFO from node 1: seq2 fetched 2, 3, 4 on node 3. */
    CHECK(info1(c1, "seq2", &in));
    CHECK_EQ_U64(in.next_sequence, 5);
    CHECK_EQ_INT(in.pending, 3);
    CHECK(cl_ack1(c3, "seq2", 2));
    CHECK(info1(c1, "seq2", &in));
    CHECK_EQ_INT(in.pending, 2);
    CHECK(rift_client_consumer_get_info(c1, CL_STREAM, strlen(CL_STREAM),
                                        "nobody", 6, &in, &err) != 0);
    CHECK_EQ_STR(err.text, "consumer does not exist");

    /* max_deliver 2: a record unacked twice is not delivered again. */
    ext_config(&cfg, RIFT_START_SEQUENCE, 4);
    cfg.ack_wait_ms = 500;
    cfg.max_deliver = 2;
    CHECK(open_ext(c2, "md", &cfg, &in, &err) == 0);
    CHECK_EQ_INT(in.config.max_deliver, 2);
    CHECK_EQ_INT(cl_fetch(c3, "md", 32, 0, r), 1);
    CHECK_EQ_INT(cl_fetch(c3, "md", 32, 5000, r), 1);
    CHECK_EQ_U64(r[0].seq, 4);
    CHECK_EQ_INT(r[0].count, 2);
    CHECK_EQ_INT(cl_fetch(c3, "md", 32, 2000, r), 0);
    CHECK(info1(c1, "md", &in));
    CHECK_EQ_INT(in.config.max_deliver, 2);

    /* CONSUMER_LIST from node 3: this identity's, sorted, paged. */
    char names[512];
    bool more = false;
    CHECK_EQ_INT(list_names(c3, NULL, 256, names, sizeof names, &more), 7);
    CHECK_EQ_STR(names, "first last md new seq2 since time");
    CHECK(!more);
    CHECK_EQ_INT(list_names(c3, NULL, 2, names, sizeof names, &more), 2);
    CHECK_EQ_STR(names, "first last");
    CHECK(more);
    CHECK_EQ_INT(list_names(c3, "seq2", 2, names, sizeof names, &more), 2);
    CHECK_EQ_STR(names, "since time");
    CHECK(!more);
    /* Another identity sees only its own, and is not seen. */
    rift_client *w = NULL;
    CHECK(riftd_fix_connect(&f->n[1].r, RIFTD_FIX_TOKEN2, &w));
    if (w != NULL) {
        CHECK(open1(w, "first", RIFT_START_FIRST, 0, &in));
        CHECK(in.created); /* not app's "first" */
        CHECK(open1(w, "zed", RIFT_START_FIRST, 0, &in));
        CHECK_EQ_INT(list_names(w, NULL, 256, names, sizeof names, &more), 2);
        CHECK_EQ_STR(names, "first zed");
        quota_checks(f, w);
        rift_client_del(w);
    }
    CHECK_EQ_INT(list_names(c1, NULL, 256, names, sizeof names, &more), 7);
    CHECK_EQ_STR(names, "first last md new seq2 since time");
}

RIFT_TEST(start_positions_info_list_max_deliver) {
    cluster_fix f;
    cluster_fix_opts o = {.jetstream = true,
                          .streams = CL_ORDERS_LUA,
                          .second_principal = true,
                          .limits = "{ per_identity = { consumers = 2 } }"};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, CL_READY_MS);
    if (up) {
        starts_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- Stream info, purge, fetch wait ---- */

typedef struct late_pub {
    rift_client *c;
    uint64_t seq;
} late_pub;

static void *late_thread(void *arg) {
    late_pub *p = arg;
    struct timespec ts = {0, 500 * 1000000L};
    nanosleep(&ts, NULL); /* after the fetch began to wait */
    p->seq = cl_spub1(p->c, "late");
    return NULL;
}

typedef struct wait_job {
    rift_client *c;
    int n;
} wait_job;

static void *wait_thread(void *arg) {
    wait_job *j = arg;
    cl_rec r[32];
    j->n = cl_fetch(j->c, "r", 32, 60000, r);
    return NULL;
}

/* Node 2's waiting fetches. */
static long long node2_waits(cluster_fix *f) {
    json_t *r = cluster_fix_replicated(f, 1);
    long long n =
        r != NULL ? json_integer_value(json_object_get(r, "fetch_waits")) : -1;
    json_decref(r);
    return n;
}

static bool node2_waiting(void *arg) {
    return node2_waits(arg) == 1;
}

static bool node2_idle(void *arg) {
    return node2_waits(arg) == 0;
}

static void ignore_fetched(void *user_data, int status, rift_client_delivery *d,
                           size_t count, const rift_error *err) {
    (void)user_data;
    (void)status;
    (void)d;
    (void)count;
    (void)err;
}

static void stream_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c, *c3 = f->n[2].c;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(cl_spub1(c1, "x"), (uint64_t)i + 1);
    }
    rift_client_consumer_info in;
    CHECK(open1(c2, "r", RIFT_START_FIRST, 0, &in));

    rift_client_stream_info si;
    rift_error err = {0};
    CHECK(rift_client_stream_get_info(c2, CL_STREAM, strlen(CL_STREAM), &si,
                                      &err) == 0);
    CHECK_EQ_STR(si.subjects, "orders.>");
    CHECK_EQ_U64(si.messages, 3);
    CHECK_EQ_U64(si.first_sequence, 1);
    CHECK_EQ_U64(si.last_sequence, 3);
    CHECK(si.bytes > 0);
    CHECK_EQ_INT(si.consumers, 1);
    CHECK(!si.runtime);

    /* Purge from node 3: the records go, the sequences carry on. */
    CHECK(rift_client_stream_purge(c3, CL_STREAM, strlen(CL_STREAM), &err) ==
          0);
    CHECK(rift_client_stream_get_info(c2, CL_STREAM, strlen(CL_STREAM), &si,
                                      &err) == 0);
    CHECK_EQ_U64(si.messages, 0);
    CHECK_EQ_U64(si.first_sequence, 4);
    CHECK_EQ_U64(si.last_sequence, 3);
    CHECK_EQ_U64(cl_spub1(c1, "after"), 4);
    cl_rec r[32];
    CHECK_EQ_INT(cl_fetch(c3, "r", 32, 0, r), 1);
    CHECK_EQ_U64(r[0].seq, 4);
    CHECK(cl_ack1(c3, "r", 4));
    /* Without the grant: refused as for any stream; an identity that may
     * not read the stream does not learn it is there. */
    rift_client *w = NULL;
    CHECK(riftd_fix_connect(&f->n[2].r, RIFTD_FIX_TOKEN2, &w));
    if (w != NULL) {
        CHECK(rift_client_stream_purge(w, CL_STREAM, strlen(CL_STREAM), &err) !=
              0);
        CHECK_EQ_STR(err.text, "stream administration not permitted");
        CHECK(rift_client_stream_get_info(w, CL_STREAM, strlen(CL_STREAM), &si,
                                          &err) != 0);
        CHECK_EQ_STR(err.text, "unknown stream");
        rift_client_del(w);
    }

    /* FETCH_WAIT from node 2: nothing within the wait, then a record
     * published on node 1 while it waits. */
    int64_t t0 = cl_now_ms();
    CHECK_EQ_INT(cl_fetch(c2, "r", 32, 1000, r), 0);
    int64_t took = cl_now_ms() - t0;
    CHECK_MSG(took >= 900 && took < 5000, "empty wait took %lld ms",
              (long long)took);
    late_pub p = {.c = c1};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, late_thread, &p) == 0);
    t0 = cl_now_ms();
    CHECK_EQ_INT(cl_fetch(c2, "r", 32, 10000, r), 1);
    took = cl_now_ms() - t0;
    pthread_join(th, NULL);
    CHECK_EQ_U64(p.seq, 5);
    CHECK_EQ_U64(r[0].seq, 5);
    CHECK_MSG(took >= 400 && took < 5000, "wait took %lld ms", (long long)took);
    CHECK(cl_fetch(c2, "nobody", 32, 1000, r) < 0);

    /* A client that goes while its fetch waits (60 s) frees the wait and
     * its worker within a pull or two, not at the end of the wait. */
    rift_client *gone = NULL;
    CHECK(riftd_fix_connect(&f->n[1].r, RIFTD_FIX_TOKEN, &gone));
    if (gone == NULL) {
        return;
    }
    CHECK(rift_client_fetch_wait_async(gone, CL_STREAM, strlen(CL_STREAM), "r",
                                       1, 32, 60000, ignore_fetched, NULL,
                                       &err) == 0);
    CHECK(rift_test_wait_until(node2_waiting, f, CL_WAIT_MS));
    rift_client_del(gone);
    t0 = cl_now_ms();
    CHECK(rift_test_wait_until(node2_idle, f, 5000));
    fprintf(stderr, "wait of a gone client ended after %lld ms\n",
            (long long)(cl_now_ms() - t0));

    /* riftd's stop ends a waiting fetch at once (its server waits for
     * the backend's operations). */
    wait_job wj = {0};
    CHECK(riftd_fix_connect(&f->n[1].r, RIFTD_FIX_TOKEN, &wj.c));
    if (wj.c == NULL) {
        return;
    }
    CHECK(pthread_create(&th, NULL, wait_thread, &wj) == 0);
    CHECK(rift_test_wait_until(node2_waiting, f, CL_WAIT_MS));
    t0 = cl_now_ms();
    CHECK_EQ_INT(riftd_fix_stop(&f->n[1].r), 0);
    took = cl_now_ms() - t0;
    pthread_join(th, NULL);
    rift_client_del(wj.c);
    CHECK_MSG(took < 10000, "stop took %lld ms", (long long)took);
    CHECK(wj.n <= 0);
}

RIFT_TEST(stream_info_purge_and_fetch_wait) {
    cluster_fix f;
    cluster_fix_opts o = {.jetstream = true,
                          .streams = CL_ORDERS_LUA,
                          .second_principal = true,
                          .worker_subscribe = "{ 'notes.>' }",
                          .app_streams = "{ 'orders' }"};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, CL_READY_MS);
    if (up) {
        stream_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- riftd started while its backbone is down ---- */

static const char two_streams_lua[] =
    "{ orders = { subjects = { 'orders.>' }, replicas = 3 },\n"
    "      notes = { subjects = { 'notes.>' } } }";

/* Whether node 1's replicated stream reports |ready| in `rift status`. */
static bool r1_ready_is(cluster_fix *f, bool ready) {
    json_t *r = cluster_fix_replicated(f, 0);
    bool is = r != NULL && json_is_true(json_object_get(r, "ready")) == ready;
    json_decref(r);
    return is;
}

static bool r1_ready(void *arg) {
    return r1_ready_is(arg, true);
}

static void down_start_body(cluster_fix *f) {
    cluster_fix_riftd_kill(f, 0);
    cluster_fix_ns_kill(f, 0);
    CHECK(cluster_fix_riftd_start(f, 0));
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    if (c1 == NULL) {
        return;
    }
    /* It started: its local stream works. */
    rift_stored st = {0};
    rift_error err = {0};
    CHECK(rift_client_stream_publish(c1, "notes", 5, "notes.a", 7, NULL, 0,
                                     (const uint8_t *)"n", 1, &st, &err) == 0);
    CHECK_EQ_U64(st.sequence, 1);
    /* The replicated one answers at once, and says why. */
    int64_t t0 = cl_now_ms();
    CHECK(rift_client_stream_publish(c1, CL_STREAM, strlen(CL_STREAM),
                                     "orders.created", 14, NULL, 0,
                                     (const uint8_t *)"x", 1, &st, &err) != 0);
    CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL, "publish: %s",
              err.text);
    rift_client_consumer_info in;
    CHECK(rift_client_consumer_get_info(c1, CL_STREAM, strlen(CL_STREAM), "r",
                                        1, &in, &err) != 0);
    CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL, "info: %s",
              err.text);
    rift_client_stream_info si;
    CHECK(rift_client_stream_get_info(c1, CL_STREAM, strlen(CL_STREAM), &si,
                                      &err) != 0);
    CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL, "info: %s",
              err.text);
    CHECK_MSG(cl_now_ms() - t0 < 5000, "took %lld ms",
              (long long)(cl_now_ms() - t0));
    /* Also then, an identity that may not read it hears "unknown". */
    rift_client *w = NULL;
    CHECK(riftd_fix_connect(&f->n[0].r, RIFTD_FIX_TOKEN2, &w));
    if (w != NULL) {
        CHECK(rift_client_stream_get_info(w, CL_STREAM, strlen(CL_STREAM), &si,
                                          &err) != 0);
        CHECK_EQ_STR(err.text, "unknown stream");
        rift_client_del(w);
    }
    CHECK(r1_ready_is(f, false));
    /* Its nats-server back: the stream becomes ready and works. */
    CHECK(cluster_fix_ns_start(f, 0));
    CHECK(rift_test_wait_until(r1_ready, f, CL_READY_MS));
    CHECK(open1(c2, "r", RIFT_START_FIRST, 0, &in));
    uint64_t seq = 0;
    int64_t end = cl_now_ms() + CL_WAIT_MS;
    while (seq == 0 && cl_now_ms() < end) {
        /* The restarted server may still be catching up: retry. */
        if (rift_client_stream_publish(
                c1, CL_STREAM, strlen(CL_STREAM), "orders.created", 14, NULL, 0,
                (const uint8_t *)"up", 2, &st, &err) == 0) {
            seq = st.sequence;
        }
    }
    CHECK_MSG(seq == 1, "sequence %llu (%s)", (unsigned long long)seq,
              err.text);
    cl_rec got[32];
    CHECK_EQ_INT(cl_fetch(c2, "r", 32, 5000, got), 1);
    CHECK_EQ_U64(got[0].seq, 1);
    CHECK(info1(c1, "r", &in));
    CHECK_EQ_U64(in.next_sequence, 2);
}

RIFT_TEST(riftd_started_with_backbone_down_then_ready) {
    cluster_fix f;
    cluster_fix_opts o = {.jetstream = true,
                          .streams = two_streams_lua,
                          .second_principal = true,
                          .worker_subscribe = "{ 'notes.>' }"};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, CL_READY_MS);
    if (up) {
        down_start_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}

/* ---- Nodes configured with other limits ---- */

/* Some node's log names the stream's one differing limit, either way. */
static bool limits_warned(void *arg) {
    cluster_fix *f = arg;
    bool hit = false;
    for (int i = 0; i < CLUSTER_FIX_NODES && !hit; i++) {
        char *log = rift_proc_read(f->n[i].r.p.err);
        hit =
            log != NULL &&
            (strstr(log, "had other limits (max_messages 100000 in JetStream, "
                         "100 here)") != NULL ||
             strstr(log, "had other limits (max_messages 100 in JetStream, "
                         "100000 here)") != NULL);
        free(log);
    }
    return hit;
}

RIFT_TEST(nodes_with_other_limits_say_so) {
    cluster_fix f;
    /* Node 3 caps 'orders' at 100 messages, nodes 1 and 2 keep the default
     * 100,000: the node
     * that finds the stream made by another names exactly that limit
     * (nothing else differs) and applies its own; the stream serves. */
    cluster_fix_opts o = {.jetstream = true,
                          .streams = CL_ORDERS_LUA,
                          .streams_last = "{ orders = { subjects = { "
                                          "'orders.>' }, replicas = 3, "
                                          "max_messages = 100 } }"};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, CL_READY_MS);
    if (up) {
        bool warned = rift_test_wait_until(limits_warned, &f, CL_WAIT_MS);
        for (int i = 0; !warned && i < CLUSTER_FIX_NODES; i++) {
            char *log = rift_proc_read(f.n[i].r.p.err);
            fprintf(stderr, "  r%d log:\n%s\n", i + 1, log ? log : "(none)");
            free(log);
        }
        CHECK(warned);
        CHECK(cl_spub1(f.n[0].c, "m1") >= 1);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}
