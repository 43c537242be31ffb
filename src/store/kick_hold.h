/*
 * kick_hold.h — holding back writer wake-ups on one thread (store layer,
 * kick_hold.c). A thread that appends many records with callbacks in a
 * burst (the protocol server, one receive batch of STREAM_PUBLISH and
 * ACK frames) would otherwise wake a stream's writer at the first record
 * and have it race the rest of the burst for the stream lock, writing a
 * record or two per cycle. While held, an async commit with a callback
 * only stages its record and notes its stream (rift_kick_hold_note);
 * the flush wakes each noted stream's writer once, with the whole burst
 * staged.
 *
 * No wake-up is ever lost: a stream that does not fit in the list (more
 * than RIFT_KICK_HOLD_MAX streams in one burst) is woken at once, and the
 * flush wakes every noted stream, whatever happened to it meanwhile.
 * Blocking calls and async calls without a callback are never held.
 *
 * The holding thread must flush before it waits for anything the held
 * appends decide (their callbacks), and must keep every stream it appends
 * to while held open until the flush.
 */
#ifndef RIFT_STORE_KICK_HOLD_H
#define RIFT_STORE_KICK_HOLD_H

/* Only the public handle type: the server includes this header. */
#include "rift/stream.h"

#include <stdbool.h>

/* The streams one hold collects; the next one is woken at once. */
#define RIFT_KICK_HOLD_MAX 16

/* Starts holding this thread's writer wake-ups (again: no-op). */
void rift_stream_hold_kicks(void);
/* Whether this thread holds its writer wake-ups. */
bool rift_stream_kicks_held(void);
/* Ends the hold: wakes the writer of every stream noted since it began,
 * once each. No-op when nothing is held. */
void rift_stream_flush_kicks(void);

/* writer.c, under |st|'s lock, instead of rift_writer_kick for an async
 * commit with a callback: true when the wake-up is deferred to the flush
 * (held, and |st| is or now is in the list); false when the caller must
 * wake the writer now. */
bool rift_kick_hold_note(rift_stream *st);

#endif /* RIFT_STORE_KICK_HOLD_H */
