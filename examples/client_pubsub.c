/*
 * client_pubsub.c — example: connect to a Rift server with the C client,
 * subscribe, publish through a dedicated publisher (pipelined, then a
 * flush barrier), receive the messages, and close.
 *
 *   example_client_pubsub [HOST:PORT CA_FILE SERVER_NAME TOKEN]
 *
 * TOKEN is the token itself, not a file. Each setting missing from the
 * command line comes from RIFT_SERVER, RIFT_CA, RIFT_SERVER_NAME and
 * RIFT_TOKEN, else, like the rift CLI, from riftd's development default
 * when its data directory ($RIFT_HOME, else ./rift-data) exists:
 * $RIFT_DEV_LISTEN or 127.0.0.1:7443, DIR/tls/ca.pem, localhost and the
 * token stored in DIR/dev.token. Run it where riftd runs its development
 * default and it needs no arguments. Uses the public API only
 * (include/rift/client.h).
 */
#include "rift/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *arg_or_env(int argc, char **argv, int i, const char *env) {
    if (argc > i) {
        return argv[i];
    }
    const char *v = getenv(env);
    return v != NULL && *v != '\0' ? v : NULL;
}

/* riftd's development data directory, as the CLI finds it. */
static const char *dev_dir(void) {
    const char *home = getenv("RIFT_HOME");
    const char *dir = home != NULL && *home != '\0' ? home : "rift-data";
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? dir : NULL;
}

/* The first line of DIR/dev.token, into |buf|; NULL when unreadable. */
static const char *dev_token(const char *dir, char *buf, size_t size) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/dev.token", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok && buf[0] != '\0' ? buf : NULL;
}

int main(int argc, char **argv) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = arg_or_env(argc, argv, 1, "RIFT_SERVER");
    s.ca_file = arg_or_env(argc, argv, 2, "RIFT_CA");
    s.server_name = arg_or_env(argc, argv, 3, "RIFT_SERVER_NAME");
    s.token = arg_or_env(argc, argv, 4, "RIFT_TOKEN");
    const char *dir = dev_dir();
    char ca[4200], token[4200];
    if (dir != NULL && s.address == NULL) {
        s.address = getenv("RIFT_DEV_LISTEN");
        if (s.address == NULL || *s.address == '\0') {
            s.address = "127.0.0.1:7443";
        }
    }
    if (dir != NULL && s.ca_file == NULL) {
        snprintf(ca, sizeof(ca), "%s/tls/ca.pem", dir);
        s.ca_file = ca;
    }
    if (dir != NULL && s.token == NULL) {
        s.token = dev_token(dir, token, sizeof(token));
    }
    if (s.address == NULL || s.ca_file == NULL || s.token == NULL) {
        fprintf(stderr,
                "usage: %s HOST:PORT CA_FILE SERVER_NAME TOKEN\n"
                "(or run it where riftd keeps rift-data, or set "
                "RIFT_HOME)\n",
                argv[0]);
        return 2;
    }
    if (s.server_name == NULL) {
        s.server_name = "localhost";
    }

    rift_error err;
    rift_client *c;
    if (rift_client_new(&c, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return 1;
    }

    /* The subscription exists once this returns: nothing published after
     * it can be missed. */
    rift_client_sub *sub;
    if (rift_client_subscribe(c, "demo.>", 6, NULL, 0, &sub, &err) != 0) {
        fprintf(stderr, "subscribe: %s\n", err.text);
        rift_client_del(c);
        return 1;
    }

    /* A dedicated publisher keeps its messages in order. publish() only
     * queues; flush() returns once the server has routed all of them. */
    rift_publisher *pub;
    if (rift_client_publisher_open(c, &pub, &err) != 0) {
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
        if (rift_client_sub_recv(sub, 5000000000LL, &m, &err) != 0) {
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
    rift_client_sub_close(sub);
    rift_client_del(c);
    return 0;
}
