/*
 * store_op.h — the record of a one-shot store operation of the protocol
 * server (server layer, stream_ops.c), shared with the extension opcodes
 * (consumer_ext.c) so both submit to the store and complete the same way.
 */
#ifndef RIFT_SERVER_STORE_OP_H
#define RIFT_SERVER_STORE_OP_H

#include "server/server_internal.h"
#include "rift/stream.h"
#include "subject/name.h"

/* One portion of a fetch's records. It outlives the operation while
 * DELIVERY payloads sent zero-copy from it are unacknowledged: one
 * reference per pinned chunk plus one while it is the op's portion. */
typedef struct srv_portion {
    rift_server *srv;
    rift_batch batch;
    size_t refs;
    void *backend_priv; /* a backend's batch: freed by its batch_free */
} srv_portion;

/* A stream of the stream source, held until the operation ends. */
typedef struct srv_pin {
    void *token;
    bool held;
} srv_pin;

/* What an op keeps of its frame's names: allocated only by the ops that
 * use them later (rift_srv_op_names), so the per-message ops (publish,
 * fetch, ack on the store) carry none of it. */
typedef struct srv_op_names {
    /* CONSUMER_OPEN_EXT: the client's consumer name. */
    char name[RIFT_NAME_MAX + 1];
    size_t name_len;
    /* A backend op: the stream and the scoped consumer a fetch asks
     * again for its next portion. */
    char stream[RIFT_NAME_MAX + 1];
    size_t stream_len;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
} srv_op_names;

struct srv_store_op {
    rift_server *srv;
    srv_pin pin;    /* released last, in op_free */
    srv_stream *ss; /* NULL once detached from its stream */
    uint8_t opcode;
    bool in_store; /* submitted; the completion is not back yet */
    /* On srv->done_head between the store's completion and the drain. */
    srv_store_op *done_next;
    int status;
    /* The failure's text, allocated only when the op fails (NULL: the
     * text is rift_strerror(status)); freed with the op. A record per
     * message must stay small: an embedded rift_error was a kilobyte. */
    rift_error *err;
    rift_stored stored;
    rift_consumer *consumer;
    uint64_t payload_len;
    /* CONSUMER_OPEN of a new consumer: the quota unit it took, given back
     * if the open fails. */
    bool quota_consumer;
    size_t quota_slot;
    /* CONSUMER_FETCH: the portion being written, the next record of it
     * to write, the payload bytes not written yet, how many records the
     * client may still get, and whether the store stopped at
     * SRV_FETCH_BYTES (it may have more). */
    srv_portion *portion;
    size_t next;
    uint64_t unwritten;
    size_t left;
    bool more;
    /* Set by an extension opcode: writes its answer once the store is
     * done (instead of OK), before the stream finishes. */
    void (*answer)(srv_stream *ss, srv_store_op *op);
    /* Set by an op that words its own failure (it fails |ss|): a backend
     * stream's info hides its errors from an identity that may not read
     * the stream. */
    void (*fail_answer)(srv_stream *ss, srv_store_op *op);
    /* CONSUMER_OPEN_EXT: the client's consumer name (in |names|) and
     * whether this open created the consumer. */
    bool created;
    /* CONSUMER_DELETE: give the identity's consumer unit back once the
     * delete succeeded (whether or not the client still listens). */
    bool quota_release;
    /* CONSUMER_FETCH_WAIT: the append watch it waits on (NULL for a plain
     * fetch, and once it stopped waiting), its deadline timer, whether it
     * is parked on srv->fetch_waiters, and the records it delivered. */
    srv_watch *watch;
    rift_timer wait_timer;
    bool wait_timer_set;
    bool parked;
    srv_store_op *wprev, *wnext;
    size_t delivered;
    /* On a stream of the stream backend (stream_backend.c); its stream
     * and scoped consumer are in |names|. */
    bool backend;
    /* A backend's CONSUMER_FETCH_WAIT: how long its first portion may
     * wait (0 once asked). */
    uint32_t backend_wait_ms;
    /* A backend op's answer: in the server's memory (|backend_out|, a
     * rift_server_backend_consumer or _stream_info), or the backend's
     * (|backend_list|, |backend_count| consumers, its batch_free's). */
    void *backend_out;
    rift_server_backend_consumer *backend_list;
    size_t backend_count;
    uint64_t purged;
    /* Names kept past the frame, for the few ops that need them. */
    srv_op_names *names;
};


/* A new operation record for |ss| (now SS_BUSY, owned by the op); NULL
 * when out of memory. */
srv_store_op *rift_srv_op_new(srv_stream *ss, uint8_t opcode);
/* |op|'s names, allocated (zeroed) on first use; NULL when out of
 * memory. */
srv_op_names *rift_srv_op_names(srv_store_op *op);
/* The store's completion callback for every _async call of an op. */
void rift_srv_op_done_cb(void *user_data, int status, const rift_error *err);
/* The common tail of a submission: |rc| what the _async call returned,
 * |completed| what it set. Counts store_inflight down as needed (the
 * caller counted it up before the call). */
void rift_srv_op_submitted(srv_store_op *op, int rc, bool completed,
                           const rift_error *err);
/* The served stream |name| (the table, then the stream source, whose
 * stream stays pinned in |pin| until rift_srv_unpin or, once the pin is
 * moved into an op's |pin|, until the op is freed), or NULL after failing
 * |ss| with "unknown stream" (nothing pinned). */
rift_stream *rift_srv_lookup_stream(srv_stream *ss, const char *name,
                                    size_t len, srv_pin *pin);
/* Releases |pin| if it holds a stream (|appended|: records were stored). */
void rift_srv_unpin(rift_server *srv, srv_pin *pin, bool appended);
/* Scopes a decoded consumer name (§3.5); 0, or the stream failed. */
int rift_srv_scope_name(srv_stream *ss, unsigned decoded, const char *name,
                        size_t len, int decode_rc, const rift_error *derr,
                        char out[RIFT_SCOPED_CONSUMER_SIZE]);

/* ---- The stream backend (stream_backend.c) ---- */

/* Whether the backend serves stream |name|. */
bool rift_srv_backend_serves(const rift_server *srv, const char *name,
                             size_t len);
/* The backend's STREAM_PUBLISH, CONSUMER_OPEN and ACK, after the checks
 * stream_ops.c makes before a stream lookup; each answers or fails |ss|. */
void rift_srv_backend_publish(srv_stream *ss, const char *stream,
                              size_t stream_len, const char *subject,
                              size_t subject_len, const char *reply,
                              size_t reply_len, const uint8_t *payload,
                              size_t payload_len);
/* CONSUMER_OPEN (|ext| false; answers OK) and CONSUMER_OPEN_EXT
 * (answers CONSUMER_INFO); |name| the client's own name. A consumer the
 * open makes counts in the identity's consumer quota, as on a store
 * stream; at its quota the identity may still open its existing ones. */
void rift_srv_backend_open(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *scoped,
                           const char *name, size_t name_len,
                           const rift_consumer_config *cfg, bool ext);
void rift_srv_backend_ack(srv_stream *ss, const char *stream, size_t stream_len,
                          const char *scoped, uint64_t sequence);
/* NAK/TERM/PROGRESS on a backend stream; false when the backend has no
 * |settle| (the caller goes on as for a store stream). */
bool rift_srv_backend_settle(srv_stream *ss, uint8_t opcode, const char *stream,
                             size_t stream_len, const char *scoped,
                             uint64_t sequence, uint64_t delay_ms);

/* CONSUMER_DELETE on a backend stream (a deleted consumer gives its
 * quota unit back); false when the backend has no |consumer_delete|. */
bool rift_srv_backend_delete(srv_stream *ss, const char *stream,
                             size_t stream_len, const char *scoped);

/* CONSUMER_INFO_GET, CONSUMER_LIST, STREAM_INFO_GET and STREAM_PURGE on a
 * backend stream (stream_backend_ext.c); false when the backend has no
 * such function (the caller goes on as for a store stream). */
bool rift_srv_backend_info(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *scoped,
                           const char *name, size_t name_len);
bool rift_srv_backend_list(srv_stream *ss, const char *stream,
                           size_t stream_len, const char *after,
                           size_t after_len, uint32_t limit);
bool rift_srv_backend_stream_info(srv_stream *ss, const char *stream,
                                  size_t stream_len);
bool rift_srv_backend_purge(srv_stream *ss, const char *stream,
                            size_t stream_len);
/* The backend op record shared by stream_backend*.c (NULL after failing
 * |ss|); |scoped| may be NULL. */
srv_store_op *rift_srv_backend_op(srv_stream *ss, uint8_t opcode,
                                  const char *stream, size_t stream_len,
                                  const char *scoped);
/* Writes CONSUMER_INFO for |info| under the client's |name|; 0 or
 * nonzero (failed or not written; consumer_ext.c). */
int rift_srv_write_consumer_info(srv_stream *ss, const rift_consumer_info *info,
                                 const char *name, size_t name_len,
                                 bool created);

/* |wait_ms| > 0: CONSUMER_FETCH_WAIT (its first portion may wait). */
srv_store_op *rift_srv_backend_fetch_op(srv_stream *ss, const char *stream,
                                        size_t stream_len, const char *scoped,
                                        uint32_t limit, uint32_t wait_ms);
/* Asks the backend for |op|'s next portion |p|; the _async contract. */
int rift_srv_backend_fetch(srv_store_op *op, srv_portion *p, rift_error *err);
/* Releases a portion's backend records. */
void rift_srv_backend_batch_free(rift_server *srv, srv_portion *p);

#endif /* RIFT_SERVER_STORE_OP_H */
