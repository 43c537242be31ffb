/*
 * test_client_async.c — the asynchronous stream operations of the C client
 * (rift_client_stream_publish_async, rift_client_ack_async,
 * rift_client_fetch_async) against the protocol server (integration
 * tests): a window kept full from the callbacks, results and server errors
 * in the callbacks on the client thread, local checks failing at the call
 * without a callback, fetch deliveries owned by the callback, the deadline
 * of an operation waiting for stream credit, and every callback run before
 * rift_client_del returns or when the server shuts down.
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000000LL

static bool connect_opts(srvfix *f, uint32_t op_timeout_ms, rift_client **pc) {
    char addr[64];
    if (rift_server_address(f->srv, addr, sizeof(addr), NULL) != 0) {
        return false;
    }
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = RC_TOKEN("plugin");
    if (op_timeout_ms > 0) {
        s.op_timeout_ms = op_timeout_ms;
    }
    rift_error err;
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return false;
    }
    return true;
}

/* A server with one memory stream "events" (any subject). */
typedef struct sfix {
    srvfix f;
    rift_stream *st;
    rift_server_stream list[1];
} sfix;

static bool sfix_up(sfix *s, size_t max_streams) {
    memset(s, 0, sizeof(*s));
    if (!fix_init(&s->f, NULL) || rift_stream_new(&s->st, NULL, NULL) != 0) {
        return false;
    }
    s->list[0] = (rift_server_stream){"events", 6, s->st};
    s->f.settings.streams = s->list;
    s->f.settings.stream_count = 1;
    if (max_streams > 0) {
        s->f.settings.max_streams_per_connection = max_streams;
    }
    return fix_start(&s->f);
}

static void sfix_down(sfix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->st);
    fix_fini(&s->f);
}

/* ---- Completion bookkeeping shared with the callbacks ---- */

typedef struct tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rift_client *c;
    pthread_t test_thread;
    size_t total;   /* operations to start */
    size_t started; /* started so far (the callbacks start the rest) */
    size_t window;  /* in flight at most */
    bool no_refill; /* callbacks never start operations */
    size_t inflight;
    size_t done, ok, other_thread;
    size_t max_inflight;
    int last_rc;
    rift_error last_err;
    uint8_t *seen; /* stream sequences reported, by number */
    size_t seen_cap;
    bool dup;
} tally;

static void tally_init(tally *t, rift_client *c, size_t total, size_t window) {
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->c = c;
    t->test_thread = pthread_self();
    t->total = total;
    t->window = window;
    t->seen_cap = total + 16;
    t->seen = calloc(t->seen_cap, 1);
}

static void tally_fini(tally *t) {
    free(t->seen);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

static bool tally_wait(tally *t, size_t n, int64_t timeout_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(timeout_ns / SEC);
    pthread_mutex_lock(&t->mu);
    while (t->done < n) {
        if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) != 0) {
            break;
        }
    }
    bool ok = t->done >= n;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

static int publish_next(tally *t);

static void on_stored(void *arg, int rc, const rift_stored *st,
                      const rift_error *err) {
    tally *t = arg;
    pthread_mutex_lock(&t->mu);
    t->done++;
    t->inflight--;
    t->last_rc = rc;
    if (!pthread_equal(pthread_self(), t->test_thread)) {
        t->other_thread++;
    }
    if (rc == 0) {
        t->ok++;
        if (st->sequence < t->seen_cap) {
            t->dup |= t->seen[st->sequence] != 0;
            t->seen[st->sequence] = 1;
        }
    } else {
        rift_error_copy(&t->last_err, err);
    }
    bool more = !t->no_refill && t->started < t->total;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (more && rc == 0) {
        /* Keeping the window full from the callback (client thread). */
        publish_next(t);
    }
}

static int publish_next(tally *t) {
    pthread_mutex_lock(&t->mu);
    if (t->started >= t->total || t->inflight >= t->window) {
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
    t->started++;
    t->inflight++;
    if (t->inflight > t->max_inflight) {
        t->max_inflight = t->inflight;
    }
    pthread_mutex_unlock(&t->mu);
    rift_error err;
    int rc = rift_client_stream_publish_async(
        t->c, "events", 6, "game.score", 10, NULL, 0,
        (const uint8_t *)"payload", 7, on_stored, t, &err);
    if (rc != 0) {
        pthread_mutex_lock(&t->mu);
        t->started--;
        t->inflight--;
        pthread_mutex_unlock(&t->mu);
    }
    return rc;
}

/* ---- Tests ---- */

RIFT_TEST(stream_publish_async_keeps_a_window_from_the_callbacks) {
    sfix s;
    CHECK(sfix_up(&s, 0));
    rift_client *c;
    CHECK(connect_opts(&s.f, 0, &c));
    tally t;
    /* More than the server's default stream limit (128) in flight: the
     * rest wait for credit inside the client. */
    tally_init(&t, c, 2000, 200);
    for (size_t i = 0; i < t.window; i++) {
        CHECK_OK(publish_next(&t));
    }
    CHECK(tally_wait(&t, t.total, 30 * SEC));
    CHECK_EQ_U64(t.ok, t.total);
    CHECK_EQ_U64(t.other_thread, t.total);
    CHECK(!t.dup);
    CHECK(t.max_inflight <= t.window);
    for (size_t seq = 1; seq <= t.total; seq++) {
        CHECK(t.seen[seq]);
    }
    /* The blocking call sees the same stream. */
    rift_stored st;
    rift_error err;
    CHECK_OK(rift_client_stream_publish(c, "events", 6, "game.score", 10, NULL,
                                        0, (const uint8_t *)"x", 1, &st, &err));
    CHECK_EQ_U64(st.sequence, t.total + 1);
    rift_client_del(c);
    tally_fini(&t);
    sfix_down(&s);
}

RIFT_TEST(stream_publish_async_errors) {
    sfix s;
    CHECK(sfix_up(&s, 0));
    rift_client *c;
    CHECK(connect_opts(&s.f, 0, &c));
    tally t;
    tally_init(&t, c, 1, 1);
    rift_error err;
    /* Local checks fail at the call; no callback follows. */
    CHECK_EQ_INT(rift_client_stream_publish_async(c, "events", 6, "game.*", 6,
                                                  NULL, 0, NULL, 0, on_stored,
                                                  &t, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    static char big[4097];
    memset(big, 'a', sizeof(big));
    CHECK_EQ_INT(rift_client_stream_publish_async(c, big, sizeof(big), "game.a",
                                                  6, NULL, 0, NULL, 0,
                                                  on_stored, &t, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "string exceeds protocol limit");
    static uint8_t huge[(1u << 20) + 1];
    CHECK_EQ_INT(rift_client_stream_publish_async(c, "events", 6, "game.a", 6,
                                                  NULL, 0, huge, sizeof(huge),
                                                  on_stored, &t, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload exceeds 1 MiB transport limit");
    /* The server's errors arrive in the callback. */
    t.inflight = 1;
    t.started = 1;
    CHECK_OK(rift_client_stream_publish_async(c, "nope", 4, "game.a", 6, NULL,
                                              0, NULL, 0, on_stored, &t, &err));
    CHECK(tally_wait(&t, 1, 10 * SEC));
    CHECK_EQ_U64(t.done, 1);
    CHECK_EQ_INT(t.last_rc, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(t.last_err.text, "unknown stream");
    /* A closed client refuses at the call. */
    rift_client_del(c);
    tally_fini(&t);
    sfix_down(&s);
}

typedef struct fetched {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int rc;
    bool done;
    rift_error err;
    size_t count;
    uint64_t seqs[256];
    bool payload_ok;
    size_t acks, acks_ok;
    int ack_rc;
    rift_error ack_err;
} fetched;

static void on_fetched(void *arg, int rc, rift_client_delivery *d, size_t n,
                       const rift_error *err) {
    fetched *f = arg;
    pthread_mutex_lock(&f->mu);
    f->rc = rc;
    f->count = n;
    f->payload_ok = true;
    for (size_t i = 0; i < n; i++) {
        f->seqs[i] = d[i].sequence;
        size_t len;
        const uint8_t *p = rift_msg_payload(d[i].msg, &len);
        f->payload_ok &= len == 7 && memcmp(p, "payload", 7) == 0 &&
                         d[i].delivery_count == 1;
        /* The callback owns the messages. */
        rift_msg_unref(d[i].msg);
    }
    if (rc != 0) {
        rift_error_copy(&f->err, err);
    }
    f->done = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void on_acked(void *arg, int rc, const rift_error *err) {
    fetched *f = arg;
    pthread_mutex_lock(&f->mu);
    f->acks++;
    if (rc == 0) {
        f->acks_ok++;
    } else {
        f->ack_rc = rc;
        rift_error_copy(&f->ack_err, err);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static bool wait_flag(fetched *f, bool *flag, size_t *count, size_t n) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&f->mu);
    while ((flag != NULL && !*flag) || (count != NULL && *count < n)) {
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) != 0) {
            break;
        }
    }
    bool ok = (flag == NULL || *flag) && (count == NULL || *count >= n);
    pthread_mutex_unlock(&f->mu);
    return ok;
}

RIFT_TEST(fetch_async_and_ack_async) {
    sfix s;
    CHECK(sfix_up(&s, 0));
    rift_client *c;
    CHECK(connect_opts(&s.f, 0, &c));
    tally t;
    tally_init(&t, c, 300, 64);
    for (size_t i = 0; i < t.window; i++) {
        CHECK_OK(publish_next(&t));
    }
    CHECK(tally_wait(&t, t.total, 30 * SEC));
    CHECK_EQ_U64(t.ok, t.total);
    rift_error err;
    rift_consumer_config cfg = {
        .filter = "game.score",
        .filter_len = 10,
        .start_sequence = 1,
        .ack_wait_ms = 30000,
        .max_ack_pending = 1000,
    };
    CHECK_OK(rift_client_consumer_open(c, "events", 6, "board", 5, &cfg, &err));
    fetched f;
    memset(&f, 0, sizeof(f));
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    CHECK_EQ_INT(rift_client_fetch_async(c, "events", 6, "board", 5, 0,
                                         on_fetched, &f, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "fetch limit must be 1..256");
    CHECK_OK(rift_client_fetch_async(c, "events", 6, "board", 5, 256,
                                     on_fetched, &f, &err));
    CHECK(wait_flag(&f, &f.done, NULL, 0));
    CHECK_OK(f.rc);
    CHECK_EQ_U64(f.count, 256);
    CHECK(f.payload_ok);
    for (size_t i = 0; i < f.count; i++) {
        CHECK_EQ_U64(f.seqs[i], i + 1);
        CHECK_OK(rift_client_ack_async(c, "events", 6, "board", 5, f.seqs[i],
                                       on_acked, &f, &err));
    }
    CHECK(wait_flag(&f, NULL, &f.acks, f.count));
    CHECK_EQ_U64(f.acks_ok, 256);
    /* An ack the server refuses. */
    CHECK_OK(rift_client_ack_async(c, "events", 6, "board", 5, 1, on_acked, &f,
                                   &err));
    CHECK(wait_flag(&f, NULL, &f.acks, 257));
    CHECK_EQ_INT(f.ack_rc, RIFT_ERR_REMOTE);
    CHECK_EQ_STR(f.ack_err.text, "sequence is not pending acknowledgement");
    /* The rest, and a fetch of a consumer that does not exist. */
    f.done = false;
    CHECK_OK(rift_client_fetch_async(c, "events", 6, "board", 5, 256,
                                     on_fetched, &f, &err));
    CHECK(wait_flag(&f, &f.done, NULL, 0));
    CHECK_OK(f.rc);
    CHECK_EQ_U64(f.count, 44);
    f.done = false;
    CHECK_OK(rift_client_fetch_async(c, "events", 6, "nobody", 6, 1, on_fetched,
                                     &f, &err));
    CHECK(wait_flag(&f, &f.done, NULL, 0));
    CHECK_EQ_INT(f.rc, RIFT_ERR_REMOTE);
    CHECK_EQ_U64(f.count, 0);
    rift_client_del(c);
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
    tally_fini(&t);
    sfix_down(&s);
}

RIFT_TEST(async_operation_waiting_for_credit_times_out) {
    sfix s;
    /* One stream per connection, held by a subscription: the ack waits
     * for credit that never comes, until its deadline. */
    CHECK(sfix_up(&s, 1));
    rift_client *c;
    CHECK(connect_opts(&s.f, 300, &c));
    rift_error err;
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, "game.x", 6, NULL, 0, &sub, &err));
    fetched f;
    memset(&f, 0, sizeof(f));
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    int64_t t0 = rift_now_ns();
    CHECK_OK(rift_client_ack_async(c, "events", 6, "board", 5, 1, on_acked, &f,
                                   &err));
    CHECK(wait_flag(&f, NULL, &f.acks, 1));
    CHECK(rift_now_ns() - t0 >= 250000000);
    CHECK_EQ_INT(f.ack_rc, RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(f.ack_err.text, "QUIC operation timed out");
    rift_client_sub_close(sub);
    rift_client_del(c);
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
    sfix_down(&s);
}

RIFT_TEST(close_runs_every_pending_callback) {
    sfix s;
    CHECK(sfix_up(&s, 4));
    rift_client *c;
    CHECK(connect_opts(&s.f, 0, &c));
    tally t;
    tally_init(&t, c, 3000, 3000);
    /* Only this thread starts operations: a callback that refilled
     * would race with the close below and fail to start its publish. */
    t.no_refill = true;
    for (size_t i = 0; i < t.total; i++) {
        CHECK_OK(publish_next(&t));
    }
    rift_client_del(c);
    /* Every callback ran before close returned: stored, or failed with
     * the close. */
    pthread_mutex_lock(&t.mu);
    CHECK_EQ_U64(t.done, t.total);
    CHECK(t.ok < t.total);
    CHECK_EQ_INT(t.last_rc, RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(t.last_err.text, "client closed");
    pthread_mutex_unlock(&t.mu);
    tally_fini(&t);
    sfix_down(&s);
}

RIFT_TEST(server_shutdown_fails_pending_operations) {
    sfix s;
    CHECK(sfix_up(&s, 1));
    rift_client *c;
    CHECK(connect_opts(&s.f, 0, &c));
    rift_error err;
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, "game.x", 6, NULL, 0, &sub, &err));
    tally t;
    tally_init(&t, c, 50, 50);
    for (size_t i = 0; i < t.total; i++) {
        CHECK_OK(publish_next(&t));
    }
    rift_server_stop(s.f.srv);
    CHECK(tally_wait(&t, t.total, 10 * SEC));
    CHECK_EQ_U64(t.ok, 0);
    CHECK_EQ_INT(t.last_rc, RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(t.last_err.text, "server shutdown");
    /* Nothing can start any more. */
    CHECK_EQ_INT(rift_client_ack_async(c, "events", 6, "board", 5, 1, on_acked,
                                       NULL, &err),
                 RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "server shutdown");
    rift_client_sub_close(sub);
    rift_client_del(c);
    tally_fini(&t);
    sfix_down(&s);
}
