/*
 * test_client_ext_ack.c — the C client's NAK, TERM and in progress calls
 * (docs/protocol-v1.md "Extensions", opcodes 23–25), blocking and
 * asynchronous, with max_deliver through rift_client_consumer_open_ext
 * and the counters of rift_client_consumer_get_info; their local checks;
 * another identity's "consumer does not exist".
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>
#include <stdatomic.h>

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
    return rift_client_new(pc, &s, NULL) == 0;
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

/* Async completions: the count and the last status and text. */
typedef struct done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, status;
    char text[sizeof(((rift_error *)0)->text)];
} done;

static void on_done(void *arg, int status, const rift_error *err) {
    done *d = arg;
    pthread_mutex_lock(&d->mu);
    d->n++;
    d->status = status;
    snprintf(d->text, sizeof(d->text), "%s", status != 0 ? err->text : "");
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static bool await_done(done *d, int n) {
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

static size_t fetch(rift_client *c, uint64_t *seq, uint32_t *count) {
    rift_client_delivery d[8];
    size_t n = 0;
    if (rift_client_fetch(c, "events", 6, "w", 1, 8, d, &n, NULL) != 0) {
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        if (i == 0) {
            *seq = d[i].sequence;
            *count = d[i].delivery_count;
        }
        rift_msg_unref(d[i].msg);
    }
    return n;
}

RIFT_TEST(blocking_and_async_settling) {
    cfix s;
    CHECK(cfix_up(&s));
    rift_client *c, *o;
    CHECK(connect_as(&s.f, "plugin", &c));
    CHECK(connect_as(&s.f, "other_plugin", &o));
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "game.>";
    cfg.filter_len = 6;
    cfg.max_deliver = 3;
    rift_client_consumer_info info;
    rift_error err;
    CHECK_OK(rift_client_consumer_open_ext(c, "events", 6, "w", 1, &cfg, &info,
                                           &err));
    CHECK_EQ_INT(info.config.max_deliver, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rift_stream_publish(s.events, "game.a", 6, NULL, 0,
                                     (const uint8_t *)"x", 1, NULL, NULL));
    }
    uint64_t seq = 0;
    uint32_t count = 0;
    CHECK_EQ_INT(fetch(c, &seq, &count), 3);
    /* Blocking. */
    CHECK_OK(rift_client_nak(c, "events", 6, "w", 1, 1, 0, &err));
    CHECK_EQ_INT(fetch(c, &seq, &count), 1);
    CHECK_EQ_U64(seq, 1);
    CHECK_EQ_INT(count, 2);
    CHECK_OK(rift_client_in_progress(c, "events", 6, "w", 1, 1, &err));
    CHECK_OK(rift_client_term(c, "events", 6, "w", 1, 2, &err));
    CHECK_EQ_INT(rift_client_term(c, "events", 6, "w", 1, 2, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "sequence is not pending acknowledgement");
    CHECK_EQ_INT(rift_client_nak(c, "events", 6, "w", 1, 1, 3600001, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "nak delay must be 0..3600000 ms");
    /* Another identity: no such consumer. */
    CHECK_EQ_INT(rift_client_nak(o, "events", 6, "w", 1, 1, 0, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    CHECK_EQ_INT(rift_client_in_progress(o, "events", 6, "w", 1, 1, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    /* Asynchronous. */
    done d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ""};
    CHECK_OK(
        rift_client_term_async(c, "events", 6, "w", 1, 3, on_done, &d, &err));
    CHECK(await_done(&d, 1));
    CHECK_EQ_INT(d.status, 0);
    CHECK_OK(rift_client_in_progress_async(c, "events", 6, "w", 1, 1, on_done,
                                           &d, &err));
    CHECK(await_done(&d, 2));
    CHECK_EQ_INT(d.status, 0);
    CHECK_OK(
        rift_client_nak_async(c, "events", 6, "w", 1, 1, 0, on_done, &d, &err));
    CHECK(await_done(&d, 3));
    CHECK_EQ_INT(d.status, 0);
    CHECK_OK(
        rift_client_term_async(o, "events", 6, "w", 1, 1, on_done, &d, &err));
    CHECK(await_done(&d, 4));
    CHECK_EQ_INT(d.status, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(d.text, "consumer does not exist");
    CHECK_EQ_INT(rift_client_nak_async(c, "events", 6, "w", 1, 1, 3600001,
                                       on_done, &d, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    /* Seq 1: the third delivery, then the NAK makes it due; max_deliver 3
     * drops it at the next fetch. */
    CHECK_EQ_INT(fetch(c, &seq, &count), 1);
    CHECK_EQ_INT(count, 3);
    CHECK_OK(rift_client_nak(c, "events", 6, "w", 1, 1, 0, &err));
    CHECK_EQ_INT(fetch(c, &seq, &count), 0);
    CHECK_OK(
        rift_client_consumer_get_info(c, "events", 6, "w", 1, &info, &err));
    CHECK_EQ_U64(info.terminated, 2);
    CHECK_EQ_U64(info.max_delivered, 1);
    CHECK_EQ_INT(info.pending, 0);
    /* The v1 open cannot carry max_deliver. */
    CHECK_EQ_INT(rift_client_consumer_open(c, "events", 6, "v", 1, &cfg, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_client_del(o);
    rift_client_del(c);
    cfix_down(&s);
}
