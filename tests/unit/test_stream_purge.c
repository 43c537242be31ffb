/*
 * test_stream_purge.c — rift_stream_purge (unit tests of the store layer):
 * every record goes, the sequence carries on, consumers stay with their
 * cursors past the purged records and their pending deliveries of them
 * forgotten; on file storage the emptied segments are unlinked and a
 * reopen does not bring a purged record back.
 */
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"

static rift_stream *open_stream(const char *dir) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.segment_bytes = 4096; /* several segments for a few records */
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.text);
        return NULL;
    }
    return st;
}

static uint64_t pub(rift_stream *st) {
    static const uint8_t payload[600];
    rift_stored out = {0};
    int rc = rift_stream_publish(st, "p.x", 3, NULL, 0, payload,
                                 sizeof(payload), &out, NULL);
    return rc == 0 ? out.sequence : 0;
}

/* The next record consumer |c| is given: its sequence, 0 when none. */
static uint64_t next_of(rift_consumer *c) {
    rift_batch b = {0};
    if (rift_consumer_fetch(c, 1, &b, NULL) != 0 || b.count == 0) {
        rift_batch_free(&b);
        return 0;
    }
    uint64_t seq = b.items[0].record.sequence;
    rift_batch_free(&b);
    return seq;
}

static rift_consumer *consumer(rift_stream *st) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    rift_consumer *c = NULL;
    return rift_stream_consumer_open(st, "w", 1, &cfg, &c, NULL) == 0 ? c
                                                                      : NULL;
}

static void purge_keeps_the_sequence(const char *dir) {
    rift_stream *st = open_stream(dir);
    CHECK(st != NULL);
    rift_consumer *w = consumer(st);
    CHECK(w != NULL);
    for (uint64_t i = 1; i <= 20; i++) {
        CHECK_EQ_U64(pub(st), i);
    }
    CHECK_EQ_U64(next_of(w), 1); /* pending, never acked */
    if (dir != NULL) {
        CHECK(test_segments(dir, NULL, 0) > 2);
    }

    uint64_t purged = 0;
    CHECK_OK(rift_stream_purge(st, &purged, NULL));
    CHECK_EQ_U64(purged, 20);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.bytes, 0);
    CHECK_EQ_U64(info.first_sequence, 21);
    CHECK_EQ_U64(info.last_sequence, 20);
    CHECK_EQ_INT(info.consumer_count, 1);
    rift_stream_info_free(&info);
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 0);
    CHECK_EQ_U64(ci.next_sequence, 21);
    CHECK_EQ_U64(next_of(w), 0);
    if (dir != NULL) {
        CHECK_EQ_INT(test_segments(dir, NULL, 0), 1); /* the active one */
    }

    /* An empty stream purges to nothing; the sequence still carries on. */
    CHECK_OK(rift_stream_purge(st, &purged, NULL));
    CHECK_EQ_U64(purged, 0);
    CHECK_EQ_U64(pub(st), 21);
    CHECK_EQ_U64(next_of(w), 21);
    CHECK_OK(rift_consumer_ack(w, 21, NULL));
    CHECK_EQ_U64(pub(st), 22);
    CHECK_OK(rift_stream_purge(st, NULL, NULL));
    rift_consumer_close(w);
    if (dir == NULL) {
        rift_stream_del(st);
        return;
    }

    /* Reopened: nothing purged comes back, and nothing is reused. */
    rift_stream_del(st);
    st = open_stream(dir);
    CHECK(st != NULL);
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.first_sequence, 23);
    rift_stream_info_free(&info);
    w = consumer(st);
    CHECK(w != NULL);
    CHECK_EQ_U64(next_of(w), 0);
    CHECK_EQ_U64(pub(st), 23);
    CHECK_EQ_U64(next_of(w), 23);
    rift_consumer_close(w);
    rift_stream_del(st);
}

RIFT_TEST(purge_memory) {
    purge_keeps_the_sequence(NULL);
}

RIFT_TEST(purge_file) {
    char *dir = rift_test_tmpdir();
    purge_keeps_the_sequence(dir);
    rift_test_rmdir(dir);
}
