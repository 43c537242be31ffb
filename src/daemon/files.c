/*
 * files.c — whole-file reads, atomic writes and private directories for
 * the daemon (daemon layer). See files.h.
 */
#include "daemon/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rift_file_read(const char *path, size_t max, char **pbuf, size_t *plen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    int rc = 0;
    size_t len = 0, cap = 4096;
    char *buf = rift_malloc(NULL, cap + 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                rc = -EFBIG;
                goto out;
            }
            char *nb = rift_realloc(NULL, buf, cap * 2 + 1);
            if (nb == NULL) {
                rc = -ENOMEM;
                goto out;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            rc = -errno;
            goto out;
        }
        if (r == 0) {
            break;
        }
        len += (size_t)r;
    }
    if (len > max) {
        rc = -EFBIG;
        goto out;
    }
    buf[len] = '\0';
    *pbuf = buf;
    *plen = len;
    buf = NULL;
out:
    rift_free(NULL, buf);
    close(fd);
    return rc;
}

int rift_file_write_atomic(const char *path, const void *data, size_t len,
                           mode_t mode) {
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        return -ENAMETOOLONG;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        return -errno;
    }
    int rc = 0;
    /* O_CREAT does not change the mode of a leftover temporary file. */
    if (fchmod(fd, mode) != 0) {
        rc = -errno;
        goto fail;
    }
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0) {
            rc = -errno;
            goto fail;
        }
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = -errno;
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = -errno;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = -errno;
        goto fail;
    }
    return 0;
fail:
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    return rc;
}

int rift_dir_ensure_private(const char *path, bool *created) {
    *created = false;
    if (mkdir(path, 0700) == 0) {
        *created = true;
        return 0;
    }
    if (errno != EEXIST) {
        return -errno;
    }
    return rift_dir_narrow(path);
}

int rift_dir_narrow(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        return -errno;
    }
    if (!S_ISDIR(st.st_mode)) {
        return -ENOTDIR;
    }
    if ((st.st_mode & 077) == 0) {
        return 0;
    }
    /* Narrowing loses nothing riftd needs, so fix it rather than refuse
     * (a secret file is refused instead: it may already have leaked). */
    if (chmod(path, 0700) != 0) {
        return -errno;
    }
    rift_log(RIFT_LOG_WARN,
             "%s: directory was open to group or others (mode %04o); "
             "changed to 0700",
             path, (unsigned)(st.st_mode & 07777));
    return 0;
}

int rift_file_check_private(const char *path, const char *what,
                            rift_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) {
        return 0; /* the reader reports a missing file in its own words */
    }
    if ((st.st_mode & 077) == 0) {
        return 0;
    }
    return rift_error_set(err, RIFT_ERR_PERMISSION,
                          "%s (%s) is accessible by group or others (mode "
                          "%04o); run chmod 600 %s",
                          what, path, (unsigned)(st.st_mode & 07777), path);
}
