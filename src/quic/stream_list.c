/*
 * stream_list.c — the stream records of a QUIC connection and the
 * connection's stream lists (quic layer): all streams, streams with data to
 * send (round robin) and streams with pending ngtcp2 operations.
 */
#include "quic/quic_internal.h"
#include "common/dlist.h"

#include <stddef.h>

void rift_quic_ops_add(rift_quic_stream *s) {
    if (s->flags & STREAM_IN_OPS) {
        return;
    }
    s->flags |= STREAM_IN_OPS;
    s->ops_next = s->conn->ops;
    s->conn->ops = s;
}

static void unlink_from(rift_quic_stream **head, rift_quic_stream *s,
                        size_t next_off) {
    for (rift_quic_stream **pp = head; *pp;
         pp = (rift_quic_stream **)((char *)*pp + next_off)) {
        if (*pp == s) {
            *pp = *(rift_quic_stream **)((char *)s + next_off);
            return;
        }
    }
}

rift_quic_stream *rift_quic_stream_new(rift_quic_conn *c, int64_t id,
                                       void *ud) {
    rift_quic_stream *s = rift_calloc(c->ep->mem, 1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->conn = c;
    s->id = id;
    s->user_data = ud;
    rift_sendq_init(&s->q, c->ep->mem);
    RIFT_DLIST_PUSH(c->streams, s, all_prev, all_next);
    return s;
}

/* Unlinks and frees |s|; releases every queued chunk. */
void rift_quic_stream_free(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (s->flags & STREAM_WATCH_STOP) {
        c->nwatch--;
    }
    rift_quic_ready_remove(s);
    if (s->flags & STREAM_IN_OPS) {
        unlink_from(&c->ops, s, offsetof(rift_quic_stream, ops_next));
    }
    if (s->flags & STREAM_IN_EVENTS) {
        unlink_from(&c->events, s, offsetof(rift_quic_stream, ev_next));
    }
    RIFT_DLIST_REMOVE(c->streams, s, all_prev, all_next);
    rift_sendq_clear(&s->q);
    rift_free(c->ep->mem, s);
}
