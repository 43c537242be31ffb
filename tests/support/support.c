/*
 * support.c — helpers for tests that need temp directories, free ports and
 * condition waits (tests layer).
 */
#include "test.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

char *rift_test_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof(tmpl), "%s/rift-test-XXXXXX",
             base && *base ? base : "/tmp");
    if (mkdtemp(tmpl) == NULL) {
        return NULL;
    }
    return strdup(tmpl);
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void rift_test_rmdir(char *path) {
    if (path == NULL) {
        return;
    }
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}

/* A port of |type| on 127.0.0.1 nobody holds right now (bound, read back
 * and released), or -1. */
static int free_port(int type) {
    int fd = socket(AF_INET, type, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

int rift_test_free_udp_port(void) {
    return free_port(SOCK_DGRAM);
}

int rift_test_free_tcp_port(void) {
    return free_port(SOCK_STREAM);
}

bool rift_test_wait_until(bool (*cond)(void *arg), void *arg, int timeout_ms) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (cond(arg)) {
            return true;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 +
                       (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed >= timeout_ms) {
            return cond(arg);
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}
