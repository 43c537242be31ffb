/*
 * quinn_stub.c — the Quinn stub server fixture (tests layer). See
 * quinn_stub.h.
 */
#include "quinn_stub.h"

#include "quic/certgen.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

const char *quinn_stub_binary(void) {
    static char path[4096];
    const char *src = getenv("RIFT_SOURCE_DIR");
    if (src == NULL || *src == '\0') {
        return NULL;
    }
    snprintf(path, sizeof(path),
             "%s/tests/quinn-peer/target/release/rift-quinn-peer", src);
    return access(path, X_OK) == 0 ? path : NULL;
}

static bool make_certs(const char *dir, quinn_stub *st) {
    rift_error err;
    if (rift_certgen_dev(dir, NULL, &err) != 0) {
        snprintf(st->why, sizeof(st->why), "certgen %s: %s", dir, err.text);
        return false;
    }
    return true;
}

/* Reads the "listening on ADDR" line within |ms| milliseconds. */
static bool read_addr(quinn_stub *st, int ms) {
    char line[256];
    size_t have = 0;
    while (have < sizeof(line) - 1) {
        struct pollfd pfd = {st->out_fd, POLLIN, 0};
        int r = poll(&pfd, 1, ms);
        if (r <= 0) {
            snprintf(st->why, sizeof(st->why), "stub did not report its port");
            return false;
        }
        ssize_t n = read(st->out_fd, line + have, 1);
        if (n <= 0) {
            snprintf(st->why, sizeof(st->why), "stub exited before listening");
            return false;
        }
        if (line[have] == '\n') {
            line[have] = '\0';
            const char *p = strstr(line, "listening on ");
            if (p == NULL) {
                snprintf(st->why, sizeof(st->why), "unexpected output: %s",
                         line);
                return false;
            }
            snprintf(st->addr, sizeof(st->addr), "%s",
                     p + strlen("listening on "));
            return true;
        }
        have++;
    }
    snprintf(st->why, sizeof(st->why), "stub output line too long");
    return false;
}

bool quinn_stub_start(quinn_stub *st, const char *token) {
    memset(st, 0, sizeof(*st));
    st->pid = -1;
    st->out_fd = -1;
    snprintf(st->token, sizeof(st->token), "%s", token);
    const char *bin = quinn_stub_binary();
    if (bin == NULL) {
        snprintf(st->why, sizeof(st->why),
                 "rift-quinn-peer is missing: build it with "
                 "scripts/interop-build.sh (looked under RIFT_SOURCE_DIR=%s)",
                 getenv("RIFT_SOURCE_DIR") ? getenv("RIFT_SOURCE_DIR") : "");
        return false;
    }
    if ((st->dir = rift_test_tmpdir()) == NULL ||
        (st->other = rift_test_tmpdir()) == NULL) {
        snprintf(st->why, sizeof(st->why), "cannot create a temp dir");
        return false;
    }
    if (!make_certs(st->dir, st) || !make_certs(st->other, st)) {
        return false;
    }
    snprintf(st->ca, sizeof(st->ca), "%s/%s", st->dir, RIFT_CERTGEN_CA_CERT);
    snprintf(st->other_ca, sizeof(st->other_ca), "%s/%s", st->other,
             RIFT_CERTGEN_CA_CERT);
    char cert[4200], key[4200];
    snprintf(cert, sizeof(cert), "%s/%s", st->dir, RIFT_CERTGEN_SERVER_CERT);
    snprintf(key, sizeof(key), "%s/%s", st->dir, RIFT_CERTGEN_SERVER_KEY);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(st->why, sizeof(st->why), "pipe: %s", strerror(errno));
        return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(st->why, sizeof(st->why), "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        /* Never outlive the test, even when it fails half-way. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], STDOUT_FILENO);
        char *argv[] = {(char *)bin, "stub",    "--listen", "127.0.0.1:0",
                        "--cert",    cert,      "--key",    key,
                        "--token",   st->token, NULL};
        execv(bin, argv);
        _exit(127);
    }
    close(fds[1]);
    st->pid = pid;
    st->out_fd = fds[0];
    return read_addr(st, 20000);
}

void quinn_stub_stop(quinn_stub *st) {
    if (st->pid > 0) {
        kill(st->pid, SIGKILL);
        waitpid(st->pid, NULL, 0);
        st->pid = -1;
    }
    if (st->out_fd >= 0) {
        close(st->out_fd);
        st->out_fd = -1;
    }
    rift_test_rmdir(st->dir);
    rift_test_rmdir(st->other);
    st->dir = st->other = NULL;
}
