/*
 * udp.h — the UDP fast path under QUIC (quic layer): a non-blocking socket
 * with 4 MiB buffers and DF set, batched receive (recvmmsg, UDP_GRO),
 * batched send (sendmmsg of UDP_SEGMENT/GSO messages), and a pending queue
 * that keeps packets the kernel refused with EAGAIN until the socket is
 * writable again. Nothing here knows about QUIC.
 *
 * Send model: the caller reserves room for one packet in the transmit
 * batch (rift_udp_tx_reserve), writes the packet there, and commits it
 * with its destination (rift_udp_tx_commit). Consecutive packets to the
 * same destination become one GSO message as long as every packet but the
 * last has the same size (the kernel's segmentation rule); a packet larger
 * than the current segment size, or any packet after a short one, starts a
 * new message. rift_udp_tx_flush hands the batch to sendmmsg.
 *
 * Threading: one thread (the owning loop's).
 */
#ifndef RIFT_QUIC_UDP_H
#define RIFT_QUIC_UDP_H

#include "rift/rift.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Messages per sendmmsg / recvmmsg call. */
#define RIFT_UDP_TX_MSGS  64
#define RIFT_UDP_RX_BATCH 32
/* Largest packet we ever build (settings.max_udp_payload is clamped to
 * it), packets built outside a connection (Retry, stateless reset,
 * version negotiation), the GSO byte budget per message and the transmit
 * buffer. */
#define RIFT_UDP_MAX_PKT       65000
#define RIFT_UDP_STATELESS_PKT 1500
#define RIFT_UDP_GSO_MAX_BYTES 65000
#define RIFT_UDP_TX_BYTES      (512u << 10)
#define RIFT_UDP_GSO_MAX_SEGS  64

typedef struct rift_udp_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} rift_udp_addr;

typedef struct rift_udp_msg {
    size_t off;    /* offset in the transmit buffer */
    size_t len;    /* total bytes */
    size_t seg;    /* segment size (the first packet's size) */
    unsigned nseg; /* packets in this message */
    bool sealed;   /* a short packet ended it */
    rift_udp_addr to;
    rift_udp_addr from; /* source address (wildcard sockets only) */
} rift_udp_msg;

typedef struct rift_udp_pending rift_udp_pending;

typedef struct rift_udp_stats {
    uint64_t rx_calls;       /* recvmmsg calls */
    uint64_t rx_datagrams;   /* datagrams delivered (GRO segments split) */
    uint64_t tx_calls;       /* sendmmsg/sendmsg calls */
    uint64_t tx_datagrams;   /* packets handed to the kernel */
    uint64_t tx_eagain;      /* times the kernel said EAGAIN/ENOBUFS */
    uint64_t tx_errors;      /* packets dropped for other send errors */
    uint64_t tx_queue_drops; /* packets dropped because the queue was full */
    uint64_t gso_fallbacks;  /* EIO from UDP_SEGMENT: switched to plain */
} rift_udp_stats;

typedef struct rift_udp {
    const rift_mem *mem;
    int fd;
    int family;
    bool gso;      /* UDP_SEGMENT in use */
    bool gro;      /* UDP_GRO enabled */
    bool wildcard; /* bound to the unspecified address: track pktinfo */
    rift_udp_addr local;

    /* Transmit batch. */
    uint8_t *txbuf;
    size_t txcap;
    size_t txused;
    rift_udp_msg msgs[RIFT_UDP_TX_MSGS];
    size_t nmsgs;

    /* Packets refused with EAGAIN, in order; sent before anything new. */
    rift_udp_pending *pend_head;
    rift_udp_pending *pend_tail;
    size_t pend_bytes;

    /* Receive batch. */
    uint8_t *rxbuf;
    size_t rxslot; /* bytes per slot */

    rift_udp_stats stats;

    /* Fault injection for tests: the next N send calls fail with EAGAIN,
     * the next N GSO sends with EIO; a path MTU: larger datagrams fail
     * as the kernel fails them (EMSGSIZE, or EINVAL for a GSO message
     * whose segments are larger). Zero in production. */
    unsigned inject_eagain;
    unsigned inject_eio;
    size_t inject_mtu;
} rift_udp;

typedef struct rift_udp_settings {
    bool gso;     /* try UDP_SEGMENT (default true) */
    bool gro;     /* try UDP_GRO (default true) */
    bool connect; /* connect() to |peer| (clients) */
} rift_udp_settings;

/**
 * rift_udp_open creates a socket bound to |bind_addr| (port 0 picks one),
 * sets 4 MiB receive/send buffers (SO_*BUFFORCE first, which needs
 * CAP_NET_ADMIN), IP_MTU_DISCOVER=IP_PMTUDISC_DO (IPv6 likewise), UDP_GRO
 * when asked, and IP_PKTINFO when bound to a wildcard address. With
 * |s|->connect it also connects to |peer| so ICMP errors surface.
 *
 * Errors: RIFT_ERR_IO ("cannot bind <addr>: ..."); RIFT_ERR_NOMEM.
 */
int rift_udp_open(rift_udp *u, const struct sockaddr *bind_addr,
                  socklen_t bind_len, const struct sockaddr *peer,
                  socklen_t peer_len, const rift_udp_settings *s,
                  const rift_mem *mem, rift_error *err);

/** rift_udp_close closes the socket and frees queued packets. */
void rift_udp_close(rift_udp *u);

/**
 * rift_udp_recv_cb receives one datagram (one GRO segment). |local| is the
 * address the datagram was sent to. |data| is writable and valid only for
 * the call.
 */
typedef void (*rift_udp_recv_cb)(void *arg, const rift_udp_addr *from,
                                 const rift_udp_addr *local, uint8_t *data,
                                 size_t len);

/**
 * rift_udp_recv_batch runs one recvmmsg of up to RIFT_UDP_RX_BATCH
 * datagrams and calls |cb| for each (GRO super-datagrams are split).
 * Returns the number of datagrams received from the kernel (0 when none
 * were waiting) or a negative errno. ICMP-induced errors (ECONNREFUSED and
 * friends) are returned as -errno so the caller can decide.
 */
int rift_udp_recv_batch(rift_udp *u, rift_udp_recv_cb cb, void *arg);

/**
 * rift_udp_tx_reserve returns room for one packet of up to |len| (<=
 * RIFT_UDP_MAX_PKT) bytes at the end of the transmit batch, flushing the
 * batch first when it is full.
 */
uint8_t *rift_udp_tx_reserve(rift_udp *u, size_t len);

/**
 * rift_udp_tx_commit appends the |len|-byte packet just written at the
 * reserved position, bound for |to| from |from| (|from| may be NULL).
 */
void rift_udp_tx_commit(rift_udp *u, const struct sockaddr *to, socklen_t tolen,
                        const struct sockaddr *from, socklen_t fromlen,
                        size_t len);

/**
 * rift_udp_tx_flush sends the transmit batch. Packets the kernel refuses
 * with EAGAIN are queued (in order) for rift_udp_flush_pending; a GSO EIO
 * switches the socket to plain sends and resends. Other errors drop the
 * packet and count it. Returns 0, or RIFT_ERR_AGAIN when packets are now
 * queued (wait for writability).
 */
int rift_udp_tx_flush(rift_udp *u);

/**
 * rift_udp_flush_pending retries the queued packets. Returns 0 when the
 * queue is empty, RIFT_ERR_AGAIN while the kernel still refuses.
 */
int rift_udp_flush_pending(rift_udp *u);

/** rift_udp_blocked is true while packets are queued after EAGAIN. */
bool rift_udp_blocked(const rift_udp *u);

/** rift_udp_addr_set copies a sockaddr into |a|. */
void rift_udp_addr_set(rift_udp_addr *a, const struct sockaddr *sa,
                       socklen_t len);

/** rift_udp_addr_format writes "ip:port" or "[ip6]:port" into |out|. */
void rift_udp_addr_format(const struct sockaddr *sa, char *out, size_t cap);

#endif /* RIFT_QUIC_UDP_H */
