/*
 * test_server_streams.c — retained-stream opcodes of the protocol server
 * over real QUIC (docs/protocol-v1.md §2.9 opcodes 10–15, §4.8 QUIC-level
 * vectors): consecutive sequences, the scoreboard consumer, identity
 * isolation by scoped consumer names, every validation text in its order,
 * a file-backed stream with fsync (the asynchronous completion path), the
 * per-record ACL re-check in the middle of a fetch, and a stream source's
 * streams pinned once per operation.
 */
// labels: threads
#include "rawcli.h"

#include "rift/stream.h"
#include "subject/acl.h"

#include <stdatomic.h>
#include <stdlib.h>

/* ---- Frames ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    memcpy(p + 2, s, n);
    return 2 + n;
}

static size_t put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (56 - 8 * i));
    }
    return 8;
}

static size_t put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (24 - 8 * i));
    }
    return 4;
}

static size_t finish(uint8_t *buf, size_t n) {
    put_u32(buf, (uint32_t)(n - 4));
    return n;
}

static size_t b_publish(uint8_t *buf, const char *stream, const char *subject,
                        const char *reply, const char *payload) {
    size_t n = 4;
    buf[n++] = 10;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, subject);
    n += put_str(buf + n, reply);
    memcpy(buf + n, payload, strlen(payload));
    return finish(buf, n + strlen(payload));
}

static size_t b_open(uint8_t *buf, const char *stream, const char *name,
                     const char *filter, uint64_t start, uint32_t ack_wait,
                     uint32_t max_pending) {
    size_t n = 4;
    buf[n++] = 12;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, name);
    n += put_str(buf + n, filter);
    n += put_u64(buf + n, start);
    n += put_u32(buf + n, ack_wait);
    n += put_u32(buf + n, max_pending);
    return finish(buf, n);
}

static size_t b_fetch(uint8_t *buf, const char *stream, const char *name,
                      uint32_t limit) {
    size_t n = 4;
    buf[n++] = 13;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, name);
    n += put_u32(buf + n, limit);
    return finish(buf, n);
}

static size_t b_ack(uint8_t *buf, const char *stream, const char *name,
                    uint64_t seq) {
    size_t n = 4;
    buf[n++] = 15;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, name);
    n += put_u64(buf + n, seq);
    return finish(buf, n);
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

/* ---- Exchanges (each on a fresh one-shot stream) ---- */

static rc_stream *send_one(rawcli *c, const uint8_t *buf, size_t n) {
    rc_stream *s = rc_open(c);
    if (s != NULL && !rc_send(s, buf, n, true)) {
        return NULL;
    }
    return s;
}

/* STREAM_PUBLISH expecting STORED; returns the sequence or 0. */
static uint64_t stored(rawcli *c, const char *stream, const char *subject,
                       const char *payload) {
    uint8_t buf[512];
    rc_stream *s =
        send_one(c, buf, b_publish(buf, stream, subject, "", payload));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    if (b == NULL || b[0] != 11 || len != 17) {
        fprintf(stderr, "no STORED (%s)\n",
                b && b[0] == 3 ? (const char *)b + 5 : "?");
        return 0;
    }
    uint64_t ts = get_u64(b + 9);
    uint64_t now = rift_wall_ms();
    if (ts + 60000 < now || ts > now + 60000) {
        fprintf(stderr, "timestamp %llu far from now\n",
                (unsigned long long)ts);
        return 0;
    }
    uint64_t seq = get_u64(b + 1);
    return rc_expect_end(s, 5000) ? seq : 0;
}

static bool expect_ok_end(rc_stream *s) {
    return s != NULL && rc_expect_ok(s, 5000) && rc_expect_end(s, 5000);
}

static bool open_ok(rawcli *c, const char *stream, const char *name,
                    const char *filter) {
    uint8_t buf[512];
    return expect_ok_end(
        send_one(c, buf, b_open(buf, stream, name, filter, 1, 30000, 128)));
}

typedef struct got {
    uint64_t seq[16];
    uint32_t count[16];
    char payload[16][32];
    size_t n;
} got;

/* CONSUMER_FETCH: the DELIVERY frames until OK. */
static bool fetch(rawcli *c, const char *stream, const char *name,
                  uint32_t limit, got *g) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_fetch(buf, stream, name, limit));
    memset(g, 0, sizeof(*g));
    for (;;) {
        size_t len;
        const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
        if (b != NULL && len == 1 && b[0] == 2) {
            return rc_expect_end(s, 5000);
        }
        if (b == NULL || b[0] != 14 || g->n == 16) {
            fprintf(stderr, "fetch: %s\n",
                    b && b[0] == 3 ? (const char *)b + 5 : "no DELIVERY");
            return false;
        }
        g->seq[g->n] = get_u64(b + 1);
        g->count[g->n] =
            (uint32_t)b[17] << 24 | (uint32_t)b[18] << 16 | b[19] << 8 | b[20];
        size_t pos = 21;
        for (int k = 0; k < 2; k++) {
            pos += 2 + ((size_t)b[pos] << 8 | b[pos + 1]);
        }
        snprintf(g->payload[g->n], sizeof(g->payload[0]), "%.*s",
                 (int)(len - pos), (const char *)b + pos);
        g->n++;
    }
}

static bool error_one(rawcli *c, const uint8_t *buf, size_t n, int code,
                      const char *text) {
    rc_stream *s = send_one(c, buf, n);
    return s != NULL && rc_expect_error(s, code, text, 5000) &&
           rc_expect_end(s, 5000);
}

/* ---- Fixture with streams ---- */

typedef struct sfix {
    srvfix f;
    rift_stream *events; /* memory, game.> */
    rift_stream *jobs;   /* file, sync_on_write, game.jobs.> */
    rift_server_stream list[2];
} sfix;

static bool sfix_up(sfix *s) {
    if (!fix_init(&s->f, NULL)) {
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *ev[] = {"game.>"};
    ss.subjects = ev;
    ss.subjects_count = 1;
    rift_error err;
    if (rift_stream_new(&s->events, &ss, &err) != 0) {
        fprintf(stderr, "stream: %s\n", err.text);
        return false;
    }
    char path[4300];
    snprintf(path, sizeof(path), "%s/jobs", s->f.tmp);
    const char *jb[] = {"game.jobs.>"};
    ss.subjects = jb;
    ss.storage_path = path;
    if (rift_stream_new(&s->jobs, &ss, &err) != 0) {
        fprintf(stderr, "stream: %s\n", err.text);
        return false;
    }
    s->list[0] = (rift_server_stream){"events", 6, s->events};
    s->list[1] = (rift_server_stream){"jobs", 4, s->jobs};
    s->f.settings.streams = s->list;
    s->f.settings.stream_count = 2;
    return fix_start(&s->f);
}

static void sfix_down(sfix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->events);
    rift_stream_del(s->jobs);
    fix_fini(&s->f);
}

static rawcli *login(sfix *s, const char *id) {
    return rc_login(s->f.loop, &s->f.addr, s->f.addrlen, s->f.ca, id);
}

/* ---- Tests ---- */

RIFT_TEST(consecutive_sequences_and_scoreboard) {
    sfix s;
    CHECK(sfix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK_EQ_U64(stored(c, "events", "game.score", "one"), 1);
    CHECK_EQ_U64(stored(c, "events", "game.score", "two"), 2);
    CHECK(open_ok(c, "events", "scoreboard", "game.score"));
    got g;
    CHECK(fetch(c, "events", "scoreboard", 10, &g));
    CHECK_EQ_INT(g.n, 2);
    CHECK_EQ_U64(g.seq[0], 1);
    CHECK_EQ_U64(g.seq[1], 2);
    CHECK_EQ_INT(g.count[0], 1);
    CHECK_EQ_STR(g.payload[0], "one");
    CHECK_EQ_STR(g.payload[1], "two");
    uint8_t buf[512];
    CHECK(
        expect_ok_end(send_one(c, buf, b_ack(buf, "events", "scoreboard", 1))));
    CHECK(
        expect_ok_end(send_one(c, buf, b_ack(buf, "events", "scoreboard", 2))));
    CHECK(fetch(c, "events", "scoreboard", 10, &g));
    CHECK_EQ_INT(g.n, 0);
    /* Reopening with the same settings keeps the state. */
    CHECK(open_ok(c, "events", "scoreboard", "game.score"));
    CHECK(fetch(c, "events", "scoreboard", 10, &g));
    CHECK_EQ_INT(g.n, 0);
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(s.f.srv, &st, NULL));
    CHECK_EQ_U64(st.msgs_in, 2);
    CHECK_EQ_U64(st.msgs_out, 2);
    rift_server_stats_free(&st);
    rc_free(c);
    sfix_down(&s);
}

RIFT_TEST(identity_isolation) {
    sfix s;
    CHECK(sfix_up(&s));
    rawcli *p = login(&s, "plugin");
    rawcli *o = login(&s, "other_plugin");
    CHECK(p && o);
    CHECK_EQ_U64(stored(p, "events", "game.a", "rec"), 1);
    CHECK(open_ok(p, "events", "worker", "game.>"));
    got g;
    CHECK(fetch(p, "events", "worker", 1, &g));
    CHECK_EQ_INT(g.n, 1);
    uint8_t buf[512];
    CHECK(error_one(o, buf, b_fetch(buf, "events", "worker", 1), 2,
                    "consumer does not exist"));
    CHECK(error_one(o, buf, b_ack(buf, "events", "worker", 1), 2,
                    "consumer does not exist"));
    CHECK(expect_ok_end(send_one(p, buf, b_ack(buf, "events", "worker", 1))));
    CHECK(open_ok(o, "events", "worker", "game.>"));
    CHECK(fetch(o, "events", "worker", 1, &g));
    CHECK_EQ_INT(g.n, 1);
    CHECK_EQ_U64(g.seq[0], 1);
    CHECK(fetch(p, "events", "worker", 1, &g));
    CHECK_EQ_INT(g.n, 0);
    /* Both consumers exist in the store, under scoped names. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(s.events, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 2);
    CHECK(strncmp(info.consumer_names[0], "remote_", 7) == 0);
    CHECK_EQ_INT(strlen(info.consumer_names[0]), 71);
    rift_stream_info_free(&info);
    rc_free(p);
    rc_free(o);
    sfix_down(&s);
}

RIFT_TEST(validation_order_and_texts) {
    sfix s;
    CHECK(sfix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    uint8_t buf[512];
    size_t n;
    /* §3.8: consumer open with filter > is refused. */
    CHECK(error_one(c, buf, b_open(buf, "events", "w", ">", 1, 30000, 128), 1,
                    "subscription not permitted"));
    /* Permission before the stream lookup. */
    CHECK(error_one(c, buf, b_publish(buf, "nope", "rift.control.x", "", "x"),
                    1, "publication not permitted"));
    CHECK(error_one(c, buf, b_publish(buf, "nope", "game.x", "", "x"), 2,
                    "unknown stream"));
    CHECK(error_one(c, buf, b_publish(buf, "events", "game.*", "", "x"), 2,
                    "publication subject must be literal"));
    CHECK(error_one(c, buf, b_publish(buf, "events", "game.x", "x.y", "x"), 1,
                    "reply must be an authorized _INBOX subject"));
    CHECK(error_one(c, buf, b_publish(buf, "jobs", "game.other", "", "x"), 2,
                    "subject does not match this stream"));
    /* Consumer names are checked as soon as they are decoded. */
    /* ...even when a later field is truncated. */
    n = finish(buf, b_open(buf, "events", "bad name", ">", 1, 30000, 128) - 3);
    CHECK(error_one(c, buf, n, 2, "invalid consumer name"));
    n = b_fetch(buf, "events", "", 1);
    CHECK(error_one(c, buf, n, 2, "invalid consumer name"));
    n = b_ack(buf, "events", "x/y", 1);
    CHECK(error_one(c, buf, n, 2, "invalid consumer name"));
    n = b_open(buf, "events", "w", "game.>", 1, 30000, 128);
    buf[3]++;
    buf[n++] = 0;
    CHECK(error_one(c, buf, n, 2, "unexpected trailing frame bytes"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 1, 0, 128), 2,
                    "invalid consumer limits"));
    CHECK(error_one(c, buf,
                    b_open(buf, "events", "w", "game.>", 1, 3600001, 128), 2,
                    "invalid consumer limits"));
    CHECK(error_one(c, buf,
                    b_open(buf, "events", "w", "game.>", 1, 1000, 65537), 2,
                    "invalid consumer limits"));
    CHECK(error_one(c, buf, b_open(buf, "nope", "w", "game.>", 1, 1000, 1), 2,
                    "unknown stream"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 0, 1000, 1), 2,
                    "invalid messaging configuration: invalid consumer name "
                    "or limits"));
    CHECK(open_ok(c, "events", "w", "game.>"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 2, 30000, 128),
                    2,
                    "invalid messaging configuration: consumer already exists "
                    "with different settings"));
    CHECK(error_one(c, buf, b_fetch(buf, "events", "w", 0), 2,
                    "fetch limit must be 1..256"));
    CHECK(error_one(c, buf, b_fetch(buf, "events", "w", 257), 2,
                    "fetch limit must be 1..256"));
    CHECK(error_one(c, buf, b_fetch(buf, "nope", "w", 1), 2, "unknown stream"));
    CHECK(error_one(c, buf, b_fetch(buf, "events", "nobody", 1), 2,
                    "consumer does not exist"));
    CHECK(error_one(c, buf, b_ack(buf, "events", "w", 7), 2,
                    "sequence is not pending acknowledgement"));
    CHECK(error_one(c, buf, b_ack(buf, "nope", "w", 7), 2, "unknown stream"));
    /* The connection is fine after all that. */
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_free(c);
    sfix_down(&s);
}

RIFT_TEST(file_stream_with_fsync) {
    sfix s;
    CHECK(sfix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    for (uint64_t i = 1; i <= 20; i++) {
        CHECK_EQ_U64(stored(c, "jobs", "game.jobs.run", "job"), i);
    }
    CHECK(open_ok(c, "jobs", "worker", "game.jobs.run"));
    got g;
    CHECK(fetch(c, "jobs", "worker", 5, &g));
    CHECK_EQ_INT(g.n, 5);
    uint8_t buf[512];
    CHECK(expect_ok_end(send_one(c, buf, b_ack(buf, "jobs", "worker", 3))));
    /* Several operations in flight at once on one connection. */
    rc_stream *q[10];
    for (int i = 0; i < 10; i++) {
        q[i] = send_one(c, buf,
                        b_publish(buf, "jobs", "game.jobs.run", "", "burst"));
        CHECK(q[i] != NULL);
    }
    for (int i = 0; i < 10; i++) {
        size_t len;
        const uint8_t *b = rc_frame(q[i], 5000, &len);
        CHECK(b != NULL && b[0] == 11);
    }
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(s.jobs, &info, NULL));
    CHECK_EQ_U64(info.last_sequence, 30);
    CHECK(info.syncs > 0);
    rift_stream_info_free(&info);
    rc_free(c);
    sfix_down(&s);
}

RIFT_TEST(fetch_rechecks_acl_per_record) {
    /* An identity whose grants narrow between two servers over the same
     * stream (as across a restart with edited configuration). */
    srvfix f;
    CHECK(fix_init(&f, NULL));
    rift_stream *st;
    CHECK_OK(rift_stream_new(&st, NULL, NULL));
    rift_server_stream list[1] = {{"x", 1, st}};
    const char *wide[] = {"x.>"};
    const char *narrow[] = {"x.a"};
    rift_server_identity id = {
        .name = "n",
        .name_len = 1,
        .token = RC_TOKEN("n"),
        .token_len = strlen(RC_TOKEN("n")),
        .publish = wide,
        .publish_count = 1,
        .subscribe = wide,
        .subscribe_count = 1,
    };
    f.settings.identities = &id;
    f.settings.identity_count = 1;
    f.settings.streams = list;
    f.settings.stream_count = 1;
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "n");
    CHECK(c != NULL);
    CHECK_EQ_U64(stored(c, "x", "x.a", "1"), 1);
    CHECK_EQ_U64(stored(c, "x", "x.b", "2"), 2);
    CHECK_EQ_U64(stored(c, "x", "x.a", "3"), 3);
    CHECK(open_ok(c, "x", "w", "x.>"));
    rc_free(c);
    rift_server_del(f.srv);

    id.subscribe = narrow;
    CHECK(fix_start(&f));
    c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "n");
    CHECK(c != NULL);
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_fetch(buf, "x", "w", 10));
    size_t len;
    const uint8_t *b = rc_frame(s, 5000, &len);
    CHECK(b != NULL && b[0] == 14);
    CHECK_EQ_U64(get_u64(b + 1), 1);
    CHECK(rc_expect_error(s, 1, "subscription not permitted", 5000));
    CHECK(rc_expect_end(s, 5000));
    /* All three were committed as pending by the fetch. */
    rift_consumer *cons;
    char scoped[80];
    CHECK_OK(rift_consumer_scope("n", 1, "w", 1, scoped));
    CHECK_OK(rift_stream_consumer_get(st, scoped, strlen(scoped), &cons, NULL));
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(cons, &ci, NULL));
    CHECK_EQ_INT(ci.pending, 3);
    rift_consumer_close(cons);
    rc_free(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(st);
    fix_fini(&f);
}

RIFT_TEST(large_deliveries_zero_copy) {
    sfix s;
    CHECK(sfix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    size_t n = 300000;
    uint8_t *buf = malloc(n + 512);
    char *pl = malloc(n + 1);
    memset(pl, 'p', n);
    pl[n] = '\0';
    for (int i = 0; i < 3; i++) {
        size_t k = b_publish(buf, "events", "game.big", "", pl);
        rc_stream *q = send_one(c, buf, k);
        size_t len;
        const uint8_t *b = rc_frame(q, 10000, &len);
        CHECK(b != NULL && b[0] == 11);
    }
    uint8_t ob[512];
    CHECK(expect_ok_end(
        send_one(c, ob, b_open(ob, "events", "big", "game.big", 1, 30000, 8))));
    rc_stream *q = send_one(c, ob, b_fetch(ob, "events", "big", 10));
    for (int i = 0; i < 3; i++) {
        size_t len;
        const uint8_t *b = rc_frame(q, 10000, &len);
        CHECK(b != NULL && b[0] == 14);
        CHECK_EQ_INT(len, 21 + 2 + 8 + 2 + n);
        CHECK(memcmp(b + 33, pl, n) == 0);
    }
    CHECK(rc_expect_ok(q, 5000));
    free(buf);
    free(pl);
    rc_free(c);
    sfix_down(&s);
}

/* ---- A fetching client that does not read ---- */

/* rss_kib, queued_reached, CONN_BUDGET, OVERSHOOT: support/rawcli.h. */

RIFT_TEST(stalled_fetches_pin_a_bounded_amount) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.io_timeout_ms = 1000;
    /* A file stream whose records are read back from disk (the cache
     * holds almost nothing), 16 records of 512 KiB. */
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subj[] = {"game.big.>"};
    ss.subjects = subj;
    ss.subjects_count = 1;
    ss.sync_on_write = false;
    ss.cache_bytes = 65536;
    char path[4300];
    snprintf(path, sizeof(path), "%s/big", f.tmp);
    ss.storage_path = path;
    rift_stream *big;
    rift_error err;
    CHECK_OK(rift_stream_new(&big, &ss, &err));
    enum {
        RECS = 16,
        SIZE = 512 * 1024,
        FETCHES = 16
    };
    uint8_t *pl = malloc(SIZE);
    memset(pl, 'b', SIZE);
    for (int i = 0; i < RECS; i++) {
        rift_stored st;
        CHECK_OK(rift_stream_publish(big, "game.big.x", 10, NULL, 0, pl, SIZE,
                                     &st, &err));
    }
    free(pl);
    rift_server_stream list[1] = {{"big", 3, big}};
    f.settings.streams = list;
    f.settings.stream_count = 1;
    CHECK(fix_start(&f));
    rawcli *c =
        rc_login_window(f.loop, &f.addr, f.addrlen, f.ca, "plugin", 16384);
    CHECK(c != NULL);
    uint8_t buf[512];
    for (int i = 0; i < FETCHES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        CHECK(open_ok(c, "big", name, "game.big.>"));
    }
    uint64_t rss0 = rss_kib();
    /* Each fetch would read all 16 records back: 8 MiB apiece, 128 MiB,
     * queued for a client that takes 16 KiB per stream. */
    for (int i = 0; i < FETCHES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        rc_stream *s = rc_open(c);
        CHECK(s != NULL);
        rc_pause(s);
        CHECK(rc_send(s, buf, b_fetch(buf, "big", name, 256), true));
    }
    queued_wait w = {&f, CONN_BUDGET - 1048576u};
    CHECK(rc_run(c, queued_reached, &w, 10000));
    uint64_t rss1 = rss_kib();
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    uint64_t peak = st.conn_queued_peak;
    rift_server_stats_free(&st);
    fprintf(stderr, "  queued peak %llu bytes, RSS %llu -> %llu KiB\n",
            (unsigned long long)peak, (unsigned long long)rss0,
            (unsigned long long)rss1);
    CHECK_MSG(peak <= CONN_BUDGET + OVERSHOOT, "peak %llu",
              (unsigned long long)peak);
    CHECK_MSG(!RSS_MEANINGFUL || rss1 < rss0 + 48 * 1024,
              "RSS %llu -> %llu KiB", (unsigned long long)rss0,
              (unsigned long long)rss1);
    /* Silent past io_timeout: every fetch ends and releases its records. */
    w.at_least = 0;
    rift_tstamp t0 = rift_now_ns();
    CHECK(rc_run(c, queued_reached, &w, 20000));
    fprintf(stderr, "  released after %llu ms\n",
            (unsigned long long)((rift_now_ns() - t0) / 1000000));
    /* The server still serves, and a client that reads gets the whole
     * answer, portion after portion, in order. */
    rawcli *r = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(r != NULL);
    CHECK(open_ok(r, "big", "reader", "game.big.>"));
    rc_stream *q = rc_open(r);
    CHECK(rc_send(q, buf, b_fetch(buf, "big", "reader", 256), true));
    for (uint64_t seq = 1; seq <= RECS; seq++) {
        size_t len;
        const uint8_t *b = rc_frame(q, 10000, &len);
        CHECK(b != NULL && b[0] == 14);
        CHECK_EQ_U64(get_u64(b + 1), seq);
        CHECK_EQ_INT(len, 21 + 2 + 10 + 2 + SIZE);
    }
    CHECK(rc_expect_ok(q, 5000));
    CHECK(rc_expect_end(q, 5000));
    rc_free(r);
    rc_free(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(big);
    fix_fini(&f);
}

/* ---- A stream source (riftd: the NATS Streaming channels) ---- */

typedef struct counting_source {
    rift_stream *st;
    atomic_int acquired, released, appended;
} counting_source;

static rift_stream *src_acquire(void *ud, const char *name, size_t len,
                                void **token) {
    counting_source *cs = ud;
    if (len != 5 || memcmp(name, "extra", 5) != 0) {
        return NULL;
    }
    atomic_fetch_add(&cs->acquired, 1);
    *token = cs;
    return cs->st;
}

static void src_release(void *ud, void *token, bool appended) {
    counting_source *cs = ud;
    if (token == cs) { /* anything else would be a foreign token */
        atomic_fetch_add(&cs->released, 1);
        atomic_fetch_add(&cs->appended, appended ? 1 : 0);
    }
}

static bool all_released(void *arg) {
    counting_source *cs = arg;
    return atomic_load(&cs->released) == atomic_load(&cs->acquired);
}

/* Every operation on a source's stream pins it and lets go once, on the
 * success paths and on the failures after the lookup alike. */
RIFT_TEST(stream_source_pins_each_operation) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    counting_source cs = {0};
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subj[] = {"game.>"};
    ss.subjects = subj;
    ss.subjects_count = 1;
    CHECK_OK(rift_stream_new(&cs.st, &ss, NULL));
    f.settings.stream_source =
        (rift_server_stream_source){src_acquire, src_release, &cs};
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    CHECK_EQ_U64(stored(c, "extra", "game.x", "one"), 1);
    CHECK(open_ok(c, "extra", "reader", "game.>"));
    got g;
    CHECK(fetch(c, "extra", "reader", 4, &g));
    CHECK_EQ_INT(g.n, 1);
    CHECK_EQ_STR(g.payload[0], "one");
    uint8_t buf[512];
    CHECK(expect_ok_end(send_one(c, buf, b_ack(buf, "extra", "reader", 1))));
    /* Failures after the lookup. */
    CHECK(error_one(c, buf, b_fetch(buf, "extra", "nobody", 1), 2,
                    "consumer does not exist"));
    CHECK(error_one(c, buf, b_ack(buf, "extra", "nobody", 1), 2,
                    "consumer does not exist"));
    CHECK(error_one(c, buf, b_fetch(buf, "elsewhere", "w", 1), 2,
                    "unknown stream"));
    CHECK(rc_run(c, all_released, &cs, 5000));
    CHECK_EQ_INT(atomic_load(&cs.acquired), 6);
    CHECK_EQ_INT(atomic_load(&cs.appended), 1); /* the one STORED publish */
    rc_free(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(cs.st);
    fix_fini(&f);
}
