/*
 * kick_hold.c — the per-thread list of streams whose writer wake-up is
 * held (store layer; kick_hold.h says why and what it promises).
 */
#include "store/kick_hold.h"
#include "store/stage.h"
#include "store/stream_types.h"
#include "store/writer.h"

#include <pthread.h>

/* One per thread: only the holding thread reads or writes it. */
typedef struct kick_hold {
    bool held;
    size_t n;
    rift_stream *st[RIFT_KICK_HOLD_MAX];
} kick_hold;

static _Thread_local kick_hold tls_hold;

void rift_stream_hold_kicks(void) {
    tls_hold.held = true;
}

bool rift_stream_kicks_held(void) {
    return tls_hold.held;
}

bool rift_kick_hold_note(rift_stream *st) {
    kick_hold *h = &tls_hold;
    if (!h->held) {
        return false;
    }
    for (size_t i = 0; i < h->n; i++) {
        if (h->st[i] == st) {
            return true;
        }
    }
    if (h->n == RIFT_KICK_HOLD_MAX) {
        return false; /* full: the caller wakes this one now */
    }
    h->st[h->n++] = st;
    return true;
}

void rift_stream_flush_kicks(void) {
    kick_hold *h = &tls_hold;
    /* Not held any more before the first wake-up: nothing below defers. */
    h->held = false;
    size_t n = h->n;
    h->n = 0;
    for (size_t i = 0; i < n; i++) {
        rift_stream *st = h->st[i];
        /* A kick under the lock finds the writer either running — it
         * looks at the stage again before it waits — or waiting, and
         * wakes it. An empty stage means the writer took the noted
         * records already (another caller woke it): nothing to wake it
         * for (wait_work forgets a kick it found nothing for all the
         * same). */
        pthread_mutex_lock(&st->lock);
        if (!rift_stage_empty(&st->fill)) {
            rift_writer_kick(st);
        }
        pthread_mutex_unlock(&st->lock);
    }
}
