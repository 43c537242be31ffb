/*
 * test_server_interop.c — the protocol server against the independent
 * Quinn 0.9 + rustls peer (tests/quinn-peer): its "all" scenario (auth,
 * PING, PUBLISH_ACK + MESSAGE, 1,000 ordered publishes, request/reply
 * with a queue responder, no responders, a permission error, a malformed
 * frame, the publisher FIN) and its "badauth" scenario must both end with
 * "ALL OK". The peer is built by scripts/interop-build.sh (CI runs it
 * before ctest); without it these tests fail and say so.
 */
// labels: threads interop
#include "quinn_stub.h"
#include "rawcli.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The shared lookup (support/quinn_stub.c); callers skip without it. */
static bool peer_path(char *out, size_t cap) {
    const char *bin = quinn_stub_binary();
    snprintf(out, cap, "%s", bin ? bin : "");
    return bin != NULL;
}

/* Runs the peer's client with |scenario| and |token| against the fixture's
 * server, collecting its output in |buf|. Returns its exit status. */
static int run_peer(srvfix *f, const char *scenario, const char *token,
                    char *buf, size_t cap) {
    char peer[4200], addr[64];
    peer_path(peer, sizeof(peer));
    if (rift_server_address(f->srv, addr, sizeof(addr), NULL) != 0) {
        return -1;
    }
    const char *argv[] = {
        peer,         "client", "--addr", addr,      "--server-name",
        "localhost",  "--ca",   f->ca,    "--token", token,
        "--scenario", scenario, NULL};
    int p[2];
    if (pipe(p) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    struct pollfd pfd = {p[0], POLLIN, 0};
    rift_tstamp end = rift_now_ns() + 60000000000ull;
    while (rift_now_ns() < end && poll(&pfd, 1, 100) >= 0) {
        if (pfd.revents == 0) {
            continue;
        }
        ssize_t n = read(p[0], buf + len, cap - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        if (len + 1 >= cap) {
            break;
        }
    }
    buf[len] = '\0';
    close(p[0]);
    int status = 0;
    if (rift_now_ns() >= end) {
        kill(pid, SIGKILL);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

RIFT_TEST(quinn_peer_scenario_all) {
    char peer[4200];
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(peer_path(peer, sizeof(peer)));
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    static char out[65536];
    int rc = run_peer(&f, "all", RC_TOKEN("interop"), out, sizeof(out));
    CHECK_MSG(rc == 0 && strstr(out, "ALL OK") != NULL, "peer exit %d:\n%s", rc,
              out);
    /* Everything the scenario opened is gone again. */
    CHECK(fix_wait_subs(&f, 0, 5000));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK(st.msgs_in >= 1002);
    CHECK(st.msgs_out >= 1002);
    rift_server_stats_free(&st);
    fix_fini(&f);
}

RIFT_TEST(quinn_peer_scenario_badauth) {
    char peer[4200];
    SKIP_WITHOUT_QUINN_PEER();
    CHECK(peer_path(peer, sizeof(peer)));
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    static char out[65536];
    int rc = run_peer(&f, "badauth", "wrong-token-0123456789abcdef0123456789",
                      out, sizeof(out));
    CHECK_MSG(rc == 0 && strstr(out, "ALL OK") != NULL, "peer exit %d:\n%s", rc,
              out);
    CHECK_MSG(strstr(out, "closed code=1 reason=authentication failed") != NULL,
              "peer said:\n%s", out);
    fix_fini(&f);
}
