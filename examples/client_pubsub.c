/*
 * client_pubsub.c — example: connect to a Rift server with the C client,
 * subscribe, publish through a dedicated publisher (pipelined, then a
 * flush barrier), receive the messages, and close.
 *
 *   example_client_pubsub [HOST:PORT CA_FILE SERVER_NAME TOKEN]
 *
 * Without arguments the connection comes from RIFT_SERVER, RIFT_CA,
 * RIFT_SERVER_NAME and RIFT_TOKEN (riftd's development default is
 * 127.0.0.1:7443, rift-data/tls/ca.pem, localhost, rift-data/dev.token).
 * Uses the public API only (include/rift/client.h).
 */
#include "rift/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arg_or_env(int argc, char **argv, int i, const char *env) {
    if (argc > i) {
        return argv[i];
    }
    return getenv(env);
}

int main(int argc, char **argv) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = arg_or_env(argc, argv, 1, "RIFT_SERVER");
    s.ca_file = arg_or_env(argc, argv, 2, "RIFT_CA");
    s.server_name = arg_or_env(argc, argv, 3, "RIFT_SERVER_NAME");
    s.token = arg_or_env(argc, argv, 4, "RIFT_TOKEN");
    if (s.address == NULL || s.ca_file == NULL || s.token == NULL) {
        fprintf(stderr, "usage: %s HOST:PORT CA_FILE SERVER_NAME TOKEN\n",
                argv[0]);
        return 2;
    }
    if (s.server_name == NULL) {
        s.server_name = "localhost";
    }

    rift_error err;
    rift_client *c;
    if (rift_client_connect(&c, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return 1;
    }

    /* The subscription exists once this returns: nothing published after
     * it can be missed. */
    rift_subscription *sub;
    if (rift_client_subscribe(c, "demo.>", 6, NULL, 0, &sub, &err) != 0) {
        fprintf(stderr, "subscribe: %s\n", err.text);
        rift_client_close(c);
        return 1;
    }

    /* A dedicated publisher keeps its messages in order. publish() only
     * queues; flush() returns once the server has routed all of them. */
    rift_publisher *pub;
    if (rift_client_publisher(c, &pub, &err) != 0) {
        fprintf(stderr, "publisher: %s\n", err.text);
        goto out;
    }
    enum {
        N = 5
    };
    for (int i = 0; i < N; i++) {
        char text[64];
        int n = snprintf(text, sizeof(text), "hello #%d", i);
        if (rift_publisher_publish(pub, "demo.greeting", 13, NULL, 0,
                                   (const uint8_t *)text, (size_t)n,
                                   &err) != 0) {
            fprintf(stderr, "publish: %s\n", err.text);
            break;
        }
    }
    if (rift_publisher_flush(pub, &err) != 0) {
        fprintf(stderr, "flush: %s\n", err.text);
    }
    rift_publisher_close(pub);

    for (int i = 0; i < N; i++) {
        rift_msg *m;
        /* Wait at most five seconds for each message. */
        if (rift_subscription_recv(sub, 5000000000LL, &m, &err) != 0) {
            fprintf(stderr, "receive: %s\n", err.text);
            break;
        }
        size_t len;
        const uint8_t *payload = rift_msg_payload(m, &len);
        printf("%s: %.*s\n", rift_msg_subject(m, NULL), (int)len,
               payload != NULL ? (const char *)payload : "");
        rift_msg_unref(m);
    }

out:
    rift_subscription_close(sub);
    rift_client_close(c);
    return 0;
}
