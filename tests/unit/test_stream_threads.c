/*
 * test_stream_threads.c — concurrency of retained streams (unit tests of
 * the store layer): concurrent publishes get consecutive sequences, group
 * commit shares fdatasyncs and keeps them off the callers' threads, the
 * async API completes on the writer thread, concurrent consumers.
 */
// labels: threads
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"

#include <pthread.h>
#include <time.h>

typedef struct ctx {
    bool file;
    char *dir;
    rift_stream_settings s;
    rift_stream *st;
    test_vfs tv;
} ctx;

static void ctx_init(ctx *c, bool file) {
    memset(c, 0, sizeof(*c));
    c->file = file;
    rift_stream_settings_default(&c->s);
    test_vfs_init(&c->tv);
    c->s.vfs = &c->tv.vfs;
    if (file) {
        c->dir = rift_test_tmpdir();
        c->s.storage_path = c->dir;
    }
}

static void ctx_done(ctx *c) {
    rift_stream_del(c->st);
    c->st = NULL;
    rift_test_rmdir(c->dir);
    test_vfs_free(&c->tv);
}

/* ---- §4.8 vector 6: 32 concurrent publishes get 1..32 ---- */

typedef struct pub_arg {
    rift_stream *st;
    int count;
    uint64_t *seqs;
    pthread_t tid;
    int failures;
} pub_arg;

static void *publisher(void *p) {
    pub_arg *a = p;
    a->tid = pthread_self();
    test_thread_is_caller = 1;
    for (int i = 0; i < a->count; i++) {
        rift_stored out;
        char payload[32];
        int n = snprintf(payload, sizeof(payload), "p%d", i);
        if (rift_stream_publish(a->st, "t.x", 3, NULL, 0,
                                (const uint8_t *)payload, (size_t)n, &out,
                                NULL) != 0) {
            a->failures++;
            continue;
        }
        a->seqs[i] = out.sequence;
    }
    return NULL;
}

static void concurrent_publishes(bool file, int threads, int per_thread,
                                 ctx *c) {
    pub_arg args[64];
    pthread_t th[64];
    uint64_t *seqs = calloc((size_t)(threads * per_thread), sizeof(uint64_t));
    for (int i = 0; i < threads; i++) {
        args[i] = (pub_arg){
            .st = c->st, .count = per_thread, .seqs = seqs + i * per_thread};
        pthread_create(&th[i], NULL, publisher, &args[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].failures, 0);
    }
    int total = threads * per_thread;
    char *seen = calloc((size_t)total + 1, 1);
    for (int i = 0; i < total; i++) {
        CHECK(seqs[i] >= 1 && seqs[i] <= (uint64_t)total);
        CHECK(!seen[seqs[i]]);
        seen[seqs[i]] = 1;
    }
    free(seen);
    free(seqs);
    /* No fdatasync ran on a publisher's thread. */
    CHECK_EQ_INT(atomic_load(&c->tv.caller_syncs), 0);
    (void)file;
}

static void vector6(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    concurrent_publishes(file, 32, 1, &c);
    if (rift_test_failed()) {
        return;
    }
    rift_stream_del(c.st);
    c.st = NULL;
    if (file) {
        CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
        rift_batch b = {0};
        CHECK_OK(rift_stream_replay(c.st, 1, 100, &b, NULL));
        CHECK_EQ_INT(b.count, 32);
        rift_batch_free(&b);
    }
    ctx_done(&c);
}

RIFT_TEST(vector6_memory) {
    vector6(false);
}

RIFT_TEST(vector6_file) {
    vector6(true);
}

/* ---- Group commit ---- */

RIFT_TEST(group_commit_shares_syncs) {
    ctx c;
    ctx_init(&c, true);
    /* A disk slow enough that sanitizer-slowed publishers still pile up
     * behind each sync. */
    c.tv.sync_delay_us = 3000;
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    int before = atomic_load(&c.tv.fdatasyncs);
    c.tv.nsync_threads = 0; /* open itself syncs on the caller's thread */
    concurrent_publishes(true, 16, 40, &c);
    if (rift_test_failed()) {
        return;
    }
    int syncs = atomic_load(&c.tv.fdatasyncs) - before;
    /* 640 durable publishes; one sync each would be 640. */
    CHECK_MSG(syncs > 0 && syncs < 640 / 2, "%d fdatasyncs", syncs);
    CHECK(c.tv.nsync_threads >= 1); /* the writer and its sync helpers */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.last_sequence, 640);
    CHECK(info.syncs >= (uint64_t)syncs);
    rift_stream_info_free(&info);
    ctx_done(&c);
}

/* ---- The async API ---- */

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int failed;
    int refused;
    rift_stream *st;
    pthread_t cb_thread;
} waiter;

static void on_done(void *ud, int status, const rift_error *err) {
    waiter *w = ud;
    (void)err;
    /* A blocking call from the writer thread is refused, not deadlocked. */
    rift_error e = {0};
    if (rift_stream_publish(w->st, "t.x", 3, NULL, 0, NULL, 0, NULL, &e) ==
        RIFT_ERR_INVALID_ARGUMENT) {
        pthread_mutex_lock(&w->mu);
        w->refused++;
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&w->mu);
    w->cb_thread = pthread_self();
    if (status != 0) {
        w->failed++;
    }
    w->done++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void wait_for(waiter *w, int n) {
    pthread_mutex_lock(&w->mu);
    while (w->done < n) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

RIFT_TEST(async_publish_fetch_ack) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    waiter w = {.done = 0, .st = c.st};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    int expected = 0;
    bool completed = false;
    for (int i = 1; i <= 200; i++) {
        rift_stored out;
        int rc = rift_stream_publish_async(c.st, "t.x", 3, NULL, 0,
                                           (const uint8_t *)"payload", 7, &out,
                                           &completed, on_done, &w, NULL);
        CHECK_EQ_INT(rc, 0);
        expected += !completed;
        CHECK_EQ_U64(out.sequence, (uint64_t)i);
    }
    wait_for(&w, expected);
    CHECK_EQ_INT(w.failed, 0);
    CHECK_EQ_INT(w.refused, expected);
    CHECK(!pthread_equal(w.cb_thread, pthread_self()));

    rift_consumer *cons = NULL;
    int rc = rift_stream_consumer_open_async(c.st, "w", 1, NULL, &cons,
                                             &completed, on_done, &w, NULL);
    CHECK_EQ_INT(rc, 0);
    expected += !completed;
    rift_batch b = {0};
    rc =
        rift_consumer_fetch_async(cons, 200, &b, &completed, on_done, &w, NULL);
    CHECK_EQ_INT(rc, 0);
    expected += !completed;
    CHECK_EQ_INT(b.count, 128); /* max_ack_pending */
    for (size_t i = 0; i < b.count; i++) {
        rc = rift_consumer_ack_async(cons, b.items[i].record.sequence,
                                     &completed, on_done, &w, NULL);
        CHECK_EQ_INT(rc, 0);
        expected += !completed;
    }
    rift_batch_free(&b);
    wait_for(&w, expected);
    CHECK_EQ_INT(w.failed, 0);
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(cons, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 0);
    CHECK_EQ_U64(ci.next_sequence, 129);
    rift_consumer_close(cons);
    rc = rift_stream_consumer_delete_async(c.st, "w", 1, &completed, on_done,
                                           &w, NULL);
    CHECK_EQ_INT(rc, 0);
    expected += !completed;
    wait_for(&w, expected);
    rift_stream_del(c.st);
    c.st = NULL;
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.last_sequence, 200);
    CHECK_EQ_INT(info.consumer_count, 0);
    rift_stream_info_free(&info);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    ctx_done(&c);
}

RIFT_TEST(async_memory_completes_at_once) {
    ctx c;
    ctx_init(&c, false);
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    rift_stored out;
    bool completed = false;
    CHECK_EQ_INT(rift_stream_publish_async(c.st, "a", 1, NULL, 0, NULL, 0, &out,
                                           &completed, on_done, NULL, NULL),
                 0);
    CHECK(completed);
    rift_consumer *cons = NULL;
    completed = false;
    CHECK_EQ_INT(rift_stream_consumer_open_async(c.st, "w", 1, NULL, &cons,
                                                 &completed, on_done, NULL,
                                                 NULL),
                 0);
    CHECK(completed);
    rift_batch b = {0};
    completed = false;
    CHECK_EQ_INT(
        rift_consumer_fetch_async(cons, 5, &b, &completed, on_done, NULL, NULL),
        0);
    CHECK(completed);
    CHECK_EQ_INT(b.count, 1);
    rift_batch_free(&b);
    completed = false;
    CHECK_EQ_INT(
        rift_consumer_ack_async(cons, 1, &completed, on_done, NULL, NULL), 0);
    CHECK(completed);
    rift_consumer_close(cons);
    ctx_done(&c);
}

/* ---- Unsynced streams acknowledge after write() ---- */

#define REC_BYTES (32 + 3 + 7) /* "t.x", "payload" */

typedef struct written_check {
    waiter *w;
    const char *seg;
    uint64_t seq;
    long size_at_cb;
} written_check;

static void on_written(void *ud, int status, const rift_error *err) {
    written_check *c = ud;
    /* The record is in the file (handed to the OS) before completion. */
    c->size_at_cb = test_file_size(c->seg);
    on_done(c->w, status, err);
}

RIFT_TEST(unsynced_acknowledges_after_write) {
    ctx c;
    ctx_init(&c, true);
    c.s.sync_on_write = false;
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    const uint8_t *pl = (const uint8_t *)"payload";
    rift_stored out;
    CHECK_OK(rift_stream_publish(c.st, "t.x", 3, NULL, 0, pl, 7, &out, NULL));
    char seg[4096];
    CHECK_EQ_INT(test_segments(c.dir, seg, sizeof(seg)), 1);
    CHECK_EQ_INT(test_file_size(seg), 32 + REC_BYTES);
    for (int i = 0; i < 20; i++) {
        CHECK_OK(
            rift_stream_publish(c.st, "t.x", 3, NULL, 0, pl, 7, &out, NULL));
        CHECK_EQ_INT(test_file_size(seg), 32 + (long)out.sequence * REC_BYTES);
    }
    /* Async: completion, not *completed, on the writer thread, once
     * written. */
    waiter w = {.done = 0, .st = c.st};
    bool completed = true;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    written_check checks[100];
    for (int i = 0; i < 100; i++) {
        checks[i] = (written_check){.w = &w, .seg = seg};
        CHECK_EQ_INT(rift_stream_publish_async(c.st, "t.x", 3, NULL, 0, pl, 7,
                                               &out, &completed, on_written,
                                               &checks[i], NULL),
                     0);
        CHECK(!completed);
        checks[i].seq = out.sequence;
    }
    wait_for(&w, 100);
    CHECK_EQ_INT(w.failed, 0);
    CHECK(!pthread_equal(w.cb_thread, pthread_self()));
    for (int i = 0; i < 100; i++) {
        CHECK_MSG(checks[i].size_at_cb >= 32 + (long)checks[i].seq * REC_BYTES,
                  "seq %llu completed with %ld bytes in the segment",
                  (unsigned long long)checks[i].seq, checks[i].size_at_cb);
    }
    /* Fetch and ack complete the same way. */
    char state[4200];
    snprintf(state, sizeof(state), "%s/state.log", c.dir);
    rift_consumer *cons = NULL;
    CHECK_OK(rift_stream_consumer_open(c.st, "w", 1, NULL, &cons, NULL));
    long before = test_file_size(state);
    rift_batch b = {0};
    written_check fc = {.w = &w, .seg = state};
    CHECK_EQ_INT(rift_consumer_fetch_async(cons, 4, &b, &completed, on_written,
                                           &fc, NULL),
                 0);
    CHECK(!completed);
    wait_for(&w, 101);
    CHECK(fc.size_at_cb > before);
    before = fc.size_at_cb;
    CHECK_EQ_INT(b.count, 4);
    CHECK_EQ_INT(rift_consumer_ack_async(cons, b.items[0].record.sequence,
                                         &completed, on_written, &fc, NULL),
                 0);
    CHECK(!completed);
    wait_for(&w, 102);
    CHECK(fc.size_at_cb > before);
    before = fc.size_at_cb;
    CHECK_OK(rift_consumer_ack(cons, b.items[1].record.sequence, NULL));
    CHECK(test_file_size(state) > before);
    rift_batch_free(&b);
    CHECK_EQ_INT(w.failed, 0);
    rift_consumer_close(cons);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    ctx_done(&c);
}

/* ---- Concurrent consumers and publishers ---- */

typedef struct work_arg {
    rift_stream *st;
    int total;
    atomic_int *acked;
    char *seen; /* guarded by mu */
    pthread_mutex_t *mu;
    int duplicates;
} work_arg;

static void *worker(void *p) {
    work_arg *a = p;
    test_thread_is_caller = 1;
    rift_consumer *c = NULL;
    if (rift_stream_consumer_get(a->st, "shared", 6, &c, NULL) != 0) {
        return NULL;
    }
    while (atomic_load(a->acked) < a->total) {
        rift_batch b = {0};
        if (rift_consumer_fetch(c, 16, &b, NULL) != 0) {
            break;
        }
        if (b.count == 0) {
            /* Fetch never waits: back off while publishers catch up. */
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        for (size_t i = 0; i < b.count; i++) {
            uint64_t seq = b.items[i].record.sequence;
            pthread_mutex_lock(a->mu);
            if (a->seen[seq]) {
                a->duplicates++;
            }
            a->seen[seq] = 1;
            pthread_mutex_unlock(a->mu);
            if (rift_consumer_ack(c, seq, NULL) == 0) {
                atomic_fetch_add(a->acked, 1);
            }
        }
        rift_batch_free(&b);
    }
    rift_consumer_close(c);
    return NULL;
}

static void workers(bool file) {
    ctx c;
    ctx_init(&c, file);
    c.s.sync_on_write = file;
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    rift_consumer *cons = NULL;
    CHECK_OK(rift_stream_consumer_open(c.st, "shared", 6, NULL, &cons, NULL));
    rift_consumer_close(cons);
    enum {
        PUBS = 4,
        PER = 100,
        WORKERS = 4
    };
    atomic_int acked = 0;
    pthread_mutex_t mu;
    pthread_mutex_init(&mu, NULL);
    char *seen = calloc(PUBS * PER + 1, 1);
    work_arg wa[WORKERS];
    pthread_t wt[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        wa[i] = (work_arg){.st = c.st,
                           .total = PUBS * PER,
                           .acked = &acked,
                           .seen = seen,
                           .mu = &mu};
        pthread_create(&wt[i], NULL, worker, &wa[i]);
    }
    concurrent_publishes(file, PUBS, PER, &c);
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(wt[i], NULL);
        CHECK_EQ_INT(wa[i].duplicates, 0);
    }
    CHECK_EQ_INT(atomic_load(&acked), PUBS * PER);
    CHECK_EQ_INT(atomic_load(&c.tv.caller_syncs), 0);
    for (int i = 1; i <= PUBS * PER; i++) {
        CHECK(seen[i]);
    }
    free(seen);
    pthread_mutex_destroy(&mu);
    ctx_done(&c);
}

RIFT_TEST(concurrent_workers_memory) {
    workers(false);
}

RIFT_TEST(concurrent_workers_file) {
    workers(true);
}
