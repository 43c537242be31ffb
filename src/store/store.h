/*
 * store.h — internal structures of the store layer shared by its files:
 * the stream object, records, segments, consumers, the writer thread's
 * staging area. Public API: include/rift/stream.h. On-disk formats:
 * format.h and docs/storage-format.md.
 *
 * Locking: one mutex per stream (|lock|) guards everything in a stream and
 * its consumers except what the comments mark "writer-owned". Callers hold
 * it for the whole of one operation, which serializes operations on a
 * stream as the reference requires; the writer thread takes it only to
 * swap the staging area and to publish the results of a cycle, and does
 * all file writes and syncs without it.
 */
#ifndef RIFT_STORE_STORE_H
#define RIFT_STORE_STORE_H

#include "rift/stream.h"
#include "common/common.h"
#include "store/buf.h"
#include "store/format.h"
#include "store/vfs.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- Records in memory ---- */

/* An immutable, refcounted record: the cache, fetch results and replay
 * results share it. data holds subject NUL reply NUL payload. */
typedef struct rift_srec {
    atomic_uint refs;
    uint16_t subject_len;
    uint16_t reply_len;
    uint32_t payload_len;
    uint64_t seq;
    uint64_t ts;
    char data[];
} rift_srec;

rift_srec *rift_srec_new(const rift_mem *mem, const char *subject,
                         size_t subject_len, const char *reply,
                         size_t reply_len, const uint8_t *payload,
                         size_t payload_len);
void rift_srec_unref(const rift_mem *mem, rift_srec *r);

static inline rift_srec *rift_srec_ref(rift_srec *r) {
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

static inline const uint8_t *rift_srec_payload(const rift_srec *r) {
    return (const uint8_t *)r->data + r->subject_len + 1 + r->reply_len + 1;
}

/* Builds a batch from |n| records (references taken over) and their
 * delivery counts. 0 or RIFT_ERR_NOMEM (the references are then dropped). */
int rift_batch_build(rift_batch *out, const rift_mem *mem, rift_srec **recs,
                     const uint32_t *counts, size_t n);

/* Index entry of one retained record: 8 bytes, since a big stream has
 * millions (timestamps come from the cache or the record's trailer). For
 * memory streams off is unused. */
typedef struct rift_ent {
    uint32_t off;
    uint32_t len;
} rift_ent;

/* Sequences [from, to) that hold no record and never will: records a
 * repair or a crash lost after consumers or a later segment had seen
 * their sequences. They are skipped, never reused (docs/storage-format.md,
 * "Sequence holes"). */
typedef struct rift_hole {
    uint64_t from;
    uint64_t to;
} rift_hole;

/* ---- Segments ---- */

typedef struct rift_seg {
    uint64_t base;    /* sequence of its first record (its name) */
    uint64_t end;     /* one past its last record */
    uint64_t size;    /* bytes appended, staged ones included */
    uint64_t written; /* writer-owned: bytes handed to the OS */
    uint64_t synced;  /* writer-owned */
    uint64_t flushed; /* under lock: bytes known to be in the OS */
    bool dirty;       /* writer-owned: written but not synced */
    /* -1 until the writer creates the file; set by the writer, read by
     * readers under lock only for flushed records. */
    atomic_int fd;
    char *path;
} rift_seg;

/* ---- Consumers ---- */

typedef struct rift_pend {
    uint64_t seq;
    uint64_t delivered_at;
    uint32_t attempts;
    uint32_t live;
} rift_pend;

struct rift_consumer {
    rift_stream *st;
    uint32_t id;
    uint32_t refs; /* the table's plus one per handle; under lock */
    bool deleted;
    char *name;
    size_t name_len;
    char *filter;
    size_t filter_len;
    uint64_t ack_wait_ms;
    uint32_t max_ack_pending;
    uint8_t start_mode;
    uint64_t start_arg;
    uint64_t start_seq;
    uint64_t next_seq;
    uint64_t created_gen; /* the stage that journaled its creation */
    /* Pending deliveries in ascending sequence; acked entries stay as
     * tombstones (live 0) until they reach the front or outnumber the
     * live ones, so an ack is a binary search and no memmove. */
    rift_ring pending;
    size_t live;
};

/* ---- The writer's staging area ---- */

typedef struct rift_extent {
    rift_seg *seg;
    uint64_t off;
    size_t pos;
    size_t len;
} rift_extent;

typedef struct rift_completion {
    uint64_t ticket;
    rift_stream_done_cb cb;
    void *user_data;
    int status; /* set when it is settled */
} rift_completion;

/* A segment fdatasync handed to a sync helper (pipelined group commit). */
#define RIFT_SYNC_HELPERS 3

typedef struct rift_sync_job {
    uint64_t gen;
    uint64_t last_seq;
    int fd;
    const char *path;
    int state; /* 0 queued, 1 running, 2 done */
    int rc;
    rift_error err;
} rift_sync_job;

typedef struct rift_stage {
    rift_sbuf seg_data;
    rift_ring extents; /* rift_extent, in append order */
    rift_sbuf state_data;
    rift_sbuf snapshot; /* replaces state.log when has_snapshot */
    bool has_snapshot;
    rift_ring dead; /* rift_seg *: unlink after this cycle's writes */
    bool need_sync;
    bool full_sync; /* checkpoint or close: sync even without sync_on_write */
    uint64_t last_seq;
    uint32_t nops; /* mutations waiting for this stage's sync */
} rift_stage;

/* ---- The stream ---- */

typedef enum rift_open_mode {
    RIFT_OPEN_NORMAL = 0,
    RIFT_OPEN_VERIFY = 1, /* read-only scan, no writer */
    RIFT_OPEN_REPAIR = 2, /* truncate at the first bad record */
} rift_open_mode;

struct rift_stream {
    rift_stream_settings cfg;
    char **subjects;
    size_t *subject_lens;
    const rift_mem *mem;
    const rift_vfs *vfs;
    rift_open_mode mode;
    rift_store_report *report;

    pthread_mutex_t lock;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    /* Blocking callers wait, without the stream lock, on the slot of their
     * generation (ticket % 8): a settled generation wakes its own waiters
     * only, and they return without touching the stream lock again. */
    struct {
        pthread_mutex_t mu;
        pthread_cond_t cv;
    } gen_wait[8];
    uint64_t woken_gen;
    atomic_int refs;
    bool closed;
    bool file;

    /* Retained records are [first_seq, last_seq]; empty when first_seq >
     * last_seq. */
    uint64_t first_seq;
    uint64_t last_seq;
    uint64_t bytes;
    rift_ring ents;  /* rift_ent for first_seq.. */
    rift_ring cache; /* rift_srec * for cache_first.. (all, in memory) */
    uint64_t cache_first;
    uint64_t cache_used;
    /* Holes inside the retained range, ascending: from > first_seq and
     * to <= last_seq + 1 (the newest one may end the range: it then ends
     * at the next sequence to publish). Usually empty. |ents| holds the
     * records only, so a sequence's index skips the holes below it. */
    rift_ring holes;
    /* Timestamp of the first retained record when front_ts_seq ==
     * first_seq (age retention reads it once per record, not per call). */
    uint64_t front_ts;
    uint64_t front_ts_seq;

    rift_consumer **cons; /* sorted by name */
    size_t ncons;
    size_t cons_cap;
    uint32_t next_cid;

    /* File storage. */
    char *dir;
    int lock_fd;
    int dir_fd;
    rift_ring segs; /* rift_seg *, ascending */
    bool force_roll;
    int state_fd;         /* writer-owned after open */
    uint64_t state_size;  /* writer-owned: bytes in state.log */
    uint64_t state_bytes; /* under lock: logical size incl. staged */
    uint64_t snapshot_bytes;
    uint64_t marker;              /* FIRST_SEQ last staged */
    rift_stage fill;              /* being filled by callers */
    rift_stage io;                /* writer-owned: the cycle in flight */
    uint64_t fill_gen;            /* ticket of the stage being filled */
    _Atomic uint64_t durable_gen; /* last cycle completed */
    uint64_t written_seq;         /* records up to here are in the OS */
    uint64_t durable_seq;         /* records up to here are durable */
    rift_ring completions;        /* rift_completion, ascending tickets */
    pthread_t writer;
    bool writer_started;
    bool writer_idle;
    /* Under lock: the writer waits for work with nothing in flight (not
     * merely gathering a group), so a caller may write |fill| itself. */
    bool writer_parked;

    bool stopping;
    _Atomic int poison;
    rift_error poison_err;
    _Atomic uint64_t poison_gen;
    atomic_ulong syncs;
    rift_ring wdirty;      /* writer-owned: rift_seg * not yet synced */
    bool state_dirty;      /* writer-owned */
    bool dir_dirty;        /* writer-owned: entries changed, dir not synced */
    rift_ring wfire;       /* writer-owned: completions to run */
    uint32_t last_ops;     /* writer-owned: mutations in the last cycle */
    uint32_t gather_want;  /* under lock: group size the writer waits for */
    bool fill_kicked;      /* under lock: the writer was woken for |fill| */
    uint64_t last_sync_ns; /* under lock: duration of the last sync */
    /* Sync helpers: in-flight segment syncs, oldest first (under lock). */
    rift_sync_job jobs[RIFT_SYNC_HELPERS];
    size_t jhead;
    size_t jlen;
    pthread_t helpers[RIFT_SYNC_HELPERS];
    size_t nhelpers;
    pthread_cond_t job_cv;
    bool helpers_stop;
    /* Recovery only: HOLE events of the state log, and the lowest next
     * sequence the records a repair cut (or deleted) imply. */
    rift_ring logged_holes;
    uint64_t repair_floor;
    /* Reopening after a failed write (reopen.c). Under lock. */
    bool cutting;       /* recovery drops records past cut_after */
    uint64_t cut_after; /* the last acknowledged record */
    bool rolled_back;   /* the state is the disk's again since the failure */
    bool reviving;      /* a reopen is running (the writer is stopped) */
    bool space_failure; /* the failure was ENOSPC or EDQUOT */
    uint64_t retry_at;  /* wall ms: the next automatic retry */
    uint64_t backoff_ms;
    uint64_t state_good; /* state.log bytes of acknowledged generations */
    int fail_rc;         /* the last failure's code, kept after a reopen */
    atomic_int io_errno; /* -errno of the last failed file operation */
    /* Generations [failed_from, failed_to) failed before a reopen; a
     * waiter that wakes late must not take them for durable ones. */
    _Atomic uint64_t failed_from;
    _Atomic uint64_t failed_to;
    /* Retained records found corrupt when read back, ascending: fetch
     * and replay skip them (each is logged once). */
    rift_ring bad;
    /* The record whose read error was logged last (logged once, not per
     * retry). */
    uint64_t read_error_seq;
    /* Read-ahead for records no longer cached. */
    rift_sbuf rbuf;
    rift_seg *rseg;
    uint64_t roff;
};

/* ---- stream.c ---- */

uint64_t rift_stream_now(const rift_stream *st);
/* |seq|, or the end of the hole holding it. */
uint64_t rift_stream_past_hole(const rift_stream *st, uint64_t seq);
/* The sequence of the newest retained record, 0 when there is none. */
uint64_t rift_stream_newest(const rift_stream *st);
/* Drops the first retained record from the index (not the cache). */
void rift_stream_pop_front(rift_stream *st);
/* Moves first_seq past the holes it reached, and drops them. */
void rift_stream_skip_holes(rift_stream *st);
/* Appends the hole [from, to) (above every record). 0 or NOMEM. */
int rift_stream_add_hole(rift_stream *st, uint64_t from, uint64_t to);
/* Evicts by count, bytes and age; raises consumers. Under lock. */
void rift_stream_retain(rift_stream *st, uint64_t now);
/* The timestamp of retained record |seq| (cache or trailer); false when
 * it cannot be read. */
bool rift_stream_ts(rift_stream *st, uint64_t seq, uint64_t *ts);
/* rift_stream_load's answer for a record that is corrupt on disk (it is
 * logged once and callers skip it); errors are negative. */
#define RIFT_LOAD_CORRUPT 1
/* Loads the record |seq| (retained): 0 with a new reference,
 * RIFT_LOAD_CORRUPT, or an error. Texts name the sequence, never a path. */
int rift_stream_load(rift_stream *st, uint64_t seq, rift_srec **out,
                     rift_error *err);
/* Drops cached records already in the OS beyond the cache budget. */
void rift_stream_cache_trim(rift_stream *st);
/* Frees a segment object (not the file). */
void rift_seg_free(rift_stream *st, rift_seg *s);
/* Fails with the stream's closed or poisoned error, else 0. */
int rift_stream_check_usable(rift_stream *st, rift_error *err);
void rift_stream_unref(rift_stream *st);
/* Opens in |mode| (verify and repair use the recovery alone). */
int rift_stream_new_mode(rift_stream **pstream,
                         const rift_stream_settings *settings,
                         rift_open_mode mode, rift_store_report *report,
                         rift_error *err);

/* ---- consumer.c ---- */

bool rift_consumer_name_valid(const char *name, size_t len);
rift_consumer *rift_consumer_find(rift_stream *st, const char *name,
                                  size_t len);
rift_consumer *rift_consumer_by_id(rift_stream *st, uint32_t id);
/* Allocates a consumer (refs 1, the table's) and inserts it. */
int rift_consumer_insert(rift_stream *st, rift_consumer *c);
rift_consumer *rift_consumer_alloc(rift_stream *st, const char *name,
                                   size_t name_len, const char *filter,
                                   size_t filter_len);
void rift_consumer_remove(rift_stream *st, rift_consumer *c);
void rift_consumer_unref_locked(rift_consumer *c);
/* Pending-set operations. */
rift_pend *rift_pend_find(rift_consumer *c, uint64_t seq);
int rift_pend_upsert(rift_consumer *c, uint64_t seq, uint64_t delivered_at,
                     uint32_t attempts);
void rift_pend_drop(rift_consumer *c, rift_pend *p);
void rift_pend_trim_below(rift_consumer *c, uint64_t first);
void rift_pend_trim_above(rift_consumer *c, uint64_t last);
/* Drops the pending entries in [from, to). */
void rift_pend_drop_range(rift_consumer *c, uint64_t from, uint64_t to);
/* Appends a full CONSUMER event for |c| to |b|. */
int rift_consumer_encode(const rift_consumer *c, rift_sbuf *b);
/* Applies one state event (recovery). 0, or -1 with *|why|. */
int rift_consumer_apply_event(rift_stream *st, const uint8_t *body, size_t len,
                              const char **why);

/* ---- writer.c ---- */

void rift_stage_init(rift_stage *s, const rift_mem *mem);
void rift_stage_free(rift_stage *s);
bool rift_stage_empty(const rift_stage *s);
int rift_writer_start(rift_stream *st, rift_error *err);
/* Drains and stops the writer (close). */
void rift_writer_stop(rift_stream *st);
/* Wakes the writer after staging. Under lock. */
void rift_writer_kick(rift_stream *st);
/* Stages |len| record bytes in the active segment (rolling when full) and
 * returns where to write them, with the segment offset in *|off|. */
uint8_t *rift_writer_stage_record(rift_stream *st, size_t len, uint32_t *off,
                                  rift_error *err);
/* The state buffer of the stage being filled, after a snapshot check. */
rift_sbuf *rift_writer_state_buf(rift_stream *st);
/* Ends a staged state event: accounts its size, maybe snapshots. */
void rift_writer_state_done(rift_stream *st, size_t before);
/* Replaces the staged state with a full snapshot. Under lock. */
int rift_writer_snapshot(rift_stream *st);
/* Moves segments that retention emptied to the dead list. Under lock. */
void rift_writer_drop_segments(rift_stream *st);
/*
 * Finishes a mutation under lock: an async call registers |cb|; a
 * blocking one gets in *|wait| the generation to wait for with
 * rift_writer_wait once it has released the lock (0: nothing to wait
 * for). Returns 0 / RIFT_STREAM_DONE / error.
 */
int rift_writer_commit(rift_stream *st, bool staged, rift_stream_done_cb cb,
                       void *user_data, bool blocking, uint64_t *wait,
                       rift_error *err);
/* As rift_writer_commit for an already staged generation |ticket|. */
int rift_writer_commit_ticket(rift_stream *st, uint64_t ticket,
                              rift_stream_done_cb cb, void *user_data,
                              bool blocking, uint64_t *wait, rift_error *err);
/* Waits, without the stream lock, until generation |ticket| is
 * acknowledged (synced, or for an unsynced stream written): 0 or the
 * poison error. 0 for |ticket| 0. */
int rift_writer_wait(rift_stream *st, uint64_t ticket, rift_error *err);
/* Makes room for one completion so registering one cannot fail later. */
int rift_writer_reserve(rift_stream *st, rift_error *err);
/* True on the writer thread of |st| (blocking calls are refused). */
bool rift_writer_is_self(const rift_stream *st);
/* The poison error for later operations. */
int rift_writer_poisoned(rift_stream *st, rift_error *err);

/* ---- reopen.c ---- */

/* At the start of a public operation (not on the writer thread, without
 * the lock): after a failed write, gives the stream its on-disk state back
 * (once per failure), and after a lack of space lets writes be tried again
 * once the back-off has passed. */
void rift_stream_revive_if_due(rift_stream *st);

/* ---- recover.c ---- */

/* Recovers the directory into |st| (file storage). */
int rift_recover(rift_stream *st, rift_error *err);
/* rift_store_verify (VERIFY) or one repair pass (REPAIR) through |vfs|
 * (NULL = POSIX). */
int rift_store_offline(const char *path, rift_store_report *report,
                       rift_open_mode mode, const rift_vfs *vfs,
                       rift_error *err);

#endif /* RIFT_STORE_STORE_H */
