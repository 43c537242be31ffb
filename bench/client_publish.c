/*
 * client_publish.c — throughput of the C client's publishing paths
 * (bench): a minimal Rift sink server on rift's QUIC transport (its own
 * thread; it counts PUBLISH frames and answers PUBLISH_ACK and PING with
 * OK) and one client on 127.0.0.1. Prints, per scenario, messages per
 * second:
 *   pipelined   bursts of 256 rift_publisher_publish + rift_publisher_flush
 *   enqueue     the cost of one rift_publisher_publish call alone
 *   roundtrip   bursts of 256 publications + flush, then the 256 messages
 *               received through a subscription (the sink forwards each
 *               PUBLISH to it as a MESSAGE): the headline scenario's shape
 *   confirmed   rift_publisher_publish_confirmed one at a time
 *   shared      rift_client_publish one at a time
 * The sink does no routing, so the pipelined figure is the client's own
 * ceiling (the server path is benchmarked separately).
 *
 *   client_publish [seconds-per-scenario (default 2)] [payload bytes (16)]
 */
#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/certgen.h"
#include "quic/quic.h"
#include "rift/client.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- Sink server ---- */

typedef struct sink {
    rift_loop *loop;
    rift_quic_endpoint *ep;
    pthread_t thread;
    _Atomic uint64_t published;
    /* The one subscription stream: PUBLISH frames are forwarded to it as
     * MESSAGE frames (same body layout, other opcode). */
    rift_quic_stream *sub;
} sink;

typedef struct sink_stream {
    sink *sk;
    rift_frame_reader rd;
    bool auth;
} sink_stream;

static void sink_handshake(rift_quic_conn *c, void *ud) {
    rift_quic_conn_set_user_data(c, ud);
}

static void sink_open(rift_quic_stream *s, void *ud) {
    sink_stream *ss = calloc(1, sizeof(*ss));
    ss->sk = ud;
    ss->auth = rift_quic_stream_id(s) == 0;
    rift_frame_reader_init(&ss->rd, RIFT_FRAME_MAX_BYTES, NULL);
    rift_quic_stream_set_user_data(s, ss);
}

static void sink_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                      bool fin, void *ud) {
    sink_stream *ss = ud;
    static const uint8_t ok[5] = {0, 0, 0, 1, RIFT_OP_OK};
    size_t off = 0;
    uint64_t n = 0;
    unsigned oks = 0;
    while (off < len) {
        rift_frame_body b;
        rift_error err;
        rift_ssize k =
            rift_frame_reader_feed(&ss->rd, data + off, len - off, &b, &err);
        if (k < 0) {
            rift_quic_stream_shutdown_read(s, 2);
            return;
        }
        off += (size_t)k;
        if (b.data == NULL) {
            continue;
        }
        switch (b.data[0]) {
        case RIFT_OP_SUBSCRIBE:
            ss->sk->sub = s;
            oks++;
            break;
        case RIFT_OP_PUBLISH:
            n++;
            if (ss->sk->sub != NULL) {
                uint8_t hdr[5] = {(uint8_t)(b.len >> 24),
                                  (uint8_t)(b.len >> 16), (uint8_t)(b.len >> 8),
                                  (uint8_t)b.len, RIFT_OP_MESSAGE};
                rift_quic_chunk ch[2] = {{hdr, 5, NULL, NULL},
                                         {b.data + 1, b.len - 1, NULL, NULL}};
                rift_quic_stream_write(ss->sk->sub, ch, 2, false);
            }
            break;
        case RIFT_OP_PUBLISH_ACK:
            n++;
            oks++;
            break;
        case RIFT_OP_PING:
        case RIFT_OP_AUTH:
            oks++;
            break;
        default:
            break;
        }
    }
    for (unsigned i = 0; i < oks; i++) {
        rift_quic_chunk ch = {ok, sizeof(ok), NULL, NULL};
        rift_quic_stream_write(s, &ch, 1, ss->auth);
    }
    ss->sk->published += n;
    rift_quic_stream_consumed(s, len);
    (void)fin;
}

static void sink_close(rift_quic_stream *s, bool code_set, uint64_t code,
                       void *ud) {
    sink_stream *ss = ud;
    if (ss->sk->sub == s) {
        ss->sk->sub = NULL;
    }
    (void)code_set;
    (void)code;
    rift_frame_reader_free(&ss->rd);
    free(ss);
}

static const rift_quic_callbacks sink_cbs = {
    .handshake_done = sink_handshake,
    .stream_open = sink_open,
    .stream_data = sink_data,
    .stream_close = sink_close,
};

static void *sink_thread(void *arg) {
    sink *sk = arg;
    rift_loop_run(sk->loop);
    return NULL;
}

static void sink_stop_cb(void *arg, int status) {
    sink *sk = arg;
    (void)status;
    rift_quic_endpoint_del(sk->ep);
    rift_loop_stop(sk->loop);
}

/* ---- Scenarios ---- */

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void report(const char *name, uint64_t n, rift_tstamp t0, double cpu0) {
    double secs = (double)(rift_now_ns() - t0) / 1e9;
    double cpu = cpu_seconds() - cpu0;
    printf("%-10s %12.0f msgs/s  %8.3f us/msg  (%llu msgs, %.2f s, CPU %.2f "
           "s for both sides)\n",
           name, (double)n / secs, secs * 1e6 / (double)n,
           (unsigned long long)n, secs, cpu);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    size_t payload_len = argc > 2 ? (size_t)atol(argv[2]) : 16;
    rift_error err;
    char dir[] = "/tmp/rift-bench-client-XXXXXX";
    if (mkdtemp(dir) == NULL || rift_certgen_dev(dir, NULL, &err) != 0) {
        fprintf(stderr, "certificates: %s\n", err.text);
        return 1;
    }
    char ca[256], cert[256], key[256];
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);

    sink sk = {0};
    rift_loop_new(&sk.loop, NULL);
    rift_quic_settings qs;
    rift_quic_settings_default(&qs);
    qs.cert_file = cert;
    qs.key_file = key;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (rift_quic_server_new(&sk.ep, sk.loop, (struct sockaddr *)&sa,
                             sizeof(sa), &qs, &sink_cbs, &sk, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    rift_quic_endpoint_local_addr(sk.ep, &ss, &sl);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
    pthread_create(&sk.thread, NULL, sink_thread, &sk);

    rift_client_settings cs;
    rift_client_settings_default(&cs);
    cs.address = addr;
    cs.ca_file = ca;
    cs.server_name = "localhost";
    cs.token = "bench";
    rift_client *c;
    if (rift_client_new(&c, &cs, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return 1;
    }
    uint8_t *payload = calloc(1, payload_len + 1);
    printf("client_publish: payload %zu bytes, %.1f s per scenario\n",
           payload_len, seconds);

    rift_publisher *p;
    if (rift_client_publisher_open(c, &p, &err) != 0) {
        fprintf(stderr, "publisher: %s\n", err.text);
        return 1;
    }
    uint64_t n = 0;
    double cpu0 = cpu_seconds();
    rift_tstamp t0 = rift_now_ns();
    rift_tstamp end = t0 + (rift_tstamp)(seconds * 1e9);
    while (rift_now_ns() < end) {
        for (int i = 0; i < 256; i++) {
            if (rift_publisher_publish(p, "bench.x", 7, NULL, 0, payload,
                                       payload_len, &err) != 0) {
                fprintf(stderr, "publish: %s\n", err.text);
                return 1;
            }
        }
        if (rift_publisher_flush(p, &err) != 0) {
            fprintf(stderr, "flush: %s\n", err.text);
            return 1;
        }
        n += 256;
    }
    report("pipelined", n, t0, cpu0);

    /* The cost of queueing alone (no flush inside the timed part). */
    uint64_t enq_ns = 0;
    n = 0;
    for (int round = 0; round < 2000; round++) {
        rift_tstamp a = rift_now_ns();
        for (int i = 0; i < 256; i++) {
            rift_publisher_publish(p, "bench.x", 7, NULL, 0, payload,
                                   payload_len, &err);
        }
        enq_ns += rift_now_ns() - a;
        n += 256;
        rift_publisher_flush(p, &err);
    }
    printf("%-10s %12.1f ns per rift_publisher_publish call\n", "enqueue",
           (double)enq_ns / (double)n);

    /* The headline shape: 256 publications, flush, then receive all 256
     * through a subscription on the same connection. */
    rift_client_sub *sub;
    if (rift_client_subscribe(c, "bench.x", 7, NULL, 0, &sub, &err) != 0) {
        fprintf(stderr, "subscribe: %s\n", err.text);
        return 1;
    }
    n = 0;
    cpu0 = cpu_seconds();
    t0 = rift_now_ns();
    end = t0 + (rift_tstamp)(seconds * 1e9);
    while (rift_now_ns() < end) {
        for (int i = 0; i < 256; i++) {
            rift_publisher_publish(p, "bench.x", 7, NULL, 0, payload,
                                   payload_len, &err);
        }
        if (rift_publisher_flush(p, &err) != 0) {
            fprintf(stderr, "flush: %s\n", err.text);
            return 1;
        }
        for (int i = 0; i < 256; i++) {
            rift_msg *m;
            if (rift_client_sub_recv(sub, 5000000000LL, &m, &err) != 0) {
                fprintf(stderr, "recv: %s\n", err.text);
                return 1;
            }
            rift_msg_unref(m);
        }
        n += 256;
    }
    report("roundtrip", n, t0, cpu0);
    rift_client_sub_close(sub);

    n = 0;
    cpu0 = cpu_seconds();
    t0 = rift_now_ns();
    end = t0 + (rift_tstamp)(seconds * 1e9);
    while (rift_now_ns() < end) {
        if (rift_publisher_publish_confirmed(p, "bench.x", 7, NULL, 0, payload,
                                             payload_len, &err) != 0) {
            fprintf(stderr, "publish_confirmed: %s\n", err.text);
            return 1;
        }
        n++;
    }
    report("confirmed", n, t0, cpu0);
    rift_publisher_close(p);

    n = 0;
    cpu0 = cpu_seconds();
    t0 = rift_now_ns();
    end = t0 + (rift_tstamp)(seconds * 1e9);
    while (rift_now_ns() < end) {
        if (rift_client_publish(c, "bench.x", 7, payload, payload_len, &err) !=
            0) {
            fprintf(stderr, "publish: %s\n", err.text);
            return 1;
        }
        n++;
    }
    report("shared", n, t0, cpu0);

    rift_client_del(c);
    rift_loop_post(sk.loop, sink_stop_cb, &sk);
    pthread_join(sk.thread, NULL);
    rift_loop_del(sk.loop);
    free(payload);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}
