/*
 * test_stream.c — retained streams and durable consumers (unit tests of
 * the store layer): every conformance vector of docs/protocol-v1.md §4.8
 * on memory and on file storage, limits and error texts, and the
 * extensions (age retention, consumer delete, start positions).
 */
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"
#include "store/stream_types.h"

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

static int ctx_open(ctx *c, rift_error *err) {
    c->st = NULL;
    return rift_stream_new(&c->st, &c->s, err);
}

/* Reopens file storage; memory streams stay as they are. */
static int ctx_reopen(ctx *c, rift_error *err) {
    if (!c->file) {
        return 0;
    }
    rift_stream_del(c->st);
    c->st = NULL;
    return ctx_open(c, err);
}

static void ctx_done(ctx *c) {
    rift_stream_del(c->st);
    c->st = NULL;
    rift_test_rmdir(c->dir);
    c->dir = NULL;
    test_vfs_free(&c->tv);
}

static uint64_t pub(rift_stream *st, const char *subject, const char *payload) {
    rift_stored out = {0};
    rift_error err = {0};
    int rc = rift_stream_publish(st, subject, strlen(subject), NULL, 0,
                                 (const uint8_t *)payload, strlen(payload),
                                 &out, &err);
    return rc == 0 ? out.sequence : 0;
}

static rift_consumer *open_consumer(rift_stream *st, const char *name,
                                    const rift_consumer_config *cfg) {
    rift_consumer *c = NULL;
    rift_error err = {0};
    if (rift_stream_consumer_open(st, name, strlen(name), cfg, &c, &err) != 0) {
        fprintf(stderr, "consumer open: %s\n", err.text);
        return NULL;
    }
    return c;
}

/* ---- §4.8 vector 1: matching, sequences, replay ---- */

static void vector1(bool file) {
    ctx c;
    ctx_init(&c, file);
    const char *subjects[] = {"orders.>"};
    c.s.subjects = subjects;
    c.s.subjects_count = 1;
    c.s.max_messages = 2;
    CHECK_OK(ctx_open(&c, NULL));
    rift_error err = {0};
    int rc = rift_stream_publish(c.st, "elsewhere", 9, NULL, 0,
                                 (const uint8_t *)"x", 1, NULL, &err);
    CHECK_EQ_INT(rc, RIFT_ERR_STREAM_NOT_MATCHED);
    CHECK_EQ_STR(err.text, "subject does not match this stream");
    CHECK_EQ_U64(pub(c.st, "orders.new", "a"), 1);
    CHECK_EQ_U64(pub(c.st, "orders.new", "b"), 2);
    CHECK_EQ_U64(pub(c.st, "orders.new", "c"), 3);
    for (int round = 0; round < 2; round++) {
        rift_batch b = {0};
        CHECK_OK(rift_stream_replay(c.st, 1, 10, &b, NULL));
        CHECK_EQ_INT(b.count, 2);
        CHECK_EQ_U64(b.items[0].record.sequence, 2);
        CHECK_EQ_U64(b.items[1].record.sequence, 3);
        CHECK_EQ_MEM(b.items[1].record.payload, b.items[1].record.payload_len,
                     "c", 1);
        CHECK_EQ_STR(b.items[0].record.subject, "orders.new");
        CHECK(b.items[0].record.reply == NULL);
        rift_batch_free(&b);
        CHECK_OK(rift_stream_replay(c.st, 3, 1, &b, NULL));
        CHECK_EQ_INT(b.count, 1);
        CHECK_EQ_U64(b.items[0].record.sequence, 3);
        rift_batch_free(&b);
        CHECK_OK(ctx_reopen(&c, NULL));
    }
    ctx_done(&c);
}

RIFT_TEST(vector1_memory) {
    vector1(false);
}

RIFT_TEST(vector1_file) {
    vector1(true);
}

/* ---- §4.8 vector 2: consumer across a reopen ---- */

static void vector2(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c, NULL));
    rift_stored out;
    CHECK_OK(rift_stream_publish(c.st, "jobs.run", 8, "_INBOX.reply", 12,
                                 (const uint8_t *)"one", 3, &out, NULL));
    CHECK_EQ_U64(out.sequence, 1);
    CHECK(out.timestamp_ms > 1600000000000ull);
    CHECK_EQ_U64(pub(c.st, "jobs.run", "two"), 2);
    rift_consumer *w = open_consumer(c.st, "worker", NULL);
    CHECK(w != NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 2);
    CHECK_EQ_INT(b.items[0].delivery_count, 1);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(w, 1, NULL));
    rift_error err = {0};
    CHECK_EQ_INT(rift_consumer_ack(w, 1, &err), RIFT_ERR_INVALID_ACK);
    CHECK_EQ_STR(err.text, "sequence is not pending acknowledgement");
    rift_consumer_close(w);

    CHECK_OK(ctx_reopen(&c, NULL));
    CHECK_OK(rift_stream_replay(c.st, 1, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 2);
    CHECK_EQ_STR(b.items[0].record.reply, "_INBOX.reply");
    CHECK_EQ_INT(b.items[0].record.reply_len, 12);
    rift_batch_free(&b);
    CHECK_OK(rift_stream_consumer_get(c.st, "worker", 6, &w, NULL));
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    if (file) {
        /* Pending deliveries are eligible at once after a reopen. */
        CHECK_EQ_INT(b.count, 1);
        CHECK_EQ_U64(b.items[0].record.sequence, 2);
        CHECK_EQ_INT(b.items[0].delivery_count, 2);
    } else {
        CHECK_EQ_INT(b.count, 0); /* ack wait 30 s not expired */
    }
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(w, 2, NULL));
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 0);
    rift_batch_free(&b);
    CHECK_EQ_U64(pub(c.st, "jobs.run", "three"), 3);
    rift_consumer_close(w);
    ctx_done(&c);
}

RIFT_TEST(vector2_memory) {
    vector2(false);
}

RIFT_TEST(vector2_file) {
    vector2(true);
}

/* ---- §4.8 vector 3: filter, max_ack_pending, reopen settings ---- */

static void vector3(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "jobs.one", "1"), 1);
    CHECK_EQ_U64(pub(c.st, "other.one", "2"), 2);
    CHECK_EQ_U64(pub(c.st, "jobs.two", "3"), 3);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "jobs.*";
    cfg.filter_len = 6;
    cfg.max_ack_pending = 1;
    cfg.ack_wait_ms = 50;
    rift_consumer *w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 1);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 0);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(w, 1, NULL));
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 3);
    rift_batch_free(&b);
    rift_consumer *again = NULL;
    rift_error err = {0};
    CHECK_EQ_INT(
        rift_stream_consumer_open(c.st, "worker", 6, NULL, &again, &err),
        RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "invalid messaging configuration: consumer "
                           "already exists with different settings");
    CHECK(again == NULL);
    /* The same settings reopen it, state untouched. */
    again = open_consumer(c.st, "worker", &cfg);
    CHECK(again != NULL);
    rift_consumer_info info;
    CHECK_OK(rift_consumer_get_info(again, &info, NULL));
    CHECK_EQ_U64(info.next_sequence, 4);
    CHECK_EQ_INT(info.pending, 1);
    rift_consumer_close(again);
    rift_consumer_close(w);
    ctx_done(&c);
}

RIFT_TEST(vector3_memory) {
    vector3(false);
}

RIFT_TEST(vector3_file) {
    vector3(true);
}

/* ---- §4.8 vector 4: lock and torn tail ---- */

RIFT_TEST(vector4_lock) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    rift_stream *second = NULL;
    rift_error err = {0};
    CHECK_EQ_INT(rift_stream_new(&second, &c.s, &err), RIFT_ERR_STORAGE);
    const char *want = "stream storage: stream directory is already open or "
                       "cannot be locked: ";
    CHECK_MSG(strncmp(err.text, want, strlen(want)) == 0, "text: %s", err.text);
    CHECK(strstr(err.text, "(os error 11)") != NULL);
    CHECK(second == NULL);
    /* Released by close. */
    rift_stream_del(c.st);
    CHECK_OK(rift_stream_new(&c.st, &c.s, NULL));
    ctx_done(&c);
}

RIFT_TEST(vector4_torn_tail) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "one"), 1);
    rift_stream_del(c.st);
    c.st = NULL;
    char seg[4096];
    CHECK_EQ_INT(test_segments(c.dir, seg, sizeof(seg)), 1);
    long before = test_file_size(seg);
    uint8_t tail[13] = {100, 0, 0, 0};
    CHECK_OK(test_append(seg, tail, sizeof(tail)));
    CHECK_EQ_INT(test_file_size(seg), before + 13);
    rift_store_report rep;
    CHECK_OK(rift_store_verify(c.dir, &rep, NULL));
    CHECK(rep.torn);
    CHECK_EQ_U64(rep.torn_offset, (uint64_t)before);
    CHECK_EQ_INT(test_file_size(seg), before + 13); /* verify changes nothing */
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_INT(test_file_size(seg), before);
    CHECK_EQ_U64(pub(c.st, "a.b", "two"), 2);
    CHECK_OK(ctx_reopen(&c, NULL));
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(c.st, 1, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 2);
    CHECK_EQ_MEM(b.items[1].record.payload, b.items[1].record.payload_len,
                 "two", 3);
    rift_batch_free(&b);
    ctx_done(&c);
}

/* Torn tails of every length inside the last record are cut back to the
 * previous record. */
RIFT_TEST(torn_tail_every_length) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "first"), 1);
    rift_stream_del(c.st);
    char seg[4096];
    test_segments(c.dir, seg, sizeof(seg));
    long one = test_file_size(seg);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "second record"), 2);
    rift_stream_del(c.st);
    c.st = NULL;
    long two = test_file_size(seg);
    for (long cut = one; cut < two; cut++) {
        CHECK_OK(truncate(seg, cut));
        rift_error err = {0};
        CHECK_MSG(ctx_open(&c, &err) == 0, "cut %ld: %s", cut, err.text);
        rift_stream_info info;
        CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
        CHECK_EQ_U64(info.last_sequence, 1);
        rift_stream_info_free(&info);
        CHECK_EQ_U64(pub(c.st, "a.b", "second record"), 2);
        rift_stream_del(c.st);
        c.st = NULL;
        CHECK_EQ_INT(test_file_size(seg), two);
    }
    ctx_done(&c);
}

/* ---- §4.8 vector 5: a flipped byte is an error naming file and offset */

RIFT_TEST(vector5_flipped_byte) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "one"), 1);
    CHECK_EQ_U64(pub(c.st, "a.b", "two"), 2);
    rift_stream_del(c.st);
    c.st = NULL;
    char seg[4096];
    test_segments(c.dir, seg, sizeof(seg));
    long size = test_file_size(seg);
    CHECK_OK(test_flip(seg, -1));
    rift_error err = {0};
    CHECK_EQ_INT(ctx_open(&c, &err), RIFT_ERR_STORAGE);
    char want[4200];
    /* The second record starts 32 + 38 bytes in (header, first record). */
    snprintf(want, sizeof(want),
             "stream storage: checksum mismatch in %s at offset %ld", seg,
             size - 38);
    CHECK_EQ_STR(err.text, want);
    CHECK(c.st == NULL);
    /* verify reports the same; repair cuts the bad record. */
    rift_store_report rep;
    CHECK_EQ_INT(rift_store_verify(c.dir, &rep, &err), RIFT_ERR_STORAGE);
    CHECK_EQ_STR(err.text, want);
    CHECK_OK(rift_store_repair(c.dir, &rep, &err));
    CHECK(rep.torn);
    CHECK_EQ_U64(rep.torn_offset, (uint64_t)(size - 38));
    CHECK_EQ_U64(rep.repaired_bytes, 38);
    CHECK_EQ_U64(rep.records, 1);
    CHECK_EQ_U64(rep.last_sequence, 1);
    /* Sequence 2 was used by the record that was cut: never again. */
    CHECK_EQ_U64(rep.next_sequence, 3);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "again"), 3);
    ctx_done(&c);
}

RIFT_TEST(flipped_byte_in_earlier_segment) {
    ctx c;
    ctx_init(&c, true);
    c.s.segment_bytes = 4096;
    CHECK_OK(ctx_open(&c, NULL));
    char payload[1000];
    memset(payload, 'p', sizeof(payload) - 1);
    payload[sizeof(payload) - 1] = '\0';
    for (int i = 1; i <= 20; i++) {
        CHECK_EQ_U64(pub(c.st, "a.b", payload), (uint64_t)i);
    }
    rift_stream_del(c.st);
    c.st = NULL;
    CHECK(test_segments(c.dir, NULL, 0) >= 5);
    char first[4200];
    snprintf(first, sizeof(first), "%s/00000000000000000001.seg", c.dir);
    /* Records are 3 + 999 + 32 = 1034 bytes: the second starts at 1066. */
    CHECK_OK(test_flip(first, 32 + 1034 + 100));
    rift_error err = {0};
    CHECK_EQ_INT(ctx_open(&c, &err), RIFT_ERR_STORAGE);
    char want[4300];
    snprintf(want, sizeof(want),
             "stream storage: checksum mismatch in %s at offset 1066", first);
    CHECK_EQ_STR(err.text, want);
    rift_store_report rep;
    CHECK_OK(rift_store_repair(c.dir, &rep, &err));
    CHECK_EQ_U64(rep.records, 1);
    CHECK(rep.deleted_segments >= 4);
    /* The deleted segments still tell which sequences were used. */
    CHECK_EQ_U64(rep.next_sequence, 21);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "x"), 21);
    ctx_done(&c);
}

RIFT_TEST(corrupt_state_log_names_offset) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a.b", "one"), 1);
    rift_consumer *w = open_consumer(c.st, "worker", NULL);
    CHECK(w != NULL);
    rift_consumer_close(w);
    rift_stream_del(c.st);
    c.st = NULL;
    char state[4200];
    snprintf(state, sizeof(state), "%s/state.log", c.dir);
    /* The consumer event starts right after the 16-byte header. */
    CHECK_OK(test_flip(state, 30));
    rift_error err = {0};
    CHECK_EQ_INT(ctx_open(&c, &err), RIFT_ERR_STORAGE);
    char want[4300];
    snprintf(want, sizeof(want),
             "stream storage: checksum mismatch in %s at offset 16", state);
    CHECK_EQ_STR(err.text, want);
    rift_store_report rep;
    CHECK_OK(rift_store_repair(c.dir, &rep, NULL));
    CHECK_OK(ctx_open(&c, NULL));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 0);
    CHECK_EQ_U64(info.last_sequence, 1);
    rift_stream_info_free(&info);
    ctx_done(&c);
}

/* ---- §4.8 vector 7: retention, compaction and reopen ---- */

RIFT_TEST(vector7_compaction) {
    ctx c;
    ctx_init(&c, true);
    c.s.max_bytes = 16 * 1024;
    c.s.max_messages = 3;
    c.s.sync_on_write = false;
    c.s.segment_bytes = 32 * 1024;
    CHECK_OK(ctx_open(&c, NULL));
    static uint8_t big[8192];
    for (uint64_t i = 1; i <= 160; i++) {
        memset(big, (int)(i & 0xFF), sizeof(big));
        rift_stored out;
        CHECK_OK(rift_stream_publish(c.st, "big.data", 8, NULL, 0, big,
                                     sizeof(big), &out, NULL));
        CHECK_EQ_U64(out.sequence, i);
    }
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.messages, 1);
    CHECK_EQ_U64(info.first_sequence, 160);
    rift_stream_info_free(&info);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = 1;
    rift_consumer *w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    uint64_t s = b.items[0].record.sequence;
    CHECK_EQ_U64(s, 160);
    rift_batch_free(&b);
    rift_consumer_close(w);
    CHECK_OK(rift_stream_checkpoint(c.st, NULL));
    CHECK_OK(ctx_reopen(&c, NULL));
    CHECK_OK(rift_stream_consumer_get(c.st, "worker", 6, &w, NULL));
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, s);
    CHECK_EQ_INT(b.items[0].delivery_count, 2);
    CHECK_EQ_INT(b.items[0].record.payload[0], 160);
    rift_batch_free(&b);
    rift_consumer_close(w);
    CHECK_EQ_U64(pub(c.st, "big.data", "x"), 161);
    rift_stream_del(c.st);
    c.st = NULL;
    uint64_t disk = test_dir_bytes(c.dir);
    CHECK_MSG(disk < 64 * 1024, "directory holds %llu bytes",
              (unsigned long long)disk);
    CHECK_EQ_INT(test_segments(c.dir, NULL, 0), 1);
    ctx_done(&c);
}

/* ---- §4.8 vector 8: eviction frees the pending slot ---- */

static void vector8(bool file) {
    ctx c;
    ctx_init(&c, file);
    c.s.max_messages = 1;
    CHECK_OK(ctx_open(&c, NULL));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = 1;
    rift_consumer *w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    CHECK_EQ_U64(pub(c.st, "a", "1"), 1);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    rift_batch_free(&b);
    CHECK_EQ_U64(pub(c.st, "a", "2"), 2);
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 2);
    rift_batch_free(&b);
    CHECK_EQ_INT(rift_consumer_ack(w, 1, NULL), RIFT_ERR_INVALID_ACK);
    rift_consumer_close(w);
    ctx_done(&c);
}

RIFT_TEST(vector8_memory) {
    vector8(false);
}

RIFT_TEST(vector8_file) {
    vector8(true);
}

/* ---- §4.8 vector 9: an abandoned publication keeps its sequence ---- */

static void vector9(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c, NULL));
    rift_stored out;
    int rc =
        rift_stream_publish_async(c.st, "a", 1, NULL, 0, (const uint8_t *)"x",
                                  1, &out, NULL, NULL, NULL, NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_U64(out.sequence, 1);
    CHECK_EQ_U64(pub(c.st, "a", "y"), 2);
    CHECK_OK(ctx_reopen(&c, NULL));
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(c.st, 1, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 2);
    rift_batch_free(&b);
    ctx_done(&c);
}

RIFT_TEST(vector9_memory) {
    vector9(false);
}

RIFT_TEST(vector9_file) {
    vector9(true);
}

/* ---- §4.8 vector 10: redelivery before new records ---- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void vector10(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a", "1"), 1);
    CHECK_EQ_U64(pub(c.st, "a", "2"), 2);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = 1;
    rift_consumer *w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 1);
    rift_batch_free(&b);
    sleep_ms(3); /* the ack wait itself is what is being tested */
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 1);
    CHECK_EQ_INT(b.items[0].delivery_count, 2);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(w, 1, NULL));
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 2);
    rift_batch_free(&b);
    rift_consumer_close(w);
    ctx_done(&c);
}

RIFT_TEST(vector10_memory) {
    vector10(false);
}

RIFT_TEST(vector10_file) {
    vector10(true);
}

/* ---- End-to-end vector: restart keeps the consumer ---- */

RIFT_TEST(restart_keeps_consumer) {
    ctx c;
    ctx_init(&c, true);
    const char *subjects[] = {"plugin.jobs"};
    c.s.subjects = subjects;
    c.s.subjects_count = 1;
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "plugin.jobs", "a"), 1);
    CHECK_EQ_U64(pub(c.st, "plugin.jobs", "b"), 2);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "plugin.jobs";
    cfg.filter_len = 11;
    rift_consumer *w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 2, &b, NULL));
    CHECK_EQ_INT(b.count, 2);
    rift_batch_free(&b);
    CHECK_OK(rift_consumer_ack(w, 1, NULL));
    rift_consumer_close(w);
    CHECK_OK(ctx_reopen(&c, NULL));
    w = open_consumer(c.st, "worker", &cfg);
    CHECK(w != NULL);
    CHECK_OK(rift_consumer_fetch(w, 2, &b, NULL));
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 2);
    rift_batch_free(&b);
    rift_consumer_close(w);
    ctx_done(&c);
}

/* ---- Limits and error texts ---- */

RIFT_TEST(settings_validation) {
    rift_stream_settings s;
    rift_stream *st = NULL;
    rift_error err = {0};
    const char *text = "invalid messaging configuration: stream limits must "
                       "be positive and payload must fit a frame";
    uint64_t *fields[] = {&s.max_messages, &s.max_bytes, &s.max_payload_bytes};
    for (size_t i = 0; i < 3; i++) {
        rift_stream_settings_default(&s);
        *fields[i] = 0;
        CHECK_EQ_INT(rift_stream_new(&st, &s, &err), RIFT_ERR_INVALID_CONFIG);
        CHECK_EQ_STR(err.text, text);
    }
    rift_stream_settings_default(&s);
    s.max_consumers = 0;
    CHECK_EQ_INT(rift_stream_new(&st, &s, &err), RIFT_ERR_INVALID_CONFIG);
    rift_stream_settings_default(&s);
    s.max_payload_bytes = 4294963200ull;
    CHECK_EQ_INT(rift_stream_new(&st, &s, &err), RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, text);
    s.max_payload_bytes = 4294963199ull;
    CHECK_OK(rift_stream_new(&st, &s, &err));
    rift_stream_del(st);
    rift_stream_settings_default(&s);
    const char *bad[] = {"a..b"};
    s.subjects = bad;
    s.subjects_count = 1;
    CHECK_EQ_INT(rift_stream_new(&st, &s, &err), RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: a..b");
    rift_stream_settings_default(&s);
    s.storage_path = "";
    CHECK_EQ_INT(rift_stream_new(&st, &s, &err), RIFT_ERR_INVALID_CONFIG);
    /* Defaults. */
    rift_stream_settings_default(&s);
    CHECK_EQ_U64(s.max_messages, 100000);
    CHECK_EQ_U64(s.max_bytes, 67108864);
    CHECK_EQ_U64(s.max_payload_bytes, 1048576);
    CHECK_EQ_INT(s.max_consumers, 128);
    CHECK(s.sync_on_write);
    CHECK(s.storage_path == NULL);
    CHECK_EQ_U64(s.max_age_ms, 0);
}

static void publish_errors(bool file) {
    ctx c;
    ctx_init(&c, file);
    c.s.max_payload_bytes = 100;
    c.s.max_bytes = 120;
    CHECK_OK(ctx_open(&c, NULL));
    rift_error err = {0};
    uint8_t buf[200] = {0};
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a", 1, NULL, 0, buf, 101, NULL, &err),
        RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload size 101 exceeds limit 100");
    /* Retained size 90 + 1 + 0 + 32 = 123 > 120. */
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a", 1, NULL, 0, buf, 90, NULL, &err),
        RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload size 123 exceeds limit 120");
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a.*", 3, NULL, 0, buf, 1, NULL, &err),
        RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: a.*");
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a", 1, "r.>", 3, buf, 1, NULL, &err),
        RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: r.>");
    /* Exactly at the limits is fine: 87 + 1 + 32 = 120. */
    CHECK_OK(rift_stream_publish(c.st, "a", 1, NULL, 0, buf, 87, NULL, &err));
    /* min(max_payload, max_bytes) is the payload limit. */
    ctx_done(&c);
    ctx_init(&c, file);
    c.s.max_payload_bytes = 1000;
    c.s.max_bytes = 50;
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a", 1, NULL, 0, buf, 51, NULL, &err),
        RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload size 51 exceeds limit 50");
    ctx_done(&c);
}

RIFT_TEST(publish_errors_memory) {
    publish_errors(false);
}

RIFT_TEST(publish_errors_file) {
    publish_errors(true);
}

RIFT_TEST(sequence_exhausted) {
    ctx c;
    ctx_init(&c, false);
    CHECK_OK(ctx_open(&c, NULL));
    /* No test can publish 2^64 records: start near the end. */
    c.st->last_seq = UINT64_MAX - 3;
    c.st->first_seq = UINT64_MAX - 2;
    c.st->cache_first = UINT64_MAX - 2;
    CHECK_EQ_U64(pub(c.st, "a", "x"), UINT64_MAX - 2);
    CHECK_EQ_U64(pub(c.st, "a", "x"), UINT64_MAX - 1);
    rift_error err = {0};
    CHECK_EQ_INT(
        rift_stream_publish(c.st, "a", 1, NULL, 0, NULL, 0, NULL, &err),
        RIFT_ERR_STORAGE);
    CHECK_EQ_STR(err.text, "stream storage: stream sequence exhausted");
    ctx_done(&c);
}

static void consumer_validation(bool file) {
    ctx c;
    ctx_init(&c, file);
    c.s.max_consumers = 2;
    CHECK_OK(ctx_open(&c, NULL));
    const char *text =
        "invalid messaging configuration: invalid consumer name or limits";
    rift_consumer *w = NULL;
    rift_error err = {0};
    rift_consumer_config cfg;
    char longname[130];
    memset(longname, 'n', sizeof(longname));
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "", 0, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, text);
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, longname, 129, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "a b", 3, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "a\tb", 3, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "\xff", 1, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    rift_consumer_config_default(&cfg);
    cfg.start_sequence = 0;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, text);
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = 0;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = 0;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    cfg.max_ack_pending = 65537;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    rift_consumer_config_default(&cfg);
    cfg.filter = "a..b";
    cfg.filter_len = 4;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    rift_consumer_config_default(&cfg);
    cfg.start = (rift_consumer_start)9;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    /* 128 bytes and a 71-byte scoped name are fine. */
    rift_consumer *a = NULL, *b = NULL;
    CHECK_OK(rift_stream_consumer_open(c.st, longname, 128, NULL, &a, &err));
    const char *scoped = "remote_0123456789abcdef0123456789abcdef0123456789"
                         "abcdef0123456789abcdef";
    CHECK_EQ_INT(strlen(scoped), 71);
    CHECK_OK(rift_stream_consumer_open(c.st, scoped, 71, NULL, &b, &err));
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "third", 5, NULL, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "invalid messaging configuration: stream consumer "
                           "limit reached");
    /* Each differing field is a different setting. */
    rift_consumer_config_default(&cfg);
    rift_consumer_config alt = cfg;
    alt.start_sequence = 2;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, scoped, 71, &alt, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    alt = cfg;
    alt.ack_wait_ms = 29999;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, scoped, 71, &alt, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    alt = cfg;
    alt.max_ack_pending = 127;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, scoped, 71, &alt, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    alt = cfg;
    alt.filter = "x";
    alt.filter_len = 1;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, scoped, 71, &alt, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    /* An explicit ">" filter equals the default. */
    alt = cfg;
    alt.filter = ">";
    alt.filter_len = 1;
    CHECK_OK(rift_stream_consumer_open(c.st, scoped, 71, &alt, &w, &err));
    rift_consumer_close(w);
    CHECK_EQ_INT(rift_stream_consumer_get(c.st, "nope", 4, &w, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    rift_batch bt = {0};
    CHECK_EQ_INT(rift_consumer_fetch(a, 65537, &bt, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(rift_stream_replay(c.st, 1, 65537, &bt, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_consumer_close(a);
    rift_consumer_close(b);
    if (file) {
        /* A reopen with a lower max_consumers cannot hold them. */
        rift_stream_del(c.st);
        c.s.max_consumers = 1;
        CHECK_EQ_INT(ctx_open(&c, &err), RIFT_ERR_STORAGE);
        CHECK_EQ_STR(err.text, "stream storage: stored consumers exceed "
                               "configured limit");
        c.s.max_consumers = 2;
        CHECK_OK(ctx_open(&c, &err));
    }
    ctx_done(&c);
}

RIFT_TEST(consumer_validation_memory) {
    consumer_validation(false);
}

RIFT_TEST(consumer_validation_file) {
    consumer_validation(true);
}

RIFT_TEST(stored_payload_over_limit) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    uint8_t buf[100] = {0};
    CHECK_OK(rift_stream_publish(c.st, "a", 1, NULL, 0, buf, 100, NULL, NULL));
    rift_stream_del(c.st);
    c.s.max_payload_bytes = 99;
    rift_error err = {0};
    CHECK_EQ_INT(ctx_open(&c, &err), RIFT_ERR_STORAGE);
    CHECK(strstr(err.text, "stored payload exceeds configured limit") != NULL);
    c.s.max_payload_bytes = 100;
    CHECK_OK(ctx_open(&c, &err));
    ctx_done(&c);
}

RIFT_TEST(reopen_with_smaller_limits) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    for (int i = 1; i <= 10; i++) {
        CHECK_EQ_U64(pub(c.st, "a", "x"), (uint64_t)i);
    }
    rift_consumer *w = open_consumer(c.st, "w", NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 3, &b, NULL));
    rift_batch_free(&b);
    rift_consumer_close(w);
    rift_stream_del(c.st);
    c.s.max_messages = 4;
    CHECK_OK(ctx_open(&c, NULL));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.messages, 4);
    CHECK_EQ_U64(info.first_sequence, 7);
    CHECK_EQ_U64(info.bytes, 4 * (1 + 1 + 32));
    rift_stream_info_free(&info);
    CHECK_OK(rift_stream_consumer_get(c.st, "w", 1, &w, NULL));
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 0);
    CHECK_EQ_U64(ci.next_sequence, 7);
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 4);
    CHECK_EQ_U64(b.items[0].record.sequence, 7);
    rift_batch_free(&b);
    rift_consumer_close(w);
    /* Raising the limits again does not bring evicted records back. */
    rift_stream_del(c.st);
    c.s.max_messages = 100;
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.first_sequence, 7);
    rift_stream_info_free(&info);
    ctx_done(&c);
}

/* ---- Extensions: consumer close vs delete ---- */

static void consumer_delete(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c, NULL));
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ_U64(pub(c.st, "a", "x"), (uint64_t)i);
    }
    rift_consumer *w = open_consumer(c.st, "w", NULL);
    rift_consumer *other = open_consumer(c.st, "other", NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 2, &b, NULL));
    rift_batch_free(&b);
    /* Close keeps the durable state. */
    rift_consumer_close(w);
    CHECK_OK(ctx_reopen(&c, NULL));
    CHECK_OK(rift_stream_consumer_get(c.st, "w", 1, &w, NULL));
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_U64(ci.next_sequence, 3);
    CHECK_EQ_INT(ci.pending, 2);
    if (file) {
        rift_consumer_close(other);
        CHECK_OK(rift_stream_consumer_get(c.st, "other", 5, &other, NULL));
    }
    /* Delete removes it; handles then fail. */
    CHECK_OK(rift_stream_consumer_delete(c.st, "w", 1, NULL));
    rift_error err = {0};
    CHECK_EQ_INT(rift_consumer_fetch(w, 1, &b, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    CHECK_EQ_INT(rift_consumer_ack(w, 1, &err), RIFT_ERR_CONSUMER_NOT_FOUND);
    CHECK_EQ_INT(rift_consumer_get_info(w, &ci, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    CHECK_EQ_INT(rift_stream_consumer_delete(c.st, "w", 1, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    CHECK_EQ_INT(rift_stream_consumer_get(c.st, "w", 1, &w, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    rift_consumer_close(w);
    CHECK_OK(ctx_reopen(&c, NULL));
    CHECK_EQ_INT(rift_stream_consumer_get(c.st, "w", 1, &w, &err),
                 RIFT_ERR_CONSUMER_NOT_FOUND);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 1);
    CHECK_EQ_STR(info.consumer_names[0], "other");
    rift_stream_info_free(&info);
    /* A new consumer of the same name starts fresh. */
    w = open_consumer(c.st, "w", NULL);
    CHECK(w != NULL);
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 3);
    CHECK_EQ_INT(b.items[0].delivery_count, 1);
    rift_batch_free(&b);
    rift_consumer_close(w);
    rift_consumer_close(other);
    ctx_done(&c);
}

RIFT_TEST(consumer_delete_memory) {
    consumer_delete(false);
}

RIFT_TEST(consumer_delete_file) {
    consumer_delete(true);
}

RIFT_TEST(handles_outlive_stream) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a", "x"), 1);
    rift_consumer *w = open_consumer(c.st, "w", NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
    rift_stream_del(c.st);
    c.st = NULL;
    /* Records of a batch stay valid after close. */
    CHECK_EQ_MEM(b.items[0].record.payload, 1, "x", 1);
    rift_batch_free(&b);
    rift_error err = {0};
    CHECK_EQ_INT(rift_consumer_fetch(w, 1, &b, &err), RIFT_ERR_STORAGE);
    CHECK_EQ_STR(err.text, "stream storage: stream is closed");
    rift_consumer_close(w);
    ctx_done(&c);
}

/* ---- Extensions: start positions ---- */

static void start_positions(bool file) {
    ctx c;
    ctx_init(&c, file);
    atomic_store(&c.tv.now_ms, 1000000);
    c.s.max_messages = 8;
    CHECK_OK(ctx_open(&c, NULL));
    for (int i = 1; i <= 10; i++) {
        atomic_store(&c.tv.now_ms, 1000000 + (uint64_t)i * 1000);
        CHECK_EQ_U64(pub(c.st, i % 2 ? "odd" : "even", "x"), (uint64_t)i);
    }
    /* Retained: 3..10 with timestamps 1,003,000 .. 1,010,000. */
    atomic_store(&c.tv.now_ms, 1020000);
    struct {
        const char *name;
        rift_consumer_start mode;
        uint64_t arg;
        uint64_t resolved;
        uint64_t first;
    } cases[] = {
        {"seq", RIFT_START_SEQUENCE, 5, 5, 5},
        {"seqlow", RIFT_START_SEQUENCE, 1, 1, 3},
        {"seqhigh", RIFT_START_SEQUENCE, 12, 12, 12},
        {"first", RIFT_START_FIRST, 0, 1, 3},
        {"last", RIFT_START_LAST_RECEIVED, 0, 10, 10},
        {"new", RIFT_START_NEW_ONLY, 0, 11, 11},
        {"time", RIFT_START_TIME, 1006500, 7, 7},
        {"timeold", RIFT_START_TIME, 1, 3, 3},
        {"timefuture", RIFT_START_TIME, 2000000, 11, 11},
        {"delta", RIFT_START_TIME_DELTA, 12000, 8, 8},
        {"deltabig", RIFT_START_TIME_DELTA, 5000000, 3, 3},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(cases); i++) {
        rift_consumer_config cfg;
        rift_consumer_config_default(&cfg);
        cfg.start = cases[i].mode;
        cfg.start_sequence = cases[i].arg;
        cfg.start_time_ms = cases[i].arg;
        rift_consumer *w = open_consumer(c.st, cases[i].name, &cfg);
        CHECK(w != NULL);
        rift_consumer_info ci;
        CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
        CHECK_MSG(ci.start_sequence == cases[i].resolved, "%s: resolved %llu",
                  cases[i].name, (unsigned long long)ci.start_sequence);
        rift_batch b = {0};
        CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
        if (cases[i].first <= 10) {
            CHECK_EQ_INT(b.count, 1);
            CHECK_MSG(b.items[0].record.sequence == cases[i].first,
                      "%s: first %llu", cases[i].name,
                      (unsigned long long)b.items[0].record.sequence);
        } else {
            CHECK_EQ_INT(b.count, 0);
        }
        rift_batch_free(&b);
        rift_consumer_close(w);
    }
    /* New-only and beyond-the-end consumers see later records. */
    atomic_store(&c.tv.now_ms, 1030000);
    CHECK_EQ_U64(pub(c.st, "odd", "y"), 11);
    CHECK_EQ_U64(pub(c.st, "even", "y"), 12);
    CHECK_OK(ctx_reopen(&c, NULL));
    const char *later[] = {"new", "timefuture", "seqhigh"};
    uint64_t want[] = {11, 11, 12};
    for (int i = 0; i < 3; i++) {
        rift_consumer *w;
        CHECK_OK(rift_stream_consumer_get(c.st, later[i], strlen(later[i]), &w,
                                          NULL));
        rift_batch b = {0};
        CHECK_OK(rift_consumer_fetch(w, 1, &b, NULL));
        CHECK_EQ_INT(b.count, 1);
        CHECK_EQ_U64(b.items[0].record.sequence, want[i]);
        rift_batch_free(&b);
        rift_consumer_close(w);
    }
    /* Reopen equality: the mode and its argument, never the resolved
     * sequence. */
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.start = RIFT_START_NEW_ONLY;
    cfg.start_sequence = 777; /* ignored by this mode */
    rift_consumer *w = open_consumer(c.st, "new", &cfg);
    CHECK(w != NULL);
    rift_consumer_close(w);
    rift_consumer_config_default(&cfg);
    cfg.start_sequence = 11;
    rift_error err = {0};
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "new", 3, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    rift_consumer_config_default(&cfg);
    cfg.start = RIFT_START_TIME_DELTA;
    cfg.start_time_ms = 12000;
    atomic_store(&c.tv.now_ms, 9000000); /* a later reopen still matches */
    w = open_consumer(c.st, "delta", &cfg);
    CHECK(w != NULL);
    rift_consumer_close(w);
    cfg.start_time_ms = 12001;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "delta", 5, &cfg, &w, &err),
                 RIFT_ERR_INVALID_CONFIG);
    ctx_done(&c);
}

RIFT_TEST(start_positions_memory) {
    start_positions(false);
}

RIFT_TEST(start_positions_file) {
    start_positions(true);
}

/* ---- Extensions: age retention ---- */

static void age_retention(bool file) {
    ctx c;
    ctx_init(&c, file);
    atomic_store(&c.tv.now_ms, 5000000);
    c.s.max_age_ms = 10000;
    c.s.segment_bytes = 4096;
    CHECK_OK(ctx_open(&c, NULL));
    char payload[600];
    memset(payload, 'a', sizeof(payload) - 1);
    payload[sizeof(payload) - 1] = 0;
    for (int i = 1; i <= 20; i++) {
        atomic_store(&c.tv.now_ms, 5000000 + (uint64_t)i * 1000);
        CHECK_EQ_U64(pub(c.st, "a", payload), (uint64_t)i);
    }
    /* now = 5,020,000: records older than 10 s (ts <= 5,010,000) go. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.first_sequence, 11);
    CHECK_EQ_U64(info.messages, 10);
    rift_stream_info_free(&info);
    rift_consumer *w = open_consumer(c.st, "w", NULL);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 2, &b, NULL));
    CHECK_EQ_U64(b.items[0].record.sequence, 11);
    rift_batch_free(&b);
    /* Time passes with no publish: fetch and replay see the expiry. */
    atomic_store(&c.tv.now_ms, 5025500);
    CHECK_OK(rift_stream_replay(c.st, 1, 100, &b, NULL));
    CHECK_EQ_INT(b.count, 5);
    CHECK_EQ_U64(b.items[0].record.sequence, 16);
    rift_batch_free(&b);
    CHECK_EQ_INT(rift_consumer_ack(w, 11, NULL), RIFT_ERR_INVALID_ACK);
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 0);
    CHECK_EQ_U64(ci.next_sequence, 16);
    rift_consumer_close(w);
    if (file) {
        CHECK_OK(rift_stream_checkpoint(c.st, NULL));
        int segs = test_segments(c.dir, NULL, 0);
        CHECK_MSG(segs <= 3, "%d segments left", segs);
        /* Reopened much later: everything expired, the sequence goes on. */
        rift_stream_del(c.st);
        atomic_store(&c.tv.now_ms, 9000000);
        CHECK_OK(ctx_open(&c, NULL));
        CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
        CHECK_EQ_U64(info.messages, 0);
        CHECK_EQ_U64(info.first_sequence, 21);
        rift_stream_info_free(&info);
        CHECK_EQ_U64(pub(c.st, "a", "x"), 21);
    }
    ctx_done(&c);
}

RIFT_TEST(age_retention_memory) {
    age_retention(false);
}

RIFT_TEST(age_retention_file) {
    age_retention(true);
}

/* ---- Segments, cache, snapshots ---- */

RIFT_TEST(segments_roll_and_cold_reads) {
    ctx c;
    ctx_init(&c, true);
    c.s.segment_bytes = 8192;
    c.s.cache_bytes = 1; /* every older record is read back from disk */
    c.s.max_messages = 500;
    CHECK_OK(ctx_open(&c, NULL));
    char p[200];
    for (int i = 1; i <= 800; i++) {
        snprintf(p, sizeof(p), "payload-%d-%0*d", i, (i % 90) + 1, 7);
        CHECK_EQ_U64(pub(c.st, i % 3 ? "x.a" : "x.b", p), (uint64_t)i);
    }
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.first_sequence, 301);
    CHECK(info.segments > 3);
    rift_stream_info_free(&info);
    for (int pass = 0; pass < 2; pass++) {
        rift_batch b = {0};
        CHECK_OK(rift_stream_replay(c.st, 1, 1000, &b, NULL));
        CHECK_EQ_INT(b.count, 500);
        for (size_t i = 0; i < b.count; i++) {
            int seq = (int)b.items[i].record.sequence;
            snprintf(p, sizeof(p), "payload-%d-%0*d", seq, (seq % 90) + 1, 7);
            CHECK_EQ_MEM(b.items[i].record.payload,
                         b.items[i].record.payload_len, p, strlen(p));
            CHECK_EQ_STR(b.items[i].record.subject, seq % 3 ? "x.a" : "x.b");
        }
        rift_batch_free(&b);
        rift_consumer_config cfg;
        rift_consumer_config_default(&cfg);
        cfg.filter = "x.b";
        cfg.filter_len = 3;
        cfg.max_ack_pending = 1000;
        rift_consumer *w = NULL;
        char name[16];
        snprintf(name, sizeof(name), "w%d", pass);
        w = open_consumer(c.st, name, &cfg);
        CHECK_OK(rift_consumer_fetch(w, 1000, &b, NULL));
        CHECK_EQ_INT(b.count, 166); /* multiples of 3 in 301..800 */
        CHECK_EQ_U64(b.items[0].record.sequence, 303);
        rift_batch_free(&b);
        rift_consumer_close(w);
        CHECK_OK(ctx_reopen(&c, NULL));
    }
    ctx_done(&c);
}

RIFT_TEST(state_snapshot_keeps_state_small) {
    ctx c;
    ctx_init(&c, true);
    c.s.state_snapshot_bytes = 4096;
    c.s.sync_on_write = false;
    CHECK_OK(ctx_open(&c, NULL));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = 4;
    rift_consumer *w = open_consumer(c.st, "w", &cfg);
    rift_consumer *idle = open_consumer(c.st, "idle", NULL);
    CHECK(w && idle);
    for (int i = 1; i <= 2000; i++) {
        CHECK_EQ_U64(pub(c.st, "a", "x"), (uint64_t)i);
        rift_batch b = {0};
        CHECK_OK(rift_consumer_fetch(w, 4, &b, NULL));
        CHECK_EQ_INT(b.count, 1);
        if (i < 1988 || i % 4 != 0) {
            CHECK_OK(rift_consumer_ack(w, b.items[0].record.sequence, NULL));
        }
        rift_batch_free(&b);
    }
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 4);
    rift_consumer_close(w);
    rift_consumer_close(idle);
    CHECK_OK(ctx_reopen(&c, NULL));
    char state[4200];
    snprintf(state, sizeof(state), "%s/state.log", c.dir);
    long size = test_file_size(state);
    CHECK_MSG(size > 0 && size < 16384, "state.log is %ld bytes", size);
    CHECK_OK(rift_stream_consumer_get(c.st, "w", 1, &w, NULL));
    CHECK_OK(rift_consumer_get_info(w, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 4);
    CHECK_EQ_U64(ci.next_sequence, 2001);
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(w, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 4);
    /* The unacked ones: every fourth, the last four of them. */
    CHECK_EQ_U64(b.items[0].record.sequence, 1988);
    CHECK_EQ_U64(b.items[3].record.sequence, 2000);
    CHECK_EQ_INT(b.items[0].delivery_count, 2);
    rift_batch_free(&b);
    rift_consumer_close(w);
    ctx_done(&c);
}

RIFT_TEST(info_lists_consumers) {
    ctx c;
    ctx_init(&c, false);
    CHECK_OK(ctx_open(&c, NULL));
    const char *names[] = {"zeta", "alpha", "mid"};
    for (int i = 0; i < 3; i++) {
        rift_consumer *w = open_consumer(c.st, names[i], NULL);
        rift_consumer_close(w);
    }
    CHECK_EQ_U64(pub(c.st, "a", "hello"), 1);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 3);
    CHECK_EQ_STR(info.consumer_names[0], "alpha");
    CHECK_EQ_STR(info.consumer_names[1], "mid");
    CHECK_EQ_STR(info.consumer_names[2], "zeta");
    CHECK_EQ_U64(info.messages, 1);
    CHECK_EQ_U64(info.bytes, 5 + 1 + 32);
    CHECK_EQ_U64(info.first_sequence, 1);
    CHECK_EQ_U64(info.last_sequence, 1);
    CHECK(!info.durable);
    rift_stream_info_free(&info);
    ctx_done(&c);
}

RIFT_TEST(empty_stream_info) {
    ctx c;
    ctx_init(&c, true);
    CHECK_OK(ctx_open(&c, NULL));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(c.st, &info, NULL));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.first_sequence, 1);
    CHECK_EQ_U64(info.last_sequence, 0);
    CHECK(info.durable);
    rift_stream_info_free(&info);
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(c.st, 1, 10, &b, NULL));
    CHECK_EQ_INT(b.count, 0);
    rift_batch_free(&b);
    CHECK_OK(ctx_reopen(&c, NULL));
    CHECK_EQ_U64(pub(c.st, "a", "x"), 1);
    ctx_done(&c);
}

/* ---- Fetch by payload budget (the server's fetch portions) ---- */

static void done_never(void *ud, int status, const rift_error *err) {
    (void)status;
    (void)err;
    *(bool *)ud = true;
}

RIFT_TEST(fetch_bytes_stops_at_the_budget) {
    ctx c;
    ctx_init(&c, false);
    CHECK_OK(ctx_open(&c, NULL));
    for (int i = 0; i < 5; i++) {
        char pl[101];
        memset(pl, 'a' + i, 100);
        pl[100] = '\0';
        CHECK_EQ_U64(pub(c.st, "jobs.run", pl), (uint64_t)i + 1);
    }
    rift_consumer *w = open_consumer(c.st, "worker", NULL);
    CHECK(w != NULL);
    bool called = false;
    bool completed = false;
    rift_batch b = {0};
    /* 100 + 100 < 250, the third reaches it: three records. */
    CHECK_EQ_INT(rift_consumer_fetch_bytes_async(w, 10, 250, &b, &completed,
                                                 done_never, &called, NULL),
                 0);
    CHECK(completed);
    CHECK_EQ_INT(b.count, 3);
    CHECK_EQ_U64(b.items[2].record.sequence, 3);
    rift_batch_free(&b);
    /* A budget below one record still takes one. */
    CHECK_EQ_INT(rift_consumer_fetch_bytes_async(w, 10, 1, &b, &completed,
                                                 done_never, &called, NULL),
                 0);
    CHECK(completed);
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 4);
    rift_batch_free(&b);
    /* The count limit still applies, then nothing is left. */
    CHECK_EQ_INT(rift_consumer_fetch_bytes_async(w, 1, 1000, &b, &completed,
                                                 done_never, &called, NULL),
                 0);
    CHECK(completed);
    CHECK_EQ_INT(b.count, 1);
    CHECK_EQ_U64(b.items[0].record.sequence, 5);
    rift_batch_free(&b);
    CHECK_EQ_INT(rift_consumer_fetch_bytes_async(w, 10, 1000, &b, &completed,
                                                 done_never, &called, NULL),
                 0);
    CHECK(completed);
    CHECK_EQ_INT(b.count, 0);
    rift_batch_free(&b);
    CHECK(!called); /* memory streams complete at once */
    rift_consumer_close(w);
    ctx_done(&c);
}
