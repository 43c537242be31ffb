/*
 * test_store_modes.c — the modes of what a file stream creates (tests of
 * the store layer): a stream holds other identities' messages, so its
 * directories are 0700 and its files 0600 wherever storage_path points,
 * even under a permissive umask.
 */
#include "test.h"

#include "rift/stream.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

static int mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

RIFT_TEST(stream_directories_and_files_are_private) {
    mode_t old = umask(022);
    char *root = rift_test_tmpdir();
    char dir[600], path[900];
    snprintf(dir, sizeof(dir), "%s/a/b/s", root);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    rift_stream *st = NULL;
    rift_error err;
    CHECK_OK(rift_stream_new(&st, &s, &err));
    rift_stored out;
    CHECK_OK(rift_stream_publish(st, "a", 1, NULL, 0, (const uint8_t *)"x", 1,
                                 &out, &err));
    rift_consumer *c = NULL;
    CHECK_OK(rift_stream_consumer_open(st, "w", 1, NULL, &c, &err));
    rift_consumer_close(c);
    /* A snapshot goes through state.tmp and a rename. */
    CHECK_OK(rift_stream_checkpoint(st, &err));
    snprintf(path, sizeof(path), "%s/a", root);
    CHECK_EQ_INT(mode_of(path), 0700);
    snprintf(path, sizeof(path), "%s/a/b", root);
    CHECK_EQ_INT(mode_of(path), 0700);
    CHECK_EQ_INT(mode_of(dir), 0700);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int files = 0, segments = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        CHECK_MSG(mode_of(path) == 0600, "%s: %04o", e->d_name,
                  (unsigned)mode_of(path));
        files++;
        segments += strstr(e->d_name, ".seg") != NULL;
    }
    if (d != NULL) {
        closedir(d);
    }
    /* stream.lock, state.log and at least one segment. */
    CHECK(files >= 3);
    CHECK(segments >= 1);
    rift_stream_del(st);
    rift_test_rmdir(root);
    umask(old);
}
