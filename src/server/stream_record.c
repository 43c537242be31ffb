/*
 * stream_record.c — the primitives every server handler uses (server
 * layer): stream and connection records and their lifetime, the
 * connection's byte budget, the stream deadlines, writing, the error path
 * of §2.7 and normal completion. It calls no handler: what an operation
 * attached to a record is let go of through the record's srv_op_hooks.
 *
 * Reference: docs/protocol-v1.md §2.7 (lifecycle and deadlines).
 *
 * Deadlines share one timer per stream and are checked lazily: the hot
 * path only records timestamps (first byte of a frame, last ACK progress)
 * and the timer, when it fires, either finds a deadline passed or re-arms
 * itself for the earliest one still pending. So a pipelined publisher
 * costs no timer operations per frame.
 */
#include "server/stream_record.h"
#include "common/dlist.h"

#include <string.h>

static const char text_timeout[] = "QUIC operation timed out";

static void stream_timer_cb(rift_timer *t, void *arg);

/* What the record's operation holds, through its hooks (none attached =
 * nothing to let go of, nothing in flight). */
static void drop_op(srv_stream *ss) {
    if (ss->op != NULL) {
        ss->op->drop(ss);
    }
}

static bool op_in_flight(const srv_stream *ss) {
    return ss->op != NULL && ss->op->in_flight != NULL && ss->op->in_flight(ss);
}

/* ---- Records ---- */

void rift_srv_conn_unref(srv_conn *c) {
    if (--c->refs > 0) {
        return;
    }
    rift_server *srv = c->srv;
    rift_timer_stop(&c->auth_timer);
    RIFT_DLIST_REMOVE(srv->conns, c, prev, next);
    rift_free(srv->mem, c);
}

srv_stream *rift_srv_stream_new(srv_conn *c, rift_quic_stream *qs,
                                srv_state state) {
    rift_server *srv = c->srv;
    srv_stream *ss = rift_calloc(srv->mem, 1, sizeof(*ss));
    if (ss == NULL) {
        return NULL;
    }
    ss->conn = c;
    ss->qs = qs;
    ss->state = state;
    c->refs++;
    rift_frame_reader_init(&ss->reader,
                           state == SS_AUTH ? RIFT_FRAME_AUTH_MAX_BYTES
                                            : RIFT_FRAME_MAX_BYTES,
                           srv->mem);
    rift_timer_init(srv->loop, &ss->timer, stream_timer_cb, ss);
    rift_timer_init(srv->loop, &ss->op_timer, NULL, ss);
    RIFT_DLIST_PUSH(srv->all, ss, prev, next);
    rift_quic_stream_set_user_data(qs, ss);
    return ss;
}

void rift_srv_stop_waiting(srv_stream *ss) {
    if (ss->wait_conn) {
        ss->wait_conn = false;
        ss->conn->waiting--;
    }
}

void rift_srv_stream_free(srv_stream *ss) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    drop_op(ss);
    rift_srv_release_permit(ss);
    rift_srv_stop_waiting(ss);
    c->queued -= ss->accounted;
    srv->c.queued -= ss->accounted;
    rift_timer_stop(&ss->timer);
    rift_timer_stop(&ss->op_timer);
    rift_frame_reader_free(&ss->reader);
    rift_free(srv->mem, ss->held);
    if (ss->qs != NULL) {
        rift_quic_stream_set_user_data(ss->qs, NULL);
    }
    RIFT_DLIST_REMOVE(srv->all, ss, prev, next);
    rift_free(srv->mem, ss);
    rift_srv_conn_unref(c);
}

void rift_srv_release_permit(srv_stream *ss) {
    if (ss->permit) {
        ss->permit = false;
        ss->conn->permits--;
    }
    if (ss->counted) {
        ss->counted = false;
        ss->conn->srv->c.streams--;
    }
}

/* ---- The connection's budget ---- */

void rift_srv_account(srv_stream *ss) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    uint64_t cur =
        (ss->qs != NULL ? rift_quic_stream_unacked(ss->qs) : 0) + ss->extra;
    c->queued = c->queued - ss->accounted + cur;
    srv->c.queued = srv->c.queued - ss->accounted + cur;
    ss->accounted = cur;
    if (c->queued > srv->c.conn_queued_peak) {
        srv->c.conn_queued_peak = c->queued;
    }
}

bool rift_srv_conn_full(srv_stream *ss) {
    srv_conn *c = ss->conn;
    if (c->queued < SRV_CONN_HIGH) {
        return false;
    }
    if (!ss->wait_conn) {
        rift_server *srv = c->srv;
        ss->wait_conn = true;
        c->waiting++;
        ss->wait_since = rift_loop_now(srv->loop);
        rift_srv_arm(ss, ss->wait_since + srv->io_ns);
    }
    return true;
}

/* ---- Deadlines ---- */

void rift_srv_arm(srv_stream *ss, rift_tstamp at) {
    if (!rift_timer_active(&ss->timer) || at < ss->timer_at) {
        ss->timer_at = at;
        rift_timer_start(&ss->timer, at);
    }
}

static void stream_timer_cb(rift_timer *t, void *arg) {
    srv_stream *ss = arg;
    (void)t;
    if (ss->qs == NULL) {
        return;
    }
    rift_server *srv = ss->conn->srv;
    rift_tstamp now = rift_loop_now(srv->loop);
    rift_tstamp next = UINT64_MAX;
    bool expired = false;
    if (ss->state == SS_OPS) {
        if (!ss->got_frame) {
            rift_tstamp d = ss->opened_at + srv->handshake_ns;
            expired |= now >= d;
            next = RIFT_MIN(next, d);
        }
        if (ss->mid) {
            rift_tstamp d = ss->frame_start + srv->io_ns;
            expired |= now >= d;
            next = RIFT_MIN(next, d);
        }
    }
    if (ss->wait_conn) {
        /* Kept waiting by the connection's budget: its client must make
         * progress on some stream, as with a blocked write. */
        rift_tstamp d =
            RIFT_MAX(ss->wait_since, ss->conn->last_progress) + srv->io_ns;
        expired |= now >= d;
        next = RIFT_MIN(next, d);
    }
    uint64_t unacked = rift_quic_stream_unacked(ss->qs);
    if (ss->state == SS_DONE) {
        if (unacked > 0) {
            /* The ERROR or the last frames of a finished stream could not
             * be delivered within another io_timeout: drop them, however
             * few (a client that never credits its window would pin them
             * until the connection ends). */
            rift_tstamp d =
                RIFT_MAX(ss->last_progress, ss->done_at) + srv->io_ns;
            if (now >= d) {
                rift_quic_stream_shutdown_write(ss->qs, 0);
                rift_srv_account(ss);
                return;
            }
            next = RIFT_MIN(next, d);
        }
    } else if (ss->state != SS_REFUSED && unacked >= SRV_WRITE_BLOCKED) {
        rift_tstamp d = ss->last_progress + srv->io_ns;
        expired |= now >= d;
        next = RIFT_MIN(next, d);
    }
    if (expired) {
        rift_srv_fail(ss, RIFT_ERR_TIMEOUT, text_timeout);
        return;
    }
    if (next != UINT64_MAX) {
        ss->timer_at = next;
        rift_timer_start(&ss->timer, next);
    }
}

/* ---- Writing ---- */

int rift_srv_write(srv_stream *ss, const rift_quic_chunk *chunks, size_t n,
                   bool fin) {
    if (ss->qs == NULL) {
        return RIFT_ERR_CLOSED;
    }
    uint64_t before = rift_quic_stream_unacked(ss->qs);
    int rc = rift_quic_stream_write(ss->qs, chunks, n, fin);
    if (rc != 0) {
        return rc;
    }
    rift_srv_account(ss);
    if (before < SRV_WRITE_BLOCKED &&
        rift_quic_stream_unacked(ss->qs) >= SRV_WRITE_BLOCKED) {
        /* Every write must make progress within io_timeout. */
        rift_server *srv = ss->conn->srv;
        ss->last_progress = rift_loop_now(srv->loop);
        rift_srv_arm(ss, ss->last_progress + srv->io_ns);
    }
    return 0;
}

int rift_srv_write_ok(srv_stream *ss, bool fin) {
    static const uint8_t ok[5] = {0, 0, 0, 1, RIFT_OP_OK};
    rift_quic_chunk ch = {ok, sizeof(ok), NULL, NULL};
    return rift_srv_write(ss, &ch, 1, fin);
}


/* Our side is over: no permit, no longer an open operation stream. */
static void become_done(srv_stream *ss) {
    ss->state = SS_DONE;
    ss->done_at = rift_loop_now(ss->conn->srv->loop);
    ss->mid = false;
    rift_srv_release_permit(ss);
    rift_srv_stop_waiting(ss);
    if (!op_in_flight(ss)) {
        /* A subscription or request ends here; so does a fetch that was
         * writing. What waits for the store stays for its completion. */
        drop_op(ss);
    }
}

/* A finished stream whose last bytes are not acknowledged gets one more
 * io_timeout for them (the SS_DONE check of stream_timer_cb). Usually a
 * no-op: the first-frame deadline's timer is still pending. */
static void linger(srv_stream *ss) {
    if (ss->qs != NULL && rift_quic_stream_unacked(ss->qs) > 0) {
        rift_srv_arm(ss, ss->done_at + ss->conn->srv->io_ns);
    }
}

void rift_srv_fail(srv_stream *ss, int code, const char *text) {
    if (ss->state == SS_DONE || ss->state == SS_REFUSED) {
        return;
    }
    become_done(ss);
    if (ss->qs == NULL) {
        if (ss->store_op == NULL) {
            rift_srv_stream_free(ss);
        }
        return;
    }
    uint8_t buf[RIFT_FRAME_PREFIX_BYTES + 5 + RIFT_FRAME_ERROR_TEXT_MAX];
    rift_ssize n = rift_frame_encode_error(
        buf, sizeof(buf), rift_error_wire_code(code), text, strlen(text));
    if (n > 0) {
        rift_quic_chunk ch = {buf, (size_t)n, NULL, NULL};
        (void)rift_srv_write(ss, &ch, 1, true);
    }
    rift_quic_stream_shutdown_read(ss->qs, 0);
    linger(ss);
}

void rift_srv_finish(srv_stream *ss) {
    if (ss->state == SS_DONE || ss->state == SS_REFUSED) {
        return;
    }
    become_done(ss);
    if (ss->qs == NULL) {
        if (ss->store_op == NULL) {
            rift_srv_stream_free(ss);
        }
        return;
    }
    (void)rift_srv_write(ss, NULL, 0, true);
    rift_quic_stream_shutdown_read(ss->qs, 0);
    linger(ss);
}

void rift_srv_fail_err(srv_stream *ss, const rift_error *err) {
    rift_srv_fail(ss, err->code, err->text);
}

/* A write failed because the peer stopped our side or the connection is
 * closing: nobody can read a reply any more, so end quietly. */
void rift_srv_write_failed(srv_stream *ss) {
    become_done(ss);
    if (ss->qs != NULL) {
        rift_quic_stream_shutdown_read(ss->qs, 0);
    }
}
