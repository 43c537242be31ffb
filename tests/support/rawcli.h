/*
 * rawcli.h — a raw protocol-v1 test client over the internal QUIC
 * transport (tests layer), for the server tests: it sends arbitrary bytes
 * on any stream, buffers what comes back, cuts it into frames, and can
 * stop crediting a stream (a subscriber that does not read). Plus a server
 * fixture: development certificates in a temp dir, a broker, a
 * rift_server on 127.0.0.1 port 0 with the test identities, and a client
 * loop driven by the test thread (the server runs its own thread).
 *
 * Test identities (tokens are "<name>-token-0123456789abcdef0123456789"):
 *   plugin        publish game.>, _INBOX.>   subscribe game.>, _INBOX.>
 *   other_plugin  same grants as plugin
 *   interop       publish interop.>, nobody.>, _INBOX.>
 *                 subscribe interop.>, _INBOX.>
 *   wide          publish >, subscribe > (control off)
 *   admin         publish >, subscribe >, control on
 */
#ifndef RIFT_TESTS_RAWCLI_H
#define RIFT_TESTS_RAWCLI_H

#include "common/common.h"
#include "net/loop.h"
#include "quic/quic.h"
#include "rift/broker.h"
#include "rift/server.h"
#include "test.h"

#include <netinet/in.h>

/* ---- Client ---- */

typedef struct rawcli rawcli;

typedef struct rc_stream {
    rawcli *cli;
    rift_quic_stream *s; /* NULL once closed */
    uint8_t *rx;
    size_t rx_off, rx_len, rx_cap;
    uint64_t rx_total;
    bool fin;
    bool reset;
    uint64_t reset_code;
    bool stopped; /* our write side was stopped by the server */
    bool closed;
    bool code_set;
    uint64_t close_code;
    bool paused; /* do not credit received bytes */
    uint64_t uncredited;
    uint64_t acked_events;
} rc_stream;

typedef struct rc_close {
    bool seen;
    rift_quic_close_kind kind;
    uint64_t code;
    char reason[1100];
    char detail[256];
} rc_close;

struct rawcli {
    rift_loop *loop;
    rift_quic_endpoint *ep;
    rift_quic_conn *conn;
    bool handshake;
    rc_close close;
    rc_stream **streams;
    size_t nstreams, cap;
    int streams_available;
};

/* Starts a connection to |addr| trusting |ca| (server name "localhost")
 * and waits up to 5 s for the handshake. NULL on failure (the close, if
 * any, is printed). With |wait| false it returns at once. */
rawcli *rc_connect(rift_loop *loop, const struct sockaddr_storage *addr,
                   socklen_t len, const char *ca, bool wait);
/* Same with a receive window of |stream_window| bytes per stream (0 =
 * the default 2,228,224). */
rawcli *rc_connect_window(rift_loop *loop, const struct sockaddr_storage *addr,
                          socklen_t len, const char *ca, bool wait,
                          uint64_t stream_window);
/* Closes with code 0 "client closed" and frees everything. */
void rc_free(rawcli *c);
/* Frees without sending anything (the peer finds out by timeout). */
void rc_abort(rawcli *c);

/* Opens a stream (NULL when the server's limit is reached). */
rc_stream *rc_open(rawcli *c);
/* Writes bytes (copied). */
bool rc_send(rc_stream *s, const void *data, size_t len, bool fin);
/* RESET_STREAM(code) and/or STOP_SENDING(code). */
void rc_reset(rc_stream *s, uint64_t code);
void rc_stop(rc_stream *s, uint64_t code);
/* Pause / resume crediting the stream's received bytes. */
void rc_pause(rc_stream *s);
void rc_resume(rc_stream *s);

/* Runs the client loop until |cond(arg)| or |ms| pass. */
bool rc_run(rawcli *c, bool (*cond)(void *), void *arg, int ms);
void rc_spin(rawcli *c, int ms);

/* Waits up to |ms| for one whole frame on |s|; returns its body (valid
 * until the next call on |s|) or NULL on timeout, FIN or reset. */
const uint8_t *rc_frame(rc_stream *s, int ms, size_t *len);
/* Waits for the end of the server's side (FIN with nothing more, reset
 * or close). True when no further frame came. */
bool rc_expect_end(rc_stream *s, int ms);

/* Frame builders (a whole frame into |buf|, returns its size). */
size_t rc_build_auth(uint8_t *buf, const char *token);
size_t rc_build_msg(uint8_t *buf, uint8_t op, const char *subject,
                    const char *reply, const void *payload, size_t plen);
size_t rc_build_subscribe(uint8_t *buf, const char *pattern, const char *queue);
size_t rc_build_request(uint8_t *buf, uint32_t timeout_ms, const char *subject,
                        const void *payload, size_t plen);

/* Authenticates on a fresh stream; returns 0 when OK came back, else the
 * ERROR code (1/2) or -1 (nothing). */
int rc_auth(rawcli *c, const char *token);
/* A connected and authenticated client for |identity| (a test name). */
rawcli *rc_login(rift_loop *loop, const struct sockaddr_storage *addr,
                 socklen_t len, const char *ca, const char *identity);

rawcli *rc_login_window(rift_loop *loop, const struct sockaddr_storage *addr,
                        socklen_t len, const char *ca, const char *identity,
                        uint64_t stream_window);

/* Frame checks: print what came instead and return false. */
bool rc_expect_ok(rc_stream *s, int ms);
bool rc_expect_error(rc_stream *s, int code, const char *text, int ms);
/* A MESSAGE frame: subject, reply, payload (copied out, NUL-terminated
 * strings; the payload pointer stays valid until the next call). */
typedef struct rc_msg {
    char subject[1100];
    char reply[1100];
    const uint8_t *payload;
    size_t payload_len;
} rc_msg;
bool rc_expect_msg(rc_stream *s, rc_msg *m, int ms);

/* Subscribe / publish helpers on a stream (send and, where the protocol
 * answers, expect OK). */
bool rc_subscribe(rc_stream *s, const char *pattern, const char *queue);
bool rc_publish(rc_stream *s, const char *subject, const void *payload,
                size_t plen, bool ack);
bool rc_ping(rc_stream *s);

/* ---- Server fixture ---- */

#define RC_TOKEN(name) name "-token-0123456789abcdef0123456789"

typedef struct srvfix {
    char *tmp;
    char ca[4200], cert[4200], key[4200];
    rift_broker *broker;
    rift_server *srv;
    rift_server_settings settings;
    rift_loop *loop;
    struct sockaddr_storage addr;
    socklen_t addrlen;
} srvfix;

/* Certificates, broker (|bs| or defaults) and the client loop; fills
 * fix->settings with the test identities and defaults, which the test may
 * change before fix_start. */
bool fix_init(srvfix *f, const rift_broker_settings *bs);
/* Creates and starts the server on 127.0.0.1:0. */
bool fix_start(srvfix *f);
/* Stops and frees everything. */
void fix_fini(srvfix *f);

/* Polls rift_broker_subscription_count until it equals |n|. */
bool fix_wait_subs(srvfix *f, size_t n, int ms);

/* ---- What a client that never reads pins (memory tests) ---- */

/* The resident set only means something outside TSan, whose shadow memory
 * grows with every byte touched (the accounting checks still run there). */
#if defined(__SANITIZE_THREAD__)
# define RSS_MEANINGFUL 0
#else
# define RSS_MEANINGFUL 1
#endif

/* The server's budget per connection (SRV_CONN_HIGH, the protocol's send
 * window) and what one stream may add past it (one portion of a fetch). */
#define CONN_BUDGET 8912896u
#define OVERSHOOT   (2u * 1024u * 1024u + 65536u)

/* This process's resident set in KiB (the server under test runs in it). */
uint64_t rss_kib(void);

typedef struct queued_wait {
    srvfix *f;
    uint64_t at_least; /* the peak; or, with zero, queued_bytes back to 0 */
} queued_wait;

/* A rc_run condition: the server's conn_queued_peak reached at_least, or
 * (at_least 0) nothing is queued any more. */
bool queued_reached(void *arg);

#endif /* RIFT_TESTS_RAWCLI_H */
