/*
 * test_stream_lagging.c — a consumer that falls behind retention survives
 * a crash (unit tests of the store layer). Retention trims the pending
 * deliveries of a lagging consumer in memory only; a process that dies
 * without a clean close (no snapshot) leaves a state log whose FETCH
 * events add up to far more pending deliveries than the consumer ever
 * had. Reopening must give back exactly the state before the crash, and
 * `rift store verify` must pass.
 */
#include "test.h"
#include "store_testutil.h"

#include "rift/stream.h"

#include <sys/wait.h>

#define MAX_REPORTED 1024

/* What the child saw just before it died. */
typedef struct lag_report {
    uint64_t pending;
    uint64_t next_sequence;
    uint64_t last_sequence;
    uint64_t npend;
    uint64_t pend[MAX_REPORTED];
} lag_report;

typedef struct lag_case {
    uint64_t max_messages;
    uint32_t max_ack_pending;
    size_t fetch;
    int rounds;
} lag_case;

static rift_stream *open_lagging(const char *dir, uint64_t max_messages) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.max_messages = max_messages;
    s.sync_on_write = false;
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.text);
        return NULL;
    }
    return st;
}

static rift_consumer *open_consumer(rift_stream *st, const lag_case *lc) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = lc->max_ack_pending;
    rift_consumer *c = NULL;
    rift_error err = {0};
    if (rift_stream_consumer_open(st, "lag", 3, &cfg, &c, &err) != 0) {
        fprintf(stderr, "consumer: %s\n", err.text);
        return NULL;
    }
    return c;
}

/* Publishes and fetches without acking, then dies without closing the
 * stream (as after kill -9: the page cache keeps what was written). */
static void child_main(const char *dir, const lag_case *lc, int fd) {
    rift_stream *st = open_lagging(dir, lc->max_messages);
    rift_consumer *c = st ? open_consumer(st, lc) : NULL;
    if (c == NULL) {
        _exit(2);
    }
    static lag_report r;
    for (int round = 0; round < lc->rounds; round++) {
        for (uint64_t i = 0; i < lc->max_messages; i++) {
            if (rift_stream_publish(st, "lag.x", 5, NULL, 0,
                                    (const uint8_t *)"payload", 7, NULL,
                                    NULL) != 0) {
                _exit(3);
            }
        }
        rift_batch b = {0};
        if (rift_consumer_fetch(c, lc->fetch, &b, NULL) != 0) {
            _exit(4);
        }
        r.npend = 0;
        for (size_t i = 0; i < b.count && r.npend < MAX_REPORTED; i++) {
            r.pend[r.npend++] = b.items[i].record.sequence;
        }
        rift_batch_free(&b);
    }
    rift_consumer_info ci;
    rift_stream_info si;
    if (rift_consumer_get_info(c, &ci, NULL) != 0 ||
        rift_stream_get_info(st, &si, NULL) != 0) {
        _exit(5);
    }
    r.pending = ci.pending;
    r.next_sequence = ci.next_sequence;
    r.last_sequence = si.last_sequence;
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r)) {
        _exit(6);
    }
    _exit(0);
}

static void run_case(const lag_case *lc) {
    char *dir = rift_test_tmpdir();
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_main(dir, lc, fds[1]);
    }
    close(fds[1]);
    static lag_report r;
    size_t got = 0;
    while (got < sizeof(r)) {
        ssize_t n = read(fds[0], (char *)&r + got, sizeof(r) - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
              status);
    CHECK_EQ_U64(got, sizeof(r));
    /* The child's consumer lagged: all it holds is its last fetch. */
    CHECK_EQ_U64(r.pending, r.npend);

    rift_store_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "verify: %s", err.text);

    rift_stream *st = open_lagging(dir, lc->max_messages);
    CHECK(st != NULL);
    if (st == NULL) {
        rift_test_rmdir(dir);
        return;
    }
    rift_stream_info si;
    CHECK_OK(rift_stream_get_info(st, &si, NULL));
    CHECK_EQ_U64(si.last_sequence, r.last_sequence);
    CHECK_EQ_U64(si.messages, lc->max_messages);
    rift_stream_info_free(&si);
    rift_consumer *c = open_consumer(st, lc);
    CHECK(c != NULL);
    rift_consumer_info ci;
    CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
    CHECK_EQ_U64(ci.pending, r.pending);
    CHECK_EQ_U64(ci.next_sequence, r.next_sequence);
    /* The pending deliveries come back (eligible at once after a
     * restart), exactly those, and nothing new: the cursor is where it
     * was. */
    rift_batch b = {0};
    CHECK_OK(rift_consumer_fetch(c, 65536, &b, NULL));
    CHECK_EQ_U64(b.count, r.npend);
    for (size_t i = 0; i < b.count && i < r.npend; i++) {
        CHECK_EQ_U64(b.items[i].record.sequence, r.pend[i]);
        CHECK_EQ_U64(b.items[i].delivery_count, 2);
    }
    rift_batch_free(&b);
    rift_consumer_close(c);
    rift_stream_del(st);
    rift_test_rmdir(dir);
}

/* The reproduction: max_ack_pending 128, retention evicts every
 * round's deliveries; the log's FETCH events add up past 65,536. */
RIFT_TEST(lagging_consumer_reopens_after_crash) {
    lag_case lc = {.max_messages = 200,
                   .max_ack_pending = 128,
                   .fetch = 128,
                   .rounds = 530};
    run_case(&lc);
}

/* The largest max_ack_pending: each round delivers the whole round. */
RIFT_TEST(lagging_consumer_max_ack_pending_reopens_after_crash) {
    lag_case lc = {.max_messages = 1000,
                   .max_ack_pending = 65536,
                   .fetch = 1000,
                   .rounds = 70};
    run_case(&lc);
}
