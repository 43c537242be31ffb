/*
 * test_server_ext_list.c — CONSUMER_LIST (26) over real QUIC
 * (docs/protocol-v1.md E.2, E.3): paging with after/limit/more, the
 * empty list, isolation (another identity, an in-process consumer and a
 * control principal see none of an identity's consumers), v1-opened
 * consumers listed by their names, the limit and stream errors, and
 * names that survive a restart of a file stream (the journaled labels,
 * also through a snapshot of the state log).
 */
// labels: threads
#include "rawcli.h"

#include "codec/frame_ext.h"
#include "rift/stream.h"

#include <stdlib.h>

/* ---- Frames ---- */

static size_t b_open(uint8_t *buf, const char *name, const char *filter) {
    rift_frame_consumer_open_ext f = {
        .stream = "events",
        .stream_len = 6,
        .name = name,
        .name_len = strlen(name),
        .filter = filter,
        .filter_len = strlen(filter),
        .start = RIFT_START_FIRST,
        .ack_wait_ms = 30000,
        .max_ack_pending = 128,
    };
    return (size_t)rift_frame_encode_consumer_open_ext(buf, 512, &f);
}

static size_t b_list(uint8_t *buf, const char *stream, const char *after,
                     uint32_t limit) {
    rift_frame_consumer_list f = {
        .stream = stream,
        .stream_len = strlen(stream),
        .after = after,
        .after_len = strlen(after),
        .limit = limit,
    };
    return (size_t)rift_frame_encode_consumer_list(buf, 512, &f);
}

static rc_stream *send_one(rawcli *c, const uint8_t *buf, size_t n) {
    rc_stream *s = rc_open(c);
    if (s != NULL && !rc_send(s, buf, n, true)) {
        return NULL;
    }
    return s;
}

static bool error_one(rawcli *c, const uint8_t *buf, size_t n, int code,
                      const char *text) {
    rc_stream *s = send_one(c, buf, n);
    return s != NULL && rc_expect_error(s, code, text, 5000) &&
           rc_expect_end(s, 5000);
}

static bool opened(rawcli *c, const char *name, const char *filter) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_open(buf, name, filter));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    return b != NULL && b[0] == RIFT_OP_CONSUMER_INFO && rc_expect_end(s, 5000);
}

/* A page, copied out: names joined with ',', the first filter, pending. */
typedef struct page {
    char names[512];
    char filter0[64];
    uint32_t pending0;
    size_t count;
    bool more;
} page;

static bool list(rawcli *c, const char *after, uint32_t limit, page *out) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_list(buf, "events", after, limit));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    if (b == NULL || b[0] != RIFT_OP_CONSUMER_LIST_RESULT) {
        fprintf(stderr, "no CONSUMER_LIST_RESULT (%s)\n",
                b && b[0] == 3 ? (const char *)b + 5 : "?");
        return false;
    }
    static rift_frame_consumer_info items[RIFT_EXT_MAX_LIST];
    rift_error err;
    if (rift_frame_decode_consumer_list_result(b + 1, len - 1, items,
                                               RIFT_EXT_MAX_LIST, &out->count,
                                               &out->more, &err) != 0) {
        fprintf(stderr, "CONSUMER_LIST_RESULT: %s\n", err.text);
        return false;
    }
    size_t pos = 0;
    out->names[0] = '\0';
    out->filter0[0] = '\0';
    for (size_t i = 0; i < out->count; i++) {
        pos += (size_t)snprintf(out->names + pos, sizeof(out->names) - pos,
                                "%s%.*s", i ? "," : "", (int)items[i].name_len,
                                items[i].name);
    }
    if (out->count > 0) {
        snprintf(out->filter0, sizeof(out->filter0), "%.*s",
                 (int)items[0].filter_len, items[0].filter);
        out->pending0 = items[0].pending;
    }
    return rc_expect_end(s, 5000);
}

/* ---- Fixture ---- */

typedef struct lfix {
    srvfix f;
    rift_stream *events; /* game.>, memory unless |dir| */
    rift_server_stream streams[1];
} lfix;

static bool lfix_up(lfix *s, const char *dir) {
    if (!fix_init(&s->f, NULL)) {
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *ev[] = {"game.>"};
    ss.subjects = ev;
    ss.subjects_count = 1;
    ss.storage_path = dir;
    if (rift_stream_new(&s->events, &ss, NULL) != 0) {
        return false;
    }
    s->streams[0] = (rift_server_stream){"events", 6, s->events};
    s->f.settings.streams = s->streams;
    s->f.settings.stream_count = 1;
    return fix_start(&s->f);
}

static void lfix_down(lfix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->events);
    fix_fini(&s->f);
}

static rawcli *login(lfix *s, const char *id) {
    return rc_login(s->f.loop, &s->f.addr, s->f.addrlen, s->f.ca, id);
}

/* ---- Tests ---- */

RIFT_TEST(list_pages_by_name_with_after_limit_more) {
    lfix s;
    CHECK(lfix_up(&s, NULL));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    page p;
    CHECK(list(c, "", 10, &p));
    CHECK_EQ_INT(p.count, 0);
    CHECK(!p.more);
    const char *names[] = {"delta", "alpha", "echo", "charlie", "bravo"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(names); i++) {
        CHECK(opened(c, names[i], i == 1 ? "game.a" : "game.>"));
    }
    /* A v1 CONSUMER_OPEN is listed by its name too. */
    uint8_t buf[512];
    size_t n = (size_t)rift_frame_encode_consumer_open(
        buf, sizeof(buf), "events", 6, "v1", 2, "game.>", 6, 1, 30000, 16);
    rc_stream *st = send_one(c, buf, n);
    CHECK(rc_expect_ok(st, 5000) && rc_expect_end(st, 5000));
    CHECK(list(c, "", 2, &p));
    CHECK_EQ_STR(p.names, "alpha,bravo");
    CHECK(p.more);
    CHECK_EQ_STR(p.filter0, "game.a");
    CHECK_EQ_INT(p.pending0, 0);
    CHECK(list(c, "bravo", 2, &p));
    CHECK_EQ_STR(p.names, "charlie,delta");
    CHECK(p.more);
    CHECK(list(c, "delta", 2, &p));
    CHECK_EQ_STR(p.names, "echo,v1");
    CHECK(!p.more);
    /* A cursor between names and past the end. */
    CHECK(list(c, "c", 256, &p));
    CHECK_EQ_STR(p.names, "charlie,delta,echo,v1");
    CHECK(!p.more);
    CHECK(list(c, "zulu", 1, &p));
    CHECK_EQ_INT(p.count, 0);
    CHECK(!p.more);
    /* Exactly the limit left: no more. */
    CHECK(list(c, "", 6, &p));
    CHECK_EQ_INT(p.count, 6);
    CHECK(!p.more);
    /* A deleted consumer leaves the list. */
    n = (size_t)rift_frame_encode_consumer_ref(
        buf, sizeof(buf), RIFT_OP_CONSUMER_DELETE, "events", 6, "alpha", 5);
    st = send_one(c, buf, n);
    CHECK(rc_expect_ok(st, 5000) && rc_expect_end(st, 5000));
    CHECK(list(c, "", 1, &p));
    CHECK_EQ_STR(p.names, "bravo");
    CHECK(p.more);
    rc_free(c);
    lfix_down(&s);
}

RIFT_TEST(list_is_scoped_to_the_identity) {
    lfix s;
    CHECK(lfix_up(&s, NULL));
    rawcli *p = login(&s, "plugin");
    rawcli *o = login(&s, "other_plugin");
    rawcli *a = login(&s, "admin");
    CHECK(p && o && a);
    CHECK(opened(p, "worker", "game.>"));
    CHECK(opened(p, "audit", "game.>"));
    /* An in-process consumer, even one named like a scoped one. */
    rift_consumer *local;
    CHECK_OK(
        rift_stream_consumer_open(s.events, "local", 5, NULL, &local, NULL));
    rift_consumer_close(local);
    page pg;
    CHECK(list(o, "", 256, &pg));
    CHECK_EQ_INT(pg.count, 0);
    CHECK(list(a, "", 256, &pg));
    CHECK_EQ_INT(pg.count, 0);
    /* The other identity's consumer of the same name is its own. */
    CHECK(opened(o, "worker", "game.a"));
    CHECK(list(o, "", 256, &pg));
    CHECK_EQ_STR(pg.names, "worker");
    CHECK_EQ_STR(pg.filter0, "game.a");
    CHECK(list(p, "", 256, &pg));
    CHECK_EQ_STR(pg.names, "audit,worker");
    CHECK(!pg.more);
    rc_free(p);
    rc_free(o);
    rc_free(a);
    lfix_down(&s);
}

RIFT_TEST(list_validation_texts) {
    lfix s;
    CHECK(lfix_up(&s, NULL));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    uint8_t buf[512];
    const char *limit = "consumer list limit must be 1..256";
    CHECK(error_one(c, buf, b_list(buf, "events", "", 0), 2, limit));
    CHECK(error_one(c, buf, b_list(buf, "events", "", 257), 2, limit));
    /* The limit is checked before the stream is looked up. */
    CHECK(error_one(c, buf, b_list(buf, "nope", "", 0), 2, limit));
    CHECK(error_one(c, buf, b_list(buf, "nope", "", 1), 2, "unknown stream"));
    size_t n = b_list(buf, "events", "", 1);
    buf[3]--; /* cut the limit's last byte */
    CHECK(error_one(c, buf, n - 1, 2, "truncated frame"));
    n = b_list(buf, "events", "", 1);
    buf[3]++;
    buf[n] = 0;
    CHECK(error_one(c, buf, n + 1, 2, "unexpected trailing frame bytes"));
    rc_free(c);
    lfix_down(&s);
}

RIFT_TEST(list_names_survive_a_restart) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    lfix s;
    CHECK(lfix_up(&s, dir));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK(opened(c, "kept", "game.>"));
    rc_free(c);
    lfix_down(&s);
    CHECK(lfix_up(&s, dir));
    c = login(&s, "plugin");
    CHECK(c != NULL);
    page p;
    CHECK(list(c, "", 10, &p));
    CHECK_EQ_STR(p.names, "kept");
    /* Reopening the same name does not journal a second label. */
    CHECK(opened(c, "kept", "game.>"));
    CHECK(list(c, "", 10, &p));
    CHECK_EQ_STR(p.names, "kept");
    /* A snapshot of the state log keeps the names too. */
    CHECK(opened(c, "later", "game.>"));
    CHECK_OK(rift_stream_checkpoint(s.events, NULL));
    rc_free(c);
    lfix_down(&s);
    CHECK(lfix_up(&s, dir));
    c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK(list(c, "", 10, &p));
    CHECK_EQ_STR(p.names, "kept,later");
    rc_free(c);
    lfix_down(&s);
    rift_test_rmdir(dir);
}
