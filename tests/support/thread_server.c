/*
 * thread_server.c — a bare QUIC server on its own loop thread (see
 * thread_server.h).
 */
#include "thread_server.h"

#include "quic/certgen.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

static void *server_thread(void *arg) {
    rift_loop_run(((thread_server *)arg)->loop);
    return NULL;
}

bool thread_server_start(thread_server *ts, const rift_quic_callbacks *cbs,
                         void *arg) {
    rift_error err;
    if ((ts->dir = rift_test_tmpdir()) == NULL ||
        rift_certgen_dev(ts->dir, NULL, &err) != 0 ||
        rift_loop_new(&ts->loop, NULL) != 0) {
        return false;
    }
    snprintf(ts->ca, sizeof(ts->ca), "%s/ca.pem", ts->dir);
    snprintf(ts->cert, sizeof(ts->cert), "%s/server.pem", ts->dir);
    snprintf(ts->key, sizeof(ts->key), "%s/server.key", ts->dir);
    rift_quic_settings qs;
    rift_quic_settings_default(&qs);
    qs.cert_file = ts->cert;
    qs.key_file = ts->key;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (rift_quic_server_new(&ts->ep, ts->loop, (struct sockaddr *)&sa,
                             sizeof(sa), &qs, cbs, arg, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return false;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    rift_quic_endpoint_local_addr(ts->ep, &ss, &len);
    snprintf(ts->addr, sizeof(ts->addr), "127.0.0.1:%u",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
    if (pthread_create(&ts->thread, NULL, server_thread, ts) != 0) {
        rift_quic_endpoint_del(ts->ep);
        ts->ep = NULL;
        return false;
    }
    return true;
}

/* Runs on the loop thread: the endpoint belongs to it. */
static void shutdown_cb(void *arg, int status) {
    thread_server *ts = arg;
    (void)status;
    rift_quic_endpoint_del(ts->ep);
    ts->ep = NULL;
    rift_loop_stop(ts->loop);
}

void thread_server_stop(thread_server *ts) {
    if (ts->ep != NULL) {
        rift_loop_post(ts->loop, shutdown_cb, ts);
        pthread_join(ts->thread, NULL);
    }
    if (ts->loop != NULL) {
        rift_loop_del(ts->loop);
        ts->loop = NULL;
    }
    if (ts->dir != NULL) {
        rift_test_rmdir(ts->dir);
        ts->dir = NULL;
    }
}
