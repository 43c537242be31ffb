/*
 * test_store_watch.c — append watchers of a stream (tests layer): the
 * single rift_stream_set_append_watch slot and any number of
 * rift_stream_watch_add watchers are all called after each publish, and a
 * removed watcher is never called again.
 */
#include "test.h"

#include "rift/stream.h"

#include <stdatomic.h>

static void count(void *arg) {
    atomic_fetch_add((atomic_int *)arg, 1);
}

static int publish(rift_stream *s) {
    return rift_stream_publish(s, "a", 1, NULL, 0, (const uint8_t *)"x", 1,
                               NULL, NULL);
}

RIFT_TEST(slot_and_list_watchers_see_every_append) {
    rift_stream *s;
    CHECK_OK(rift_stream_new(&s, NULL, NULL));
    atomic_int slot = 0, w1n = 0, w2n = 0;
    rift_stream_set_append_watch(s, count, &slot);
    rift_stream_watch w1 = {.fn = count, .arg = &w1n};
    rift_stream_watch w2 = {.fn = count, .arg = &w2n};
    rift_stream_watch_add(s, &w1);
    rift_stream_watch_add(s, &w2);
    CHECK_OK(publish(s));
    CHECK_OK(publish(s));
    CHECK_EQ_INT(atomic_load(&slot), 2);
    CHECK_EQ_INT(atomic_load(&w1n), 2);
    CHECK_EQ_INT(atomic_load(&w2n), 2);
    /* Removing the head, twice (the second is a no-op), then the last. */
    rift_stream_watch_remove(s, &w2);
    rift_stream_watch_remove(s, &w2);
    CHECK_OK(publish(s));
    CHECK_EQ_INT(atomic_load(&w1n), 3);
    CHECK_EQ_INT(atomic_load(&w2n), 2);
    rift_stream_watch_remove(s, &w1);
    CHECK_OK(publish(s));
    CHECK_EQ_INT(atomic_load(&w1n), 3);
    CHECK_EQ_INT(atomic_load(&slot), 4);
    /* A failed publish calls nobody. */
    rift_stream_watch_add(s, &w1);
    CHECK(rift_stream_publish(s, "a.*", 3, NULL, 0, NULL, 0, NULL, NULL) != 0);
    CHECK_EQ_INT(atomic_load(&w1n), 3);
    rift_stream_watch_remove(s, &w1);
    rift_stream_set_append_watch(s, NULL, &slot);
    rift_stream_del(s);
}
