/*
 * test_server_ext.c — the protocol extensions beyond v1 over real QUIC
 * (docs/protocol-v1.md "Extensions"): the EXT_HELLO probe, CONSUMER_OPEN_EXT
 * with every start position, resume ignoring the start, a refused reopen
 * naming the differing field, CONSUMER_INFO_GET and CONSUMER_DELETE, every
 * error text in its order, all for a principal without control rights, and
 * isolation: another identity cannot see, fetch, ack or delete them.
 */
// labels: threads
#include "rawcli.h"

#include "codec/frame_ext.h"
#include "codec/frame_ext_stream.h"
#include "rift/stream.h"

#include <stdlib.h>
#include <sys/resource.h>

/* ---- Frames ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    memcpy(p + 2, s, n);
    return 2 + n;
}

static size_t b_publish(uint8_t *buf, const char *stream, const char *subject,
                        const char *payload) {
    size_t n = 4;
    buf[n++] = 10;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, subject);
    n += put_str(buf + n, "");
    memcpy(buf + n, payload, strlen(payload));
    n += strlen(payload);
    buf[0] = 0, buf[1] = 0, buf[2] = (uint8_t)((n - 4) >> 8);
    buf[3] = (uint8_t)(n - 4);
    return n;
}

static size_t b_open(uint8_t *buf, const char *stream, const char *name,
                     const char *filter, uint8_t start, uint64_t value,
                     uint32_t ack_wait) {
    rift_frame_consumer_open_ext f = {
        .stream = stream,
        .stream_len = strlen(stream),
        .name = name,
        .name_len = strlen(name),
        .filter = filter,
        .filter_len = strlen(filter),
        .start = start,
        .start_value = value,
        .ack_wait_ms = ack_wait,
        .max_ack_pending = 128,
    };
    return (size_t)rift_frame_encode_consumer_open_ext(buf, 512, &f);
}

static size_t b_ref(uint8_t *buf, uint8_t op, const char *stream,
                    const char *name) {
    return (size_t)rift_frame_encode_consumer_ref(
        buf, 512, op, stream, strlen(stream), name, strlen(name));
}

static size_t b_fetch(uint8_t *buf, const char *stream, const char *name) {
    size_t n = 4;
    buf[n++] = 13;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, name);
    memcpy(buf + n, "\0\0\0\x10", 4);
    n += 4;
    buf[0] = 0, buf[1] = 0, buf[2] = 0, buf[3] = (uint8_t)(n - 4);
    return n;
}

static size_t b_ack(uint8_t *buf, const char *stream, const char *name,
                    uint64_t seq) {
    size_t n = 4;
    buf[n++] = 15;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, name);
    for (int i = 0; i < 8; i++) {
        buf[n++] = (uint8_t)(seq >> (56 - 8 * i));
    }
    buf[0] = 0, buf[1] = 0, buf[2] = 0, buf[3] = (uint8_t)(n - 4);
    return n;
}

/* ---- Exchanges ---- */

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

static bool ok_one(rawcli *c, const uint8_t *buf, size_t n) {
    rc_stream *s = send_one(c, buf, n);
    return s != NULL && rc_expect_ok(s, 5000) && rc_expect_end(s, 5000);
}

static bool stored(rawcli *c, const char *subject, const char *payload) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_publish(buf, "events", subject, payload));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    return b != NULL && b[0] == 11 && rc_expect_end(s, 5000);
}

/* A CONSUMER_INFO answer, copied out. */
typedef struct info {
    rift_frame_consumer_info f;
    char name[128];
    char filter[128];
} info;

static bool expect_info(rc_stream *s, info *out) {
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    if (b == NULL || b[0] != RIFT_OP_CONSUMER_INFO) {
        fprintf(stderr, "no CONSUMER_INFO (%s)\n",
                b && b[0] == 3 ? (const char *)b + 5 : "?");
        return false;
    }
    rift_error err;
    if (rift_frame_decode_consumer_info(b + 1, len - 1, &out->f, &err) != 0) {
        fprintf(stderr, "CONSUMER_INFO: %s\n", err.text);
        return false;
    }
    snprintf(out->name, sizeof(out->name), "%.*s", (int)out->f.name_len,
             out->f.name);
    snprintf(out->filter, sizeof(out->filter), "%.*s", (int)out->f.filter_len,
             out->f.filter);
    return rc_expect_end(s, 5000);
}

static bool open_info(rawcli *c, const char *name, const char *filter,
                      uint8_t start, uint64_t value, info *out) {
    uint8_t buf[512];
    return expect_info(
        send_one(c, buf,
                 b_open(buf, "events", name, filter, start, value, 30000)),
        out);
}

/* CONSUMER_FETCH: the sequences delivered before OK (at most 16). */
static int fetch(rawcli *c, const char *name, uint64_t *seqs) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_fetch(buf, "events", name));
    int n = 0;
    for (;;) {
        size_t len;
        const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
        if (b != NULL && len == 1 && b[0] == 2) {
            return rc_expect_end(s, 5000) ? n : -1;
        }
        if (b == NULL || b[0] != 14 || n == 16) {
            return -1;
        }
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) {
            v = v << 8 | b[1 + i];
        }
        seqs[n++] = v;
    }
}

/* ---- Fixture ---- */

typedef struct efix {
    srvfix f;
    rift_stream *events; /* memory, game.> */
    rift_server_stream list[1];
} efix;

static bool efix_up(efix *s) {
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

static void efix_down(efix *s) {
    rift_server_del(s->f.srv);
    s->f.srv = NULL;
    rift_stream_del(s->events);
    fix_fini(&s->f);
}

static rawcli *login(efix *s, const char *id) {
    return rc_login(s->f.loop, &s->f.addr, s->f.addrlen, s->f.ca, id);
}

/* ---- Tests ---- */

RIFT_TEST(probe_answers_ext_info) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    uint8_t buf[64];
    size_t n = (size_t)rift_frame_encode_ext_hello(buf, sizeof(buf));
    CHECK_EQ_INT(n, 5);
    CHECK(memcmp(buf, "\0\0\0\x01\x10", 5) == 0);
    rc_stream *st = send_one(c, buf, n);
    size_t len;
    const uint8_t *b = rc_frame(st, 5000, &len);
    CHECK(b != NULL && b[0] == RIFT_OP_EXT_INFO);
    rift_frame_ext_info ei;
    CHECK_OK(rift_frame_decode_ext_info(b + 1, len - 1, &ei, NULL));
    CHECK_EQ_INT(ei.version, 1);
    /* Without a stream administration, stream info only (E.2). */
    static const char features[] = RIFT_EXT_FEATURES " stream-info push";
    CHECK_EQ_MEM(ei.features, ei.features_len, features, strlen(features));
    CHECK(rc_expect_end(st, 5000));
    /* Trailing bytes after the probe, and the opcodes still unknown:
     * the server-to-client ones (17, 19) and one not assigned (40). */
    const uint8_t trailing[] = {0, 0, 0, 2, 16, 0};
    CHECK(error_one(c, trailing, sizeof(trailing), 2,
                    "unexpected trailing frame bytes"));
    const uint8_t ops[] = {17, 19, 40, 255};
    for (size_t i = 0; i < sizeof(ops); i++) {
        const uint8_t f[] = {0, 0, 0, 1, ops[i]};
        CHECK(error_one(c, f, sizeof(f), 2, "unknown opcode"));
    }
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(open_with_every_start_position) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK(stored(c, "game.a", "one"));
    CHECK(stored(c, "game.a", "two"));
    CHECK(stored(c, "game.a", "three"));
    info i;
    CHECK(open_info(c, "first", "game.>", RIFT_START_FIRST, 0, &i));
    CHECK_EQ_STR(i.name, "first");
    CHECK_EQ_STR(i.filter, "game.>");
    CHECK_EQ_INT(i.f.created, 1);
    CHECK_EQ_INT(i.f.start, RIFT_START_FIRST);
    CHECK_EQ_U64(i.f.start_sequence, 1);
    CHECK_EQ_INT(i.f.ack_wait_ms, 30000);
    CHECK_EQ_INT(i.f.max_ack_pending, 128);
    CHECK(open_info(c, "last", "game.a", RIFT_START_LAST_RECEIVED, 0, &i));
    CHECK_EQ_U64(i.f.start_sequence, 3);
    CHECK(open_info(c, "new", "game.a", RIFT_START_NEW_ONLY, 0, &i));
    CHECK_EQ_U64(i.f.start_sequence, 4);
    CHECK(open_info(c, "seq", "game.a", RIFT_START_SEQUENCE, 2, &i));
    CHECK_EQ_U64(i.f.start_sequence, 2);
    CHECK_EQ_U64(i.f.start_value, 2);
    uint64_t future = rift_wall_ms() + 3600000;
    CHECK(open_info(c, "time", "game.a", RIFT_START_TIME, future, &i));
    CHECK_EQ_U64(i.f.start_sequence, 4);
    CHECK_EQ_U64(i.f.start_value, future);
    CHECK(open_info(c, "since", "game.a", RIFT_START_TIME_DELTA, 3600000, &i));
    CHECK_EQ_U64(i.f.start_sequence, 1);
    uint64_t seqs[16];
    CHECK_EQ_INT(fetch(c, "last", seqs), 1);
    CHECK_EQ_U64(seqs[0], 3);
    CHECK_EQ_INT(fetch(c, "new", seqs), 0);
    CHECK(stored(c, "game.a", "four"));
    CHECK_EQ_INT(fetch(c, "new", seqs), 1);
    CHECK_EQ_U64(seqs[0], 4);
    /* Resume: the start is ignored, the state kept; created is 0. */
    CHECK(open_info(c, "last", "game.a", RIFT_START_FIRST, 0, &i));
    CHECK_EQ_INT(i.f.created, 0);
    CHECK_EQ_INT(i.f.start, RIFT_START_LAST_RECEIVED);
    CHECK_EQ_U64(i.f.start_sequence, 3);
    CHECK_EQ_INT(i.f.pending, 1);
    CHECK_EQ_U64(i.f.next_sequence, 4);
    uint8_t buf[512];
    /* A different setting is named. */
    CHECK(error_one(c, buf,
                    b_open(buf, "events", "last", "game.b",
                           RIFT_START_LAST_RECEIVED, 0, 30000),
                    2,
                    "invalid messaging configuration: consumer already exists "
                    "with different filter"));
    CHECK(error_one(c, buf,
                    b_open(buf, "events", "last", "game.a",
                           RIFT_START_LAST_RECEIVED, 0, 1000),
                    2,
                    "invalid messaging configuration: consumer already exists "
                    "with different ack_wait_ms"));
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(open_validation_order_and_texts) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    uint8_t buf[512];
    /* The name is checked as soon as it is decoded, before a bad tail. */
    size_t n = b_open(buf, "events", "a b", "game.>", 0, 1, 30000);
    buf[3] = (uint8_t)(buf[3] - 4); /* cut max_ack_pending */
    CHECK(error_one(c, buf, n - 4, 2, "invalid consumer name"));
    n = b_open(buf, "events", "w", "game.>", 0, 1, 30000);
    buf[3] = (uint8_t)(buf[3] - 4);
    CHECK(error_one(c, buf, n - 4, 2, "truncated frame"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 6, 0, 30000),
                    2, "invalid start position"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 0, 0, 30000),
                    2, "start sequence must be at least 1"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 1, 5, 30000),
                    2, "start value must be 0 for start first, last and new"));
    /* The empty filter means ">", which plugin may not subscribe to. */
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "", 1, 0, 30000), 1,
                    "subscription not permitted"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "other.>", 1, 0, 30000),
                    1, "subscription not permitted"));
    CHECK(error_one(c, buf, b_open(buf, "events", "w", "game.>", 1, 0, 0), 2,
                    "invalid consumer limits"));
    CHECK(error_one(c, buf, b_open(buf, "nope", "w", "game.>", 1, 0, 30000), 2,
                    "unknown stream"));
    CHECK(error_one(c, buf, b_ref(buf, RIFT_OP_CONSUMER_INFO_GET, "nope", "w"),
                    2, "unknown stream"));
    CHECK(error_one(c, buf, b_ref(buf, RIFT_OP_CONSUMER_DELETE, "events", "w"),
                    2, "consumer does not exist"));
    /* ">" touches rift.control (§3.4): only the control identity may use
     * the empty filter. */
    rawcli *w = login(&s, "admin");
    CHECK(w != NULL);
    info i;
    CHECK(open_info(w, "all", "", RIFT_START_FIRST, 0, &i));
    CHECK_EQ_STR(i.filter, ">");
    rc_free(w);
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(info_delete_and_isolation) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *p = login(&s, "plugin");
    rawcli *o = login(&s, "other_plugin");
    CHECK(p && o);
    CHECK(stored(p, "game.a", "rec"));
    info i;
    CHECK(open_info(p, "worker", "game.>", RIFT_START_FIRST, 0, &i));
    uint64_t seqs[16];
    CHECK_EQ_INT(fetch(p, "worker", seqs), 1);
    uint8_t buf[512];
    CHECK(expect_info(
        send_one(p, buf,
                 b_ref(buf, RIFT_OP_CONSUMER_INFO_GET, "events", "worker")),
        &i));
    CHECK_EQ_STR(i.name, "worker");
    CHECK_EQ_INT(i.f.pending, 1);
    CHECK_EQ_INT(i.f.created, 0);
    CHECK_EQ_U64(i.f.next_sequence, 2);
    /* The other identity sees nothing of it. */
    const char *gone = "consumer does not exist";
    CHECK(error_one(o, buf,
                    b_ref(buf, RIFT_OP_CONSUMER_INFO_GET, "events", "worker"),
                    2, gone));
    CHECK(error_one(o, buf,
                    b_ref(buf, RIFT_OP_CONSUMER_DELETE, "events", "worker"), 2,
                    gone));
    CHECK(error_one(o, buf, b_fetch(buf, "events", "worker"), 2, gone));
    CHECK(error_one(o, buf, b_ack(buf, "events", "worker", 1), 2, gone));
    /* Its own open of the same name is another consumer. */
    CHECK(open_info(o, "worker", "game.>", RIFT_START_NEW_ONLY, 0, &i));
    CHECK_EQ_INT(i.f.created, 1);
    /* The owner deletes its consumer; the other one stays. */
    CHECK(ok_one(p, buf,
                 b_ref(buf, RIFT_OP_CONSUMER_DELETE, "events", "worker")));
    CHECK(error_one(p, buf,
                    b_ref(buf, RIFT_OP_CONSUMER_INFO_GET, "events", "worker"),
                    2, gone));
    CHECK(error_one(p, buf, b_fetch(buf, "events", "worker"), 2, gone));
    CHECK(expect_info(
        send_one(o, buf,
                 b_ref(buf, RIFT_OP_CONSUMER_INFO_GET, "events", "worker")),
        &i));
    CHECK_EQ_INT(i.f.start, RIFT_START_NEW_ONLY);
    /* Reopening after the delete creates a fresh consumer. */
    CHECK(open_info(p, "worker", "game.>", RIFT_START_FIRST, 0, &i));
    CHECK_EQ_INT(i.f.created, 1);
    CHECK_EQ_INT(i.f.pending, 0);
    rc_free(p);
    rc_free(o);
    efix_down(&s);
}

/* ---- Fetch that waits ---- */

static size_t b_wait(uint8_t *buf, const char *stream, const char *name,
                     uint32_t limit, uint32_t wait_ms) {
    rift_frame_fetch_wait f = {
        .stream = stream,
        .stream_len = strlen(stream),
        .name = name,
        .name_len = strlen(name),
        .limit = limit,
        .max_wait_ms = wait_ms,
    };
    return (size_t)rift_frame_encode_fetch_wait(buf, 512, &f);
}

/* Reads a waiting fetch's answer: the sequences delivered before OK. */
static int wait_answer(rc_stream *s, uint64_t *seqs, int ms) {
    int n = 0;
    for (;;) {
        size_t len;
        const uint8_t *b = s ? rc_frame(s, ms, &len) : NULL;
        if (b != NULL && len == 1 && b[0] == 2) {
            return rc_expect_end(s, 5000) ? n : -1;
        }
        if (b == NULL || b[0] != 14 || n == 16) {
            fprintf(stderr, "wait: %s\n",
                    b && b[0] == 3 ? (const char *)b + 5 : "no DELIVERY");
            return -1;
        }
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) {
            v = v << 8 | b[1 + i];
        }
        seqs[n++] = v;
    }
}

RIFT_TEST(fetch_wait_validation_and_isolation) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *p = login(&s, "plugin");
    rawcli *o = login(&s, "other_plugin");
    CHECK(p && o);
    info i;
    CHECK(open_info(p, "w", "game.>", RIFT_START_FIRST, 0, &i));
    uint8_t buf[512];
    CHECK(error_one(p, buf, b_wait(buf, "events", "w", 0, 100), 2,
                    "fetch limit must be 1..256"));
    CHECK(error_one(p, buf, b_wait(buf, "events", "w", 257, 100), 2,
                    "fetch limit must be 1..256"));
    CHECK(error_one(p, buf, b_wait(buf, "events", "w", 1, 0), 2,
                    "fetch wait must be 1..120000 ms"));
    CHECK(error_one(p, buf, b_wait(buf, "events", "w", 1, 120001), 2,
                    "fetch wait must be 1..120000 ms"));
    CHECK(error_one(p, buf, b_wait(buf, "nope", "w", 1, 100), 2,
                    "unknown stream"));
    CHECK(error_one(o, buf, b_wait(buf, "events", "w", 1, 100), 2,
                    "consumer does not exist"));
    size_t n = b_wait(buf, "events", "w", 1, 100);
    buf[3] = (uint8_t)(buf[3] - 4);
    CHECK(error_one(p, buf, n - 4, 2, "truncated frame"));
    rc_free(p);
    rc_free(o);
    efix_down(&s);
}

RIFT_TEST(fetch_wait_answers_at_once_or_after_max_wait) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK(stored(c, "game.a", "one"));
    info i;
    CHECK(open_info(c, "w", "game.>", RIFT_START_FIRST, 0, &i));
    uint8_t buf[512];
    uint64_t seqs[16];
    /* A record is there: answered at once, like CONSUMER_FETCH. */
    uint64_t t0 = (rift_now_ns() / 1000000u);
    CHECK_EQ_INT(
        wait_answer(send_one(c, buf, b_wait(buf, "events", "w", 4, 60000)),
                    seqs, 5000),
        1);
    CHECK_EQ_U64(seqs[0], 1);
    CHECK((rift_now_ns() / 1000000u) - t0 < 5000);
    /* Nothing there: OK with no record after max_wait. */
    t0 = (rift_now_ns() / 1000000u);
    CHECK_EQ_INT(
        wait_answer(send_one(c, buf, b_wait(buf, "events", "w", 4, 300)), seqs,
                    5000),
        0);
    uint64_t took = (rift_now_ns() / 1000000u) - t0;
    CHECK_MSG(took >= 290 && took < 3000, "answered after %llu ms",
              (unsigned long long)took);
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(fetch_wait_is_woken_by_a_publish) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    rawcli *pub = login(&s, "other_plugin");
    CHECK(c && pub);
    info i;
    CHECK(open_info(c, "w", "game.a", RIFT_START_NEW_ONLY, 0, &i));
    uint8_t buf[512];
    uint64_t seqs[16];
    /* Woken by a publish over the wire (another connection and identity). */
    rc_stream *w = send_one(c, buf, b_wait(buf, "events", "w", 4, 60000));
    CHECK(w != NULL);
    size_t len;
    CHECK(rc_frame(w, 200, &len) == NULL); /* parked: nothing yet */
    uint64_t t0 = (rift_now_ns() / 1000000u);
    CHECK(stored(pub, "game.a", "one"));
    CHECK_EQ_INT(wait_answer(w, seqs, 5000), 1);
    CHECK_EQ_U64(seqs[0], 1);
    CHECK((rift_now_ns() / 1000000u) - t0 < 5000);
    /* Woken by an in-process publish (riftd's Lua, NATS Streaming). */
    w = send_one(c, buf, b_wait(buf, "events", "w", 4, 60000));
    CHECK(rc_frame(w, 200, &len) == NULL);
    CHECK_OK(rift_stream_publish(s.events, "game.a", 6, NULL, 0,
                                 (const uint8_t *)"two", 3, NULL, NULL));
    CHECK_EQ_INT(wait_answer(w, seqs, 5000), 1);
    CHECK_EQ_U64(seqs[0], 2);
    /* A record its filter does not match parks it again; the deadline
     * then answers OK with none. */
    w = send_one(c, buf, b_wait(buf, "events", "w", 4, 700));
    CHECK(rc_frame(w, 200, &len) == NULL);
    CHECK(stored(pub, "game.b", "other"));
    CHECK_EQ_INT(wait_answer(w, seqs, 5000), 0);
    /* Several waiters on one stream are all woken by one record each. */
    rc_stream *ws[3];
    for (int k = 0; k < 3; k++) {
        char name[8];
        snprintf(name, sizeof(name), "m%d", k);
        CHECK(open_info(c, name, "game.a", RIFT_START_NEW_ONLY, 0, &i));
        ws[k] = send_one(c, buf, b_wait(buf, "events", name, 1, 60000));
    }
    CHECK(rc_frame(ws[0], 200, &len) == NULL);
    CHECK(stored(pub, "game.a", "all"));
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(wait_answer(ws[k], seqs, 5000), 1);
        CHECK_EQ_U64(seqs[0], 4);
    }
    /* A client that goes away while parked leaves nothing behind. */
    CHECK(open_info(c, "late", "game.a", RIFT_START_NEW_ONLY, 0, &i));
    w = send_one(c, buf, b_wait(buf, "events", "late", 4, 60000));
    CHECK(rc_frame(w, 200, &len) == NULL);
    rc_free(c);
    CHECK(stored(pub, "game.a", "after"));
    rc_free(pub);
    efix_down(&s);
}

/* User plus system CPU time of this process (server thread included). */
static uint64_t cpu_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

RIFT_TEST(idle_waiting_fetches_cost_no_cpu) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    enum {
        N = 64
    };
    rc_stream *ws[N];
    uint8_t buf[512];
    info i;
    for (int k = 0; k < N; k++) {
        char name[16];
        snprintf(name, sizeof(name), "idle%d", k);
        CHECK(open_info(c, name, "game.a", RIFT_START_NEW_ONLY, 0, &i));
        ws[k] = send_one(c, buf, b_wait(buf, "events", name, 1, 60000));
        CHECK(ws[k] != NULL);
    }
    rc_spin(c, 300); /* every fetch parked */
    uint64_t before = cpu_us();
    rc_spin(c, 1000);
    uint64_t used = cpu_us() - before;
    fprintf(stderr, "%d parked fetches: %llu us of CPU in 1 s\n", N,
            (unsigned long long)used);
    /* Polling 64 fetchers even every 10 ms would show; parked ones cost
     * nothing but the client's own idle loop. */
    CHECK_MSG(used < 250000, "%llu us of CPU in 1 s idle",
              (unsigned long long)used);
    CHECK_OK(rift_stream_publish(s.events, "game.a", 6, NULL, 0,
                                 (const uint8_t *)"x", 1, NULL, NULL));
    uint64_t seqs[16];
    for (int k = 0; k < N; k++) {
        CHECK_EQ_INT(wait_answer(ws[k], seqs, 5000), 1);
    }
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(stream_info_and_no_stream_administration) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    CHECK(stored(c, "game.a", "one"));
    uint8_t buf[64];
    size_t n = (size_t)rift_frame_encode_stream_ref(
        buf, sizeof(buf), RIFT_OP_STREAM_INFO_GET, "events", 6);
    rc_stream *st = send_one(c, buf, n);
    size_t len;
    const uint8_t *b = rc_frame(st, 5000, &len);
    CHECK(b != NULL && b[0] == RIFT_OP_STREAM_INFO_EXT);
    rift_frame_stream_info fi;
    CHECK_OK(rift_frame_decode_stream_info(b + 1, len - 1, &fi, NULL));
    CHECK_EQ_MEM(fi.spec.subjects, fi.spec.subjects_len, "game.>", 6);
    CHECK_EQ_U64(fi.messages, 1);
    CHECK_EQ_INT(fi.runtime, 0);
    CHECK_EQ_INT(fi.spec.storage, RIFT_EXT_STORAGE_MEMORY);
    CHECK(rc_expect_end(st, 5000));
    n = (size_t)rift_frame_encode_stream_ref(
        buf, sizeof(buf), RIFT_OP_STREAM_INFO_GET, "nope", 4);
    CHECK(error_one(c, buf, n, 2, "unknown stream"));
    buf[3]++; /* one byte more than the stream name */
    buf[n] = 0;
    CHECK(error_one(c, buf, n + 1, 2, "unexpected trailing frame bytes"));
    /* No host administration: refused after the name check. */
    n = (size_t)rift_frame_encode_stream_ref(buf, sizeof(buf),
                                             RIFT_OP_STREAM_PURGE, "x", 1);
    CHECK(error_one(c, buf, n, 2, "stream administration not offered"));
    n = (size_t)rift_frame_encode_stream_ref(buf, sizeof(buf),
                                             RIFT_OP_STREAM_DELETE, "..", 2);
    CHECK(error_one(c, buf, n, 2, "invalid stream name"));
    rc_free(c);
    efix_down(&s);
}
