/*
 * admin.c — queries a host application makes of its running server
 * (server layer): flushing what the broker already queued for remote
 * subscribers before a shutdown (riftd's "draining" event must reach
 * them before the connections close), and the identity behind a pending
 * REQUEST's inbox (riftd's control commands that act "as the
 * requester"). Both run on the server thread through rift_srv_post_wait,
 * like the statistics.
 */
#include "server/internal.h"

#include "subject/name.h"

#include <string.h>

/* How often a flush re-checks the subscriptions. */
#define FLUSH_POLL_NS 1000000ull

/* ---- Flush ---- */

typedef struct flush_req {
    rift_server *srv;
    rift_tstamp deadline;
    rift_timer timer;
    int status;
    bool done;
} flush_req;

/* True when no subscription has anything queued, unwritten or
 * unacknowledged. */
static bool all_flushed(rift_server *srv) {
    for (srv_stream *ss = srv->all; ss != NULL; ss = ss->next) {
        if (ss->state != SS_DELIVERY || ss->qs == NULL) {
            continue;
        }
        if (ss->backlog_pos < ss->backlog_len || ss->sub_ready ||
            (ss->sub != NULL && rift_sub_pending(ss->sub) > 0) ||
            rift_quic_stream_unacked(ss->qs) > 0) {
            return false;
        }
    }
    return true;
}

static void flush_step(flush_req *req) {
    rift_server *srv = req->srv;
    /* Moves whatever the broker queued onto the streams (throttled ones
     * resume as their ACKs arrive). */
    rift_srv_drain_now(srv);
    rift_tstamp now = rift_loop_now(srv->loop);
    if (all_flushed(srv)) {
        req->status = 0;
    } else if (now >= req->deadline) {
        req->status = RIFT_ERR_TIMEOUT;
    } else if (rift_timer_start(&req->timer, now + FLUSH_POLL_NS) == 0) {
        return;
    } else {
        req->status = RIFT_ERR_NOMEM;
    }
    rift_srv_post_done(srv, &req->done);
}

static void flush_timer_cb(rift_timer *t, void *arg) {
    (void)t;
    flush_step(arg);
}

static void flush_cb(void *arg, int status) {
    flush_req *req = arg;
    if (status != 0) {
        req->status = RIFT_ERR_CLOSED;
        rift_srv_post_done(req->srv, &req->done);
        return;
    }
    rift_timer_init(req->srv->loop, &req->timer, flush_timer_cb, req);
    if (req->deadline != UINT64_MAX) {
        req->deadline += rift_loop_now(req->srv->loop);
    }
    flush_step(req);
}

int rift_server_flush(rift_server *srv, int64_t timeout_ns, rift_error *err) {
    /* |deadline| carries the timeout until the loop turns it into an
     * absolute time on its own clock; UINT64_MAX waits without limit. */
    flush_req req = {.srv = srv,
                     .deadline =
                         timeout_ns < 0 ? UINT64_MAX : (uint64_t)timeout_ns};
    pthread_mutex_lock(&srv->lock);
    int rc = rift_srv_post_wait(srv, flush_cb, &req, &req.done);
    pthread_mutex_unlock(&srv->lock);
    rc = rc != 0 ? rc : req.status;
    switch (rc) {
    case 0:
        return 0;
    case RIFT_ERR_TIMEOUT:
        return rift_error_set(err, rc, "server flush timed out");
    case RIFT_ERR_CLOSED:
        return rift_error_set(err, rc, "server is not running");
    default:
        return rift_error_set(err, rc, "%s", rift_strerror(rc));
    }
}

/* ---- The identity behind a request inbox ---- */

typedef struct who_req {
    rift_server *srv;
    const char *inbox;
    size_t len;
    char *name;
    size_t cap;
    bool found;
    bool done;
} who_req;

static void who_cb(void *arg, int status) {
    who_req *req = arg;
    for (srv_stream *ss = status == 0 ? req->srv->all : NULL; ss != NULL;
         ss = ss->next) {
        if (ss->state == SS_BUSY && ss->inbox != NULL &&
            req->len == RIFT_INBOX_LEN &&
            memcmp(ss->inbox_name, req->inbox, RIFT_INBOX_LEN) == 0 &&
            ss->conn->id != NULL && ss->conn->id->name_len < req->cap) {
            memcpy(req->name, ss->conn->id->name, ss->conn->id->name_len);
            req->name[ss->conn->id->name_len] = '\0';
            req->found = true;
            break;
        }
    }
    rift_srv_post_done(req->srv, &req->done);
}

int rift_server_requester(rift_server *srv, const char *inbox, size_t len,
                          char *name, size_t cap, rift_error *err) {
    if (cap <= RIFT_NAME_MAX) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "identity name buffer too small");
    }
    who_req req = {
        .srv = srv, .inbox = inbox, .len = len, .name = name, .cap = cap};
    pthread_mutex_lock(&srv->lock);
    int rc = rift_srv_post_wait(srv, who_cb, &req, &req.done);
    pthread_mutex_unlock(&srv->lock);
    if (rc == RIFT_ERR_CLOSED) {
        return rift_error_set(err, rc, "server is not running");
    }
    if (rc != 0) {
        return rift_error_set(err, rc, "%s", rift_strerror(rc));
    }
    return req.found ? 0
                     : rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                      "no pending request uses this inbox");
}
