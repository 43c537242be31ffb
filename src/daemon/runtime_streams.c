/*
 * runtime_streams.c — streams made at run time (daemon layer): the
 * registry, its persistence in <data_dir>/streams.json and the
 * administration requests of the QUIC server. See runtime_streams.h.
 */
#include "daemon/runtime_streams.h"

#include "daemon/components.h"
#include "daemon/files.h"
#include "subject/subject.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_NAME "streams.json"
#define DIR_NAME  "streams"
/* The definitions file is small: 64 subjects of 1 KiB per stream at most,
 * and a bounded number of streams. */
#define MAX_FILE_BYTES (64u << 20)
#define MAX_STREAMS    4096u

typedef struct rt_def {
    char *name;
    char **subjects;
    size_t n_subjects;
    bool file;
    uint64_t max_messages, max_bytes, max_age_ms, max_payload_bytes;
    uint32_t max_consumers;
} rt_def;

typedef struct rt_stream {
    rt_def def;
    rift_stream *st;     /* NULL: a configured stream has the name */
    rift_broker *broker; /* its max_deliver advisories' broker, or NULL */
    size_t pins;
    bool doomed; /* deleted while pinned: closed at the last release */
    struct rt_stream *doomed_next; /* rt->doomed, until its files are gone */
    char *dir;                     /* file storage: <data_dir>/streams/<name> */
} rt_stream;

typedef struct rt_grant {
    char *identity;
    char **patterns;
    size_t n;
} rt_grant;

struct rift_runtime_streams {
    pthread_mutex_t lock;
    rift_broker *broker; /* max_deliver advisories (NULL: none) */
    char *data_dir;      /* NULL: creation refused */
    rt_stream **v;       /* sorted by name; shadowed ones included */
    /* Deleted while pinned, their directories not removed yet: a name
     * among them cannot be made again before (it would share the
     * directory the last release removes). */
    rt_stream *doomed;
    size_t n;
    char **configured; /* names of messaging.streams */
    size_t n_configured;
    rt_grant *grants;
    size_t n_grants;
};

static char *dup_str(const char *s) {
    return rift_strndup(NULL, s, strlen(s));
}

static void free_strv(char **v, size_t n) {
    for (size_t i = 0; v != NULL && i < n; i++) {
        rift_free(NULL, v[i]);
    }
    rift_free(NULL, v);
}

static char **dup_strv(const char *const *v, size_t n) {
    char **out = rift_calloc(NULL, n ? n : 1, sizeof(*out));
    for (size_t i = 0; out != NULL && i < n; i++) {
        if ((out[i] = dup_str(v[i])) == NULL) {
            free_strv(out, i);
            return NULL;
        }
    }
    return out;
}

static void def_free(rt_def *d) {
    rift_free(NULL, d->name);
    free_strv(d->subjects, d->n_subjects);
}

/* ---- Storage ---- */

/* Removes |path| and the files in it (a store directory is flat). */
static void remove_tree(const char *path) {
    DIR *dir = opendir(path);
    if (dir == NULL) {
        return;
    }
    struct dirent *e;
    char p[4200];
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        (void)unlink(p);
    }
    closedir(dir);
    (void)rmdir(path);
}

static void settings_of(const rt_stream *s, rift_stream_settings *out) {
    rift_stream_settings_default(out);
    const rt_def *d = &s->def;
    out->subjects = (const char *const *)d->subjects;
    out->subjects_count = d->n_subjects;
    if (d->max_messages) {
        out->max_messages = d->max_messages;
    }
    if (d->max_bytes) {
        out->max_bytes = d->max_bytes;
    }
    if (d->max_payload_bytes) {
        out->max_payload_bytes = d->max_payload_bytes;
    }
    if (d->max_consumers) {
        out->max_consumers = d->max_consumers;
    }
    out->max_age_ms = d->max_age_ms;
    out->storage_path = d->file ? s->dir : NULL;
}

/* A record dropped after max_deliver deliveries, on the fetching thread;
 * the stream's name stays put while the stream is open (reopen closes it
 * before it changes the definition). */
static void advise(void *arg, const rift_consumer_advisory *a) {
    rt_stream *s = arg;
    rift_daemon_advise_max_deliver(s->broker, s->def.name, a);
}

static int open_stream(rift_runtime_streams *rt, rt_stream *s,
                       rift_error *err) {
    rift_stream_settings set;
    settings_of(s, &set);
    int rc = rift_stream_new(&s->st, &set, err);
    if (rc == 0 && rt->broker != NULL) {
        s->broker = rt->broker;
        rift_stream_set_advisory_watch(s->st, advise, s);
    }
    if (rc != 0 && rc != RIFT_ERR_INVALID_CONFIG &&
        rc != RIFT_ERR_INVALID_SUBJECT && rc != RIFT_ERR_NOMEM) {
        /* Storage texts name files: they stay in the log, the client
         * gets none of it (the caller's text is the remote one). */
        rift_log(RIFT_LOG_ERROR, "rift: run-time stream %s: %s", s->def.name,
                 err->text);
        rift_error_set(err, rc, "stream storage failed; see riftd's log");
    }
    return rc;
}

static void close_stream(rt_stream *s) {
    if (s->st != NULL && s->def.file) {
        rift_error err = {0};
        if (rift_stream_checkpoint(s->st, &err) != 0) {
            rift_log(RIFT_LOG_WARN, "rift: stream %s: %s", s->def.name,
                     err.text);
        }
    }
    rift_stream_del(s->st);
    s->st = NULL;
}

static void entry_free(rt_stream *s) {
    if (s == NULL) {
        return;
    }
    close_stream(s);
    def_free(&s->def);
    rift_free(NULL, s->dir);
    rift_free(NULL, s);
}

/* ---- The definitions file ---- */

static json_t *def_json(const rt_def *d) {
    json_t *subs = json_array();
    for (size_t i = 0; subs != NULL && i < d->n_subjects; i++) {
        json_array_append_new(subs, json_string(d->subjects[i]));
    }
    return json_pack("{s:s,s:o,s:s,s:I,s:I,s:I,s:I,s:I}", "name", d->name,
                     "subjects", subs, "storage", d->file ? "file" : "memory",
                     "max_messages", (json_int_t)d->max_messages, "max_bytes",
                     (json_int_t)d->max_bytes, "max_age_ms",
                     (json_int_t)d->max_age_ms, "max_payload_bytes",
                     (json_int_t)d->max_payload_bytes, "max_consumers",
                     (json_int_t)d->max_consumers);
}

static char *file_path(const rift_runtime_streams *rt) {
    size_t n = strlen(rt->data_dir) + sizeof(FILE_NAME) + 2;
    char *p = rift_malloc(NULL, n);
    if (p != NULL) {
        snprintf(p, n, "%s/%s", rt->data_dir, FILE_NAME);
    }
    return p;
}

/* Writes every definition (shadowed ones too); under |lock|. */
static int save(rift_runtime_streams *rt, rift_error *err) {
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < rt->n; i++) {
        json_array_append_new(list, def_json(&rt->v[i]->def));
    }
    json_t *o = json_pack("{s:i,s:o}", "version", 1, "streams", list);
    char *text = o != NULL ? json_dumps(o, JSON_INDENT(2)) : NULL;
    json_decref(o);
    char *path = file_path(rt);
    int rc = text != NULL && path != NULL
                 ? rift_file_write_atomic(path, text, strlen(text), 0600)
                 : -ENOMEM;
    free(text);
    rift_free(NULL, path);
    if (rc != 0) {
        rift_log(RIFT_LOG_ERROR, "rift: cannot save %s/%s: %s", rt->data_dir,
                 FILE_NAME, strerror(-rc));
        return rift_error_set(err, RIFT_ERR_IO,
                              "cannot save the run-time streams: %s",
                              strerror(-rc));
    }
    return 0;
}

static int u64_field(json_t *o, const char *key, uint64_t *out) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int corrupt(rift_error *err, const char *why) {
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "data_dir: %s is corrupt: %s; move it away to start "
                          "without run-time streams (their data stays in "
                          "data_dir/%s)",
                          FILE_NAME, why, DIR_NAME);
}

static int def_from(json_t *o, rt_def *d, rift_error *err) {
    json_t *name = json_object_get(o, "name");
    json_t *subs = json_object_get(o, "subjects");
    const char *storage = json_string_value(json_object_get(o, "storage"));
    uint64_t mc = 0;
    if (!json_is_string(name) || !json_is_array(subs) || storage == NULL ||
        u64_field(o, "max_messages", &d->max_messages) != 0 ||
        u64_field(o, "max_bytes", &d->max_bytes) != 0 ||
        u64_field(o, "max_age_ms", &d->max_age_ms) != 0 ||
        u64_field(o, "max_payload_bytes", &d->max_payload_bytes) != 0 ||
        u64_field(o, "max_consumers", &mc) != 0 || mc > UINT32_MAX) {
        return corrupt(err, "a stream entry lacks a field");
    }
    const char *n = json_string_value(name);
    /* The names were checked when made; a hand-edited one must not reach
     * outside data_dir. */
    if (n[0] == '\0' || n[0] == '.' || strchr(n, '/') != NULL ||
        strlen(n) > 96) {
        return corrupt(err, "invalid stream name");
    }
    d->max_consumers = (uint32_t)mc;
    d->file = strcmp(storage, "file") == 0;
    d->name = dup_str(n);
    d->n_subjects = json_array_size(subs);
    d->subjects = rift_calloc(NULL, d->n_subjects + 1, sizeof(char *));
    if (d->name == NULL || d->subjects == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->n_subjects; i++) {
        const char *s = json_string_value(json_array_get(subs, i));
        if (s == NULL) {
            return corrupt(err, "a subject is not a string");
        }
        if ((d->subjects[i] = dup_str(s)) == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

static int cmp_entry(const void *a, const void *b) {
    const rt_stream *x = *(rt_stream *const *)a, *y = *(rt_stream *const *)b;
    return strcmp(x->def.name, y->def.name);
}

static bool is_configured(const rift_runtime_streams *rt, const char *name) {
    for (size_t i = 0; i < rt->n_configured; i++) {
        if (strcmp(rt->configured[i], name) == 0) {
            return true;
        }
    }
    return false;
}

static char *dir_of(const rift_runtime_streams *rt, const char *name) {
    size_t n = strlen(rt->data_dir) + sizeof(DIR_NAME) + strlen(name) + 3;
    char *p = rift_malloc(NULL, n);
    if (p != NULL) {
        snprintf(p, n, "%s/%s/%s", rt->data_dir, DIR_NAME, name);
    }
    return p;
}

static int ensure_dirs(rift_runtime_streams *rt, rift_error *err) {
    size_t n = strlen(rt->data_dir) + sizeof(DIR_NAME) + 2;
    char p[4200];
    if (n > sizeof(p)) {
        return rift_error_set(err, RIFT_ERR_IO, "data_dir path too long");
    }
    snprintf(p, sizeof(p), "%s/%s", rt->data_dir, DIR_NAME);
    bool created;
    int rc = rift_dir_ensure_private(p, &created);
    if (rc != 0) {
        rift_log(RIFT_LOG_ERROR, "rift: %s: %s", p, strerror(-rc));
        return rift_error_set(err, RIFT_ERR_IO,
                              "cannot create the streams directory: %s",
                              strerror(-rc));
    }
    return 0;
}

/* Reads and opens the definitions; under no lock (start-up). */
static int load(rift_runtime_streams *rt, rift_error *err) {
    char *path = file_path(rt);
    char *text = NULL;
    size_t len = 0;
    int rc = path != NULL ? rift_file_read(path, MAX_FILE_BYTES, &text, &len)
                          : -ENOMEM;
    if (rc == -ENOENT) {
        rift_free(NULL, path);
        return 0;
    }
    if (rc != 0) {
        rift_error_set(err, RIFT_ERR_IO, "data_dir: %s: %s", path,
                       strerror(-rc));
        rift_free(NULL, path);
        return RIFT_ERR_IO;
    }
    rift_free(NULL, path);
    json_error_t jerr;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    rift_free(NULL, text);
    json_t *list = json_object_get(o, "streams");
    json_t *ver = json_object_get(o, "version");
    if (o == NULL || !json_is_array(list) || !json_is_integer(ver) ||
        json_integer_value(ver) != 1 || json_array_size(list) > MAX_STREAMS) {
        rc = corrupt(err, o == NULL ? jerr.text : "unexpected layout");
        json_decref(o);
        return rc;
    }
    size_t n = json_array_size(list);
    rt->v = rift_calloc(NULL, n + 1, sizeof(*rt->v));
    if (rt->v == NULL) {
        json_decref(o);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rt_stream *s = rift_calloc(NULL, 1, sizeof(*s));
        if (s == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            break;
        }
        rt->v[rt->n++] = s;
        rc = def_from(json_array_get(list, i), &s->def, err);
        for (size_t j = 0; rc == 0 && j + 1 < rt->n; j++) {
            if (strcmp(rt->v[j]->def.name, s->def.name) == 0) {
                rc = corrupt(err, "a stream name appears twice");
            }
        }
    }
    json_decref(o);
    if (rc != 0) {
        return rc;
    }
    qsort(rt->v, rt->n, sizeof(*rt->v), cmp_entry);
    if (rt->n > 0 && (rc = ensure_dirs(rt, err)) != 0) {
        return rc;
    }
    for (size_t i = 0; i < rt->n; i++) {
        rt_stream *s = rt->v[i];
        if (is_configured(rt, s->def.name)) {
            rift_log(RIFT_LOG_WARN,
                     "rift: run-time stream %s yields to the configured "
                     "stream of that name (its definition and data are kept)",
                     s->def.name);
            continue;
        }
        if (s->def.file && (s->dir = dir_of(rt, s->def.name)) == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rift_error why = {0};
        if ((rc = open_stream(rt, s, &why)) != 0) {
            return rift_error_set(err, rc, "run-time stream %s: %s",
                                  s->def.name, why.text);
        }
        rift_log(RIFT_LOG_DEBUG, "rift: run-time stream %s open (%s)",
                 s->def.name, s->def.file ? "file" : "memory");
    }
    return 0;
}

int rift_runtime_streams_open(rift_runtime_streams **prt,
                              const rift_config *cfg, rift_broker *broker,
                              rift_error *err) {
    *prt = NULL;
    rift_runtime_streams *rt = rift_calloc(NULL, 1, sizeof(*rt));
    if (rt == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rt->broker = broker;
    pthread_mutex_init(&rt->lock, NULL);
    const rift_config_messaging *m = &cfg->messaging;
    int rc = 0;
    rt->configured = rift_calloc(NULL, m->n_streams + 1, sizeof(char *));
    rt->grants = rift_calloc(NULL, m->n_principals + 1, sizeof(rt_grant));
    if (rt->configured == NULL || rt->grants == NULL ||
        (cfg->data_dir != NULL &&
         (rt->data_dir = dup_str(cfg->data_dir)) == NULL)) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < m->n_streams; i++) {
        if ((rt->configured[i] = dup_str(m->streams[i].name)) == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rt->n_configured = i + 1;
    }
    for (size_t i = 0; rc == 0 && i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        rt_grant *g = &rt->grants[rt->n_grants++];
        g->identity = dup_str(p->name);
        g->patterns = dup_strv((const char *const *)p->streams, p->n_streams);
        g->n = p->n_streams;
        if (g->identity == NULL || g->patterns == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    if (rc == 0 && rt->data_dir != NULL) {
        rc = load(rt, err);
    }
    if (rc != 0) {
        rift_runtime_streams_close(rt);
        return rc;
    }
    *prt = rt;
    return 0;
}

void rift_runtime_streams_close(rift_runtime_streams *rt) {
    if (rt == NULL) {
        return;
    }
    for (size_t i = 0; i < rt->n; i++) {
        entry_free(rt->v[i]);
    }
    rift_free(NULL, rt->v);
    free_strv(rt->configured, rt->n_configured);
    for (size_t i = 0; i < rt->n_grants; i++) {
        rift_free(NULL, rt->grants[i].identity);
        free_strv(rt->grants[i].patterns, rt->grants[i].n);
    }
    rift_free(NULL, rt->grants);
    rift_free(NULL, rt->data_dir);
    pthread_mutex_destroy(&rt->lock);
    rift_free(NULL, rt);
}

/* ---- Lookup ---- */

/* The index of |name| in rt->v, or rt->n; under |lock|. */
static size_t find(const rift_runtime_streams *rt, const char *name,
                   size_t len) {
    for (size_t i = 0; i < rt->n; i++) {
        const char *n = rt->v[i]->def.name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            return i;
        }
    }
    return rt->n;
}

rift_stream *rift_runtime_streams_acquire(rift_runtime_streams *rt,
                                          const char *name, size_t len,
                                          void **token) {
    *token = NULL;
    if (rt == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&rt->lock);
    size_t i = find(rt, name, len);
    rift_stream *st = NULL;
    if (i < rt->n && rt->v[i]->st != NULL) {
        rt->v[i]->pins++;
        *token = rt->v[i];
        st = rt->v[i]->st;
    }
    pthread_mutex_unlock(&rt->lock);
    return st;
}

/* A deleted stream's end: closed, its directory removed, then, for one
 * deleted while pinned (called without rt->lock), its name free again. */
static void finish_delete(rift_runtime_streams *rt, rt_stream *s) {
    char *dir = s->dir;
    s->dir = NULL;
    close_stream(s);
    if (dir != NULL) {
        remove_tree(dir);
        rift_free(NULL, dir);
    }
    if (s->doomed) {
        pthread_mutex_lock(&rt->lock);
        for (rt_stream **p = &rt->doomed; *p != NULL; p = &(*p)->doomed_next) {
            if (*p == s) {
                *p = s->doomed_next;
                break;
            }
        }
        pthread_mutex_unlock(&rt->lock);
    }
    entry_free(s);
}

void rift_runtime_streams_release(rift_runtime_streams *rt, void *token) {
    rt_stream *s = token;
    if (s == NULL) {
        return;
    }
    pthread_mutex_lock(&rt->lock);
    bool last = --s->pins == 0 && s->doomed;
    pthread_mutex_unlock(&rt->lock);
    if (last) {
        finish_delete(rt, s); /* outside the lock: it unlinks files */
    }
}

void rift_runtime_streams_append(rift_runtime_streams *rt, json_t *list) {
    if (rt == NULL) {
        return;
    }
    pthread_mutex_lock(&rt->lock);
    for (size_t i = 0; i < rt->n; i++) {
        rt_stream *s = rt->v[i];
        if (s->st == NULL) {
            continue; /* shadowed by a configured stream */
        }
        json_t *o = rift_daemon_stream_json(s->st, s->def.name);
        if (o != NULL) {
            json_object_set_new(o, "runtime", json_true());
            json_array_append_new(list, o);
        }
    }
    pthread_mutex_unlock(&rt->lock);
}

/* ---- Administration ---- */

static bool granted(const rift_runtime_streams *rt, const char *identity,
                    const char *name) {
    for (size_t i = 0; i < rt->n_grants; i++) {
        const rt_grant *g = &rt->grants[i];
        if (strcmp(g->identity, identity) != 0) {
            continue;
        }
        for (size_t k = 0; k < g->n; k++) {
            if (rift_subject_matches(g->patterns[k], strlen(g->patterns[k]),
                                     name, strlen(name))) {
                return true;
            }
        }
    }
    return false;
}

static int def_set(rt_def *d, const rift_server_stream_request *req) {
    if (req->subjects_count > 0) {
        char **subs = dup_strv(req->subjects, req->subjects_count);
        if (subs == NULL) {
            return RIFT_ERR_NOMEM;
        }
        free_strv(d->subjects, d->n_subjects);
        d->subjects = subs;
        d->n_subjects = req->subjects_count;
    }
    d->max_messages = req->max_messages;
    d->max_bytes = req->max_bytes;
    d->max_age_ms = req->max_age_ms;
    d->max_payload_bytes = req->max_payload_bytes;
    d->max_consumers = req->max_consumers;
    return 0;
}

static int create(rift_runtime_streams *rt,
                  const rift_server_stream_request *req, rift_error *err) {
    if (rt->data_dir == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "run-time streams need riftd's data_dir");
    }
    size_t i = find(rt, req->name, strlen(req->name));
    if (i < rt->n) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "stream already exists");
    }
    for (const rt_stream *d = rt->doomed; d != NULL; d = d->doomed_next) {
        if (strcmp(d->def.name, req->name) == 0) {
            /* Its last reader still has it open in the same directory. */
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "stream is still being deleted; try again");
        }
    }
    rt_stream **v = rift_realloc(NULL, rt->v, (rt->n + 1) * sizeof(*v));
    rt_stream *s = rift_calloc(NULL, 1, sizeof(*s));
    if (v != NULL) {
        rt->v = v;
    }
    int rc = ensure_dirs(rt, err);
    if (rc != 0) {
        rift_free(NULL, s);
        return rc;
    }
    if (v == NULL || s == NULL || (s->def.name = dup_str(req->name)) == NULL ||
        def_set(&s->def, req) != 0 ||
        (req->file && (s->dir = dir_of(rt, req->name)) == NULL)) {
        entry_free(s);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    s->def.file = req->file;
    if (s->dir != NULL) {
        remove_tree(s->dir); /* a leftover of a delete cut short */
    }
    if ((rc = open_stream(rt, s, err)) != 0) {
        finish_delete(rt, s);
        return rc;
    }
    rt->v[rt->n++] = s;
    qsort(rt->v, rt->n, sizeof(*rt->v), cmp_entry);
    if ((rc = save(rt, err)) != 0) {
        for (size_t j = 0; j < rt->n; j++) {
            if (rt->v[j] == s) {
                memmove(&rt->v[j], &rt->v[j + 1],
                        (rt->n - j - 1) * sizeof(*rt->v));
                break;
            }
        }
        rt->n--;
        finish_delete(rt, s);
        return rc;
    }
    rift_log(RIFT_LOG_INFO, "rift: %s created run-time stream %s (%s)",
             req->identity, req->name, req->file ? "file" : "memory");
    return 0;
}

/* Reopens |s| with the limits of |next| (UPDATE); on a failure the old
 * definition is reopened. */
static int reopen(rift_runtime_streams *rt, rt_stream *s,
                  const rift_server_stream_request *next, rift_error *err) {
    if (s->pins > 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "stream is in use; try again");
    }
    rt_def old = s->def;
    rt_def d = old;
    d.subjects = dup_strv((const char *const *)old.subjects, old.n_subjects);
    d.name = dup_str(old.name);
    if (d.subjects == NULL || d.name == NULL || def_set(&d, next) != 0) {
        rift_free(NULL, d.name);
        free_strv(d.subjects, d.n_subjects);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    close_stream(s);
    s->def = d;
    int rc = open_stream(rt, s, err);
    if (rc != 0) {
        def_free(&s->def);
        s->def = old;
        rift_error why = {0};
        if (open_stream(rt, s, &why) != 0) {
            rift_log(RIFT_LOG_ERROR, "rift: run-time stream %s: %s", old.name,
                     why.text);
        }
        return rc;
    }
    def_free(&old);
    return save(rt, err);
}

static int delete (rift_runtime_streams *rt, size_t i, rift_error *err) {
    rt_stream *s = rt->v[i];
    memmove(&rt->v[i], &rt->v[i + 1], (rt->n - i - 1) * sizeof(*rt->v));
    rt->n--;
    int rc = save(rt, err);
    if (rc != 0) {
        memmove(&rt->v[i + 1], &rt->v[i], (rt->n - i) * sizeof(*rt->v));
        rt->v[i] = s;
        rt->n++;
        return rc;
    }
    if (s->pins > 0) {
        s->doomed = true; /* closed and removed at the last release */
        s->doomed_next = rt->doomed;
        rt->doomed = s;
    } else {
        finish_delete(rt, s);
    }
    return 0;
}

int rift_runtime_streams_admin(rift_runtime_streams *rt,
                               const rift_server_stream_request *req,
                               rift_error *err) {
    if (!granted(rt, req->identity, req->name)) {
        return rift_error_set(err, RIFT_ERR_PERMISSION,
                              "stream administration not permitted");
    }
    if (req->backend) {
        /* A replicated stream's purge: granted; its backend purges it. */
        return req->verb == RIFT_SERVER_STREAM_PURGE
                   ? 0
                   : rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                    "unknown stream");
    }
    if (is_configured(rt, req->name)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "stream %s is configured: change it in riftd's "
                              "configuration",
                              req->name);
    }
    pthread_mutex_lock(&rt->lock);
    int rc;
    if (req->verb == RIFT_SERVER_STREAM_CREATE) {
        rc = create(rt, req, err);
        pthread_mutex_unlock(&rt->lock);
        return rc;
    }
    size_t i = find(rt, req->name, strlen(req->name));
    if (i == rt->n) {
        pthread_mutex_unlock(&rt->lock);
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM, "unknown stream");
    }
    rt_stream *s = rt->v[i];
    uint64_t purged = 0;
    switch (req->verb) {
    case RIFT_SERVER_STREAM_UPDATE:
        rc = req->file != s->def.file
                 ? rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "stream storage cannot change")
                 : reopen(rt, s, req, err);
        break;
    case RIFT_SERVER_STREAM_PURGE:
        /* In place, pinned or not: sequences and consumers carry on. */
        rc = s->st != NULL ? rift_stream_purge(s->st, &purged, err)
                           : rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM,
                                            "unknown stream");
        break;
    default:
        rc = delete (rt, i, err);
        break;
    }
    pthread_mutex_unlock(&rt->lock);
    if (rc == 0 && req->verb == RIFT_SERVER_STREAM_PURGE) {
        rift_log(RIFT_LOG_INFO, "rift: %s: stream %s purged (%llu records)",
                 req->identity, req->name, (unsigned long long)purged);
    } else if (rc == 0) {
        rift_log(
            RIFT_LOG_INFO, "rift: %s: stream %s %s", req->identity, req->name,
            req->verb == RIFT_SERVER_STREAM_UPDATE ? "updated" : "deleted");
    }
    return rc;
}
