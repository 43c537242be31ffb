/*
 * stanfs_fixture.h — writes a small nats-streaming-server file store for
 * the import tests (test support). The original server is not packaged,
 * so the files are written from the format as read in its source
 * (stores/filestore.go, spb/protocol.proto; docs/streaming.md "Importing
 * from nats-streaming-server"), with an independent bitwise CRC-32 rather
 * than the importer's table.
 */
#ifndef RIFT_TESTS_STANFS_FIXTURE_H
#define RIFT_TESTS_STANFS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

uint32_t stanfs_crc32(const uint8_t *p, size_t len);

/* Opens |dir|/|name| for writing and writes the file version (1). */
FILE *stanfs_open(const char *dir, const char *name);
/* Appends a record: typed (type << 24 | size) when |type| != 0. */
void stanfs_record(FILE *f, uint8_t type, const uint8_t *p, size_t len);

/* Protobuf builders: append to |out|, return the new length. */
size_t stanfs_pb_varint(uint8_t *out, size_t n, uint32_t field, uint64_t v);
size_t stanfs_pb_str(uint8_t *out, size_t n, uint32_t field, const char *s);

size_t stanfs_msg(uint8_t *out, uint64_t seq, const char *subject,
                  const char *data, int64_t ts_ns);
size_t stanfs_sub_state(uint8_t *out, uint64_t id, const char *client,
                        const char *qgroup, const char *durable,
                        uint64_t last_sent, bool is_durable,
                        int32_t ack_wait_secs);
size_t stanfs_sub_update(uint8_t *out, uint64_t id, uint64_t seq);

/* Timestamp of message |seq| in the standard store. */
#define STANFS_TS_NS(seq) (1700000000000000000LL + (int64_t)(seq)*1000000LL)

/*
 * stanfs_write_standard writes the standard store under |dir| (created):
 * cluster "test-cluster"; clients c1, c2 added and c2 deleted; channel
 * "imp:x" with sequences 5..9 in msgs.1.dat and 10..14 in msgs.2.dat
 * (data "m<seq>") and subs.dat: durable "dur@1" of c1 (sent up to 8, 7
 * unacked, closed by an update), a plain subscription, a durable queue
 * group "qd:grp" of two members (sent up to 7, 7 unacked) and a deleted
 * durable; channel "plain" with 1..3 and no subs.dat. Returns 0.
 */
int stanfs_write_standard(const char *dir);

#endif /* RIFT_TESTS_STANFS_FIXTURE_H */
