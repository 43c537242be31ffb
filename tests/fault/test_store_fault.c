/*
 * test_store_fault.c — fault injection for file streams (fault tests of
 * the store layer): the Nth write or fdatasync fails, a write is cut
 * short, allocations fail. In every case the failing operation reports an
 * error, the stream is poisoned with a clear error, other streams keep
 * working, and after a reopen every acknowledged record and ack is there,
 * every record present is intact, and no partial record shows.
 */
// labels: threads
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"
#include "common/common.h"

/* Deterministic payload of the record published as number |i|. */
static size_t pattern(uint64_t i, uint8_t *out) {
    size_t len = (size_t)(i % 97) * 4 + 5;
    for (size_t k = 0; k < len; k++) {
        out[k] = (uint8_t)((i * 131 + k * 7) & 0xFF);
    }
    return len;
}

static bool intact(const rift_record *r) {
    uint8_t want[512];
    size_t len = pattern(r->sequence, want);
    return r->payload_len == len && memcmp(r->payload, want, len) == 0 &&
           r->subject_len == 5 && memcmp(r->subject, "f.rec", 5) == 0;
}

typedef struct outcome {
    uint64_t acked_pub; /* publishes reported done: 1..acked_pub */
    uint64_t acked[64]; /* acks reported done */
    size_t nacked;
    bool failed;
    int fail_code;
} outcome;

/*
 * Runs a fixed workload (publishes, a consumer, fetches, acks) until the
 * first failure, recording what was acknowledged.
 */
static void workload(rift_stream *st, outcome *o) {
    memset(o, 0, sizeof(*o));
    rift_consumer *c = NULL;
    rift_error err = {0};
    uint8_t buf[512];
    for (uint64_t i = 1; i <= 40; i++) {
        size_t len = pattern(i, buf);
        rift_stored out = {0};
        int rc =
            rift_stream_publish(st, "f.rec", 5, NULL, 0, buf, len, &out, &err);
        if (rc != 0) {
            o->failed = true;
            o->fail_code = rc;
            break;
        }
        if (out.sequence != i) {
            rift_test_fail(__FILE__, __LINE__, "sequence %llu for %llu",
                           (unsigned long long)out.sequence,
                           (unsigned long long)i);
            break;
        }
        o->acked_pub = i;
        if (i == 5) {
            rc = rift_stream_consumer_open(st, "c", 1, NULL, &c, &err);
            if (rc != 0) {
                o->failed = true;
                o->fail_code = rc;
                break;
            }
        }
        if (c != NULL && i % 3 == 0) {
            rift_batch b = {0};
            rc = rift_consumer_fetch(c, 4, &b, &err);
            if (rc != 0) {
                o->failed = true;
                o->fail_code = rc;
                break;
            }
            for (size_t k = 0; k < b.count && rc == 0; k++) {
                uint64_t seq = b.items[k].record.sequence;
                if (seq % 2 == 0) {
                    continue; /* left pending */
                }
                rc = rift_consumer_ack(c, seq, &err);
                if (rc == 0 && o->nacked < 64) {
                    o->acked[o->nacked++] = seq;
                }
            }
            rift_batch_free(&b);
            if (rc != 0) {
                o->failed = true;
                o->fail_code = rc;
                break;
            }
        }
    }
    if (o->failed) {
        /* Later mutations fail with the poison text (the stream reads
         * its disk state back but refuses writes until the back-off has
         * passed or it is reopened). */
        rift_error e2 = {0};
        int rc =
            rift_stream_publish(st, "f.rec", 5, NULL, 0, buf, 1, NULL, &e2);
        if (rc != RIFT_ERR_STORAGE ||
            strstr(e2.text, "stream storage: journal write previously "
                            "failed") != e2.text ||
            strstr(e2.text, "reopen the stream") == NULL) {
            rift_test_fail(__FILE__, __LINE__, "after failure: %d %s", rc,
                           e2.text);
        }
        rift_stream_info info;
        if (rift_stream_get_info(st, &info, NULL) == 0) {
            if (!info.poisoned) {
                rift_test_fail(__FILE__, __LINE__, "not poisoned");
            }
            rift_stream_info_free(&info);
        }
    }
    rift_consumer_close(c);
}

/* Reopens |dir| with the real file system and checks |o|. */
static void check_after_reopen(const char *dir, const outcome *o) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    rift_stream *st = NULL;
    rift_error err = {0};
    CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "reopen: %s", err.text);
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(st, 1, 1000, &b, NULL));
    CHECK_MSG(b.count >= o->acked_pub, "%zu records, %llu acknowledged",
              b.count, (unsigned long long)o->acked_pub);
    /* The unacknowledged publish in flight may be there, nothing more. */
    CHECK(b.count <= o->acked_pub + 1);
    for (size_t i = 0; i < b.count; i++) {
        CHECK_EQ_U64(b.items[i].record.sequence, i + 1);
        CHECK_MSG(intact(&b.items[i].record), "record %zu damaged", i + 1);
    }
    rift_batch_free(&b);
    rift_consumer *c = NULL;
    if (rift_stream_consumer_get(st, "c", 1, &c, NULL) == 0) {
        CHECK_OK(rift_consumer_fetch(c, 1000, &b, NULL));
        for (size_t i = 0; i < b.count; i++) {
            for (size_t k = 0; k < o->nacked; k++) {
                CHECK_MSG(b.items[i].record.sequence != o->acked[k],
                          "acked %llu delivered again",
                          (unsigned long long)o->acked[k]);
            }
        }
        rift_batch_free(&b);
        rift_consumer_close(c);
    } else {
        /* Only an unacknowledged creation may be missing. */
        CHECK(o->acked_pub <= 5 && o->nacked == 0);
    }
    rift_store_report rep;
    rift_stream_del(st);
    CHECK_OK(rift_store_verify(dir, &rep, &err));
    CHECK(!rep.torn);
}

typedef enum fault_kind {
    FAULT_WRITE,
    FAULT_SYNC,
    FAULT_SHORT,
} fault_kind;

static void run_faults(fault_kind kind, int max_n, bool sync) {
    int failures_seen = 0;
    for (int n = 1; n <= max_n; n++) {
        char *dir = rift_test_tmpdir();
        test_vfs tv;
        test_vfs_init(&tv);
        tv.fake_sync = true;
        rift_log_set_level(RIFT_LOG_OFF);
        if (kind == FAULT_WRITE) {
            atomic_store(&tv.fail_write_at, n);
        } else if (kind == FAULT_SYNC) {
            atomic_store(&tv.fail_sync_at, n);
            tv.fail_errno = EIO;
        } else {
            atomic_store(&tv.short_write_at, n);
        }
        rift_stream_settings s;
        rift_stream_settings_default(&s);
        s.storage_path = dir;
        s.vfs = &tv.vfs;
        s.segment_bytes = 4096; /* rolls several times in the workload */
        s.sync_on_write = sync;
        rift_stream *st = NULL;
        rift_error err = {0};
        outcome o = {0};
        if (rift_stream_new(&st, &s, &err) != 0) {
            /* The fault hit the open itself: nothing was acknowledged. */
            CHECK_MSG(err.code == RIFT_ERR_IO, "open: %s", err.text);
            CHECK(strstr(err.text, "messaging I/O: ") == err.text);
        } else {
            workload(st, &o);
            if (rift_test_failed()) {
                return;
            }
            if (o.failed) {
                failures_seen++;
                CHECK_MSG(o.fail_code == RIFT_ERR_IO ||
                              o.fail_code == RIFT_ERR_STORAGE,
                          "code %d", o.fail_code);
            }
            rift_stream_del(st);
        }
        check_after_reopen(dir, &o);
        if (rift_test_failed()) {
            fprintf(stderr, "fault kind %d at call %d (%s)\n", (int)kind, n,
                    sync ? "synced" : "unsynced");
            return;
        }
        test_vfs_free(&tv);
        rift_test_rmdir(dir);
    }
    CHECK(failures_seen > max_n / 2);
}

RIFT_TEST(fail_nth_write) {
    run_faults(FAULT_WRITE, 60, true);
}

RIFT_TEST(fail_nth_fdatasync) {
    run_faults(FAULT_SYNC, 60, true);
}

RIFT_TEST(short_nth_write) {
    run_faults(FAULT_SHORT, 60, true);
}

/* Unsynced streams acknowledge after write(): a failed or short write
 * fails that very operation, poisons the stream, and loses nothing that
 * was acknowledged. */
RIFT_TEST(fail_nth_write_unsynced) {
    run_faults(FAULT_WRITE, 60, false);
}

RIFT_TEST(short_nth_write_unsynced) {
    run_faults(FAULT_SHORT, 60, false);
}

/* A failing stream does not disturb another one. */
static void disk_full_isolated(bool sync) {
    char *da = rift_test_tmpdir(), *db = rift_test_tmpdir();
    test_vfs tv;
    test_vfs_init(&tv);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.sync_on_write = sync;
    s.storage_path = da;
    s.vfs = &tv.vfs;
    rift_stream *a = NULL, *b = NULL;
    CHECK_OK(rift_stream_new(&a, &s, NULL));
    s.storage_path = db;
    s.vfs = NULL;
    CHECK_OK(rift_stream_new(&b, &s, NULL));
    uint8_t buf[512];
    size_t len = pattern(1, buf);
    CHECK_OK(rift_stream_publish(a, "f.rec", 5, NULL, 0, buf, len, NULL, NULL));
    atomic_store(&tv.fail_write_at, atomic_load(&tv.pwrites) + 1);
    rift_error err = {0};
    len = pattern(2, buf);
    CHECK_EQ_INT(
        rift_stream_publish(a, "f.rec", 5, NULL, 0, buf, len, NULL, &err),
        RIFT_ERR_IO);
    CHECK_MSG(strstr(err.text, "No space left on device (os error 28)") != NULL,
              "%s", err.text);
    CHECK(strstr(err.text, da) == NULL); /* no directory names leak */
    CHECK_EQ_INT(
        rift_stream_publish(a, "f.rec", 5, NULL, 0, buf, len, NULL, &err),
        RIFT_ERR_STORAGE);
    for (uint64_t i = 1; i <= 5; i++) {
        len = pattern(i, buf);
        rift_stored out;
        CHECK_OK(
            rift_stream_publish(b, "f.rec", 5, NULL, 0, buf, len, &out, NULL));
        CHECK_EQ_U64(out.sequence, i);
    }
    rift_stream_del(a);
    rift_stream_del(b);
    outcome o = {.acked_pub = 1};
    check_after_reopen(da, &o);
    o.acked_pub = 5;
    check_after_reopen(db, &o);
    test_vfs_free(&tv);
    rift_test_rmdir(da);
    rift_test_rmdir(db);
}

RIFT_TEST(disk_full_isolated) {
    disk_full_isolated(true);
}

RIFT_TEST(disk_full_isolated_unsynced) {
    disk_full_isolated(false);
}

/* The async form reports the failure through its callback. */
typedef struct cb_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int failed;
    int code;
} cb_state;

static void on_done(void *ud, int status, const rift_error *err) {
    cb_state *c = ud;
    pthread_mutex_lock(&c->mu);
    c->done++;
    if (status != 0) {
        c->failed++;
        c->code = err ? err->code : status;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* |sync|: the group's fdatasync fails; else (unsynced) its write does. */
static void async_failure(bool sync) {
    char *dir = rift_test_tmpdir();
    test_vfs tv;
    test_vfs_init(&tv);
    tv.fail_errno = EIO;
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.vfs = &tv.vfs;
    s.sync_on_write = sync;
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    cb_state cs = {.done = 0};
    pthread_mutex_init(&cs.mu, NULL);
    pthread_cond_init(&cs.cv, NULL);
    if (sync) {
        atomic_store(&tv.fail_sync_at, atomic_load(&tv.syncs) + 1);
    } else {
        atomic_store(&tv.fail_write_at, atomic_load(&tv.pwrites) + 1);
    }
    int pending = 0;
    uint8_t buf[512];
    for (uint64_t i = 1; i <= 10; i++) {
        size_t len = pattern(i, buf);
        bool completed = false;
        int rc =
            rift_stream_publish_async(st, "f.rec", 5, NULL, 0, buf, len, NULL,
                                      &completed, on_done, &cs, NULL);
        if (rc == 0 && !completed) {
            pending++;
        } else {
            CHECK_EQ_INT(rc, RIFT_ERR_STORAGE); /* already poisoned */
        }
    }
    pthread_mutex_lock(&cs.mu);
    while (cs.done < pending) {
        pthread_cond_wait(&cs.cv, &cs.mu);
    }
    pthread_mutex_unlock(&cs.mu);
    CHECK(pending > 0);
    CHECK_EQ_INT(cs.failed, pending);
    CHECK_EQ_INT(cs.code, RIFT_ERR_IO);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK(info.poisoned);
    rift_stream_info_free(&info);
    rift_stream_del(st);
    pthread_mutex_destroy(&cs.mu);
    pthread_cond_destroy(&cs.cv);
    test_vfs_free(&tv);
    rift_test_rmdir(dir);
}

RIFT_TEST(async_failure_reaches_callbacks) {
    async_failure(true);
}

RIFT_TEST(async_write_failure_unsynced) {
    async_failure(false);
}

/* ---- Failing allocations ---- */

typedef struct fail_mem {
    rift_mem mem;
    atomic_int calls;
    atomic_int fail_at;
} fail_mem;

static bool should_fail(fail_mem *m) {
    int n = atomic_fetch_add(&m->calls, 1) + 1;
    return n == atomic_load(&m->fail_at);
}

static void *fm_malloc(size_t size, void *ud) {
    return should_fail(ud) ? NULL : malloc(size);
}

static void *fm_calloc(size_t n, size_t size, void *ud) {
    return should_fail(ud) ? NULL : calloc(n, size);
}

static void *fm_realloc(void *p, size_t size, void *ud) {
    return should_fail(ud) ? NULL : realloc(p, size);
}

static void fm_free(void *p, void *ud) {
    (void)ud;
    free(p);
}

/* Out of memory, or the poison left by an allocation the writer thread
 * could not make. */
static bool ok_code(int rc) {
    return rc == 0 || rc == RIFT_ERR_NOMEM || rc == RIFT_ERR_STORAGE;
}

static void alloc_workload(bool file, int fail_at, bool *hit) {
    fail_mem fm = {.mem = {.malloc = fm_malloc,
                           .calloc = fm_calloc,
                           .realloc = fm_realloc,
                           .free = fm_free}};
    fm.mem.user_data = &fm;
    atomic_store(&fm.fail_at, fail_at);
    char *dir = file ? rift_test_tmpdir() : NULL;
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.mem = &fm.mem;
    s.storage_path = dir;
    s.sync_on_write = false;
    s.segment_bytes = 4096;
    rift_stream *st = NULL;
    rift_error err = {0};
    *hit = false;
    if (rift_stream_new(&st, &s, &err) != 0) {
        CHECK_EQ_INT(err.code, RIFT_ERR_NOMEM);
        *hit = true;
        rift_test_rmdir(dir);
        return;
    }
    uint8_t buf[512];
    rift_consumer *c = NULL;
    int rc = rift_stream_consumer_open(st, "c", 1, NULL, &c, &err);
    CHECK(ok_code(rc));
    for (uint64_t i = 1; i <= 30; i++) {
        size_t len = pattern(i, buf);
        rc = rift_stream_publish(st, "f.rec", 5, NULL, 0, buf, len, NULL, &err);
        CHECK(ok_code(rc));
        if (c != NULL) {
            rift_batch b = {0};
            rc = rift_consumer_fetch(c, 2, &b, &err);
            CHECK(ok_code(rc));
            for (size_t k = 0; k < b.count; k++) {
                rc = rift_consumer_ack(c, b.items[k].record.sequence, &err);
                CHECK(ok_code(rc));
            }
            rift_batch_free(&b);
        }
        rift_batch r = {0};
        rc = rift_stream_replay(st, 1, 5, &r, &err);
        CHECK(ok_code(rc));
        rift_batch_free(&r);
    }
    rift_stream_info info;
    rc = rift_stream_get_info(st, &info, &err);
    CHECK(ok_code(rc));
    if (rc == 0) {
        rift_stream_info_free(&info);
    }
    rift_consumer_close(c);
    rift_stream_del(st);
    *hit = atomic_load(&fm.calls) >= fail_at;
    if (file) {
        /* Whatever failed, the directory opens again. */
        rift_stream_settings_default(&s);
        s.storage_path = dir;
        CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "%s", err.text);
        rift_stream_del(st);
    }
    rift_test_rmdir(dir);
}

static void alloc_faults(bool file) {
    for (int n = 1; n < 2000; n += 7) {
        bool hit;
        alloc_workload(file, n, &hit);
        if (rift_test_failed()) {
            fprintf(stderr, "allocation %d failed\n", n);
            return;
        }
        if (!hit) {
            break; /* the workload no longer reaches allocation n */
        }
    }
}

RIFT_TEST(fail_nth_allocation_memory) {
    alloc_faults(false);
}

RIFT_TEST(fail_nth_allocation_file) {
    alloc_faults(true);
}

/* ---- Torn state log ---- */

RIFT_TEST(state_log_torn_every_length) {
    char *dir = rift_test_tmpdir();
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    uint8_t buf[512];
    for (uint64_t i = 1; i <= 6; i++) {
        size_t len = pattern(i, buf);
        CHECK_OK(
            rift_stream_publish(st, "f.rec", 5, NULL, 0, buf, len, NULL, NULL));
    }
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "c", 1, NULL, &c, NULL));
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(c, 4, &b, NULL));
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(c, 2, NULL));
    CHECK_OK(rift_consumer_ack(c, 3, NULL));
    rift_consumer_close(c);
    rift_stream_del(st);
    char path[4200], copy[4200];
    snprintf(path, sizeof(path), "%s/state.log", dir);
    snprintf(copy, sizeof(copy), "%s/state.copy", dir);
    long full = test_file_size(path);
    FILE *f = fopen(path, "rb");
    static uint8_t data[8192];
    size_t n = fread(data, 1, sizeof(data), f);
    fclose(f);
    CHECK_EQ_INT((long)n, full);
    for (long cut = 16; cut <= full; cut++) {
        f = fopen(path, "wb");
        fwrite(data, 1, (size_t)cut, f);
        fclose(f);
        rift_error err = {0};
        CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "cut %ld: %s", cut,
                  err.text);
        if (rift_stream_consumer_get(st, "c", 1, &c, NULL) == 0) {
            rift_consumer_info ci;
            CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
            /* A prefix of the history: 0, 4, 3 or 2 pending. */
            CHECK(ci.pending <= 4);
            rift_consumer_close(c);
        }
        rift_stream_del(st);
    }
    (void)copy;
    rift_test_rmdir(dir);
}

/* ---- Pipelined syncs: a failure with several syncs in flight ---- */

typedef struct cpub {
    rift_stream *st;
    uint64_t ok[512];
    size_t nok;
} cpub;

static void *cpub_main(void *p) {
    cpub *c = p;
    uint8_t buf[512];
    for (int i = 0; i < 200; i++) {
        /* Sequences are only known afterwards, so the payload is fixed:
         * the check is on presence and on the checksums. */
        memset(buf, 0x5A, 64);
        rift_stored out;
        if (rift_stream_publish(c->st, "f.rec", 5, NULL, 0, buf, 64, &out,
                                NULL) != 0) {
            break;
        }
        c->ok[c->nok++] = out.sequence;
    }
    return NULL;
}

RIFT_TEST(concurrent_sync_failure) {
    const int at[] = {3, 9, 17, 40};
    for (size_t k = 0; k < RIFT_ARRAY_LEN(at); k++) {
        char *dir = rift_test_tmpdir();
        test_vfs tv;
        test_vfs_init(&tv);
        tv.fail_errno = EIO;
        rift_log_set_level(RIFT_LOG_OFF);
        rift_stream_settings s;
        rift_stream_settings_default(&s);
        s.storage_path = dir;
        s.vfs = &tv.vfs;
        rift_stream *st = NULL;
        CHECK_OK(rift_stream_new(&st, &s, NULL));
        atomic_store(&tv.fail_sync_at, atomic_load(&tv.syncs) + at[k]);
        cpub p[8];
        pthread_t th[8];
        for (int i = 0; i < 8; i++) {
            p[i].st = st;
            p[i].nok = 0;
            pthread_create(&th[i], NULL, cpub_main, &p[i]);
        }
        for (int i = 0; i < 8; i++) {
            pthread_join(th[i], NULL);
        }
        rift_stream_info info;
        CHECK_OK(rift_stream_get_info(st, &info, NULL));
        CHECK(info.poisoned);
        rift_stream_info_free(&info);
        rift_stream_del(st);
        s.vfs = NULL;
        CHECK_OK(rift_stream_new(&st, &s, NULL));
        CHECK_OK(rift_stream_get_info(st, &info, NULL));
        for (int i = 0; i < 8; i++) {
            for (size_t j = 0; j < p[i].nok; j++) {
                CHECK_MSG(p[i].ok[j] <= info.last_sequence,
                          "acknowledged %llu lost (last %llu)",
                          (unsigned long long)p[i].ok[j],
                          (unsigned long long)info.last_sequence);
            }
        }
        rift_batch b = {0};
        CHECK_OK(rift_stream_replay(st, 1, 65536, &b, NULL));
        CHECK_EQ_U64(b.count, info.last_sequence);
        for (size_t i = 0; i < b.count; i++) {
            CHECK_EQ_INT(b.items[i].record.payload_len, 64);
            CHECK_EQ_INT(b.items[i].record.payload[63], 0x5A);
        }
        rift_batch_free(&b);
        rift_stream_info_free(&info);
        rift_stream_del(st);
        test_vfs_free(&tv);
        rift_test_rmdir(dir);
    }
}
