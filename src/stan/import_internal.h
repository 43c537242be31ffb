/*
 * import_internal.h — the parts of `rift stan import` (stan layer, private
 * to the import_*.c files): the subscription table built from a channel's
 * subs.dat (import_subs.c) and the writer of one rift stream directory
 * (import_out.c). import.c drives them; import.h is the entry point.
 */
#ifndef RIFT_STAN_IMPORT_INTERNAL_H
#define RIFT_STAN_IMPORT_INTERNAL_H

#include "common/buf.h"
#include "stan/import_rec.h"

/* rift consumers hold at most this many unacknowledged deliveries (the
 * store's limit, and the max_ack_pending the STAN service gives its
 * consumers): a durable with more cannot be represented. */
#define STAN_IMP_MAX_PENDING 65536u
/* Live subscriptions tracked per channel while reading subs.dat. */
#define STAN_IMP_MAX_SUBS 100000u

/* A set of sequences (open addressing; 0 is never a sequence). */
typedef struct stan_imp_seqset {
    uint64_t *slot;
    size_t cap, n;
} stan_imp_seqset;

typedef struct stan_imp_sub {
    uint64_t id;
    char *client_id, *q_group, *durable;
    int32_t ack_wait_secs;
    uint64_t last_sent;
    bool is_durable;
    stan_imp_seqset pending;
} stan_imp_sub;

/* The live subscriptions of one channel, sorted by id. */
typedef struct stan_imp_subs {
    stan_imp_sub *v;
    size_t n, cap;
    uint64_t records;
    const rift_mem *mem;
} stan_imp_subs;

/* Replays |path| (absent = no subscriptions) into |t|. Errors name the file
 * and offset: RIFT_ERR_STORAGE, RIFT_ERR_IO, RIFT_ERR_NOMEM, RIFT_ERR_LIMIT
 * (more than STAN_IMP_MAX_SUBS live subscriptions or STAN_IMP_MAX_PENDING
 * pending sequences on one). */
int stan_imp_subs_load(stan_imp_subs *t, const char *path, const rift_mem *mem,
                       rift_error *err);
/* The same from an open file (the fuzz target reads from memory). */
int stan_imp_subs_read(stan_imp_subs *t, FILE *f, const char *path,
                       const rift_mem *mem, rift_error *err);
void stan_imp_subs_free(stan_imp_subs *t);
/* The pending sequences of |s|, ascending, into |out| (STAN_IMP_MAX_PENDING
 * entries); returns the count. */
size_t stan_imp_sub_pending_sorted(const stan_imp_sub *s, uint64_t *out);

/* ---- The rift stream directory being written ---- */

typedef struct stan_imp_out {
    char *dir;
    FILE *seg, *state;
    uint64_t seg_bytes; /* bytes in the open segment */
    uint64_t next_seq;  /* the sequence the next record must have */
    uint64_t first_seq; /* of the first record (0 before it) */
    uint64_t records, holes;
    uint32_t next_cid;
    rift_sbuf rec, ev;
    const rift_mem *mem;
} stan_imp_out;

/* Creates the directory |dir| (which must not exist) with an empty state
 * log. */
int stan_imp_out_open(stan_imp_out *o, const char *dir, const rift_mem *mem,
                      rift_error *err);
/* Appends a record. A |seq| above the next expected one starts a new
 * segment after a logged hole (the original's sequences are kept);
 * one below it is RIFT_ERR_STORAGE. */
int stan_imp_out_record(stan_imp_out *o, uint64_t seq, uint64_t ts_ms,
                        const char *subject, size_t subject_len,
                        const char *reply, size_t reply_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_error *err);
/* Adds a durable consumer with cursor |next_seq| and |n| pending
 * deliveries (ascending), delivered at |now_ms|. */
int stan_imp_out_consumer(stan_imp_out *o, const char *name,
                          uint64_t ack_wait_ms, uint64_t next_seq,
                          const uint64_t *pending, size_t n, uint64_t now_ms,
                          rift_error *err);
/* Syncs and closes everything; 0 or RIFT_ERR_IO. */
int stan_imp_out_finish(stan_imp_out *o, rift_error *err);
/* Frees (after finish, or to abandon). */
void stan_imp_out_free(stan_imp_out *o);

/* ---- One channel (import_channel.c) ---- */

typedef struct rift_stan_import_stats {
    uint64_t messages, first_seq, last_seq, holes, dropped_pending;
    size_t consumers, skipped_subs;
} rift_stan_import_stats;

/* Imports the channel directory |src_dir| of the original into the new
 * stream directory |tmp_dir| (which must not exist). */
int stan_imp_channel(const char *src_dir, const char *tmp_dir,
                     const char *channel, const rift_mem *mem,
                     rift_stan_import_stats *st, rift_error *err);

#endif /* RIFT_STAN_IMPORT_INTERNAL_H */
