/*
 * stanfs_fixture.c — the nats-streaming-server file store writer of the
 * import tests (test support; see stanfs_fixture.h).
 */
#include "stanfs_fixture.h"

#include <string.h>
#include <sys/stat.h>

uint32_t stanfs_crc32(const uint8_t *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
        }
    }
    return ~c;
}

static void put_u32(FILE *f, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                    (uint8_t)(v >> 24)};
    fwrite(b, 1, 4, f);
}

FILE *stanfs_open(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        put_u32(f, 1);
    }
    return f;
}

void stanfs_record(FILE *f, uint8_t type, const uint8_t *p, size_t len) {
    put_u32(f, type ? (uint32_t)type << 24 | (uint32_t)len : (uint32_t)len);
    put_u32(f, stanfs_crc32(p, len));
    fwrite(p, 1, len, f);
}

static size_t varint(uint8_t *out, size_t n, uint64_t v) {
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t stanfs_pb_varint(uint8_t *out, size_t n, uint32_t field, uint64_t v) {
    n = varint(out, n, (uint64_t)field << 3);
    return varint(out, n, v);
}

size_t stanfs_pb_str(uint8_t *out, size_t n, uint32_t field, const char *s) {
    size_t l = strlen(s);
    n = varint(out, n, (uint64_t)field << 3 | 2);
    n = varint(out, n, l);
    memcpy(out + n, s, l);
    return n + l;
}

size_t stanfs_msg(uint8_t *out, uint64_t seq, const char *subject,
                  const char *data, int64_t ts_ns) {
    /* MsgProto: 1 sequence, 2 subject, 4 data, 5 timestamp. */
    size_t n = stanfs_pb_varint(out, 0, 1, seq);
    n = stanfs_pb_str(out, n, 2, subject);
    n = stanfs_pb_str(out, n, 4, data);
    return stanfs_pb_varint(out, n, 5, (uint64_t)ts_ns);
}

size_t stanfs_sub_state(uint8_t *out, uint64_t id, const char *client,
                        const char *qgroup, const char *durable,
                        uint64_t last_sent, bool is_durable,
                        int32_t ack_wait_secs) {
    size_t n = stanfs_pb_varint(out, 0, 1, id);
    n = stanfs_pb_str(out, n, 2, client);
    if (qgroup[0]) {
        n = stanfs_pb_str(out, n, 3, qgroup);
    }
    n = stanfs_pb_str(out, n, 4, "_INBOX.x");
    n = stanfs_pb_str(out, n, 5, "_STAN.ack.x");
    n = stanfs_pb_varint(out, n, 6, 1024);
    n = stanfs_pb_varint(out, n, 7, (uint64_t)ack_wait_secs);
    if (durable[0]) {
        n = stanfs_pb_str(out, n, 8, durable);
    }
    n = stanfs_pb_varint(out, n, 9, last_sent);
    return stanfs_pb_varint(out, n, 10, is_durable);
}

size_t stanfs_sub_update(uint8_t *out, uint64_t id, uint64_t seq) {
    size_t n = stanfs_pb_varint(out, 0, 1, id);
    return stanfs_pb_varint(out, n, 2, seq);
}

static void msgs(const char *dir, const char *name, const char *channel,
                 uint64_t from, uint64_t to) {
    FILE *f = stanfs_open(dir, name);
    uint8_t b[256];
    for (uint64_t s = from; s <= to; s++) {
        char d[32];
        snprintf(d, sizeof d, "m%llu", (unsigned long long)s);
        stanfs_record(f, 0, b, stanfs_msg(b, s, channel, d, STANFS_TS_NS(s)));
    }
    fclose(f);
}

static void sub_rec(FILE *f, uint8_t type, uint64_t id, uint64_t seq) {
    uint8_t b[64];
    stanfs_record(f, type, b, stanfs_sub_update(b, id, seq));
}

int stanfs_write_standard(const char *dir) {
    char p[4096];
    uint8_t b[512];
    mkdir(dir, 0700);
    FILE *f = stanfs_open(dir, "server.dat");
    size_t n = stanfs_pb_str(b, 0, 1, "test-cluster");
    n = stanfs_pb_str(b, n, 2, "_STAN.discover");
    stanfs_record(f, 0, b, n);
    fclose(f);

    f = stanfs_open(dir, "clients.dat");
    stanfs_record(f, 1, b, stanfs_pb_str(b, 0, 1, "c1"));
    stanfs_record(f, 1, b, stanfs_pb_str(b, 0, 1, "c2"));
    stanfs_record(f, 2, b, stanfs_pb_str(b, 0, 1, "c2"));
    fclose(f);

    snprintf(p, sizeof p, "%s/imp:x", dir);
    mkdir(p, 0700);
    msgs(p, "msgs.1.dat", "imp:x", 5, 9);
    msgs(p, "msgs.2.dat", "imp:x", 10, 14);
    f = stanfs_open(p, "subs.dat");
    /* The durable: sent 5..8, 7 left unacked, then closed. */
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 1, "c1", "", "dur@1", 0, true, 30));
    for (uint64_t s = 5; s <= 8; s++) {
        sub_rec(f, 5, 1, s);
    }
    sub_rec(f, 4, 1, 5);
    sub_rec(f, 4, 1, 6);
    sub_rec(f, 4, 1, 8);
    /* A plain subscription: not imported. */
    stanfs_record(f, 1, b, stanfs_sub_state(b, 2, "c1", "", "", 0, false, 30));
    sub_rec(f, 5, 2, 5);
    /* A durable queue group of two members. */
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 3, "c1", "qd:grp", "", 0, true, 30));
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 4, "c2", "qd:grp", "", 0, true, 30));
    sub_rec(f, 5, 3, 5);
    sub_rec(f, 4, 3, 5);
    sub_rec(f, 5, 4, 6);
    sub_rec(f, 4, 4, 6);
    sub_rec(f, 5, 4, 7);
    /* A durable created and unsubscribed. */
    stanfs_record(f, 1, b,
                  stanfs_sub_state(b, 5, "c1", "", "gone", 0, true, 30));
    sub_rec(f, 3, 5, 0);
    /* The durable's close: an update that keeps its pending set. */
    n = stanfs_sub_state(b, 1, "c1", "", "dur@1", 8, true, 30);
    n = stanfs_pb_varint(b, n, 11, 1);
    stanfs_record(f, 2, b, n);
    fclose(f);

    snprintf(p, sizeof p, "%s/plain", dir);
    mkdir(p, 0700);
    msgs(p, "msgs.1.dat", "plain", 1, 3);
    return 0;
}
