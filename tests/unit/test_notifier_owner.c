/*
 * test_notifier_owner.c — rift_notifier_set_owner (broker layer, added for
 * the protocol server): publications on the owner thread make
 * subscriptions ready without writing the eventfd; publications on other
 * threads still signal it.
 */
// labels: threads
#include "test.h"

#include "rift/broker.h"

#include <poll.h>
#include <pthread.h>

static bool readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

typedef struct ctx {
    rift_broker *b;
} ctx;

static void *publish_elsewhere(void *arg) {
    ctx *c = arg;
    rift_broker_publish(c->b, "a", 1, NULL, 0, (const uint8_t *)"x", 1, NULL,
                        NULL);
    return NULL;
}

RIFT_TEST(owner_publications_skip_the_eventfd) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    rift_notifier_set_owner(n);
    rift_sub_options o = {.notifier = n};
    rift_sub *s;
    CHECK_OK(rift_broker_subscribe(b, "a", 1, &o, &s, NULL));

    /* Same thread: ready, but the fd stays quiet. */
    CHECK_OK(rift_broker_publish(b, "a", 1, NULL, 0, (const uint8_t *)"x", 1,
                                 NULL, NULL));
    CHECK(!readable(rift_notifier_fd(n)));
    rift_sub *got[4];
    CHECK_EQ_INT(rift_notifier_poll(n, got, 4), 1);
    CHECK(got[0] == s);
    rift_msg *m[4];
    CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 4, NULL), 1);
    rift_msg_unref(m[0]);

    /* Another thread: the fd wakes the owner. */
    ctx c = {b};
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, publish_elsewhere, &c));
    pthread_join(t, NULL);
    CHECK(readable(rift_notifier_fd(n)));
    CHECK_EQ_INT(rift_notifier_poll(n, got, 4), 1);
    CHECK(!readable(rift_notifier_fd(n)));
    CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 4, NULL), 1);
    rift_msg_unref(m[0]);

    rift_sub_close(s);
    rift_notifier_del(n);
    rift_broker_del(b);
}
