/*
 * thread_server.h — a bare QUIC server (no broker, no protocol) on its own
 * loop thread, for tests that script the server's side of the wire against
 * the C client: development certificates in a temp dir, 127.0.0.1 port 0,
 * the test's own transport callbacks.
 */
#ifndef RIFT_TESTS_THREAD_SERVER_H
#define RIFT_TESTS_THREAD_SERVER_H

#include "net/loop.h"
#include "quic/quic.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct thread_server {
    char *dir; /* temp dir holding the certificates */
    char ca[4200], cert[4200], key[4200];
    char addr[64]; /* "127.0.0.1:<port>" for the client */
    rift_loop *loop;
    rift_quic_endpoint *ep; /* NULL once stopped */
    pthread_t thread;
} thread_server;

/* Makes the certificates and starts the server with |cbs| (user data
 * |arg|) on a new thread. False on failure (what is made is left for
 * thread_server_stop). |ts| must be zeroed by the caller. */
bool thread_server_start(thread_server *ts, const rift_quic_callbacks *cbs,
                         void *arg);
/* Frees the endpoint on the loop thread, joins it, frees the loop and
 * removes the temp dir. Safe after a failed start. */
void thread_server_stop(thread_server *ts);

#endif /* RIFT_TESTS_THREAD_SERVER_H */
