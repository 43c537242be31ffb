/*
 * stream.h — retained (durable) streams and durable pull consumers: an
 * append-only, sequence-numbered record log kept in memory or in a
 * directory of checksummed segment files, with pull consumers that fetch,
 * acknowledge and get redeliveries after an ack wait.
 *
 * Semantics follow docs/protocol-v1.md §4 (limits, retention, sequence
 * numbers, fetch order, error texts); the extensions (age retention,
 * consumer delete, start positions, group commit, segmented storage) are
 * documented where they appear and in docs/storage-format.md.
 *
 * Threading: every function on a rift_stream or a rift_consumer may be
 * called from any thread; operations on one stream are serialized by the
 * stream (32 concurrent publishes get sequences 1..32). rift_stream_del
 * must not race with other calls on the same stream.
 *
 * Durability: with sync_on_write (the default) a mutation — publish,
 * consumer open/delete, a fetch that delivers or moves the cursor, an ack —
 * is reported successful only after an fdatasync covers it. Concurrent
 * mutations share one sync (group commit). The sync always runs on the
 * stream's own writer thread, never on the caller's: the blocking calls
 * wait for it, the _async calls return at once and report through a
 * callback on the writer thread.
 *
 * With sync_on_write false (file storage) a mutation is reported
 * successful only once its bytes were handed to the kernel with write(),
 * as the original does before STORED/OK: a crash of the process loses
 * nothing reported, only a power loss or kernel crash can. A blocking call
 * writes its own mutation (one write, under the stream lock) when the
 * writer thread is idle, else waits for the writer's next group write; the
 * _async calls always complete through the callback on the writer thread,
 * after its group write. Memory streams complete at once (*completed set
 * true, the callback not called).
 *
 * Strings are pointer + length and need not be NUL-terminated; they are
 * borrowed for the duration of the call. Errors fill |err| (if not NULL)
 * with the reference's exact text.
 */
#ifndef RIFT_STREAM_H
#define RIFT_STREAM_H

#include "rift/rift.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rift_stream rift_stream;
typedef struct rift_consumer rift_consumer;
/* The file-system table (src/store/vfs.h); NULL selects POSIX. */
typedef struct rift_vfs rift_vfs;

/* ---- Settings ---- */

typedef struct rift_stream_settings {
    /** Subject patterns a publish must match (wildcards allowed, each at
     * most 1,024 bytes, NUL-terminated). NULL or 0 patterns = {">"}. */
    const char *const *subjects;
    size_t subjects_count;
    /** Retention by count. Default 100,000. */
    uint64_t max_messages;
    /** Retention by retained size (payload + subject + reply + 32).
     * Default 67,108,864 (64 MiB). */
    uint64_t max_bytes;
    /** Largest payload. Default 1,048,576; at most 4,294,963,199. */
    uint64_t max_payload_bytes;
    /** Durable consumers per stream. Default 128. */
    uint32_t max_consumers;
    /** fdatasync before a mutation is reported done. Default true. With
     * false a mutation is reported done once written (write(), no sync):
     * a process crash loses nothing reported, a power loss or kernel
     * crash can lose the latest ones. */
    bool sync_on_write;
    /** Extension: records older than this many milliseconds are evicted
     * (on every operation and by the writer thread). 0 = no age limit,
     * the default and the original's behaviour. */
    uint64_t max_age_ms;
    /** Directory for file storage, created (with missing ancestors) if
     * absent. NULL = memory storage: records and consumers live as long as
     * the stream object and are lost when it is closed. */
    const char *storage_path;
    /** File storage: size at which a segment file is sealed and a new one
     * started. Default 64 MiB; 4 KiB .. 1 GiB. */
    uint64_t segment_bytes;
    /** File storage: memory for recently appended records, served to
     * fetch and replay without reading the disk. Default 8 MiB. */
    uint64_t cache_bytes;
    /** File storage: the consumer-state log is rewritten as a snapshot
     * once it exceeds max(this, 2 × the last snapshot). Default 8 MiB. */
    uint64_t state_snapshot_bytes;
    /** File system and wall clock; NULL = POSIX and CLOCK_REALTIME. A seam
     * for the library's own tests (see "Seams" in rift/rift.h):
     * applications leave it NULL. Must outlive the stream. Memory streams
     * use only its clock. */
    const rift_vfs *vfs;
    /** Allocator; NULL = malloc. Must outlive the stream. */
    const rift_mem *mem;
} rift_stream_settings;

/** rift_stream_settings_default fills |s| with the defaults above. */
RIFT_EXTERN void rift_stream_settings_default(rift_stream_settings *s);

/* ---- Records and batches ---- */

/** A retained record. Subject and reply are NUL-terminated copies; the
 * reply is NULL with reply_len 0 when there is none. */
typedef struct rift_record {
    uint64_t sequence;
    /** Wall-clock milliseconds since the Unix epoch, taken at append. */
    uint64_t timestamp_ms;
    const char *subject;
    size_t subject_len;
    const char *reply;
    size_t reply_len;
    const uint8_t *payload;
    size_t payload_len;
} rift_record;

/** One record handed out by a fetch (delivery_count >= 1) or a replay
 * (delivery_count 0). */
typedef struct rift_delivery {
    rift_record record;
    uint32_t delivery_count;
} rift_delivery;

/**
 * rift_batch holds the result of a fetch or a replay. The caller owns it
 * and releases it with rift_batch_free; the records stay valid until then
 * (also after the stream is closed). Initialise with {0} or let the
 * producing call do it; it is filled only on success.
 */
typedef struct rift_batch {
    size_t count;
    rift_delivery *items;
    void *priv_;
} rift_batch;

/** rift_batch_free releases |b| and zeroes it. Safe on a zeroed batch. */
RIFT_EXTERN void rift_batch_free(rift_batch *b);

/* ---- Completion callbacks ---- */

/**
 * rift_stream_done_cb reports the completion of an _async operation:
 * |status| 0 once it is durable (synced, or for sync_on_write false
 * written), or the error (with its text in |err|,
 * valid during the call) when the write or sync covering it failed; the
 * stream is then poisoned. It runs on one of the stream's I/O threads (the
 * writer or a sync helper), possibly before the submitting function has
 * returned, never under a stream lock. Callbacks of different operations
 * may run concurrently on different threads (each thread runs its batch
 * in submission order): post the result to your own loop rather than rely
 * on their order. It may call _async functions and non-blocking
 * calls (info, replay) but must not call the blocking mutators of the same
 * stream (publish, fetch, ack, consumer open or delete, checkpoint), which
 * would wait for the threads running it; they fail with
 * RIFT_ERR_INVALID_ARGUMENT if tried. Nor may it close the stream.
 */
typedef void (*rift_stream_done_cb)(void *user_data, int status,
                                    const rift_error *err);

/* ---- Streams ---- */

/**
 * rift_stream_new opens a stream: in memory, or in |settings|'s
 * storage_path, recovering its records and consumers (a torn tail of the
 * newest segment or of the state log is truncated). |settings| is copied
 * (NULL = defaults); *|pstream| is set on success and owned by the caller
 * (rift_stream_del).
 *
 * Errors: RIFT_ERR_INVALID_CONFIG ("invalid messaging configuration: stream
 * limits must be positive and payload must fit a frame");
 * RIFT_ERR_INVALID_SUBJECT ("invalid subject: <pattern>");
 * RIFT_ERR_STORAGE ("stream storage: stream directory is already open or
 * cannot be locked: <os error>", "stream storage: checksum mismatch in
 * <file> at offset <n>" and other corruption reports naming the file and
 * offset, "stream storage: stored payload exceeds configured limit",
 * "stream storage: stored consumers exceed configured limit");
 * RIFT_ERR_IO ("messaging I/O: <file>: <os error>"); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_stream_new(rift_stream **pstream,
                                const rift_stream_settings *settings,
                                rift_error *err);

/**
 * rift_stream_del waits for queued writes, syncs file storage (also when
 * sync_on_write is false), stops the writer thread, closes the files and
 * releases the directory lock. Pending _async callbacks run before it
 * returns. Consumer handles stay valid objects but their operations then
 * fail with "stream storage: stream is closed"; each must still be closed.
 * NULL is a no-op. Must not be called from a completion callback.
 */
RIFT_EXTERN void rift_stream_del(rift_stream *stream);

/** The result of a publish. */
typedef struct rift_stored {
    uint64_t sequence;
    uint64_t timestamp_ms;
} rift_stored;

/**
 * rift_stream_publish appends a record and returns (fills |out|, may be
 * NULL) once it is durable. |reply| may be NULL/0 for none. Retention then
 * evicts the oldest records beyond the limits, acknowledged or not.
 *
 * Errors: RIFT_ERR_INVALID_SUBJECT ("invalid subject: <s>", the subject or
 * reply is not a valid literal subject); RIFT_ERR_STREAM_NOT_MATCHED
 * ("subject does not match this stream"); RIFT_ERR_PAYLOAD_TOO_LARGE
 * ("payload size <n> exceeds limit <m>", m = min(max_payload_bytes,
 * max_bytes); or n = retained size, m = max_bytes); RIFT_ERR_STORAGE
 * ("stream storage: stream sequence exhausted", "stream storage: journal
 * write previously failed...", writes refused after a failure, see
 * rift_stream_reopen; "stream storage: stream is closed"); RIFT_ERR_IO
 * ("messaging I/O: ...", the write or sync of this very operation failed;
 * it is not counted, and the stream reads its disk state back at the next
 * operation);
 * RIFT_ERR_NOMEM; RIFT_ERR_INVALID_ARGUMENT (called from a callback).
 */
RIFT_EXTERN int rift_stream_publish(rift_stream *stream, const char *subject,
                                    size_t subject_len, const char *reply,
                                    size_t reply_len, const uint8_t *payload,
                                    size_t payload_len, rift_stored *out,
                                    rift_error *err);

/**
 * rift_stream_publish_async is rift_stream_publish without waiting: the
 * record is appended and |out| filled before it returns, and the sequence
 * is taken even if nobody waits for the callback. Returns 0 or an error
 * as rift_stream_publish (|cb| not called). On success *|completed| (may
 * be NULL) tells which: true when the operation is already complete
 * (memory storage, or nothing was written) and |cb| is NOT called, false
 * when |cb| (if not NULL) will report durability. STORED must be sent
 * only after *completed true or a callback with status 0. The other
 * _async functions report the same way.
 */
RIFT_EXTERN int rift_stream_publish_async(
    rift_stream *stream, const char *subject, size_t subject_len,
    const char *reply, size_t reply_len, const uint8_t *payload,
    size_t payload_len, rift_stored *out, bool *completed,
    rift_stream_done_cb cb, void *user_data, rift_error *err);

/**
 * rift_stream_replay reads up to |limit| (0..65,536) retained records from
 * |from_sequence| on (or from the first retained one) without consumer
 * state. Only records whose publish completed (or could have: a file
 * stream's synced records, or written ones for sync_on_write false) are
 * returned. Fills |out| (delivery_count 0).
 *
 * A record found corrupt when read back is left out (logged once).
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("replay limit must be 0..65536");
 * RIFT_ERR_STORAGE (closed stream, a record not on disk); RIFT_ERR_IO (a
 * read failed; texts name the sequence, never a path); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_stream_replay(rift_stream *stream, uint64_t from_sequence,
                                   size_t limit, rift_batch *out,
                                   rift_error *err);

typedef struct rift_stream_info {
    uint64_t messages;
    /** Sum of retained sizes. */
    uint64_t bytes;
    /** last_sequence + 1 when the stream is empty. */
    uint64_t first_sequence;
    /** 0 before the first publish. */
    uint64_t last_sequence;
    size_t consumer_count;
    /** consumer_count NUL-terminated names in byte order, owned by the
     * info (rift_stream_info_free). */
    char **consumer_names;
    bool durable;
    /** A write or sync failed; mutations fail until the stream is
     * reopened (by itself after a lack of space, see rift_stream_reopen). */
    bool poisoned;
    /** File storage: segment files and their total size on disk. */
    size_t segments;
    uint64_t disk_bytes;
    /** File storage: fdatasync calls made so far (group-commit gauge). */
    uint64_t syncs;
    const void *priv_;
} rift_stream_info;

/**
 * rift_stream_get_info fills |out| (caller storage), which the caller
 * then empties with rift_stream_info_free. Never waits for I/O. Any thread.
 *
 * Errors: RIFT_ERR_NOMEM ("out of memory").
 */
RIFT_EXTERN int rift_stream_get_info(rift_stream *stream, rift_stream_info *out,
                                     rift_error *err);

/**
 * rift_stream_get_settings fills |out| with the settings |stream| was
 * opened with, defaults applied: |subjects| and |storage_path| point into
 * the stream and stay valid while it is open. Never waits. Any thread.
 */
RIFT_EXTERN void rift_stream_get_settings(const rift_stream *stream,
                                          rift_stream_settings *out);

/** rift_stream_info_free releases the names rift_stream_get_info allocated
 * and zeroes |info|. Safe on a zeroed info. */
RIFT_EXTERN void rift_stream_info_free(rift_stream_info *info);

/**
 * rift_stream_checkpoint (file storage) writes a snapshot of the consumer
 * state, deletes segments retention has emptied and syncs everything,
 * returning when done. A no-op for memory streams.
 *
 * Errors: RIFT_ERR_STORAGE, RIFT_ERR_IO, RIFT_ERR_NOMEM,
 * RIFT_ERR_INVALID_ARGUMENT (called from a callback).
 */
RIFT_EXTERN int rift_stream_checkpoint(rift_stream *stream, rift_error *err);

/**
 * rift_stream_purge drops every retained record and keeps everything else:
 * the next publish gets the next sequence (none is reused), consumers stay
 * with their cursors moved past the dropped records and their pending
 * deliveries of them forgotten. File storage: durable when it returns (the
 * new first sequence is synced; recovery never brings purged records
 * back). |purged| (may be NULL) receives the number of records dropped.
 *
 * Errors: RIFT_ERR_STORAGE, RIFT_ERR_IO, RIFT_ERR_NOMEM,
 * RIFT_ERR_INVALID_ARGUMENT (called from a callback).
 */
RIFT_EXTERN int rift_stream_purge(rift_stream *stream, uint64_t *purged,
                                  rift_error *err);

/**
 * rift_stream_reopen (file storage) gets a stream that a failed write or
 * sync poisoned going again without closing it: it cuts the files back to
 * what was acknowledged, reads the directory again as an open would
 * (consumer handles stay valid) and accepts writes again. Nothing
 * acknowledged is lost; operations that had failed stay failed. A no-op for
 * a healthy or memory stream. After a lack of space (ENOSPC, EDQUOT) the
 * stream also does this by itself: its state is read back at the next
 * operation, and writes are retried after a back-off (1 s, doubling to 30
 * s). Not concurrently with rift_stream_del.
 *
 * Errors: RIFT_ERR_IO, RIFT_ERR_STORAGE (the directory no longer
 * recovers; the stream stays refused), RIFT_ERR_NOMEM,
 * RIFT_ERR_INVALID_ARGUMENT (called from a callback).
 */
RIFT_EXTERN int rift_stream_reopen(rift_stream *stream, rift_error *err);

/** Called by rift_stream_set_append_watch's watcher. */
typedef void (*rift_stream_append_fn)(void *arg);

/**
 * rift_stream_set_append_watch installs |fn|(|arg|), called after every
 * successful publish (the record is appended, not necessarily durable
 * yet) on the publisher's thread with the stream's lock held: it must
 * only note the event (an atomic flag, a loop post) and call nothing of
 * the stream. One watcher per stream (a protocol server's waiting
 * fetches; a second install replaces the first). |fn| NULL removes the
 * watch installed with the same |arg| (another one is left alone, so a
 * server stopping after its successor started does not unhook it); once
 * this returns the removed watcher is not running and will not be called
 * again.
 */
RIFT_EXTERN void rift_stream_set_append_watch(rift_stream *stream,
                                              rift_stream_append_fn fn,
                                              void *arg);

/**
 * A caller-owned append watcher (rift_stream_watch_add): any number may
 * watch one stream at the same time, beside the single
 * rift_stream_set_append_watch slot (riftd's Lua waiting fetches watch a
 * stream its protocol server watches too). |fn| is called as the slot's
 * is: after every successful publish, on the publisher's thread, under
 * the stream's lock, so it must only note the event and call nothing of
 * the stream. The links are the stream's.
 */
typedef struct rift_stream_watch {
    rift_stream_append_fn fn;
    void *arg;
    struct rift_stream_watch *prev_, *next_;
} rift_stream_watch;

/**
 * rift_stream_watch_add links |w| (fn and arg set, not linked yet) to
 * |stream|; rift_stream_watch_remove unlinks it (a no-op when it is not
 * linked). Once remove returns, |w|'s fn is not running and will not be
 * called again, so |w| may be freed. Neither may be called from |fn|.
 * The caller keeps the stream alive meanwhile (a consumer handle does).
 */
RIFT_EXTERN void rift_stream_watch_add(rift_stream *stream,
                                       rift_stream_watch *w);
RIFT_EXTERN void rift_stream_watch_remove(rift_stream *stream,
                                          rift_stream_watch *w);

/* ---- Consumers ---- */

/**
 * Where a new consumer starts (extension; NATS Streaming's start
 * positions). Each resolves, when the consumer is created, to a start
 * sequence, which becomes the cursor; the original's semantics then apply
 * (a start below the first retained record is clamped to it, a start
 * beyond the end waits for that sequence).
 */
typedef enum rift_consumer_start {
    /** start_sequence as given (>= 1). The original's, and the wire's. */
    RIFT_START_SEQUENCE = 0,
    /** The first retained record (start sequence 1, clamped). */
    RIFT_START_FIRST = 1,
    /** The newest record stored at creation (or the next one when the
     * stream is empty). */
    RIFT_START_LAST_RECEIVED = 2,
    /** Only records published after creation: last sequence + 1. */
    RIFT_START_NEW_ONLY = 3,
    /** The first retained record whose timestamp is >= start_time_ms
     * (absolute wall-clock ms), else the next record. */
    RIFT_START_TIME = 4,
    /** As RIFT_START_TIME with now - start_time_ms (a delta in ms). */
    RIFT_START_TIME_DELTA = 5,
} rift_consumer_start;

/**
 * Consumer configuration. Reopening an existing consumer requires exact
 * equality with the stored configuration: filter, ack_wait_ms,
 * max_ack_pending and start, plus start_sequence for RIFT_START_SEQUENCE or
 * start_time_ms for the two time modes (the FIRST, LAST_RECEIVED and
 * NEW_ONLY modes have no argument; the sequence a mode resolved to is never
 * compared).
 */
typedef struct rift_consumer_config {
    /** Subject pattern; NULL/0 = ">". */
    const char *filter;
    size_t filter_len;
    /** RIFT_START_SEQUENCE only: >= 1. Default 1. */
    uint64_t start_sequence;
    /** Redelivery delay, > 0. Default 30,000. */
    uint64_t ack_wait_ms;
    /** 1..65,536. Default 128. */
    uint32_t max_ack_pending;
    rift_consumer_start start;
    /** RIFT_START_TIME: absolute ms; RIFT_START_TIME_DELTA: delta ms. */
    uint64_t start_time_ms;
    /** Extension: the most deliveries of one record (0 = unlimited, the
     * default). A record whose last allowed delivery expires is no longer
     * redelivered: it leaves the pending set (durably), counts in
     * rift_consumer_info.max_delivered and is reported to the stream's
     * advisory watch (rift_stream_set_advisory_watch). */
    uint32_t max_deliver;
} rift_consumer_config;

/** rift_consumer_config_default fills |c| with the defaults above. */
RIFT_EXTERN void rift_consumer_config_default(rift_consumer_config *c);

/**
 * rift_consumer_config_diff names the first setting in which |a| and |b|
 * differ, in this order: "filter" (NULL/0 and ">" are equal),
 * "ack_wait_ms", "max_ack_pending", "max_deliver", then, when |with_start|,
 * "start", "start_sequence" (RIFT_START_SEQUENCE) and "start_time_ms" (the time
 * modes). NULL when they are equal. A resume that ignores the start
 * passes |with_start| false.
 */
RIFT_EXTERN const char *rift_consumer_config_diff(const rift_consumer_config *a,
                                                  const rift_consumer_config *b,
                                                  bool with_start);

/** Room for any start position's text, NUL included. */
#define RIFT_CONSUMER_START_TEXT 48

/**
 * rift_consumer_start_parse reads a start position as the CLI (--start),
 * Lua (config.start) and riftd's answers spell it, into |config|'s start,
 * start_sequence and start_time_ms (the other fields are left alone):
 * "first", "last" (the newest record), "new" (only later ones), "seq:N"
 * (N >= 1), "time:T" (T RFC 3339, e.g. 2026-01-02T15:04:05Z, or Unix
 * milliseconds), "since:D" (D a duration before the creation: 90s, 5m,
 * 1h30m, 1500ms, 2d; a bare number is seconds). |config| is unchanged
 * on failure.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("expects seq:N, first, last,
 * new, time:T or since:D", "seq:N expects N >= 1 (sequences start at 1)",
 * "time:T expects RFC 3339 (2026-01-02T15:04:05Z) or Unix milliseconds",
 * "since:D expects a duration such as 90s, 5m or 1h30m").
 */
RIFT_EXTERN int rift_consumer_start_parse(const char *text, size_t len,
                                          rift_consumer_config *config,
                                          rift_error *err);

/**
 * rift_consumer_start_format writes |config|'s start position in the
 * spelling rift_consumer_start_parse reads ("seq:1", "first",
 * "time:2026-01-02T15:04:05.000Z", "since:90s") into |out| (|size| bytes,
 * RIFT_CONSUMER_START_TEXT is enough) and returns its length.
 */
RIFT_EXTERN size_t rift_consumer_start_format(
    const rift_consumer_config *config, char *out, size_t size);

/**
 * rift_stream_consumer_open opens the durable consumer |name| (1..128
 * bytes of UTF-8 with no whitespace or control character; the QUIC layer
 * passes its already-scoped "remote_<sha256 hex>" names here unchanged),
 * creating it when absent, and returns a handle in *|pconsumer| that the
 * caller releases with rift_consumer_close. |config| NULL = defaults.
 * Reopening with an equal configuration keeps the cursor and pending set.
 *
 * Errors: RIFT_ERR_INVALID_CONFIG ("invalid messaging configuration:
 * invalid consumer name or limits", "invalid messaging configuration:
 * consumer already exists with different settings", "invalid messaging
 * configuration: stream consumer limit reached"); RIFT_ERR_STORAGE;
 * RIFT_ERR_IO; RIFT_ERR_NOMEM; RIFT_ERR_INVALID_ARGUMENT (from a callback).
 */
RIFT_EXTERN int rift_stream_consumer_open(rift_stream *stream, const char *name,
                                          size_t name_len,
                                          const rift_consumer_config *config,
                                          rift_consumer **pconsumer,
                                          rift_error *err);

/** rift_stream_consumer_open_async: as rift_stream_consumer_open, the
 * handle usable at once; returns and sets *|completed| as
 * rift_stream_publish_async (completed when the consumer already existed
 * on disk). */
RIFT_EXTERN int rift_stream_consumer_open_async(
    rift_stream *stream, const char *name, size_t name_len,
    const rift_consumer_config *config, rift_consumer **pconsumer,
    bool *completed, rift_stream_done_cb cb, void *user_data, rift_error *err);

/**
 * rift_stream_consumer_get returns a handle to the existing consumer
 * |name| (no I/O, never waits).
 *
 * Errors: RIFT_ERR_CONSUMER_NOT_FOUND ("consumer does not exist");
 * RIFT_ERR_STORAGE (closed stream); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_stream_consumer_get(rift_stream *stream, const char *name,
                                         size_t name_len,
                                         rift_consumer **pconsumer,
                                         rift_error *err);

/**
 * rift_stream_consumer_delete removes the consumer |name| and its durable
 * state (extension; NATS Streaming's unsubscribe). Open handles to it then
 * fail with RIFT_ERR_CONSUMER_NOT_FOUND; a later open creates a fresh
 * consumer.
 *
 * Errors: RIFT_ERR_CONSUMER_NOT_FOUND; RIFT_ERR_STORAGE; RIFT_ERR_IO;
 * RIFT_ERR_NOMEM; RIFT_ERR_INVALID_ARGUMENT (from a callback).
 */
RIFT_EXTERN int rift_stream_consumer_delete(rift_stream *stream,
                                            const char *name, size_t name_len,
                                            rift_error *err);

/** rift_stream_consumer_delete_async: as rift_stream_consumer_delete,
 * without waiting for durability; returns and sets *|completed| as
 * rift_stream_publish_async. Errors: those of rift_stream_consumer_delete
 * (RIFT_ERR_INVALID_ARGUMENT excepted: callbacks may call it). */
RIFT_EXTERN int rift_stream_consumer_delete_async(
    rift_stream *stream, const char *name, size_t name_len, bool *completed,
    rift_stream_done_cb cb, void *user_data, rift_error *err);

/**
 * rift_consumer_close releases a handle; the consumer's durable state is
 * kept (NATS Streaming's close). NULL is a no-op.
 */
RIFT_EXTERN void rift_consumer_close(rift_consumer *consumer);

/**
 * rift_consumer_fetch delivers up to |limit| (0..65,536) records and never
 * waits for new ones: first the pending deliveries whose ack wait has
 * expired (or that a reopen made eligible), ascending, with delivery_count
 * = attempts + 1; then new records from the cursor that match the filter,
 * stopping once pending + new ones reach max_ack_pending. The cursor moves
 * past non-matching records, and past records found corrupt when read
 * back (logged once; a pending delivery of one is dropped as if acked), so
 * no bad record can wedge a consumer. Returns once the new delivery state
 * is durable. Fills |out|.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("fetch limit must be 0..65536", or
 * called from a callback); RIFT_ERR_CONSUMER_NOT_FOUND (deleted);
 * RIFT_ERR_STORAGE; RIFT_ERR_IO; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_consumer_fetch(rift_consumer *consumer, size_t limit,
                                    rift_batch *out, rift_error *err);

/** rift_consumer_fetch_async fills |out| at once; the records must not be
 * handed out before *|completed| true or a callback with status 0 (on
 * failure the caller just frees |out|). Returns and sets *|completed| as
 * rift_stream_publish_async. Errors: those of rift_consumer_fetch
 * (RIFT_ERR_INVALID_ARGUMENT only for the limit). */
RIFT_EXTERN int rift_consumer_fetch_async(rift_consumer *consumer, size_t limit,
                                          rift_batch *out, bool *completed,
                                          rift_stream_done_cb cb,
                                          void *user_data, rift_error *err);

/**
 * rift_consumer_fetch_bytes_async is rift_consumer_fetch_async that stops
 * taking records once their payloads add up to |max_bytes| or more (the
 * first eligible record is always taken, whatever its size). A protocol
 * server answers a large fetch in several of these, each loaded only when
 * the client has taken the previous one, so a client that does not read
 * pins at most about |max_bytes| of records read back from disk. Each
 * call commits its own delivery state (one sync on a synced stream).
 *
 * Errors: those of rift_consumer_fetch (RIFT_ERR_INVALID_ARGUMENT
 * excepted: callbacks may call it).
 */
RIFT_EXTERN int rift_consumer_fetch_bytes_async(
    rift_consumer *consumer, size_t limit, uint64_t max_bytes, rift_batch *out,
    bool *completed, rift_stream_done_cb cb, void *user_data, rift_error *err);

/**
 * rift_consumer_ack acknowledges |sequence|, removing it from the pending
 * set (acks may come in any order).
 *
 * Errors: RIFT_ERR_INVALID_ACK ("sequence is not pending acknowledgement":
 * unknown, already acked, never delivered or evicted by retention);
 * RIFT_ERR_CONSUMER_NOT_FOUND; RIFT_ERR_STORAGE; RIFT_ERR_IO;
 * RIFT_ERR_NOMEM; RIFT_ERR_INVALID_ARGUMENT (from a callback).
 */
RIFT_EXTERN int rift_consumer_ack(rift_consumer *consumer, uint64_t sequence,
                                  rift_error *err);

/** rift_consumer_ack_async: as rift_consumer_ack, without waiting for
 * durability; returns and sets *|completed| as
 * rift_stream_publish_async. Errors: those of rift_consumer_ack
 * (RIFT_ERR_INVALID_ARGUMENT excepted: callbacks may call it). */
RIFT_EXTERN int rift_consumer_ack_async(rift_consumer *consumer,
                                        uint64_t sequence, bool *completed,
                                        rift_stream_done_cb cb, void *user_data,
                                        rift_error *err);

/**
 * rift_consumer_set_ack_wait changes the consumer's ack wait for the
 * deliveries that follow and for those pending (a push protocol's
 * subscriber resumed with another ack wait: NATS Streaming). The change is
 * in memory: a later snapshot of the stream's state may keep it, a
 * restart may bring back the value of its creation, so a caller that
 * needs it across restarts keeps it and sets it again. No I/O.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT (0); RIFT_ERR_CONSUMER_NOT_FOUND;
 * RIFT_ERR_STORAGE (closed stream).
 */
RIFT_EXTERN int rift_consumer_set_ack_wait(rift_consumer *consumer,
                                           uint64_t ack_wait_ms,
                                           rift_error *err);

/**
 * rift_consumer_expire makes the pending delivery |sequence| due for
 * redelivery at the next fetch, as if its ack wait had expired (a queue
 * member left: its deliveries go to the others at once). In memory, no
 * I/O: a restart makes every pending delivery due anyway.
 *
 * Errors: RIFT_ERR_INVALID_ACK (not pending); RIFT_ERR_CONSUMER_NOT_FOUND;
 * RIFT_ERR_STORAGE (closed stream).
 */
RIFT_EXTERN int rift_consumer_expire(rift_consumer *consumer, uint64_t sequence,
                                     rift_error *err);

/** The longest delay of rift_consumer_nak, in ms (one hour). */
#define RIFT_CONSUMER_MAX_NAK_DELAY_MS 3600000u

/**
 * rift_consumer_nak (extension, NATS's NAK) gives up the pending delivery
 * |sequence|: it is delivered again by the first fetch at least
 * |delay_ms| (0..=3,600,000) from now, 0 = at once, as if its ack wait
 * had run out then (its delivery count goes on from where it was, so
 * max_deliver counts it). In memory, no I/O: a restart makes every
 * pending delivery due at once anyway. The async form completes at once.
 *
 * Errors: RIFT_ERR_INVALID_ARGUMENT ("nak delay must be 0..3600000 ms");
 * RIFT_ERR_INVALID_ACK ("sequence is not pending acknowledgement");
 * RIFT_ERR_CONSUMER_NOT_FOUND; RIFT_ERR_STORAGE (closed stream).
 */
RIFT_EXTERN int rift_consumer_nak(rift_consumer *consumer, uint64_t sequence,
                                  uint64_t delay_ms, rift_error *err);
/** rift_consumer_nak_async: as rift_consumer_nak; returns and sets
 * *|completed| as rift_stream_publish_async (always completed). */
RIFT_EXTERN int rift_consumer_nak_async(rift_consumer *consumer,
                                        uint64_t sequence, uint64_t delay_ms,
                                        bool *completed, rift_stream_done_cb cb,
                                        void *user_data, rift_error *err);

/**
 * rift_consumer_term (extension, NATS's TERM) ends the pending delivery
 * |sequence| for good: it leaves the pending set and is never delivered
 * again, and rift_consumer_info.terminated counts it. Durable like an
 * ack: returns once the change is on disk (file storage).
 *
 * Errors: those of rift_consumer_ack.
 */
RIFT_EXTERN int rift_consumer_term(rift_consumer *consumer, uint64_t sequence,
                                   rift_error *err);
/** rift_consumer_term_async: as rift_consumer_term without waiting for
 * durability, as rift_consumer_ack_async. */
RIFT_EXTERN int rift_consumer_term_async(rift_consumer *consumer,
                                         uint64_t sequence, bool *completed,
                                         rift_stream_done_cb cb,
                                         void *user_data, rift_error *err);

/**
 * rift_consumer_in_progress (extension, NATS's "+WPI") restarts the ack
 * wait of the pending delivery |sequence| from now: the consumer is still
 * working on it. In memory, no I/O (a restart makes it due at once). The
 * async form completes at once.
 *
 * Errors: RIFT_ERR_INVALID_ACK ("sequence is not pending
 * acknowledgement"); RIFT_ERR_CONSUMER_NOT_FOUND; RIFT_ERR_STORAGE
 * (closed stream).
 */
RIFT_EXTERN int rift_consumer_in_progress(rift_consumer *consumer,
                                          uint64_t sequence, rift_error *err);
/** rift_consumer_in_progress_async: as rift_consumer_in_progress. */
RIFT_EXTERN int
rift_consumer_in_progress_async(rift_consumer *consumer, uint64_t sequence,
                                bool *completed, rift_stream_done_cb cb,
                                void *user_data, rift_error *err);

/** A record dropped after its consumer's max_deliver deliveries. */
typedef struct rift_consumer_advisory {
    /** The consumer's stored name (a remote consumer's scoped
     * "remote_<hash>" name) and, when one was set with
     * rift_consumer_set_label, its label (else NULL, 0). */
    const char *consumer;
    size_t consumer_len;
    const char *label;
    size_t label_len;
    uint64_t sequence;
    /** How often it was delivered (>= max_deliver). */
    uint32_t deliveries;
} rift_consumer_advisory;

/** Called once per dropped record, on the thread whose fetch dropped it,
 * after the stream lock is released, before the fetch returns (so before
 * the drop is durable: after a crash it may be reported again). */
typedef void (*rift_stream_advisory_fn)(void *arg,
                                        const rift_consumer_advisory *a);

/**
 * rift_stream_set_advisory_watch installs |fn| (NULL removes it) as the
 * stream's advisory watch. riftd publishes the reports on
 * rift.events.consumer.
 */
RIFT_EXTERN void rift_stream_set_advisory_watch(rift_stream *stream,
                                                rift_stream_advisory_fn fn,
                                                void *arg);

/**
 * rift_consumer_set_label gives the consumer a label for its advisories
 * and listings (a protocol server sets the client's own name of a scoped
 * consumer). At most 256 bytes (longer labels are cut); the last one set
 * wins. A file stream journals a changed label without waiting for it
 * (docs/storage-format.md, CONSUMER_LABEL): it survives a restart once
 * written. Errors: RIFT_ERR_NOMEM; the stream's poison error.
 */
RIFT_EXTERN int rift_consumer_set_label(rift_consumer *consumer,
                                        const char *label, size_t label_len,
                                        rift_error *err);

/** Called by rift_stream_consumer_each once per consumer, in the order of
 * the stored names, under the stream's lock: it must not call into the
 * stream. |label| is NULL (|label_len| 0) for a consumer without one;
 * both strings are valid during the call only. */
typedef void (*rift_stream_consumer_fn)(void *arg, const char *name,
                                        size_t name_len, const char *label,
                                        size_t label_len);

/**
 * rift_stream_consumer_each calls |fn| for every consumer of |stream|
 * (no I/O, never waits). Errors: RIFT_ERR_STORAGE (closed stream).
 */
RIFT_EXTERN int rift_stream_consumer_each(rift_stream *stream,
                                          rift_stream_consumer_fn fn, void *arg,
                                          rift_error *err);

typedef struct rift_consumer_info {
    /** The consumer's name (NUL-terminated, owned by the handle). */
    const char *name;
    size_t name_len;
    /** The configuration; filter points into the handle. */
    rift_consumer_config config;
    /** The sequence its start position resolved to at creation. */
    uint64_t start_sequence;
    /** The cursor: the next new record to examine. */
    uint64_t next_sequence;
    /** Deliveries awaiting acknowledgement. */
    size_t pending;
    /** Extension: deliveries ended by rift_consumer_term, and records
     * dropped after max_deliver deliveries; both durable. */
    uint64_t terminated;
    uint64_t max_delivered;
} rift_consumer_info;

/** rift_consumer_get_info fills |out|. Errors: RIFT_ERR_CONSUMER_NOT_FOUND,
 * RIFT_ERR_STORAGE (closed stream). */
RIFT_EXTERN int rift_consumer_get_info(rift_consumer *consumer,
                                       rift_consumer_info *out,
                                       rift_error *err);

/* ---- Offline verification and repair of a stream directory ---- */

typedef struct rift_store_report {
    size_t segments;
    uint64_t records;
    uint64_t first_sequence;
    /** The newest record's sequence (first_sequence - 1 when there is
     * none). */
    uint64_t last_sequence;
    /** The sequence the next publish gets: past the newest record, and
     * past every sequence lost to a repair or a crash that consumers had
     * seen (those are never reused). */
    uint64_t next_sequence;
    uint64_t segment_bytes;
    uint64_t state_events;
    size_t consumers;
    /** A torn tail (incomplete last record) was found (verify) or cut
     * (repair): the file and the offset it ends at. */
    bool torn;
    char torn_file[256];
    uint64_t torn_offset;
    /** Repair only: bytes removed and segment files deleted. */
    uint64_t repaired_bytes;
    size_t deleted_segments;
} rift_store_report;

/**
 * rift_store_verify checks every record and state event of the stream
 * directory |path| (checksums, structure, sequence continuity) without
 * changing anything, taking the directory lock while it runs. Returns 0
 * when the directory opens cleanly (a torn tail, which open truncates, is
 * reported in |report| but is not an error).
 *
 * Errors: RIFT_ERR_STORAGE (the first corruption, naming its file and
 * offset; or the lock is held); RIFT_ERR_IO; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_store_verify(const char *path, rift_store_report *report,
                                  rift_error *err);

/**
 * rift_store_repair is rift_store_verify that also fixes what it finds:
 * it truncates the file holding the first bad record at that record (and
 * deletes every later segment), or truncates a torn tail. Records after the
 * cut are lost, but their sequence numbers are never reused: the next
 * publish gets a sequence past the bad record, past every record of the
 * deleted segments it can still read, and past every consumer's cursor and
 * pending deliveries (a hole logged in the state log; |report|'s
 * next_sequence). Returns 0 once the directory verifies clean.
 *
 * Errors: as rift_store_verify (for problems it cannot fix, such as a bad
 * segment header in the middle of the log).
 */
RIFT_EXTERN int rift_store_repair(const char *path, rift_store_report *report,
                                  rift_error *err);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_STREAM_H */
