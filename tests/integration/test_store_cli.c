/*
 * test_store_cli.c — `rift store verify|repair DIR` end to end
 * (integration tests): a directory written through the public API is
 * verified clean, a flipped byte is reported with its file and offset and
 * a failing exit status, repair cuts it and the stream opens again without
 * reusing the removed record's sequence.
 */
#include "test.h"

#include "rift/stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the CLI with |args|, capturing stdout+stderr into |out|. Returns
 * the exit status or -1. */
static int run_cli(const char *args, char *out, size_t len) {
    const char *cli = getenv("RIFT_TEST_CLI");
    if (cli == NULL || *cli == '\0') {
        return -1;
    }
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli, args);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return -1;
    }
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

RIFT_TEST(verify_and_repair) {
    char *dir = rift_test_tmpdir();
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rift_stream_publish(st, "a.b", 3, NULL, 0,
                                     (const uint8_t *)"xyz", 3, NULL, NULL));
    }
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "w", 1, NULL, &c, NULL));
    rift_consumer_close(c);
    rift_stream_del(st);

    char out[8192], args[4200];
    snprintf(args, sizeof(args), "store verify %s", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
    CHECK_MSG(strstr(out, "records:       3 (sequences 1..3)") != NULL, "%s",
              out);
    CHECK(strstr(out, "consumers:     1") != NULL);

    /* Flip the last byte: the third record (at 32 + 2 x 38) is bad. */
    char seg[4300];
    snprintf(seg, sizeof(seg), "%s/00000000000000000001.seg", dir);
    int fd = open(seg, O_RDWR);
    CHECK(fd >= 0);
    off_t end = lseek(fd, 0, SEEK_END);
    unsigned char b;
    CHECK(pread(fd, &b, 1, end - 1) == 1);
    b ^= 0xFF;
    CHECK(pwrite(fd, &b, 1, end - 1) == 1);
    close(fd);
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 1);
    char want[4400];
    snprintf(want, sizeof(want), "checksum mismatch in %s at offset 108", seg);
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);

    snprintf(args, sizeof(args), "store repair %s", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
    CHECK_MSG(strstr(out, "records:       2") != NULL, "%s", out);
    CHECK(strstr(out, "removed:       38 bytes") != NULL);
    snprintf(args, sizeof(args), "store verify %s", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);

    CHECK_MSG(strstr(out, "records:       2 (sequences 1..2)") != NULL, "%s",
              out);
    /* Sequence 3 was used by the record repair removed: never again. */
    CHECK_MSG(strstr(out, "next sequence: 4") != NULL, "%s", out);

    CHECK_OK(rift_stream_new(&st, &s, NULL));
    rift_stored stored;
    CHECK_OK(rift_stream_publish(st, "a.b", 3, NULL, 0, (const uint8_t *)"n", 1,
                                 &stored, NULL));
    CHECK_EQ_U64(stored.sequence, 4);
    /* The lock: verify refuses a directory that is open. */
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 1);
    CHECK(strstr(out, "already open or cannot be locked") != NULL);
    rift_stream_del(st);
    CHECK_EQ_INT(run_cli("store", out, sizeof(out)), 2);
    rift_test_rmdir(dir);
}

/* A directory that holds no stream is no clean stream: verify says what
 * it is, fails, and leaves no stream.lock behind. A stream that was opened
 * and never written to still verifies. */
RIFT_TEST(verify_refuses_a_directory_that_is_not_a_stream) {
    char *dir = rift_test_tmpdir();
    char note[4200];
    snprintf(note, sizeof(note), "%s/notes.txt", dir);
    FILE *fp = fopen(note, "w");
    CHECK(fp != NULL);
    fputs("not a stream\n", fp);
    fclose(fp);
    char out[8192], args[4200], lock[4200];
    snprintf(args, sizeof(args), "store verify %s", dir);
    snprintf(lock, sizeof(lock), "%s/stream.lock", dir);
    int rc = run_cli(args, out, sizeof(out));
    bool no_lock = access(lock, F_OK) != 0;
    snprintf(args, sizeof(args), "store repair %s", dir);
    int rc2 = run_cli(args, out + strlen(out), sizeof(out) - strlen(out));
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_INT(rc2, 1);
    CHECK_MSG(strstr(out, "is not a stream directory") != NULL, "%s", out);
    CHECK(strstr(out, "status:        ok") == NULL);
    CHECK(no_lock);
    CHECK(access(lock, F_OK) != 0);

    char fresh[4000];
    snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = fresh;
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    rift_stream_del(st);
    snprintf(args, sizeof(args), "store verify %s", fresh);
    CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
    CHECK_MSG(strstr(out, "status:        ok") != NULL, "%s", out);
    rift_test_rmdir(dir);
}
