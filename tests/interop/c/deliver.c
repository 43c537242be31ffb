/*
 * deliver.c — nats.c scenarios about delivery (tests layer): wildcards,
 * queue groups, headers, request/reply, no-responders, permissions and
 * reconnect after the server restarts.
 */
#include "ni.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Nothing more may be pending on |sub| once |nc| round-tripped a PING. */
static bool none(natsConnection *nc, natsSubscription *sub) {
    int msgs = 0, bytes = 0;
    if (!ni_ok(natsConnection_FlushTimeout(nc, NI_WAIT_MS), "flush") ||
        !ni_ok(natsSubscription_GetPending(sub, &msgs, &bytes), "pending")) {
        return false;
    }
    return msgs == 0 || ni_fail("%d unexpected messages", msgs);
}

bool ni_wildcards(void) {
    natsConnection *nc = NULL;
    natsSubscription *star = NULL, *tail = NULL;
    bool ok =
        ni_connect("alice", &nc) &&
        ni_ok(natsConnection_SubscribeSync(&star, nc, "ni.open.wc.*"), "sub") &&
        ni_ok(natsConnection_SubscribeSync(&tail, nc, "ni.open.wc.>"), "sub") &&
        ni_ok(natsConnection_PublishString(nc, "ni.open.wc.a.b", "deep"),
              "pub") &&
        ni_ok(natsConnection_PublishString(nc, "ni.open.wc.a", "one"), "pub") &&
        ni_expect(star, "one") && ni_expect(tail, "deep") &&
        ni_expect(tail, "one") && none(nc, star) && none(nc, tail);
    natsSubscription_Destroy(star);
    natsSubscription_Destroy(tail);
    natsConnection_Destroy(nc);
    return ok;
}

bool ni_queue(void) {
    natsConnection *nc = NULL;
    natsSubscription *q[2] = {NULL, NULL};
    bool ok = ni_connect("alice", &nc);
    for (int i = 0; ok && i < 2; i++) {
        ok = ni_ok(natsConnection_QueueSubscribeSync(&q[i], nc, "ni.open.q",
                                                     "workers"),
                   "queue sub");
    }
    const int n = 200;
    for (int i = 0; ok && i < n; i++) {
        ok = ni_ok(natsConnection_PublishString(nc, "ni.open.q", "w"), "pub");
    }
    ok = ok && ni_ok(natsConnection_FlushTimeout(nc, NI_WAIT_MS), "flush");
    int total = 0;
    for (int i = 0; ok && i < 2; i++) {
        int msgs = 0, bytes = 0;
        ok = ni_ok(natsSubscription_GetPending(q[i], &msgs, &bytes), "pending");
        if (ok && msgs == 0) {
            ok = ni_fail("queue member %d got nothing of %d", i, n);
        }
        total += msgs;
    }
    if (ok && total != n) {
        ok = ni_fail("the group got %d messages of %d", total, n);
    }
    natsSubscription_Destroy(q[0]);
    natsSubscription_Destroy(q[1]);
    natsConnection_Destroy(nc);
    return ok;
}

bool ni_headers(void) {
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsMsg *out = NULL, *in = NULL;
    const char *v = NULL;
    bool ok =
        ni_connect("alice", &nc) &&
        ni_ok(natsConnection_SubscribeSync(&sub, nc, "ni.open.hdr"), "sub") &&
        ni_ok(natsMsg_Create(&out, "ni.open.hdr", NULL, "body", 4), "msg") &&
        ni_ok(natsMsgHeader_Set(out, "X-Ni", "from c"), "header") &&
        ni_ok(natsConnection_PublishMsg(nc, out), "pub") &&
        ni_ok(natsSubscription_NextMsg(&in, sub, NI_WAIT_MS), "receive") &&
        ni_ok(natsMsgHeader_Get(in, "X-Ni", &v), "header get");
    if (ok && (strcmp(v, "from c") != 0 || natsMsg_GetDataLength(in) != 4)) {
        ok = ni_fail("header %s, %d bytes", v, natsMsg_GetDataLength(in));
    }
    natsMsg_Destroy(out);
    natsMsg_Destroy(in);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return ok;
}

static void echo(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                 void *closure) {
    (void)sub;
    (void)closure;
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "re: %.*s", natsMsg_GetDataLength(m),
                     natsMsg_GetData(m));
    natsConnection_Publish(nc, natsMsg_GetReply(m), buf, n);
    natsMsg_Destroy(m);
}

bool ni_request_reply(void) {
    natsConnection *srv = NULL, *nc = NULL;
    natsSubscription *sub = NULL;
    bool ok =
        ni_connect("alice", &srv) &&
        ni_ok(natsConnection_Subscribe(&sub, srv, "ni.open.svc", echo, NULL),
              "sub") &&
        ni_ok(natsConnection_FlushTimeout(srv, NI_WAIT_MS), "flush") &&
        ni_connect("alice", &nc);
    for (int i = 0; ok && i < 10; i++) {
        natsMsg *r = NULL;
        char q[16], want[32];
        snprintf(q, sizeof(q), "%d", i);
        snprintf(want, sizeof(want), "re: %d", i);
        ok = ni_ok(
            natsConnection_RequestString(&r, nc, "ni.open.svc", q, NI_WAIT_MS),
            "request");
        if (ok && strcmp(natsMsg_GetData(r), want) != 0) {
            ok = ni_fail("reply %s, want %s", natsMsg_GetData(r), want);
        }
        natsMsg_Destroy(r);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(srv);
    return ok;
}

bool ni_no_responders(void) {
    natsConnection *nc = NULL;
    natsMsg *r = NULL;
    bool ok = ni_connect("alice", &nc);
    if (ok) {
        natsStatus s = natsConnection_RequestString(&r, nc, "ni.open.nobody",
                                                    "anyone?", NI_WAIT_MS);
        if (s != NATS_NO_RESPONDERS) {
            ok = ni_fail("request without responders: %s, want %s",
                         natsStatus_GetText(s),
                         natsStatus_GetText(NATS_NO_RESPONDERS));
        }
    }
    natsMsg_Destroy(r);
    natsConnection_Destroy(nc);
    return ok;
}

/* Asynchronous errors: the connection's last error text, kept. */
static pthread_mutex_t errs_lock = PTHREAD_MUTEX_INITIALIZER;
static char errs[2048];

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
                     void *closure) {
    (void)sub;
    (void)err;
    (void)closure;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    pthread_mutex_lock(&errs_lock);
    size_t len = strlen(errs);
    snprintf(errs + len, sizeof(errs) - len, "%s\n", text ? text : "?");
    pthread_mutex_unlock(&errs_lock);
}

static bool have_error(const char *text) {
    pthread_mutex_lock(&errs_lock);
    bool found = strstr(errs, text) != NULL;
    pthread_mutex_unlock(&errs_lock);
    return found;
}

/* The violation reaches the client before the PONG of a flush sent after
 * it (the server answers in order). */
bool ni_permissions(void) {
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsOptions *o = ni_options("carol");
    if (o != NULL) {
        natsOptions_SetErrorHandler(o, on_error, NULL);
    }
    bool ok =
        ni_connect_opts(o, &nc) &&
        ni_ok(natsConnection_PublishString(nc, "ni.closed.x", "no"), "pub") &&
        ni_ok(natsConnection_FlushTimeout(nc, NI_WAIT_MS), "flush");
    for (int i = 0; ok && i < NI_WAIT_MS / 10 &&
                    !have_error("Permissions Violation for Publish to");
         i++) {
        ok = ni_ok(natsConnection_FlushTimeout(nc, NI_WAIT_MS), "flush");
    }
    if (ok &&
        !have_error("Permissions Violation for Publish to \"ni.closed.x\"")) {
        ok = ni_fail("no permissions violation reported (got %s)", errs);
    }
    ok = ok && !natsConnection_IsClosed(nc) &&
         ni_ok(natsConnection_SubscribeSync(&sub, nc, "ni.open.perm"), "sub") &&
         ni_ok(natsConnection_PublishString(nc, "ni.open.perm", "still"),
               "pub") &&
         ni_expect(sub, "still");
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return ok;
}

static void on_reconnect(natsConnection *nc, void *closure) {
    (void)nc;
    pthread_mutex_lock(&errs_lock);
    *(bool *)closure = true;
    pthread_mutex_unlock(&errs_lock);
}

static bool reconnected(bool *flag) {
    pthread_mutex_lock(&errs_lock);
    bool v = *flag;
    pthread_mutex_unlock(&errs_lock);
    return v;
}

bool ni_reconnect(void) {
    static bool again;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsOptions *o = ni_options("alice");
    if (o != NULL) {
        natsOptions_SetAllowReconnect(o, true);
        natsOptions_SetMaxReconnect(o, -1);
        natsOptions_SetReconnectWait(o, 100);
        natsOptions_SetReconnectedCB(o, on_reconnect, &again);
    }
    bool ok =
        ni_connect_opts(o, &nc) &&
        ni_ok(natsConnection_SubscribeSync(&sub, nc, "ni.open.rc"), "sub") &&
        ni_ok(natsConnection_FlushTimeout(nc, NI_WAIT_MS), "flush");
    if (ok) {
        printf("await-restart\n");
        fflush(stdout);
    }
    /* Wait (bounded) for the reconnected callback: each NextMsg on the
     * subscription waits up to 100 ms and yields nothing meanwhile. */
    for (int i = 0; ok && !reconnected(&again) && i < 3 * NI_WAIT_MS / 100;
         i++) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 100) == NATS_OK) {
            natsMsg_Destroy(m);
            ok = ni_fail("message before the restart");
        }
    }
    if (ok && !reconnected(&again)) {
        ok = ni_fail("no reconnect after the server restarted");
    }
    ok =
        ok &&
        ni_ok(natsConnection_PublishString(nc, "ni.open.rc", "after"), "pub") &&
        ni_expect(sub, "after");
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return ok;
}
