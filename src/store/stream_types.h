/*
 * stream_types.h — the data of a stream and its parts (store layer): the
 * retained index, segments, consumers and their pending sets, the writer's
 * staging area, and struct rift_stream itself. Types only: each file of
 * the store that acts on them declares its functions in a header of its
 * own (docs/internals.md lists the order, bottom-up). Public API:
 * include/rift/stream.h. On-disk formats: format.h and
 * docs/storage-format.md.
 *
 * Locking: one mutex per stream (|lock|) guards everything in a stream and
 * its consumers except what the comments mark "writer-owned". Callers hold
 * it for the whole of one operation, which serializes operations on a
 * stream as the reference requires; the writer thread takes it only to
 * swap the staging area and to publish the results of a cycle, and does
 * all file writes and syncs without it.
 */
#ifndef RIFT_STORE_STREAM_TYPES_H
#define RIFT_STORE_STREAM_TYPES_H

#include "rift/stream.h"
#include "common/common.h"
#include "common/buf.h"
#include "store/format.h"
#include "store/vfs.h"
#include <pthread.h>
#include <stdatomic.h>

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

/* The longest consumer label (rift_consumer_set_label cuts longer ones;
 * an advisory carries it, RIFT_EV_CONSUMER_LABEL stores it). */
#define RIFT_ADVISORY_LABEL_MAX 256u

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
    /* Extension (consumer_settle.c): the most deliveries of a record (0 =
     * unlimited); the deliveries ended by TERM and the records dropped
     * after max_deliver, both journaled (RIFT_EV_CONSUMER_LIMITS,
     * RIFT_EV_TERM); the label (owned; journaled as
     * RIFT_EV_CONSUMER_LABEL on file streams). */
    uint32_t max_deliver;
    uint64_t terminated;
    uint64_t max_delivered;
    char *label;
    size_t label_len;
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
    /* rift_stream_set_append_watch: called under |lock| after each append
     * (a protocol server wakes its waiting fetches). */
    rift_stream_append_fn append_fn;
    void *append_arg;
    /* rift_stream_set_advisory_watch: max_deliver drops, called unlocked. */
    rift_stream_advisory_fn advisory_fn;
    void *advisory_arg;
    /* rift_stream_watch_add: more watchers, called after append_fn. */
    rift_stream_watch *watches;
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

#endif /* RIFT_STORE_STREAM_TYPES_H */
