/*
 * wake_ceiling.c — thread wake-up ceiling of a machine (bench layer): how
 * long one thread takes to wake another that sleeps in epoll, measured
 * as a ping-pong between two threads. Every round trip over rift's wire
 * crosses several such hand-offs (a client's calling thread and its loop
 * thread, the loops of both ends), so their cost times their count is a
 * floor under the request/reply and synced-publish latencies that no
 * protocol change removes; bench/compare.sh prints it next to the UDP and
 * fdatasync ceilings.
 *
 *   wake_ceiling [--mode eventfd|udp] [--seconds S] [--csv FILE]
 *                [--label TEXT]
 *
 * eventfd: each thread sleeps in epoll_wait on its own eventfd (edge
 * triggered, as rift's loop watches its post queue) and the other writes
 * it: the hand-off of a call posted to a loop thread. udp: each thread
 * sleeps in epoll_wait on its own UDP socket on 127.0.0.1 and the other
 * sends it one 64-byte datagram: the hand-off between two processes'
 * loops over loopback.
 */
#include "bench_csv.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SAMPLES 1000000

typedef struct end {
    int epfd;
    int fd;                  /* what this thread sleeps on */
    int peer_fd;             /* what it writes to wake the other */
    struct sockaddr_in peer; /* udp: where the other's socket is */
} end;

static bool udp_mode;
static atomic_bool stop;

/* Sleeps until |e|'s descriptor is readable and consumes what woke it;
 * false on an error. */
static bool wait_one(const end *e) {
    struct epoll_event ev;
    for (;;) {
        int n = epoll_wait(e->epfd, &ev, 1, 1000);
        if (n > 0) {
            break;
        }
        if (n < 0 && errno != EINTR) {
            return false;
        }
        if (atomic_load(&stop)) {
            return false;
        }
    }
    uint8_t buf[64];
    if (udp_mode) {
        return recv(e->fd, buf, sizeof(buf), 0) > 0;
    }
    uint64_t v;
    return read(e->fd, &v, sizeof(v)) == (ssize_t)sizeof(v);
}

/* Wakes the other end of |e|. */
static bool wake_other(const end *e) {
    if (udp_mode) {
        uint8_t buf[64] = {0};
        return sendto(e->peer_fd, buf, sizeof(buf), 0,
                      (const struct sockaddr *)&e->peer,
                      sizeof(e->peer)) == (ssize_t)sizeof(buf);
    }
    uint64_t one = 1;
    return write(e->peer_fd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

static void *echo_main(void *arg) {
    const end *e = arg;
    while (wait_one(e) && wake_other(e)) {
    }
    return NULL;
}

static int end_init(end *e, uint16_t *port) {
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (udp_mode) {
        e->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        if (e->fd < 0 || bind(e->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
            getsockname(e->fd, (struct sockaddr *)&a, &len) != 0) {
            return -1;
        }
        *port = ntohs(a.sin_port);
    } else {
        e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    struct epoll_event ev = {.events = EPOLLIN | (udp_mode ? 0 : EPOLLET),
                             .data.fd = e->fd};
    if (e->epfd < 0 || e->fd < 0 ||
        epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->fd, &ev) != 0) {
        return -1;
    }
    return 0;
}

/* Points |e| at |other|: its descriptor (eventfd) or its port (udp). */
static void end_link(end *e, const end *other, uint16_t other_port) {
    e->peer_fd = udp_mode ? e->fd : other->fd;
    e->peer = (struct sockaddr_in){.sin_family = AF_INET,
                                   .sin_port = htons(other_port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static void usage(void) {
    fprintf(stderr, "usage: wake_ceiling [--mode eventfd|udp] [--seconds S] "
                    "[--csv FILE] [--label TEXT]\n");
}

int main(int argc, char **argv) {
    const char *mode = "eventfd";
    const char *csv = NULL;
    const char *label = NULL;
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--mode") == 0) {
            mode = v;
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
        } else if (strcmp(a, "--csv") == 0) {
            csv = v;
        } else if (strcmp(a, "--label") == 0) {
            label = v;
        } else {
            usage();
            return 2;
        }
    }
    if ((strcmp(mode, "eventfd") != 0 && strcmp(mode, "udp") != 0) ||
        !(seconds > 0 && seconds <= 60) || !bench_label_ok(label)) {
        usage();
        return 2;
    }
    udp_mode = strcmp(mode, "udp") == 0;

    end a, b;
    uint16_t pa = 0, pb = 0;
    if (end_init(&a, &pa) != 0 || end_init(&b, &pb) != 0) {
        fprintf(stderr, "wake_ceiling: set-up: %s\n", strerror(errno));
        return 1;
    }
    end_link(&a, &b, pb);
    end_link(&b, &a, pa);
    uint64_t *lat = malloc(MAX_SAMPLES * sizeof(*lat));
    pthread_t t;
    if (lat == NULL || pthread_create(&t, NULL, echo_main, &b) != 0) {
        fprintf(stderr, "wake_ceiling: out of memory\n");
        return 1;
    }

    /* A short warm-up, then timed round trips: two hand-offs each. */
    size_t n = 0;
    bool ok = true;
    for (int i = 0; i < 1000 && ok; i++) {
        ok = wake_other(&a) && wait_one(&a);
    }
    double cpu0 = bench_cpu_seconds();
    rift_tstamp t0 = rift_now_ns();
    rift_tstamp end_at = t0 + (rift_tstamp)(seconds * 1e9);
    rift_tstamp now = t0;
    while (ok && now < end_at && n < MAX_SAMPLES) {
        rift_tstamp s = now;
        ok = wake_other(&a) && wait_one(&a);
        now = rift_now_ns();
        lat[n++] = now - s;
    }
    double cpu1 = bench_cpu_seconds();
    atomic_store(&stop, true);
    wake_other(&a); /* the echo thread sees |stop| or its next wait fails */
    pthread_join(t, NULL);
    if (!ok || n == 0) {
        fprintf(stderr, "wake_ceiling: ping-pong failed: %s\n",
                strerror(errno));
        free(lat);
        return 1;
    }
    double secs = (double)(now - t0) / 1e9;
    qsort(lat, n, sizeof(*lat), bench_cmp_u64);
    printf("wake_ceiling: %s, thread -> thread -> thread: %.0f round trips/s, "
           "p50 %.1f us p99 %.1f us (one hand-off p50 %.1f us), CPU %.1f us "
           "per round trip\n",
           mode, (double)n / secs, bench_pct_us(lat, n, 50),
           bench_pct_us(lat, n, 99), bench_pct_us(lat, n, 50) / 2,
           (cpu1 - cpu0) * 1e6 / (double)n);
    int rc = 0;
    if (csv != NULL) {
        bench_row row = {
            .impl = "wake",
            .transport = mode,
            .label = label,
            .scenario = "wake-ceiling",
            .size = udp_mode ? 64 : 8,
            .msgs = n,
            .pubs = 1,
            .subs = 1,
            .batch = 1,
            .seconds = secs,
            .lat_what = "rtt",
            .p50_us = bench_pct_us(lat, n, 50),
            .p95_us = bench_pct_us(lat, n, 95),
            .p99_us = bench_pct_us(lat, n, 99),
            .max_us = bench_pct_us(lat, n, 100),
            .errors = 0,
            .client_cpu_s = cpu1 - cpu0,
            .server_cpu_s = -1,
        };
        if (bench_csv_append(csv, &row) != 0) {
            perror("wake_ceiling: csv");
            rc = 1;
        }
    }
    free(lat);
    close(a.fd);
    close(b.fd);
    close(a.epfd);
    close(b.epfd);
    return rc;
}
