/*
 * test_riftd_streams_rt.c — stream info for every identity and streams
 * made at run time, against a riftd process (integration tests):
 * STREAM_INFO_GET and STREAM_CREATE..STREAM_DELETE on the wire through the
 * C client, the `streams` grant, isolation, persistence in
 * data_dir/streams.json across a restart, the configured stream's
 * precedence, a reload, a corrupt definitions file and the CLI
 * (docs/protocol-v1.md E.3, docs/riftd.md "Streams at run time").
 */
// labels: threads
#include "procs.h"
#include "riftd_fix.h"
#include "test.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* admin: control, no `streams` grant, reads nothing but its inboxes.
 * worker: may make streams named orders, cfgs and audit.<x>. */
#define CONFIG_HEAD                                                            \
 "return {\n"                                                                  \
 "  data_dir = 'data',\n"                                                      \
 "  messaging = {\n"                                                           \
 "    listen = '127.0.0.1:0',\n"                                               \
 "    certificate = 'tls/server.pem',\n"                                       \
 "    private_key = 'tls/server.key',\n"                                       \
 "    principals = {\n"                                                        \
 "      { name = 'admin', token_env = 'RIFT_TEST_TOKEN',\n"                    \
 "        publish = { 'rift.control.*', '_INBOX.>' },\n"                       \
 "        subscribe = { '_INBOX.>' }, control = true },\n"                     \
 "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN2',\n"                  \
 "        publish = { 'orders.>', 'audit.>', 'cfg.>' },\n"                     \
 "        subscribe = { 'orders.>', 'audit.>', 'cfg.>' },\n"                   \
 "        streams = { 'orders', 'cfgs', 'audit.*', 'later' } },\n"             \
 "    },\n"

static const char config[] =
    CONFIG_HEAD "    streams = { cfgs = { subjects = { 'cfg.>' } } },\n"
                "  },\n"
                "}\n";

/* The same with a configured stream named like a run-time one. */
static const char config_later[] =
    CONFIG_HEAD "    streams = { cfgs = { subjects = { 'cfg.>' } },\n"
                "                later = { subjects = { 'cfg.later' } } },\n"
                "  },\n"
                "}\n";

static const char *const orders_subjects[] = {"orders.>"};

static rift_client_stream_spec spec_of(const char *const *subjects, size_t n,
                                       bool file) {
    rift_client_stream_spec s = {0};
    s.subjects = subjects;
    s.subjects_count = n;
    s.file = file;
    return s;
}

/* A consumer over |filter|: the identity may not read ">". */
static int open_consumer(rift_client *c, const char *stream, const char *name,
                         const char *filter) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = filter;
    cfg.filter_len = strlen(filter);
    rift_error err = {0};
    return rift_client_consumer_open(c, stream, strlen(stream), name,
                                     strlen(name), &cfg, &err);
}

static int publish(rift_client *c, const char *stream, const char *subject,
                   const char *payload) {
    rift_error err = {0};
    return rift_client_stream_publish(
        c, stream, strlen(stream), subject, strlen(subject), NULL, 0,
        (const uint8_t *)payload, strlen(payload), NULL, &err);
}

/* ---- Asynchronous completions ---- */

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int status;
    rift_client_stream_info info;
    char text[1100];
} waiter;

static void waiter_init(waiter *w) {
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void finish(waiter *w, int status, const rift_client_stream_info *info,
                   const rift_error *err) {
    pthread_mutex_lock(&w->mu);
    w->status = status;
    if (info != NULL) {
        w->info = *info;
    }
    if (err != NULL) {
        snprintf(w->text, sizeof(w->text), "%s", err->text);
    }
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_info(void *ud, int status, const rift_client_stream_info *info,
                    const rift_error *err) {
    finish(ud, status, info, err);
}

static void on_done(void *ud, int status, const rift_error *err) {
    finish(ud, status, NULL, err);
}

static void waiter_wait(waiter *w) {
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    w->done = false;
    pthread_mutex_unlock(&w->mu);
}

/* ---- Tests ---- */

RIFT_TEST(probe_lists_the_stream_features) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    bool ext = false;
    char features[256];
    rift_error err = {0};
    CHECK_OK(rift_client_extensions(c, &ext, features, sizeof(features), &err));
    CHECK(ext);
    CHECK(strstr(features, "stream-info") != NULL);
    CHECK(strstr(features,
                 "stream-create stream-update stream-purge stream-delete") !=
          NULL);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(granted_identity_creates_updates_purges_and_deletes) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    rift_client_stream_info info;
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, true);
    spec.max_messages = 10;
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, &info, &err));
    CHECK_EQ_STR(info.name, "orders");
    CHECK_EQ_STR(info.subjects, "orders.>");
    CHECK(info.file && info.runtime);
    CHECK_EQ_U64(info.max_messages, 10);
    CHECK_EQ_U64(info.max_bytes, 67108864); /* the default */
    CHECK_EQ_U64(info.messages, 0);

    CHECK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "stream already exists");

    for (int i = 0; i < 3; i++) {
        CHECK_OK(publish(c, "orders", "orders.new", "x"));
    }
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 3);
    CHECK_EQ_U64(info.last_sequence, 3);

    /* Update: retention follows the new limit, the records stay. */
    spec.max_messages = 2;
    CHECK_OK(rift_client_stream_update(c, "orders", 6, &spec, &info, &err));
    CHECK_EQ_U64(info.max_messages, 2);
    CHECK_EQ_U64(info.last_sequence, 3);
    spec.file = false;
    CHECK(rift_client_stream_update(c, "orders", 6, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "stream storage cannot change");

    /* Consumers are kept by update and by purge (its own test below). */
    CHECK_OK(open_consumer(c, "orders", "w", "orders.>"));
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.consumers, 1);
    CHECK_OK(rift_client_stream_purge(c, "orders", 6, &err));
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.consumers, 1);

    /* Delete takes the consumers with it. */
    CHECK_OK(rift_client_stream_delete(c, "orders", 6, &err));
    CHECK(rift_client_stream_get_info(c, "orders", 6, &info, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    CHECK(publish(c, "orders", "orders.new", "x") == RIFT_ERR_REMOTE);
    CHECK(rift_client_stream_delete(c, "orders", 6, &err) == RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    /* The name is free again: a fresh stream. */
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, &info, &err));
    CHECK_EQ_U64(info.last_sequence, 0);
    CHECK(!info.file);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(admin_errors_and_texts) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c, *admin;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &admin));
    rift_error err = {0};
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, false);
    /* Outside the grant, and an identity without one (control or not). */
    CHECK(rift_client_stream_create(c, "payments", 8, &spec, NULL, &err) ==
          RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "stream administration not permitted");
    static const char *const inbox[] = {"_INBOX.>"};
    rift_client_stream_spec as = spec_of(inbox, 1, false);
    CHECK(rift_client_stream_create(admin, "orders", 6, &as, NULL, &err) ==
          RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "stream administration not permitted");
    CHECK(rift_client_stream_delete(admin, "cfgs", 4, &err) ==
          RIFT_ERR_PERMISSION);
    /* Subjects the creator may not read. */
    static const char *const secret[] = {"secret.>"};
    rift_client_stream_spec ss = spec_of(secret, 1, false);
    CHECK(rift_client_stream_create(c, "orders", 6, &ss, NULL, &err) ==
          RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "subscription not permitted");
    /* Names, subjects, the configured stream. */
    CHECK(rift_client_stream_create(c, "audit..x", 8, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "invalid stream name");
    CHECK(rift_client_stream_purge(c, ".", 1, &err) == RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "invalid stream name");
    rift_client_stream_spec none = spec_of(NULL, 0, false);
    CHECK(rift_client_stream_create(c, "orders", 6, &none, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "a stream needs at least one subject");
    static const char *const cfg_subjects[] = {"cfg.>"};
    rift_client_stream_spec cs = spec_of(cfg_subjects, 1, false);
    CHECK(rift_client_stream_create(c, "cfgs", 4, &cs, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "stream cfgs is configured: change it in riftd's "
                           "configuration");
    CHECK(rift_client_stream_purge(c, "cfgs", 4, &err) == RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "stream cfgs is configured: change it in riftd's "
                           "configuration");
    CHECK(rift_client_stream_update(c, "audit.eu", 8, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    /* Limits the store refuses. */
    spec.max_payload_bytes = (uint64_t)1 << 40;
    CHECK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK(strstr(err.text, "invalid messaging configuration") != NULL);
    rift_client_stream_info info;
    CHECK(rift_client_stream_get_info(c, "orders", 6, &info, &err) ==
          RIFT_ERR_REMOTE);
    rift_client_del(admin);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(stream_info_needs_subscribe_rights_and_leaks_nothing) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c, *admin;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &admin));
    rift_error err = {0};
    rift_client_stream_info info;
    /* The configured stream, for an identity that may read it. */
    CHECK_OK(rift_client_stream_get_info(c, "cfgs", 4, &info, &err));
    CHECK_EQ_STR(info.subjects, "cfg.>");
    CHECK(!info.runtime);
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, false);
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    /* Another identity: the same answer as for a stream that is not. */
    CHECK(rift_client_stream_get_info(admin, "orders", 6, &info, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    CHECK(rift_client_stream_get_info(admin, "cfgs", 4, &info, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    CHECK(rift_client_stream_get_info(admin, "nothing", 7, &info, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    /* The control path still lists it for the administrator. */
    json_t *ls = riftd_fix_control(admin, "streams", "{}", NULL);
    CHECK(ls != NULL && json_is_true(json_object_get(ls, "ok")));
    json_t *list = json_object_get(json_object_get(ls, "data"), "streams");
    bool found = false;
    size_t i;
    json_t *el;
    json_array_foreach(list, i, el) {
        const char *n = json_string_value(json_object_get(el, "name"));
        if (n != NULL && strcmp(n, "orders") == 0) {
            found = json_is_true(json_object_get(el, "runtime"));
        }
    }
    json_decref(ls);
    CHECK(found);
    rift_client_del(admin);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(asynchronous_calls) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    waiter w;
    waiter_init(&w);
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, false);
    CHECK_OK(rift_client_stream_create_async(c, "orders", 6, &spec, on_info, &w,
                                             &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_EQ_STR(w.info.name, "orders");
    spec.max_consumers = 3;
    CHECK_OK(rift_client_stream_update_async(c, "orders", 6, &spec, on_info, &w,
                                             &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_EQ_U64(w.info.max_consumers, 3);
    CHECK_OK(publish(c, "orders", "orders.a", "1"));
    CHECK_OK(
        rift_client_stream_get_info_async(c, "orders", 6, on_info, &w, &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_EQ_U64(w.info.messages, 1);
    CHECK_OK(rift_client_stream_purge_async(c, "orders", 6, on_done, &w, &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_OK(
        rift_client_stream_delete_async(c, "orders", 6, on_done, &w, &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, 0);
    CHECK_OK(
        rift_client_stream_delete_async(c, "orders", 6, on_done, &w, &err));
    waiter_wait(&w);
    CHECK_EQ_INT(w.status, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(w.text, "unknown stream");
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

/* Fetches up to 16 records of a new consumer over |filter|: the count. */
static size_t fetch_all(rift_client *c, const char *stream,
                        const char *filter) {
    rift_error err = {0};
    if (open_consumer(c, stream, "r", filter) != 0) {
        return 0;
    }
    rift_client_delivery d[16];
    size_t n = 0;
    if (rift_client_fetch(c, stream, strlen(stream), "r", 1, 16, d, &n, &err) !=
        0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        rift_msg_unref(d[i].msg);
    }
    return n;
}

static char *data_file(const riftd_fix *f, const char *name) {
    char *p = NULL;
    if (asprintf(&p, "%s/data/%s", f->dir, name) < 0) {
        return NULL;
    }
    return p;
}

RIFT_TEST(streams_and_records_survive_a_restart) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    static const char *const audit[] = {"audit.eu.>"};
    rift_client_stream_spec spec = spec_of(audit, 1, true);
    spec.max_age_ms = 3600000;
    CHECK_OK(rift_client_stream_create(c, "audit.eu", 8, &spec, NULL, &err));
    CHECK_OK(publish(c, "audit.eu", "audit.eu.login", "a"));
    CHECK_OK(publish(c, "audit.eu", "audit.eu.logout", "b"));
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    char *path = data_file(&f, "streams.json");
    struct stat sb;
    CHECK(path != NULL && stat(path, &sb) == 0);
    CHECK_EQ_INT(sb.st_mode & 0777, 0600);
    free(path);

    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_client_stream_info info;
    CHECK_OK(rift_client_stream_get_info(c, "audit.eu", 8, &info, &err));
    CHECK_EQ_U64(info.messages, 2);
    CHECK_EQ_U64(info.max_age_ms, 3600000);
    CHECK(info.file && info.runtime);
    CHECK_EQ_U64(fetch_all(c, "audit.eu", "audit.eu.>"), 2);
    /* A reload keeps it. */
    kill(f.p.pid, SIGHUP);
    CHECK(rift_proc_wait_text(&f.p, true, "configuration reloaded",
                              RIFT_PROC_WAIT_MS));
    CHECK_OK(rift_client_stream_get_info(c, "audit.eu", 8, &info, &err));
    CHECK_EQ_U64(info.messages, 2);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

/* Stores a record in |stream|: its sequence, 0 on a failure. */
static uint64_t stored_seq(rift_client *c, const char *stream,
                           const char *subject) {
    rift_error err = {0};
    rift_stored st = {0};
    if (rift_client_stream_publish(c, stream, strlen(stream), subject,
                                   strlen(subject), NULL, 0,
                                   (const uint8_t *)"p", 1, &st, &err) != 0) {
        return 0;
    }
    return st.sequence;
}

/* Fetches one record of consumer "w": its sequence, 0 when none came. */
static uint64_t fetch_one(rift_client *c, const char *stream) {
    rift_error err = {0};
    rift_client_delivery d;
    size_t n = 0;
    if (rift_client_fetch(c, stream, strlen(stream), "w", 1, 1, &d, &n, &err) !=
            0 ||
        n == 0) {
        return 0;
    }
    rift_msg_unref(d.msg);
    return d.sequence;
}

/*
 * Purge as JetStream's: the records go, the sequence carries on and the
 * consumer stays (past them, its unacknowledged delivery of a purged
 * record forgotten) — also after kill -9, which must not bring a purged
 * record back. A purge does not wait for readers to let go.
 */
RIFT_TEST(purge_keeps_sequences_and_consumers) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, true);
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    for (uint64_t i = 1; i <= 3; i++) {
        CHECK_EQ_U64(stored_seq(c, "orders", "orders.new"), i);
    }
    CHECK_OK(open_consumer(c, "orders", "w", "orders.>"));
    CHECK_EQ_U64(fetch_one(c, "orders"), 1); /* pending, never acked */

    CHECK_OK(rift_client_stream_purge(c, "orders", 6, &err));
    rift_client_stream_info info;
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.first_sequence, 4);
    CHECK_EQ_U64(info.last_sequence, 3);
    CHECK_EQ_U64(info.consumers, 1);
    CHECK_EQ_U64(fetch_one(c, "orders"), 0);
    CHECK_EQ_U64(stored_seq(c, "orders", "orders.new"), 4);
    CHECK_EQ_U64(fetch_one(c, "orders"), 4);
    CHECK_OK(rift_client_ack(c, "orders", 6, "w", 1, 4, &err));
    CHECK_OK(rift_client_stream_purge(c, "orders", 6, &err));
    rift_client_del(c);

    rift_proc_kill(&f.p); /* SIGKILL: only what was synced counts */
    f.running = false;
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 0);
    CHECK_EQ_U64(info.consumers, 1);
    CHECK_EQ_U64(stored_seq(c, "orders", "orders.new"), 5);
    CHECK_EQ_U64(fetch_one(c, "orders"), 5);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

static void on_fetched(void *ud, int status, rift_client_delivery *d,
                       size_t count, const rift_error *err) {
    for (size_t i = 0; i < count; i++) {
        rift_msg_unref(d[i].msg);
    }
    finish(ud, status, NULL, err);
}

typedef struct admin_try {
    rift_client *c;
    const char *expect; /* the error text awaited */
    bool create;        /* create "orders", else update it */
} admin_try;

static bool admin_answers(void *arg) {
    admin_try *a = arg;
    rift_error err = {0};
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, true);
    int rc =
        a->create
            ? rift_client_stream_create(a->c, "orders", 6, &spec, NULL, &err)
            : rift_client_stream_update(a->c, "orders", 6, &spec, NULL, &err);
    return a->expect == NULL ? rc == 0 : strcmp(err.text, a->expect) == 0;
}

/*
 * A stream deleted while a waiting fetch pins it keeps its directory until
 * that fetch lets go, and then removes it: a stream made again under the
 * name before that would share the directory and lose its files at that
 * release, so the create is refused until then.
 */
RIFT_TEST(name_free_only_after_the_last_reader_of_a_deleted_stream) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c, *reader;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &reader));
    rift_error err = {0};
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, true);
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    CHECK_OK(open_consumer(c, "orders", "w", "orders.>"));
    waiter w;
    waiter_init(&w);
    CHECK_OK(rift_client_fetch_wait_async(reader, "orders", 6, "w", 1, 1, 3000,
                                          on_fetched, &w, &err));
    /* The fetch waits (pinning the stream) once an update is refused. */
    admin_try busy = {c, "stream is in use; try again", false};
    CHECK(rift_test_wait_until(admin_answers, &busy, 5000));
    CHECK_OK(rift_client_stream_delete(c, "orders", 6, &err));
    CHECK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "stream is still being deleted; try again");
    waiter_wait(&w); /* the fetch's deadline: nothing was published */
    admin_try again = {c, NULL, true};
    CHECK(rift_test_wait_until(admin_answers, &again, 5000));
    CHECK_OK(publish(c, "orders", "orders.new", "kept"));
    rift_client_del(reader);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    /* The new stream's files survived the old one's removal. */
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_client_stream_info info;
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 1);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(configured_stream_wins_a_run_time_name) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    static const char *const later[] = {"orders.later"};
    rift_client_stream_spec spec = spec_of(later, 1, true);
    CHECK_OK(rift_client_stream_create(c, "later", 5, &spec, NULL, &err));
    CHECK_OK(publish(c, "later", "orders.later", "kept"));
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    /* The configuration now names it: the configured stream serves. */
    CHECK(rift_proc_write_file(f.dir, "rift.lua", config_later));
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(rift_proc_wait_text(&f.p, true, "yields to the configured stream",
                              5000));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_client_stream_info info;
    CHECK_OK(rift_client_stream_get_info(c, "later", 5, &info, &err));
    CHECK(!info.runtime);
    CHECK_EQ_STR(info.subjects, "cfg.later");
    CHECK(rift_client_stream_delete(c, "later", 5, &err) == RIFT_ERR_REMOTE);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    /* Out of the configuration again: the run-time stream is back. */
    CHECK(rift_proc_write_file(f.dir, "rift.lua", config));
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    CHECK_OK(rift_client_stream_get_info(c, "later", 5, &info, &err));
    CHECK(info.runtime);
    CHECK_EQ_U64(info.messages, 1);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(corrupt_definitions_stop_the_start_and_keep_the_data) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_error err = {0};
    rift_client_stream_spec spec = spec_of(orders_subjects, 1, true);
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    CHECK_OK(publish(c, "orders", "orders.1", "x"));
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    char *path = data_file(&f, "streams.json");
    CHECK(path != NULL);
    char *good = rift_proc_read(path);
    CHECK(good != NULL);
    CHECK(rift_proc_write_file(f.dir, "data/streams.json", "{\"version\":1,"));
    CHECK(!riftd_fix_start(&f, NULL));
    CHECK(rift_proc_wait(&f.p, 10000) != 0);
    f.running = false;
    char *log = rift_proc_read(f.p.err);
    CHECK(log != NULL && strstr(log, "streams.json is corrupt") != NULL);
    free(log);

    /* Put back, everything is there. */
    CHECK(rift_proc_write_file(f.dir, "data/streams.json", good));
    free(good);
    free(path);
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &c));
    rift_client_stream_info info;
    CHECK_OK(rift_client_stream_get_info(c, "orders", 6, &info, &err));
    CHECK_EQ_U64(info.messages, 1);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

/* Runs the CLI with |token| against |f|: the exit status; *out and *err
 * as rift_proc_run. */
static int cli(riftd_fix *f, const char *token, const char *const *words,
               char **out, char **err) {
    char server[96], tok[128];
    snprintf(server, sizeof(server), "--server=%s", f->p.address);
    snprintf(tok, sizeof(tok), "--token=%s", token);
    const char *args[16];
    size_t n = 0;
    for (; words[n] != NULL && n < 12; n++) {
        args[n] = words[n];
    }
    args[n++] = server;
    args[n++] = "--ca=tls/ca.pem";
    args[n++] = tok;
    args[n] = NULL;
    return rift_proc_run(rift_proc_cli(), f->dir, args, NULL, out, err);
}

static bool has(const char *s, const char *needle) {
    bool ok = s != NULL && strstr(s, needle) != NULL;
    if (!ok) {
        fprintf(stderr, "  expected \"%s\" in:\n%s\n", needle,
                s ? s : "(nothing)");
    }
    return ok;
}

RIFT_TEST(cli_add_info_edit_purge_rm) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    char *out = NULL, *err = NULL;
    const char *w = RIFTD_FIX_TOKEN2;
    CHECK_EQ_INT(
        cli(&f, w,
            (const char *const[]){"stream", "add", "orders", "--subjects",
                                  "orders.>", "--max-msgs", "5", NULL},
            &out, &err),
        0);
    CHECK(has(out, "made at run time"));
    CHECK(has(out, "max_messages       5"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "pub", "orders",
                                           "orders.x", "hi", NULL},
                     NULL, NULL),
                 0);
    /* No control rights: info goes through STREAM_INFO_GET. */
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "info", "orders", NULL},
                     &out, &err),
                 0);
    CHECK(has(out, "messages           1"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "edit", "orders",
                                           "--max-msgs", "7", NULL},
                     &out, &err),
                 0);
    CHECK(has(out, "max_messages       7"));
    CHECK(has(out, "messages           1"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "purge", "orders", NULL},
                     &out, &err),
                 0);
    CHECK(has(out, "orders: purged"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "rm", "orders", NULL},
                     &out, &err),
                 0);
    CHECK(has(out, "orders: deleted"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "info", "orders", NULL},
                     &out, &err),
                 1);
    CHECK(has(err, "unknown stream \"orders\""));
    free(out);
    free(err);
    /* The administrator has no `streams` grant. */
    CHECK_EQ_INT(cli(&f, RIFTD_FIX_TOKEN,
                     (const char *const[]){"stream", "add", "orders",
                                           "--subjects", "_INBOX.x", NULL},
                     &out, &err),
                 1);
    CHECK(has(err, "stream administration not permitted"));
    free(out);
    free(err);
    CHECK_EQ_INT(cli(&f, w,
                     (const char *const[]){"stream", "add", "orders", NULL},
                     &out, &err),
                 2);
    CHECK(has(err, "add needs --subjects"));
    free(out);
    free(err);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}
