/*
 * client_push.h — the C client's push consumer (included by
 * rift/client.h): a stream of its own on which the server pushes a durable
 * consumer's records, never more than max_in_flight unacknowledged, and
 * delivers again what is not acknowledged within the ack wait
 * (docs/protocol-v1.md E.5, PUSH_OPEN and PUSH_ACK; servers listing the
 * feature "push"). Conventions of rift/client.h.
 *
 * Threading: the callback runs on the client's internal thread — the one
 * that runs the connection — once per delivery, in the server's order,
 * and possibly before rift_client_push_open has returned (it gets the
 * handle). Like the asynchronous calls' callbacks it must be short and
 * must not block (no blocking rift_* call); rift_client_push_ack may be
 * called from it and from any other thread.
 */
#ifndef RIFT_CLIENT_PUSH_H
#define RIFT_CLIENT_PUSH_H

#ifndef RIFT_CLIENT_H
# error "include rift/client.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rift_client_push rift_client_push;

/** The push's settings. */
typedef struct rift_client_push_config {
    /** Unacknowledged deliveries at most, 1..65,535 (default 1,024; the
     * consumer's max_ack_pending bounds them as well). */
    uint32_t max_in_flight;
    /** 0 keeps the consumer's ack wait (default); 1..3,600,000 ms
     * replaces it while the server runs. */
    uint32_t ack_wait_ms;
} rift_client_push_config;

RIFT_EXTERN void rift_client_push_config_default(rift_client_push_config *cfg);

/**
 * The push callback. |status| 0: one delivery in |d| (valid during the
 * call; the callback owns one reference to d->msg and releases it with
 * rift_msg_unref, now or later, from any thread). Otherwise the push has
 * ended — |err| (valid during the call) says why: the server's ERROR
 * (RIFT_ERR_REMOTE, RIFT_ERR_PERMISSION), RIFT_ERR_CLOSED ("QUIC stream
 * closed"), RIFT_ERR_PROTOCOL, RIFT_ERR_CONNECTION, RIFT_ERR_NOMEM — and
 * no further call follows. A push ended by rift_client_push_close gets no
 * such call.
 */
typedef void (*rift_client_push_cb)(void *user_data, rift_client_push *push,
                                    int status, const rift_client_delivery *d,
                                    const rift_error *err);

/**
 * rift_client_push_open starts pushing the records of this identity's
 * consumer |name| of |stream| (opened beforehand with
 * rift_client_consumer_open or _open_ext) and waits for the server's OK.
 * On success *|push| is the handle (release it with rift_client_push_close).
 * |cfg| NULL means the defaults.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("push max_in_flight must be
 * 1..65535", "push ack wait must be 0..3600000 ms", no callback, string
 * texts); RIFT_ERR_REMOTE ("unknown stream", "consumer does not exist",
 * "consumer already has a push stream", "unknown opcode" from a server
 * without the extension, ...); RIFT_ERR_PERMISSION; RIFT_ERR_PROTOCOL;
 * RIFT_ERR_TIMEOUT; RIFT_ERR_CLOSED; RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_push_open(rift_client *c, const char *stream,
                                      size_t stream_len, const char *name,
                                      size_t name_len,
                                      const rift_client_push_config *cfg,
                                      rift_client_push_cb cb, void *user_data,
                                      rift_client_push **push, rift_error *err);

/**
 * rift_client_push_ack acknowledges delivery |sequence| (PUSH_ACK on the
 * push stream) without waiting: the server answers nothing, and lets one
 * more record through. Acks made in a row leave together. An ack of a
 * sequence that is not pending is ignored by the server.
 *
 * Errors: RIFT_ERR_CLOSED ("push ended": the push ended or was closed);
 * RIFT_ERR_CONNECTION; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_client_push_ack(rift_client_push *push, uint64_t sequence,
                                     rift_error *err);

/**
 * rift_client_push_close ends the push — the acks made so far, then FIN
 * (deliveries still on their way are dropped; the consumer's durable
 * state stays, and what was not acknowledged is delivered again after its
 * ack wait) — and releases the handle. Once it returns the
 * callback is not running and will not be called again (from the
 * callback itself it returns at once, the callback having been the
 * last). From another thread it also waits (up to the operation
 * timeout) until the transport reports the acks made before it received
 * by the server, so a program may exit right after. NULL is a no-op.
 */
RIFT_EXTERN void rift_client_push_close(rift_client_push *push);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_CLIENT_PUSH_H */
