/*
 * quic_transport.c — loopback benchmark of the QUIC transport layer (bench
 * layer): frame throughput over one connection and one stream, and
 * sequential handshakes per second. Server and client each run their own
 * rift_loop on their own thread (pinned to CPU 0 and 1 when there are two).
 *
 *   quic_transport [-n FRAMES] [-s BODY] [-H HANDSHAKES] [-r RUNS]
 *                  [--no-gso] [--no-gro] [--no-pin]
 *
 * Throughput: the client writes FRAMES frames of [u32 length][BODY bytes]
 * (one rift_quic_stream_write per frame, copied), keeping at most the
 * 8,912,896-byte send window unacknowledged, then FIN. The server parses
 * frame boundaries, returns flow-control credit as it goes, and answers
 * the frame count with FIN. Time runs from the first write to that answer;
 * MB/s counts body bytes (10^6). CPU is per thread (user + system).
 *
 * Handshakes: HANDSHAKES sequential connects (handshake, close, free);
 * reported as handshakes per second of wall time, and server CPU per
 * handshake (which bounds handshakes per second per core).
 *
 * Each measurement is repeated RUNS times; every run and the median are
 * printed.
 */
#include "common/common.h"
#include "net/loop.h"
#include "quic/certgen.h"
#include "quic/quic.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SEND_WINDOW 8912896

typedef struct opts {
    uint64_t frames;
    size_t body;
    int handshakes;
    int runs;
    bool gso;
    bool gro;
    bool pin;
} opts;

static double thread_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---- Server (own thread) ---- */

typedef struct srv_stream {
    uint8_t hdr[4];
    size_t hdr_len;
    uint64_t body_left;
    uint64_t frames;
} srv_stream;

typedef struct server {
    rift_loop *loop;
    rift_quic_endpoint *ep;
    pthread_t thread;
    bool pin;
    /* CPU seconds of the server thread, published at each handshake and
     * stream end (read by main after the client saw the answer). */
    _Atomic uint64_t cpu_us;
    int handshakes;
} server;

static void publish_cpu(server *sv) {
    atomic_store(&sv->cpu_us, (uint64_t)(thread_cpu() * 1e6));
}

static void s_handshake(rift_quic_conn *c, void *ud) {
    server *sv = ud;
    rift_quic_conn_set_user_data(c, sv);
    sv->handshakes++;
    publish_cpu(sv);
}

static void s_open(rift_quic_stream *s, void *ud) {
    (void)ud;
    rift_quic_stream_set_user_data(s, calloc(1, sizeof(srv_stream)));
}

static void s_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                   bool fin, void *ud) {
    srv_stream *ss = ud;
    size_t i = 0;
    while (i < len) {
        if (ss->body_left > 0) {
            size_t k = len - i < ss->body_left ? len - i : ss->body_left;
            ss->body_left -= k;
            i += k;
            continue;
        }
        while (i < len && ss->hdr_len < 4) {
            ss->hdr[ss->hdr_len++] = data[i++];
        }
        if (ss->hdr_len == 4) {
            ss->body_left = (uint64_t)ss->hdr[0] << 24 |
                            (uint64_t)ss->hdr[1] << 16 |
                            (uint64_t)ss->hdr[2] << 8 | ss->hdr[3];
            ss->hdr_len = 0;
            ss->frames++;
        }
    }
    rift_quic_stream_consumed(s, len);
    if (fin) {
        uint8_t out[8];
        put_u32(out, (uint32_t)(ss->frames >> 32));
        put_u32(out + 4, (uint32_t)ss->frames);
        rift_quic_chunk ch = {out, 8, NULL, NULL};
        rift_quic_stream_write(s, &ch, 1, true);
        server *sv = rift_quic_conn_get_user_data(rift_quic_stream_conn(s));
        publish_cpu(sv);
    }
}

static void s_close(rift_quic_stream *s, bool code_set, uint64_t code,
                    void *ud) {
    (void)s;
    (void)code_set;
    (void)code;
    free(ud);
}

static void s_conn_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                          void *ud) {
    (void)c;
    (void)ci;
    publish_cpu(ud);
}

static void *server_main(void *arg) {
    server *sv = arg;
    if (sv->pin) {
        pin_to(0);
    }
    publish_cpu(sv);
    rift_loop_run(sv->loop);
    return NULL;
}

/* ---- Client (main thread) ---- */

typedef struct client {
    rift_loop *loop;
    rift_quic_endpoint *ep;
    rift_quic_stream *s;
    bool handshake;
    bool closed;
    bool done;
    uint64_t sent;
    uint64_t total;
    uint8_t *frame;
    size_t frame_len;
    uint8_t answer[8];
    size_t answer_len;
} client;

static void c_handshake(rift_quic_conn *c, void *ud) {
    (void)c;
    ((client *)ud)->handshake = true;
}

static void c_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                     void *ud) {
    (void)c;
    client *cl = ud;
    if (!cl->handshake) {
        fprintf(stderr, "connect failed: %s\n", ci->detail);
    }
    cl->closed = true;
}

/* Keeps the send window full, one frame per write call. */
static void fill(client *cl) {
    while (cl->s && cl->sent < cl->total &&
           rift_quic_stream_unacked(cl->s) + cl->frame_len <= SEND_WINDOW) {
        rift_quic_chunk ch = {cl->frame, cl->frame_len, NULL, NULL};
        bool last = ++cl->sent == cl->total;
        if (rift_quic_stream_write(cl->s, &ch, 1, last) != 0) {
            fprintf(stderr, "write failed\n");
            exit(1);
        }
    }
}

static void c_acked(rift_quic_stream *s, uint64_t unacked, void *ud) {
    (void)s;
    (void)unacked;
    fill(ud);
}

static void c_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                   bool fin, void *ud) {
    client *cl = ud;
    for (size_t i = 0; i < len && cl->answer_len < 8; i++) {
        cl->answer[cl->answer_len++] = data[i];
    }
    rift_quic_stream_consumed(s, len);
    if (fin) {
        cl->done = true;
    }
}

static void c_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                           void *ud) {
    (void)s;
    (void)code_set;
    (void)code;
    client *cl = ud;
    cl->s = NULL;
}

static const rift_quic_callbacks client_cbs = {
    .handshake_done = c_handshake,
    .conn_closed = c_closed,
    .stream_data = c_data,
    .stream_acked = c_acked,
    .stream_close = c_stream_close,
};

static const rift_quic_callbacks server_cbs = {
    .handshake_done = s_handshake,
    .conn_closed = s_conn_closed,
    .stream_open = s_open,
    .stream_data = s_data,
    .stream_close = s_close,
};

static void run_until(client *cl, bool *flag) {
    while (!*flag && !cl->closed) {
        rift_loop_run_once(cl->loop, 100000000);
    }
}

static int connect_client(client *cl, const struct sockaddr_storage *addr,
                          socklen_t addrlen, const char *ca, const opts *o) {
    rift_quic_settings s;
    rift_quic_settings_default_client(&s);
    s.ca_file = ca;
    s.server_name = "localhost";
    s.gso = o->gso;
    s.gro = o->gro;
    rift_error err;
    if (rift_quic_client_new(&cl->ep, cl->loop, (const struct sockaddr *)addr,
                             addrlen, &s, &client_cbs, cl, &err) != 0) {
        fprintf(stderr, "client: %s\n", err.text);
        return -1;
    }
    run_until(cl, &cl->handshake);
    return cl->handshake ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    opts o = {2000000, 64, 200, 3, true, true, true};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            o.frames = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            o.body = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "-H") && i + 1 < argc) {
            o.handshakes = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            o.runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-gso")) {
            o.gso = false;
        } else if (!strcmp(argv[i], "--no-gro")) {
            o.gro = false;
        } else if (!strcmp(argv[i], "--no-pin")) {
            o.pin = false;
        } else {
            fprintf(stderr,
                    "usage: %s [-n FRAMES] [-s BODY] [-H HANDSHAKES] "
                    "[-r RUNS] [--no-gso] [--no-gro] [--no-pin]\n",
                    argv[0]);
            return 2;
        }
    }
    if (o.runs < 1 || o.runs > 64 || o.body > 1 << 20) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        o.pin = false;
    }

    char dir[] = "/tmp/rift-bench-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char certs[64], ca[96], cert[96], key[96];
    snprintf(certs, sizeof(certs), "%s/certs", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
    snprintf(cert, sizeof(cert), "%s/server.pem", certs);
    snprintf(key, sizeof(key), "%s/server.key", certs);
    rift_error err;
    if (rift_certgen_dev(certs, NULL, &err) != 0) {
        fprintf(stderr, "certgen: %s\n", err.text);
        return 1;
    }

    server sv;
    memset(&sv, 0, sizeof(sv));
    sv.pin = o.pin;
    rift_loop_new(&sv.loop, NULL);
    rift_quic_settings ss;
    rift_quic_settings_default(&ss);
    ss.cert_file = cert;
    ss.key_file = key;
    ss.gso = o.gso;
    ss.gro = o.gro;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (rift_quic_server_new(&sv.ep, sv.loop, (struct sockaddr *)&sa,
                             sizeof(sa), &ss, &server_cbs, &sv, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return 1;
    }
    struct sockaddr_storage addr;
    socklen_t addrlen;
    rift_quic_endpoint_local_addr(sv.ep, &addr, &addrlen);
    pthread_create(&sv.thread, NULL, server_main, &sv);
    if (o.pin) {
        pin_to(1);
    }

    client cl;
    memset(&cl, 0, sizeof(cl));
    rift_loop_new(&cl.loop, NULL);
    cl.frame_len = 4 + o.body;
    cl.frame = calloc(1, cl.frame_len);
    put_u32(cl.frame, (uint32_t)o.body);
    memset(cl.frame + 4, 0xab, o.body);

    printf("quic_transport: %" PRIu64 " frames x %zu B body, gso=%d gro=%d "
           "pin=%d\n",
           o.frames, o.body, o.gso, o.gro, o.pin);
    double mps[64], mbs[64], hps[64], hcpu[64], cns[64], sns[64];
    for (int r = 0; r < o.runs; r++) {
        if (connect_client(&cl, &addr, addrlen, ca, &o) != 0) {
            return 1;
        }
        rift_quic_conn *conn = rift_quic_client_conn(cl.ep);
        if (rift_quic_conn_open_stream(conn, &cl, &cl.s) != 0) {
            fprintf(stderr, "open stream failed\n");
            return 1;
        }
        cl.sent = 0;
        cl.total = o.frames;
        cl.done = false;
        cl.answer_len = 0;
        uint64_t srv_cpu0 = atomic_load(&sv.cpu_us);
        double ccpu0 = thread_cpu();
        rift_tstamp t0 = rift_now_ns();
        fill(&cl);
        run_until(&cl, &cl.done);
        double secs = (double)(rift_now_ns() - t0) / 1e9;
        double ccpu = thread_cpu() - ccpu0;
        double scpu = (double)(atomic_load(&sv.cpu_us) - srv_cpu0) / 1e6;
        uint64_t got =
            (uint64_t)cl.answer[0] << 56 | (uint64_t)cl.answer[1] << 48 |
            (uint64_t)cl.answer[2] << 40 | (uint64_t)cl.answer[3] << 32 |
            (uint64_t)cl.answer[4] << 24 | (uint64_t)cl.answer[5] << 16 |
            (uint64_t)cl.answer[6] << 8 | cl.answer[7];
        if (!cl.done || got != o.frames) {
            fprintf(stderr, "run %d: server counted %" PRIu64 " frames\n", r,
                    got);
            return 1;
        }
        uint64_t srtt, cwnd;
        rift_quic_conn_get_rtt(conn, &srtt, &cwnd);
        rift_quic_endpoint_stats st;
        rift_quic_endpoint_get_stats(cl.ep, &st);
        mps[r] = (double)o.frames / secs;
        mbs[r] = (double)o.frames * (double)o.body / secs / 1e6;
        cns[r] = ccpu / (double)o.frames * 1e9;
        sns[r] = scpu / (double)o.frames * 1e9;
        printf("  run %d: %.3f s  %.2f M msgs/s  %.0f MB/s  client cpu "
               "%.0f%%  server cpu %.0f%%  (srtt %.0f us, cwnd %" PRIu64
               " KiB, %" PRIu64 " datagrams in %" PRIu64
               " send calls, eagain %" PRIu64 ", gso %d)\n",
               r, secs, mps[r] / 1e6, mbs[r], 100 * ccpu / secs,
               100 * scpu / secs, (double)srtt / 1e3, cwnd / 1024,
               st.tx_datagrams, st.tx_calls, st.tx_eagain, st.gso);
        rift_quic_conn_close(conn, 0, "client closed", 13);
        rift_loop_run_once(cl.loop, 0);
        rift_quic_endpoint_del(cl.ep);
        cl.ep = NULL;
        cl.handshake = cl.closed = false;
    }
    double cn = median(cns, o.runs), sn = median(sns, o.runs);
    /* On a shared machine the wall-clock rate follows the CPU share the
     * threads get; the CPU cost per frame does not. */
    printf("  median: %.2f M msgs/s, %.0f MB/s; CPU per frame: client %.0f "
           "ns, server %.0f ns (CPU-bound ceiling ~%.1f M msgs/s)\n",
           median(mps, o.runs) / 1e6, median(mbs, o.runs), cn, sn,
           1e3 / (cn > sn ? cn : sn));

    for (int r = 0; r < o.runs && o.handshakes > 0; r++) {
        uint64_t srv_cpu0 = atomic_load(&sv.cpu_us);
        int hs0 = sv.handshakes;
        rift_tstamp t0 = rift_now_ns();
        for (int i = 0; i < o.handshakes; i++) {
            if (connect_client(&cl, &addr, addrlen, ca, &o) != 0) {
                return 1;
            }
            rift_quic_conn_close(rift_quic_client_conn(cl.ep), 0,
                                 "client closed", 13);
            rift_loop_run_once(cl.loop, 0);
            rift_quic_endpoint_del(cl.ep);
            cl.ep = NULL;
            cl.handshake = cl.closed = false;
        }
        double secs = (double)(rift_now_ns() - t0) / 1e9;
        /* Let the server finish the last one before reading its CPU. */
        usleep(20000);
        double scpu = (double)(atomic_load(&sv.cpu_us) - srv_cpu0) / 1e6;
        int n = sv.handshakes - hs0;
        hps[r] = o.handshakes / secs;
        hcpu[r] = n > 0 ? scpu / n * 1e3 : 0;
        printf("  handshakes run %d: %d in %.3f s = %.0f/s sequential; "
               "server cpu %.3f ms each (~%.0f/s/core)\n",
               r, o.handshakes, secs, hps[r], hcpu[r],
               hcpu[r] > 0 ? 1e3 / hcpu[r] : 0);
    }
    if (o.handshakes > 0) {
        double hc = median(hcpu, o.runs);
        printf("  median: %.0f handshakes/s sequential, server %.3f ms CPU "
               "each (~%.0f/s/core)\n",
               median(hps, o.runs), hc, hc > 0 ? 1e3 / hc : 0);
    }

    rift_loop_stop(sv.loop);
    pthread_join(sv.thread, NULL);
    rift_quic_endpoint_del(sv.ep);
    rift_loop_del(sv.loop);
    rift_loop_del(cl.loop);
    free(cl.frame);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot remove %s\n", dir);
    }
    return 0;
}
