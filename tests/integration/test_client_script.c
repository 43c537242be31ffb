/*
 * test_client_script.c — the C client's handling of server answers
 * against a scripted QUIC server built on rift's own transport
 * (integration tests): every operation stream gets the bytes the test
 * prepared (or nothing), so wrong opcodes, ERROR codes, short frames,
 * missing answers, early FINs, deadlines, fetch overruns, large assembled
 * frames, flow control and connection loss can be provoked exactly.
 */
// labels: threads
#include "test.h"
#include "thread_server.h"

#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/certgen.h"
#include "quic/quic.h"
#include "rift/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "script-token"
#define SEC   1000000000LL

/* ---- The scripted server ---- */

enum auth_mode {
    AUTH_OK,
    AUTH_ERROR_CLOSE,
    AUTH_CLOSE,
    AUTH_SILENT
};

typedef struct script_srv {
    thread_server ts;
    pthread_mutex_t mu;
    /* Under mu. */
    enum auth_mode auth;
    uint8_t *reply; /* answer to the next operation stream */
    size_t reply_len;
    bool fin;
    bool silent;
    bool stop_next; /* STOP_SENDING the next operation stream, no answer */
    int stops_sent;
    int streams; /* operation streams seen */
    int resets;  /* RESET_STREAM received */
    int stops;   /* streams closed with a code (stop or reset) */
    rift_quic_conn *conn;
} script_srv;

typedef struct srv_stream {
    script_srv *srv;
    int index; /* 0 = the auth stream */
    bool answered;
} srv_stream;

static void write_bytes(rift_quic_stream *s, const uint8_t *b, size_t n,
                        bool fin) {
    rift_quic_chunk ch = {b, n, NULL, NULL};
    rift_quic_stream_write(s, &ch, n > 0 ? 1 : 0, fin);
}

static void srv_handshake(rift_quic_conn *c, void *ud) {
    script_srv *srv = ud;
    rift_quic_conn_set_user_data(c, srv);
    pthread_mutex_lock(&srv->mu);
    srv->conn = c;
    pthread_mutex_unlock(&srv->mu);
}

static void srv_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                       void *ud) {
    script_srv *srv = ud;
    (void)ci;
    pthread_mutex_lock(&srv->mu);
    if (srv->conn == c) {
        srv->conn = NULL;
    }
    pthread_mutex_unlock(&srv->mu);
}

static int stream_counter;

static void srv_open(rift_quic_stream *s, void *ud) {
    script_srv *srv = ud;
    srv_stream *ss = calloc(1, sizeof(*ss));
    ss->srv = srv;
    ss->index = rift_quic_stream_id(s) == 0 ? 0 : ++stream_counter;
    rift_quic_stream_set_user_data(s, ss);
}

static void answer_auth(srv_stream *ss, rift_quic_stream *s) {
    script_srv *srv = ss->srv;
    uint8_t buf[128];
    pthread_mutex_lock(&srv->mu);
    enum auth_mode mode = srv->auth;
    pthread_mutex_unlock(&srv->mu);
    rift_quic_conn *conn = rift_quic_stream_conn(s);
    switch (mode) {
    case AUTH_OK:
        write_bytes(s, buf, (size_t)rift_frame_encode_ok(buf, sizeof(buf)),
                    true);
        break;
    case AUTH_ERROR_CLOSE:
        write_bytes(s, buf,
                    (size_t)rift_frame_encode_error(
                        buf, sizeof(buf), 1, "authentication failed", 21),
                    true);
        rift_quic_conn_close(conn, 1, "authentication failed", 21);
        break;
    case AUTH_CLOSE:
        rift_quic_conn_close(conn, 1, "authentication failed", 21);
        break;
    case AUTH_SILENT:
        break;
    }
}

static void srv_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                     bool fin, void *ud) {
    srv_stream *ss = ud;
    script_srv *srv = ss->srv;
    (void)data;
    rift_quic_stream_consumed(s, len);
    if (ss->answered || (len == 0 && !fin)) {
        return;
    }
    if (ss->index == 0) {
        if (fin) {
            ss->answered = true;
            answer_auth(ss, s);
        }
        return;
    }
    ss->answered = true;
    pthread_mutex_lock(&srv->mu);
    srv->streams++;
    bool silent = srv->silent;
    if (srv->stop_next) {
        srv->stop_next = false;
        srv->stops_sent++;
        rift_quic_stream_shutdown_read(s, 0);
    } else if (!silent) {
        write_bytes(s, srv->reply, srv->reply_len, srv->fin);
    }
    pthread_mutex_unlock(&srv->mu);
}

static void srv_reset(rift_quic_stream *s, uint64_t code, void *ud) {
    srv_stream *ss = ud;
    (void)s;
    (void)code;
    pthread_mutex_lock(&ss->srv->mu);
    ss->srv->resets++;
    pthread_mutex_unlock(&ss->srv->mu);
}

static void srv_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                             void *ud) {
    srv_stream *ss = ud;
    (void)s;
    (void)code;
    if (code_set) {
        pthread_mutex_lock(&ss->srv->mu);
        ss->srv->stops++;
        pthread_mutex_unlock(&ss->srv->mu);
    }
    free(ss);
}

static const rift_quic_callbacks srv_cbs = {
    .handshake_done = srv_handshake,
    .conn_closed = srv_closed,
    .stream_open = srv_open,
    .stream_data = srv_data,
    .stream_reset = srv_reset,
    .stream_close = srv_stream_close,
};

static bool srv_start(script_srv *srv) {
    memset(srv, 0, sizeof(*srv));
    pthread_mutex_init(&srv->mu, NULL);
    return thread_server_start(&srv->ts, &srv_cbs, srv);
}

static void srv_stop(script_srv *srv) {
    thread_server_stop(&srv->ts);
    free(srv->reply);
    pthread_mutex_destroy(&srv->mu);
}

/* Sets the answer to the next operation streams. */
static void srv_script(script_srv *srv, const uint8_t *b, size_t n, bool fin) {
    pthread_mutex_lock(&srv->mu);
    free(srv->reply);
    srv->reply = malloc(n > 0 ? n : 1);
    if (n > 0) {
        memcpy(srv->reply, b, n);
    }
    srv->reply_len = n;
    srv->fin = fin;
    srv->silent = false;
    pthread_mutex_unlock(&srv->mu);
}

static void srv_silent(script_srv *srv) {
    pthread_mutex_lock(&srv->mu);
    srv->silent = true;
    pthread_mutex_unlock(&srv->mu);
}

static void srv_stop_next(script_srv *srv) {
    pthread_mutex_lock(&srv->mu);
    srv->stop_next = true;
    pthread_mutex_unlock(&srv->mu);
}

static int srv_get(script_srv *srv, int *field) {
    pthread_mutex_lock(&srv->mu);
    int v = *field;
    pthread_mutex_unlock(&srv->mu);
    return v;
}

/* ---- Frame building ---- */

typedef struct bytes {
    uint8_t *b;
    size_t len;
} bytes;

static void add(bytes *o, const uint8_t *b, size_t n) {
    o->b = realloc(o->b, o->len + n + 1);
    memcpy(o->b + o->len, b, n);
    o->len += n;
}

static void add_ok(bytes *o) {
    uint8_t f[8];
    add(o, f, (size_t)rift_frame_encode_ok(f, sizeof(f)));
}

static void add_error(bytes *o, uint16_t code, const char *text) {
    uint8_t f[2048];
    add(o, f,
        (size_t)rift_frame_encode_error(f, sizeof(f), code, text,
                                        strlen(text)));
}

static void add_message(bytes *o, const char *subject, const uint8_t *p,
                        size_t n) {
    uint8_t f[2100];
    rift_ssize h = rift_frame_encode_message_header(
        f, sizeof(f), subject, strlen(subject), NULL, 0, n);
    add(o, f, (size_t)h);
    add(o, p, n);
}

static void add_delivery(bytes *o, uint64_t seq) {
    uint8_t f[2100];
    rift_ssize h = rift_frame_encode_delivery_header(f, sizeof(f), seq, 1000, 1,
                                                     "d.x", 3, NULL, 0, 1);
    add(o, f, (size_t)h);
    add(o, (const uint8_t *)"p", 1);
}

static void script_bytes(script_srv *srv, bytes *o, bool fin) {
    srv_script(srv, o->b, o->len, fin);
    free(o->b);
    o->b = NULL;
    o->len = 0;
}

/* ---- Client helpers ---- */

/* Deadline of connects, ms. */
static uint32_t connect_ms = 5000;

static int connect_to(script_srv *srv, rift_client **c, uint32_t op_ms,
                      rift_error *err) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = srv->ts.addr;
    s.ca_file = srv->ts.ca;
    s.server_name = "localhost";
    s.token = TOKEN;
    s.op_timeout_ms = op_ms;
    s.connect_timeout_ms = connect_ms;
    return rift_client_new(c, &s, err);
}

#define S(x) x, strlen(x)

#define SETUP(srv, c, op_ms)                                                   \
 script_srv srv;                                                               \
 rift_client *c = NULL;                                                        \
 rift_error err;                                                               \
 CHECK(srv_start(&srv));                                                       \
 CHECK_MSG(connect_to(&srv, &c, op_ms, &err) == 0, "connect: %s", err.text)

/* ---- Authentication ---- */

static int connect_with_auth(enum auth_mode mode, rift_error *err) {
    script_srv srv;
    if (!srv_start(&srv)) {
        return -1;
    }
    srv.auth = mode;
    rift_client *c = NULL;
    int rc = connect_to(&srv, &c, 1000, err);
    rift_client_del(c);
    srv_stop(&srv);
    return rc;
}

RIFT_TEST(auth_error_frame_then_close) {
    rift_error err;
    CHECK_EQ_INT(connect_with_auth(AUTH_ERROR_CLOSE, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "authentication failed");
}

RIFT_TEST(auth_close_without_error_frame) {
    rift_error err;
    CHECK_EQ_INT(connect_with_auth(AUTH_CLOSE, &err), RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "authentication failed");
}

RIFT_TEST(auth_without_answer_hits_the_connect_deadline) {
    rift_error err;
    connect_ms = 500;
    CHECK_EQ_INT(connect_with_auth(AUTH_SILENT, &err), RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(err.text, "QUIC operation timed out");
}

RIFT_TEST(connect_deadline_without_a_server) {
    /* A UDP port that drops everything: the handshake never finishes. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
    char *dir = rift_test_tmpdir();
    rift_error err;
    CHECK_OK(rift_certgen_dev(dir, NULL, &err));
    char ca[4200];
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = ca;
    s.server_name = "localhost";
    s.token = TOKEN;
    s.connect_timeout_ms = 300;
    rift_client *c = NULL;
    rift_tstamp t0 = rift_now_ns();
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(err.text, "QUIC operation timed out");
    CHECK(rift_now_ns() - t0 < 5 * (uint64_t)SEC);
    close(fd);
    rift_test_rmdir(dir);
}

/* ---- Answers to calls ---- */

RIFT_TEST(wrong_answer_opcode) {
    SETUP(srv, c, 5000);
    uint8_t f[32];
    srv_script(&srv, f, (size_t)rift_frame_encode_stored(f, sizeof(f), 1, 2),
               true);
    rift_msg *m = NULL;
    CHECK_EQ_INT(
        rift_client_request(c, S("svc.a"), NULL, 0, 1000 * RIFT_MSEC, &m, &err),
        RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unexpected response opcode");
    CHECK_EQ_INT(rift_client_consumer_open(
                     c, S("s"), S("n"),
                     &(rift_consumer_config){"a", 1, 1, 1000, 10,
                                             RIFT_START_SEQUENCE, 0, 0},
                     &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unexpected response opcode");
    /* The connection is unaffected. */
    bytes o = {0};
    add_ok(&o);
    script_bytes(&srv, &o, true);
    CHECK_OK(rift_client_ack(c, S("s"), S("n"), 1, &err));
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(error_codes_map_to_permission_and_remote) {
    SETUP(srv, c, 5000);
    bytes o = {0};
    add_error(&o, 1, "publication not permitted");
    script_bytes(&srv, &o, true);
    rift_stored st;
    CHECK_EQ_INT(rift_client_stream_publish(c, S("s"), S("a.b"), NULL, 0, NULL,
                                            0, &st, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "publication not permitted");
    add_error(&o, 2, "unknown stream");
    script_bytes(&srv, &o, true);
    CHECK_EQ_INT(rift_client_stream_publish(c, S("s"), S("a.b"), NULL, 0, NULL,
                                            0, &st, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    /* Any other code is a server error too. */
    add_error(&o, 7, "odd");
    script_bytes(&srv, &o, true);
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err), RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "odd");
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(stored_must_be_exactly_16_bytes) {
    SETUP(srv, c, 5000);
    uint8_t f[32];
    rift_ssize n = rift_frame_encode_stored(f, sizeof(f), 9, 1234);
    srv_script(&srv, f, (size_t)n, true);
    rift_stored st;
    CHECK_OK(rift_client_stream_publish(c, S("s"), S("a.b"), NULL, 0, NULL, 0,
                                        &st, &err));
    CHECK_EQ_U64(st.sequence, 9);
    CHECK_EQ_U64(st.timestamp_ms, 1234);
    /* 15 bytes: truncated. */
    uint8_t g[32];
    memcpy(g, f, (size_t)n);
    g[3] = 16; /* body = opcode + 15 */
    srv_script(&srv, g, 4 + 16, true);
    CHECK_EQ_INT(rift_client_stream_publish(c, S("s"), S("a.b"), NULL, 0, NULL,
                                            0, &st, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "truncated frame");
    /* 17 bytes: trailing. */
    g[3] = 18;
    g[4 + 17] = 0;
    srv_script(&srv, g, 4 + 18, true);
    CHECK_EQ_INT(rift_client_stream_publish(c, S("s"), S("a.b"), NULL, 0, NULL,
                                            0, &st, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unexpected trailing frame bytes");
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(fetch_more_than_asked_is_an_error) {
    SETUP(srv, c, 5000);
    bytes o = {0};
    add_delivery(&o, 1);
    add_delivery(&o, 2);
    add_ok(&o);
    script_bytes(&srv, &o, true);
    rift_client_delivery msgs[4];
    size_t n = 0;
    CHECK_OK(rift_client_fetch(c, S("s"), S("n"), 2, msgs, &n, &err));
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(msgs[1].sequence, 2);
    CHECK_EQ_U64(msgs[1].timestamp_ms, 1000);
    rift_msg_unref(msgs[0].msg);
    rift_msg_unref(msgs[1].msg);
    add_delivery(&o, 1);
    add_delivery(&o, 2);
    add_delivery(&o, 3);
    add_ok(&o);
    script_bytes(&srv, &o, true);
    CHECK_EQ_INT(rift_client_fetch(c, S("s"), S("n"), 2, msgs, &n, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "server exceeded fetch limit");
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(fin_before_the_answer_is_stream_closed) {
    SETUP(srv, c, 5000);
    srv_script(&srv, NULL, 0, true);
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err), RIFT_ERR_CLOSED);
    CHECK_EQ_STR(err.text, "QUIC stream closed");
    /* Half a frame, then FIN. */
    uint8_t half[3] = {0, 0, 0};
    srv_script(&srv, half, sizeof(half), true);
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err), RIFT_ERR_CLOSED);
    /* A zero length prefix. */
    uint8_t zero[4] = {0, 0, 0, 0};
    srv_script(&srv, zero, sizeof(zero), true);
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "frame length exceeds limit or is zero");
    rift_client_del(c);
    srv_stop(&srv);
}

/* The client abandoned a stream: RESET_STREAM arrived, or (when its side
 * was already finished) STOP_SENDING closed the stream with a code. */
static bool stream_reset_seen(void *arg) {
    script_srv *srv = arg;
    return srv_get(srv, &srv->resets) + srv_get(srv, &srv->stops) > 0;
}

RIFT_TEST(silent_server_hits_the_operation_deadline) {
    SETUP(srv, c, 200);
    srv_silent(&srv);
    rift_tstamp t0 = rift_now_ns();
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err), RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(err.text, "QUIC operation timed out");
    uint64_t took = rift_now_ns() - t0;
    CHECK_MSG(took >= 150000000u && took < 3 * (uint64_t)SEC, "took %llu ns",
              (unsigned long long)took);
    /* The abandoned stream is stopped. */
    CHECK(rift_test_wait_until(stream_reset_seen, &srv, 5000));
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(large_answer_is_assembled) {
    SETUP(srv, c, 5000);
    size_t n = 1048576;
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(i ^ (i >> 8));
    }
    bytes o = {0};
    add_message(&o, "_INBOX.x", p, n);
    script_bytes(&srv, &o, true);
    rift_msg *m = NULL;
    CHECK_OK(rift_client_request(c, S("svc.big"), NULL, 0, 1000 * RIFT_MSEC, &m,
                                 &err));
    size_t len;
    const uint8_t *got = rift_msg_payload(m, &len);
    CHECK_EQ_INT(len, n);
    CHECK(memcmp(got, p, n) == 0);
    CHECK_EQ_STR(rift_msg_subject(m, NULL), "_INBOX.x");
    rift_msg_unref(m);
    free(p);
    rift_client_del(c);
    srv_stop(&srv);
}

/* ---- Subscriptions ---- */

RIFT_TEST(subscription_messages_then_server_error) {
    SETUP(srv, c, 5000);
    bytes o = {0};
    add_ok(&o);
    add_message(&o, "a.b", (const uint8_t *)"one", 3);
    add_message(&o, "a.c", (const uint8_t *)"two", 3);
    add_error(&o, 2,
              "subscriber exceeded its bounded queue and was "
              "disconnected");
    script_bytes(&srv, &o, true);
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("a.*"), NULL, 0, &sub, &err));
    int fd = rift_client_sub_fd(sub);
    struct pollfd pfd = {fd, POLLIN, 0};
    CHECK_EQ_INT(poll(&pfd, 1, 5000), 1);
    rift_msg *m;
    CHECK_OK(rift_client_sub_recv(sub, 5 * SEC, &m, &err));
    CHECK_EQ_STR(rift_msg_subject(m, NULL), "a.b");
    rift_msg_unref(m);
    CHECK_OK(rift_client_sub_recv(sub, 5 * SEC, &m, &err));
    CHECK_EQ_STR(rift_msg_subject(m, NULL), "a.c");
    rift_msg_unref(m);
    CHECK_EQ_INT(rift_client_sub_recv(sub, 5 * SEC, &m, &err), RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text,
                 "subscriber exceeded its bounded queue and was disconnected");
    /* The failure stays: the fd stays readable and recv repeats it. */
    CHECK_EQ_INT(poll(&pfd, 1, 0), 1);
    CHECK_EQ_INT(rift_client_sub_recv(sub, 0, &m, &err), RIFT_ERR_REMOTE);
    rift_client_sub_close(sub);
    /* Subscribe refused by the server. */
    add_error(&o, 1, "subscription not permitted");
    script_bytes(&srv, &o, true);
    CHECK_EQ_INT(rift_client_subscribe(c, S("secret.>"), NULL, 0, &sub, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "subscription not permitted");
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(subscription_queue_is_bounded_by_flow_control) {
    SETUP(srv, c, 5000);
    /* 6 MiB of messages, written at once: the server can only send the
     * 2,228,224-byte stream window until the application reads. */
    enum {
        N = 96,
        SZ = 65536
    };
    uint8_t *p = calloc(1, SZ);
    bytes o = {0};
    add_ok(&o);
    for (int i = 0; i < N; i++) {
        memcpy(p, &i, sizeof(i));
        add_message(&o, "flow.x", p, SZ);
    }
    script_bytes(&srv, &o, false);
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("flow.x"), NULL, 0, &sub, &err));
    /* Wait until the queue stops growing. */
    size_t last = 0;
    for (int i = 0; i < 50; i++) {
        struct timespec ms = {0, 20000000};
        nanosleep(&ms, NULL);
        size_t now = rift_client_sub_pending(sub);
        if (now == last && now > 0) {
            break;
        }
        last = now;
    }
    size_t pending = rift_client_sub_pending(sub);
    CHECK_MSG(pending > 0 && pending * (SZ + 17) <= 2228224,
              "pending %zu messages", pending);
    for (int i = 0; i < N; i++) {
        rift_msg *m;
        CHECK_MSG(rift_client_sub_recv(sub, 5 * SEC, &m, &err) == 0,
                  "message %d: %s", i, err.text);
        size_t len;
        const uint8_t *pl = rift_msg_payload(m, &len);
        int got;
        memcpy(&got, pl, sizeof(got));
        CHECK_EQ_INT(got, i);
        CHECK_EQ_INT(len, SZ);
        rift_msg_unref(m);
    }
    free(p);
    rift_client_sub_close(sub);
    rift_client_del(c);
    srv_stop(&srv);
}

/* ---- Publishers ---- */

RIFT_TEST(publisher_error_then_unusable) {
    SETUP(srv, c, 5000);
    bytes o = {0};
    add_error(&o, 1, "publication not permitted");
    script_bytes(&srv, &o, true);
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    CHECK_OK(rift_publisher_publish(p, S("deny.x"), NULL, 0, NULL, 0, &err));
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "publication not permitted");
    CHECK_EQ_INT(rift_publisher_publish(p, S("deny.x"), NULL, 0, NULL, 0, &err),
                 RIFT_ERR_UNUSABLE);
    CHECK_EQ_STR(err.text,
                 "publisher closed or a previous operation was cancelled");
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_UNUSABLE);
    /* Local checks still come first. */
    CHECK_EQ_INT(rift_publisher_publish(p, S("a.*"), NULL, 0, NULL, 0, &err),
                 RIFT_ERR_PROTOCOL);
    rift_publisher_close(p);

    /* The shared publisher reports the failure once and reopens. */
    add_error(&o, 2, "payload size 3 exceeds limit 2");
    script_bytes(&srv, &o, false);
    CHECK_EQ_INT(
        rift_client_publish(c, S("a.b"), (const uint8_t *)"abc", 3, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "payload size 3 exceeds limit 2");
    add_ok(&o);
    script_bytes(&srv, &o, false);
    CHECK_OK(rift_client_publish(c, S("a.b"), (const uint8_t *)"ab", 2, &err));
    rift_client_del(c);
    srv_stop(&srv);
}

RIFT_TEST(publisher_deadline_makes_it_unusable) {
    SETUP(srv, c, 200);
    srv_silent(&srv);
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    CHECK_EQ_INT(
        rift_publisher_publish_confirmed(p, S("a.b"), NULL, 0, NULL, 0, &err),
        RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(err.text, "QUIC operation timed out");
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_UNUSABLE);
    CHECK(rift_test_wait_until(stream_reset_seen, &srv, 5000));
    rift_publisher_close(p);
    rift_client_del(c);
    srv_stop(&srv);
}

static bool stop_sent(void *arg) {
    script_srv *srv = arg;
    return srv_get(srv, &srv->stops_sent) > 0;
}

/* A confirmed publish on a new publisher (its stream answered OK). */
static bool round_trip(script_srv *srv, rift_client *c) {
    bytes o = {0};
    add_ok(&o);
    script_bytes(srv, &o, false);
    rift_publisher *p;
    rift_error err;
    bool ok = rift_client_publisher_open(c, &p, &err) == 0;
    ok = ok && rift_publisher_publish_confirmed(p, S("a.b"), NULL, 0, NULL, 0,
                                                &err) == 0;
    if (ok) {
        rift_publisher_close(p);
    }
    return ok;
}

/* A server that stops reading a publisher's stream (STOP_SENDING) and
 * never sends ERROR or FIN: a confirmed publish queued after that is
 * written nowhere, and must still end at its deadline (it used to wait
 * for good: the deadline timer was armed only after a write). */
RIFT_TEST(publisher_stopped_without_error_keeps_the_deadline) {
    SETUP(srv, c, 200);
    srv_stop_next(&srv);
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    CHECK_OK(rift_publisher_publish(p, S("a.b"), NULL, 0, NULL, 0, &err));
    CHECK(rift_test_wait_until(stop_sent, &srv, 5000));
    /* A round trip on another stream: its answer was sent after the
     * STOP_SENDING, so the client has it by the time the call returns. */
    CHECK(round_trip(&srv, c));
    /* A publish nobody waits for finds the stream stopped when it is
     * written (the client learns of STOP_SENDING by writing); after a
     * second round trip that write has been tried. */
    CHECK_OK(rift_publisher_publish(p, S("a.b"), NULL, 0, NULL, 0, &err));
    CHECK(round_trip(&srv, c));
    CHECK_EQ_INT(
        rift_publisher_publish_confirmed(p, S("a.b"), NULL, 0, NULL, 0, &err),
        RIFT_ERR_TIMEOUT);
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_UNUSABLE);
    rift_publisher_close(p);
    rift_client_del(c);
    srv_stop(&srv);
}

/* ---- Connection loss ---- */

typedef struct waiter_arg {
    rift_client *c;
    int rc;
    rift_error err;
} waiter_arg;

static void *wait_ack(void *arg) {
    waiter_arg *w = arg;
    w->rc = rift_client_ack(w->c, S("s"), S("n"), 1, &w->err);
    return NULL;
}

static void close_conn_cb(void *arg, int status) {
    script_srv *srv = arg;
    (void)status;
    pthread_mutex_lock(&srv->mu);
    rift_quic_conn *conn = srv->conn;
    pthread_mutex_unlock(&srv->mu);
    if (conn != NULL) {
        rift_quic_conn_close(conn, 0, "server shutdown", 15);
    }
}

static bool one_stream(void *arg) {
    script_srv *srv = arg;
    return srv_get(srv, &srv->streams) > 0;
}

RIFT_TEST(server_close_fails_pending_and_later_operations) {
    SETUP(srv, c, 10000);
    srv_silent(&srv);
    rift_client_sub *sub = NULL;
    bytes o = {0};
    add_ok(&o);
    script_bytes(&srv, &o, false);
    CHECK_OK(rift_client_subscribe(c, S("a.b"), NULL, 0, &sub, &err));
    srv_silent(&srv);
    pthread_mutex_lock(&srv.mu);
    srv.streams = 0;
    pthread_mutex_unlock(&srv.mu);
    waiter_arg w = {c, 0, {0, ""}};
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, wait_ack, &w));
    CHECK(rift_test_wait_until(one_stream, &srv, 5000));
    rift_loop_post(srv.ts.loop, close_conn_cb, &srv);
    pthread_join(t, NULL);
    CHECK_EQ_INT(w.rc, RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(w.err.text, "server shutdown");
    rift_msg *m;
    CHECK_EQ_INT(rift_client_sub_recv(sub, 5 * SEC, &m, &err),
                 RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "server shutdown");
    CHECK(!rift_client_is_connected(c));
    CHECK_EQ_INT(rift_client_ack(c, S("s"), S("n"), 1, &err),
                 RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "server shutdown");
    rift_publisher *p;
    CHECK_EQ_INT(rift_client_publisher_open(c, &p, &err), RIFT_ERR_CONNECTION);
    rift_client_sub_close(sub);
    rift_client_del(c);
    srv_stop(&srv);
}
