/*
 * test_nats_limits.c — the NATS listener (src/nats) against clients that
 * misbehave or get too much: auth_timeout, stale connections, slow
 * consumers with the publisher unaffected, a burst that is not one, a
 * fast publisher paced for a subscriber that reads,
 * max_payload, oversized and
 * byte-at-a-time control lines, max_connections, and the inbox-isolation
 * attack (identity B trying to read identity A's replies).
 */
// labels: threads
#include "natsraw.h"
#include "test.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define T 5000

static void short_auth(rift_nats_settings *s) {
    s->auth_timeout_ms = 100;
}

RIFT_TEST(auth_timeout_closes_idle_sockets) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, short_auth));
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(c != NULL);
    CHECK(natsraw_expect(c, "-ERR 'Authentication Timeout'\r\n", T));
    CHECK(natsraw_wait_closed(c, T));
    natsraw_close(c);
    /* A client that authenticated in time is not affected. */
    natsraw *d = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(d, NATSRAW_ALICE, ""));
    natsraw *probe = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_wait_closed(probe, T)); /* > auth_timeout has passed */
    natsraw_close(probe);
    CHECK(natsraw_ping(d));
    natsraw_close(d);
    natsraw_stop(&f);
}

static void fast_pings(rift_nats_settings *s) {
    s->ping_interval_ms = 100;
    s->max_pings_out = 2;
}

RIFT_TEST(stale_connection_after_unanswered_pings) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, fast_pings));
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    natsraw *alive = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_hello(alive, NATSRAW_ALICE, ""));
    /* |alive| answers every PING; |c| never does. */
    for (int i = 0; i < 4; i++) {
        CHECK(natsraw_expect(alive, "PING\r\n", T));
        CHECK(natsraw_send(alive, "PONG\r\n", 0));
    }
    CHECK(natsraw_expect(c, "PING\r\n", T));
    CHECK(natsraw_expect(c, "PING\r\n", T));
    CHECK(natsraw_expect(c, "-ERR 'Stale Connection'\r\n", T));
    CHECK(natsraw_wait_closed(c, T));
    CHECK(natsraw_ping(alive));
    natsraw_close(c);
    natsraw_close(alive);
    natsraw_stop(&f);
}

static void small_pending(rift_nats_settings *s) {
    s->max_payload = 16384;
    s->max_pending = 256 * 1024;
}

static bool slow_seen(void *arg) {
    rift_nats_stats st;
    if (rift_nats_get_stats(arg, &st) != 0) {
        return false;
    }
    rift_free(NULL, st.by_identity);
    return st.slow_consumers > 0;
}

RIFT_TEST(slow_consumer_is_cut_publisher_carries_on) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, small_pending));
    natsraw *lazy = natsraw_connect(&f, 4096, NULL, 0);
    natsraw *pub = natsraw_connect(&f, 0, NULL, 0);
    natsraw *fast = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(lazy, NATSRAW_ALICE, ""));
    CHECK(natsraw_hello(pub, NATSRAW_ALICE, ""));
    CHECK(natsraw_hello(fast, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(lazy, "SUB a.flood 1\r\n", 0));
    CHECK(natsraw_ping(lazy)); /* from here on |lazy| never reads */
    CHECK(natsraw_send(fast, "SUB a.tick 1\r\n", 0));
    CHECK(natsraw_ping(fast));
    enum {
        SIZE = 16000
    };
    char *msg = malloc(SIZE + 64);
    int hl = snprintf(msg, 64, "PUB a.flood %d\r\n", SIZE);
    memset(msg + hl, 'x', SIZE);
    memcpy(msg + hl + SIZE, "\r\n", 2);
    /* Well past the socket buffers plus max_pending. */
    int sent = 0;
    for (; sent < 4000 && !slow_seen(f.nats); sent++) {
        CHECK(natsraw_send(pub, msg, (size_t)hl + SIZE + 2));
    }
    free(msg);
    CHECK(rift_test_wait_until(slow_seen, f.nats, T));
    /* The publisher was never stalled and keeps working. */
    CHECK(natsraw_send(pub, "PUB a.tick 2\r\nok\r\n", 0));
    CHECK(natsraw_ping(pub));
    CHECK(natsraw_expect(fast, "MSG a.tick 1 2\r\nok\r\n", T));
    /* The lazy one was closed: draining its socket ends in EOF (the
     * -ERR may or may not have fit in its buffers). */
    CHECK(natsraw_wait_closed(lazy, T));
    natsraw_close(lazy);
    natsraw_close(pub);
    natsraw_close(fast);
    natsraw_stop(&f);
}

/* One read of small PUBs routes more messages than a subscription queue
 * holds (1,024 by default): the listener must deliver between operations,
 * not only when the read is done, or a healthy subscriber is cut as
 * slow. */
RIFT_TEST(burst_in_one_read_is_not_a_slow_consumer) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, NULL));
    natsraw *sub = natsraw_connect(&f, 0, NULL, 0);
    natsraw *pub = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(sub, NATSRAW_ALICE, ""));
    CHECK(natsraw_hello(pub, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(sub, "SUB a.burst 1\r\n", 0));
    CHECK(natsraw_ping(sub));
    enum {
        N = 8000
    };
    static const char one[] = "PUB a.burst 1\r\nx\r\n";
    static const char last[] = "PUB a.burst 4\r\nlast\r\n";
    size_t len = N * (sizeof(one) - 1) + sizeof(last) - 1;
    char *burst = malloc(len);
    CHECK(burst != NULL);
    for (size_t i = 0; i < N; i++) {
        memcpy(burst + i * (sizeof(one) - 1), one, sizeof(one) - 1);
    }
    memcpy(burst + N * (sizeof(one) - 1), last, sizeof(last) - 1);
    CHECK(natsraw_send(pub, burst, len));
    free(burst);
    CHECK(natsraw_ping(pub));
    CHECK(natsraw_expect(sub, "MSG a.burst 1 4\r\nlast\r\n", T));
    CHECK(!slow_seen(f.nats));
    natsraw_close(sub);
    natsraw_close(pub);
    natsraw_stop(&f);
}

/* A subscriber that reads all along, only slower than one 8 MB burst of a NATS
 * publisher: with pacing (the default) the publisher's reads pause and
 * every message arrives; with producer_pause_ms = 0 the backlog passes
 * max_pending and the reader is cut (nats_pace.c). */
enum {
    PACE_N = 8000,
    PACE_SIZE = 1000
};

typedef struct pace_pub {
    natsraw *pub;
    bool ok;
} pace_pub;

static void *pace_publish(void *arg) {
    pace_pub *p = arg;
    char *msg = malloc(PACE_SIZE + 64);
    int hl = snprintf(msg, 64, "PUB a.pace %d\r\n", PACE_SIZE);
    memset(msg + hl, 'x', PACE_SIZE);
    memcpy(msg + hl + PACE_SIZE, "\r\n", 2);
    p->ok = true;
    for (int i = 0; i < PACE_N && p->ok; i++) {
        p->ok = natsraw_send(p->pub, msg, (size_t)hl + PACE_SIZE + 2);
    }
    free(msg);
    return NULL;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads |c| at about 40 MB/s (8 KiB, then 200 µs off) until |want| bytes
 * came or the server closed it; returns the bytes read. */
static size_t read_slowly(natsraw *c, size_t want, int timeout_ms) {
    char buf[8192];
    size_t got = 0;
    struct timespec gap = {0, 200 * 1000};
    int64_t end = now_ms() + timeout_ms;
    while (got < want && now_ms() < end) {
        struct pollfd pfd = {c->fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0) {
            continue;
        }
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
        nanosleep(&gap, NULL);
    }
    return got;
}

static void pace_off(rift_nats_settings *s) {
    small_pending(s);
    s->producer_pause_ms = 0;
}

static size_t pace_run(void (*tweak)(rift_nats_settings *s), bool *slow,
                       uint64_t *pauses) {
    natsraw_fix f;
    if (natsraw_start(&f, tweak) != 0) {
        return 0;
    }
    natsraw *sub = natsraw_connect(&f, 4096, NULL, 0);
    pace_pub p = {natsraw_connect(&f, 0, NULL, 0), false};
    bool ready = natsraw_hello(sub, NATSRAW_ALICE, "") &&
                 natsraw_hello(p.pub, NATSRAW_ALICE, "") &&
                 natsraw_send(sub, "SUB a.pace 1\r\n", 0) && natsraw_ping(sub);
    size_t got = 0;
    pthread_t t;
    if (ready && pthread_create(&t, NULL, pace_publish, &p) == 0) {
        static const char line[] = "MSG a.pace 1 1000\r\n";
        size_t each = sizeof(line) - 1 + PACE_SIZE + 2;
        got = read_slowly(sub, (size_t)PACE_N * each, 20000) / each;
        natsraw_close(sub); /* a publisher still sending is no longer paced */
        sub = NULL;
        pthread_join(t, NULL);
    }
    *slow = slow_seen(f.nats);
    rift_nats_stats st;
    *pauses = UINT64_MAX;
    if (rift_nats_get_stats(f.nats, &st) == 0) {
        *pauses = st.producer_pauses;
        rift_free(NULL, st.by_identity);
    }
    if (sub != NULL) {
        natsraw_close(sub);
    }
    natsraw_close(p.pub);
    natsraw_stop(&f);
    return got;
}

RIFT_TEST(fast_publisher_is_paced_for_a_reading_subscriber) {
    bool slow = true;
    uint64_t pauses = 0;
    CHECK_EQ_U64(pace_run(small_pending, &slow, &pauses), PACE_N);
    CHECK(!slow);
    /* No "pauses > 0" here: on a slow build (TSan) the server itself may be
     * slower than the reader, the backlog never passes max_pending/2 and no
     * pause is needed. The control test below shows that the same reader is
     * cut when pacing is off; here it must not be. */
    CHECK(pauses != UINT64_MAX);
}

RIFT_TEST(without_pacing_the_same_reader_is_cut) {
    bool slow = false;
    uint64_t pauses = UINT64_MAX;
    CHECK(pace_run(pace_off, &slow, &pauses) < PACE_N);
    CHECK(slow);
    CHECK_EQ_U64(pauses, 0);
}

RIFT_TEST(max_payload_violation_closes) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, NULL));
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(c, "PUB a.big 1048577\r\n", 0));
    CHECK(natsraw_expect(c, "-ERR 'Maximum Payload Violation'\r\n", T));
    CHECK(natsraw_wait_closed(c, T));
    natsraw_close(c);
    /* Exactly max_payload is fine. */
    natsraw *d = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(d, NATSRAW_ALICE, ""));
    size_t n = 1048576;
    char *big = malloc(n + 64);
    int hl = snprintf(big, 64, "PUB a.big %zu\r\n", n);
    memset(big + hl, 'y', n);
    memcpy(big + hl + n, "\r\n", 2);
    CHECK(natsraw_send(d, "SUB a.big 1\r\n", 0));
    CHECK(natsraw_send(d, big, (size_t)hl + n + 2));
    free(big);
    CHECK(natsraw_expect(d, "MSG a.big 1 1048576\r\nyyyy", T));
    CHECK(natsraw_ping(d));
    natsraw_close(d);
    natsraw_stop(&f);
}

RIFT_TEST(hostile_control_lines) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, NULL));
    /* One byte at a time still works. */
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    const char *script =
        "CONNECT {\"verbose\":false,\"auth_token\":\"" NATSRAW_ALICE
        "\"}\r\nSUB a.s 1\r\nPUB a.s 3\r\nabc\r\nPING\r\n";
    for (const char *p = script; *p != '\0'; p++) {
        CHECK(natsraw_send(c, p, 1));
    }
    CHECK(natsraw_expect(c, "MSG a.s 1 3\r\nabc\r\nPONG\r\n", T));
    natsraw_close(c);
    /* A control line past max_control_line (4 KiB), never terminated. */
    natsraw *d = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(d, NATSRAW_ALICE, ""));
    char junk[8192];
    memset(junk, 'a', sizeof(junk));
    memcpy(junk, "SUB ", 4);
    CHECK(natsraw_send(d, junk, sizeof(junk)));
    CHECK(natsraw_expect(d, "-ERR 'Maximum Control Line Exceeded'\r\n", T));
    CHECK(natsraw_wait_closed(d, T));
    natsraw_close(d);
    /* An unknown operation. */
    natsraw *e = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(e, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(e, "FLOOD me\r\n", 0));
    CHECK(natsraw_expect(e, "-ERR 'Unknown Protocol Operation'\r\n", T));
    CHECK(natsraw_wait_closed(e, T));
    natsraw_close(e);
    /* A CONNECT flood on one connection changes nothing after the first. */
    natsraw *g = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(g, NATSRAW_ALICE, ""));
    for (int i = 0; i < 200; i++) {
        CHECK(natsraw_send(
            g,
            "CONNECT {\"verbose\":false,\"auth_token\":\"" NATSRAW_BOB
            "\"}\r\n",
            0));
    }
    CHECK(natsraw_send(g, "SUB b.x 1\r\n", 0)); /* still alice */
    CHECK(natsraw_expect(g, "Permissions Violation for Subscription", T));
    natsraw_close(g);
    natsraw_stop(&f);
}

static void two_connections(rift_nats_settings *s) {
    s->max_connections = 2;
}

RIFT_TEST(max_connections_refuses_the_next) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, two_connections));
    natsraw *a = natsraw_connect(&f, 0, NULL, 0);
    natsraw *b = natsraw_connect(&f, 0, NULL, 0);
    CHECK(a != NULL && b != NULL);
    CHECK(natsraw_hello(a, NATSRAW_ALICE, ""));
    char first[256];
    natsraw *c = natsraw_connect(&f, 0, first, sizeof(first));
    /* Refused before INFO: the first line is the -ERR, then EOF. */
    CHECK(c != NULL);
    CHECK_EQ_STR(first, "-ERR 'maximum connections exceeded'");
    CHECK(natsraw_wait_closed(c, T));
    natsraw_close(c);
    natsraw_close(b);
    CHECK(natsraw_ping(a));
    natsraw_close(a);
    natsraw_stop(&f);
}

/*
 * The inbox rule (docs/riftd.md "NATS inboxes"): alice requests with a
 * muxed inbox and no _INBOX grant at all; bob, who even holds a broad
 * "_INBOX.>" subscribe grant, must not read her replies.
 */
RIFT_TEST(inbox_isolation_attack_fails) {
    natsraw_fix f;
    CHECK_OK(natsraw_start(&f, NULL));
    natsraw *alice = natsraw_connect(&f, 0, NULL, 0);
    natsraw *bob = natsraw_connect(&f, 0, NULL, 0);
    natsraw *spy = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(alice, NATSRAW_ALICE, ""));
    CHECK(natsraw_hello(bob, NATSRAW_BOB, ""));
    CHECK(natsraw_hello(spy, NATSRAW_BOB, ""));
    const char *inbox = "_INBOX.k3Jv9QpL2mXw8RtY5nBc0d";
    char line[256];
    /* The spy subscribes broadly before alice's claim exists. */
    CHECK(natsraw_send(spy, "SUB _INBOX.> 1\r\nSUB > 2\r\n", 0));
    CHECK(natsraw_expect(spy, "Permissions Violation for Subscription to \">\"",
                         T));
    CHECK(natsraw_ping(spy));
    CHECK(natsraw_send(bob, "SUB svc.echo 1\r\n", 0));
    CHECK(natsraw_ping(bob));
    snprintf(line, sizeof(line),
             "SUB %s.* 5\r\nPUB svc.echo %s.1 4\r\nping\r\nPING\r\n", inbox,
             inbox);
    CHECK(natsraw_send(alice, line, 0));
    CHECK(natsraw_expect(alice, "PONG\r\n", T));
    snprintf(line, sizeof(line), "MSG svc.echo 1 %s.1 4\r\nping\r\n", inbox);
    CHECK(natsraw_expect(bob, line, T));
    /* Bob tries to subscribe under her inbox, exactly or by wildcard. */
    snprintf(line, sizeof(line), "SUB %s.* 7\r\nSUB %s.> 8\r\nSUB %s 9\r\n",
             inbox, inbox, inbox);
    CHECK(natsraw_send(bob, line, 0));
    CHECK(
        natsraw_expect(bob, "-ERR 'Permissions Violation for Subscription", T));
    CHECK(
        natsraw_expect(bob, "-ERR 'Permissions Violation for Subscription", T));
    CHECK(
        natsraw_expect(bob, "-ERR 'Permissions Violation for Subscription", T));
    /* Nor can bob use her inbox as his own reply subject. */
    snprintf(line, sizeof(line), "PUB svc.echo %s.2 1\r\nx\r\n", inbox);
    CHECK(natsraw_send(bob, line, 0));
    CHECK(natsraw_expect(bob, "Permissions Violation for Publish", T));
    /* The reply: bob answers with the publish access he has. */
    snprintf(line, sizeof(line), "PUB %s.1 4\r\npong\r\n", inbox);
    CHECK(natsraw_send(bob, line, 0));
    CHECK(natsraw_ping(bob));
    snprintf(line, sizeof(line), "MSG %s.1 5 4\r\npong\r\n", inbox);
    CHECK(natsraw_expect(alice, line, T));
    /* The spy's "_INBOX.>" saw nothing of it. */
    CHECK(natsraw_ping(spy));
    CHECK(!natsraw_has(spy, "MSG"));
    /* Once alice is gone her prefix is free again. */
    natsraw_close(alice);
    snprintf(line, sizeof(line), "SUB %s.* 10\r\nPING\r\n", inbox);
    bool freed = false;
    for (int i = 0; i < 100 && !freed; i++) {
        CHECK(natsraw_send(spy, line, 0));
        CHECK(natsraw_expect(spy, "PONG\r\n", T));
        freed = !natsraw_has(spy, "Violation");
        if (!freed) {
            natsraw_close(spy);
            spy = natsraw_connect(&f, 0, NULL, 0);
            CHECK(natsraw_hello(spy, NATSRAW_BOB, ""));
        }
    }
    CHECK(freed);
    natsraw_close(bob);
    natsraw_close(spy);
    natsraw_stop(&f);
}
