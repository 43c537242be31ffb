/*
 * udp.c — UDP socket, recvmmsg/GRO receive, sendmmsg/GSO send with an
 * EAGAIN queue (quic layer). See udp.h.
 */
#include "quic/udp.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
# define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
# define UDP_GRO 104
#endif
#ifndef SOL_UDP
# define SOL_UDP 17
#endif

#define SOCKBUF_BYTES (4 << 20)
#define RX_SLOT_BYTES 65536
/* Bound on packets held after EAGAIN. We stop generating packets while
 * blocked, so this is only reached by stateless replies under a flood;
 * those drops are counted. */
#define PENDING_MAX_BYTES (8u << 20)

struct rift_udp_pending {
    rift_udp_pending *next;
    size_t len;
    size_t seg;
    size_t done; /* bytes already sent (plain-send fallback progress) */
    rift_udp_addr to;
    rift_udp_addr from;
    bool has_from;
    uint8_t data[];
};

/* One message to send: contiguous packets of |seg| bytes (the last may be
 * shorter) for one destination. */
typedef struct txview {
    const uint8_t *data;
    size_t len;
    size_t seg;
    const rift_udp_addr *to;
    const rift_udp_addr *from; /* NULL: let the kernel pick */
} txview;

/* Control buffer big enough for UDP_SEGMENT plus a pktinfo. */
typedef struct cmsgbuf {
    _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(uint16_t)) +
                                      CMSG_SPACE(sizeof(struct in6_pktinfo))];
} cmsgbuf;

void rift_udp_addr_set(rift_udp_addr *a, const struct sockaddr *sa,
                       socklen_t len) {
    memset(a, 0, sizeof(*a));
    if (len > sizeof(a->ss)) {
        len = sizeof(a->ss);
    }
    memcpy(&a->ss, sa, len);
    a->len = len;
}

void rift_udp_addr_format(const struct sockaddr *sa, char *out, size_t cap) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
        snprintf(out, cap, "%s:%u", ip, ntohs(s4->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
        snprintf(out, cap, "[%s]:%u", ip, ntohs(s6->sin6_port));
    } else {
        snprintf(out, cap, "(unknown address family)");
    }
}

static bool is_wildcard(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
               htonl(INADDR_ANY);
    }
    if (sa->sa_family == AF_INET6) {
        return IN6_IS_ADDR_UNSPECIFIED(
            &((const struct sockaddr_in6 *)sa)->sin6_addr);
    }
    return false;
}

static void set_buffers(int fd) {
    int sz = SOCKBUF_BYTES;
    /* The *FORCE variants bypass rmem_max/wmem_max but need CAP_NET_ADMIN;
     * fall back to the capped ones. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) != 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
}

int rift_udp_open(rift_udp *u, const struct sockaddr *bind_addr,
                  socklen_t bind_len, const struct sockaddr *peer,
                  socklen_t peer_len, const rift_udp_settings *s,
                  const rift_mem *mem, rift_error *err) {
    char name[128];
    int one = 1, rv;
    memset(u, 0, sizeof(*u));
    u->mem = mem;
    u->family = bind_addr->sa_family;
    rift_udp_addr_format(bind_addr, name, sizeof(name));
    u->fd = socket(u->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "cannot bind %s: %s", name,
                              strerror(errno));
    }
    set_buffers(u->fd);
    /* QUIC must not be fragmented: DF on, so PMTUD probes are honest. */
    if (u->family == AF_INET) {
        int v = IP_PMTUDISC_DO;
        setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
    } else {
        int v = IPV6_PMTUDISC_DO;
        setsockopt(u->fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v, sizeof(v));
        int v4 = IP_PMTUDISC_DO; /* v4-mapped traffic on a dual socket */
        setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &v4, sizeof(v4));
    }
    u->wildcard = is_wildcard(bind_addr);
    if (u->wildcard) {
        setsockopt(u->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
        if (u->family == AF_INET6) {
            setsockopt(u->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
                       sizeof(one));
        }
    }
    if (bind(u->fd, bind_addr, bind_len) != 0) {
        rv = rift_error_set(err, RIFT_ERR_IO, "cannot bind %s: %s", name,
                            strerror(errno));
        goto fail_sock;
    }
    if (s->connect && peer != NULL && connect(u->fd, peer, peer_len) != 0) {
        rift_udp_addr_format(peer, name, sizeof(name));
        rv = rift_error_set(err, RIFT_ERR_IO, "cannot connect to %s: %s", name,
                            strerror(errno));
        goto fail_sock;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(u->fd, (struct sockaddr *)&ss, &sl) != 0) {
        rv = rift_error_set(err, RIFT_ERR_IO, "cannot bind %s: %s", name,
                            strerror(errno));
        goto fail_sock;
    }
    rift_udp_addr_set(&u->local, (struct sockaddr *)&ss, sl);
    if (u->wildcard && s->connect) {
        u->wildcard = false; /* connect() fixed the local address */
    }
    u->gso = s->gso;
    if (s->gro && setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0) {
        u->gro = true;
    }
    u->txcap = RIFT_UDP_TX_BYTES;
    u->txbuf = rift_malloc(mem, u->txcap);
    u->rxslot = RX_SLOT_BYTES;
    u->rxbuf = rift_malloc(mem, u->rxslot * RIFT_UDP_RX_BATCH);
    if (u->txbuf == NULL || u->rxbuf == NULL) {
        rv = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail_mem;
    }
    return 0;

fail_mem:
    rift_free(mem, u->txbuf);
    rift_free(mem, u->rxbuf);
fail_sock:
    close(u->fd);
    u->fd = -1;
    return rv;
}

void rift_udp_close(rift_udp *u) {
    if (u->fd >= 0) {
        close(u->fd);
        u->fd = -1;
    }
    while (u->pend_head) {
        rift_udp_pending *p = u->pend_head;
        u->pend_head = p->next;
        rift_free(u->mem, p);
    }
    u->pend_tail = NULL;
    u->pend_bytes = 0;
    rift_free(u->mem, u->txbuf);
    rift_free(u->mem, u->rxbuf);
    u->txbuf = u->rxbuf = NULL;
}

bool rift_udp_blocked(const rift_udp *u) {
    return u->pend_head != NULL;
}

/* ---- Receive ---- */

static void read_cmsgs(const rift_udp *u, struct msghdr *mh, size_t *seg,
                       rift_udp_addr *local) {
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm != NULL;
         cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
            int gs;
            memcpy(&gs, CMSG_DATA(cm), sizeof(gs));
            if (gs > 0) {
                *seg = (size_t)gs;
            }
        } else if (cm->cmsg_level == IPPROTO_IP &&
                   cm->cmsg_type == IP_PKTINFO && u->wildcard) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
            if (u->family == AF_INET) {
                struct sockaddr_in *s4 = (struct sockaddr_in *)&local->ss;
                s4->sin_addr = pi.ipi_addr;
            } else {
                /* IPv4 on a dual-stack socket: the v4-mapped form. */
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&local->ss;
                memset(&s6->sin6_addr, 0, sizeof(s6->sin6_addr));
                s6->sin6_addr.s6_addr[10] = 0xff;
                s6->sin6_addr.s6_addr[11] = 0xff;
                memcpy(&s6->sin6_addr.s6_addr[12], &pi.ipi_addr, 4);
            }
        } else if (cm->cmsg_level == IPPROTO_IPV6 &&
                   cm->cmsg_type == IPV6_PKTINFO && u->wildcard) {
            struct in6_pktinfo pi;
            memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&local->ss;
            s6->sin6_addr = pi.ipi6_addr;
        }
    }
}

int rift_udp_recv_batch(rift_udp *u, rift_udp_recv_cb cb, void *arg) {
    struct mmsghdr mm[RIFT_UDP_RX_BATCH];
    struct iovec iov[RIFT_UDP_RX_BATCH];
    struct sockaddr_storage from[RIFT_UDP_RX_BATCH];
    struct {
        _Alignas(
            struct cmsghdr) char buf[CMSG_SPACE(sizeof(int)) +
                                     CMSG_SPACE(sizeof(struct in6_pktinfo)) +
                                     CMSG_SPACE(sizeof(struct in_pktinfo))];
    } ctl[RIFT_UDP_RX_BATCH];
    for (size_t i = 0; i < RIFT_UDP_RX_BATCH; i++) {
        iov[i].iov_base = u->rxbuf + i * u->rxslot;
        iov[i].iov_len = u->rxslot;
        memset(&mm[i], 0, sizeof(mm[i]));
        mm[i].msg_hdr.msg_name = &from[i];
        mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
        mm[i].msg_hdr.msg_control = ctl[i].buf;
        mm[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
    }
    int n;
    do {
        n = recvmmsg(u->fd, mm, RIFT_UDP_RX_BATCH, MSG_DONTWAIT, NULL);
    } while (n < 0 && errno == EINTR);
    u->stats.rx_calls++;
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        }
        return -errno;
    }
    for (int i = 0; i < n; i++) {
        struct msghdr *mh = &mm[i].msg_hdr;
        if (mh->msg_flags & MSG_TRUNC) {
            continue; /* larger than we accept: not a packet of ours */
        }
        size_t len = mm[i].msg_len, seg = len;
        rift_udp_addr local = u->local, src;
        read_cmsgs(u, mh, &seg, &local);
        rift_udp_addr_set(&src, (struct sockaddr *)&from[i], mh->msg_namelen);
        uint8_t *p = iov[i].iov_base;
        while (len > 0) {
            size_t k = len < seg ? len : seg;
            u->stats.rx_datagrams++;
            cb(arg, &src, &local, p, k);
            p += k;
            len -= k;
        }
    }
    return n;
}

/* ---- Send ---- */

static size_t fill_cmsgs(const rift_udp *u, const txview *v, cmsgbuf *cb,
                         struct msghdr *mh, bool segment) {
    size_t used = 0;
    memset(cb, 0, sizeof(*cb));
    mh->msg_control = cb->buf;
    mh->msg_controllen = sizeof(cb->buf);
    struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
    if (segment) {
        uint16_t s = (uint16_t)v->seg;
        cm->cmsg_level = SOL_UDP;
        cm->cmsg_type = UDP_SEGMENT;
        cm->cmsg_len = CMSG_LEN(sizeof(s));
        memcpy(CMSG_DATA(cm), &s, sizeof(s));
        used += CMSG_SPACE(sizeof(s));
        cm = CMSG_NXTHDR(mh, cm);
    }
    if (v->from != NULL && u->wildcard && cm != NULL) {
        if (v->from->ss.ss_family == AF_INET) {
            struct in_pktinfo pi;
            memset(&pi, 0, sizeof(pi));
            pi.ipi_spec_dst =
                ((const struct sockaddr_in *)&v->from->ss)->sin_addr;
            cm->cmsg_level = IPPROTO_IP;
            cm->cmsg_type = IP_PKTINFO;
            cm->cmsg_len = CMSG_LEN(sizeof(pi));
            memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
            used += CMSG_SPACE(sizeof(pi));
        } else if (v->from->ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *s6 =
                (const struct sockaddr_in6 *)&v->from->ss;
            if (!IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
                struct in6_pktinfo pi;
                memset(&pi, 0, sizeof(pi));
                pi.ipi6_addr = s6->sin6_addr;
                cm->cmsg_level = IPPROTO_IPV6;
                cm->cmsg_type = IPV6_PKTINFO;
                cm->cmsg_len = CMSG_LEN(sizeof(pi));
                memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
                used += CMSG_SPACE(sizeof(pi));
            }
        }
    }
    mh->msg_controllen = used;
    if (used == 0) {
        mh->msg_control = NULL;
    }
    return used;
}

static bool transient(int e) {
    return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS;
}

/* Sends the packets of |v| one by one from byte |*done| on. Returns 0 or
 * RIFT_ERR_AGAIN with |*done| advanced past what went out. */
static int send_plain(rift_udp *u, const txview *v, size_t *done) {
    while (*done < v->len) {
        size_t k = v->len - *done < v->seg ? v->len - *done : v->seg;
        struct iovec iov = {(void *)(v->data + *done), k};
        struct msghdr mh;
        cmsgbuf cb;
        memset(&mh, 0, sizeof(mh));
        mh.msg_name = (void *)&v->to->ss;
        mh.msg_namelen = v->to->len;
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        fill_cmsgs(u, v, &cb, &mh, false);
        ssize_t r;
        if (u->inject_eagain > 0) {
            u->inject_eagain--;
            errno = EAGAIN;
            r = -1;
        } else if (u->inject_mtu > 0 && k > u->inject_mtu) {
            errno = EMSGSIZE;
            r = -1;
        } else {
            do {
                r = sendmsg(u->fd, &mh, 0);
            } while (r < 0 && errno == EINTR);
        }
        u->stats.tx_calls++;
        if (r < 0) {
            if (transient(errno)) {
                u->stats.tx_eagain++;
                return RIFT_ERR_AGAIN;
            }
            u->stats.tx_errors++;
        } else {
            u->stats.tx_datagrams++;
        }
        *done += k;
    }
    return 0;
}

/* Sends |n| views with sendmmsg. Returns the index of the first view that
 * was refused with EAGAIN (with |*partial| bytes of it already sent by the
 * plain fallback), or |n| when everything went out or was dropped. */
/* Fills mm[0..] for the messages of v[0..cnt) that go out as they are;
 * returns how many, stopping at the first that needs splitting (GSO off
 * and several packets in it). */
static inline size_t build_batch(rift_udp *u, const txview *v, size_t cnt,
                                 struct mmsghdr *mm, struct iovec *iov,
                                 cmsgbuf *cb) {
    size_t k;
    for (k = 0; k < cnt; k++) {
        const txview *x = &v[k];
        if (x->len > x->seg && !u->gso) {
            break; /* needs splitting: handled by the caller */
        }
        iov[k].iov_base = (void *)x->data;
        iov[k].iov_len = x->len;
        memset(&mm[k], 0, sizeof(mm[k]));
        mm[k].msg_hdr.msg_name = (void *)&x->to->ss;
        mm[k].msg_hdr.msg_namelen = x->to->len;
        mm[k].msg_hdr.msg_iov = &iov[k];
        mm[k].msg_hdr.msg_iovlen = 1;
        fill_cmsgs(u, x, &cb[k], &mm[k].msg_hdr, x->len > x->seg);
    }
    return k;
}

/* One sendmmsg of the k messages built for v, or the failure a test
 * injects; returns what sendmmsg returns, errno set on -1. */
static inline int send_batch(rift_udp *u, const txview *v, size_t k,
                             struct mmsghdr *mm) {
    int r;
    size_t fit = k;
    for (size_t j = 0; u->inject_mtu > 0 && j < k; j++) {
        if (v[j].seg > u->inject_mtu) {
            fit = j;
            break;
        }
    }
    if (u->inject_eagain > 0) {
        u->inject_eagain--;
        errno = EAGAIN;
        r = -1;
    } else if (fit == 0) {
        errno = v[0].len > v[0].seg ? EINVAL : EMSGSIZE;
        r = -1;
    } else if (u->inject_eio > 0 && v[0].len > v[0].seg) {
        u->inject_eio--;
        errno = EIO;
        r = -1;
    } else {
        do {
            r = sendmmsg(u->fd, mm, (unsigned)fit, 0);
        } while (r < 0 && errno == EINTR);
    }
    u->stats.tx_calls++;
    return r;
}

/* What send_views does after a failed send of x. */
enum {
    TX_STOP,
    TX_NEXT,
    TX_RETRY
};

/* Sends x packet by packet; false when that stopped part-way (*partial
 * says how many bytes went). */
static inline bool send_split(rift_udp *u, const txview *x, size_t *partial) {
    size_t done = 0;
    if (send_plain(u, x, &done) != 0) {
        *partial = done;
        return false;
    }
    return true;
}

/* Decides, from errno, what a failed send of x means for the queue. */
static inline int after_failure(rift_udp *u, const txview *x, size_t *partial) {
    if (transient(errno)) {
        u->stats.tx_eagain++;
        return TX_STOP;
    }
    if ((errno == EMSGSIZE || errno == EINVAL) && x->len > x->seg) {
        /* One segment is larger than the path allows (a path MTU
         * probe, with the packets that followed it into the
         * message): send them one by one so only the probe is lost. */
        return send_split(u, x, partial) ? TX_NEXT : TX_STOP;
    }
    if (errno == EIO && x->len > x->seg && u->gso) {
        /* The path cannot segment (e.g. a device without GSO): plain
         * sends from now on, starting with this message. */
        u->gso = false;
        u->stats.gso_fallbacks++;
        return TX_RETRY;
    }
    /* EMSGSIZE (a PMTUD probe too big), unreachable and friends: the
     * packet is lost; QUIC recovers. */
    u->stats.tx_errors += (x->len + x->seg - 1) / x->seg;
    return TX_NEXT;
}

static size_t send_views(rift_udp *u, const txview *v, size_t n,
                         size_t *partial) {
    struct mmsghdr mm[RIFT_UDP_TX_MSGS];
    struct iovec iov[RIFT_UDP_TX_MSGS];
    cmsgbuf cb[RIFT_UDP_TX_MSGS];
    size_t i = 0;
    *partial = 0;
    while (i < n) {
        size_t cnt = n - i < RIFT_UDP_TX_MSGS ? n - i : RIFT_UDP_TX_MSGS;
        size_t k = build_batch(u, &v[i], cnt, mm, iov, cb);
        if (k == 0) {
            /* GSO is off and this message holds several packets. */
            if (!send_split(u, &v[i], partial)) {
                return i;
            }
            i++;
            continue;
        }
        int r = send_batch(u, &v[i], k, mm);
        if (r > 0) {
            for (int j = 0; j < r; j++) {
                const txview *x = &v[i + (size_t)j];
                u->stats.tx_datagrams += (x->len + x->seg - 1) / x->seg;
            }
            i += (size_t)r;
            continue;
        }
        int next = after_failure(u, &v[i], partial);
        if (next == TX_STOP) {
            return i;
        }
        i += next == TX_NEXT;
    }
    return n;
}

static void pending_push(rift_udp *u, const txview *v, size_t done) {
    if (u->pend_bytes + v->len > PENDING_MAX_BYTES) {
        u->stats.tx_queue_drops += (v->len - done + v->seg - 1) / v->seg;
        return;
    }
    rift_udp_pending *p = rift_malloc(u->mem, sizeof(*p) + v->len);
    if (p == NULL) {
        u->stats.tx_queue_drops += (v->len - done + v->seg - 1) / v->seg;
        return;
    }
    p->next = NULL;
    p->len = v->len;
    p->seg = v->seg;
    p->done = done;
    p->to = *v->to;
    p->has_from = v->from != NULL;
    if (v->from) {
        p->from = *v->from;
    }
    memcpy(p->data, v->data, v->len);
    if (u->pend_tail) {
        u->pend_tail->next = p;
    } else {
        u->pend_head = p;
    }
    u->pend_tail = p;
    u->pend_bytes += v->len;
}

int rift_udp_flush_pending(rift_udp *u) {
    while (u->pend_head) {
        rift_udp_pending *p = u->pend_head;
        txview v = {p->data + p->done, p->len - p->done, p->seg, &p->to,
                    p->has_from ? &p->from : NULL};
        size_t partial;
        if (p->done > 0) {
            /* Resume a half-sent message packet by packet. */
            size_t done = 0;
            int rv = send_plain(u, &v, &done);
            p->done += done;
            if (rv != 0) {
                return RIFT_ERR_AGAIN;
            }
        } else if (send_views(u, &v, 1, &partial) == 0) {
            p->done = partial;
            return RIFT_ERR_AGAIN;
        }
        u->pend_head = p->next;
        if (u->pend_head == NULL) {
            u->pend_tail = NULL;
        }
        u->pend_bytes -= p->len;
        rift_free(u->mem, p);
    }
    return 0;
}

int rift_udp_tx_flush(rift_udp *u) {
    if (u->nmsgs == 0) {
        return rift_udp_blocked(u) ? RIFT_ERR_AGAIN : 0;
    }
    txview v[RIFT_UDP_TX_MSGS];
    for (size_t i = 0; i < u->nmsgs; i++) {
        rift_udp_msg *m = &u->msgs[i];
        v[i].data = u->txbuf + m->off;
        v[i].len = m->len;
        v[i].seg = m->seg;
        v[i].to = &m->to;
        v[i].from = m->from.len ? &m->from : NULL;
    }
    size_t first = 0, partial = 0;
    if (!rift_udp_blocked(u) || rift_udp_flush_pending(u) == 0) {
        first = send_views(u, v, u->nmsgs, &partial);
    }
    for (size_t i = first; i < u->nmsgs; i++) {
        pending_push(u, &v[i], i == first ? partial : 0);
    }
    u->nmsgs = 0;
    u->txused = 0;
    return rift_udp_blocked(u) ? RIFT_ERR_AGAIN : 0;
}

uint8_t *rift_udp_tx_reserve(rift_udp *u, size_t len) {
    if (u->nmsgs == RIFT_UDP_TX_MSGS || u->txused + len > u->txcap) {
        rift_udp_tx_flush(u);
    }
    return u->txbuf + u->txused;
}

static bool same_addr(const rift_udp_addr *a, const struct sockaddr *sa,
                      socklen_t len) {
    return a->len == len && memcmp(&a->ss, sa, len) == 0;
}

void rift_udp_tx_commit(rift_udp *u, const struct sockaddr *to, socklen_t tolen,
                        const struct sockaddr *from, socklen_t fromlen,
                        size_t len) {
    if (!u->wildcard) {
        from = NULL; /* the bound address is the source */
    }
    if (u->nmsgs > 0) {
        rift_udp_msg *m = &u->msgs[u->nmsgs - 1];
        /* Extend the current GSO message when the kernel can segment it:
         * same route, not sealed by a short packet, no bigger than the
         * segment size, within the per-message limits. */
        if (u->gso && !m->sealed && len <= m->seg &&
            m->nseg < RIFT_UDP_GSO_MAX_SEGS &&
            m->len + len <= RIFT_UDP_GSO_MAX_BYTES &&
            m->off + m->len == u->txused && same_addr(&m->to, to, tolen) &&
            (from == NULL ? m->from.len == 0
                          : same_addr(&m->from, from, fromlen))) {
            m->len += len;
            m->nseg++;
            if (len < m->seg) {
                m->sealed = true;
            }
            u->txused += len;
            return;
        }
    }
    rift_udp_msg *m = &u->msgs[u->nmsgs++];
    m->off = u->txused;
    m->len = len;
    m->seg = len;
    m->nseg = 1;
    m->sealed = false;
    rift_udp_addr_set(&m->to, to, tolen);
    if (from) {
        rift_udp_addr_set(&m->from, from, fromlen);
    } else {
        m->from.len = 0;
    }
    u->txused += len;
}
