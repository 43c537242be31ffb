/*
 * natsraw.c — the NATS listener fixture and raw client of natsraw.h.
 */
#include "natsraw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int add_id(rift_identity *id, const char *name, const char *token,
                  const char *const *pub, const char *const *sub) {
    rift_identity_init(id, NULL);
    int rc = rift_identity_set_name(id, name, strlen(name));
    if (rc == 0) {
        rc = rift_identity_set_token(id, token, strlen(token));
    }
    for (size_t i = 0; rc == 0 && pub[i] != NULL; i++) {
        rc = rift_identity_allow_publish(id, pub[i], strlen(pub[i]));
    }
    for (size_t i = 0; rc == 0 && sub[i] != NULL; i++) {
        rc = rift_identity_allow_subscribe(id, sub[i], strlen(sub[i]));
    }
    return rc;
}

int natsraw_start(natsraw_fix *f, void (*tweak)(rift_nats_settings *s)) {
    static const char *const a_pub[] = {"a.>", "svc.>", "_INBOX.>", NULL};
    static const char *const a_sub[] = {"a.>", NULL};
    static const char *const b_pub[] = {"svc.>", "b.>", "_INBOX.>", NULL};
    static const char *const b_sub[] = {"svc.>", "b.>", "_INBOX.>", NULL};
    static const char *const c_all[] = {"c.>", NULL};
    memset(f, 0, sizeof(*f));
    rift_identity ids[3];
    int rc = rift_broker_new(&f->broker, NULL, NULL);
    if (rc != 0) {
        return rc;
    }
    rc = add_id(&ids[0], "alice", NATSRAW_ALICE, a_pub, a_sub);
    if (rc == 0) {
        rc = add_id(&ids[1], "bob", NATSRAW_BOB, b_pub, b_sub);
    }
    if (rc == 0) {
        rc = add_id(&ids[2], "carol", NATSRAW_CAROL, c_all, c_all);
    }
    rift_nats_settings s;
    rift_nats_settings_default(&s);
    struct sockaddr_in *sa = (struct sockaddr_in *)&s.addr;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa->sin_port = 0;
    s.addr_len = sizeof(*sa);
    s.listen = "127.0.0.1:0";
    s.identities = ids;
    s.identity_count = 3;
    if (tweak != NULL) {
        tweak(&s);
    }
    rift_error err = {0};
    if (rc == 0) {
        rc = rift_nats_new(&f->nats, f->broker, &s, &err);
    }
    if (rc == 0) {
        rc = rift_nats_start(f->nats, &err);
    }
    for (size_t i = 0; i < 3; i++) {
        rift_identity_free(&ids[i]);
    }
    if (rc != 0) {
        fprintf(stderr, "natsraw_start: %s\n", err.text);
        natsraw_stop(f);
        return rc;
    }
    const char *addr = rift_nats_address(f->nats);
    const char *colon = strrchr(addr, ':');
    snprintf(f->host, sizeof(f->host), "%.*s", (int)(colon - addr), addr);
    f->port = atoi(colon + 1);
    return 0;
}

void natsraw_stop(natsraw_fix *f) {
    rift_nats_del(f->nats);
    f->nats = NULL;
    rift_broker_del(f->broker);
    f->broker = NULL;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what is available within |ms|; false on timeout or EOF. */
static bool read_some(natsraw *c, int ms) {
    if (c->eof) {
        return false;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, ms < 0 ? 0 : ms) <= 0) {
        return false;
    }
    if (c->cap - c->len < 65536) {
        c->cap = c->cap * 2 + 65536;
        c->buf = realloc(c->buf, c->cap + 1);
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n <= 0) {
        c->eof = true;
        return false;
    }
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    return true;
}

natsraw *natsraw_connect(const natsraw_fix *f, int rcvbuf, char *info,
                         size_t info_cap) {
    natsraw *c = calloc(1, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) {
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)f->port)};
    inet_pton(AF_INET, f->host, &sa.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        natsraw_close(c);
        return NULL;
    }
    int64_t end = now_ms() + 5000;
    while (c->buf == NULL || strstr(c->buf, "\r\n") == NULL) {
        if (!read_some(c, (int)(end - now_ms())) && now_ms() >= end) {
            natsraw_close(c);
            return NULL;
        }
    }
    char *nl = strstr(c->buf, "\r\n");
    if (info != NULL) {
        snprintf(info, info_cap, "%.*s", (int)(nl - c->buf), c->buf);
    }
    size_t used = (size_t)(nl + 2 - c->buf);
    memmove(c->buf, c->buf + used, c->len - used + 1);
    c->len -= used;
    return c;
}

void natsraw_close(natsraw *c) {
    if (c != NULL) {
        close(c->fd);
        free(c->buf);
        free(c);
    }
}

bool natsraw_send(natsraw *c, const char *s, size_t len) {
    if (len == 0) {
        len = strlen(s);
    }
    while (len > 0) {
        ssize_t n = send(c->fd, s, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        s += n;
        len -= (size_t)n;
    }
    return true;
}

bool natsraw_has(const natsraw *c, const char *needle) {
    return c->buf != NULL && strstr(c->buf, needle) != NULL;
}

bool natsraw_expect(natsraw *c, const char *needle, int timeout_ms) {
    int64_t end = now_ms() + timeout_ms;
    for (;;) {
        char *at = c->buf != NULL ? strstr(c->buf, needle) : NULL;
        if (at != NULL) {
            size_t used = (size_t)(at - c->buf) + strlen(needle);
            memmove(c->buf, c->buf + used, c->len - used + 1);
            c->len -= used;
            return true;
        }
        if (now_ms() >= end || (!read_some(c, (int)(end - now_ms())) &&
                                (c->eof || now_ms() >= end))) {
            return false;
        }
    }
}

bool natsraw_await(natsraw *c, const char *needle, int timeout_ms) {
    int64_t end = now_ms() + timeout_ms;
    while (!natsraw_has(c, needle)) {
        if (now_ms() >= end || (!read_some(c, (int)(end - now_ms())) &&
                                (c->eof || now_ms() >= end))) {
            return false;
        }
    }
    return true;
}

bool natsraw_wait_closed(natsraw *c, int timeout_ms) {
    int64_t end = now_ms() + timeout_ms;
    while (!c->eof && now_ms() < end) {
        (void)read_some(c, (int)(end - now_ms()));
    }
    return c->eof;
}

bool natsraw_hello(natsraw *c, const char *token, const char *opts) {
    char line[512];
    snprintf(line, sizeof(line),
             "CONNECT {\"verbose\":false,\"pedantic\":false,"
             "\"auth_token\":\"%s\"%s}\r\nPING\r\n",
             token, opts);
    return natsraw_send(c, line, 0) && natsraw_expect(c, "PONG\r\n", 5000);
}

bool natsraw_ping(natsraw *c) {
    return natsraw_send(c, "PING\r\n", 0) &&
           natsraw_expect(c, "PONG\r\n", 5000);
}
