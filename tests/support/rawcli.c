/*
 * rawcli.c — raw protocol-v1 test client and server fixture (tests
 * layer). See rawcli.h.
 */
#include "rawcli.h"

#include "quic/certgen.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* ---- Transport callbacks ---- */

static void cb_handshake(rift_quic_conn *conn, void *ud) {
    (void)conn;
    ((rawcli *)ud)->handshake = true;
}

static void cb_closed(rift_quic_conn *conn, const rift_quic_close_info *ci,
                      void *ud) {
    (void)conn;
    rawcli *c = ud;
    c->close.seen = true;
    c->close.kind = ci->kind;
    c->close.code = ci->code;
    size_t n = ci->reason_len < sizeof(c->close.reason) - 1
                   ? ci->reason_len
                   : sizeof(c->close.reason) - 1;
    if (n > 0) {
        memcpy(c->close.reason, ci->reason, n);
    }
    c->close.reason[n] = '\0';
    snprintf(c->close.detail, sizeof(c->close.detail), "%s", ci->detail);
}

static void cb_data(rift_quic_stream *qs, const uint8_t *data, size_t len,
                    bool fin, void *ud) {
    rc_stream *s = ud;
    if (s->rx_off > 0 && s->rx_off * 2 >= s->rx_len) {
        memmove(s->rx, s->rx + s->rx_off, s->rx_len - s->rx_off);
        s->rx_len -= s->rx_off;
        s->rx_off = 0;
    }
    if (s->rx_len + len > s->rx_cap) {
        size_t cap = s->rx_cap ? s->rx_cap : 4096;
        while (cap < s->rx_len + len) {
            cap *= 2;
        }
        s->rx = realloc(s->rx, cap);
        s->rx_cap = cap;
    }
    if (len > 0) {
        memcpy(s->rx + s->rx_len, data, len);
    }
    s->rx_len += len;
    s->rx_total += len;
    if (fin) {
        s->fin = true;
    }
    if (s->paused) {
        s->uncredited += len;
    } else {
        rift_quic_stream_consumed(qs, len);
    }
}

static void cb_reset(rift_quic_stream *qs, uint64_t code, void *ud) {
    (void)qs;
    rc_stream *s = ud;
    s->reset = true;
    s->reset_code = code;
}

static void cb_stopped(rift_quic_stream *qs, void *ud) {
    (void)qs;
    ((rc_stream *)ud)->stopped = true;
}

static void cb_acked(rift_quic_stream *qs, uint64_t unacked, void *ud) {
    (void)qs;
    (void)unacked;
    ((rc_stream *)ud)->acked_events++;
}

static void cb_stream_close(rift_quic_stream *qs, bool code_set, uint64_t code,
                            void *ud) {
    (void)qs;
    rc_stream *s = ud;
    s->closed = true;
    s->code_set = code_set;
    s->close_code = code;
    s->s = NULL;
}

static void cb_available(rift_quic_conn *conn, void *ud) {
    (void)conn;
    ((rawcli *)ud)->streams_available++;
}

static const rift_quic_callbacks client_cbs = {
    .handshake_done = cb_handshake,
    .conn_closed = cb_closed,
    .stream_data = cb_data,
    .stream_reset = cb_reset,
    .stream_stopped = cb_stopped,
    .stream_acked = cb_acked,
    .stream_close = cb_stream_close,
    .streams_available = cb_available,
};

/* ---- Client ---- */

bool rc_run(rawcli *c, bool (*cond)(void *), void *arg, int ms) {
    rift_tstamp end = rift_now_ns() + (rift_tstamp)ms * 1000000;
    while (!cond(arg)) {
        if (rift_now_ns() >= end) {
            return cond(arg);
        }
        rift_loop_run_once(c->loop, 2000000);
    }
    return true;
}

void rc_spin(rawcli *c, int ms) {
    rift_tstamp end = rift_now_ns() + (rift_tstamp)ms * 1000000;
    while (rift_now_ns() < end) {
        rift_loop_run_once(c->loop, 2000000);
    }
}

static bool cond_hs(void *arg) {
    rawcli *c = arg;
    return c->handshake || c->close.seen;
}

rawcli *rc_connect(rift_loop *loop, const struct sockaddr_storage *addr,
                   socklen_t len, const char *ca, bool wait) {
    return rc_connect_window(loop, addr, len, ca, wait, 0);
}

rawcli *rc_connect_window(rift_loop *loop, const struct sockaddr_storage *addr,
                          socklen_t len, const char *ca, bool wait,
                          uint64_t stream_window) {
    rawcli *c = calloc(1, sizeof(*c));
    c->loop = loop;
    rift_quic_settings s;
    rift_quic_settings_default_client(&s);
    if (stream_window > 0) {
        s.stream_window = stream_window;
    }
    s.ca_file = ca;
    s.server_name = "localhost";
    rift_error err;
    if (rift_quic_client_new(&c->ep, loop, (const struct sockaddr *)addr, len,
                             &s, &client_cbs, c, &err) != 0) {
        fprintf(stderr, "client: %s\n", err.text);
        free(c);
        return NULL;
    }
    c->conn = rift_quic_client_conn(c->ep);
    if (!wait) {
        return c;
    }
    rc_run(c, cond_hs, c, 5000);
    if (!c->handshake) {
        fprintf(stderr, "handshake failed: %s (%s)\n", c->close.detail,
                c->close.reason);
        rc_abort(c);
        return NULL;
    }
    return c;
}

static void free_streams(rawcli *c) {
    for (size_t i = 0; i < c->nstreams; i++) {
        free(c->streams[i]->rx);
        free(c->streams[i]);
    }
    free(c->streams);
}

void rc_free(rawcli *c) {
    if (c == NULL) {
        return;
    }
    if (c->conn != NULL && !c->close.seen) {
        rift_quic_conn_close(c->conn, 0, "client closed", 13);
        rc_spin(c, 5);
    }
    rift_quic_endpoint_del(c->ep);
    free_streams(c);
    free(c);
}

void rc_abort(rawcli *c) {
    if (c == NULL) {
        return;
    }
    rift_quic_endpoint_abort(c->ep);
    free_streams(c);
    free(c);
}

rc_stream *rc_open(rawcli *c) {
    rc_stream *s = calloc(1, sizeof(*s));
    s->cli = c;
    if (rift_quic_conn_open_stream(c->conn, s, &s->s) != 0) {
        free(s);
        return NULL;
    }
    if (c->nstreams == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->streams = realloc(c->streams, c->cap * sizeof(*c->streams));
    }
    c->streams[c->nstreams++] = s;
    return s;
}

bool rc_send(rc_stream *s, const void *data, size_t len, bool fin) {
    if (s->s == NULL) {
        return false;
    }
    rift_quic_chunk ch = {data, len, NULL, NULL};
    return rift_quic_stream_write(s->s, &ch, len > 0 ? 1 : 0, fin) == 0;
}

void rc_reset(rc_stream *s, uint64_t code) {
    if (s->s != NULL) {
        rift_quic_stream_shutdown_write(s->s, code);
    }
}

void rc_stop(rc_stream *s, uint64_t code) {
    if (s->s != NULL) {
        rift_quic_stream_shutdown_read(s->s, code);
    }
}

void rc_pause(rc_stream *s) {
    s->paused = true;
}

void rc_resume(rc_stream *s) {
    s->paused = false;
    if (s->s != NULL && s->uncredited > 0) {
        rift_quic_stream_consumed(s->s, s->uncredited);
    }
    s->uncredited = 0;
}

static bool have_frame(rc_stream *s) {
    size_t avail = s->rx_len - s->rx_off;
    if (avail < 4) {
        return false;
    }
    const uint8_t *p = s->rx + s->rx_off;
    uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                 (uint32_t)p[2] << 8 | p[3];
    return avail >= 4 + (size_t)n;
}

static bool cond_frame(void *arg) {
    rc_stream *s = arg;
    return have_frame(s) || s->fin || s->reset || s->closed ||
           s->cli->close.seen;
}

const uint8_t *rc_frame(rc_stream *s, int ms, size_t *len) {
    rc_run(s->cli, cond_frame, s, ms);
    if (!have_frame(s)) {
        return NULL;
    }
    const uint8_t *p = s->rx + s->rx_off;
    uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                 (uint32_t)p[2] << 8 | p[3];
    s->rx_off += 4 + (size_t)n;
    *len = n;
    return p + 4;
}

static bool cond_end(void *arg) {
    rc_stream *s = arg;
    return s->fin || s->reset || s->closed || s->cli->close.seen;
}

bool rc_expect_end(rc_stream *s, int ms) {
    rc_run(s->cli, cond_end, s, ms);
    if (s->rx_len != s->rx_off) {
        fprintf(stderr, "expected the end, %zu more bytes came\n",
                s->rx_len - s->rx_off);
        return false;
    }
    if (!cond_end(s)) {
        fprintf(stderr, "expected the end, the stream stayed open\n");
        return false;
    }
    return true;
}

/* ---- Frames ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = s ? strlen(s) : 0;
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    if (n > 0) {
        memcpy(p + 2, s, n);
    }
    return 2 + n;
}

static void put_len(uint8_t *buf, size_t body) {
    buf[0] = (uint8_t)(body >> 24);
    buf[1] = (uint8_t)(body >> 16);
    buf[2] = (uint8_t)(body >> 8);
    buf[3] = (uint8_t)body;
}

size_t rc_build_auth(uint8_t *buf, const char *token) {
    size_t n = 5;
    buf[4] = 1; /* AUTH */
    n += put_str(buf + n, token);
    put_len(buf, n - 4);
    return n;
}

size_t rc_build_msg(uint8_t *buf, uint8_t op, const char *subject,
                    const char *reply, const void *payload, size_t plen) {
    size_t n = 5;
    buf[4] = op;
    n += put_str(buf + n, subject);
    n += put_str(buf + n, reply);
    if (plen > 0) {
        memcpy(buf + n, payload, plen);
    }
    n += plen;
    put_len(buf, n - 4);
    return n;
}

size_t rc_build_subscribe(uint8_t *buf, const char *pattern,
                          const char *queue) {
    size_t n = 5;
    buf[4] = 6;
    n += put_str(buf + n, pattern);
    n += put_str(buf + n, queue);
    put_len(buf, n - 4);
    return n;
}

size_t rc_build_request(uint8_t *buf, uint32_t timeout_ms, const char *subject,
                        const void *payload, size_t plen) {
    size_t n = 5;
    buf[4] = 9;
    buf[5] = (uint8_t)(timeout_ms >> 24);
    buf[6] = (uint8_t)(timeout_ms >> 16);
    buf[7] = (uint8_t)(timeout_ms >> 8);
    buf[8] = (uint8_t)timeout_ms;
    n += 4;
    n += put_str(buf + n, subject);
    if (plen > 0) {
        memcpy(buf + n, payload, plen);
    }
    n += plen;
    put_len(buf, n - 4);
    return n;
}

static void describe(const uint8_t *body, size_t len, char *out, size_t cap) {
    if (body == NULL) {
        snprintf(out, cap, "nothing");
    } else if (body[0] == 3 && len >= 5) {
        size_t tl = (size_t)body[3] << 8 | body[4];
        if (tl > len - 5) {
            tl = len - 5;
        }
        snprintf(out, cap, "ERROR(%u, \"%.*s\")",
                 (unsigned)body[1] << 8 | body[2], (int)tl,
                 (const char *)body + 5);
    } else {
        snprintf(out, cap, "opcode %u (%zu bytes)", body[0], len);
    }
}

bool rc_expect_ok(rc_stream *s, int ms) {
    size_t len;
    const uint8_t *b = rc_frame(s, ms, &len);
    if (b != NULL && len == 1 && b[0] == 2) {
        return true;
    }
    char d[1200];
    describe(b, len, d, sizeof(d));
    fprintf(stderr, "expected OK, got %s\n", d);
    return false;
}

bool rc_expect_error(rc_stream *s, int code, const char *text, int ms) {
    size_t len;
    const uint8_t *b = rc_frame(s, ms, &len);
    if (b != NULL && len >= 5 && b[0] == 3) {
        unsigned c = (unsigned)b[1] << 8 | b[2];
        size_t tl = (size_t)b[3] << 8 | b[4];
        if ((int)c == code && tl == len - 5 && tl == strlen(text) &&
            memcmp(b + 5, text, tl) == 0) {
            return true;
        }
    }
    char d[1200];
    describe(b, len, d, sizeof(d));
    fprintf(stderr, "expected ERROR(%d, \"%s\"), got %s\n", code, text, d);
    return false;
}

static bool take_str(const uint8_t *b, size_t len, size_t *pos, char *out,
                     size_t cap) {
    if (len - *pos < 2) {
        return false;
    }
    size_t n = (size_t)b[*pos] << 8 | b[*pos + 1];
    if (n > len - *pos - 2 || n >= cap) {
        return false;
    }
    memcpy(out, b + *pos + 2, n);
    out[n] = '\0';
    *pos += 2 + n;
    return true;
}

bool rc_expect_msg(rc_stream *s, rc_msg *m, int ms) {
    size_t len;
    const uint8_t *b = rc_frame(s, ms, &len);
    size_t pos = 1;
    if (b != NULL && b[0] == 7 &&
        take_str(b, len, &pos, m->subject, sizeof(m->subject)) &&
        take_str(b, len, &pos, m->reply, sizeof(m->reply))) {
        m->payload = b + pos;
        m->payload_len = len - pos;
        return true;
    }
    char d[1200];
    describe(b, len, d, sizeof(d));
    fprintf(stderr, "expected MESSAGE, got %s\n", d);
    return false;
}

bool rc_subscribe(rc_stream *s, const char *pattern, const char *queue) {
    uint8_t buf[4200];
    size_t n = rc_build_subscribe(buf, pattern, queue);
    return rc_send(s, buf, n, false) && rc_expect_ok(s, 5000);
}

bool rc_publish(rc_stream *s, const char *subject, const void *payload,
                size_t plen, bool ack) {
    uint8_t *buf = malloc(plen + 2200);
    size_t n = rc_build_msg(buf, ack ? 5 : 4, subject, NULL, payload, plen);
    bool ok = rc_send(s, buf, n, false);
    free(buf);
    return ok && (!ack || rc_expect_ok(s, 5000));
}

bool rc_ping(rc_stream *s) {
    static const uint8_t ping[5] = {0, 0, 0, 1, 8};
    return rc_send(s, ping, 5, false) && rc_expect_ok(s, 5000);
}

int rc_auth(rawcli *c, const char *token) {
    rc_stream *s = rc_open(c);
    if (s == NULL) {
        return -1;
    }
    uint8_t buf[4200];
    size_t n = rc_build_auth(buf, token);
    if (!rc_send(s, buf, n, true)) {
        return -1;
    }
    size_t len;
    const uint8_t *b = rc_frame(s, 5000, &len);
    if (b == NULL) {
        return -1;
    }
    if (len == 1 && b[0] == 2) {
        return 0;
    }
    if (b[0] == 3 && len >= 3) {
        return b[1] << 8 | b[2];
    }
    return -1;
}

rawcli *rc_login(rift_loop *loop, const struct sockaddr_storage *addr,
                 socklen_t len, const char *ca, const char *identity) {
    return rc_login_window(loop, addr, len, ca, identity, 0);
}

rawcli *rc_login_window(rift_loop *loop, const struct sockaddr_storage *addr,
                        socklen_t len, const char *ca, const char *identity,
                        uint64_t stream_window) {
    rawcli *c = rc_connect_window(loop, addr, len, ca, true, stream_window);
    if (c == NULL) {
        return NULL;
    }
    char token[256];
    snprintf(token, sizeof(token), "%s-token-0123456789abcdef0123456789",
             identity);
    int rc = rc_auth(c, token);
    if (rc != 0) {
        fprintf(stderr, "login %s: %d (%s)\n", identity, rc, c->close.reason);
        rc_free(c);
        return NULL;
    }
    return c;
}

/* ---- Server fixture ---- */

typedef struct fix_identity {
    const char *name;
    const char *publish[4];
    const char *subscribe[4];
    bool control;
} fix_identity;

static const fix_identity fix_ids[] = {
    {"plugin", {"game.>", "_INBOX.>"}, {"game.>", "_INBOX.>"}, false},
    {"other_plugin", {"game.>", "_INBOX.>"}, {"game.>", "_INBOX.>"}, false},
    {"interop",
     {"interop.>", "nobody.>", "_INBOX.>"},
     {"interop.>", "_INBOX.>"},
     false},
    {"wide", {">"}, {">"}, false},
    {"admin", {">"}, {">"}, true},
};

static rift_server_identity fix_sids[RIFT_ARRAY_LEN(fix_ids)];
static char fix_tokens[RIFT_ARRAY_LEN(fix_ids)][128];

static size_t count(const char *const *list) {
    size_t n = 0;
    while (n < 4 && list[n] != NULL) {
        n++;
    }
    return n;
}

bool fix_init(srvfix *f, const rift_broker_settings *bs) {
    memset(f, 0, sizeof(*f));
    f->tmp = rift_test_tmpdir();
    if (f->tmp == NULL) {
        return false;
    }
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/certs", f->tmp);
    rift_error err;
    if (rift_certgen_dev(dir, NULL, &err) != 0) {
        fprintf(stderr, "certgen: %s\n", err.text);
        return false;
    }
    snprintf(f->ca, sizeof(f->ca), "%s/ca.pem", dir);
    snprintf(f->cert, sizeof(f->cert), "%s/server.pem", dir);
    snprintf(f->key, sizeof(f->key), "%s/server.key", dir);
    if (rift_broker_new(&f->broker, bs, &err) != 0) {
        fprintf(stderr, "broker: %s\n", err.text);
        return false;
    }
    if (rift_loop_new(&f->loop, NULL) != 0) {
        return false;
    }
    for (size_t i = 0; i < RIFT_ARRAY_LEN(fix_ids); i++) {
        snprintf(fix_tokens[i], sizeof(fix_tokens[i]),
                 "%s-token-0123456789abcdef0123456789", fix_ids[i].name);
        fix_sids[i] = (rift_server_identity){
            .name = fix_ids[i].name,
            .name_len = strlen(fix_ids[i].name),
            .token = fix_tokens[i],
            .token_len = strlen(fix_tokens[i]),
            .publish = fix_ids[i].publish,
            .publish_count = count(fix_ids[i].publish),
            .subscribe = fix_ids[i].subscribe,
            .subscribe_count = count(fix_ids[i].subscribe),
            .control = fix_ids[i].control,
        };
    }
    rift_server_settings_default(&f->settings);
    f->settings.cert_file = f->cert;
    f->settings.key_file = f->key;
    f->settings.identities = fix_sids;
    f->settings.identity_count = RIFT_ARRAY_LEN(fix_sids);
    return true;
}

bool fix_start(srvfix *f) {
    rift_error err;
    if (rift_server_new(&f->srv, f->broker, &f->settings, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return false;
    }
    if (rift_server_start(f->srv, "127.0.0.1:0", &err) != 0) {
        fprintf(stderr, "start: %s\n", err.text);
        return false;
    }
    return rift_server_local_addr(f->srv, &f->addr, &f->addrlen, NULL) == 0;
}

void fix_fini(srvfix *f) {
    rift_server_del(f->srv);
    rift_broker_del(f->broker);
    rift_loop_del(f->loop);
    rift_test_rmdir(f->tmp);
}

bool fix_wait_subs(srvfix *f, size_t n, int ms) {
    rift_tstamp end = rift_now_ns() + (rift_tstamp)ms * 1000000;
    while (rift_broker_subscription_count(f->broker) != n) {
        if (rift_now_ns() >= end) {
            return false;
        }
        rift_loop_run_once(f->loop, 1000000);
    }
    return true;
}

/* ---- Memory tests ---- */

uint64_t rss_kib(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kib = 0;
    while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtoull(line + 6, NULL, 10);
        }
    }
    if (fp != NULL) {
        fclose(fp);
    }
    return kib;
}

bool queued_reached(void *arg) {
    queued_wait *w = arg;
    rift_server_stats st;
    if (rift_server_get_stats(w->f->srv, &st, NULL) != 0) {
        return false;
    }
    bool ok = w->at_least > 0 ? st.conn_queued_peak >= w->at_least
                              : st.queued_bytes == 0;
    rift_server_stats_free(&st);
    return ok;
}
