/*
 * test_store_kick_hold.c — held writer wake-ups (unit tests of the store
 * layer, store/kick_hold.h): appends made while a thread holds its kicks
 * complete once it flushes, with no wake-up lost — for one stream, for
 * more streams than the hold's list keeps, when a blocking call on the
 * holding thread woke the writer in between, and when the flush finds the
 * writer asleep over an empty stage (the hang of the first attempt: that
 * kick left the writer marked as woken, and the next append's kick was
 * dropped).
 */
// labels: threads
#include "test.h"

#include "rift/stream.h"
#include "store/kick_hold.h"
#include "store/stream_types.h" /* writer_parked, to await the writer */
#include "store/writer.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* Callbacks counted under a lock; the test waits for them with a bound. */
typedef struct tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int failed;
} tally;

static void tally_init(tally *t) {
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->done = 0;
    t->failed = 0;
}

static void tally_free(tally *t) {
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

static void on_done(void *ud, int status, const rift_error *err) {
    tally *t = ud;
    (void)err;
    pthread_mutex_lock(&t->mu);
    t->failed += status != 0;
    t->done++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Whether |n| callbacks ran within |ms| (a lost wake-up never gets
 * there: the writer sleeps until the next kick). */
static bool wait_done(tally *t, int n, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    while (t->done < n && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    bool ok = t->done >= n;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

/* A file stream in its own directory; |sync|: sync_on_write. */
static rift_stream *open_stream(char *dir, bool sync) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = dir;
    s.sync_on_write = sync;
    rift_stream *st = NULL;
    rift_error err = {0};
    if (rift_stream_new(&st, &s, &err) != 0) {
        fprintf(stderr, "rift_stream_new: %s\n", err.text);
        return NULL;
    }
    return st;
}

static int append(rift_stream *st, tally *t, bool *completed) {
    static const uint8_t payload[] = "held";
    rift_stored out;
    return rift_stream_publish_async(st, "t.x", 3, NULL, 0, payload,
                                     sizeof(payload) - 1, &out, completed,
                                     on_done, t, NULL);
}

/* Appends |per| records to each of |n| streams while held, then flushes:
 * every callback must come. */
static void held_appends(int n, int per, bool sync) {
    char *dirs[40];
    rift_stream *st[40];
    tally t;
    tally_init(&t);
    for (int i = 0; i < n; i++) {
        dirs[i] = rift_test_tmpdir();
        st[i] = open_stream(dirs[i], sync);
        CHECK(st[i] != NULL);
    }
    rift_stream_hold_kicks();
    CHECK(rift_stream_kicks_held());
    int pending = 0;
    for (int k = 0; k < per; k++) {
        for (int i = 0; i < n; i++) {
            bool completed = false;
            CHECK_EQ_INT(append(st[i], &t, &completed), 0);
            CHECK(!completed); /* a file stream reports by callback */
            pending++;
        }
    }
    rift_stream_flush_kicks();
    CHECK(!rift_stream_kicks_held());
    CHECK_MSG(wait_done(&t, pending, 10000), "%d of %d callbacks", t.done,
              pending);
    CHECK_EQ_INT(t.failed, 0);
    for (int i = 0; i < n; i++) {
        rift_stream_del(st[i]);
        rift_test_rmdir(dirs[i]);
    }
    tally_free(&t);
}

RIFT_TEST(hold_flush_completes_synced) {
    held_appends(1, 64, true);
}

RIFT_TEST(hold_flush_completes_unsynced) {
    held_appends(1, 64, false);
}

/* More streams than the list keeps: the 17th and later are woken at once
 * and must not be dropped. */
RIFT_TEST(hold_more_streams_than_the_list) {
    held_appends(RIFT_KICK_HOLD_MAX + 8, 4, false);
}

RIFT_TEST(hold_more_streams_than_the_list_synced) {
    held_appends(RIFT_KICK_HOLD_MAX + 4, 2, true);
}

/* While held, a blocking publish on the same thread wakes the writer
 * itself (it is never held) and the writer takes the held record with
 * it; the flush then finds an empty stage. A record appended after that,
 * outside any hold, must complete too, and so must one in a new hold. */
RIFT_TEST(hold_across_a_blocking_publish) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_stream(dir, false);
    CHECK(st != NULL);
    tally t;
    tally_init(&t);
    bool completed = false;
    rift_stream_hold_kicks();
    CHECK_EQ_INT(append(st, &t, &completed), 0);
    rift_stored out;
    CHECK_OK(rift_stream_publish(st, "t.x", 3, NULL, 0, NULL, 0, &out, NULL));
    CHECK(wait_done(&t, 1, 10000));
    rift_stream_flush_kicks();
    CHECK_EQ_INT(append(st, &t, &completed), 0);
    CHECK(wait_done(&t, 2, 10000));
    rift_stream_hold_kicks();
    rift_stream_hold_kicks(); /* again: still one hold */
    CHECK_EQ_INT(append(st, &t, &completed), 0);
    CHECK_EQ_INT(append(st, &t, &completed), 0);
    rift_stream_flush_kicks();
    rift_stream_flush_kicks(); /* nothing held: a no-op */
    CHECK(wait_done(&t, 4, 10000));
    CHECK_EQ_INT(t.failed, 0);
    rift_stream_del(st);
    rift_test_rmdir(dir);
    tally_free(&t);
}

/* A memory stream completes at once, held or not: nothing to wake. */
RIFT_TEST(hold_memory_stream_completes_at_once) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    rift_stream *st = NULL;
    CHECK_OK(rift_stream_new(&st, &s, NULL));
    tally t;
    tally_init(&t);
    bool completed = false;
    rift_stream_hold_kicks();
    CHECK_EQ_INT(append(st, &t, &completed), 0);
    CHECK(completed);
    rift_stream_flush_kicks();
    CHECK_EQ_INT(t.done, 0);
    rift_stream_del(st);
    tally_free(&t);
}

static bool writer_parked_empty(void *arg) {
    rift_stream *st = arg;
    pthread_mutex_lock(&st->lock);
    bool parked = st->writer_parked && st->fill.nops == 0;
    pthread_mutex_unlock(&st->lock);
    return parked;
}

/* The writer took the held record (a blocking publish woke it) and went
 * back to sleep; the flush then finds an empty stage. The next append,
 * held or not, must still wake it — every round. */
RIFT_TEST(flush_after_the_writer_took_the_records) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_stream(dir, false);
    CHECK(st != NULL);
    tally t;
    tally_init(&t);
    int want = 0;
    for (int round = 0; round < 20; round++) {
        bool completed = false;
        rift_stream_hold_kicks();
        CHECK_EQ_INT(append(st, &t, &completed), 0);
        rift_stored out;
        CHECK_OK(
            rift_stream_publish(st, "t.x", 3, NULL, 0, NULL, 0, &out, NULL));
        CHECK(wait_done(&t, ++want, 10000));
        CHECK(rift_test_wait_until(writer_parked_empty, st, 10000));
        rift_stream_flush_kicks();
        CHECK(rift_test_wait_until(writer_parked_empty, st, 10000));
        if (round % 2 == 1) {
            rift_stream_hold_kicks();
        }
        CHECK_EQ_INT(append(st, &t, &completed), 0);
        rift_stream_flush_kicks(); /* a no-op on even rounds */
        CHECK_MSG(wait_done(&t, ++want, 10000), "round %d: %d of %d", round,
                  t.done, want);
    }
    CHECK_EQ_INT(t.failed, 0);
    rift_stream_del(st);
    rift_test_rmdir(dir);
    tally_free(&t);
}

/* The same at the writer's own level: a kick on an empty stage (a
 * checkpoint's, or any) must not make it sleep through the next one. */
RIFT_TEST(kick_on_an_empty_stage_is_forgotten) {
    char *dir = rift_test_tmpdir();
    rift_stream *st = open_stream(dir, false);
    CHECK(st != NULL);
    tally t;
    tally_init(&t);
    for (int round = 0; round < 20; round++) {
        CHECK(rift_test_wait_until(writer_parked_empty, st, 10000));
        pthread_mutex_lock(&st->lock);
        rift_writer_kick(st);
        pthread_mutex_unlock(&st->lock);
        CHECK(rift_test_wait_until(writer_parked_empty, st, 10000));
        bool completed = false;
        CHECK_EQ_INT(append(st, &t, &completed), 0);
        CHECK_MSG(wait_done(&t, round + 1, 10000), "round %d", round);
    }
    rift_stream_del(st);
    rift_test_rmdir(dir);
    tally_free(&t);
}
