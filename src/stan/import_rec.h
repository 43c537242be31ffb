/*
 * import_rec.h — reading a nats-streaming-server file store (stan layer,
 * used by import.c): the record framing of its .dat files and the few
 * protobuf messages they hold. docs/streaming.md ("Importing from
 * nats-streaming-server") describes the format in prose.
 *
 * Every file starts with a u32 file version (1). Records follow, back to
 * back: u32 header, u32 CRC-32 (IEEE) of the payload, payload. In typed
 * files (subs.dat, clients.dat) the header's top byte is the record type
 * and the low 24 bits the payload size; in untyped files (server.dat,
 * msgs.N.dat) the whole u32 is the size. All integers are little-endian.
 * An all-zero header (size, type and CRC 0) is where the original stopped
 * writing (it truncates the file there on recovery): the reader treats it
 * as the end of the file.
 *
 * The reader streams: it holds one record at a time, in a buffer that
 * grows to the largest record seen, never beyond the caller's limit.
 * Errors name the file and the byte offset of the record.
 */
#ifndef RIFT_STAN_IMPORT_REC_H
#define RIFT_STAN_IMPORT_REC_H

#include "common/common.h"

#include <stdio.h>

#define STAN_IMP_FILE_VERSION 1
#define STAN_IMP_REC_HEADER   8
/* A .idx record: u64 seq, u64 offset, i64 timestamp, u32 size, u32 crc. */
#define STAN_IMP_IDX_REC 32

/* Record types of subs.dat. */
enum {
    STAN_IMP_SUB_NEW = 1,
    STAN_IMP_SUB_UPDATE = 2,
    STAN_IMP_SUB_DEL = 3,
    STAN_IMP_SUB_ACK = 4,
    STAN_IMP_SUB_MSG = 5,
};
/* Record types of clients.dat. */
enum {
    STAN_IMP_CLIENT_ADD = 1,
    STAN_IMP_CLIENT_DEL = 2,
};

/* CRC-32 with the IEEE polynomial (reflected 0xEDB88320), the original's
 * default (its -crc_poly option can change it; that is not supported). */
uint32_t stan_imp_crc32(uint32_t crc, const uint8_t *p, size_t len);

typedef struct stan_imp_reader {
    FILE *f;
    const char *path; /* for error texts; borrowed */
    bool typed;
    size_t max;   /* largest payload accepted */
    uint64_t off; /* offset of the next record */
    uint64_t at;  /* offset of the record last returned */
    uint8_t *buf;
    size_t cap;
    const rift_mem *mem;
} stan_imp_reader;

/*
 * stan_imp_reader_init starts reading |f| (positioned at its start; the
 * caller keeps ownership): checks the file version. |path| names the file
 * in errors. 0 or RIFT_ERR_STORAGE / RIFT_ERR_IO.
 */
int stan_imp_reader_init(stan_imp_reader *r, FILE *f, const char *path,
                         bool typed, size_t max, const rift_mem *mem,
                         rift_error *err);
/*
 * stan_imp_reader_next reads the next record: returns 1 with *|type| (0 for
 * untyped files), *|p| and *|len| (valid until the next call), 0 at the end
 * of the file, or a negative error: RIFT_ERR_STORAGE ("<path>: offset <n>:
 * ..." for a size above the limit, a CRC mismatch, a record cut short by
 * the end of the file), RIFT_ERR_IO, RIFT_ERR_NOMEM.
 */
int stan_imp_reader_next(stan_imp_reader *r, uint8_t *type, const uint8_t **p,
                         size_t *len, rift_error *err);
/* stan_imp_reader_more is the loop form of stan_imp_reader_next: true with
 * a record while *|rc| is 0; false at the end or on an error, which it
 * leaves in *|rc|. An *|rc| set by the loop body ends the loop too. */
bool stan_imp_reader_more(stan_imp_reader *r, uint8_t *type, const uint8_t **p,
                          size_t *len, int *rc, rift_error *err);
void stan_imp_reader_free(stan_imp_reader *r);

/* ---- The protobuf messages (spb/protocol.proto of the original) ---- */

typedef struct stan_imp_str {
    const char *p;
    size_t len;
} stan_imp_str;

/* SubState: 1 ID, 2 clientID, 3 qGroup, 4 inbox, 5 ackInbox, 6
 * maxInFlight, 7 ackWaitInSecs, 8 durableName, 9 lastSent, 10 isDurable,
 * 11 isClosed. */
typedef struct stan_imp_sub_state {
    uint64_t id;
    stan_imp_str client_id, q_group, inbox, ack_inbox, durable_name;
    int32_t max_in_flight, ack_wait_secs;
    uint64_t last_sent;
    bool is_durable, is_closed;
} stan_imp_sub_state;

/* SubStateUpdate (1 ID, 2 seqno) and SubStateDelete (1 ID). */
typedef struct stan_imp_sub_update {
    uint64_t id, seqno;
} stan_imp_sub_update;

/* Decoders: 0, or -1 with a static reason in *|why|. Strings point into
 * the input. */
int stan_imp_decode_sub_state(const uint8_t *p, size_t len,
                              stan_imp_sub_state *out, const char **why);
int stan_imp_decode_sub_update(const uint8_t *p, size_t len,
                               stan_imp_sub_update *out, const char **why);
/* Field |field| of a message made of strings (ServerInfo's ClusterID is 1,
 * ClientInfo's and ClientDelete's ID is 1); absent = empty. */
int stan_imp_decode_str_field(const uint8_t *p, size_t len, uint32_t field,
                              stan_imp_str *out, const char **why);

#endif /* RIFT_STAN_IMPORT_REC_H */
