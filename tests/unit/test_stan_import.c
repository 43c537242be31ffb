/*
 * test_stan_import.c — `rift stan import` (src/stan/import*.c) on a
 * nats-streaming-server file store written from the original's format by
 * tests/support/stanfs_fixture.c: sequences, timestamps and durable
 * positions survive, as the stream and consumer APIs see them; corrupt
 * input (bad CRC, truncated record, huge size field, bad version) fails
 * naming the file and offset and leaves nothing behind; a non-empty
 * destination channel is refused; a sequence gap stays a gap.
 */
#include "stan/import.h"
#include "stan/import_rec.h"
#include "stanfs_fixture.h"
#include "test.h"

#include "rift/stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct dirs {
    char *root;
    char src[1024], dst[1024];
} dirs;

static void dirs_init(dirs *d) {
    d->root = rift_test_tmpdir();
    snprintf(d->src, sizeof d->src, "%s/nss", d->root);
    snprintf(d->dst, sizeof d->dst, "%s/streaming", d->root);
}

static rift_stream *open_channel(const char *dst, const char *dn) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dst, dn);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    ss.storage_path = path;
    rift_stream *st = NULL;
    return rift_stream_new(&st, &ss, NULL) == 0 ? st : NULL;
}

static bool exists(const char *dir, const char *name) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

RIFT_TEST(crc32_is_ieee) {
    const uint8_t v[] = "123456789";
    CHECK_EQ_U64(stan_imp_crc32(0, v, 9), 0xCBF43926u);
    CHECK_EQ_U64(stanfs_crc32(v, 9), 0xCBF43926u);
}

RIFT_TEST(imports_messages_and_durables) {
    dirs d;
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    rift_stan_import_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_stan_import(d.src, d.dst, &rep, NULL, NULL, &err) == 0, "%s",
              err.text);
    CHECK_EQ_STR(rep.cluster_id, "test-cluster");
    CHECK_EQ_INT(rep.channels, 2);
    CHECK_EQ_U64(rep.messages, 13);
    CHECK_EQ_INT(rep.consumers, 2);
    CHECK_EQ_INT(rep.skipped_subs, 1);
    CHECK_EQ_U64(rep.clients, 1);
    CHECK_EQ_U64(rep.holes, 0);
    CHECK(!exists(d.dst, ".imp%3ax.import"));

    /* ':' is escaped as channels.c names the directory. */
    rift_stream *st = open_channel(d.dst, "imp%3ax");
    CHECK(st != NULL);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.first_sequence, 5);
    CHECK_EQ_U64(info.last_sequence, 14);
    CHECK_EQ_U64(info.messages, 10);
    rift_stream_info_free(&info);
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(st, 1, 100, &b, NULL));
    CHECK_EQ_INT(b.count, 10);
    for (size_t i = 0; i < b.count; i++) {
        const rift_record *r = &b.items[i].record;
        char want[16];
        snprintf(want, sizeof want, "m%zu", i + 5);
        CHECK_EQ_U64(r->sequence, i + 5);
        CHECK_EQ_U64(r->timestamp_ms, STANFS_TS_NS(i + 5) / 1000000);
        CHECK_EQ_MEM(r->payload, r->payload_len, want, strlen(want));
        CHECK_EQ_MEM(r->subject, r->subject_len, "imp:x", 5);
    }
    rift_batch_free(&b);

    /* The durable: 7 pending, cursor after 8. '@' escaped as subs.c does. */
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_get(st, "d-c1-dur%401", 12, &c, NULL));
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.next_sequence, 9);
    CHECK_EQ_INT(ci.pending, 1);
    CHECK_EQ_U64(ci.config.ack_wait_ms, 30000);
    CHECK_OK(rift_consumer_fetch(c, 100, &b, NULL));
    CHECK_EQ_INT(b.count, 7);
    CHECK_EQ_U64(b.items[0].record.sequence, 7);
    CHECK_EQ_INT(b.items[0].delivery_count, 2); /* a redelivery */
    CHECK_EQ_U64(b.items[1].record.sequence, 9);
    CHECK_EQ_INT(b.items[1].delivery_count, 1);
    CHECK_EQ_U64(b.items[6].record.sequence, 14);
    rift_batch_free(&b);
    rift_consumer_close(c);

    /* The queue group: members merged, sent up to 7, 7 pending. */
    CHECK_OK(rift_stream_consumer_get(st, "q-qd:grp", 8, &c, NULL));
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.next_sequence, 8);
    CHECK_EQ_INT(ci.pending, 1);
    rift_consumer_close(c);
    CHECK(rift_stream_consumer_get(st, "d-c1-gone", 9, &c, NULL) ==
          RIFT_ERR_CONSUMER_NOT_FOUND);
    rift_stream_del(st);

    st = open_channel(d.dst, "plain");
    CHECK(st != NULL);
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    CHECK_EQ_U64(info.first_sequence, 1);
    CHECK_EQ_U64(info.last_sequence, 3);
    CHECK_EQ_INT(info.consumer_count, 0);
    rift_stream_info_free(&info);
    rift_stream_del(st);

    /* Importing again: the channels are there, nothing is overwritten. */
    CHECK(rift_stan_import(d.src, d.dst, &rep, NULL, NULL, &err) ==
          RIFT_ERR_EXISTS);
    CHECK(strstr(err.text, "refusing to overwrite channel imp:x") != NULL);
    rift_test_rmdir(d.root);
}

/* corrupt_at changes the byte at |off| of |file| in channel imp:x. */
static void corrupt_at(const dirs *d, const char *file, long off) {
    char p[4096];
    snprintf(p, sizeof p, "%s/imp:x/%s", d->src, file);
    FILE *f = fopen(p, "r+b");
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x5A, f);
    fclose(f);
}

static void append(const dirs *d, const char *file, const uint8_t *p,
                   size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/imp:x/%s", d->src, file);
    FILE *f = fopen(path, "ab");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* expect_fail imports and checks the error names |needle| and that no
 * directory of channel imp:x (final or temporary) is left. */
static bool expect_fail(const dirs *d, int code, const char *needle) {
    rift_stan_import_report rep;
    rift_error err = {0};
    int rc = rift_stan_import(d->src, d->dst, &rep, NULL, NULL, &err);
    if (rc != code || !strstr(err.text, needle)) {
        fprintf(stderr, "import: %d %s (wanted %d, \"%s\")\n", rc, err.text,
                code, needle);
        return false;
    }
    return !exists(d->dst, "imp%3ax") && !exists(d->dst, ".imp%3ax.import");
}

RIFT_TEST(corrupt_input_is_refused_with_file_and_offset) {
    dirs d;
    dirs_init(&d);
    /* Records of msgs.2.dat: 4-byte version, then 8 + 25 bytes each
     * (seq 10..14: "m10".., two-digit). Byte 20 is in the first payload. */
    CHECK_OK(stanfs_write_standard(d.src));
    corrupt_at(&d, "msgs.2.dat", 20);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE,
                      "msgs.2.dat: offset 4: CRC "
                      "mismatch"));
    rift_test_rmdir(d.root);

    /* A record cut short by the end of the file. */
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    char p[4096];
    snprintf(p, sizeof p, "%s/imp:x/msgs.1.dat", d.src);
    struct stat sb;
    CHECK_OK(stat(p, &sb));
    CHECK_OK(truncate(p, sb.st_size - 3));
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE, "truncated record"));
    rift_test_rmdir(d.root);

    /* A size field far beyond any message. */
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    const uint8_t huge[8] = {0xF0, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4};
    append(&d, "msgs.2.dat", huge, sizeof huge);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE, "exceeds the limit"));
    rift_test_rmdir(d.root);

    /* A half header in subs.dat, and an unknown record type. */
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    append(&d, "subs.dat", huge, 5);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE, "truncated record header"));
    rift_test_rmdir(d.root);
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    snprintf(p, sizeof p, "%s/imp:x", d.src);
    FILE *f = fopen(strcat(p, "/subs.dat"), "ab");
    stanfs_record(f, 9, (const uint8_t *)"\x08\x01", 2);
    fclose(f);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE,
                      "unknown subscription record type 9"));
    rift_test_rmdir(d.root);

    /* A file version the importer does not know. */
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    corrupt_at(&d, "msgs.1.dat", 0);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE,
                      "msgs.1.dat: offset 0: unsupported file version"));
    rift_test_rmdir(d.root);

    /* Not a file store at all. */
    dirs_init(&d);
    mkdir(d.src, 0700);
    rift_stan_import_report rep;
    rift_error err = {0};
    CHECK(rift_stan_import(d.src, d.dst, &rep, NULL, NULL, &err) ==
          RIFT_ERR_STORAGE);
    CHECK(strstr(err.text, "server.dat") != NULL);
    rift_test_rmdir(d.root);
}

RIFT_TEST(sequence_gap_stays_a_gap) {
    dirs d;
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    /* A third slice after a lost one: 20..21. */
    char p[4096];
    snprintf(p, sizeof p, "%s/imp:x", d.src);
    FILE *f = stanfs_open(p, "msgs.4.dat");
    uint8_t b[128];
    for (uint64_t s = 20; s <= 21; s++) {
        stanfs_record(f, 0, b, stanfs_msg(b, s, "imp:x", "g", 1));
    }
    fclose(f);
    rift_stan_import_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_stan_import(d.src, d.dst, &rep, NULL, NULL, &err) == 0, "%s",
              err.text);
    CHECK_EQ_U64(rep.holes, 1);
    rift_stream *st = open_channel(d.dst, "imp%3ax");
    CHECK(st != NULL);
    rift_batch bt = {0};
    CHECK_OK(rift_stream_replay(st, 13, 100, &bt, NULL));
    CHECK_EQ_INT(bt.count, 4);
    CHECK_EQ_U64(bt.items[1].record.sequence, 14);
    CHECK_EQ_U64(bt.items[2].record.sequence, 20);
    rift_batch_free(&bt);
    rift_stored out;
    CHECK_OK(rift_stream_publish(st, "imp:x", 5, NULL, 0, (const uint8_t *)"n",
                                 1, &out, NULL));
    CHECK_EQ_U64(out.sequence, 22);
    rift_stream_del(st);
    rift_test_rmdir(d.root);
}

RIFT_TEST(out_of_order_sequence_is_refused) {
    dirs d;
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    char p[4096];
    snprintf(p, sizeof p, "%s/imp:x", d.src);
    FILE *f = stanfs_open(p, "msgs.3.dat");
    uint8_t b[128];
    stanfs_record(f, 0, b, stanfs_msg(b, 12, "imp:x", "dup", 1));
    fclose(f);
    CHECK(expect_fail(&d, RIFT_ERR_STORAGE,
                      "msgs.3.dat: offset 4: sequence 12 out of order"));
    rift_test_rmdir(d.root);
}

RIFT_TEST(too_many_pending_is_a_clear_limit_error) {
    dirs d;
    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    char p[4096];
    snprintf(p, sizeof p, "%s/imp:x/subs.dat", d.src);
    FILE *f = fopen(p, "ab");
    CHECK(f != NULL);
    uint8_t b[64];
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 7, "c1", "", "big", 0, true, 30));
    /* 65,536 unacknowledged is rift's limit; the same sequence sent twice
     * does not count twice. */
    for (uint64_t s = 1; s <= 65536; s++) {
        stanfs_record(f, 5, b, stanfs_sub_update(b, 7, s));
    }
    stanfs_record(f, 5, b, stanfs_sub_update(b, 7, 65536));
    fclose(f);
    rift_stan_import_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_stan_import(d.src, d.dst, &rep, NULL, NULL, &err) == 0, "%s",
              err.text);
    /* All but 5..14 are outside what the channel holds. */
    CHECK_EQ_U64(rep.dropped_pending, 65526);
    rift_test_rmdir(d.root);

    dirs_init(&d);
    CHECK_OK(stanfs_write_standard(d.src));
    snprintf(p, sizeof p, "%s/imp:x/subs.dat", d.src);
    f = fopen(p, "ab");
    CHECK(f != NULL);
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 7, "c1", "", "big", 0, true, 30));
    for (uint64_t s = 1; s <= 65537; s++) {
        stanfs_record(f, 5, b, stanfs_sub_update(b, 7, s));
    }
    fclose(f);
    CHECK(expect_fail(&d, RIFT_ERR_LIMIT,
                      "subscription 7 has more than 65536 unacknowledged "
                      "messages"));
    rift_test_rmdir(d.root);
}
