/*
 * test_store_crash.c — kill -9 at random points (fault tests of the store
 * layer). A child process publishes from several threads and fetches and
 * acks from another, reporting every STORED sequence and every
 * acknowledged ack to the parent through a pipe; the parent SIGKILLs it at
 * a random moment, reopens the directory and checks that every reported
 * record is present and intact, that nothing partial or foreign shows,
 * and that no reported ack is delivered again. The same directory carries
 * over from round to round, so recovery also runs on directories recovery
 * produced. It runs with sync_on_write and without: a process crash must
 * not lose anything acknowledged either way (only power loss may, when
 * unsynced), since an unsynced stream acknowledges after write().
 */
#include "test.h"

#include "rift/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS          52
#define ROUNDS_UNSYNCED 40
#define PUBLISHERS      3
#define MAX_SEQ         400000

/* A report from the child: 'P' (stored) or 'A' (acked), the sequence, and
 * for 'P' the publisher and its counter. 24 bytes < PIPE_BUF: atomic. */
typedef struct report {
    uint32_t kind;
    uint32_t thread;
    uint64_t seq;
    uint64_t counter;
} report;

/* Payload: thread, counter, then bytes derived from both; 16..400 long. */
static size_t make_payload(uint32_t thread, uint64_t counter, uint8_t *out) {
    size_t len = 16 + (size_t)((counter * 37 + thread * 11) % 385);
    memcpy(out, &thread, 4);
    memcpy(out + 4, &counter, 8);
    uint32_t l32 = (uint32_t)len;
    memcpy(out + 12, &l32, 4);
    for (size_t i = 16; i < len; i++) {
        out[i] = (uint8_t)(counter * 7 + thread * 13 + i * 3);
    }
    return len;
}

static bool payload_ok(const uint8_t *p, size_t len, uint32_t *thread,
                       uint64_t *counter) {
    if (len < 16) {
        return false;
    }
    memcpy(thread, p, 4);
    memcpy(counter, p + 4, 8);
    uint8_t want[512];
    size_t wl = make_payload(*thread, *counter, want);
    return wl == len && memcmp(want, p, len) == 0;
}

/* ---- The child ---- */

typedef struct child_ctx {
    rift_stream *st;
    int fd;
    uint32_t thread;
    uint64_t start_counter;
} child_ctx;

static void send_report(int fd, const report *r) {
    ssize_t n;
    do {
        n = write(fd, r, sizeof(*r));
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(*r)) {
        _exit(3);
    }
}

static void *child_publisher(void *p) {
    child_ctx *c = p;
    uint8_t buf[512];
    for (uint64_t k = c->start_counter;; k++) {
        size_t len = make_payload(c->thread, k, buf);
        rift_stored out;
        if (rift_stream_publish(c->st, "crash.rec", 9, NULL, 0, buf, len, &out,
                                NULL) != 0) {
            _exit(4);
        }
        report r = {.kind = 'P',
                    .thread = c->thread,
                    .seq = out.sequence,
                    .counter = k};
        send_report(c->fd, &r);
    }
    return NULL;
}

static void *child_consumer(void *p) {
    child_ctx *c = p;
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.max_ack_pending = 64;
    rift_consumer *cons = NULL;
    if (rift_stream_consumer_open(c->st, "crash", 5, &cfg, &cons, NULL) != 0) {
        _exit(5);
    }
    for (;;) {
        rift_batch b = {0};
        if (rift_consumer_fetch(cons, 16, &b, NULL) != 0) {
            _exit(6);
        }
        for (size_t i = 0; i < b.count; i++) {
            uint64_t seq = b.items[i].record.sequence;
            /* Every third record stays pending until it is redelivered
             * (after the next crash). */
            if (seq % 3 == 0 && b.items[i].delivery_count == 1) {
                continue;
            }
            if (rift_consumer_ack(cons, seq, NULL) != 0) {
                _exit(7);
            }
            report r = {.kind = 'A', .seq = seq};
            send_report(c->fd, &r);
        }
        if (b.count == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
        rift_batch_free(&b);
    }
    return NULL;
}

static void child_main(const char *dir, int fd, uint64_t counter_base,
                       bool sync) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.sync_on_write = sync;
    s.segment_bytes = 32 * 1024;
    s.cache_bytes = 4096;
    s.state_snapshot_bytes = 8192;
    s.max_messages = MAX_SEQ;
    rift_stream *st = NULL;
    if (rift_stream_new(&st, &s, NULL) != 0) {
        _exit(2);
    }
    report ready = {.kind = 'R'};
    send_report(fd, &ready);
    child_ctx ctx[PUBLISHERS + 1];
    pthread_t th[PUBLISHERS + 1];
    for (uint32_t i = 0; i <= PUBLISHERS; i++) {
        ctx[i] = (child_ctx){
            .st = st, .fd = fd, .thread = i, .start_counter = counter_base};
        pthread_create(&th[i], NULL,
                       i == PUBLISHERS ? child_consumer : child_publisher,
                       &ctx[i]);
    }
    for (;;) {
        pause();
    }
}

/* ---- The parent ---- */

typedef struct truth {
    /* For each reported sequence: thread + 1 (0 = not reported) and the
     * counter. */
    uint32_t *thread;
    uint64_t *counter;
    char *acked;
    uint64_t max_reported;
    size_t stored;
    size_t acks;
} truth;

static void absorb(truth *t, const report *r) {
    if (r->seq == 0 || r->seq >= MAX_SEQ) {
        return;
    }
    if (r->kind == 'P') {
        t->thread[r->seq] = r->thread + 1;
        t->counter[r->seq] = r->counter;
        if (r->seq > t->max_reported) {
            t->max_reported = r->seq;
        }
        t->stored++;
    } else if (r->kind == 'A') {
        t->acked[r->seq] = 1;
        t->acks++;
    }
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The checks on the reopened stream (a failed CHECK returns early; the
 * caller closes the stream). */
static void check_stream(rift_stream *st, truth *t) {
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, NULL));
    uint64_t last = info.last_sequence;
    rift_stream_info_free(&info);
    CHECK_MSG(last >= t->max_reported, "last %llu < reported %llu",
              (unsigned long long)last, (unsigned long long)t->max_reported);
    /* Every record present is intact; every reported one is there with
     * the publisher and counter that were reported. */
    uint64_t seq = 1;
    while (seq <= last) {
        rift_batch b = {0};
        CHECK_OK(rift_stream_replay(st, seq, 4096, &b, NULL));
        CHECK(b.count > 0);
        for (size_t i = 0; i < b.count; i++) {
            const rift_record *r = &b.items[i].record;
            CHECK_EQ_U64(r->sequence, seq);
            uint32_t th;
            uint64_t ctr;
            CHECK_MSG(payload_ok(r->payload, r->payload_len, &th, &ctr),
                      "record %llu damaged", (unsigned long long)seq);
            CHECK_EQ_STR(r->subject, "crash.rec");
            if (t->thread[seq] != 0) {
                CHECK_EQ_INT(t->thread[seq], th + 1);
                CHECK_EQ_U64(t->counter[seq], ctr);
            }
            seq++;
        }
        rift_batch_free(&b);
    }
    /* No reported ack comes back. */
    rift_consumer *c = NULL;
    if (rift_stream_consumer_get(st, "crash", 5, &c, NULL) == 0) {
        for (;;) {
            rift_batch b = {0};
            CHECK_OK(rift_consumer_fetch(c, 65536, &b, NULL));
            size_t n = b.count;
            for (size_t i = 0; i < b.count; i++) {
                uint64_t q = b.items[i].record.sequence;
                CHECK_MSG(q >= MAX_SEQ || !t->acked[q],
                          "acked %llu delivered again", (unsigned long long)q);
            }
            rift_batch_free(&b);
            if (n == 0) {
                break;
            }
            /* Fetched now; a reopen makes them eligible again. */
            rift_consumer_info ci;
            CHECK_OK(rift_consumer_get_info(c, &ci, NULL));
            if (ci.next_sequence > last) {
                break;
            }
        }
        rift_consumer_close(c);
    } else {
        CHECK(t->acks == 0);
    }
}

static void check_dir(const char *dir, truth *t) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.max_messages = MAX_SEQ;
    rift_stream *st = NULL;
    rift_error err = {0};
    CHECK_MSG(rift_stream_new(&st, &s, &err) == 0, "reopen: %s", err.text);
    check_stream(st, t);
    rift_stream_del(st);
}

static void sigkill_rounds(bool sync, int nrounds) {
    char *dir = rift_test_tmpdir();
    truth t = {0};
    t.thread = calloc(MAX_SEQ, sizeof(uint32_t));
    t.counter = calloc(MAX_SEQ, sizeof(uint64_t));
    t.acked = calloc(MAX_SEQ, 1);
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    fprintf(stderr, "seed %llu\n", (unsigned long long)seed);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rounds = 0;
    for (int round = 0; round < nrounds; round++) {
        int fds[2];
        CHECK_OK(pipe(fds));
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_main(dir, fds[1], (uint64_t)round << 32, sync);
        }
        close(fds[1]);
        /* Kill after a random number of reports (0 = right after open). */
        uint64_t target = rnd(&seed) % 300;
        uint64_t seen = 0;
        bool ready = false;
        report r;
        while (!ready || seen < target) {
            ssize_t n = read(fds[0], &r, sizeof(r));
            if (n != (ssize_t)sizeof(r)) {
                break; /* child died on its own */
            }
            if (r.kind == 'R') {
                ready = true;
                continue;
            }
            absorb(&t, &r);
            seen++;
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "child exited on its own with status %d", status);
        /* Reports written before the kill are acknowledged operations. */
        while (read(fds[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
            absorb(&t, &r);
        }
        close(fds[0]);
        check_dir(dir, &t);
        if (rift_test_failed()) {
            fprintf(stderr, "round %d\n", round);
            break;
        }
        rounds++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "%s: %d rounds, %zu stored and %zu acks reported, %.1f s\n",
            sync ? "synced" : "unsynced", rounds, t.stored, t.acks, secs);
    CHECK(rounds == nrounds || rift_test_failed());
    rift_store_report rep;
    rift_error err = {0};
    CHECK_MSG(rift_store_verify(dir, &rep, &err) == 0, "%s", err.text);
    free(t.thread);
    free(t.counter);
    free(t.acked);
    rift_test_rmdir(dir);
}

RIFT_TEST(sigkill_rounds) {
    sigkill_rounds(true, ROUNDS);
}

RIFT_TEST(sigkill_rounds_unsynced) {
    sigkill_rounds(false, ROUNDS_UNSYNCED);
}
