/*
 * import.c — `rift stan import` (stan layer; see import.h): checks that
 * the source is a nats-streaming-server file store (server.dat), counts
 * its client registrations (clients.dat), and imports each channel
 * directory through a temporary directory that is verified with
 * rift_store_verify and then renamed to the name the STAN service opens.
 */
#include "stan/import.h"

#include "rift/stream.h"
#include "stan/import_internal.h"
#include "stan/names.h"
#include "store/format.h"
#include "subject/subject.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIR_NAME   STAN_MAX_DIR_NAME
#define MAX_SERVER_REC 65536

/* dir_name is the service's stan_dir_name (the STAN service opens the
 * imported directory by it) for a NUL-terminated, non-empty name. */
static bool dir_name(const char *name, char *out, size_t cap) {
    return name[0] && stan_dir_name(name, strlen(name), out, cap);
}

/* read_server checks server.dat: the version, then exactly one ServerInfo
 * record, as the original requires. */
static int read_server(const char *src, rift_stan_import_report *rep,
                       rift_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/server.dat", src);
    FILE *f = fopen(path, "rb");
    if (!f) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: %s (not a nats-streaming-server file "
                              "store?)",
                              path, strerror(errno));
    }
    stan_imp_reader r;
    int rc =
        stan_imp_reader_init(&r, f, path, false, MAX_SERVER_REC, NULL, err);
    uint8_t type;
    const uint8_t *p = NULL;
    size_t len = 0;
    if (rc == 0) {
        int n = stan_imp_reader_next(&r, &type, &p, &len, err);
        if (n == 0) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset 4: no server record (the "
                                "store was never used)",
                                path);
        } else if (n < 0) {
            rc = n;
        }
    }
    if (rc == 0) {
        stan_imp_str id;
        const char *why = NULL;
        if (stan_imp_decode_str_field(p, len, 1, &id, &why) != 0) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset 4: ServerInfo: %s", path, why);
        } else {
            size_t k = id.len < sizeof rep->cluster_id - 1
                           ? id.len
                           : sizeof rep->cluster_id - 1;
            memcpy(rep->cluster_id, id.p ? id.p : "", k);
            rep->cluster_id[k] = '\0';
        }
    }
    if (rc == 0) {
        int c = fgetc(f);
        if (c != EOF) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset %" PRIu64
                                ": bytes after the server record",
                                path, r.off);
        }
    }
    stan_imp_reader_free(&r);
    fclose(f);
    return rc;
}

/* count_clients validates clients.dat (absent = none) and counts the
 * registrations it leaves: adds minus deletes. */
static int count_clients(const char *src, rift_stan_import_report *rep,
                         rift_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/clients.dat", src);
    FILE *f = fopen(path, "rb");
    if (!f) {
        return errno == ENOENT ? 0
                               : rift_error_set(err, RIFT_ERR_IO, "%s: %s",
                                                path, strerror(errno));
    }
    stan_imp_reader r;
    int rc = stan_imp_reader_init(&r, f, path, true, 0xFFFFFF, NULL, err);
    uint64_t adds = 0, dels = 0;
    uint8_t type;
    const uint8_t *p;
    size_t len;
    while (stan_imp_reader_more(&r, &type, &p, &len, &rc, err)) {
        stan_imp_str id;
        const char *why = "unknown client record type";
        if ((type != STAN_IMP_CLIENT_ADD && type != STAN_IMP_CLIENT_DEL) ||
            stan_imp_decode_str_field(p, len, 1, &id, &why) != 0) {
            rc = rift_error_set(err, RIFT_ERR_STORAGE,
                                "%s: offset %" PRIu64 ": %s", path, r.at, why);
            break;
        }
        if (type == STAN_IMP_CLIENT_ADD) {
            adds++;
        } else {
            dels++;
        }
    }
    stan_imp_reader_free(&r);
    fclose(f);
    rep->clients = adds > dels ? adds - dels : 0;
    return rc;
}

/* remove_tree deletes |path| and its files (a leftover temporary stream
 * directory of an earlier failed import: plain files only). */
static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                (void)unlink(p);
            }
        }
        closedir(d);
    }
    (void)rmdir(path);
}

/* 1 absent, 0 empty directory, -1 anything else. */
static int dest_state(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        return errno == ENOENT ? 1 : -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        return -1;
    }
    DIR *d = opendir(path);
    if (!d) {
        return -1;
    }
    int st = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            st = -1;
            break;
        }
    }
    closedir(d);
    return st;
}

static int sync_dir(const char *path, rift_error *err) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;
    if (fd < 0 || fsync(fd) != 0) {
        rc = rift_error_set(err, RIFT_ERR_IO, "sync %s: %s", path,
                            strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static int import_one(const char *src, const char *dst, const char *channel,
                      rift_stan_import_report *rep, rift_stan_import_cb cb,
                      void *ud, rift_error *err) {
    size_t clen = strlen(channel);
    char dn[MAX_DIR_NAME + 4];
    if (!rift_subject_valid(channel, clen, false, RIFT_MAX_SUBJECT_BYTES) ||
        !dir_name(channel, dn, sizeof dn)) {
        return rift_error_set(err, RIFT_ERR_LIMIT,
                              "%s/%s: channel name is not a subject the STAN "
                              "service accepts",
                              src, channel);
    }
    char sdir[4096], final[4096], tmp[4096];
    snprintf(sdir, sizeof sdir, "%s/%s", src, channel);
    snprintf(final, sizeof final, "%s/%s", dst, dn);
    /* A leading '.' is never a channel's directory (dir_name escapes it). */
    int n = snprintf(tmp, sizeof tmp, "%s/.%s.import", dst, dn);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        return rift_error_set(err, RIFT_ERR_LIMIT, "%s: path too long", dst);
    }
    int ds = dest_state(final);
    if (ds < 0) {
        return rift_error_set(err, RIFT_ERR_EXISTS,
                              "%s exists and is not empty: refusing to "
                              "overwrite channel %s",
                              final, channel);
    }
    remove_tree(tmp);
    rift_stan_import_stats st;
    int rc = stan_imp_channel(sdir, tmp, channel, NULL, &st, err);
    if (rc == 0) {
        rift_store_report vr;
        rift_error ve = {0};
        if (rift_store_verify(tmp, &vr, &ve) != 0 ||
            vr.records != st.messages || vr.consumers != st.consumers) {
            rc =
                rift_error_set(err, RIFT_ERR_STORAGE,
                               "channel %s: the written stream failed "
                               "verification: %s",
                               channel, ve.text[0] ? ve.text : "counts differ");
        }
    }
    if (rc == 0 && ds == 0 && rmdir(final) != 0) {
        rc = rift_error_set(err, RIFT_ERR_IO, "rmdir %s: %s", final,
                            strerror(errno));
    }
    if (rc == 0 && rename(tmp, final) != 0) {
        rc = rift_error_set(err, RIFT_ERR_IO, "rename %s: %s", tmp,
                            strerror(errno));
    }
    if (rc != 0) {
        remove_tree(tmp);
        return rc;
    }
    rc = sync_dir(dst, err);
    rep->channels++;
    rep->messages += st.messages;
    rep->consumers += st.consumers;
    rep->skipped_subs += st.skipped_subs;
    rep->dropped_pending += st.dropped_pending;
    rep->holes += st.holes;
    if (rc == 0 && cb) {
        cb(ud, channel, st.messages, st.first_seq, st.last_seq, st.consumers);
    }
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* list_channels: the subdirectories of |src|, sorted (the original treats
 * every directory of its root as a channel). */
static int list_channels(const char *src, char ***out, size_t *count,
                         rift_error *err) {
    *out = NULL;
    *count = 0;
    DIR *d = opendir(src);
    if (!d) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", src, strerror(errno));
    }
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
            continue;
        }
        snprintf(p, sizeof p, "%s/%s", src, e->d_name);
        if (lstat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            continue;
        }
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = rift_realloc(NULL, *out, cap * sizeof *nv);
            if (!nv) {
                rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                break;
            }
            *out = nv;
        }
        if (!((*out)[*count] =
                  rift_strndup(NULL, e->d_name, strlen(e->d_name)))) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            break;
        }
        (*count)++;
    }
    closedir(d);
    if (*count > 1) {
        qsort(*out, *count, sizeof **out, cmp_str);
    }
    return rc;
}

int rift_stan_import(const char *src, const char *dst,
                     rift_stan_import_report *report, rift_stan_import_cb cb,
                     void *user_data, rift_error *err) {
    memset(report, 0, sizeof *report);
    int rc = read_server(src, report, err);
    if (rc == 0) {
        rc = count_clients(src, report, err);
    }
    if (rc == 0 && mkdir(dst, RIFT_STORE_DIR_MODE) != 0 && errno != EEXIST) {
        rc = rift_error_set(err, RIFT_ERR_IO, "mkdir %s: %s", dst,
                            strerror(errno));
    }
    char **names = NULL;
    size_t n = 0;
    if (rc == 0) {
        rc = list_channels(src, &names, &n, err);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = import_one(src, dst, names[i], report, cb, user_data, err);
    }
    for (size_t i = 0; i < n; i++) {
        rift_free(NULL, names[i]);
    }
    rift_free(NULL, names);
    return rc;
}
