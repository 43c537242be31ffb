/*
 * quic_server.c — benchmark of the protocol server (bench layer): the
 * original's QUIC scenarios (docs/protocol-v1.md §8.1) with 64-byte
 * payloads over one warm connection, plus handshakes with authentication
 * per second and the server's memory per idle authenticated connection.
 *
 *   quic_server [-n COUNT] [-r RUNS] [-s rtt,pipe,hs,rss] [-c CONNS]
 *               [--csv FILE] [--pin]
 *
 * The server (broker with subscription_capacity 8,192, identity
 * "benchmark" publishing and subscribing bench.>) runs in a child process
 * on 127.0.0.1:0 with its own thread, so its CPU time and RSS are its own.
 * The client is a minimal protocol client over the internal QUIC layer
 * (src/quic), driven by this process's thread (the C client library,
 * being written in parallel, is not used yet).
 *
 * Scenarios (each run RUNS times; every run and the median are printed):
 *   rtt   one subscriber on bench.quic and one publisher stream; a sample
 *         is one unconfirmed PUBLISH and the receipt of its MESSAGE;
 *         COUNT + 1,000 samples, the first 1,000 discarded.
 *         "<name>: p50=<x> us p95=<x> us p99=<x> us (<n> samples)"
 *   pipe  repeat {256 PUBLISH, PING, wait for OK and the 256 MESSAGEs}
 *         until COUNT messages: "<N> messages/s", plus CPU per message.
 *   hs    sequential connect + AUTH + OK + close, 200 times: per second.
 *   rss   CONNS (1,000) idle authenticated connections: the server's RSS
 *         growth divided by CONNS.
 *   lib   rtt and pipe again, through the C client library
 *         (include/rift/client.h) instead of the minimal client (not in
 *         the default set).
 * Every received payload is checked (64 bytes of 0x2A).
 */
#include "bench_csv.h"

#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/certgen.h"
#include "quic/quic.h"
#include "rift/broker.h"
#include "rift/client.h"
#include "rift/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN   "benchmark-only-token-32-bytes-long"
#define PAYLOAD 64
#define BATCH   256

static uint8_t g_payload[PAYLOAD];

/* ---- Server child ---- */

typedef struct child {
    pid_t pid;
    int ctl; /* write end: closing it stops the child */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char ca[4200];
    char tmp[256];
} child;

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static int child_main(const char *dir, int out, int ctl, bool pin) {
    if (pin) {
        pin_to(1);
    }
    char cert[4200], key[4200];
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.subscription_capacity = 8192;
    rift_broker *b;
    rift_error err;
    if (rift_broker_new(&b, &bs, &err) != 0) {
        return 1;
    }
    const char *grants[] = {"bench.>"};
    rift_server_identity id = {
        .name = "benchmark",
        .name_len = 9,
        .token = TOKEN,
        .token_len = strlen(TOKEN),
        .publish = grants,
        .publish_count = 1,
        .subscribe = grants,
        .subscribe_count = 1,
    };
    rift_server_settings s;
    rift_server_settings_default(&s);
    s.cert_file = cert;
    s.key_file = key;
    s.identities = &id;
    s.identity_count = 1;
    s.max_connections = 4096;
    rift_server *srv;
    if (rift_server_new(&srv, b, &s, &err) != 0 ||
        rift_server_start(srv, "127.0.0.1:0", &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    rift_server_local_addr(srv, &ss, &len, NULL);
    if (write(out, &ss, sizeof(ss)) != (ssize_t)sizeof(ss) ||
        write(out, &len, sizeof(len)) != (ssize_t)sizeof(len)) {
        return 1;
    }
    close(out);
    char c;
    while (read(ctl, &c, 1) > 0) {
    }
    rift_server_del(srv);
    rift_broker_del(b);
    return 0;
}

static bool child_start(child *ch, bool pin) {
    snprintf(ch->tmp, sizeof(ch->tmp), "/tmp/rift-bench-server-XXXXXX");
    if (mkdtemp(ch->tmp) == NULL) {
        return false;
    }
    rift_error err;
    if (rift_certgen_dev(ch->tmp, NULL, &err) != 0) {
        fprintf(stderr, "certgen: %s\n", err.text);
        return false;
    }
    snprintf(ch->ca, sizeof(ch->ca), "%s/ca.pem", ch->tmp);
    int up[2], ctl[2];
    if (pipe(up) != 0 || pipe(ctl) != 0) {
        return false;
    }
    ch->pid = fork();
    if (ch->pid == 0) {
        close(up[0]);
        close(ctl[1]);
        _exit(child_main(ch->tmp, up[1], ctl[0], pin));
    }
    close(up[1]);
    close(ctl[0]);
    ch->ctl = ctl[1];
    bool ok =
        read(up[0], &ch->addr, sizeof(ch->addr)) == (ssize_t)sizeof(ch->addr) &&
        read(up[0], &ch->addrlen, sizeof(ch->addrlen)) ==
            (ssize_t)sizeof(ch->addrlen);
    close(up[0]);
    return ok;
}

static void child_stop(child *ch) {
    close(ch->ctl);
    waitpid(ch->pid, NULL, 0);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", ch->tmp);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot remove %s\n", ch->tmp);
    }
}

/* The child's CPU seconds (utime + stime) and RSS in KiB. */
static double child_cpu(const child *ch) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)ch->pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) != 2) {
        return -1;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long child_rss_kib(const child *ch) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kib;
}

/* ---- Client ---- */

typedef struct bstream {
    rift_quic_stream *s;
    rift_frame_reader r;
    uint64_t msgs, oks, errors, bad;
    bool closed;
} bstream;

typedef struct bcli {
    rift_loop *loop;
    rift_quic_endpoint *ep;
    rift_quic_conn *conn;
    bool hs, closed;
    bstream st[4];
    int nst;
} bcli;

static void c_handshake(rift_quic_conn *c, void *ud) {
    (void)c;
    ((bcli *)ud)->hs = true;
}

static void c_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                     void *ud) {
    (void)c;
    bcli *b = ud;
    if (!b->hs) {
        fprintf(stderr, "connection failed: %s\n", ci->detail);
    }
    b->closed = true;
}

static void c_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                   bool fin, void *ud) {
    bstream *bs = ud;
    (void)fin;
    size_t off = 0;
    while (off < len) {
        rift_frame_body body;
        rift_ssize n =
            rift_frame_reader_feed(&bs->r, data + off, len - off, &body, NULL);
        if (n < 0) {
            bs->bad++;
            break;
        }
        off += (size_t)n;
        if (body.data == NULL) {
            continue;
        }
        switch (body.data[0]) {
        case RIFT_OP_MESSAGE:
            /* subject "bench.quic", empty reply, 64 payload bytes */
            if (body.len != 1 + 2 + 10 + 2 + PAYLOAD ||
                memcmp(body.data + body.len - PAYLOAD, g_payload, PAYLOAD) !=
                    0) {
                bs->bad++;
            }
            bs->msgs++;
            break;
        case RIFT_OP_OK:
            bs->oks++;
            break;
        default:
            bs->errors++;
            if (body.data[0] == RIFT_OP_ERROR && body.len > 5) {
                fprintf(stderr, "ERROR: %.*s\n", (int)body.len - 5,
                        (const char *)body.data + 5);
            }
            break;
        }
    }
    rift_quic_stream_consumed(s, len);
}

static void c_close(rift_quic_stream *s, bool code_set, uint64_t code,
                    void *ud) {
    (void)s;
    (void)code_set;
    (void)code;
    ((bstream *)ud)->closed = true;
}

static const rift_quic_callbacks client_cbs = {
    .handshake_done = c_handshake,
    .conn_closed = c_closed,
    .stream_data = c_data,
    .stream_close = c_close,
};

static void run_until(bcli *b, bool (*cond)(void *), void *arg) {
    rift_tstamp end = rift_now_ns() + 30000000000ull;
    while (!cond(arg) && !b->closed && rift_now_ns() < end) {
        rift_loop_run_once(b->loop, 100000000);
    }
}

static bool cond_hs(void *arg) {
    return ((bcli *)arg)->hs;
}

static bool cond_ok(void *arg) {
    return ((bstream *)arg)->oks > 0;
}

static bcli *bcli_open(rift_loop *loop, const child *ch, bool wait) {
    bcli *b = calloc(1, sizeof(*b));
    b->loop = loop;
    rift_quic_settings s;
    rift_quic_settings_default_client(&s);
    s.ca_file = ch->ca;
    s.server_name = "localhost";
    rift_error err;
    if (rift_quic_client_new(&b->ep, loop, (const struct sockaddr *)&ch->addr,
                             ch->addrlen, &s, &client_cbs, b, &err) != 0) {
        fprintf(stderr, "client: %s\n", err.text);
        free(b);
        return NULL;
    }
    b->conn = rift_quic_client_conn(b->ep);
    if (wait) {
        run_until(b, cond_hs, b);
    }
    return b;
}

static bstream *bcli_stream(bcli *b) {
    bstream *bs = &b->st[b->nst++];
    rift_frame_reader_init(&bs->r, RIFT_FRAME_MAX_BYTES, NULL);
    if (rift_quic_conn_open_stream(b->conn, bs, &bs->s) != 0) {
        return NULL;
    }
    return bs;
}

static void send_bytes(bstream *bs, const uint8_t *p, size_t n, bool fin) {
    rift_quic_chunk ch = {p, n, NULL, NULL};
    rift_quic_stream_write(bs->s, &ch, 1, fin);
}

/* Authenticates (AUTH on a fresh stream, FIN, OK). */
static bool bcli_auth(bcli *b) {
    bstream *a = bcli_stream(b);
    if (a == NULL) {
        return false;
    }
    uint8_t buf[128];
    rift_ssize n =
        rift_frame_encode_auth(buf, sizeof(buf), TOKEN, strlen(TOKEN));
    send_bytes(a, buf, (size_t)n, true);
    run_until(b, cond_ok, a);
    return a->oks == 1;
}

static void bcli_free(bcli *b, bool say_bye) {
    if (say_bye && !b->closed) {
        rift_quic_conn_close(b->conn, 0, "client closed", 13);
        rift_loop_run_once(b->loop, 0);
    }
    rift_quic_endpoint_del(b->ep);
    for (int i = 0; i < b->nst; i++) {
        rift_frame_reader_free(&b->st[i].r);
    }
    free(b);
}

/* A subscriber and a publisher stream on one authenticated connection. */
typedef struct pair {
    bcli *b;
    bstream *sub, *pub;
} pair;

static bool pair_open(pair *p, rift_loop *loop, const child *ch) {
    p->b = bcli_open(loop, ch, true);
    if (p->b == NULL || !p->b->hs || !bcli_auth(p->b)) {
        return false;
    }
    p->sub = bcli_stream(p->b);
    p->pub = bcli_stream(p->b);
    uint8_t buf[64];
    rift_ssize n =
        rift_frame_encode_subscribe(buf, sizeof(buf), "bench.quic", 10, "", 0);
    send_bytes(p->sub, buf, (size_t)n, false);
    run_until(p->b, cond_ok, p->sub);
    return p->sub->oks == 1;
}

/* ---- Scenarios ---- */

typedef struct result {
    double p50, p95, p99, max;
    double rate;
    double seconds;
    double client_cpu, server_cpu;
    uint64_t msgs;
    uint64_t errors;
} result;

typedef struct wait_msgs {
    bstream *s;
    uint64_t want;
} wait_msgs;

static bool cond_msgs(void *arg) {
    wait_msgs *w = arg;
    return w->s->msgs >= w->want;
}

static bool rtt(rift_loop *loop, const child *ch, size_t count, result *r) {
    pair p;
    if (!pair_open(&p, loop, ch)) {
        return false;
    }
    uint8_t frame[128];
    rift_ssize h = rift_frame_encode_publish_header(
        frame, sizeof(frame), "bench.quic", 10, NULL, 0, PAYLOAD);
    memcpy(frame + h, g_payload, PAYLOAD);
    size_t flen = (size_t)h + PAYLOAD;
    size_t total = count + 1000;
    uint64_t *lat = malloc(total * sizeof(*lat));
    wait_msgs w = {p.sub, 0};
    double cpu0 = bench_cpu_seconds(), scpu0 = child_cpu(ch);
    rift_tstamp start = rift_now_ns();
    for (size_t i = 0; i < total; i++) {
        rift_tstamp t0 = rift_now_ns();
        send_bytes(p.pub, frame, flen, false);
        w.want = i + 1;
        while (p.sub->msgs < w.want && !p.b->closed) {
            rift_loop_run_once(loop, 100000000);
        }
        lat[i] = rift_now_ns() - t0;
    }
    r->seconds = (double)(rift_now_ns() - start) / 1e9;
    r->client_cpu = bench_cpu_seconds() - cpu0;
    r->server_cpu = child_cpu(ch) - scpu0;
    qsort(lat + 1000, count, sizeof(*lat), bench_cmp_u64);
    r->p50 = bench_pct_us(lat + 1000, count, 50);
    r->p95 = bench_pct_us(lat + 1000, count, 95);
    r->p99 = bench_pct_us(lat + 1000, count, 99);
    r->max = (double)lat[total - 1] / 1000.0;
    r->msgs = count;
    r->errors = p.sub->bad + p.sub->errors + p.pub->errors;
    free(lat);
    bcli_free(p.b, true);
    return r->errors == 0;
}

static bool pipelined(rift_loop *loop, const child *ch, size_t count,
                      result *r) {
    pair p;
    if (!pair_open(&p, loop, ch)) {
        return false;
    }
    uint8_t one[128];
    rift_ssize h = rift_frame_encode_publish_header(
        one, sizeof(one), "bench.quic", 10, NULL, 0, PAYLOAD);
    memcpy(one + h, g_payload, PAYLOAD);
    size_t flen = (size_t)h + PAYLOAD;
    uint8_t *batch = malloc(flen * BATCH + 8);
    for (size_t i = 0; i < BATCH; i++) {
        memcpy(batch + i * flen, one, flen);
    }
    double cpu0 = bench_cpu_seconds(), scpu0 = child_cpu(ch);
    rift_tstamp start = rift_now_ns();
    size_t sent = 0;
    while (sent < count) {
        size_t k = count - sent < BATCH ? count - sent : BATCH;
        size_t n = k * flen;
        rift_frame_encode_ping(batch + n, 8);
        send_bytes(p.pub, batch, n + 5, false);
        sent += k;
        wait_msgs w = {p.sub, sent};
        uint64_t oks = p.pub->oks + 1;
        while ((p.pub->oks < oks || !cond_msgs(&w)) && !p.b->closed) {
            rift_loop_run_once(loop, 100000000);
        }
    }
    r->seconds = (double)(rift_now_ns() - start) / 1e9;
    r->client_cpu = bench_cpu_seconds() - cpu0;
    r->server_cpu = child_cpu(ch) - scpu0;
    r->msgs = count;
    r->rate = (double)count / r->seconds;
    r->errors = p.sub->bad + p.sub->errors + p.pub->errors;
    free(batch);
    bcli_free(p.b, true);
    return r->errors == 0 && p.sub->msgs == count;
}

static bool handshakes(rift_loop *loop, const child *ch, int n, result *r) {
    double cpu0 = bench_cpu_seconds(), scpu0 = child_cpu(ch);
    rift_tstamp start = rift_now_ns();
    for (int i = 0; i < n; i++) {
        bcli *b = bcli_open(loop, ch, true);
        if (b == NULL || !b->hs || !bcli_auth(b)) {
            return false;
        }
        bcli_free(b, true);
    }
    r->seconds = (double)(rift_now_ns() - start) / 1e9;
    r->client_cpu = bench_cpu_seconds() - cpu0;
    r->server_cpu = child_cpu(ch) - scpu0;
    r->msgs = (uint64_t)n;
    r->rate = n / r->seconds;
    return true;
}

typedef struct all_hs {
    bcli **v;
    int n;
} all_hs;

static bool cond_all_hs(void *arg) {
    all_hs *a = arg;
    for (int i = 0; i < a->n; i++) {
        if (!a->v[i]->hs && !a->v[i]->closed) {
            return false;
        }
    }
    return true;
}

static bool cond_all_ok(void *arg) {
    all_hs *a = arg;
    for (int i = 0; i < a->n; i++) {
        if (a->v[i]->st[0].oks == 0 && !a->v[i]->closed) {
            return false;
        }
    }
    return true;
}

static bool rss(rift_loop *loop, const child *ch, int n, double *per_conn,
                long *base_kib) {
    /* Warm the server's allocator and TLS state with one connection. */
    bcli *w = bcli_open(loop, ch, true);
    if (w == NULL || !bcli_auth(w)) {
        return false;
    }
    bcli_free(w, true);
    usleep(200000);
    long before = child_rss_kib(ch);
    all_hs a = {calloc((size_t)n, sizeof(bcli *)), n};
    /* Connect in waves so handshakes do not time out under load. */
    for (int i = 0; i < n; i += 50) {
        int end = i + 50 < n ? i + 50 : n;
        for (int k = i; k < end; k++) {
            a.v[k] = bcli_open(loop, ch, false);
            if (a.v[k] == NULL) {
                return false;
            }
        }
        all_hs wave = {a.v + i, end - i};
        rift_tstamp stop = rift_now_ns() + 30000000000ull;
        while (!cond_all_hs(&wave) && rift_now_ns() < stop) {
            rift_loop_run_once(loop, 10000000);
        }
        uint8_t buf[128];
        rift_ssize len =
            rift_frame_encode_auth(buf, sizeof(buf), TOKEN, strlen(TOKEN));
        for (int k = i; k < end; k++) {
            bstream *s = bcli_stream(a.v[k]);
            if (s == NULL) {
                return false;
            }
            send_bytes(s, buf, (size_t)len, true);
        }
        while (!cond_all_ok(&wave) && rift_now_ns() < stop) {
            rift_loop_run_once(loop, 10000000);
        }
        for (int k = i; k < end; k++) {
            if (a.v[k]->st[0].oks != 1) {
                fprintf(stderr, "connection %d not authenticated\n", k);
                return false;
            }
        }
    }
    /* Let the auth streams close and the server settle. */
    rift_tstamp settle = rift_now_ns() + 500000000ull;
    while (rift_now_ns() < settle) {
        rift_loop_run_once(loop, 10000000);
    }
    long after = child_rss_kib(ch);
    *per_conn = (double)(after - before) * 1024.0 / n;
    *base_kib = before;
    for (int i = 0; i < n; i++) {
        bcli_free(a.v[i], true);
    }
    free(a.v);
    return true;
}

/* ---- The same scenarios through the C client library ---- */

typedef struct lib {
    rift_client *c;
    rift_publisher *p;
    rift_client_sub *s;
} lib;

static bool lib_open(lib *l, const child *ch) {
    char addr[80], host[INET_ADDRSTRLEN];
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ch->addr;
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
    snprintf(addr, sizeof(addr), "%s:%u", host, ntohs(s4->sin_port));
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = ch->ca;
    s.server_name = "localhost";
    s.token = TOKEN;
    rift_error err;
    if (rift_client_new(&l->c, &s, &err) != 0 ||
        rift_client_publisher_open(l->c, &l->p, &err) != 0 ||
        rift_client_subscribe(l->c, "bench.quic", 10, NULL, 0, &l->s, &err) !=
            0) {
        fprintf(stderr, "client library: %s\n", err.text);
        return false;
    }
    return true;
}

static void lib_close(lib *l) {
    rift_client_sub_close(l->s);
    rift_publisher_close(l->p);
    rift_client_del(l->c);
}

static bool lib_recv(lib *l, uint64_t *bad) {
    rift_msg *m;
    if (rift_client_sub_recv(l->s, 5000000000, &m, NULL) != 0) {
        return false;
    }
    size_t n;
    const uint8_t *p = rift_msg_payload(m, &n);
    if (n != PAYLOAD || memcmp(p, g_payload, PAYLOAD) != 0) {
        (*bad)++;
    }
    rift_msg_unref(m);
    return true;
}

static bool lib_rtt(const child *ch, size_t count, result *r) {
    lib l;
    if (!lib_open(&l, ch)) {
        return false;
    }
    size_t total = count + 1000;
    uint64_t *lat = malloc(total * sizeof(*lat));
    double cpu0 = bench_cpu_seconds(), scpu0 = child_cpu(ch);
    bool ok = true;
    for (size_t i = 0; i < total && ok; i++) {
        rift_tstamp t0 = rift_now_ns();
        ok = rift_publisher_publish(l.p, "bench.quic", 10, NULL, 0, g_payload,
                                    PAYLOAD, NULL) == 0 &&
             lib_recv(&l, &r->errors);
        lat[i] = rift_now_ns() - t0;
    }
    r->client_cpu = bench_cpu_seconds() - cpu0;
    r->server_cpu = child_cpu(ch) - scpu0;
    if (ok) {
        qsort(lat + 1000, count, sizeof(*lat), bench_cmp_u64);
        r->p50 = bench_pct_us(lat + 1000, count, 50);
        r->p95 = bench_pct_us(lat + 1000, count, 95);
        r->p99 = bench_pct_us(lat + 1000, count, 99);
        r->msgs = count;
    }
    free(lat);
    lib_close(&l);
    return ok && r->errors == 0;
}

static bool lib_pipe(const child *ch, size_t count, result *r) {
    lib l;
    if (!lib_open(&l, ch)) {
        return false;
    }
    double cpu0 = bench_cpu_seconds(), scpu0 = child_cpu(ch);
    rift_tstamp start = rift_now_ns();
    bool ok = true;
    for (size_t sent = 0; sent < count && ok;) {
        size_t k = count - sent < BATCH ? count - sent : BATCH;
        for (size_t i = 0; i < k && ok; i++) {
            ok = rift_publisher_publish(l.p, "bench.quic", 10, NULL, 0,
                                        g_payload, PAYLOAD, NULL) == 0;
        }
        ok = ok && rift_publisher_flush(l.p, NULL) == 0;
        for (size_t i = 0; i < k && ok; i++) {
            ok = lib_recv(&l, &r->errors);
        }
        sent += k;
    }
    r->seconds = (double)(rift_now_ns() - start) / 1e9;
    r->client_cpu = bench_cpu_seconds() - cpu0;
    r->server_cpu = child_cpu(ch) - scpu0;
    r->msgs = count;
    r->rate = (double)count / r->seconds;
    lib_close(&l);
    return ok && r->errors == 0;
}

/* ---- Main ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static void csv_row(const char *path, const char *scenario, const result *r,
                    bool latency) {
    if (path == NULL) {
        return;
    }
    bench_row row = {
        .impl = "rift",
        .transport = "quic",
        .scenario = scenario,
        .size = PAYLOAD,
        .msgs = r->msgs,
        .pubs = 1,
        .subs = 1,
        .batch = latency ? 1 : BATCH,
        .seconds = r->seconds,
        .lat_what = latency ? "rtt" : "",
        .p50_us = latency ? r->p50 : -1,
        .p95_us = latency ? r->p95 : -1,
        .p99_us = latency ? r->p99 : -1,
        .max_us = latency ? r->max : -1,
        .errors = r->errors,
        .client_cpu_s = r->client_cpu,
        .server_cpu_s = r->server_cpu,
    };
    bench_csv_append(path, &row);
}

int main(int argc, char **argv) {
    size_t count = 20000;
    int runs = 3, conns = 1000;
    const char *scen = "rtt,pipe,hs,rss";
    const char *csv = NULL;
    bool pin = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            count = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            scen = argv[++i];
        } else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            conns = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = argv[++i];
        } else if (strcmp(argv[i], "--pin") == 0) {
            pin = true;
        } else {
            fprintf(stderr, "usage: quic_server [-n COUNT] [-r RUNS] [-s "
                            "rtt,pipe,hs,rss,lib] [-c CONNS] [--csv FILE] "
                            "[--pin]\n");
            return 2;
        }
    }
    if (count < 100 || runs < 1 || conns < 1) {
        fprintf(stderr, "COUNT must be >= 100, RUNS and CONNS >= 1\n");
        return 2;
    }
    memset(g_payload, 0x2a, sizeof(g_payload));
    signal(SIGPIPE, SIG_IGN);
    rift_log_set_level(RIFT_LOG_WARN);
    child ch;
    if (!child_start(&ch, pin)) {
        fprintf(stderr, "cannot start the server\n");
        return 1;
    }
    if (pin) {
        pin_to(0);
    }
    rift_loop *loop;
    if (rift_loop_new(&loop, NULL) != 0) {
        return 1;
    }
    int rc = 0;
    double *a = calloc((size_t)runs, sizeof(double));
    double *b = calloc((size_t)runs, sizeof(double));
    double *c = calloc((size_t)runs, sizeof(double));
    double *d = calloc((size_t)runs, sizeof(double));
    if (strstr(scen, "rtt")) {
        for (int i = 0; i < runs; i++) {
            result r = {0};
            if (!rtt(loop, &ch, count, &r)) {
                fprintf(stderr, "rtt run failed (%" PRIu64 " errors)\n",
                        r.errors);
                rc = 1;
                break;
            }
            printf("QUIC client -> broker -> client (64 B, warm connection): "
                   "p50=%.3f us p95=%.3f us p99=%.3f us (%zu samples)"
                   "  [cpu/msg: client %.2f us, server %.2f us]\n",
                   r.p50, r.p95, r.p99, count, r.client_cpu * 1e6 / count,
                   r.server_cpu * 1e6 / count);
            a[i] = r.p50;
            b[i] = r.p95;
            c[i] = r.p99;
            csv_row(csv, "rtt", &r, true);
        }
        if (rc == 0) {
            printf("  median of %d runs: p50=%.3f us p95=%.3f us p99=%.3f "
                   "us\n",
                   runs, median(a, runs), median(b, runs), median(c, runs));
        }
    }
    if (rc == 0 && strstr(scen, "pipe")) {
        for (int i = 0; i < runs; i++) {
            result r = {0};
            if (!pipelined(loop, &ch, count * 10, &r)) {
                fprintf(stderr, "pipelined run failed\n");
                rc = 1;
                break;
            }
            printf("QUIC pipelined delivery (64 B, batches of 256): %.0f "
                   "messages/s  [cpu/msg: client %.3f us, server %.3f us]\n",
                   r.rate, r.client_cpu * 1e6 / (double)r.msgs,
                   r.server_cpu * 1e6 / (double)r.msgs);
            a[i] = r.rate;
            b[i] = r.server_cpu * 1e6 / (double)r.msgs;
            csv_row(csv, "pipelined", &r, false);
        }
        if (rc == 0) {
            printf("  median of %d runs: %.0f messages/s, server cpu %.3f "
                   "us/msg\n",
                   runs, median(a, runs), median(b, runs));
        }
    }
    if (rc == 0 && strstr(scen, "lib")) {
        for (int i = 0; i < runs; i++) {
            result r = {0};
            if (!lib_rtt(&ch, count, &r)) {
                fprintf(stderr, "client library rtt run failed\n");
                rc = 1;
                break;
            }
            printf("C client library, round trip (64 B): p50=%.3f us "
                   "p95=%.3f us p99=%.3f us (%zu samples)\n",
                   r.p50, r.p95, r.p99, count);
            a[i] = r.p50;
            b[i] = r.p95;
            c[i] = r.p99;
        }
        if (rc == 0) {
            printf("  median of %d runs: p50=%.3f us p95=%.3f us p99=%.3f "
                   "us\n",
                   runs, median(a, runs), median(b, runs), median(c, runs));
        }
        for (int i = 0; rc == 0 && i < runs; i++) {
            result r = {0};
            if (!lib_pipe(&ch, count * 10, &r)) {
                fprintf(stderr, "client library pipelined run failed\n");
                rc = 1;
                break;
            }
            printf("C client library, pipelined (64 B, batches of 256): %.0f "
                   "messages/s\n",
                   r.rate);
            a[i] = r.rate;
        }
        if (rc == 0) {
            printf("  median of %d runs: %.0f messages/s\n", runs,
                   median(a, runs));
        }
    }
    if (rc == 0 && strstr(scen, "hs")) {
        for (int i = 0; i < runs; i++) {
            result r = {0};
            if (!handshakes(loop, &ch, 200, &r)) {
                fprintf(stderr, "handshake run failed\n");
                rc = 1;
                break;
            }
            printf("QUIC handshake + AUTH (sequential): %.0f per second  "
                   "[server cpu %.3f ms each]\n",
                   r.rate, r.server_cpu * 1e3 / 200);
            a[i] = r.rate;
        }
        if (rc == 0) {
            printf("  median of %d runs: %.0f per second\n", runs,
                   median(a, runs));
        }
    }
    if (rc == 0 && strstr(scen, "rss")) {
        double per;
        long base;
        if (!rss(loop, &ch, conns, &per, &base)) {
            fprintf(stderr, "rss run failed\n");
            rc = 1;
        } else {
            printf("server RSS per idle authenticated connection: %.1f KiB "
                   "(%d connections, base RSS %ld KiB)\n",
                   per / 1024.0, conns, base);
        }
    }
    free(a);
    free(b);
    free(c);
    free(d);
    rift_loop_del(loop);
    child_stop(&ch);
    return rc;
}
