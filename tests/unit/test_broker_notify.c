/*
 * test_broker_notify.c — readiness of broker subscriptions (broker layer):
 * the per-subscription eventfd (level-triggered) and the notifier (one fd,
 * a ready list, one report per empty-to-ready transition).
 */
// labels: threads
#include "rift/broker.h"
#include "test.h"

#include <poll.h>
#include <pthread.h>

static bool readable(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static bool readable_within(int fd, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static int pub(rift_broker *b, const char *subject) {
    return rift_broker_publish(b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)"x", 1, NULL, NULL);
}

RIFT_TEST(sub_fd_level_triggered) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *s;
    CHECK_OK(rift_broker_subscribe(b, "f", 1, NULL, &s, NULL));
    int fd = rift_sub_fd(s);
    CHECK(fd >= 0);
    CHECK_EQ_INT(rift_sub_fd(s), fd); /* created once */
    CHECK(!readable(fd));
    CHECK_OK(pub(b, "f"));
    CHECK(readable(fd));
    CHECK_OK(pub(b, "f"));
    CHECK(readable(fd));
    rift_msg *m;
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    rift_msg_unref(m);
    CHECK(readable(fd)); /* one still queued */
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    rift_msg_unref(m);
    CHECK(!readable(fd));
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_AGAIN);
    CHECK(!readable(fd));
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(sub_fd_created_late_reflects_queue) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *s;
    CHECK_OK(rift_broker_subscribe(b, "f", 1, NULL, &s, NULL));
    CHECK_OK(pub(b, "f"));
    int fd = rift_sub_fd(s);
    CHECK(fd >= 0);
    CHECK(readable(fd));
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(sub_fd_readable_when_slow_and_closed) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.subscription_capacity = 1;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));
    rift_sub *s, *t;
    CHECK_OK(rift_broker_subscribe(b, "f", 1, NULL, &s, NULL));
    CHECK_OK(rift_broker_subscribe(b, "g", 1, NULL, &t, NULL));
    int fd = rift_sub_fd(s), fd2 = rift_sub_fd(t);
    CHECK_OK(pub(b, "f"));
    CHECK_OK(pub(b, "f")); /* slow */
    CHECK(readable(fd));
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_SLOW_CONSUMER);
    CHECK(readable(fd)); /* closed stays readable */
    CHECK(!readable(fd2));
    rift_broker_del(b);
    CHECK(readable(fd2)); /* closed by broker_del */
    CHECK_EQ_INT(rift_sub_recv(t, 0, &m, NULL), RIFT_ERR_CLOSED);
    rift_sub_close(s);
    rift_sub_close(t);
}

RIFT_TEST(notifier_reports_transitions_once) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    int fd = rift_notifier_fd(n);
    rift_sub *s[3];
    int tags[3];
    for (int i = 0; i < 3; i++) {
        char subj[8];
        snprintf(subj, sizeof(subj), "n.%d", i);
        rift_sub_options o = {.notifier = n, .user_data = &tags[i]};
        CHECK_OK(rift_broker_subscribe(b, subj, strlen(subj), &o, &s[i], NULL));
    }
    CHECK(!readable(fd));
    rift_sub *ready[8];
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 8), 0);

    CHECK_OK(pub(b, "n.1"));
    CHECK_OK(pub(b, "n.1"));
    CHECK_OK(pub(b, "n.2"));
    CHECK(readable(fd));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 8), 2);
    CHECK(ready[0] == s[1] && ready[1] == s[2]);
    CHECK(rift_sub_user_data(ready[0]) == &tags[1]);
    CHECK(!readable(fd));

    /* More messages before draining: no new report. */
    CHECK_OK(pub(b, "n.1"));
    CHECK(!readable(fd));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 8), 0);
    /* Drain s1 to AGAIN: the next message is reported again. */
    rift_msg *m;
    int got = 0;
    while (rift_sub_recv(s[1], 0, &m, NULL) == 0) {
        rift_msg_unref(m);
        got++;
    }
    CHECK_EQ_INT(got, 3);
    CHECK_OK(pub(b, "n.1"));
    CHECK(readable(fd));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 8), 1);
    CHECK(ready[0] == s[1]);

    /* With more ready than |max|, the fd stays readable. */
    while (rift_sub_recv(s[1], 0, &m, NULL) == 0) {
        rift_msg_unref(m);
    }
    while (rift_sub_recv(s[2], 0, &m, NULL) == 0) {
        rift_msg_unref(m);
    }
    CHECK_OK(pub(b, "n.0"));
    CHECK_OK(pub(b, "n.1"));
    CHECK_OK(pub(b, "n.2"));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 2), 2);
    CHECK(readable(fd));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 2), 1);
    CHECK(ready[0] == s[2]);
    CHECK(!readable(fd));

    for (int i = 0; i < 3; i++) {
        rift_sub_close(s[i]);
    }
    rift_notifier_del(n);
    rift_broker_del(b);
}

RIFT_TEST(notifier_reports_slow_and_forgets_closed) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.subscription_capacity = 1;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    rift_sub *s, *t;
    rift_sub_options o = {.notifier = n};
    CHECK_OK(rift_broker_subscribe(b, "s", 1, &o, &s, NULL));
    CHECK_OK(rift_broker_subscribe(b, "t", 1, &o, &t, NULL));
    rift_sub *ready[4];
    CHECK_OK(pub(b, "s"));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 4), 1);
    CHECK_OK(pub(b, "s")); /* overflow: the consumer must still learn it */
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_SLOW_CONSUMER);
    /* A subscription closed while on the ready list is forgotten. */
    CHECK_OK(pub(b, "t"));
    CHECK(readable(rift_notifier_fd(n)));
    rift_sub_close(t);
    CHECK(!readable(rift_notifier_fd(n)));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 4), 0);
    rift_sub_close(s);

    /* Slow without a prior drain: reported through the notifier. */
    CHECK_OK(rift_broker_subscribe(b, "u", 1, &o, &s, NULL));
    CHECK_OK(pub(b, "u"));
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 4), 1);
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    rift_msg_unref(m);
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_AGAIN);
    CHECK_OK(pub(b, "u"));
    CHECK_OK(pub(b, "u")); /* slow */
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 4), 1);
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_SLOW_CONSUMER);
    rift_sub_close(s);
    rift_notifier_del(n);
    rift_broker_del(b);
}

RIFT_TEST(notifier_reports_broker_del) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    rift_sub *s;
    rift_sub_options o = {.notifier = n};
    CHECK_OK(rift_broker_subscribe(b, "s", 1, &o, &s, NULL));
    rift_broker_del(b);
    rift_sub *ready[2];
    CHECK_EQ_INT(rift_notifier_poll(n, ready, 2), 1);
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(ready[0], 0, &m, NULL), RIFT_ERR_CLOSED);
    rift_sub_close(s);
    rift_notifier_del(n);
}

typedef struct loop_arg {
    rift_notifier *n;
    int expect;
    int got;
} loop_arg;

/* An event loop on another thread: poll the notifier fd, drain. */
static void *loop_main(void *arg) {
    loop_arg *a = arg;
    int fd = rift_notifier_fd(a->n);
    while (a->got < a->expect) {
        if (!readable_within(fd, 5000)) {
            break;
        }
        rift_sub *ready[16];
        size_t k = rift_notifier_poll(a->n, ready, 16);
        for (size_t i = 0; i < k; i++) {
            rift_msg *m;
            while (rift_sub_recv(ready[i], 0, &m, NULL) == 0) {
                rift_msg_unref(m);
                a->got++;
            }
        }
    }
    return NULL;
}

RIFT_TEST(notifier_drives_event_loop_thread) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    rift_sub *s[4];
    rift_sub_options o = {.notifier = n, .capacity = 100000};
    for (int i = 0; i < 4; i++) {
        char subj[8];
        snprintf(subj, sizeof(subj), "e.%d", i);
        CHECK_OK(rift_broker_subscribe(b, subj, strlen(subj), &o, &s[i], NULL));
    }
    loop_arg a = {.n = n, .expect = 4 * 5000};
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, loop_main, &a));
    for (int i = 0; i < 5000; i++) {
        for (int k = 0; k < 4; k++) {
            char subj[8];
            snprintf(subj, sizeof(subj), "e.%d", k);
            CHECK_OK(pub(b, subj));
        }
    }
    pthread_join(t, NULL);
    CHECK_EQ_INT(a.got, 4 * 5000);
    for (int i = 0; i < 4; i++) {
        rift_sub_close(s[i]);
    }
    rift_notifier_del(n);
    rift_broker_del(b);
}

typedef struct fd_arg {
    rift_sub *s;
    int expect, got;
} fd_arg;

static void *fd_loop(void *arg) {
    fd_arg *a = arg;
    int fd = rift_sub_fd(a->s);
    while (a->got < a->expect && readable_within(fd, 5000)) {
        rift_msg *m;
        while (rift_sub_recv(a->s, 0, &m, NULL) == 0) {
            rift_msg_unref(m);
            a->got++;
        }
    }
    return NULL;
}

RIFT_TEST(sub_fd_drives_event_loop_thread) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *s;
    rift_sub_options o = {.capacity = 100000};
    CHECK_OK(rift_broker_subscribe(b, "fd", 2, &o, &s, NULL));
    CHECK(rift_sub_fd(s) >= 0);
    fd_arg a = {.s = s, .expect = 20000};
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, fd_loop, &a));
    for (int i = 0; i < 20000; i++) {
        CHECK_OK(pub(b, "fd"));
    }
    pthread_join(t, NULL);
    CHECK_EQ_INT(a.got, 20000);
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(notifier_with_batch_drain) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_notifier *n;
    CHECK_OK(rift_notifier_new(&n, NULL, NULL));
    rift_sub *s;
    rift_sub_options o = {.notifier = n};
    CHECK_OK(rift_broker_subscribe(b, "b", 1, &o, &s, NULL));
    int fd = rift_sub_fd(s);
    rift_sub *ready[2];
    rift_msg *m[4];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++) {
            CHECK_OK(pub(b, "b"));
        }
        CHECK(readable(fd));
        CHECK_EQ_INT(rift_notifier_poll(n, ready, 2), 1);
        /* Fewer than asked: the queue is empty, the fd reset, and the next
         * message is reported again without an extra AGAIN call. */
        CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 4, NULL), 3);
        for (int i = 0; i < 3; i++) {
            rift_msg_unref(m[i]);
        }
        CHECK(!readable(fd));
        CHECK(!readable(rift_notifier_fd(n)));
    }
    rift_sub_close(s);
    rift_notifier_del(n);
    rift_broker_del(b);
}
