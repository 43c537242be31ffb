/*
 * stream_record.h — the primitives of the protocol server (server layer,
 * stream_record.c): records and their lifetime, the connection's budget,
 * deadlines, writes, the error path and normal completion. Every file of
 * src/server may call them; they call no handler (server/handlers.h) and
 * no stream event (server/stream_events.h).
 */
#ifndef RIFT_SERVER_STREAM_RECORD_H
#define RIFT_SERVER_STREAM_RECORD_H

#include "server/server_internal.h"

/* Drops one reference to a connection record; frees it when none is
 * left. */
void rift_srv_conn_unref(srv_conn *c);

/* A new stream record for |qs| in |state|. NULL on allocation failure. */
srv_stream *rift_srv_stream_new(srv_conn *c, rift_quic_stream *qs,
                                srv_state state);
/* Frees a stream record (its transport stream is gone or never was) and
 * lets go of its operation (srv_op_hooks). */
void rift_srv_stream_free(srv_stream *ss);
/* Releases the stream's permit (its operation is over). */
void rift_srv_release_permit(srv_stream *ss);

/* Brings the stream's part of its connection's budget up to date (its
 * transport's unacknowledged bytes plus ss->extra). */
void rift_srv_account(srv_stream *ss);
/* True when the connection's budget is used up: the stream then waits
 * (its deadline armed) and is resumed once ACKs free room. */
bool rift_srv_conn_full(srv_stream *ss);
/* The stream no longer waits for room in its connection's budget. */
void rift_srv_stop_waiting(srv_stream *ss);

/* Arms the stream timer for |at| unless it fires earlier already. */
void rift_srv_arm(srv_stream *ss, rift_tstamp at);

/* Writes |n| chunks (and FIN); starts the write deadline. Returns 0 or
 * RIFT_ERR_CLOSED / RIFT_ERR_NOMEM (the chunks are then not owned). */
int rift_srv_write(srv_stream *ss, const rift_quic_chunk *chunks, size_t n,
                   bool fin);
/* Writes OK. */
int rift_srv_write_ok(srv_stream *ss, bool fin);

/* The error path of §2.7: ERROR (wire code from |code|, text cut to 1,024
 * bytes), FIN, STOP_SENDING(0); the stream is then SS_DONE. */
void rift_srv_fail(srv_stream *ss, int code, const char *text);
/* rift_srv_fail with a rift_error's code and text. */
void rift_srv_fail_err(srv_stream *ss, const rift_error *err);
/* Normal end of a one-shot operation: FIN (after what was written) and
 * STOP_SENDING(0); the stream is then SS_DONE. */
void rift_srv_finish(srv_stream *ss);
/* A write failed because the peer stopped our side or the connection is
 * closing: nobody can read a reply any more, so the stream ends quietly
 * (SS_DONE, its operation let go of). */
void rift_srv_write_failed(srv_stream *ss);

#endif /* RIFT_SERVER_STREAM_RECORD_H */
