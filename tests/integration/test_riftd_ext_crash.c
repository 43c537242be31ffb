/*
 * test_riftd_ext_crash.c — riftd killed with SIGKILL while a principal
 * without control rights settles its consumer's deliveries through the
 * extensions (integration tests): acks, TERM (opcode 24), NAK (23, at
 * once and with a delay of an hour) and in progress (25), a batch of them
 * in flight at a time, on a file stream with sync_on_write. After a
 * restart on the same directory the consumer gives back exactly what was
 * not settled for good: no record whose ack or TERM was answered OK comes
 * again, and every record no ack or TERM was even sent for comes again —
 * NAKed, in progress, never fetched or fetched by a call the kill cut —
 * once, with a delivery count above any it had before the kill
 * (docs/protocol-v1.md §4.5, §4.6 and "Extensions").
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define NREC  2000
#define BATCH 32
/* The kill comes once this many settle calls were answered OK: at the
 * first answer of a batch (the rest of it in flight, most of it answered
 * by the same sync) or right after a batch was sent (none answered). */
#define KILL_AFTER 800

typedef enum kill_at {
    KILL_AT_ANSWER,
    KILL_AT_SEND
} kill_at;
#define STREAM   "orders"
#define CONSUMER "billing"

static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'orders.>' }, subscribe = { 'orders.>' } },\n"
    "    },\n"
    "    streams = {\n"
    "      orders = { subjects = { 'orders.>' }, storage_path = "
    "'data/orders',\n"
    "                 sync_on_write = true },\n"
    "    },\n"
    "  },\n"
    "}\n";

/* What the settling thread does with one delivery of |seq|. */
typedef enum action {
    ACT_ACK,
    ACT_TERM,
    ACT_NAK,       /* at once: it comes back before the kill, then ack */
    ACT_NAK_LATER, /* an hour: only the restart makes it due */
    ACT_PROGRESS,  /* in progress, never settled */
} action;

static action action_for(uint64_t seq, uint32_t delivery) {
    if (seq % 50 == 9) {
        return ACT_PROGRESS;
    }
    switch (seq % 10) {
    case 3:
        return ACT_TERM;
    case 5:
        return delivery == 1 ? ACT_NAK : ACT_ACK;
    case 7:
        return ACT_NAK_LATER;
    default:
        return ACT_ACK;
    }
}

typedef struct settle_op {
    uint64_t seq;
    action act;
} settle_op;

/* The run before the kill. The settling thread and the client thread's
 * callbacks write it under |mu|; the test reads it after the join. */
typedef struct before_kill {
    rift_client *c;
    kill_at when;
    pid_t riftd;
    atomic_bool killed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stop, done;
    atomic_int settled_ok; /* settle calls answered OK */
    int outstanding;       /* callbacks of the current batch still due */
    int answered;          /* ... and those that came */
    int failed;            /* failed calls */
    int failed_early;      /* ... before the kill, and the first one's why */
    char why[sizeof(((rift_error *)0)->text) + 16];
    settle_op ops[BATCH];
    uint32_t seen[NREC + 1];   /* highest delivery count received */
    bool final_sent[NREC + 1]; /* an ack or TERM went out */
    bool final_ok[NREC + 1];   /* ... and was answered OK */
    bool nak_ok[NREC + 1], progress_ok[NREC + 1];
    int term_sent, term_ok, nak_count, nak_later_count, progress_count;
} before_kill;

static before_kill bk;

/* A failed call; those before the kill fail the test. */
static void note_failure(const char *what, const rift_error *err) {
    bk.failed++;
    if (!atomic_load(&bk.killed) && bk.failed_early++ == 0) {
        snprintf(bk.why, sizeof(bk.why), "%s: %s", what, err->text);
    }
}

static void on_settled(void *arg, int status, const rift_error *err) {
    const settle_op *op = arg;
    pthread_mutex_lock(&bk.mu);
    if (status != 0) {
        note_failure("settle", err);
    } else {
        switch (op->act) {
        case ACT_ACK:
            bk.final_ok[op->seq] = true;
            break;
        case ACT_TERM:
            bk.final_ok[op->seq] = true;
            bk.term_ok++;
            break;
        case ACT_NAK:
            bk.nak_ok[op->seq] = true;
            bk.nak_count++;
            break;
        case ACT_NAK_LATER:
            bk.nak_ok[op->seq] = true;
            bk.nak_later_count++;
            break;
        case ACT_PROGRESS:
            bk.progress_ok[op->seq] = true;
            bk.progress_count++;
            break;
        }
        int ok = atomic_fetch_add(&bk.settled_ok, 1) + 1;
        if (bk.when == KILL_AT_ANSWER && ok > KILL_AFTER && bk.answered == 0 &&
            !atomic_exchange(&bk.killed, true)) {
            kill(bk.riftd, SIGKILL); /* the test reaps it */
        }
    }
    bk.answered++;
    bk.outstanding--;
    pthread_cond_broadcast(&bk.cv);
    pthread_mutex_unlock(&bk.mu);
}

static int submit(settle_op *op, rift_error *err) {
    rift_client *c = bk.c;
    const char *s = STREAM, *n = CONSUMER;
    size_t sl = strlen(s), nl = strlen(n);
    switch (op->act) {
    case ACT_ACK:
        return rift_client_ack_async(c, s, sl, n, nl, op->seq, on_settled, op,
                                     err);
    case ACT_TERM:
        return rift_client_term_async(c, s, sl, n, nl, op->seq, on_settled, op,
                                      err);
    case ACT_NAK:
        return rift_client_nak_async(c, s, sl, n, nl, op->seq, 0, on_settled,
                                     op, err);
    case ACT_NAK_LATER:
        return rift_client_nak_async(c, s, sl, n, nl, op->seq, 3600000,
                                     on_settled, op, err);
    case ACT_PROGRESS:
        return rift_client_in_progress_async(c, s, sl, n, nl, op->seq,
                                             on_settled, op, err);
    }
    return RIFT_ERR_INVALID_ARGUMENT;
}

/* Fetches a batch, settles all of it at once (every call in flight
 * together, so the kill cuts several), waits for every answer, again —
 * until a call fails (the kill) or the test says stop. */
static void *settle_main(void *arg) {
    (void)arg;
    while (!atomic_load(&bk.stop)) {
        rift_client_delivery d[BATCH];
        size_t n = 0;
        rift_error err;
        if (rift_client_fetch_wait(bk.c, STREAM, strlen(STREAM), CONSUMER,
                                   strlen(CONSUMER), BATCH, 500, d, &n,
                                   &err) != 0) {
            pthread_mutex_lock(&bk.mu);
            note_failure("fetch", &err);
            pthread_mutex_unlock(&bk.mu);
            break;
        }
        pthread_mutex_lock(&bk.mu);
        size_t nops = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t seq = d[i].sequence;
            uint32_t count = d[i].delivery_count;
            rift_msg_unref(d[i].msg);
            if (seq < 1 || seq > NREC) {
                snprintf(bk.why, sizeof(bk.why), "fetch: sequence %llu",
                         (unsigned long long)seq);
                bk.failed++;
                bk.failed_early++;
                continue;
            }
            if (count > bk.seen[seq]) {
                bk.seen[seq] = count;
            }
            settle_op *op = &bk.ops[nops++];
            op->seq = seq;
            op->act = action_for(seq, count);
            if (op->act == ACT_ACK || op->act == ACT_TERM) {
                bk.final_sent[seq] = true;
                bk.term_sent += op->act == ACT_TERM;
            }
        }
        bk.outstanding = (int)nops;
        bk.answered = 0;
        pthread_mutex_unlock(&bk.mu);
        /* Submitted unlocked: the callbacks, on the client thread, may
         * run before submit returns. */
        for (size_t i = 0; i < nops; i++) {
            if (submit(&bk.ops[i], &err) != 0) {
                pthread_mutex_lock(&bk.mu);
                bk.outstanding--;
                note_failure("submit", &err);
                pthread_mutex_unlock(&bk.mu);
            }
        }
        if (bk.when == KILL_AT_SEND && nops > 0 &&
            atomic_load(&bk.settled_ok) >= KILL_AFTER &&
            !atomic_exchange(&bk.killed, true)) {
            kill(bk.riftd, SIGKILL);
        }
        pthread_mutex_lock(&bk.mu);
        while (bk.outstanding > 0) {
            pthread_cond_wait(&bk.cv, &bk.mu);
        }
        bool failed = bk.failed > 0;
        pthread_mutex_unlock(&bk.mu);
        if (failed) {
            break;
        }
    }
    atomic_store(&bk.done, true);
    return NULL;
}

static bool kill_point(void *arg) {
    (void)arg;
    return atomic_load(&bk.killed) || atomic_load(&bk.done);
}

/* A client whose calls give up after 15 s: the one riftd's kill leaves
 * waiting must come back (a healthy call takes milliseconds). */
static bool connect_client(riftd_fix *f, rift_client **pc) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = f->p.address;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = RIFTD_FIX_TOKEN;
    s.op_timeout_ms = 15000;
    rift_error err = {0};
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "  connect %s: %s\n", f->p.address, err.text);
        return false;
    }
    return true;
}

/* Completions of a window of async calls (publishes, the acks after the
 * restart). */
typedef struct window {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int due, failed;
    bool stored[NREC + 1];
    char why[sizeof(((rift_error *)0)->text)];
} window;

static void window_end(window *w, int status, const rift_error *err) {
    pthread_mutex_lock(&w->mu);
    if (status != 0 && w->failed++ == 0) {
        snprintf(w->why, sizeof(w->why), "%s", err->text);
    }
    w->due--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_stored(void *arg, int status, const rift_stored *st,
                      const rift_error *err) {
    window *w = arg;
    if (status == 0 && st->sequence >= 1 && st->sequence <= NREC) {
        pthread_mutex_lock(&w->mu);
        w->stored[st->sequence] = true;
        pthread_mutex_unlock(&w->mu);
    }
    window_end(w, status, err);
}

static void on_acked(void *arg, int status, const rift_error *err) {
    window_end(arg, status, err);
}

/* Waits until every call of |w| has completed: each has the client's
 * operation timeout, so this ends. */
static void window_wait(window *w) {
    pthread_mutex_lock(&w->mu);
    while (w->due > 0) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

static void print_log(riftd_fix *f) {
    char *log = rift_proc_read(f->p.err);
    fprintf(stderr, "  riftd's log:\n%s\n", log ? log : "(none)");
    free(log);
}

static window pubs, acks;
static int got[NREC + 1];            /* deliveries after the restart */
static uint32_t got_count[NREC + 1]; /* their delivery count */

/* A fresh state for each run (tests may run in one process). */
static void reset(kill_at when) {
    memset(&bk, 0, sizeof(bk));
    pthread_mutex_init(&bk.mu, NULL);
    pthread_cond_init(&bk.cv, NULL);
    bk.when = when;
    window *w[] = {&pubs, &acks};
    for (int i = 0; i < 2; i++) {
        memset(w[i], 0, sizeof(*w[i]));
        pthread_mutex_init(&w[i]->mu, NULL);
        pthread_cond_init(&w[i]->cv, NULL);
    }
    memset(got, 0, sizeof(got));
    memset(got_count, 0, sizeof(got_count));
}

static void crash_run(kill_at when) {
    reset(when);
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(connect_client(&f, &c));
    rift_error err;

    /* NREC records, STORED after the sync. */
    for (int i = 1; i <= NREC; i++) {
        char payload[16];
        int len = snprintf(payload, sizeof(payload), "r%d", i);
        pthread_mutex_lock(&pubs.mu);
        pubs.due++;
        pthread_mutex_unlock(&pubs.mu);
        CHECK_OK(rift_client_stream_publish_async(
            c, STREAM, strlen(STREAM), "orders.new", 10, NULL, 0,
            (const uint8_t *)payload, (size_t)len, on_stored, &pubs, &err));
    }
    window_wait(&pubs);
    CHECK_MSG(pubs.failed == 0, "publish: %s", pubs.why);
    for (int s = 1; s <= NREC; s++) {
        CHECK_MSG(pubs.stored[s], "sequence %d not stored", s);
    }

    /* The extension's open; an ack wait of an hour, so nothing before the
     * kill is redelivered but what a NAK gives back. */
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "orders.>";
    cfg.filter_len = 8;
    cfg.ack_wait_ms = 3600000;
    cfg.max_ack_pending = 4096;
    rift_client_consumer_info info;
    CHECK_MSG(rift_client_consumer_open_ext(c, STREAM, strlen(STREAM), CONSUMER,
                                            strlen(CONSUMER), &cfg, &info,
                                            &err) == 0,
              "%s", err.text);
    CHECK(info.created);

    bk.c = c;
    bk.riftd = f.p.pid;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, settle_main, NULL) == 0);
    rift_test_wait_until(kill_point, NULL, 240000);
    bool killed = atomic_exchange(&bk.killed, true);
    rift_proc_kill(&f.p); /* reaped (killed by the callback, or now) */
    f.running = false;
    atomic_store(&bk.stop, true);
    pthread_join(t, NULL); /* every call has come back */
    rift_client_del(c);
    CHECK_MSG(bk.failed_early == 0, "before the kill: %s", bk.why);
    CHECK_MSG(killed, "only %d settled in 240 s", atomic_load(&bk.settled_ok));

    /* The same directory: the stream and its consumer recover. */
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(connect_client(&f, &c));
    int rounds = 0, total = 0;
    for (;;) {
        rift_client_delivery d[256];
        size_t n = 0;
        int rc =
            rift_client_fetch_wait(c, STREAM, strlen(STREAM), CONSUMER,
                                   strlen(CONSUMER), 256, 2000, d, &n, &err);
        if (rc != 0) {
            print_log(&f);
        }
        CHECK_MSG(rc == 0, "fetch after the restart: %s", err.text);
        if (n == 0) {
            break;
        }
        rounds++;
        for (size_t i = 0; i < n; i++) {
            uint64_t seq = d[i].sequence;
            rift_msg_unref(d[i].msg);
            if (seq < 1 || seq > NREC) {
                CHECK_MSG(false, "delivered sequence %llu",
                          (unsigned long long)seq);
            }
            got[seq]++;
            got_count[seq] = d[i].delivery_count;
            total++;
            pthread_mutex_lock(&acks.mu);
            acks.due++;
            pthread_mutex_unlock(&acks.mu);
            CHECK_OK(rift_client_ack_async(c, STREAM, strlen(STREAM), CONSUMER,
                                           strlen(CONSUMER), seq, on_acked,
                                           &acks, &err));
        }
        window_wait(&acks);
        CHECK_MSG(acks.failed == 0, "ack after the restart: %s", acks.why);
        CHECK(rounds < 100);
    }

    int final_ok = 0, final_lost = 0, back_again = 0, lost = 0, twice = 0;
    int low_count = 0, nak_back = 0, progress = 0, progress_back = 0;
    int unknown = 0;
    for (int s = 1; s <= NREC; s++) {
        final_ok += bk.final_ok[s];
        if (bk.final_ok[s] && got[s] > 0 && back_again++ < 5) {
            printf("sequence %d came back after its %s was answered OK\n", s,
                   s % 10 == 3 ? "TERM" : "ack");
        }
        if (!bk.final_sent[s] && got[s] == 0 && lost++ < 5) {
            printf("sequence %d, never acked nor termed, is lost\n", s);
        }
        if (got[s] > 1 && twice++ < 5) {
            printf("sequence %d delivered %d times after the restart\n", s,
                   got[s]);
        }
        if (got[s] > 0 && got_count[s] <= bk.seen[s] && low_count++ < 5) {
            printf("sequence %d: delivery %u after the restart, %u before\n", s,
                   got_count[s], bk.seen[s]);
        }
        nak_back += bk.nak_ok[s] && !bk.final_sent[s] && got[s] > 0;
        progress += bk.progress_ok[s];
        progress_back += bk.progress_ok[s] && got[s] > 0;
        /* Sent but unanswered at the kill: either way is right. */
        unknown += bk.final_sent[s] && !bk.final_ok[s];
        final_lost += bk.final_sent[s] && !bk.final_ok[s] && got[s] == 0;
    }
    printf("before the kill: %d settled OK (%d acks/TERMs, %d TERMs of %d "
           "sent, %d NAKs, %d NAKs for an hour, %d in progress); after: %d "
           "delivered in %d fetches; %d acks/TERMs unanswered at the kill "
           "(%d of them had taken effect)\n",
           atomic_load(&bk.settled_ok), final_ok, bk.term_ok, bk.term_sent,
           bk.nak_count, bk.nak_later_count, bk.progress_count, total, rounds,
           unknown, final_lost);
    CHECK_EQ_INT(back_again, 0);
    CHECK_EQ_INT(lost, 0);
    CHECK_EQ_INT(twice, 0);
    CHECK_EQ_INT(low_count, 0);
    /* The kill came in the middle, with each kind of settling done. */
    CHECK(final_ok < NREC);
    CHECK(total > 0);
    CHECK(bk.term_ok > 0 && bk.nak_count > 0 && bk.nak_later_count > 0 &&
          bk.progress_count > 0);
    /* NAKed for an hour or in progress: the restart makes them due. */
    CHECK(nak_back >= bk.nak_later_count);
    CHECK_EQ_INT(progress_back, progress);

    /* Nothing left, and every TERM answered OK counted (those cut by the
     * kill may be too). */
    CHECK_OK(rift_client_consumer_get_info(c, STREAM, strlen(STREAM), CONSUMER,
                                           strlen(CONSUMER), &info, &err));
    CHECK_EQ_INT(info.pending, 0);
    CHECK_EQ_U64(info.next_sequence, NREC + 1);
    CHECK(info.terminated >= (uint64_t)bk.term_ok &&
          info.terminated <= (uint64_t)bk.term_sent);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(kill9_at_an_answer_keeps_what_was_not_settled_for_good) {
    crash_run(KILL_AT_ANSWER);
}

RIFT_TEST(kill9_after_sending_keeps_what_was_not_settled_for_good) {
    crash_run(KILL_AT_SEND);
}
