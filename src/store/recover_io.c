/*
 * recover_io.c — what every part of recovery shares (store layer): the
 * error texts for I/O failures and corruption (they name the file and
 * offset: recovery runs for the operator, and verify/repair report to
 * it), paths inside the stream directory, truncation, and the torn-tail
 * entries of the report.
 */
#include "store/recover_io.h"

#include <stdio.h>
#include <string.h>

int rift_recover_io_error(rift_error *err, const char *what, const char *path,
                          int rc) {
    char os[256];
    rift_vfs_os_error(rc, os, sizeof(os));
    return rift_error_set(err, RIFT_ERR_IO, "messaging I/O: %s%s%s: %s", what,
                          *what ? " " : "", path, os);
}

int rift_recover_corrupt(rift_error *err, const char *why, const char *path,
                         uint64_t off) {
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: %s in %s at offset %llu", why, path,
                          (unsigned long long)off);
}

bool rift_recover_writable(const rift_stream *st) {
    return st->mode != RIFT_OPEN_VERIFY;
}

char *rift_recover_join(rift_stream *st, const char *name) {
    size_t n = strlen(st->dir) + 1 + strlen(name) + 1;
    char *p = rift_malloc(st->mem, n);
    if (p != NULL) {
        snprintf(p, n, "%s/%s", st->dir, name);
    }
    return p;
}

int rift_recover_truncate(rift_stream *st, int fd, const char *path,
                          uint64_t len, rift_error *err) {
    const rift_vfs *v = st->vfs;
    int rc = v->ftruncate(v->user_data, fd, len);
    if (rc != 0) {
        return rift_recover_io_error(err, "truncate", path, rc);
    }
    /* Always synced: a cut that is lost could resurface a torn tail
     * behind records appended later. */
    rc = v->fdatasync(v->user_data, fd);
    if (rc != 0) {
        return rift_recover_io_error(err, "fdatasync", path, rc);
    }
    return 0;
}

void rift_recover_note_torn(rift_stream *st, const char *path, uint64_t off) {
    rift_store_report *r = st->report;
    if (r != NULL) {
        r->torn = true;
        const char *base = strrchr(path, '/');
        snprintf(r->torn_file, sizeof(r->torn_file), "%s",
                 base ? base + 1 : path);
        r->torn_offset = off;
    }
}

void rift_recover_note_cut(rift_stream *st, uint64_t bytes) {
    if (st->report != NULL) {
        st->report->repaired_bytes += bytes;
    }
}
