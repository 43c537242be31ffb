/*
 * broker_hello.c — a tour of the in-process broker (example, public API
 * only): a wildcard subscription, a queue group, and request/reply with a
 * responder thread.
 *
 *     ./example_broker_hello
 */
#include <rift/broker.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int check(int rc, const rift_error *err, const char *what) {
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", what, err->text);
    }
    return rc;
}

/* The responder answers "time.now" requests until its subscription is
 * closed by rift_broker_del. */
static void *responder(void *arg) {
    void **ctx = arg;
    rift_broker *b = ctx[0];
    rift_sub *s = ctx[1];
    rift_msg *req;
    while (rift_sub_recv(s, -1, &req, NULL) == 0) {
        size_t rlen;
        const char *reply = rift_msg_reply(req, &rlen);
        if (reply != NULL) {
            const char *answer = "it is always now";
            rift_broker_publish(b, reply, rlen, NULL, 0,
                                (const uint8_t *)answer, strlen(answer), NULL,
                                NULL);
        }
        rift_msg_unref(req);
    }
    return NULL;
}

int main(void) {
    rift_error err;
    rift_broker *b;
    if (check(rift_broker_new(&b, NULL, &err), &err, "broker")) {
        return 1;
    }

    /* 1. A wildcard subscriber sees every greeting. */
    rift_sub *greetings;
    check(rift_broker_subscribe(b, "greet.*", 7, NULL, &greetings, &err), &err,
          "subscribe");
    const char *hello = "hello, world";
    rift_publish_report rep;
    rift_broker_publish(b, "greet.en", 8, NULL, 0, (const uint8_t *)hello,
                        strlen(hello), &rep, &err);
    rift_msg *m;
    if (rift_sub_recv(greetings, 0, &m, &err) == 0) {
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        printf("[%s] %.*s (delivered to %zu)\n", rift_msg_subject(m, NULL),
               (int)len, (const char *)p, rep.delivered);
        rift_msg_unref(m);
    }

    /* 2. A queue group shares the work: each job goes to one worker. */
    rift_sub *workers[2];
    rift_sub_options q = {.queue = "workers", .queue_len = 7};
    for (int i = 0; i < 2; i++) {
        check(rift_broker_subscribe(b, "jobs", 4, &q, &workers[i], &err), &err,
              "subscribe");
    }
    for (int i = 0; i < 4; i++) {
        rift_broker_publish(b, "jobs", 4, NULL, 0, NULL, 0, NULL, NULL);
    }
    printf("worker 0 has %zu jobs, worker 1 has %zu\n",
           rift_sub_pending(workers[0]), rift_sub_pending(workers[1]));

    /* 3. Request/reply: an inbox is created and removed for us. */
    rift_sub *svc;
    check(rift_broker_subscribe(b, "time.now", 8, NULL, &svc, &err), &err,
          "subscribe");
    void *ctx[2] = {b, svc};
    pthread_t t;
    pthread_create(&t, NULL, responder, ctx);
    rift_msg *reply;
    if (check(rift_broker_request(b, "time.now", 8, NULL, 0, 1000000000LL,
                                  &reply, &err),
              &err, "request") == 0) {
        size_t len;
        const uint8_t *p = rift_msg_payload(reply, &len);
        printf("reply on %s: %.*s\n", rift_msg_subject(reply, NULL), (int)len,
               (const char *)p);
        rift_msg_unref(reply);
    }
    if (rift_broker_request(b, "nobody.home", 11, NULL, 0, 1000000LL, &reply,
                            &err) != 0) {
        printf("nobody.home: %s\n", err.text);
    }

    /* Destroying the broker wakes the responder with RIFT_ERR_CLOSED;
     * handles are released afterwards. */
    rift_broker_del(b);
    pthread_join(t, NULL);
    rift_sub_close(svc);
    rift_sub_close(workers[0]);
    rift_sub_close(workers[1]);
    rift_sub_close(greetings);
    return 0;
}
