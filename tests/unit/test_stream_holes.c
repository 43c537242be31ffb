/*
 * test_stream_holes.c — sequence numbers are never reused (unit tests of
 * the store layer): after `rift store repair` cuts records, or an open
 * finds fewer records than consumers have seen, the next publish gets a
 * sequence past everything that was seen; the lost ones become a hole
 * that fetch and replay skip, that survives reopening, snapshots and
 * retention, and that a consumer waiting for a future start sequence does
 * not cause.
 */
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"

static rift_stream *open_dir(const char *dir, uint64_t max_messages) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.max_messages = max_messages;
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.text);
        return NULL;
    }
    return st;
}

static uint64_t pub(rift_stream *st, const char *payload) {
    rift_stored out = {0};
    int rc =
        rift_stream_publish(st, "h.x", 3, NULL, 0, (const uint8_t *)payload,
                            strlen(payload), &out, NULL);
    return rc == 0 ? out.sequence : 0;
}

/* Fetches up to |limit| and returns the count; sequences into |seqs|. */
static size_t fetch(rift_consumer *c, size_t limit, uint64_t *seqs) {
    rift_batch b = {0};
    if (rift_consumer_fetch(c, limit, &b, NULL) != 0) {
        return SIZE_MAX;
    }
    size_t n = b.count;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = b.items[i].record.sequence;
    }
    rift_batch_free(&b);
    return n;
}

/* The sequences replay returns from 1, into |seqs|. */
static size_t replay_all(rift_stream *st, uint64_t *seqs, size_t cap) {
    rift_batch b = {0};
    if (rift_stream_replay(st, 1, cap, &b, NULL) != 0) {
        return SIZE_MAX;
    }
    size_t n = b.count;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = b.items[i].record.sequence;
    }
    rift_batch_free(&b);
    return n;
}

static void newest_segment(const char *dir, char *path, size_t len) {
    test_segments(dir, path, len);
}

/*
 * The brief's scenario: a consumer has fetched past the last record, the
 * last record is corrupted, repair cuts it; a new publish gets a sequence
 * greater than anything the consumer saw, and the consumer gets it.
 */
RIFT_TEST(repair_never_reuses_sequences) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_dir(dir, 100000);
    CHECK(st != NULL);
    for (int i = 1; i <= 5; i++) {
        CHECK_EQ_U64(pub(st, "old"), (uint64_t)i);
    }
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "c", 1, NULL, &c, NULL));
    uint64_t seqs[64];
    CHECK_EQ_INT(fetch(c, 10, seqs), 5);
    CHECK_OK(rift_consumer_ack(c, 1, NULL));
    CHECK_OK(rift_consumer_ack(c, 2, NULL));
    rift_consumer_close(c);
    rift_stream_del(st);

    char seg[4200];
    newest_segment(dir, seg, sizeof(seg));
    CHECK_OK(test_flip(seg, -1)); /* record 5 */
    rift_store_report rep;
    rift_error err = {0};
    CHECK_EQ_INT(rift_store_verify(dir, &rep, &err), RIFT_ERR_STORAGE);
    CHECK_MSG(rift_store_repair(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.records, 4);
    CHECK_EQ_U64(rep.last_sequence, 4);
    CHECK_EQ_U64(rep.next_sequence, 6);

    st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_U64(pub(st, "new"), 6);
    CHECK_OK(rift_stream_consumer_get(st, "c", 1, &c, NULL));
    /* Redeliveries of 3 and 4 (5 is gone), then the new record 6. */
    CHECK_EQ_INT(fetch(c, 10, seqs), 3);
    CHECK_EQ_U64(seqs[0], 3);
    CHECK_EQ_U64(seqs[1], 4);
    CHECK_EQ_U64(seqs[2], 6);
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.next_sequence, 7);
    CHECK_EQ_INT(ci.pending, 3);
    rift_error aerr = {0};
    CHECK_EQ_INT(rift_consumer_ack(c, 5, &aerr), RIFT_ERR_INVALID_ACK);
    rift_consumer_close(c);
    CHECK_EQ_INT(replay_all(st, seqs, 64), 5);
    CHECK_EQ_U64(seqs[3], 4);
    CHECK_EQ_U64(seqs[4], 6);
    /* LAST_RECEIVED means the newest record, not the lost sequence. */
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.start = RIFT_START_LAST_RECEIVED;
    CHECK_OK(rift_stream_consumer_open(st, "last", 4, &cfg, &c, NULL));
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.start_sequence, 6);
    rift_consumer_close(c);
    rift_stream_del(st);

    /* Reopen: the gap between the segments is the logged hole. */
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.records, 5);
    CHECK_EQ_U64(rep.next_sequence, 7);
    st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_INT(replay_all(st, seqs, 64), 5);
    CHECK_EQ_U64(seqs[4], 6);
    /* A snapshot replaces the log and must carry the hole. */
    CHECK_OK(rift_stream_checkpoint(st, NULL));
    rift_stream_del(st);
    st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_U64(pub(st, "newer"), 7);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 6);
    CHECK_EQ_U64(info.first_sequence, 1);
    CHECK_EQ_U64(info.last_sequence, 7);
    rift_stream_info_free(&info);
    rift_stream_del(st);

    /* Retention passes the hole: the first retained sequence jumps it. */
    st = open_dir(dir, 2);
    CHECK(st != NULL);
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 2);
    CHECK_EQ_U64(info.first_sequence, 6);
    rift_stream_info_free(&info);
    CHECK_EQ_U64(pub(st, "newest"), 8);
    CHECK_EQ_INT(replay_all(st, seqs, 64), 2);
    CHECK_EQ_U64(seqs[0], 7);
    rift_stream_del(st);
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.next_sequence, 9);
    rift_test_rmdir(dir);
}

/* An open that finds fewer records than a consumer saw (here: the tail of
 * the segment is gone) continues past the consumer's cursor. */
RIFT_TEST(lost_tail_never_reuses_sequences) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_dir(dir, 100000);
    CHECK(st != NULL);
    for (int i = 1; i <= 5; i++) {
        CHECK_EQ_U64(pub(st, "abc"), (uint64_t)i);
    }
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "c", 1, NULL, &c, NULL));
    uint64_t seqs[64];
    CHECK_EQ_INT(fetch(c, 10, seqs), 5);
    CHECK_OK(rift_consumer_ack(c, 4, NULL));
    rift_consumer_close(c);
    rift_stream_del(st);
    /* Keep records 1 and 2 (32 + 3 + 3 = 38 bytes each). */
    char seg[4200];
    newest_segment(dir, seg, sizeof(seg));
    CHECK_OK(truncate(seg, 32 + 2 * 38));
    st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_U64(pub(st, "def"), 6);
    CHECK_OK(rift_stream_consumer_get(st, "c", 1, &c, NULL));
    CHECK_EQ_INT(fetch(c, 10, seqs), 3);
    CHECK_EQ_U64(seqs[0], 1);
    CHECK_EQ_U64(seqs[1], 2);
    CHECK_EQ_U64(seqs[2], 6);
    rift_consumer_close(c);
    rift_stream_del(st);
    rift_store_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.records, 3);
    CHECK_EQ_U64(rep.next_sequence, 7);
    rift_test_rmdir(dir);
}

/* Every record lost: the stream restarts empty past them (FIRST_SEQ). */
RIFT_TEST(repair_of_only_record) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_U64(pub(st, "one"), 1);
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "c", 1, NULL, &c, NULL));
    uint64_t seqs[8];
    CHECK_EQ_INT(fetch(c, 10, seqs), 1);
    rift_consumer_close(c);
    rift_stream_del(st);
    char seg[4200];
    newest_segment(dir, seg, sizeof(seg));
    CHECK_OK(test_flip(seg, -1));
    rift_store_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_store_repair(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.records, 0);
    CHECK_EQ_U64(rep.next_sequence, 2);
    for (int round = 0; round < 2; round++) {
        st = open_dir(dir, 100000);
        CHECK(st != NULL);
        CHECK_EQ_U64(pub(st, "two"), (uint64_t)round + 2);
        CHECK_OK(rift_stream_consumer_get(st, "c", 1, &c, NULL));
        CHECK_EQ_INT(fetch(c, 10, seqs), 1);
        CHECK_EQ_U64(seqs[0], (uint64_t)round + 2);
        CHECK_OK(rift_consumer_ack(c, seqs[0], NULL));
        rift_consumer_close(c);
        rift_stream_del(st);
    }
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "%s", err.text);
    rift_test_rmdir(dir);
}

/* A consumer waiting for a sequence beyond the end is no evidence that the
 * sequence was used: reopening does not jump to it (§4.7 semantics). */
RIFT_TEST(future_start_is_not_a_floor) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_dir(dir, 100000);
    CHECK(st != NULL);
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ_U64(pub(st, "abc"), (uint64_t)i);
    }
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.start_sequence = 100;
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "later", 5, &cfg, &c, NULL));
    uint64_t seqs[8];
    CHECK_EQ_INT(fetch(c, 10, seqs), 0);
    rift_consumer_close(c);
    rift_stream_del(st);
    st = open_dir(dir, 100000);
    CHECK(st != NULL);
    CHECK_EQ_U64(pub(st, "abc"), 4);
    rift_consumer_info ci;
    CHECK_OK(rift_stream_consumer_get(st, "later", 5, &c, NULL));
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.next_sequence, 100);
    rift_consumer_close(c);
    rift_stream_del(st);
    rift_test_rmdir(dir);
}

/* Segments deleted by a repair still tell which sequences were used, even
 * with no consumer at all. */
RIFT_TEST(repair_counts_deleted_segments) {
    char *dir = rift_test_tmpdir();
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.segment_bytes = 4096;
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    char payload[1000];
    memset(payload, 'p', sizeof(payload) - 1);
    payload[sizeof(payload) - 1] = '\0';
    for (int i = 1; i <= 10; i++) {
        CHECK_EQ_U64(pub(st, payload), (uint64_t)i);
    }
    rift_stream_del(st);
    /* Records are 1,034 bytes, three per segment: damage the second
     * segment's first record (sequence 4). */
    char second[4200];
    snprintf(second, sizeof(second), "%s/00000000000000000004.seg", dir);
    CHECK_OK(test_flip(second, 32 + 100));
    rift_store_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_store_repair(dir, &rep, &err) == 0, "%s", err.text);
    CHECK_EQ_U64(rep.records, 3);
    CHECK_EQ_U64(rep.next_sequence, 11);
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    CHECK_EQ_U64(pub(st, "x"), 11);
    rift_stream_del(st);
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    uint64_t seqs[16];
    CHECK_EQ_INT(replay_all(st, seqs, 16), 4);
    CHECK_EQ_U64(seqs[2], 3);
    CHECK_EQ_U64(seqs[3], 11);
    rift_stream_del(st);
    rift_test_rmdir(dir);
}
