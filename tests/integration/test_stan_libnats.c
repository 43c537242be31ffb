/*
 * test_stan_libnats.c — a real NATS Streaming client, nats.c's streaming
 * API from Debian's libnats, against the STAN service behind riftd's NATS
 * face (in-process: the NATS listener of src/nats on a loopback port over
 * a broker that also runs the service). Connect, publish sync and async,
 * subscribe with start positions, durable resume after close, queue group,
 * ack-wait redelivery, close.
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */
#include "stan_fix.h"

#include "natsraw.h"
#include "stan/stan.h"
#include "subject/acl.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define CLUSTER "test-cluster"
#define WAIT_MS 10000

/* The principal STAN clients act as (anonymous): _STAN.> and _INBOX.>. */
static rift_identity stan_id;

static void stan_principal(rift_nats_settings *s) {
    static const char *const grants[] = {"_STAN.>", "_INBOX.>"};
    rift_identity_init(&stan_id, NULL);
    (void)rift_identity_set_name(&stan_id, "stan", 4);
    (void)rift_identity_set_token(
        &stan_id, "stan-token-0123456789abcdefghijklmnopqrstuvwxyz", 47);
    for (size_t i = 0; i < 2; i++) {
        (void)rift_identity_allow_publish(&stan_id, grants[i],
                                          strlen(grants[i]));
        (void)rift_identity_allow_subscribe(&stan_id, grants[i],
                                            strlen(grants[i]));
    }
    s->identities = &stan_id;
    s->identity_count = 1;
    s->anonymous = "stan";
}

typedef struct fixture {
    natsraw_fix nf;
    rift_stan *svc;
    char url[128];
} fixture;

static int fx_start(fixture *fx) {
    if (natsraw_start(&fx->nf, stan_principal) != 0) {
        return -1;
    }
    rift_identity_free(&stan_id);
    snprintf(fx->url, sizeof fx->url, "nats://%s:%d", fx->nf.host, fx->nf.port);
    return rift_stan_start(&fx->svc, fx->nf.broker, NULL, NULL);
}

static void fx_stop(fixture *fx) {
    rift_stan_stop(fx->svc);
    natsraw_stop(&fx->nf);
}

static stanConnection *connect_as(fixture *fx, const char *id) {
    stanConnOptions *o = NULL;
    stanConnection *sc = NULL;
    if (stanConnOptions_Create(&o) != NATS_OK ||
        stanConnOptions_SetURL(o, fx->url) != NATS_OK) {
        stanConnOptions_Destroy(o);
        return NULL;
    }
    natsStatus s = stanConnection_Connect(&sc, CLUSTER, id, o);
    stanConnOptions_Destroy(o);
    if (s != NATS_OK) {
        fprintf(stderr, "connect: %s: %s\n", natsStatus_GetText(s),
                nats_GetLastError(NULL));
        return NULL;
    }
    return sc;
}

static int pub(stanConnection *sc, const char *ch, int from, int to) {
    for (int i = from; i <= to; i++) {
        char d[16];
        int n = snprintf(d, sizeof d, "m%d", i);
        if (stanConnection_Publish(sc, ch, d, n) != NATS_OK) {
            return -1;
        }
    }
    return 0;
}

typedef struct acks {
    pthread_mutex_t mu;
    int ok, failed;
} acks;

static void on_ack(const char *guid, const char *error, void *closure) {
    (void)guid;
    acks *a = closure;
    pthread_mutex_lock(&a->mu);
    if (error) {
        a->failed++;
    } else {
        a->ok++;
    }
    pthread_mutex_unlock(&a->mu);
}

static bool acks_done(void *arg) {
    acks *a = arg;
    pthread_mutex_lock(&a->mu);
    bool done = a->ok + a->failed >= 20;
    pthread_mutex_unlock(&a->mu);
    return done;
}

RIFT_TEST(publish_sync_async_and_start_positions) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "libnats-pub");
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "orders", 1, 5));
    acks a = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    for (int i = 0; i < 20; i++) {
        CHECK(stanConnection_PublishAsync(sc, "orders", "async", 5, on_ack,
                                          &a) == NATS_OK);
    }
    CHECK(rift_test_wait_until(acks_done, &a, WAIT_MS));
    CHECK_EQ_INT(a.ok, 20);
    /* All available, last received, from sequence 24. */
    struct {
        int mode;
        uint64_t first;
    } cases[] = {{0, 1}, {1, 25}, {2, 24}};
    for (size_t i = 0; i < 3; i++) {
        stanSubOptions *so = NULL;
        CHECK(stanSubOptions_Create(&so) == NATS_OK);
        if (cases[i].mode == 0) {
            stanSubOptions_DeliverAllAvailable(so);
        } else if (cases[i].mode == 1) {
            stanSubOptions_StartWithLastReceived(so);
        } else {
            stanSubOptions_StartAtSequence(so, 24);
        }
        seen s;
        seen_init(&s, true);
        stanSubscription *sub = NULL;
        CHECK(stanConnection_Subscribe(&sub, sc, "orders", on_msg, &s, so) ==
              NATS_OK);
        CHECK(stanSubscription_SetOnCompleteCB(sub, on_complete, &s) ==
              NATS_OK);
        stanSubOptions_Destroy(so);
        CHECK(wait_n(&s, 1));
        CHECK_EQ_U64(s.seqs[0], cases[i].first);
        /* |s| ends with this iteration: no callback may still use it. */
        unsubscribe_wait(sub, &s);
    }
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
    /* One test per process: release libnats' global state (threads, and
     * what LeakSanitizer would report). */
    nats_CloseAndWait(5000);
}

RIFT_TEST(durable_resumes_after_close) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "libnats-dur");
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "d", 1, 3));
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetDurableName(so, "keeper");
    seen s;
    seen_init(&s, true);
    stanSubscription *sub = NULL;
    CHECK(stanConnection_Subscribe(&sub, sc, "d", on_msg, &s, so) == NATS_OK);
    CHECK(wait_n(&s, 3));
    CHECK(stanSubscription_Close(sub) == NATS_OK); /* keeps the durable */
    stanSubscription_Destroy(sub);
    CHECK_OK(pub(sc, "d", 4, 5));
    seen s2;
    seen_init(&s2, true);
    CHECK(stanConnection_Subscribe(&sub, sc, "d", on_msg, &s2, so) == NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&s2, 2));
    CHECK_EQ_U64(s2.seqs[0], 4);
    CHECK_EQ_U64(s2.seqs[1], 5);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
    /* One test per process: release libnats' global state (threads, and
     * what LeakSanitizer would report). */
    nats_CloseAndWait(5000);
}

RIFT_TEST(queue_group_and_redelivery) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "libnats-q");
    CHECK(sc != NULL);
    seen q; /* both members record here */
    seen_init(&q, true);
    stanSubscription *a = NULL, *b = NULL;
    CHECK(stanConnection_QueueSubscribe(&a, sc, "q", "workers", on_msg, &q,
                                        NULL) == NATS_OK);
    CHECK(stanConnection_QueueSubscribe(&b, sc, "q", "workers", on_msg, &q,
                                        NULL) == NATS_OK);
    CHECK_OK(pub(sc, "q", 1, 10));
    /* Each message reaches one member: ten in all, none twice. */
    CHECK(wait_n(&q, 10));
    bool dup = false, seen_seq[11] = {false};
    for (size_t i = 0; i < q.n; i++) {
        dup |= q.seqs[i] < 1 || q.seqs[i] > 10 || seen_seq[q.seqs[i]];
        if (q.seqs[i] >= 1 && q.seqs[i] <= 10) {
            seen_seq[q.seqs[i]] = true;
        }
    }
    CHECK(!dup);
    stanSubscription_Unsubscribe(a);
    stanSubscription_Unsubscribe(b);
    stanSubscription_Destroy(a);
    stanSubscription_Destroy(b);

    /* Manual acks, ack wait 1 s, never acked: redelivered, flagged. */
    stanSubOptions *so = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetAckWait(so, 1000);
    stanSubOptions_SetMaxInflight(so, 1);
    seen r;
    seen_init(&r, false);
    stanSubscription *rs = NULL;
    CHECK(stanConnection_Subscribe(&rs, sc, "q", on_msg, &r, so) == NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK(wait_n(&r, 2));
    CHECK_EQ_U64(r.seqs[0], 1);
    CHECK(!r.redelivered[0]);
    CHECK_EQ_U64(r.seqs[1], 1); /* max in flight 1: the same one again */
    CHECK(r.redelivered[1]);
    stanSubscription_Unsubscribe(rs);
    stanSubscription_Destroy(rs);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
    /* One test per process: release libnats' global state (threads, and
     * what LeakSanitizer would report). */
    nats_CloseAndWait(5000);
}

/* subscribe_with: manual acks, the given ack wait (ms) and max in flight;
 * a queue subscription when |queue|, a durable when |durable|. */
static stanSubscription *subscribe_with(stanConnection *sc, const char *ch,
                                        const char *queue, const char *durable,
                                        int64_t ack_wait_ms, int inflight,
                                        seen *s) {
    stanSubOptions *so = NULL;
    stanSubscription *sub = NULL;
    if (stanSubOptions_Create(&so) != NATS_OK) {
        return NULL;
    }
    stanSubOptions_DeliverAllAvailable(so);
    stanSubOptions_SetManualAckMode(so, true);
    stanSubOptions_SetAckWait(so, ack_wait_ms);
    stanSubOptions_SetMaxInflight(so, inflight);
    if (durable) {
        stanSubOptions_SetDurableName(so, durable);
    }
    natsStatus st =
        queue
            ? stanConnection_QueueSubscribe(&sub, sc, ch, queue, on_msg, s, so)
            : stanConnection_Subscribe(&sub, sc, ch, on_msg, s, so);
    stanSubOptions_Destroy(so);
    return st == NATS_OK ? sub : NULL;
}

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

RIFT_TEST(leaving_queue_member_hands_its_pending_on_at_once) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "libnats-qleave");
    CHECK(sc != NULL);
    /* A takes five and never acknowledges them (ack wait 30 s). */
    seen sa, sb;
    seen_init(&sa, false);
    seen_init(&sb, true);
    stanSubscription *a =
        subscribe_with(sc, "ql", "workers", NULL, 30000, 10, &sa);
    CHECK(a != NULL);
    CHECK_OK(pub(sc, "ql", 1, 5));
    CHECK(wait_n(&sa, 5));
    stanSubscription *b =
        subscribe_with(sc, "ql", "workers", NULL, 30000, 2, &sb);
    CHECK(b != NULL);
    double t0 = mono_s();
    CHECK(stanSubscription_Close(a) == NATS_OK);
    /* B gets all five at once, flagged, past its max in flight of 2. */
    CHECK(wait_n(&sb, 5));
    double took = mono_s() - t0;
    printf("a leaving member's 5 pending reached the other in %.3f s\n", took);
    CHECK(took < 5.0);
    bool got[6] = {false};
    for (size_t i = 0; i < 5; i++) {
        CHECK(sb.redelivered[i]);
        CHECK(sb.seqs[i] >= 1 && sb.seqs[i] <= 5);
        got[sb.seqs[i]] = true;
    }
    for (int i = 1; i <= 5; i++) {
        CHECK(got[i]);
    }
    stanSubscription_Destroy(a);
    stanSubscription_Unsubscribe(b);
    stanSubscription_Destroy(b);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
    nats_CloseAndWait(5000); /* libnats' global state */
}

RIFT_TEST(resumed_durable_takes_the_new_ack_wait_and_max_in_flight) {
    fixture fx = {0};
    CHECK_OK(fx_start(&fx));
    stanConnection *sc = connect_as(&fx, "libnats-redur");
    CHECK(sc != NULL);
    CHECK_OK(pub(sc, "rd", 1, 3));
    /* First: ack wait 30 s, max in flight 1; 1 is delivered, not acked. */
    seen s1;
    seen_init(&s1, false);
    stanSubscription *sub =
        subscribe_with(sc, "rd", NULL, "dur", 30000, 1, &s1);
    CHECK(sub != NULL);
    CHECK(wait_n(&s1, 1));
    CHECK_EQ_U64(s1.seqs[0], 1);
    CHECK(stanSubscription_Close(sub) == NATS_OK); /* keeps the durable */
    stanSubscription_Destroy(sub);
    /* Resumed with ack wait 1 s and max in flight 3: 2 and 3 flow although
     * 1 is still pending, and 1 comes back after about a second, not 30. */
    seen s2;
    seen_init(&s2, false);
    double t0 = mono_s();
    sub = subscribe_with(sc, "rd", NULL, "dur", 1000, 3, &s2);
    CHECK(sub != NULL);
    CHECK(wait_n(&s2, 3));
    double took = mono_s() - t0;
    bool one_again = false, two = false, three = false;
    for (size_t i = 0; i < 3; i++) {
        one_again |= s2.seqs[i] == 1 && s2.redelivered[i];
        two |= s2.seqs[i] == 2;
        three |= s2.seqs[i] == 3;
    }
    CHECK(one_again && two && three);
    CHECK(took < 8.0);
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    fx_stop(&fx);
    nats_CloseAndWait(5000); /* libnats' global state */
}
