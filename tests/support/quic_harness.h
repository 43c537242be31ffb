/*
 * quic_harness.h — shared fixtures for the QUIC transport tests (tests
 * layer): development certificates in a temp dir, one loop driving a
 * server and clients on 127.0.0.1 port 0, a small configurable server app
 * (echo, frame counter, byte sink) and client bookkeeping.
 */
#ifndef RIFT_TESTS_QUIC_HARNESS_H
#define RIFT_TESTS_QUIC_HARNESS_H

#include "common/common.h"
#include "net/loop.h"
#include "quic/certgen.h"
#include "quic/quic.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

/* ---- Server app ---- */

typedef enum srv_mode {
    SRV_ECHO,   /* write back what arrives; FIN after FIN */
    SRV_FRAMES, /* parse [u32 len][u32 seq][...] frames; answer the count */
    SRV_SINK,   /* check the byte pattern; answer the byte count */
    SRV_STOP,   /* STOP_SENDING(7) + FIN right away */
    SRV_LATER,  /* keep the stream whose FIN arrived in |later|; the test
                   answers (answer_later: after saying it will) */
} srv_mode;

typedef struct close_copy {
    bool seen;
    rift_quic_close_kind kind;
    uint64_t code;
    int error;
    char reason[256];
    char detail[256];
} close_copy;

typedef struct srv_stream {
    uint8_t hdr[8];
    size_t hdr_len;
    uint64_t body_left;
    uint64_t frames;
    uint64_t bytes;
    bool bad;
} srv_stream;

typedef struct srv_app {
    srv_mode mode;
    int handshakes;
    int conns_closed;
    int streams_opened;
    int streams_closed;
    int streams_reset;
    uint64_t last_reset_code;
    uint64_t frames_total;
    uint64_t bytes_total;
    bool order_ok;
    close_copy last_close;
    rift_quic_conn *last_conn;
    /* Close each connection right after its handshake with this code. */
    bool close_on_handshake;
    /* SRV_LATER: the stream to answer; call rift_quic_conn_answer_later. */
    rift_quic_stream *later;
    bool answer_later;
} srv_app;

/* ---- Client app ---- */

typedef struct cli_stream {
    struct cli_app *app;
    rift_quic_stream *s;
    uint64_t rx_bytes;
    uint8_t rx[64];
    size_t rx_len;
    bool fin;
    bool closed;
    bool code_set;
    uint64_t code;
    bool stopped;
    bool reset;
    uint64_t reset_code;
} cli_stream;

typedef struct cli_app {
    bool handshake;
    close_copy close;
    int streams_available;
    int closed_streams;
    int stopped_streams;
    /* Keep writing on stopped-test streams when acks arrive. */
    bool write_on_ack;
    cli_stream *streams[512];
    size_t nstreams;
    uint64_t acked_events;
} cli_app;

/* ---- Harness ---- */

typedef struct harness {
    char *tmp;
    char certs[4096];
    char other_certs[4096];
    char ca[4200], cert[4200], key[4200], other_ca[4200];
    rift_loop *loop;
    rift_quic_endpoint *server;
    srv_app srv;
    struct sockaddr_storage addr;
    socklen_t addrlen;
} harness;

extern const rift_quic_callbacks harness_server_cbs;
extern const rift_quic_callbacks harness_client_cbs;

/* Makes certificates and the loop. Returns false on failure. */
bool harness_init(harness *h);
/* Starts the server with |s| (NULL: defaults + cert files). */
bool harness_server(harness *h, rift_quic_settings *s);
void harness_fini(harness *h);

/* Client settings pointing at the harness CA and "localhost". */
void harness_client_settings(harness *h, rift_quic_settings *s);
/* Starts a client; its callbacks update |app|. */
rift_quic_endpoint *harness_client(harness *h, rift_quic_settings *s,
                                   cli_app *app);
/* Frees a client app's stream records. */
void cli_app_free(cli_app *app);
/* Opens a stream and registers it with |app|. NULL on failure. */
cli_stream *cli_open(cli_app *app, rift_quic_conn *c);

/* Runs the loop until |cond| holds or |timeout_ms| passes. */
bool harness_run(harness *h, bool (*cond)(void *), void *arg, int timeout_ms);
/* Runs the loop for |ms| milliseconds. */
void harness_spin(harness *h, int ms);

bool cond_handshake(void *arg);     /* cli_app.handshake */
bool cond_client_closed(void *arg); /* cli_app.close.seen */

/* Byte pattern for sink tests. */
static inline uint8_t pattern_at(uint64_t off) {
    return (uint8_t)((off * 31 + 7) ^ (off >> 13));
}

static inline void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

#endif /* RIFT_TESTS_QUIC_HARNESS_H */
