/*
 * test_server_ext_ack.c — CONSUMER_NAK (23), CONSUMER_TERM (24),
 * CONSUMER_PROGRESS (25) and max_deliver over real QUIC
 * (docs/protocol-v1.md "Extensions" E.2, E.3): each answer, every error
 * text in its order, the resume check on max_deliver, CONSUMER_INFO's
 * counters, all for a principal without control rights, and isolation:
 * another identity gets "consumer does not exist" for all three.
 */
// labels: threads
#include "rawcli.h"

#include "codec/frame_ext_ack.h"
#include "rift/stream.h"

#include <time.h>

/* ---- Frames ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    memcpy(p + 2, s, n);
    return 2 + n;
}

static size_t b_publish(uint8_t *buf, const char *subject) {
    size_t n = 4;
    buf[n++] = 10;
    n += put_str(buf + n, "events");
    n += put_str(buf + n, subject);
    n += put_str(buf + n, "");
    memcpy(buf + n, "x", 1);
    n += 1;
    buf[0] = 0, buf[1] = 0, buf[2] = 0, buf[3] = (uint8_t)(n - 4);
    return n;
}

static size_t b_open(uint8_t *buf, const char *name, uint32_t ack_wait,
                     uint32_t max_deliver) {
    rift_frame_consumer_open_ext f = {
        .stream = "events",
        .stream_len = 6,
        .name = name,
        .name_len = strlen(name),
        .filter = "game.>",
        .filter_len = 6,
        .start = RIFT_START_FIRST,
        .ack_wait_ms = ack_wait,
        .max_ack_pending = 128,
        .max_deliver = max_deliver,
    };
    return (size_t)rift_frame_encode_consumer_open_ext(buf, 512, &f);
}

static size_t b_settle(uint8_t *buf, uint8_t op, const char *stream,
                       const char *name, uint64_t seq, uint32_t delay) {
    rift_frame_consumer_settle f = {
        .stream = stream,
        .stream_len = strlen(stream),
        .name = name,
        .name_len = strlen(name),
        .sequence = seq,
        .delay_ms = delay,
    };
    return (size_t)rift_frame_encode_consumer_settle(buf, 512, op, &f);
}

static size_t b_fetch(uint8_t *buf, const char *name) {
    size_t n = 4;
    buf[n++] = 13;
    n += put_str(buf + n, "events");
    n += put_str(buf + n, name);
    memcpy(buf + n, "\0\0\0\x10", 4);
    n += 4;
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

static bool settle_ok(rawcli *c, uint8_t op, const char *name, uint64_t seq,
                      uint32_t delay) {
    uint8_t buf[512];
    return ok_one(c, buf, b_settle(buf, op, "events", name, seq, delay));
}

static bool stored(rawcli *c, const char *subject) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_publish(buf, subject));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    return b != NULL && b[0] == 11 && rc_expect_end(s, 5000);
}

static bool open_info(rawcli *c, const char *name, uint32_t ack_wait,
                      uint32_t max_deliver, rift_frame_consumer_info *out) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_open(buf, name, ack_wait, max_deliver));
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    if (b == NULL || b[0] != RIFT_OP_CONSUMER_INFO) {
        fprintf(stderr, "no CONSUMER_INFO (%s)\n",
                b && b[0] == 3 ? (const char *)b + 5 : "?");
        return false;
    }
    return rift_frame_decode_consumer_info(b + 1, len - 1, out, NULL) == 0 &&
           rc_expect_end(s, 5000);
}

static bool get_info(rawcli *c, const char *name,
                     rift_frame_consumer_info *out) {
    uint8_t buf[512];
    size_t n = (size_t)rift_frame_encode_consumer_ref(
        buf, 512, RIFT_OP_CONSUMER_INFO_GET, "events", 6, name, strlen(name));
    rc_stream *s = send_one(c, buf, n);
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    return b != NULL && b[0] == RIFT_OP_CONSUMER_INFO &&
           rift_frame_decode_consumer_info(b + 1, len - 1, out, NULL) == 0 &&
           rc_expect_end(s, 5000);
}

/* CONSUMER_FETCH: the sequences delivered before OK (at most 16), the
 * first delivery count in *count. */
static int fetch(rawcli *c, const char *name, uint64_t *seqs, uint32_t *count) {
    uint8_t buf[512];
    rc_stream *s = send_one(c, buf, b_fetch(buf, name));
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
        if (n == 0 && count != NULL) {
            *count = (uint32_t)b[17] << 24 | (uint32_t)b[18] << 16 |
                     (uint32_t)b[19] << 8 | b[20];
        }
        seqs[n++] = v;
    }
}

/* Fetches until one record comes (the condition awaited), up to 10 s. */
static int fetch_until(rawcli *c, const char *name, uint64_t *seqs,
                       uint32_t *count) {
    for (int i = 0; i < 2000; i++) {
        int n = fetch(c, name, seqs, count);
        if (n != 0) {
            return n;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return 0;
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

RIFT_TEST(features_list_settling) {
    CHECK(strstr(RIFT_EXT_FEATURES, "consumer-nak consumer-term "
                                    "consumer-progress max-deliver") != NULL);
    uint8_t buf[64];
    rift_frame_consumer_settle f = {"s", 1, "n", 1, 0x0102, 7, 0};
    size_t n = (size_t)rift_frame_encode_consumer_settle(
        buf, sizeof(buf), RIFT_OP_CONSUMER_NAK, &f);
    const uint8_t want[] = {0, 0, 0, 19, 23, 0, 1, 's', 0, 1, 'n', 0,
                            0, 0, 0, 0,  0,  1, 2, 0,   0, 0, 7};
    CHECK_EQ_MEM(buf, n, want, sizeof(want));
    n = (size_t)rift_frame_encode_consumer_settle(buf, sizeof(buf),
                                                  RIFT_OP_CONSUMER_TERM, &f);
    CHECK_EQ_INT(n, 19);
    CHECK_EQ_INT(buf[4], 24);
    CHECK_EQ_STR(rift_ext_opcode_name(25), "CONSUMER_PROGRESS");
    CHECK_EQ_STR(rift_ext_opcode_name(22), "CONSUMER_FETCH_WAIT");
}

RIFT_TEST(nak_redelivers_at_once_and_after_delay) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    CHECK(c != NULL);
    rift_frame_consumer_info i;
    CHECK(open_info(c, "w", 30000, 0, &i));
    CHECK(stored(c, "game.a"));
    uint64_t seqs[16];
    uint32_t count = 0;
    CHECK_EQ_INT(fetch(c, "w", seqs, &count), 1);
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_NAK, "w", 1, 0));
    CHECK_EQ_INT(fetch(c, "w", seqs, &count), 1);
    CHECK_EQ_U64(seqs[0], 1);
    CHECK_EQ_INT(count, 2);
    /* With a delay: nothing at once, the record once it has passed. */
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_NAK, "w", 1, 300));
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 0);
    CHECK_EQ_INT(fetch_until(c, "w", seqs, &count), 1);
    CHECK_EQ_INT(count, 3);
    /* In progress answers OK and keeps it pending. */
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_PROGRESS, "w", 1, 0));
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 0);
    CHECK(get_info(c, "w", &i));
    CHECK_EQ_INT(i.pending, 1);
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(term_ends_a_delivery_and_counts) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    rift_frame_consumer_info i;
    CHECK(open_info(c, "w", 1, 0, &i));
    CHECK(stored(c, "game.a"));
    CHECK(stored(c, "game.a"));
    uint64_t seqs[16];
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 2);
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_TERM, "w", 1, 0));
    /* Seq 2 comes back after its 1 ms ack wait; 1 never does. */
    for (int k = 0; k < 5; k++) {
        CHECK_EQ_INT(fetch_until(c, "w", seqs, NULL), 1);
        CHECK_EQ_U64(seqs[0], 2);
    }
    CHECK(get_info(c, "w", &i));
    CHECK_EQ_U64(i.terminated, 1);
    CHECK_EQ_U64(i.max_delivered, 0);
    CHECK_EQ_INT(i.pending, 1);
    uint8_t buf[512];
    CHECK(error_one(c, buf,
                    b_settle(buf, RIFT_OP_CONSUMER_TERM, "events", "w", 1, 0),
                    2, "sequence is not pending acknowledgement"));
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(max_deliver_drops_and_resume_compares_it) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    rift_frame_consumer_info i;
    CHECK(open_info(c, "w", 1, 2, &i));
    CHECK_EQ_INT(i.max_deliver, 2);
    CHECK_EQ_INT(i.created, 1);
    CHECK(stored(c, "game.a"));
    uint64_t seqs[16];
    uint32_t count = 0;
    CHECK_EQ_INT(fetch(c, "w", seqs, &count), 1);
    CHECK_EQ_INT(fetch_until(c, "w", seqs, &count), 1);
    CHECK_EQ_INT(count, 2);
    /* Await the drop: the fetch after the second ack wait. */
    bool dropped = false;
    for (int k = 0; k < 2000 && !dropped; k++) {
        CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 0);
        CHECK(get_info(c, "w", &i));
        dropped = i.max_delivered == 1;
    }
    CHECK(dropped);
    CHECK_EQ_INT(i.pending, 0);
    CHECK_EQ_INT(i.max_deliver, 2);
    /* Resume: equal max_deliver resumes, another one is named. */
    CHECK(open_info(c, "w", 1, 2, &i));
    CHECK_EQ_INT(i.created, 0);
    CHECK_EQ_U64(i.max_delivered, 1);
    uint8_t buf[512];
    CHECK(error_one(c, buf, b_open(buf, "w", 1, 3), 2,
                    "invalid messaging configuration: consumer already exists "
                    "with different max_deliver"));
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(validation_order_and_texts) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    rift_frame_consumer_info i;
    CHECK(open_info(c, "w", 30000, 0, &i));
    uint8_t buf[512];
    const uint8_t ops[] = {RIFT_OP_CONSUMER_NAK, RIFT_OP_CONSUMER_TERM,
                           RIFT_OP_CONSUMER_PROGRESS};
    for (size_t k = 0; k < 3; k++) {
        uint8_t op = ops[k];
        /* The name is checked as soon as it is decoded. */
        size_t n = b_settle(buf, op, "events", "a b", 1, 0);
        buf[3] = (uint8_t)(buf[3] - 8);
        CHECK(error_one(c, buf, n - 8, 2, "invalid consumer name"));
        n = b_settle(buf, op, "events", "w", 1, 0);
        buf[3] = (uint8_t)(buf[3] - 1);
        CHECK(error_one(c, buf, n - 1, 2, "truncated frame"));
        n = b_settle(buf, op, "events", "w", 1, 0);
        buf[n] = 0;
        buf[3] = (uint8_t)(buf[3] + 1);
        CHECK(error_one(c, buf, n + 1, 2, "unexpected trailing frame bytes"));
        CHECK(error_one(c, buf, b_settle(buf, op, "nope", "w", 1, 0), 2,
                        "unknown stream"));
        CHECK(error_one(c, buf, b_settle(buf, op, "events", "x", 1, 0), 2,
                        "consumer does not exist"));
        CHECK(error_one(c, buf, b_settle(buf, op, "events", "w", 1, 0), 2,
                        "sequence is not pending acknowledgement"));
    }
    /* The delay bound comes before the lookups. */
    CHECK(error_one(
        c, buf, b_settle(buf, RIFT_OP_CONSUMER_NAK, "nope", "w", 1, 3600001), 2,
        "nak delay must be 0..3600000 ms"));
    CHECK(stored(c, "game.a"));
    uint64_t seqs[16];
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 1);
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_NAK, "w", 1, 3600000));
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 0);
    rc_free(c);
    efix_down(&s);
}

RIFT_TEST(another_identity_cannot_settle) {
    efix s;
    CHECK(efix_up(&s));
    rawcli *c = login(&s, "plugin");
    rawcli *o = login(&s, "other_plugin");
    CHECK(c != NULL && o != NULL);
    rift_frame_consumer_info i;
    CHECK(open_info(c, "w", 30000, 0, &i));
    CHECK(stored(c, "game.a"));
    uint64_t seqs[16];
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 1);
    uint8_t buf[512];
    const uint8_t ops[] = {RIFT_OP_CONSUMER_NAK, RIFT_OP_CONSUMER_TERM,
                           RIFT_OP_CONSUMER_PROGRESS};
    for (size_t k = 0; k < 3; k++) {
        CHECK(error_one(o, buf, b_settle(buf, ops[k], "events", "w", 1, 0), 2,
                        "consumer does not exist"));
    }
    /* The owner's delivery is untouched. */
    CHECK(get_info(c, "w", &i));
    CHECK_EQ_INT(i.pending, 1);
    CHECK_EQ_U64(i.terminated, 0);
    CHECK_EQ_INT(fetch(c, "w", seqs, NULL), 0);
    CHECK(settle_ok(c, RIFT_OP_CONSUMER_TERM, "w", 1, 0));
    rc_free(o);
    rc_free(c);
    efix_down(&s);
}
