/*
 * cluster_client.h — the cluster integration tests' calls over one
 * connected rift_client (tests layer; tests/integration/test_cluster*.c on
 * cluster_fix.h): publish, subscribe and take one message; publish to,
 * fetch from and ack on the replicated stream CL_STREAM that the JetStream
 * cluster tests configure (CL_ORDERS_LUA); a monotonic clock in ms.
 * No call asserts: each returns what happened, prints why it failed to
 * stderr where that says so, and the test checks the result.
 */
#ifndef RIFT_TESTS_CLUSTER_CLIENT_H
#define RIFT_TESTS_CLUSTER_CLIENT_H

#include "rift/client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The replicated stream of the cluster stream tests and its subject. */
#define CL_STREAM  "orders"
#define CL_SUBJECT "orders.created"
/* cluster_fix_opts.streams for it: 'orders.>', three replicas. */
#define CL_ORDERS_LUA "{ orders = { subjects = { 'orders.>' }, replicas = 3 } }"
/* How long the tests give cluster_fix_wait_replicated, and any other
 * condition they poll. */
#define CL_READY_MS 60000
#define CL_WAIT_MS  20000

/* CLOCK_MONOTONIC in milliseconds. */
int64_t cl_now_ms(void);

/* PUBLISH |payload| on |subject| and wait for the client's answer (the
 * client's own timeout). True on success; prints the error otherwise. */
bool cl_pub(rift_client *c, const char *subject, const char *payload);

/* SUBSCRIBE to |pattern|, in queue group |queue| unless NULL; the
 * subscription (rift_client_sub_close it), or NULL with the error
 * printed. */
rift_client_sub *cl_sub(rift_client *c, const char *pattern, const char *queue);

/* Takes the next message of |s| within |ms| and copies its payload,
 * NUL-terminated and cut to |cap| - 1 bytes, into |buf|. False when none
 * came in time (nothing printed). */
bool cl_next(rift_client_sub *s, int ms, char *buf, size_t cap);

/* STREAM_PUBLISH |payload| on |subject| to CL_STREAM and wait for STORED
 * (the client's operation timeout). 0, with the STORED sequence in *|seq|
 * (when not NULL), or the error code with |err| set and *|seq| 0. Prints
 * nothing. */
int cl_spub(rift_client *c, const char *subject, const char *payload,
            uint64_t *seq, rift_error *err);

/* cl_spub of |payload| on CL_SUBJECT: the STORED sequence, or 0 with the
 * error printed. */
uint64_t cl_spub1(rift_client *c, const char *payload);

/* One fetched record, copied out of its message. */
typedef struct cl_rec {
    uint64_t seq, ts; /* sequence; stored at, ms since the epoch */
    uint32_t count;   /* delivery count */
    char payload[32]; /* cut to 31 bytes */
    char subject[64];
} cl_rec;

/* CONSUMER_FETCH of up to |limit| (at most CL_FETCH_MAX) records of
 * consumer |name| on CL_STREAM into |out|, acking none; with |wait_ms| > 0
 * CONSUMER_FETCH_WAIT, which waits that long for a first record. The number
 * fetched, or -1 with the error printed. */
#define CL_FETCH_MAX 256
int cl_fetch(rift_client *c, const char *name, uint32_t limit, uint32_t wait_ms,
             cl_rec *out);

/* ACK sequence |seq| of consumer |name| on CL_STREAM and wait for the
 * answer: 0 or the error code with |err| set. Prints nothing. */
int cl_ack(rift_client *c, const char *name, uint64_t seq, rift_error *err);

/* cl_ack that prints the error: true when acked. */
bool cl_ack1(rift_client *c, const char *name, uint64_t seq);

#endif /* RIFT_TESTS_CLUSTER_CLIENT_H */
