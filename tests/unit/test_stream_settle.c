/*
 * test_stream_settle.c — NAK, TERM, in progress and max_deliver of the
 * store's consumers (include/rift/stream.h, src/store/consumer_settle.c):
 * redelivery after a NAK's delay, TERM never redelivered across reopen,
 * the max_deliver stop with its counted, durable drop and the advisory
 * watch, on a settable clock, memory and file storage alike.
 */
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"

typedef struct ctx {
    bool file;
    char *dir;
    rift_stream_settings s;
    rift_stream *st;
    test_vfs tv;
} ctx;

static void ctx_init(ctx *c, bool file) {
    memset(c, 0, sizeof(*c));
    c->file = file;
    rift_stream_settings_default(&c->s);
    test_vfs_init(&c->tv);
    c->s.vfs = &c->tv.vfs;
    atomic_store(&c->tv.now_ms, 10000000);
    if (file) {
        c->dir = rift_test_tmpdir();
        c->s.storage_path = c->dir;
    }
}

static int ctx_open(ctx *c) {
    c->st = NULL;
    return rift_stream_new(&c->st, &c->s, NULL);
}

static int ctx_reopen(ctx *c) {
    if (!c->file) {
        return 0;
    }
    rift_stream_del(c->st);
    return ctx_open(c);
}

static void ctx_done(ctx *c) {
    rift_stream_del(c->st);
    rift_test_rmdir(c->dir);
    test_vfs_free(&c->tv);
}

static void advance(ctx *c, uint64_t ms) {
    atomic_fetch_add(&c->tv.now_ms, ms);
}

static uint64_t pub(rift_stream *st, const char *payload) {
    rift_stored out = {0};
    int rc =
        rift_stream_publish(st, "a.b", 3, NULL, 0, (const uint8_t *)payload,
                            strlen(payload), &out, NULL);
    return rc == 0 ? out.sequence : 0;
}

static rift_consumer *open_c(ctx *c, uint64_t ack_wait, uint32_t max_deliver) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = ack_wait;
    cfg.max_deliver = max_deliver;
    rift_consumer *h = NULL;
    rift_error err = {0};
    if (rift_stream_consumer_open(c->st, "w", 1, &cfg, &h, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.text);
    }
    return h;
}

/* The sequences of one fetch (at most 8; count in *n), first delivery
 * count in *count. */
static int fetch(rift_consumer *h, uint64_t *seqs, uint32_t *count) {
    rift_batch b;
    if (rift_consumer_fetch(h, 8, &b, NULL) != 0) {
        return -1;
    }
    int n = (int)b.count;
    for (size_t i = 0; i < b.count && i < 8; i++) {
        seqs[i] = b.items[i].record.sequence;
        if (i == 0 && count != NULL) {
            *count = b.items[i].delivery_count;
        }
    }
    rift_batch_free(&b);
    return n;
}

static void nak_delay(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c));
    rift_consumer *h = open_c(&c, 30000, 0);
    CHECK(h != NULL);
    CHECK_EQ_U64(pub(c.st, "one"), 1);
    uint64_t seqs[8];
    uint32_t count = 0;
    CHECK_EQ_INT(fetch(h, seqs, &count), 1);
    /* NAK 0: at once, the delivery count goes on. */
    CHECK_OK(rift_consumer_nak(h, 1, 0, NULL));
    CHECK_EQ_INT(fetch(h, seqs, &count), 1);
    CHECK_EQ_U64(seqs[0], 1);
    CHECK_EQ_INT(count, 2);
    /* NAK with a delay: not before it, at it. */
    CHECK_OK(rift_consumer_nak(h, 1, 5000, NULL));
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    advance(&c, 4999);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    advance(&c, 1);
    CHECK_EQ_INT(fetch(h, seqs, &count), 1);
    CHECK_EQ_INT(count, 3);
    /* A delay longer than the ack wait holds as well. */
    CHECK_OK(rift_consumer_nak(h, 1, 60000, NULL));
    advance(&c, 30000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    advance(&c, 30000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    /* Errors. */
    rift_error err;
    CHECK_EQ_INT(rift_consumer_nak(h, 1, 3600001, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "nak delay must be 0..3600000 ms");
    CHECK_EQ_INT(rift_consumer_nak(h, 9, 0, &err), RIFT_ERR_INVALID_ACK);
    CHECK_EQ_STR(err.text, "sequence is not pending acknowledgement");
    CHECK_EQ_INT(rift_consumer_in_progress(h, 9, &err), RIFT_ERR_INVALID_ACK);
    bool done = false;
    CHECK_OK(rift_consumer_nak_async(h, 1, 0, &done, NULL, NULL, NULL));
    CHECK(done);
    rift_consumer_close(h);
    ctx_done(&c);
}

RIFT_TEST(nak_delay_memory) {
    nak_delay(false);
}

RIFT_TEST(nak_delay_file) {
    nak_delay(true);
}

static void in_progress(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c));
    rift_consumer *h = open_c(&c, 1000, 0);
    CHECK_EQ_U64(pub(c.st, "one"), 1);
    uint64_t seqs[8];
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    for (int i = 0; i < 5; i++) {
        advance(&c, 900);
        CHECK_OK(rift_consumer_in_progress(h, 1, NULL));
        CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    }
    advance(&c, 1000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    rift_consumer_close(h);
    ctx_done(&c);
}

RIFT_TEST(in_progress_restarts_ack_wait_memory) {
    in_progress(false);
}

RIFT_TEST(in_progress_restarts_ack_wait_file) {
    in_progress(true);
}

static void term_never(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c));
    rift_consumer *h = open_c(&c, 1000, 0);
    CHECK_EQ_U64(pub(c.st, "one"), 1);
    CHECK_EQ_U64(pub(c.st, "two"), 2);
    uint64_t seqs[8];
    CHECK_EQ_INT(fetch(h, seqs, NULL), 2);
    CHECK_OK(rift_consumer_term(h, 1, NULL));
    rift_error err;
    CHECK_EQ_INT(rift_consumer_term(h, 1, &err), RIFT_ERR_INVALID_ACK);
    CHECK_EQ_STR(err.text, "sequence is not pending acknowledgement");
    advance(&c, 5000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    CHECK_EQ_U64(seqs[0], 2);
    rift_consumer_info info;
    CHECK_OK(rift_consumer_get_info(h, &info, NULL));
    CHECK_EQ_U64(info.terminated, 1);
    CHECK_EQ_INT(info.pending, 1);
    rift_consumer_close(h);
    /* Across a reopen (file): still terminated, still counted; the other
     * delivery is due again. */
    CHECK_OK(ctx_reopen(&c));
    h = open_c(&c, 1000, 0);
    CHECK(h != NULL);
    advance(&c, 5000); /* memory: no recovery makes it due */
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    CHECK_EQ_U64(seqs[0], 2);
    CHECK_OK(rift_consumer_get_info(h, &info, NULL));
    CHECK_EQ_U64(info.terminated, 1);
    /* After a snapshot too. */
    if (file) {
        CHECK_OK(rift_stream_checkpoint(c.st, NULL));
        rift_consumer_close(h);
        CHECK_OK(ctx_reopen(&c));
        h = open_c(&c, 1000, 0);
        CHECK_OK(rift_consumer_get_info(h, &info, NULL));
        CHECK_EQ_U64(info.terminated, 1);
        CHECK_EQ_INT(info.pending, 1);
    }
    bool done = false;
    CHECK_OK(rift_consumer_term_async(h, 2, &done, NULL, NULL, NULL));
    rift_consumer_close(h);
    CHECK_OK(ctx_reopen(&c));
    h = open_c(&c, 1000, 0);
    advance(&c, 5000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    CHECK_OK(rift_consumer_get_info(h, &info, NULL));
    CHECK_EQ_U64(info.terminated, 2);
    rift_consumer_close(h);
    ctx_done(&c);
}

RIFT_TEST(term_never_redelivered_memory) {
    term_never(false);
}

RIFT_TEST(term_never_redelivered_across_reopen_file) {
    term_never(true);
}

typedef struct seen {
    int n;
    uint64_t seq;
    uint32_t deliveries;
    char consumer[64];
} seen;

static void on_advisory(void *arg, const rift_consumer_advisory *a) {
    seen *s = arg;
    s->n++;
    s->seq = a->sequence;
    s->deliveries = a->deliveries;
    const char *name = a->label != NULL ? a->label : a->consumer;
    size_t len = a->label != NULL ? a->label_len : a->consumer_len;
    snprintf(s->consumer, sizeof(s->consumer), "%.*s", (int)len, name);
}

static void max_deliver(bool file) {
    ctx c;
    ctx_init(&c, file);
    CHECK_OK(ctx_open(&c));
    seen s = {0};
    rift_stream_set_advisory_watch(c.st, on_advisory, &s);
    rift_consumer *h = open_c(&c, 1000, 2);
    CHECK(h != NULL);
    CHECK_EQ_U64(pub(c.st, "one"), 1);
    CHECK_EQ_U64(pub(c.st, "two"), 2);
    uint64_t seqs[8];
    uint32_t count;
    CHECK_EQ_INT(fetch(h, seqs, NULL), 2);
    CHECK_OK(rift_consumer_ack(h, 2, NULL));
    advance(&c, 1000);
    CHECK_EQ_INT(fetch(h, seqs, &count), 1);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(s.n, 0);
    advance(&c, 1000);
    /* The last allowed delivery expired: dropped, reported, counted. */
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    CHECK_EQ_INT(s.n, 1);
    CHECK_EQ_U64(s.seq, 1);
    CHECK_EQ_INT(s.deliveries, 2);
    CHECK_EQ_STR(s.consumer, "w");
    rift_consumer_info info;
    CHECK_OK(rift_consumer_get_info(h, &info, NULL));
    CHECK_EQ_U64(info.max_delivered, 1);
    CHECK_EQ_INT(info.pending, 0);
    CHECK_EQ_INT(info.config.max_deliver, 2);
    rift_error err;
    CHECK_EQ_INT(rift_consumer_ack(h, 1, &err), RIFT_ERR_INVALID_ACK);
    /* A label names the consumer in its advisories. */
    CHECK_OK(rift_consumer_set_label(h, "mine", 4, NULL));
    CHECK_EQ_U64(pub(c.st, "three"), 3);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    CHECK_OK(rift_consumer_nak(h, 3, 0, NULL));
    CHECK_EQ_INT(fetch(h, seqs, NULL), 1);
    CHECK_OK(rift_consumer_nak(h, 3, 0, NULL)); /* NAKs count as deliveries */
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    CHECK_EQ_INT(s.n, 2);
    CHECK_EQ_STR(s.consumer, "mine");
    rift_consumer_close(h);
    /* Durable: the drop and its count survive a reopen; the reopen with
     * another max_deliver is refused. */
    CHECK_OK(ctx_reopen(&c));
    rift_stream_set_advisory_watch(c.st, on_advisory, &s);
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = 1000;
    cfg.max_deliver = 3;
    rift_consumer *other = NULL;
    CHECK_EQ_INT(rift_stream_consumer_open(c.st, "w", 1, &cfg, &other, &err),
                 RIFT_ERR_INVALID_CONFIG);
    h = open_c(&c, 1000, 2);
    CHECK(h != NULL);
    advance(&c, 5000);
    CHECK_EQ_INT(fetch(h, seqs, NULL), 0);
    CHECK_OK(rift_consumer_get_info(h, &info, NULL));
    CHECK_EQ_U64(info.max_delivered, 2);
    CHECK_EQ_INT(info.config.max_deliver, 2);
    CHECK_EQ_INT(s.n, 2);
    cfg.max_deliver = 2;
    rift_consumer_config stored = info.config;
    CHECK(rift_consumer_config_diff(&stored, &cfg, false) == NULL);
    cfg.max_deliver = 0;
    CHECK_EQ_STR(rift_consumer_config_diff(&stored, &cfg, false),
                 "max_deliver");
    rift_consumer_close(h);
    ctx_done(&c);
}

RIFT_TEST(max_deliver_stops_and_advises_memory) {
    max_deliver(false);
}

RIFT_TEST(max_deliver_stops_and_advises_file) {
    max_deliver(true);
}
