/*
 * test_server_corrupt.c — a record that went bad on disk, seen over real
 * QUIC (integration tests of the server and the store): consumers are
 * never wedged on it, they move past it and get every intact record; no
 * text that reaches a client names a server path; the server log names
 * the file and offset once, however many fetches meet the record.
 * docs/storage-format.md "Reading", docs/riftd.md "Corrupt records".
 */
// labels: threads
#include "rawcli.h"
#include "store_testutil.h"

#include "rift/stream.h"

#include <stdlib.h>

/* ---- Frames (docs/protocol-v1.md §2.9) ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    memcpy(p + 2, s, n);
    return 2 + n;
}

static size_t put_be(uint8_t *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    }
    return (size_t)bytes;
}

static size_t finish(uint8_t *buf, size_t n) {
    put_be(buf, n - 4, 4);
    return n;
}

static uint64_t get_be(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static rc_stream *send_one(rawcli *c, const uint8_t *buf, size_t n) {
    rc_stream *s = rc_open(c);
    if (s != NULL && !rc_send(s, buf, n, true)) {
        return NULL;
    }
    return s;
}

static bool publish(rawcli *c, const char *payload) {
    uint8_t buf[4096];
    size_t n = 4;
    buf[n++] = 10;
    n += put_str(buf + n, "big");
    n += put_str(buf + n, "game.big.rec");
    n += put_str(buf + n, "");
    memcpy(buf + n, payload, strlen(payload));
    n = finish(buf, n + strlen(payload));
    rc_stream *s = send_one(c, buf, n);
    size_t len;
    const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
    return b != NULL && b[0] == 11 && rc_expect_end(s, 5000);
}

static bool consumer_open(rawcli *c, const char *name) {
    uint8_t buf[256];
    size_t n = 4;
    buf[n++] = 12;
    n += put_str(buf + n, "big");
    n += put_str(buf + n, name);
    n += put_str(buf + n, "game.big.>");
    n += put_be(buf + n, 1, 8);
    n += put_be(buf + n, 30000, 4); /* ack wait, ms */
    n += put_be(buf + n, 128, 4);
    rc_stream *s = send_one(c, buf, finish(buf, n));
    return s != NULL && rc_expect_ok(s, 5000) && rc_expect_end(s, 5000);
}

typedef struct got {
    uint64_t seq[16];
    uint32_t count[16];
    size_t n;
    char error[512]; /* an ERROR frame's text */
} got;

/* CONSUMER_FETCH: the DELIVERY frames until OK (true), or an ERROR. */
static bool fetch(rawcli *c, const char *name, got *g) {
    uint8_t buf[256];
    size_t n = 4;
    buf[n++] = 13;
    n += put_str(buf + n, "big");
    n += put_str(buf + n, name);
    n += put_be(buf + n, 16, 4);
    rc_stream *s = send_one(c, buf, finish(buf, n));
    memset(g, 0, sizeof(*g));
    for (;;) {
        size_t len;
        const uint8_t *b = s ? rc_frame(s, 5000, &len) : NULL;
        if (b != NULL && len == 1 && b[0] == 2) {
            return rc_expect_end(s, 5000);
        }
        if (b != NULL && b[0] == 3 && len > 5) {
            snprintf(g->error, sizeof(g->error), "%.*s", (int)(len - 5),
                     (const char *)b + 5);
            return false;
        }
        if (b == NULL || b[0] != 14 || g->n == 16) {
            return false;
        }
        g->seq[g->n] = get_be(b + 1, 8);
        g->count[g->n] = (uint32_t)get_be(b + 17, 4);
        g->n++;
    }
}

/* ---- The server's log (stderr) in a file ---- */

typedef struct log_capture {
    char path[4300];
    int saved;
} log_capture;

static void capture_start(log_capture *lc, const char *dir) {
    snprintf(lc->path, sizeof(lc->path), "%s/log.txt", dir);
    int fd = open(lc->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    lc->saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* Restores stderr; returns how many log lines contain |needle| (the
 * whole log in |text|). */
static int capture_stop(log_capture *lc, const char *needle, char *text,
                        size_t cap) {
    dup2(lc->saved, STDERR_FILENO);
    close(lc->saved);
    FILE *f = fopen(lc->path, "r");
    text[0] = '\0';
    size_t used = 0;
    int hits = 0;
    char line[8192];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, needle) != NULL) {
            hits++;
        }
        size_t l = strlen(line);
        if (used + l + 1 < cap) {
            memcpy(text + used, line, l + 1);
            used += l;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return hits;
}

/* ---- The test ---- */

/* 3,000 bytes: with 4 KiB segments every record has a segment of its
 * own, so a read of record 3 is never served by the read-ahead of an
 * earlier one. */
static char payload[3001];

RIFT_TEST(corrupt_record_is_skipped_and_logged_once) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    test_vfs tv;
    test_vfs_init(&tv);
    atomic_store(&tv.now_ms, 1700000000000ull);
    char dir[4300];
    snprintf(dir, sizeof(dir), "%s/streams/big", f.tmp);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subjects[] = {"game.big.>"};
    ss.subjects = subjects;
    ss.subjects_count = 1;
    ss.storage_path = dir;
    ss.cache_bytes = 0; /* every fetch reads the segment back */
    ss.segment_bytes = 4096;
    memset(payload, 'p', sizeof(payload) - 1);
    ss.vfs = &tv.vfs;
    rift_stream *st = NULL;
    rift_error err = {0};
    CHECK_MSG(rift_stream_new(&st, &ss, &err) == 0, "open: %s", err.text);
    rift_server_stream list[1] = {{"big", 3, st}};
    f.settings.streams = list;
    f.settings.stream_count = 1;
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);

    for (int i = 0; i < 5; i++) {
        CHECK(publish(c, payload));
    }
    got g;
    log_capture lc;
    capture_start(&lc, f.tmp);
    /* A read error is not skipped (it may pass): the fetch fails with a
     * text naming the record, not the file, logged once for the retries;
     * once reads work again the record is delivered. */
    CHECK(consumer_open(c, "later"));
    atomic_store(&tv.fail_reads, EIO);
    got e1, e2;
    bool failed = !fetch(c, "later", &e1) && !fetch(c, "later", &e2);
    atomic_store(&tv.fail_reads, 0);
    bool recovered = fetch(c, "later", &g) && g.n == 5 && g.seq[0] == 1;
    /* "early" has all five pending before the damage. */
    CHECK(consumer_open(c, "early"));
    CHECK(fetch(c, "early", &g));
    CHECK_EQ_U64(g.n, 5);

    /* Flip a payload byte of record 3 (after the 32-byte segment header
     * and the record's 16-byte head and 12-byte subject). */
    char seg[4400];
    snprintf(seg, sizeof(seg), "%s/00000000000000000003.seg", dir);
    CHECK(test_flip(seg, 32 + 16 + 12 + 3) == 0);

    /* Two new consumers, twice each: every intact record, in order, and
     * no error; the cursor moves past the bad one. */
    const char *names[] = {"a", "b"};
    bool clean = true;
    for (int k = 0; k < 2; k++) {
        clean = clean && consumer_open(c, names[k]);
        clean = clean && fetch(c, names[k], &g) && g.n == 4 && g.seq[0] == 1 &&
                g.seq[1] == 2 && g.seq[2] == 4 && g.seq[3] == 5;
        clean = clean && fetch(c, names[k], &g) && g.n == 0;
    }
    /* "early" had record 3 pending: after the ack wait the intact ones
     * are redelivered and the bad one leaves the pending set. */
    atomic_store(&tv.now_ms, 1700000000000ull + 31000);
    bool redelivered =
        fetch(c, "early", &g) && g.n == 4 && g.seq[2] == 4 && g.count[2] == 2;
    /* Pending, all consumers: a, b and early 4 each (early's record 3
     * left the set), later 5 (read errors skip nothing). The server
     * scopes consumer names, so go through the stream's list. */
    uint64_t pending = 0;
    rift_stream_info si;
    bool info = rift_stream_get_info(st, &si, NULL) == 0;
    for (size_t i = 0; info && i < si.consumer_count; i++) {
        rift_consumer *cons = NULL;
        rift_consumer_info ci;
        const char *nm = si.consumer_names[i];
        if (rift_stream_consumer_get(st, nm, strlen(nm), &cons, NULL) == 0 &&
            rift_consumer_get_info(cons, &ci, NULL) == 0) {
            pending += ci.pending;
        }
        rift_consumer_close(cons);
    }
    if (info) {
        rift_stream_info_free(&si);
    }
    char text[65536];
    int hits = capture_stop(&lc, "record 3 is corrupt", text, sizeof(text));
    int read_hits = 0;
    for (const char *p = text; (p = strstr(p, "reading record 1 ")) != NULL;
         p++) {
        read_hits++;
    }

    CHECK_MSG(failed, "fetch with failing reads: %s", e1.error);
    /* No server path ("Input/output error" has a slash of its own). */
    for (int k = 0; k < 2; k++) {
        const char *t = k ? e2.error : e1.error;
        CHECK_MSG(strstr(t, f.tmp) == NULL && strstr(t, ".seg") == NULL &&
                      strstr(t, "record 1") != NULL,
                  "remote text: %s", t);
    }
    CHECK_MSG(read_hits == 1, "read error logged %d times\n%s", read_hits,
              text);
    CHECK(recovered);

    CHECK_MSG(clean, "fetch: %s n=%zu %llu %llu %llu", g.error, g.n,
              (unsigned long long)g.seq[0], (unsigned long long)g.seq[1],
              (unsigned long long)g.seq[2]);
    CHECK_MSG(redelivered, "redelivery: n=%zu %s", g.n, g.error);
    CHECK_EQ_U64(pending, 17);
    /* Once, with the file and offset, though five fetches met it. */
    CHECK_MSG(hits == 1, "log lines naming the record: %d\n%s", hits, text);
    CHECK_MSG(strstr(text, seg) != NULL, "log: %s", text);
    CHECK(strstr(text, "at offset") != NULL);

    /* A control client's replay skips it the same way. */
    rift_batch b = {0};
    CHECK_OK(rift_stream_replay(st, 1, 16, &b, NULL));
    CHECK_EQ_U64(b.count, 4);
    rift_batch_free(&b);

    rc_free(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(st);
    fix_fini(&f);
    test_vfs_free(&tv);
}
