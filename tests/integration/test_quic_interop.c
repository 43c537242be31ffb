/*
 * test_quic_interop.c — the QUIC transport against the independent Quinn
 * 0.9 + rustls 0.20 peer (tests/quinn-peer): our client authenticates to
 * the peer's stub server, the peer's client authenticates to our server
 * (which also checks that rustls accepts the certgen chain), and a peer
 * client offering another ALPN is refused. Skipped when the peer is not
 * built (scripts/interop-build.sh).
 */
// labels: interop
#include "quinn_stub.h"
#include "quic_harness.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "interop-token-0123456789abcdef0123456789"

/* The shared lookup (support/quinn_stub.c); callers skip without it. */
static bool peer_path(char *out, size_t cap) {
    const char *bin = quinn_stub_binary();
    snprintf(out, cap, "%s", bin ? bin : "");
    return bin != NULL;
}

/* Starts |argv| with stdout on a pipe; returns the pid. */
static pid_t spawn(const char *const argv[], int *out_fd, const char *alpn) {
    int p[2];
    if (pipe(p) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        if (alpn) {
            setenv("RIFT_ALPN", alpn, 1);
        }
        /* execv's prototype predates const; it does not modify them. */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    *out_fd = p[0];
    return pid;
}

/* Reads what the child printed so far (non-blocking after |wait_ms|). */
static size_t read_out(int fd, char *buf, size_t cap, size_t len, int wait_ms) {
    struct pollfd pfd = {fd, POLLIN, 0};
    while (len + 1 < cap && poll(&pfd, 1, wait_ms) > 0) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        wait_ms = 0;
    }
    buf[len] = '\0';
    return len;
}

/* ---- Our client against the Quinn stub server ---- */

static void auth_frame(uint8_t *out, size_t *len) {
    size_t tl = strlen(TOKEN);
    put_u32(out, (uint32_t)(1 + 2 + tl));
    out[4] = 1; /* AUTH */
    out[5] = (uint8_t)(tl >> 8);
    out[6] = (uint8_t)tl;
    memcpy(out + 7, TOKEN, tl);
    *len = 7 + tl;
}

static bool stream_fin(void *arg) {
    cli_stream *cs = arg;
    return cs->fin || cs->closed || cs->app->close.seen;
}

RIFT_TEST(our_client_authenticates_to_quinn_stub) {
    char peer[4200];
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(peer_path(peer, sizeof(peer)));
    harness h;
    CHECK(harness_init(&h));
    int port = rift_test_free_udp_port();
    char listen[64];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    const char *argv[] = {peer,    "stub", "--listen", listen, "--cert", h.cert,
                          "--key", h.key,  "--token",  TOKEN,  NULL};
    int out;
    pid_t pid = spawn(argv, &out, NULL);
    CHECK(pid > 0);
    char buf[4096] = "";
    size_t len = 0;
    for (int i = 0; i < 100 && strstr(buf, "listening on") == NULL; i++) {
        len = read_out(out, buf, sizeof(buf), len, 100);
    }
    CHECK_MSG(strstr(buf, "listening on") != NULL, "stub said: %s", buf);

    struct sockaddr_in *sa = (struct sockaddr_in *)&h.addr;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa->sin_port = htons((uint16_t)port);
    h.addrlen = sizeof(*sa);
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_handshake, &app, 10000));
    CHECK_MSG(app.handshake, "handshake: %s", app.close.detail);

    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    uint8_t f[128];
    size_t flen;
    auth_frame(f, &flen);
    rift_quic_chunk ch = {f, flen, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, true));
    CHECK(harness_run(&h, stream_fin, cs, 10000));
    /* OK = [u32 1][opcode 2], then FIN. */
    CHECK(cs->fin);
    CHECK_EQ_MEM(cs->rx, cs->rx_len, "\0\0\0\1\2", 5);

    /* A second stream: PING on a publisher stream answers OK. */
    cli_stream *ps = cli_open(&app, rift_quic_client_conn(cli));
    uint8_t ping[5] = {0, 0, 0, 1, 8};
    rift_quic_chunk pc = {ping, 5, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(ps->s, &pc, 1, false));
    for (int i = 0; i < 500 && ps->rx_len < 5; i++) {
        rift_loop_run_once(h.loop, 10000000);
    }
    CHECK_EQ_MEM(ps->rx, ps->rx_len, "\0\0\0\1\2", 5);

    rift_quic_conn_close(rift_quic_client_conn(cli), 0, "client closed", 13);
    harness_spin(&h, 50);
    rift_quic_endpoint_del(cli);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    close(out);
    cli_app_free(&app);
    harness_fini(&h);
}

/* ---- The Quinn client against our server ---- */

/* Answers an AUTH frame (with the expected token) by OK + FIN. */
typedef struct auth_srv {
    uint8_t buf[256];
    size_t len;
    int oks;
    close_copy closed;
} auth_srv;

static auth_srv g_auth;

static void a_handshake(rift_quic_conn *c, void *ud) {
    rift_quic_conn_set_user_data(c, ud);
}

static void a_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                   bool fin, void *ud) {
    (void)ud;
    size_t k = len < sizeof(g_auth.buf) - g_auth.len
                   ? len
                   : sizeof(g_auth.buf) - g_auth.len;
    if (k > 0) {
        memcpy(g_auth.buf + g_auth.len, data, k);
        g_auth.len += k;
    }
    rift_quic_stream_consumed(s, len);
    uint8_t want[128];
    size_t wlen;
    auth_frame(want, &wlen);
    if (fin && g_auth.len == wlen && memcmp(g_auth.buf, want, wlen) == 0) {
        rift_quic_chunk ch = {(const uint8_t *)"\0\0\0\1\2", 5, NULL, NULL};
        rift_quic_stream_write(s, &ch, 1, true);
        g_auth.oks++;
    }
}

static void a_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                     void *ud) {
    (void)c;
    (void)ud;
    g_auth.closed.seen = true;
    g_auth.closed.kind = ci->kind;
    g_auth.closed.code = ci->code;
    size_t n = ci->reason_len < 255 ? ci->reason_len : 255;
    memcpy(g_auth.closed.reason, ci->reason ? (const char *)ci->reason : "", n);
    g_auth.closed.reason[n] = '\0';
}

static const rift_quic_callbacks auth_cbs = {
    .handshake_done = a_handshake,
    .conn_closed = a_closed,
    .stream_data = a_data,
};

static int run_peer_client(harness *h, const char *alpn, char *buf,
                           size_t cap) {
    char peer[4200], addr[64];
    peer_path(peer, sizeof(peer));
    snprintf(addr, sizeof(addr), "127.0.0.1:%u",
             ntohs(((struct sockaddr_in *)&h->addr)->sin_port));
    const char *argv[] = {
        peer,         "client", "--addr", addr,      "--server-name",
        "localhost",  "--ca",   h->ca,    "--token", TOKEN,
        "--scenario", "auth",   NULL};
    int out;
    pid_t pid = spawn(argv, &out, alpn);
    if (pid < 0) {
        return -1;
    }
    size_t len = 0;
    int status = -1;
    rift_tstamp end = rift_now_ns() + 20000000000ULL;
    /* Our server runs on this thread: keep the loop going meanwhile. */
    while (rift_now_ns() < end) {
        rift_loop_run_once(h->loop, 5000000);
        len = read_out(out, buf, cap, len, 0);
        if (waitpid(pid, &status, WNOHANG) == pid) {
            break;
        }
    }
    if (rift_now_ns() >= end) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    read_out(out, buf, cap, len, 50);
    close(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool start_auth_server(harness *h) {
    memset(&g_auth, 0, sizeof(g_auth));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.cert_file = h->cert;
    s.key_file = h->key;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    rift_error err;
    if (rift_quic_server_new(&h->server, h->loop, (struct sockaddr *)&sa,
                             sizeof(sa), &s, &auth_cbs, NULL, &err) != 0) {
        return false;
    }
    rift_quic_endpoint_local_addr(h->server, &h->addr, &h->addrlen);
    return true;
}

RIFT_TEST(quinn_client_authenticates_to_our_server) {
    char peer[4200];
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(peer_path(peer, sizeof(peer)));
    harness h;
    CHECK(harness_init(&h));
    CHECK(start_auth_server(&h));
    char buf[4096] = "";
    int rc = run_peer_client(&h, NULL, buf, sizeof(buf));
    CHECK_MSG(rc == 0 && strstr(buf, "ALL OK") != NULL, "peer (%d): %s", rc,
              buf);
    CHECK_EQ_INT(g_auth.oks, 1);
    for (int i = 0; i < 100 && !g_auth.closed.seen; i++) {
        rift_loop_run_once(h.loop, 10000000);
    }
    CHECK(g_auth.closed.seen);
    CHECK(g_auth.closed.kind == RIFT_QUIC_CLOSE_PEER_APP);
    CHECK_EQ_STR(g_auth.closed.reason, "client closed");
    harness_fini(&h);
}

RIFT_TEST(quinn_client_with_other_alpn_is_refused) {
    char peer[4200];
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(peer_path(peer, sizeof(peer)));
    harness h;
    CHECK(harness_init(&h));
    CHECK(start_auth_server(&h));
    char buf[4096] = "";
    int rc = run_peer_client(&h, "h3", buf, sizeof(buf));
    CHECK_MSG(rc != 0, "peer (%d): %s", rc, buf);
    CHECK_EQ_INT(g_auth.oks, 0);
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(h.server, &st);
    CHECK_EQ_U64(st.conns_accepted, 0);
    harness_fini(&h);
}
