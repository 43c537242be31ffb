/*
 * vfs_posix.c — the POSIX rift_vfs (store layer): thin wrappers around
 * open/pread/pwrite/fdatasync/flock/readdir that turn failures into
 * -errno and retry EINTR.
 */
#include "store/vfs.h"
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int neg_errno(void) {
    return errno > 0 ? -errno : -EIO;
}

static int px_open(void *ud, const char *path, int flags, unsigned mode) {
    (void)ud;
    int fd;
    do {
        fd = open(path, flags | O_CLOEXEC, (mode_t)mode);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? neg_errno() : fd;
}

static int px_close(void *ud, int fd) {
    (void)ud;
    /* close(2) must not be retried on EINTR on Linux. */
    return close(fd) == 0 ? 0 : neg_errno();
}

static rift_ssize px_pread(void *ud, int fd, void *buf, size_t len,
                           uint64_t off) {
    (void)ud;
    ssize_t n;
    do {
        n = pread(fd, buf, len, (off_t)off);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? neg_errno() : n;
}

static rift_ssize px_pwrite(void *ud, int fd, const void *buf, size_t len,
                            uint64_t off) {
    (void)ud;
    ssize_t n;
    do {
        n = pwrite(fd, buf, len, (off_t)off);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? neg_errno() : n;
}

static int px_fdatasync(void *ud, int fd) {
    (void)ud;
    int rc;
    do {
        rc = fdatasync(fd);
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : neg_errno();
}

static int px_fsync(void *ud, int fd) {
    (void)ud;
    int rc;
    do {
        rc = fsync(fd);
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : neg_errno();
}

static int px_ftruncate(void *ud, int fd, uint64_t len) {
    (void)ud;
    int rc;
    do {
        rc = ftruncate(fd, (off_t)len);
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : neg_errno();
}

static int px_fsize(void *ud, int fd, uint64_t *size) {
    (void)ud;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return neg_errno();
    }
    *size = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
    return 0;
}

static int px_rename(void *ud, const char *from, const char *to) {
    (void)ud;
    return rename(from, to) == 0 ? 0 : neg_errno();
}

static int px_unlink(void *ud, const char *path) {
    (void)ud;
    return unlink(path) == 0 ? 0 : neg_errno();
}

static int px_mkdir(void *ud, const char *path, unsigned mode) {
    (void)ud;
    return mkdir(path, (mode_t)mode) == 0 ? 0 : neg_errno();
}

static int px_lock(void *ud, int fd) {
    (void)ud;
    int rc;
    do {
        rc = flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : neg_errno();
}

static int px_list(void *ud, const char *dir,
                   int (*fn)(const char *name, void *arg), void *arg) {
    (void)ud;
    DIR *d = opendir(dir);
    if (d == NULL) {
        return neg_errno();
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (e == NULL) {
            if (errno != 0) {
                rc = neg_errno();
            }
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        rc = fn(e->d_name, arg);
        if (rc != 0) {
            break;
        }
    }
    closedir(d);
    return rc;
}

static uint64_t px_wall_ms(void *ud) {
    (void)ud;
    return rift_wall_ms();
}

static const rift_vfs posix_vfs = {
    .user_data = NULL,
    .open = px_open,
    .close = px_close,
    .pread = px_pread,
    .pwrite = px_pwrite,
    .fdatasync = px_fdatasync,
    .fsync = px_fsync,
    .ftruncate = px_ftruncate,
    .fsize = px_fsize,
    .rename = px_rename,
    .unlink = px_unlink,
    .mkdir = px_mkdir,
    .lock = px_lock,
    .list = px_list,
    .wall_ms = px_wall_ms,
};

const rift_vfs *rift_vfs_posix(void) {
    return &posix_vfs;
}

const char *rift_vfs_os_error(int rc, char *buf, size_t len) {
    int e = rc < 0 ? -rc : rc;
    /* strerrordesc_np returns a static string: thread-safe, unlike
     * strerror for unknown codes. */
    const char *d = strerrordesc_np(e);
    snprintf(buf, len, "%s (os error %d)", d ? d : "Unknown error", e);
    return buf;
}
