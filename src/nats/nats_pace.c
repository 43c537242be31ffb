/*
 * nats_pace.c — fast-producer pacing (nats layer). A NATS publisher can
 * send faster than a healthy subscriber reads; without pacing the backlog
 * piles up in the subscriber's outbound buffer until max_pending cuts a
 * client that was reading all along (a 1 M-message burst on a busy 2-CPU
 * machine went past 48 MiB). nats-server pauses such a publisher; so does
 * this file, with two limits that keep a stuck subscriber from slowing
 * anyone: a pause lasts at most producer_pause_ms and ends as soon as every
 * pressured subscriber is back under half of max_pending, and only a
 * subscriber whose socket took output within the last PROGRESS_NS counts
 * (one that stopped reading is left to max_pending and write_deadline).
 * Only NATS publishers are paced: their reads stop, the loop thread does
 * not wait, and publishers on the other faces are never paused.
 */
#include "nats/nats_internal.h"

/* A subscriber whose socket took nothing for this long is not reading. */
#define PROGRESS_NS (100ull * 1000000ull)

static bool over_half(const nats_conn *c) {
    return rift_nats_conn_pending(c) > c->srv->s.max_pending / 2;
}

static void resume_all(rift_nats *srv) {
    for (nats_conn *c = srv->conns; c != NULL; c = c->next) {
        if (c->paused) {
            /* Not read from here: this may run inside another
             * connection's delivery. The timer reads on the next turn. */
            (void)rift_timer_start(&c->read_timer, rift_loop_now(srv->loop));
        }
    }
}

static void unpressure(nats_conn *c) {
    rift_nats *srv = c->srv;
    c->pressured = false;
    if (--srv->n_pressured == 0) {
        resume_all(srv);
    }
}

void rift_nats_pace_delivered(nats_conn *c) {
    rift_nats *srv = c->srv;
    if (srv->s.producer_pause_ms == 0 || !over_half(c)) {
        return;
    }
    if (!c->pressured) {
        c->pressured = true;
        srv->n_pressured++;
    }
    if (rift_loop_now(srv->loop) - c->wrote_at < PROGRESS_NS) {
        srv->pressure = true;
    }
}

void rift_nats_pace_wrote(nats_conn *c) {
    c->wrote_at = rift_loop_now(c->srv->loop);
    if (c->pressured && !over_half(c)) {
        unpressure(c);
    }
}

unsigned rift_nats_pace_read_mask(const nats_conn *c) {
    return c->paused ? 0 : RIFT_IO_READ;
}

bool rift_nats_pace_after_read(nats_conn *c) {
    rift_nats *srv = c->srv;
    bool hit = srv->pressure;
    srv->pressure = false;
    if (hit) {
        /* What the sockets take now is not a backlog (output is otherwise
         * written at the end of the callback). */
        rift_nats_flush_dirty(srv);
    }
    if (!hit || c->closing || c->pressured || srv->n_pressured == 0) {
        /* A connection is not paused for its own backlog. */
        return false;
    }
    c->paused = true;
    atomic_fetch_add(&srv->producer_pauses, 1);
    (void)rift_io_update(&c->io, rift_nats_pace_read_mask(c) |
                                     (c->out.pending > 0 ? RIFT_IO_WRITE : 0));
    (void)rift_timer_start(&c->read_timer,
                           rift_loop_now(srv->loop) +
                               srv->s.producer_pause_ms * 1000000ull);
    return true;
}

void rift_nats_pace_resume(nats_conn *c) {
    if (!c->paused) {
        return;
    }
    c->paused = false;
    (void)rift_io_update(&c->io, RIFT_IO_READ |
                                     (c->out.pending > 0 ? RIFT_IO_WRITE : 0));
}

void rift_nats_pace_drop(nats_conn *c) {
    c->paused = false;
    if (c->pressured) {
        unpressure(c);
    }
}
