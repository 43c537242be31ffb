/*
 * handlers.h — the operation handlers of the protocol server (server
 * layer) and what the layers above them call besides: publish.c
 * (PUBLISH, PUBLISH_ACK, PING), deliver.c (SUBSCRIBE, REQUEST, MESSAGE
 * delivery), stream_ops.c (opcodes 10, 12, 13, 15 and the table of served
 * streams), consumer_ext.c (the extension opcodes). Every handler takes the
 * same srv_frame (server/server_internal.h); stream_events.c dispatches to
 * them. They use the primitives of server/stream_record.h and nothing above.
 */
#ifndef RIFT_SERVER_HANDLERS_H
#define RIFT_SERVER_HANDLERS_H

#include "server/server_internal.h"
#include "codec/frame_ext.h"

/* ---- publish.c ---- */

/* PUBLISH and PUBLISH_ACK (the ACK variant answers OK). */
void rift_srv_publish(srv_stream *ss, const srv_frame *f);
/* PING: OK. */
void rift_srv_ping(srv_stream *ss, const srv_frame *f);

/* ---- deliver.c ---- */

/* SUBSCRIBE: the stream turns into a delivery stream. */
void rift_srv_subscribe(srv_stream *ss, const srv_frame *f);
/* REQUEST: an inbox, the publish, one reply or the timeout. */
void rift_srv_request(srv_stream *ss, const srv_frame *f);
/* The notifier fd is readable: drain every ready subscription. */
void rift_srv_notify_cb(rift_io *io, unsigned events, void *arg);
/* Drains every ready subscription now. */
void rift_srv_drain_now(rift_server *srv);
/* Transport callback: a receive batch is done (drain before its flush). */
void rift_srv_rx_batch_done(void *ep_ud);
/* The stream's unacknowledged bytes dropped: resume a throttled drain. */
void rift_srv_delivery_resume(srv_stream *ss);

/* ---- consumer_ext.c ---- */

/* The extension opcodes 16, 18, 20, 21 (codec/frame_ext.h); dispatches
 * 22..33 to their files. */
void rift_srv_ext_op(srv_stream *ss, const srv_frame *f);
/* The CONSUMER_INFO fields of |info| under the client's |name| (|f| points
 * into |info| and |name|). */
void rift_srv_consumer_info_frame(const rift_consumer_info *info,
                                  const char *name, size_t name_len,
                                  bool created, rift_frame_consumer_info *f);

/* ---- consumer_ext_list.c ---- */

/* CONSUMER_LIST (26): answers CONSUMER_LIST_RESULT or fails |ss|. */
void rift_srv_consumer_list(srv_stream *ss, const srv_frame *f);

/* ---- consumer_ext_ack.c ---- */

/* The extension opcodes 23, 24, 25 (codec/frame_ext_ack.h). */
void rift_srv_ext_ack_op(srv_stream *ss, const srv_frame *f);

/* ---- push_stream.c ---- */
/* PUSH_OPEN (34), and PUSH_ACK (35) sent outside a push stream. */
void rift_srv_push_op(srv_stream *ss, const srv_frame *f);
/* Bytes read on a push stream (SS_PUSH): PUSH_ACK frames, FIN. */
void rift_srv_push_data(srv_stream *ss, const uint8_t *data, size_t len,
                        bool fin);
/* Room on the stream or its connection, or an ack: the push pumps on. */
void rift_srv_push_resume(srv_stream *ss);

/* ---- stream_ext.c ---- */

/* The stream extensions 28, 30..33 (codec/frame_ext_stream.h). */
void rift_srv_stream_ext(srv_stream *ss, const srv_frame *f);
/* Whether the host makes streams at run time (EXT_INFO lists them). */
bool rift_srv_stream_admin_offered(const rift_server *srv);

/* ---- stream_ops.c ---- */

/* Opcodes 10, 12, 13, 15. */
void rift_srv_stream_op(srv_stream *ss, const srv_frame *f);
/* True while the stream's operation waits for the store. */
bool rift_srv_store_in_flight(const srv_stream *ss);
/* The client of |ss| is gone while its operation is in the store: a
 * backend's waiting fetch is told (rift_server_stream_backend.abandon). */
void rift_srv_store_abandon(srv_stream *ss);
/* Room on the stream or its connection: a fetch writes on. */
void rift_srv_fetch_resume(srv_stream *ss);
/* Copies the settings' streams into the server's sorted table (names
 * checked, duplicates refused), and frees it. */
int rift_srv_streams_copy(rift_server *srv, const rift_server_settings *s,
                          rift_error *err);
void rift_srv_streams_free(rift_server *srv);
/* CONSUMER_FETCH_WAIT (22): a fetch that parks until a publish or its
 * deadline when it finds nothing. */
void rift_srv_fetch_wait(srv_stream *ss, const srv_frame *f);
/* Installs (|on|) or removes the append watch of every served stream,
 * which wakes parked fetches; on with the loop running, off before the
 * loop goes. */
void rift_srv_streams_watch(rift_server *srv, bool on);

#endif /* RIFT_SERVER_HANDLERS_H */
