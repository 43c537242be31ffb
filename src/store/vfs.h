/*
 * vfs.h — the file-system table of the store layer. Every file operation
 * of the store goes through a rift_vfs, so tests can count and fail
 * writes and syncs or cut a write short (docs/style.md §8.44), and so the
 * store never calls the OS directly. Like SQLite's VFS it also carries
 * the wall clock, so tests can age records without sleeping.
 *
 * All functions return 0 (or a byte count / descriptor) on success and a
 * negative errno on failure; they must be thread-safe.
 */
#ifndef RIFT_STORE_VFS_H
#define RIFT_STORE_VFS_H

#include "rift/stream.h"

struct rift_vfs {
    void *user_data;
    /* open(2) with O_* |flags| (O_CLOEXEC is added by the store): a
     * descriptor or -errno. Directories are opened O_RDONLY|O_DIRECTORY. */
    int (*open)(void *ud, const char *path, int flags, unsigned mode);
    int (*close)(void *ud, int fd);
    /* Positional I/O: bytes transferred (possibly short) or -errno. */
    rift_ssize (*pread)(void *ud, int fd, void *buf, size_t len, uint64_t off);
    rift_ssize (*pwrite)(void *ud, int fd, const void *buf, size_t len,
                         uint64_t off);
    /* fdatasync(2) for files, fsync(2) for directories. */
    int (*fdatasync)(void *ud, int fd);
    int (*fsync)(void *ud, int fd);
    int (*ftruncate)(void *ud, int fd, uint64_t len);
    int (*fsize)(void *ud, int fd, uint64_t *size);
    int (*rename)(void *ud, const char *from, const char *to);
    int (*unlink)(void *ud, const char *path);
    /* mkdir(2): -EEXIST when present. */
    int (*mkdir)(void *ud, const char *path, unsigned mode);
    /* An exclusive, non-blocking advisory lock held until close:
     * -EWOULDBLOCK when another open file description holds it. */
    int (*lock)(void *ud, int fd);
    /* Calls |fn| for every entry of |dir| except "." and ".."; stops at
     * and returns the first nonzero value |fn| returns. */
    int (*list)(void *ud, const char *dir,
                int (*fn)(const char *name, void *arg), void *arg);
    /* Wall-clock milliseconds since the Unix epoch. */
    uint64_t (*wall_ms)(void *ud);
};

/* rift_vfs_posix returns the table backed by the POSIX calls. */
const rift_vfs *rift_vfs_posix(void);

/* rift_vfs_os_error formats "<strerror> (os error N)" for -errno |rc|,
 * Rust's io::Error display, into |buf|. */
const char *rift_vfs_os_error(int rc, char *buf, size_t len);

#endif /* RIFT_STORE_VFS_H */
