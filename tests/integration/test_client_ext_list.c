/*
 * test_client_ext_list.c — the C client's consumer list, blocking and
 * asynchronous, and the asynchronous twins of consumer open, info,
 * delete and the waiting fetch (docs/protocol-v1.md "Extensions",
 * include/rift/client.h), for a principal without control rights.
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>
#include <time.h>

static bool connect_as(srvfix *f, const char *identity, rift_client **pc) {
    char addr[64], token[128];
    if (rift_server_address(f->srv, addr, sizeof(addr), NULL) != 0) {
        return false;
    }
    snprintf(token, sizeof(token), "%s-token-0123456789abcdef0123456789",
             identity);
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = token;
    rift_error err;
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return false;
    }
    return true;
}

typedef struct cfix {
    srvfix f;
    rift_stream *events;
    rift_server_stream list[1];
} cfix;

static bool cfix_up(cfix *s) {
    if (!fix_init(&s->f, NULL)) {
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *ev[] = {"game.>"};
    ss.subjects = ev;
    ss.subjects_count = 1;
    if (rift_stream_new(&s->events, &ss, NULL) != 0) {
        return false;
    }
    s->list[0] = (rift_server_stream){"events", 6, s->events};
    s->f.settings.streams = s->list;
    s->f.settings.stream_count = 1;
    return fix_start(&s->f);
}

static void cfix_down(cfix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->events);
    fix_fini(&s->f);
}

/* ---- What the callbacks report ---- */

typedef struct done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int status;
    char text[1100];
    char names[256]; /* list: names joined with ',' */
    bool more;
    uint64_t seq; /* fetch: the first delivery's sequence */
    size_t count; /* fetch and list */
    uint32_t pending;
    bool created;
} done;

static void done_init(done *d) {
    memset(d, 0, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
}

static void done_fini(done *d) {
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
}

static void finish(done *d, int status, const rift_error *err) {
    d->status = status;
    snprintf(d->text, sizeof(d->text), "%s", err != NULL ? err->text : "");
    d->n++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Waits for the |n|th callback (10 s at most). */
static bool await(done *d, int n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&d->mu);
    while (d->n < n && pthread_cond_timedwait(&d->cv, &d->mu, &until) == 0) {
    }
    bool ok = d->n >= n;
    pthread_mutex_unlock(&d->mu);
    return ok;
}

static void on_info(void *arg, int status,
                    const rift_client_consumer_info *info,
                    const rift_error *err) {
    done *d = arg;
    pthread_mutex_lock(&d->mu);
    if (info != NULL) {
        d->pending = info->pending;
        d->created = info->created;
    }
    finish(d, status, err);
}

static void on_done(void *arg, int status, const rift_error *err) {
    done *d = arg;
    pthread_mutex_lock(&d->mu);
    finish(d, status, err);
}

static void on_fetched(void *arg, int status, rift_client_delivery *dl,
                       size_t count, const rift_error *err) {
    done *d = arg;
    pthread_mutex_lock(&d->mu);
    d->count = count;
    d->seq = count > 0 ? dl[0].sequence : 0;
    for (size_t i = 0; i < count; i++) {
        rift_msg_unref(dl[i].msg);
    }
    finish(d, status, err);
}

static void on_listed(void *arg, int status,
                      const rift_client_consumer_entry *e, size_t count,
                      bool more, const rift_error *err) {
    done *d = arg;
    pthread_mutex_lock(&d->mu);
    size_t pos = 0;
    d->names[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        pos += (size_t)snprintf(d->names + pos, sizeof(d->names) - pos, "%s%s",
                                i ? "," : "", e[i].name);
    }
    d->count = count;
    d->more = more;
    finish(d, status, err);
}

/* ---- Tests ---- */

RIFT_TEST(blocking_list_pages_and_frees) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c, *o;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(connect_as(&s.f, "other_plugin", &o));
    rift_error err;
    rift_client_consumer_entry *e = NULL;
    size_t n = 99;
    bool more = true;
    CHECK_OK(rift_client_consumer_list(c, "events", 6, NULL, 0, 10, &e, &n,
                                       &more, &err));
    CHECK(e == NULL);
    CHECK_EQ_INT(n, 0);
    CHECK(!more);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.a";
    cfg.filter_len = 6;
    cfg.max_deliver = 3;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "b", 1, &cfg, NULL,
                                           &err));
    rift_consumer_config all;
    rift_consumer_config_default(&all);
    all.filter = "game.>";
    all.filter_len = 6;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "a", 1, &all, NULL,
                                           &err));
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "c", 1, &all, NULL,
                                           &err));
    CHECK_OK(rift_client_consumer_list(c, "events", 6, "a", 1, 1, &e, &n, &more,
                                       &err));
    CHECK_EQ_INT(n, 1);
    CHECK(more);
    CHECK_EQ_STR(e[0].name, "b");
    CHECK_EQ_INT(e[0].name_len, 1);
    CHECK_EQ_MEM(e[0].info.config.filter, e[0].info.config.filter_len, "game.a",
                 6);
    CHECK_EQ_INT(e[0].info.config.max_deliver, 3);
    CHECK(!e[0].info.created);
    rift_client_consumer_list_free(e);
    CHECK_OK(rift_client_consumer_list(c, "events", 6, NULL, 0, 256, &e, &n,
                                       &more, &err));
    CHECK_EQ_INT(n, 3);
    CHECK(!more);
    CHECK_EQ_STR(e[2].name, "c");
    rift_client_consumer_list_free(e);
    rift_client_consumer_list_free(NULL);
    /* The other identity sees none of them. */
    CHECK_OK(rift_client_consumer_list(o, "events", 6, NULL, 0, 256, &e, &n,
                                       &more, &err));
    CHECK_EQ_INT(n, 0);
    /* Local and remote errors. */
    CHECK_EQ_INT(rift_client_consumer_list(c, "events", 6, NULL, 0, 0, &e, &n,
                                           &more, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "consumer list limit must be 1..256");
    CHECK_EQ_INT(rift_client_consumer_list(c, "events", 6, NULL, 0, 257, &e, &n,
                                           &more, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(rift_client_consumer_list(c, "nope", 4, NULL, 0, 1, &e, &n,
                                           &more, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    char features[512];
    bool supported = false;
    CHECK_OK(rift_client_extensions(c, &supported, features, sizeof(features),
                                    &err));
    CHECK(supported && strstr(features, "consumer-list") != NULL);
    rift_client_del(o);
    rift_client_del(c);
    cfix_down(&s);
}

RIFT_TEST(async_open_info_list_fetch_wait_delete) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c;
    CHECK(connect_as(&s.f, "plugin", &c));
    rift_error err;
    done d;
    done_init(&d);
    rift_consumer_config all;
    rift_consumer_config_default(&all);
    all.filter = "game.>";
    all.filter_len = 6;
    CHECK_OK(rift_client_consumer_open_ext_async(c, "events", 6, "w", 1, &all,
                                                 on_info, &d, &err));
    CHECK(await(&d, 1));
    CHECK_EQ_INT(d.status, 0);
    CHECK(d.created);
    CHECK_OK(rift_client_consumer_list_async(c, "events", 6, NULL, 0, 8,
                                             on_listed, &d, &err));
    CHECK(await(&d, 2));
    CHECK_EQ_INT(d.status, 0);
    CHECK_EQ_STR(d.names, "w");
    CHECK(!d.more);
    /* A waiting fetch, answered by a publish made after it started. */
    CHECK_OK(rift_client_fetch_wait_async(c, "events", 6, "w", 1, 4, 10000,
                                          on_fetched, &d, &err));
    CHECK_OK(rift_stream_publish(s.events, "game.a", 6, NULL, 0,
                                 (const uint8_t *)"x", 1, NULL, NULL));
    CHECK(await(&d, 3));
    CHECK_EQ_INT(d.status, 0);
    CHECK_EQ_INT(d.count, 1);
    CHECK_EQ_U64(d.seq, 1);
    CHECK_OK(rift_client_consumer_get_info_async(c, "events", 6, "w", 1,
                                                 on_info, &d, &err));
    CHECK(await(&d, 4));
    CHECK_EQ_INT(d.status, 0);
    CHECK_EQ_INT(d.pending, 1);
    CHECK(!d.created);
    CHECK_OK(rift_client_consumer_delete_async(c, "events", 6, "w", 1, on_done,
                                               &d, &err));
    CHECK(await(&d, 5));
    CHECK_EQ_INT(d.status, 0);
    /* Gone: the async calls report the server's texts. */
    CHECK_OK(rift_client_consumer_get_info_async(c, "events", 6, "w", 1,
                                                 on_info, &d, &err));
    CHECK(await(&d, 6));
    CHECK_EQ_INT(d.status, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(d.text, "consumer does not exist");
    CHECK_OK(rift_client_consumer_list_async(c, "nope", 4, NULL, 0, 8,
                                             on_listed, &d, &err));
    CHECK(await(&d, 7));
    CHECK_EQ_INT(d.status, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(d.text, "unknown stream");
    CHECK_EQ_INT(d.count, 0);
    /* Local checks fail at the call; no callback runs. */
    CHECK_EQ_INT(rift_client_fetch_wait_async(c, "events", 6, "w", 1, 4, 0,
                                              on_fetched, &d, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(rift_client_consumer_list_async(c, "events", 6, NULL, 0, 0,
                                                 on_listed, &d, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_client_del(c);
    CHECK_EQ_INT(d.n, 7);
    done_fini(&d);
    cfix_down(&s);
}
