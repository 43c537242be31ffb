/*
 * test_store_crash_settle.c — kill -9 during a stream of NAKs, TERMs and
 * acks (fault tests of the store layer). A child process publishes,
 * fetches and settles each delivery by ack, TERM, NAK or leaving it
 * pending, telling the parent through a pipe what it is about to do and
 * what became durable; the parent SIGKILLs it at a random moment, reopens
 * the directory and drains the consumer: no record reported acked or
 * terminated is delivered again, and every stored record whose ack or
 * TERM was never even begun is delivered (nothing unacknowledged is lost).
 * The directory carries over from round to round.
 */
#include "test.h"

#include "rift/stream.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS  12
#define MAX_SEQ 200000

/* 'R' ready, 'P' stored, 'a'/'t' about to ack/term, 'A'/'T' durable. */
typedef struct report {
    uint32_t kind;
    uint32_t pad;
    uint64_t seq;
} report;

static void send_report(int fd, uint32_t kind, uint64_t seq) {
    report r = {.kind = kind, .seq = seq};
    ssize_t n;
    do {
        n = write(fd, &r, sizeof(r));
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(r)) {
        _exit(3);
    }
}

static rift_stream *open_dir(const char *dir) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.state_snapshot_bytes = 4096; /* snapshots happen during the rounds */
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.text);
        return NULL;
    }
    return st;
}

static rift_consumer *open_consumer(rift_stream *st) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.ack_wait_ms = 1;
    cfg.max_ack_pending = 64;
    rift_consumer *c = NULL;
    return rift_stream_consumer_open(st, "crash", 5, &cfg, &c, NULL) == 0
               ? c
               : NULL;
}

static _Noreturn void child_main(const char *dir, int fd) {
    rift_stream *st = open_dir(dir);
    rift_consumer *c = st != NULL ? open_consumer(st) : NULL;
    if (c == NULL) {
        _exit(5);
    }
    send_report(fd, 'R', 0);
    for (;;) {
        rift_stored out;
        if (rift_stream_publish(st, "crash.rec", 9, NULL, 0,
                                (const uint8_t *)"x", 1, &out, NULL) != 0) {
            _exit(4);
        }
        send_report(fd, 'P', out.sequence);
        rift_batch b;
        if (rift_consumer_fetch(c, 8, &b, NULL) != 0) {
            _exit(6);
        }
        for (size_t i = 0; i < b.count; i++) {
            uint64_t seq = b.items[i].record.sequence;
            uint32_t k = (uint32_t)(seq + b.items[i].delivery_count) % 4;
            int rc = 0;
            if (k == 0) {
                send_report(fd, 'a', seq);
                rc = rift_consumer_ack(c, seq, NULL);
                send_report(fd, 'A', seq);
            } else if (k == 1) {
                send_report(fd, 't', seq);
                rc = rift_consumer_term(c, seq, NULL);
                send_report(fd, 'T', seq);
            } else if (k == 2) {
                rc = rift_consumer_nak(c, seq, 0, NULL);
            } /* else: left pending, redelivered after the ack wait */
            if (rc != 0) {
                _exit(7);
            }
        }
        rift_batch_free(&b);
    }
}

typedef struct truth {
    uint8_t *state; /* per sequence: 0 none, 1 stored, 2 begun, 3 settled */
    uint64_t stored, settled;
} truth;

static void absorb(truth *t, const report *r) {
    if (r->seq >= MAX_SEQ) {
        return;
    }
    switch (r->kind) {
    case 'P':
        t->state[r->seq] = 1;
        t->stored++;
        break;
    case 'a':
    case 't':
        t->state[r->seq] = 2;
        break;
    case 'A':
    case 'T':
        t->state[r->seq] = 3;
        t->settled++;
        break;
    default:
        break;
    }
}

/* Reopens |dir| and drains the consumer, acking everything it delivers. */
static void check_dir(const char *dir, truth *t) {
    rift_stream *st = open_dir(dir);
    CHECK(st != NULL);
    rift_consumer *c = open_consumer(st);
    CHECK(c != NULL);
    uint8_t *seen = calloc(MAX_SEQ, 1);
    for (int idle = 0; idle < 3;) {
        rift_batch b;
        CHECK_OK(rift_consumer_fetch(c, 256, &b, NULL));
        for (size_t i = 0; i < b.count; i++) {
            uint64_t seq = b.items[i].record.sequence;
            CHECK(seq < MAX_SEQ);
            CHECK_MSG(t->state[seq] != 3,
                      "sequence %llu was acked or terminated, and delivered "
                      "again",
                      (unsigned long long)seq);
            seen[seq] = 1;
            CHECK_OK(rift_consumer_ack(c, seq, NULL));
            t->state[seq] = 3;
        }
        size_t got = b.count;
        idle = got == 0 ? idle + 1 : 0;
        rift_batch_free(&b);
        rift_consumer_info info;
        CHECK_OK(rift_consumer_get_info(c, &info, NULL));
        if (got == 0 && info.pending > 0) {
            idle = 0; /* due after the 1 ms ack wait */
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    for (uint64_t s = 1; s < MAX_SEQ; s++) {
        CHECK_MSG(t->state[s] != 1 || seen[s],
                  "sequence %llu was stored, never settled, and is lost",
                  (unsigned long long)s);
        if (t->state[s] == 2) {
            t->state[s] = 3; /* settled by the child or by the drain */
        }
    }
    free(seen);
    rift_consumer_close(c);
    rift_stream_del(st);
}

RIFT_TEST(sigkill_during_nak_term_ack) {
    char *dir = rift_test_tmpdir();
    truth t = {.state = calloc(MAX_SEQ, 1)};
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    fprintf(stderr, "seed %llu\n", (unsigned long long)seed);
    int rounds = 0;
    for (int round = 0; round < ROUNDS && !rift_test_failed(); round++) {
        int fds[2];
        CHECK_OK(pipe(fds));
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_main(dir, fds[1]);
        }
        close(fds[1]);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t target = (seed >> 33) % 400;
        uint64_t n = 0;
        bool ready = false;
        report r;
        while (!ready || n < target) {
            if (read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
                break; /* the child died on its own */
            }
            ready = ready || r.kind == 'R';
            absorb(&t, &r);
            n++;
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "child exited on its own with status %d", status);
        while (read(fds[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
            absorb(&t, &r);
        }
        close(fds[0]);
        check_dir(dir, &t);
        rounds++;
    }
    fprintf(stderr, "%d rounds, %llu stored, %llu acks and terms reported\n",
            rounds, (unsigned long long)t.stored,
            (unsigned long long)t.settled);
    CHECK(t.settled > 0 || rift_test_failed());
    free(t.state);
    rift_test_rmdir(dir);
}
