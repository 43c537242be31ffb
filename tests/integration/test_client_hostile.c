/*
 * test_client_hostile.c — the C client against a hostile server
 * (integration tests): a QUIC server on rift's own transport answers every
 * operation stream with random and mutated frames (wrong opcodes, bad
 * strings, short or overlong frames, huge declared lengths, floods of
 * MESSAGE and DELIVERY frames), then FIN, a reset, a stop or silence, and
 * now and then closes the connection. Meanwhile threads use every client
 * operation. Every call must return (within its deadline) with a result or
 * an error, and nothing may crash or leak (sanitizer builds); afterwards
 * the server's last words do not matter and a new client connects.
 *
 * The seed is printed; RIFT_HOSTILE_SEED=<n> replays the server's choices,
 * RIFT_HOSTILE_MS=<ms> changes the duration (default 5,000).
 */
// labels: threads
#include "test.h"
#include "test_rng.h"
#include "thread_server.h"

#include "codec/frame.h"
#include "common/common.h"
#include "net/loop.h"
#include "quic/quic.h"
#include "rift/client.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- Frames a hostile server sends ---- */

typedef struct out {
    uint8_t *p;
    size_t n, cap;
} out;

static void put(out *o, const void *d, size_t len) {
    if (o->n + len > o->cap) {
        len = o->cap - o->n;
    }
    memcpy(o->p + o->n, d, len);
    o->n += len;
}

static void put_be(out *o, uint64_t v, int bytes) {
    uint8_t b[8];
    for (int i = 0; i < bytes; i++) {
        b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    }
    put(o, b, (size_t)bytes);
}

static const char *const texts[] = {
    "a.b",
    "",
    "_INBOX.0123456789abcdef0123456789abcdef",
    "x y",
    "a.*",
    "\xff\xfe",
    "subscriber exceeded its bounded queue and was disconnected",
};

static void put_str(out *o, rng *r) {
    if (chance(r, 5)) {
        put_be(o, chance(r, 50) ? 4097 : 0xffff, 2); /* beyond the limit */
        return;
    }
    const char *s = texts[below(r, RIFT_ARRAY_LEN(texts))];
    put_be(o, strlen(s), 2);
    put(o, s, strlen(s));
}

static void put_payload(out *o, rng *r) {
    uint32_t n = chance(r, 5) ? below(r, 200000) : below(r, 64);
    for (uint32_t i = 0; i < n && o->n < o->cap; i++) {
        o->p[o->n++] = (uint8_t)rnd(r);
    }
}

static void gen_answer(rng *r, out *o) {
    static const uint8_t ops[] = {2, 2, 3, 3, 7, 7, 7, 11, 14, 14, 1, 4, 0};
    size_t start = o->n;
    put_be(o, 0, 4);
    uint8_t op = chance(r, 5) ? (uint8_t)rnd(r) : ops[below(r, sizeof(ops))];
    put(o, &op, 1);
    switch (op) {
    case 3:
        put_be(o, below(r, 4), 2);
        put_str(o, r);
        break;
    case 7:
        put_str(o, r);
        put_str(o, r);
        put_payload(o, r);
        break;
    case 11:
        put_be(o, rnd(r), 8);
        put_be(o, rnd(r), chance(r, 80) ? 8 : (int)below(r, 8));
        break;
    case 14:
        put_be(o, below(r, 10), 8);
        put_be(o, rnd(r), 8);
        put_be(o, below(r, 3), 4);
        put_str(o, r);
        put_str(o, r);
        put_payload(o, r);
        break;
    case 2:
        break;
    default:
        put_payload(o, r);
        break;
    }
    uint64_t body = o->n - start - 4;
    if (chance(r, 20)) {
        switch (below(r, 4)) {
        case 0:
            o->n -= below(r, (uint32_t)body + 1); /* cut short */
            break;
        case 1:
            body = chance(r, 50) ? 0 : (chance(r, 50) ? 0xffffffffu : 1114113);
            break;
        case 2:
            body += 1; /* one byte more than sent */
            break;
        default:
            if (body > 1) {
                o->p[start + 5 + below(r, (uint32_t)body - 1)] ^= 0x80;
            }
            break;
        }
    }
    if (o->n >= start + 4) {
        for (int i = 0; i < 4; i++) {
            o->p[start + (size_t)i] = (uint8_t)(body >> (24 - 8 * i));
        }
    }
}

/* ---- The server ---- */

typedef struct hsrv {
    thread_server ts;
    rng r; /* server thread only */
    out o;
    atomic_uint answers;
} hsrv;

typedef struct hstream {
    hsrv *srv;
    bool auth;
    bool done;
} hstream;

static void h_handshake(rift_quic_conn *c, void *ud) {
    rift_quic_conn_set_user_data(c, ud);
}

static void h_open(rift_quic_stream *s, void *ud) {
    hstream *hs = calloc(1, sizeof(*hs));
    hs->srv = ud;
    hs->auth = rift_quic_stream_id(s) == 0;
    rift_quic_stream_set_user_data(s, hs);
}

static void write_out(rift_quic_stream *s, const out *o, bool fin) {
    rift_quic_chunk ch = {o->p, o->n, NULL, NULL};
    rift_quic_stream_write(s, &ch, o->n > 0 ? 1 : 0, fin);
}

static void answer(hstream *hs, rift_quic_stream *s) {
    hsrv *srv = hs->srv;
    rng *r = &srv->r;
    atomic_fetch_add(&srv->answers, 1);
    if (chance(r, 1)) {
        rift_quic_conn_close(rift_quic_stream_conn(s), rnd(r) & 3, "bye", 3);
        return;
    }
    srv->o.n = 0;
    for (uint32_t i = below(r, chance(r, 10) ? 40 : 3) + 1; i > 0; i--) {
        gen_answer(r, &srv->o);
    }
    unsigned tail = below(r, 10);
    write_out(s, &srv->o, tail < 6);
    if (tail == 6) {
        rift_quic_stream_shutdown_write(s, rnd(r) & 7);
    } else if (tail == 7) {
        rift_quic_stream_shutdown_read(s, rnd(r) & 7);
    }
    /* 8, 9: nothing more (the client's deadline ends the operation) */
    hs->done = tail < 8 || chance(r, 50);
}

static void h_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                   bool fin, void *ud) {
    hstream *hs = ud;
    (void)data;
    rift_quic_stream_consumed(s, len);
    if (hs->done || (len == 0 && !fin)) {
        return;
    }
    if (hs->auth) {
        /* OK, so that the client gets to its operations. */
        hs->done = true;
        static const uint8_t ok[5] = {0, 0, 0, 1, 2};
        rift_quic_chunk ch = {ok, sizeof(ok), NULL, NULL};
        rift_quic_stream_write(s, &ch, 1, true);
        return;
    }
    answer(hs, s);
}

static void h_close(rift_quic_stream *s, bool code_set, uint64_t code,
                    void *ud) {
    (void)s;
    (void)code_set;
    (void)code;
    free(ud);
}

static const rift_quic_callbacks h_cbs = {
    .handshake_done = h_handshake,
    .stream_open = h_open,
    .stream_data = h_data,
    .stream_close = h_close,
};

static bool h_start(hsrv *srv, uint64_t seed) {
    memset(srv, 0, sizeof(*srv));
    srv->r.s = seed | 1;
    srv->o.cap = 4 << 20;
    srv->o.p = malloc(srv->o.cap);
    return srv->o.p != NULL && thread_server_start(&srv->ts, &h_cbs, srv);
}

static void h_stop(hsrv *srv) {
    thread_server_stop(&srv->ts);
    free(srv->o.p);
}

/* ---- Clients ---- */

typedef struct worker {
    hsrv *srv;
    rift_tstamp end;
    uint64_t seed;
    bool requests; /* this worker only makes requests */
    uint64_t ops, failures, connects;
} worker;

static rift_client *connect_client(worker *w) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = w->srv->ts.addr;
    s.ca_file = w->srv->ts.ca;
    s.server_name = "localhost";
    s.token = "hostile-0123456789abcdef0123456789";
    s.connect_timeout_ms = 3000;
    s.op_timeout_ms = 300;
    rift_client *c = NULL;
    rift_error err;
    w->connects++;
    return rift_client_new(&c, &s, &err) == 0 ? c : NULL;
}

static void one_op(worker *w, rift_client *c, rng *r, rift_client_sub **subs,
                   rift_publisher **pub) {
    rift_error err;
    int rc = 0;
    static const uint8_t pl[16] = "payload";
    if (w->requests) {
        rift_msg *m = NULL;
        rc = rift_client_request(c, "a.b", 3, pl, sizeof(pl),
                                 (1 + below(r, 50)) * RIFT_MSEC, &m, &err);
        rift_msg_unref(m);
        w->ops++;
        w->failures += rc != 0;
        return;
    }
    switch (below(r, 9)) {
    case 0:
        rc = rift_client_publish(c, "a.b", 3, pl, sizeof(pl), &err);
        break;
    case 1: {
        if (*pub == NULL) {
            rc = rift_client_publisher_open(c, pub, &err);
            break;
        }
        unsigned k = below(r, 4);
        if (k == 0) {
            rc = rift_publisher_publish(*pub, "a.b", 3, NULL, 0, pl, sizeof(pl),
                                        &err);
        } else if (k == 1) {
            rc = rift_publisher_publish_confirmed(*pub, "a.b", 3, NULL, 0, pl,
                                                  sizeof(pl), &err);
        } else if (k == 2) {
            rc = rift_publisher_flush(*pub, &err);
        } else {
            rift_publisher_close(*pub);
            *pub = NULL;
        }
        break;
    }
    case 2:
    case 3: {
        int i = (int)below(r, 4);
        if (subs[i] == NULL) {
            rc = rift_client_subscribe(c, "a.>", 3, NULL, 0, &subs[i], &err);
        } else if (chance(r, 20)) {
            rift_client_sub_close(subs[i]);
            subs[i] = NULL;
        } else {
            for (int k = 0; k < 50; k++) {
                rift_msg *m = NULL;
                rc = rift_client_sub_recv(subs[i], k == 0 ? 5000000 : 0, &m,
                                          &err);
                rift_msg_unref(m);
                if (rc != 0) {
                    break;
                }
            }
        }
        break;
    }
    case 4: {
        rift_stored st;
        rc = rift_client_stream_publish(c, "s", 1, "a.b", 3, NULL, 0, pl,
                                        sizeof(pl), &st, &err);
        break;
    }
    case 5: {
        rift_consumer_config cc = {"a.>", 3, 1, 1000, 10, RIFT_START_SEQUENCE,
                                   0,     0};
        rc = rift_client_consumer_open(c, "s", 1, "w", 1, &cc, &err);
        break;
    }
    case 6:
    case 7: {
        rift_client_delivery d[16];
        size_t n = 0;
        rc =
            rift_client_fetch(c, "s", 1, "w", 1, 1 + below(r, 16), d, &n, &err);
        for (size_t i = 0; i < n; i++) {
            rift_msg_unref(d[i].msg);
        }
        break;
    }
    default:
        rc = rift_client_ack(c, "s", 1, "w", 1, below(r, 10), &err);
        break;
    }
    w->ops++;
    w->failures += rc != 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    rng r = {w->seed | 1};
    rift_client *c = NULL;
    rift_client_sub *subs[4] = {0};
    rift_publisher *pub = NULL;
    while (rift_now_ns() < w->end) {
        if (c == NULL || !rift_client_is_connected(c) || chance(&r, 1)) {
            for (int i = 0; i < 4; i++) {
                rift_client_sub_close(subs[i]);
                subs[i] = NULL;
            }
            rift_publisher_close(pub);
            pub = NULL;
            rift_client_del(c);
            c = connect_client(w);
            if (c == NULL) {
                continue;
            }
        }
        one_op(w, c, &r, subs, &pub);
    }
    for (int i = 0; i < 4; i++) {
        rift_client_sub_close(subs[i]);
    }
    rift_publisher_close(pub);
    rift_client_del(c);
    return NULL;
}

RIFT_TEST(hostile_server_answers) {
    uint64_t seed = (uint64_t)rift_now_ns();
    const char *env = getenv("RIFT_HOSTILE_SEED");
    if (env != NULL) {
        seed = strtoull(env, NULL, 10);
    }
    int ms = 5000;
    if ((env = getenv("RIFT_HOSTILE_MS")) != NULL) {
        ms = atoi(env);
    }
    fprintf(stderr, "  seed %" PRIu64 " (RIFT_HOSTILE_SEED), %d ms\n", seed,
            ms);
    hsrv srv;
    CHECK(h_start(&srv, seed));
    worker w[3];
    pthread_t t[3];
    rift_tstamp end = rift_now_ns() + (rift_tstamp)ms * 1000000;
    for (int i = 0; i < 3; i++) {
        w[i] = (worker){&srv, end, seed + (uint64_t)i, i == 2, 0, 0, 0};
        CHECK_OK(pthread_create(&t[i], NULL, worker_main, &w[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        fprintf(stderr,
                "  worker %d: %" PRIu64 " operations (%" PRIu64
                " failed), %" PRIu64 " connects\n",
                i, w[i].ops, w[i].failures, w[i].connects);
    }
    fprintf(stderr, "  server: %u answers\n", atomic_load(&srv.answers));
    CHECK(atomic_load(&srv.answers) > 50);
    /* Still a working client library: a fresh connection authenticates
     * (the server's AUTH answer is always OK). */
    worker fresh = {&srv, 0, 0, false, 0, 0, 0};
    rift_client *c = connect_client(&fresh);
    CHECK(c != NULL);
    rift_client_del(c);
    h_stop(&srv);
}
