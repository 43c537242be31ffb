/*
 * cmd_consumer_push.c — `rift consumer push STREAM NAME` (tools layer):
 * a push consumer (rift/client_push.h, docs/protocol-v1.md E.5) printed
 * as `rift consumer fetch` prints, each delivery acknowledged once
 * printed. The client thread's callback only queues; the main thread
 * prints and acks, so a slow terminal holds back the push (max_in_flight)
 * instead of the connection.
 */
#include "cmd_consumer_push.h"

#include "args.h"
#include "io.h"
#include "timefmt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct push_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rift_client_delivery *v;
    size_t cap, head, count;
    bool ended, nomem;
    rift_error err;
} push_queue;

static void on_push(void *arg, rift_client_push *p, int status,
                    const rift_client_delivery *d, const rift_error *err) {
    push_queue *q = arg;
    (void)p;
    pthread_mutex_lock(&q->mu);
    if (status != 0) {
        q->ended = true;
        q->err = *err;
    } else if (q->count == q->cap) {
        /* Never more than max_in_flight plus redeliveries: grow. */
        size_t cap = q->cap ? q->cap * 2 : 64;
        rift_client_delivery *v = malloc(cap * sizeof(*v));
        if (v == NULL) {
            q->nomem = true;
            rift_msg_unref(d->msg);
        } else {
            for (size_t i = 0; i < q->count; i++) {
                v[i] = q->v[(q->head + i) % q->cap];
            }
            free(q->v);
            q->v = v;
            q->cap = cap;
            q->head = 0;
        }
    }
    if (status == 0 && q->count < q->cap) {
        q->v[(q->head + q->count) % q->cap] = *d;
        q->count++;
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* The next delivery, or false once the push ended or a signal came. */
static bool next(push_queue *q, rift_client_delivery *out) {
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && !q->ended && !rift_cli_stop_requested()) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000L; /* look at the signal flag */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&q->cv, &q->mu, &until);
    }
    bool got = q->count > 0 && !rift_cli_stop_requested();
    if (got) {
        *out = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

int rift_cli_consumer_push(rift_client *c, const char *stream, const char *name,
                           const char *max_in_flight, const char *count,
                           const char *ack_wait, bool raw) {
    rift_client_push_config cfg;
    rift_client_push_config_default(&cfg);
    uint64_t v = 0, limit = UINT64_MAX;
    if (max_in_flight != NULL) {
        if (!rift_cli_parse_u64("consumer", "--max-in-flight", max_in_flight,
                                &v) ||
            v == 0 || v > 65535) {
            fprintf(stderr,
                    "rift consumer: --max-in-flight expects 1..65535\n");
            return 2;
        }
        cfg.max_in_flight = (uint32_t)v;
    }
    if (count != NULL &&
        (!rift_cli_parse_u64("consumer", "--count", count, &limit) ||
         limit == 0)) {
        fprintf(stderr, "rift consumer: --count expects a positive number\n");
        return 2;
    }
    if (ack_wait != NULL) {
        if (!rift_cli_parse_u64("consumer", "--ack-wait", ack_wait, &v) ||
            v == 0 || v > 3600000) {
            fprintf(stderr, "rift consumer: --ack-wait expects 1..3600000 "
                            "(ms)\n");
            return 2;
        }
        cfg.ack_wait_ms = (uint32_t)v;
    }
    push_queue q;
    memset(&q, 0, sizeof(q));
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    rift_cli_catch_signals();
    rift_client_push *p = NULL;
    rift_error err;
    if (rift_client_push_open(c, stream, strlen(stream), name, strlen(name),
                              &cfg, on_push, &q, &p, &err) != 0) {
        fprintf(stderr, "rift consumer: %s\n", err.text);
        return 1;
    }
    int rc = 0;
    uint64_t printed = 0;
    rift_client_delivery d;
    while (printed < limit && next(&q, &d)) {
        if (!raw) {
            char when[RIFT_CLI_TIME_LEN];
            rift_cli_time_format(d.timestamp_ms, when);
            printf("#%llu (delivery %u) %s ", (unsigned long long)d.sequence,
                   d.delivery_count, when);
        }
        rift_cli_print_msg(stdout, d.msg, raw);
        rift_msg_unref(d.msg);
        printed++;
        if (rift_client_push_ack(p, d.sequence, &err) != 0) {
            fprintf(stderr, "rift consumer: ack %llu: %s\n",
                    (unsigned long long)d.sequence, err.text);
            rc = 1;
            break;
        }
    }
    fflush(stdout);
    rift_client_push_close(p);
    /* The callback runs no more: what it queued is the rest. */
    pthread_mutex_lock(&q.mu);
    if (rc == 0 && q.ended && printed < limit && !rift_cli_stop_requested()) {
        fprintf(stderr, "rift consumer: %s\n", q.err.text);
        rc = 1;
    }
    if (q.nomem) {
        fprintf(stderr, "rift consumer: out of memory\n");
        rc = 1;
    }
    while (q.count > 0) {
        rift_msg_unref(q.v[q.head].msg);
        q.head = (q.head + 1) % q.cap;
        q.count--;
    }
    pthread_mutex_unlock(&q.mu);
    free(q.v);
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&q.mu);
    return rc;
}
