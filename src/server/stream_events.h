/*
 * stream_events.h — what the transport reports about a server stream
 * (server layer, stream_events.c): taking a stream into service, its bytes
 * (read into frames and dispatched to the handlers), reset, stop, ACK progress
 * and the end. session.c, which receives the transport's callbacks, calls
 * them.
 */
#ifndef RIFT_SERVER_STREAM_EVENTS_H
#define RIFT_SERVER_STREAM_EVENTS_H

#include "server/server_internal.h"

/* Takes a held or newly opened stream into service after authentication:
 * a permit (or refusal with code 2), the first-frame deadline, and the
 * bytes held so far. */
void rift_srv_stream_accept(srv_stream *ss);
/* Bytes of an operation stream (SS_HELD buffers them). */
void rift_srv_stream_data(srv_stream *ss, const uint8_t *data, size_t len,
                          bool fin);
void rift_srv_stream_reset(srv_stream *ss, uint64_t code);
void rift_srv_stream_stopped(srv_stream *ss);
void rift_srv_stream_acked(srv_stream *ss, uint64_t unacked);
/* The transport stream is gone: drop what depends on it. Frees the record
 * unless an asynchronous operation still holds it. */
void rift_srv_stream_closed(srv_stream *ss);

#endif /* RIFT_SERVER_STREAM_EVENTS_H */
