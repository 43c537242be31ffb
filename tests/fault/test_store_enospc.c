/*
 * test_store_enospc.c — a full disk while the stream runs (fault tests of
 * the store layer): the publish that hits it fails and is not counted (its
 * sequence is used again), later writes are refused with a text saying
 * what works, and once space is back the stream accepts writes again —
 * by itself after the back-off, or at once after rift_stream_reopen —
 * with every acknowledged record and ack intact, before and after a
 * restart.
 */
// labels: threads
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"
#include "common/common.h"

#define T0 1700000000000ull

static char payload_of(uint64_t seq) {
    return (char)('a' + seq % 26);
}

static int pub(rift_stream *st, uint64_t *seq, rift_error *err) {
    char buf[300];
    /* Larger than half of a 4 KiB segment now and then: segments roll. */
    uint64_t next = *seq + 1;
    size_t len = 100 + (size_t)(next % 3) * 90;
    memset(buf, payload_of(next), len);
    rift_stored out = {0};
    int rc = rift_stream_publish(st, "e.rec", 5, NULL, 0, (const uint8_t *)buf,
                                 len, &out, err);
    if (rc == 0) {
        *seq = out.sequence;
    }
    return rc;
}

typedef struct counts {
    uint64_t messages, bytes, last;
    bool poisoned;
} counts;

static counts counts_of(rift_stream *st) {
    rift_stream_info si;
    counts c = {0};
    if (rift_stream_get_info(st, &si, NULL) == 0) {
        c.messages = si.messages;
        c.bytes = si.bytes;
        c.last = si.last_sequence;
        c.poisoned = si.poisoned;
        rift_stream_info_free(&si);
    }
    return c;
}

/* Every record 1..|last| is there, in order, intact. */
static void check_records(rift_stream *st, uint64_t last) {
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(st, 1, 1000, &b, NULL));
    CHECK_EQ_U64(b.count, last);
    for (size_t i = 0; i < b.count; i++) {
        const rift_record *r = &b.items[i].record;
        CHECK_EQ_U64(r->sequence, i + 1);
        size_t want = 100 + (size_t)(r->sequence % 3) * 90;
        CHECK_EQ_U64(r->payload_len, want);
        bool same = true;
        for (size_t k = 0; k < r->payload_len; k++) {
            same = same && r->payload[k] == (uint8_t)payload_of(r->sequence);
        }
        CHECK_MSG(same, "record %llu damaged", (unsigned long long)r->sequence);
    }
    rift_batch_free(&b);
}

/* The consumer has 2 and 4 pending and its cursor at 5. */
static void check_consumer(rift_stream *st) {
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_get(st, "w", 1, &c, NULL));
    if (c == NULL) {
        return;
    }
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.pending, 2);
    CHECK_EQ_U64(ci.next_sequence, 5);
    rift_consumer_close(c);
}

static void run(bool sync_on_write) {
    char *dir = rift_test_tmpdir();
    test_vfs tv;
    test_vfs_init(&tv);
    tv.fake_sync = true;
    atomic_store(&tv.now_ms, T0);
    rift_log_set_level(RIFT_LOG_OFF);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.vfs = &tv.vfs;
    s.segment_bytes = 4096;
    s.sync_on_write = sync_on_write;
    rift_stream *st = NULL;
    rift_error err = {0};
    CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "open: %s", err.text);
    if (st == NULL) {
        return;
    }
    uint64_t seq = 0;
    for (int i = 0; i < 30; i++) {
        CHECK_OK(pub(st, &seq, NULL));
    }
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "w", 1, NULL, &c, NULL));
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(c, 4, &b, NULL));
    CHECK_EQ_U64(b.count, 4);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(c, 1, NULL));
    CHECK_OK(rift_consumer_ack(c, 3, NULL));
    counts before = counts_of(st);
    CHECK_EQ_U64(before.last, 30);

    /* The disk fills in the middle of a record's write. */
    atomic_store(&tv.short_write_at, atomic_load(&tv.pwrites) + 1);
    int rc = pub(st, &seq, &err);
    CHECK_EQ_INT(rc, RIFT_ERR_IO);
    CHECK_MSG(strstr(err.text, "No space left on device") != NULL, "%s",
              err.text);
    CHECK(strstr(err.text, dir) == NULL); /* no server path */
    counts after = counts_of(st);
    CHECK_EQ_U64(after.messages, before.messages);
    CHECK_EQ_U64(after.bytes, before.bytes);
    CHECK_EQ_U64(after.last, before.last);
    CHECK(after.poisoned);
    /* Acks and fetches are refused too, with a text saying what works. */
    rc = rift_consumer_ack(c, 2, &err);
    CHECK_EQ_INT(rc, RIFT_ERR_STORAGE);
    CHECK_MSG(strstr(err.text, "lack of space") != NULL &&
                  strstr(err.text, "retried automatically") != NULL &&
                  strstr(err.text, "reopen the stream") != NULL,
              "%s", err.text);
    check_consumer(st);

    /* Space comes back; writes resume after the back-off, not before. */
    atomic_store(&tv.short_write_at, 0);
    atomic_store(&tv.writes_dead, 0);
    CHECK_EQ_INT(pub(st, &seq, &err), RIFT_ERR_STORAGE);
    atomic_store(&tv.now_ms, T0 + 1000);
    CHECK_MSG(pub(st, &seq, &err) == 0, "after the back-off: %s", err.text);
    CHECK_EQ_U64(seq, 31); /* the failed publish took no sequence */
    counts resumed = counts_of(st);
    CHECK_EQ_U64(resumed.messages, before.messages + 1);
    CHECK(!resumed.poisoned);
    check_records(st, 31);
    check_consumer(st);

    /* Full again: an explicit reopen resumes at once once space is back. */
    atomic_store(&tv.writes_dead, 1);
    CHECK(pub(st, &seq, &err) != 0);
    CHECK(pub(st, &seq, &err) != 0);
    atomic_store(&tv.writes_dead, 0);
    CHECK_MSG(rift_stream_reopen(st, &err) == 0, "reopen: %s", err.text);
    CHECK_MSG(pub(st, &seq, &err) == 0, "after reopen: %s", err.text);
    CHECK_EQ_U64(seq, 32);
    /* The consumer handle of before still works. */
    CHECK_OK(rift_consumer_ack(c, 2, NULL));
    CHECK_OK(rift_consumer_fetch(c, 1, &b, NULL));
    CHECK_EQ_U64(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 5);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(c, 5, NULL));
    rift_consumer_close(c);
    check_records(st, 32);
    rift_stream_del(st);

    /* A restart agrees. */
    rift_store_report rep;
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "verify: %s", err.text);
    CHECK(!rep.torn);
    CHECK_EQ_U64(rep.records, 32);
    s.vfs = NULL;
    CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "open: %s", err.text);
    if (st != NULL) {
        check_records(st, 32);
        CHECK_OK(rift_stream_consumer_get(st, "w", 1, &c, NULL));
        rift_consumer_info ci;
        CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
        CHECK_EQ_U64(ci.pending, 1); /* 4 */
        CHECK_EQ_U64(ci.next_sequence, 6);
        rift_consumer_close(c);
        rift_stream_del(st);
    }
    test_vfs_free(&tv);
    rift_test_rmdir(dir);
}

RIFT_TEST(disk_full_then_space_back_synced) {
    run(true);
}

RIFT_TEST(disk_full_then_space_back_unsynced) {
    run(false);
}

/* After another I/O error nothing is retried by itself: only a reopen
 * (an operator's decision) lets writes through again. */
RIFT_TEST(io_error_waits_for_reopen) {
    char *dir = rift_test_tmpdir();
    test_vfs tv;
    test_vfs_init(&tv);
    tv.fake_sync = true;
    tv.fail_errno = EIO;
    atomic_store(&tv.now_ms, T0);
    rift_log_set_level(RIFT_LOG_OFF);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.vfs = &tv.vfs;
    rift_stream *st = NULL;
    rift_error err = {0};
    CHECK_OK(rift_stream_new(&st, &s, &err));
    if (st == NULL) {
        return;
    }
    uint64_t seq = 0;
    CHECK_OK(pub(st, &seq, NULL));
    atomic_store(&tv.fail_write_at, atomic_load(&tv.pwrites) + 1);
    CHECK_EQ_INT(pub(st, &seq, &err), RIFT_ERR_IO);
    atomic_store(&tv.now_ms, T0 + 3600 * 1000);
    CHECK_EQ_INT(pub(st, &seq, &err), RIFT_ERR_STORAGE);
    CHECK_MSG(strstr(err.text, "nothing is retried") != NULL &&
                  strstr(err.text, "reopen the stream") != NULL,
              "%s", err.text);
    CHECK_EQ_U64(counts_of(st).last, 1);
    CHECK_OK(rift_stream_reopen(st, &err));
    CHECK_MSG(pub(st, &seq, &err) == 0, "after reopen: %s", err.text);
    CHECK_EQ_U64(seq, 2);
    check_records(st, 2);
    rift_stream_del(st);
    test_vfs_free(&tv);
    rift_test_rmdir(dir);
}
