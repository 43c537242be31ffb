/*
 * udp_ceiling.c — loopback UDP ceiling (bench layer): how many QUIC-sized
 * (1,200-byte) datagrams per second one sender thread pushes through
 * 127.0.0.1 to one receiver thread. bench/compare.sh prints it next to the
 * rift QUIC figures, which cannot beat it.
 *
 *   udp_ceiling [--seconds S] [--size B] [--mode gso|gso-gro|mmsg|plain]
 *               [--no-pin] [--csv FILE] [--label TEXT]
 *
 * Modes: gso (the default) = UDP_SEGMENT sends of up to 64 segments
 * (~64 KB), received one datagram at a time with recvmmsg batches of 32;
 * gso-gro = the same sends to a UDP_GRO receiver, which reads whole
 * coalesced trains (the best a QUIC stack using GSO and GRO can reach);
 * mmsg = sendmmsg/recvmmsg of 32; plain = one datagram per syscall on both
 * sides. The sender is pinned to CPU 0 and the receiver to CPU 1 when
 * there are two.
 */
#include "bench_csv.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum {
    MODE_GSO,
    MODE_GSO_GRO,
    MODE_MMSG,
    MODE_PLAIN
};

#define MAX_GSO_SEGMENTS 64
#define MMSG_BATCH       32
#define BUF_BYTES        65536

typedef struct ceiling {
    int rx_fd;
    int tx_fd;
    size_t size;
    int mode;
    size_t segs;
    bool pin;
    atomic_bool stop;
    atomic_uint_fast64_t rx_bytes;
    atomic_uint_fast64_t tx_pkts;
} ceiling;

static const char *const mode_names[] = {"gso", "gso-gro", "mmsg", "plain"};

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* Best effort: an unpinned run is still a measurement. */
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *receiver(void *arg) {
    ceiling *c = arg;
    static uint8_t buf[MMSG_BATCH][BUF_BYTES / MMSG_BATCH];
    static uint8_t big[BUF_BYTES];
    struct mmsghdr msgs[MMSG_BATCH];
    struct iovec iov[MMSG_BATCH];

    if (c->pin) {
        pin_to(1);
    }
    for (int i = 0; i < MMSG_BATCH; i++) {
        iov[i].iov_base = buf[i];
        iov[i].iov_len = sizeof(buf[i]);
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    /* The receive timeout lets the loop see the stop flag once idle. */
    while (true) {
        uint64_t got = 0;
        if (c->mode != MODE_GSO_GRO && c->mode != MODE_PLAIN) {
            int n = recvmmsg(c->rx_fd, msgs, MMSG_BATCH, MSG_WAITFORONE, NULL);
            for (int i = 0; i < n; i++) {
                got += msgs[i].msg_len;
            }
        } else {
            /* With UDP_GRO one read returns a whole coalesced train. */
            ssize_t n = recv(c->rx_fd, big, sizeof(big), 0);
            if (n > 0) {
                got = (uint64_t)n;
            }
        }
        if (got > 0) {
            atomic_fetch_add_explicit(&c->rx_bytes, got, memory_order_relaxed);
        } else if (errno != EINTR && atomic_load(&c->stop)) {
            break;
        }
    }
    return NULL;
}

static void *sender(void *arg) {
    ceiling *c = arg;
    static uint8_t buf[BUF_BYTES];
    struct mmsghdr msgs[MMSG_BATCH];
    struct iovec iov[MMSG_BATCH];

    if (c->pin) {
        pin_to(0);
    }
    memset(buf, 0x2A, sizeof(buf));
    for (int i = 0; i < MMSG_BATCH; i++) {
        iov[i].iov_base = buf;
        iov[i].iov_len = c->size;
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        uint64_t sent = 0;
        if (c->mode == MODE_MMSG) {
            int n = sendmmsg(c->tx_fd, msgs, MMSG_BATCH, 0);
            sent = n > 0 ? (uint64_t)n : 0;
        } else {
            ssize_t n = send(c->tx_fd, buf, c->segs * c->size, 0);
            sent = n > 0 ? (uint64_t)n / c->size : 0;
        }
        /* ENOBUFS/EAGAIN under pressure: simply try again. */
        atomic_fetch_add_explicit(&c->tx_pkts, sent, memory_order_relaxed);
    }
    return NULL;
}

static int setup(ceiling *c) {
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    int big = 8 << 20;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    int one = 1;
    int seg = (int)c->size;

    c->rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    c->tx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (c->rx_fd < 0 || c->tx_fd < 0) {
        perror("udp_ceiling: socket");
        return -1;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* FORCE needs CAP_NET_ADMIN; otherwise net.core.rmem_max caps it. */
    if (setsockopt(c->rx_fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) !=
        0) {
        (void)setsockopt(c->rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    }
    (void)setsockopt(c->rx_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (bind(c->rx_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(c->rx_fd, (struct sockaddr *)&addr, &len) != 0 ||
        connect(c->tx_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        perror("udp_ceiling: bind/connect");
        return -1;
    }
    if ((c->mode == MODE_GSO || c->mode == MODE_GSO_GRO) &&
        setsockopt(c->tx_fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) != 0) {
        perror("udp_ceiling: UDP_SEGMENT (Linux >= 4.18 needed)");
        return -1;
    }
    if (c->mode == MODE_GSO_GRO &&
        setsockopt(c->rx_fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) != 0) {
        perror("udp_ceiling: UDP_GRO (Linux >= 5.0 needed)");
        return -1;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: udp_ceiling [--seconds S] [--size B] "
                    "[--mode gso|gso-gro|mmsg|plain] [--no-pin] [--csv FILE] "
                    "[--label TEXT]\n");
}

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int main(int argc, char **argv) {
    ceiling c = {.size = 1200, .mode = MODE_GSO, .pin = true};
    double seconds = 2.0;
    const char *csv = NULL;
    const char *label = NULL;
    pthread_t rx, tx;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-pin") == 0) {
            c.pin = false;
            continue;
        }
        if (v == NULL) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
        } else if (strcmp(a, "--size") == 0) {
            c.size = (size_t)strtoul(v, NULL, 10);
        } else if (strcmp(a, "--mode") == 0) {
            c.mode = strcmp(v, "gso-gro") == 0 ? MODE_GSO_GRO
                     : strcmp(v, "plain") == 0 ? MODE_PLAIN
                     : strcmp(v, "mmsg") == 0  ? MODE_MMSG
                     : strcmp(v, "gso") == 0   ? MODE_GSO
                                               : -1;
        } else if (strcmp(a, "--csv") == 0) {
            csv = v;
        } else if (strcmp(a, "--label") == 0) {
            label = v;
        } else {
            usage();
            return 2;
        }
    }
    if (c.mode < 0 || c.size < 1 || c.size > BUF_BYTES / MMSG_BATCH ||
        !(seconds > 0 && seconds <= 60) || !bench_label_ok(label)) {
        usage();
        return 2;
    }
    /* A GSO send must stay within one 65,507-byte UDP datagram. */
    c.segs = 1;
    if (c.mode == MODE_GSO || c.mode == MODE_GSO_GRO) {
        c.segs = 65000 / c.size < MAX_GSO_SEGMENTS ? 65000 / c.size
                                                   : MAX_GSO_SEGMENTS;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        c.pin = false;
    }
    atomic_init(&c.stop, false);
    atomic_init(&c.rx_bytes, 0);
    atomic_init(&c.tx_pkts, 0);
    if (setup(&c) != 0) {
        return 1;
    }
    if (pthread_create(&rx, NULL, receiver, &c) != 0 ||
        pthread_create(&tx, NULL, sender, &c) != 0) {
        fprintf(stderr, "udp_ceiling: cannot start threads\n");
        return 1;
    }

    /* 200 ms warm-up, then one measured window. */
    sleep_ns(200000000u);
    uint64_t rx0 = atomic_load(&c.rx_bytes) / c.size;
    double cpu0 = bench_cpu_seconds();
    rift_tstamp t0 = rift_now_ns();
    sleep_ns((uint64_t)(seconds * 1e9));
    uint64_t rx1 = atomic_load(&c.rx_bytes) / c.size;
    rift_tstamp t1 = rift_now_ns();
    double cpu1 = bench_cpu_seconds();
    atomic_store(&c.stop, true);
    pthread_join(tx, NULL);
    pthread_join(rx, NULL);
    close(c.tx_fd);
    close(c.rx_fd);

    double secs = (double)(t1 - t0) / 1e9;
    uint64_t pkts = rx1 - rx0;
    uint64_t tx_total = atomic_load(&c.tx_pkts);
    uint64_t rx_total = atomic_load(&c.rx_bytes) / c.size;
    uint64_t lost = tx_total > rx_total ? tx_total - rx_total : 0;
    double rate = (double)pkts / secs;
    printf("udp_ceiling %s: %zu B datagrams, %.0f pkt/s = %.2f Gbit/s "
           "(%llu received in %.2f s, %llu of %llu lost to full buffers, "
           "%.2f CPU s, %s)\n",
           mode_names[c.mode], c.size, rate, rate * (double)c.size * 8 / 1e9,
           (unsigned long long)pkts, secs, (unsigned long long)lost,
           (unsigned long long)tx_total, cpu1 - cpu0,
           c.pin ? "sender CPU 0, receiver CPU 1" : "unpinned");
    if (csv != NULL) {
        char transport[32];
        snprintf(transport, sizeof(transport), "loopback-%s",
                 mode_names[c.mode]);
        bench_row row = {
            .impl = "udp",
            .transport = transport,
            .label = label,
            .scenario = "udp-ceiling",
            .size = c.size,
            .msgs = pkts,
            .pubs = 1,
            .subs = 1,
            .batch = c.mode == MODE_MMSG ? MMSG_BATCH : (unsigned)c.segs,
            .seconds = secs,
            .p50_us = -1,
            .p95_us = -1,
            .p99_us = -1,
            .max_us = -1,
            .errors = lost,
            .client_cpu_s = cpu1 - cpu0,
            .server_cpu_s = -1,
        };
        if (bench_csv_append(csv, &row) != 0) {
            perror("udp_ceiling: csv");
            return 1;
        }
    }
    return 0;
}
