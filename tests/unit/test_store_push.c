/*
 * test_store_push.c — the push engine over a memory stream's consumer
 * (src/store/push.h): a leaving member's pending go to the others at
 * once, forced past their max in flight; a changed ack wait applies to
 * what is pending; rift_consumer_expire's errors.
 */
#include "test.h"

#include "rift/stream.h"
#include "store/push.h"

#include <string.h>

typedef struct got {
    void *member[64];
    uint64_t seq[64];
    uint32_t count[64];
    size_t n;
} got;

static int on_deliver(void *ctx, void *member, const rift_delivery *d) {
    got *g = ctx;
    if (g->n < 64) {
        g->member[g->n] = member;
        g->seq[g->n] = d->record.sequence;
        g->count[g->n] = d->delivery_count;
        g->n++;
    }
    return 0;
}

typedef struct fx {
    rift_stream *st;
    rift_consumer *c;
    rift_push *p;
    got g;
} fx;

static int fx_open(fx *f, int records) {
    memset(f, 0, sizeof *f);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    if (rift_stream_new(&f->st, &s, NULL) != 0) {
        return -1;
    }
    for (int i = 0; i < records; i++) {
        if (rift_stream_publish(f->st, "a", 1, NULL, 0, (const uint8_t *)"x", 1,
                                NULL, NULL) != 0) {
            return -1;
        }
    }
    rift_consumer_config cc;
    rift_consumer_config_default(&cc);
    cc.ack_wait_ms = 60000;
    cc.max_ack_pending = 1024;
    cc.start = RIFT_START_FIRST;
    if (rift_stream_consumer_open(f->st, "c", 1, &cc, &f->c, NULL) != 0) {
        return -1;
    }
    rift_push_settings ps = {f->c, on_deliver, &f->g, NULL};
    return rift_push_new(&f->p, &ps, NULL);
}

static void fx_close(fx *f) {
    rift_push_del(f->p);
    rift_consumer_close(f->c);
    rift_stream_del(f->st);
}

RIFT_TEST(leaving_member_pending_go_to_the_rest_at_once) {
    fx f;
    CHECK_OK(fx_open(&f, 4));
    int a = 0, b = 0;
    CHECK_OK(rift_push_add_member(f.p, &a, 10, NULL));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 4); /* all to a */
    CHECK_EQ_U64(rift_push_member_pending(f.p, &a), 4);
    CHECK_OK(rift_push_add_member(f.p, &b, 1, NULL));
    /* A fifth record: it must wait, b is full once it has a's four. */
    CHECK_OK(rift_stream_publish(f.st, "a", 1, NULL, 0, (const uint8_t *)"x", 1,
                                 NULL, NULL));
    f.g.n = 0;
    rift_push_remove_member(f.p, &a);
    /* Same instant, long before the 60 s ack wait: b gets all four,
     * redelivered, past its max in flight of 1. */
    CHECK(rift_push_wants_pump(f.p, 1000));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 4);
    CHECK_EQ_U64(f.g.n, 4);
    for (size_t i = 0; i < 4; i++) {
        CHECK(f.g.member[i] == &b);
        CHECK_EQ_U64(f.g.seq[i], i + 1);
        CHECK_EQ_U64(f.g.count[i], 2);
    }
    CHECK_EQ_U64(rift_push_member_pending(f.p, &b), 4);
    /* b is full: the fifth stays until b acknowledges. */
    CHECK(!rift_push_wants_pump(f.p, 1000));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 0);
    CHECK_OK(rift_push_ack(f.p, 1, NULL));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 0); /* 3 pending, still full */
    for (uint64_t s = 2; s <= 4; s++) {
        CHECK_OK(rift_push_ack(f.p, s, NULL));
    }
    f.g.n = 0;
    CHECK(rift_push_pump(f.p, 1000, NULL) == 1);
    CHECK_EQ_U64(f.g.seq[0], 5);
    CHECK_EQ_U64(f.g.count[0], 1);
    fx_close(&f);
}

RIFT_TEST(last_member_leaving_keeps_pending_for_the_ack_wait) {
    fx f;
    CHECK_OK(fx_open(&f, 2));
    int a = 0, b = 0;
    CHECK_OK(rift_push_add_member(f.p, &a, 1, NULL));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 1);
    rift_push_remove_member(f.p, &a);
    /* A later member (a resumed durable) is not handed it at once. */
    CHECK_OK(rift_push_add_member(f.p, &b, 1, NULL));
    f.g.n = 0;
    CHECK(rift_push_pump(f.p, 1000, NULL) == 1);
    CHECK_EQ_U64(f.g.seq[0], 2); /* the next new one, not 1 again */
    CHECK_EQ_U64(f.g.count[0], 1);
    fx_close(&f);
}

static bool redelivered(void *arg) {
    fx *f = arg;
    (void)rift_push_pump(f->p, 1000, NULL);
    for (size_t i = 0; i < f->g.n; i++) {
        if (f->g.count[i] > 1) {
            return true;
        }
    }
    return false;
}

RIFT_TEST(new_ack_wait_applies_to_pending) {
    fx f;
    CHECK_OK(fx_open(&f, 1));
    int a = 0;
    CHECK_OK(rift_push_add_member(f.p, &a, 10, NULL));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 1);
    CHECK_EQ_INT(rift_push_set_ack_wait(f.p, 0, NULL),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_OK(rift_push_set_ack_wait(f.p, 20, NULL));
    rift_consumer_info info;
    CHECK_OK(rift_consumer_get_info(f.c, &info, NULL));
    CHECK_EQ_U64(info.config.ack_wait_ms, 20);
    /* Redelivered after 20 ms, not 60 s. */
    CHECK(rift_test_wait_until(redelivered, &f, 5000));
    fx_close(&f);
}

RIFT_TEST(expire_refuses_what_is_not_pending) {
    fx f;
    CHECK_OK(fx_open(&f, 1));
    rift_error e = {0};
    CHECK_EQ_INT(rift_consumer_expire(f.c, 1, &e), RIFT_ERR_INVALID_ACK);
    CHECK_EQ_STR(e.text, "sequence is not pending acknowledgement");
    int a = 0;
    CHECK_OK(rift_push_add_member(f.p, &a, 10, NULL));
    CHECK(rift_push_pump(f.p, 1000, NULL) == 1);
    CHECK_OK(rift_consumer_expire(f.c, 1, NULL));
    CHECK_OK(rift_consumer_ack(f.c, 1, NULL));
    CHECK_EQ_INT(rift_consumer_expire(f.c, 1, NULL), RIFT_ERR_INVALID_ACK);
    fx_close(&f);
}
