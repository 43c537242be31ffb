/*
 * test_udp.c — unit tests of the UDP fast path (quic layer): GSO batching
 * by the equal-size rule, order and sizes at the receiver, the EAGAIN
 * queue (nothing dropped, order kept), the EIO fallback to plain sends and
 * an oversized path MTU probe sharing a GSO message with normal packets,
 * using the socket's fault injection.
 */
#include "common/common.h"
#include "quic/udp.h"
#include "test.h"

#include <arpa/inet.h>

typedef struct rx_log {
    size_t n;
    size_t len[64];
    uint8_t first[64];
} rx_log;

static void on_rx(void *arg, const rift_udp_addr *from,
                  const rift_udp_addr *local, uint8_t *data, size_t len) {
    (void)from;
    (void)local;
    rx_log *l = arg;
    if (l->n < 64) {
        l->len[l->n] = len;
        l->first[l->n] = data[0];
        l->n++;
    }
}

static int open_pair(rift_udp *tx, rift_udp *rx, bool gso) {
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    rift_udp_settings s = {gso, false, false};
    rift_error err;
    int rv = rift_udp_open(rx, (struct sockaddr *)&sa, sizeof(sa), NULL, 0, &s,
                           NULL, &err);
    if (rv == 0) {
        rv = rift_udp_open(tx, (struct sockaddr *)&sa, sizeof(sa), NULL, 0, &s,
                           NULL, &err);
    }
    return rv;
}

/* Queues |n| packets of |sizes| to |rx|, first byte = index. */
static void queue(rift_udp *tx, rift_udp *rx, const size_t *sizes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = rift_udp_tx_reserve(tx, sizes[i]);
        memset(p, (int)i, sizes[i]);
        rift_udp_tx_commit(tx, (struct sockaddr *)&rx->local.ss, rx->local.len,
                           NULL, 0, sizes[i]);
    }
}

static void drain(rift_udp *rx, rx_log *log, size_t want) {
    for (int i = 0; i < 1000 && log->n < want; i++) {
        rift_udp_recv_batch(rx, on_rx, log);
    }
}

RIFT_TEST(gso_batches_follow_the_equal_size_rule) {
    rift_udp tx, rx;
    CHECK_OK(open_pair(&tx, &rx, true));
    /* 3×1000 then 500 (seals), then 1200 (bigger: new message), 1200. */
    size_t sizes[] = {1000, 1000, 1000, 500, 1200, 1200};
    queue(&tx, &rx, sizes, 6);
    CHECK_EQ_INT(tx.nmsgs, 2);
    CHECK_EQ_INT(tx.msgs[0].nseg, 4);
    CHECK_EQ_INT(tx.msgs[1].nseg, 2);
    CHECK_OK(rift_udp_tx_flush(&tx));
    rx_log log = {0};
    drain(&rx, &log, 6);
    CHECK_EQ_INT(log.n, 6);
    for (size_t i = 0; i < 6; i++) {
        CHECK_EQ_INT(log.len[i], sizes[i]);
        CHECK_EQ_INT(log.first[i], i);
    }
    rift_udp_close(&tx);
    rift_udp_close(&rx);
}

RIFT_TEST(eagain_queues_in_order_and_drops_nothing) {
    rift_udp tx, rx;
    CHECK_OK(open_pair(&tx, &rx, true));
    size_t sizes[] = {800, 800, 300, 900, 900};
    queue(&tx, &rx, sizes, 5);
    tx.inject_eagain = 1;
    CHECK_EQ_INT(rift_udp_tx_flush(&tx), RIFT_ERR_AGAIN);
    CHECK(rift_udp_blocked(&tx));
    /* New packets while blocked go behind the queued ones. */
    size_t more[] = {700};
    queue(&tx, &rx, more, 1);
    tx.inject_eagain = 1;
    CHECK_EQ_INT(rift_udp_tx_flush(&tx), RIFT_ERR_AGAIN);
    CHECK_OK(rift_udp_flush_pending(&tx));
    CHECK(!rift_udp_blocked(&tx));
    rx_log log = {0};
    drain(&rx, &log, 6);
    CHECK_EQ_INT(log.n, 6);
    size_t want[] = {800, 800, 300, 900, 900, 700};
    uint8_t first[] = {0, 1, 2, 3, 4, 0};
    for (size_t i = 0; i < 6; i++) {
        CHECK_EQ_INT(log.len[i], want[i]);
        CHECK_EQ_INT(log.first[i], first[i]);
    }
    CHECK(tx.stats.tx_eagain >= 2);
    CHECK_EQ_U64(tx.stats.tx_queue_drops, 0);
    rift_udp_close(&tx);
    rift_udp_close(&rx);
}

RIFT_TEST(gso_eio_falls_back_to_plain_sends) {
    rift_udp tx, rx;
    CHECK_OK(open_pair(&tx, &rx, true));
    size_t sizes[] = {1000, 1000, 1000};
    queue(&tx, &rx, sizes, 3);
    tx.inject_eio = 1;
    CHECK_OK(rift_udp_tx_flush(&tx));
    CHECK(!tx.gso);
    CHECK_EQ_U64(tx.stats.gso_fallbacks, 1);
    /* Later packets are no longer merged. */
    queue(&tx, &rx, sizes, 3);
    CHECK_EQ_INT(tx.nmsgs, 3);
    CHECK_OK(rift_udp_tx_flush(&tx));
    rx_log log = {0};
    drain(&rx, &log, 6);
    CHECK_EQ_INT(log.n, 6);
    rift_udp_close(&tx);
    rift_udp_close(&rx);
}

RIFT_TEST(oversized_probe_in_a_gso_message_loses_only_itself) {
    rift_udp tx, rx;
    CHECK_OK(open_pair(&tx, &rx, true));
    /* A path MTU probe larger than the path, then a normal packet that
     * joins its GSO message (smaller: it seals it), then another message:
     * only the probe may be lost, and GSO stays on. */
    size_t sizes[] = {3000, 1000, 1200};
    queue(&tx, &rx, sizes, 3);
    CHECK_EQ_INT(tx.nmsgs, 2);
    tx.inject_mtu = 1500;
    CHECK_OK(rift_udp_tx_flush(&tx));
    CHECK(tx.gso);
    CHECK_EQ_U64(tx.stats.tx_errors, 1);
    rx_log log = {0};
    drain(&rx, &log, 2);
    CHECK_EQ_INT(log.n, 2);
    CHECK_EQ_INT(log.len[0], 1000);
    CHECK_EQ_INT(log.first[0], 1);
    CHECK_EQ_INT(log.len[1], 1200);
    CHECK_EQ_INT(log.first[1], 2);
    rift_udp_close(&tx);
    rift_udp_close(&rx);
}
