/*
 * store_testutil.h — helpers for the store tests (tests layer): a
 * fault-injecting, counting rift_vfs with a settable clock, and small file
 * utilities for stream directories. Header-only (static inline) so unit
 * and fault tests can share it without a CMake change.
 */
#ifndef RIFT_TESTS_STORE_TESTUTIL_H
#define RIFT_TESTS_STORE_TESTUTIL_H

#include "rift/stream.h"
#include "store/vfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- A counting, failing vfs ---- */

/* Set by test threads that play a caller (a network thread): a sync made
 * while it is set is counted in test_vfs.caller_syncs. */
static _Thread_local int test_thread_is_caller;

typedef struct test_vfs {
    rift_vfs vfs;
    /* Counters. */
    atomic_int pwrites;
    atomic_int syncs; /* fdatasync and fsync */
    atomic_int fdatasyncs;
    /* Faults (0 = off): the Nth call (1-based) fails with |fail_errno|. */
    atomic_int fail_write_at;
    atomic_int fail_sync_at;
    /* The Nth pwrite writes half its bytes, and every later one fails. */
    atomic_int short_write_at;
    atomic_int writes_dead;
    /* When nonzero, every pread fails with -fail_reads (an errno). */
    atomic_int fail_reads;
    int fail_errno;
    /* Syncs are counted and may fail but do not reach the disk (tests of
     * the logic only, not of power-loss durability). */
    bool fake_sync;
    /* Extra time every sync takes, in microseconds (a slow disk). */
    int sync_delay_us;
    /* Clock: when nonzero, wall_ms returns it. */
    atomic_ullong now_ms;
    atomic_int caller_syncs;
    /* Threads that called fdatasync (a small set). */
    pthread_mutex_t mu;
    pthread_t sync_threads[8];
    int nsync_threads;
} test_vfs;

static inline test_vfs *test_vfs_of(void *ud) {
    return (test_vfs *)ud;
}

static inline int tv_open(void *ud, const char *path, int flags,
                          unsigned mode) {
    (void)ud;
    return rift_vfs_posix()->open(NULL, path, flags, mode);
}

static inline int tv_close(void *ud, int fd) {
    (void)ud;
    return rift_vfs_posix()->close(NULL, fd);
}

static inline rift_ssize tv_pread(void *ud, int fd, void *buf, size_t len,
                                  uint64_t off) {
    int fail = atomic_load(&test_vfs_of(ud)->fail_reads);
    if (fail != 0) {
        return -fail;
    }
    return rift_vfs_posix()->pread(NULL, fd, buf, len, off);
}

static inline rift_ssize tv_pwrite(void *ud, int fd, const void *buf,
                                   size_t len, uint64_t off) {
    test_vfs *t = test_vfs_of(ud);
    int n = atomic_fetch_add(&t->pwrites, 1) + 1;
    if (atomic_load(&t->writes_dead)) {
        return -t->fail_errno;
    }
    if (atomic_load(&t->fail_write_at) == n) {
        return -t->fail_errno;
    }
    if (atomic_load(&t->short_write_at) == n) {
        atomic_store(&t->writes_dead, 1);
        size_t half = len / 2;
        if (half == 0) {
            return -t->fail_errno;
        }
        return rift_vfs_posix()->pwrite(NULL, fd, buf, half, off);
    }
    return rift_vfs_posix()->pwrite(NULL, fd, buf, len, off);
}

static inline void tv_note_sync(test_vfs *t) {
    if (test_thread_is_caller) {
        atomic_fetch_add(&t->caller_syncs, 1);
    }
    pthread_t self = pthread_self();
    pthread_mutex_lock(&t->mu);
    int known = 0;
    for (int i = 0; i < t->nsync_threads; i++) {
        if (pthread_equal(t->sync_threads[i], self)) {
            known = 1;
        }
    }
    if (!known && t->nsync_threads < 8) {
        t->sync_threads[t->nsync_threads++] = self;
    }
    pthread_mutex_unlock(&t->mu);
}

static inline void tv_delay(const test_vfs *t) {
    if (t->sync_delay_us > 0) {
        struct timespec ts = {0, (long)t->sync_delay_us * 1000L};
        nanosleep(&ts, NULL);
    }
}

static inline int tv_fdatasync(void *ud, int fd) {
    test_vfs *t = test_vfs_of(ud);
    tv_note_sync(t);
    tv_delay(t);
    atomic_fetch_add(&t->fdatasyncs, 1);
    int n = atomic_fetch_add(&t->syncs, 1) + 1;
    if (atomic_load(&t->fail_sync_at) == n) {
        return -t->fail_errno;
    }
    return t->fake_sync ? 0 : rift_vfs_posix()->fdatasync(NULL, fd);
}

static inline int tv_fsync(void *ud, int fd) {
    test_vfs *t = test_vfs_of(ud);
    tv_note_sync(t);
    int n = atomic_fetch_add(&t->syncs, 1) + 1;
    if (atomic_load(&t->fail_sync_at) == n) {
        return -t->fail_errno;
    }
    return t->fake_sync ? 0 : rift_vfs_posix()->fsync(NULL, fd);
}

static inline int tv_ftruncate(void *ud, int fd, uint64_t len) {
    (void)ud;
    return rift_vfs_posix()->ftruncate(NULL, fd, len);
}

static inline int tv_fsize(void *ud, int fd, uint64_t *size) {
    (void)ud;
    return rift_vfs_posix()->fsize(NULL, fd, size);
}

static inline int tv_rename(void *ud, const char *a, const char *b) {
    (void)ud;
    return rift_vfs_posix()->rename(NULL, a, b);
}

static inline int tv_unlink(void *ud, const char *p) {
    (void)ud;
    return rift_vfs_posix()->unlink(NULL, p);
}

static inline int tv_mkdir(void *ud, const char *p, unsigned mode) {
    (void)ud;
    return rift_vfs_posix()->mkdir(NULL, p, mode);
}

static inline int tv_lock(void *ud, int fd) {
    (void)ud;
    return rift_vfs_posix()->lock(NULL, fd);
}

static inline int tv_list(void *ud, const char *dir,
                          int (*fn)(const char *, void *), void *arg) {
    (void)ud;
    return rift_vfs_posix()->list(NULL, dir, fn, arg);
}

static inline uint64_t tv_wall_ms(void *ud) {
    test_vfs *t = test_vfs_of(ud);
    uint64_t v = atomic_load(&t->now_ms);
    return v ? v : rift_vfs_posix()->wall_ms(NULL);
}

/* Initialises |t| as a pass-through vfs with no faults. */
static inline void test_vfs_init(test_vfs *t) {
    memset(t, 0, sizeof(*t));
    t->vfs.user_data = t;
    t->vfs.open = tv_open;
    t->vfs.close = tv_close;
    t->vfs.pread = tv_pread;
    t->vfs.pwrite = tv_pwrite;
    t->vfs.fdatasync = tv_fdatasync;
    t->vfs.fsync = tv_fsync;
    t->vfs.ftruncate = tv_ftruncate;
    t->vfs.fsize = tv_fsize;
    t->vfs.rename = tv_rename;
    t->vfs.unlink = tv_unlink;
    t->vfs.mkdir = tv_mkdir;
    t->vfs.lock = tv_lock;
    t->vfs.list = tv_list;
    t->vfs.wall_ms = tv_wall_ms;
    t->fail_errno = ENOSPC;
    pthread_mutex_init(&t->mu, NULL);
}

static inline void test_vfs_free(test_vfs *t) {
    pthread_mutex_destroy(&t->mu);
}

/* ---- Files ---- */

/* Total size of the regular files in |dir|. */
static inline uint64_t test_dir_bytes(const char *dir) {
    uint64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            total += (uint64_t)st.st_size;
        }
    }
    if (d) {
        closedir(d);
    }
    return total;
}

/* Number of segment files in |dir|; the newest one's path in |newest|. */
static inline int test_segments(const char *dir, char *newest, size_t len) {
    int n = 0;
    char best[256] = "";
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l == 24 && strcmp(e->d_name + 20, ".seg") == 0) {
            n++;
            if (strcmp(e->d_name, best) > 0) {
                snprintf(best, sizeof(best), "%s", e->d_name);
            }
        }
    }
    if (d) {
        closedir(d);
    }
    if (newest) {
        snprintf(newest, len, "%s/%s", dir, best);
    }
    return n;
}

static inline long test_file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Appends |len| bytes to |path|. */
static inline int test_append(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = write(fd, data, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

/* XORs the byte at |off| (negative: from the end) of |path| with 0xFF. */
static inline int test_flip(const char *path, long off) {
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        return -1;
    }
    if (off < 0) {
        off += (long)lseek(fd, 0, SEEK_END);
    }
    unsigned char b;
    int rc = -1;
    if (pread(fd, &b, 1, off) == 1) {
        b ^= 0xFF;
        rc = pwrite(fd, &b, 1, off) == 1 ? 0 : -1;
    }
    close(fd);
    return rc;
}

#endif /* RIFT_TESTS_STORE_TESTUTIL_H */
