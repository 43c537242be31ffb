/*
 * client_stream.h — the C client's stream extensions (included by
 * rift/client.h): stream info for any identity that may subscribe to a
 * stream's subjects, and streams made at run time by identities with a
 * `streams` grant (docs/protocol-v1.md "Extensions", STREAM_INFO_GET and
 * STREAM_CREATE..STREAM_DELETE). Blocking and asynchronous calls, with
 * the conventions of rift/client.h.
 */
#ifndef RIFT_CLIENT_STREAM_H
#define RIFT_CLIENT_STREAM_H

#ifndef RIFT_CLIENT_H
# error "include rift/client.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A stream's definition for create and update. Limits of 0 mean the
 * server's default (max_age_ms 0: no age limit); update with no subjects
 * keeps them. Subject patterns are NUL-terminated. */
typedef struct rift_client_stream_spec {
    const char *const *subjects;
    size_t subjects_count;
    /** File storage under riftd's data_dir (else memory). Update must
     * give the stream's own. */
    bool file;
    uint64_t max_messages;
    uint64_t max_bytes;
    uint64_t max_age_ms;
    uint64_t max_payload_bytes;
    uint32_t max_consumers;
} rift_client_stream_spec;

/** What the server reports of a stream (STREAM_INFO_EXT): its
 * definition with the limits in effect, and its state. */
typedef struct rift_client_stream_info {
    char name[97];
    /** Space-separated subject patterns. */
    char subjects[4097];
    bool file;
    uint64_t max_messages;
    uint64_t max_bytes;
    uint64_t max_age_ms;
    uint64_t max_payload_bytes;
    uint32_t max_consumers;
    uint64_t messages;
    uint64_t bytes;
    uint64_t first_sequence;
    uint64_t last_sequence;
    uint32_t consumers;
    /** Not one of the server's configured streams (riftd: made at run
     * time, or a NATS Streaming channel). */
    bool runtime;
} rift_client_stream_info;

/**
 * rift_client_stream_get_info reads stream |stream|. A stream whose
 * subjects the identity may not all subscribe to is "unknown stream",
 * exactly as one that does not exist.
 *
 * Errors: RIFT_ERR_REMOTE ("unknown stream", "unknown opcode" from a
 * server without the extension); as rift_client_ack otherwise.
 */
RIFT_EXTERN int rift_client_stream_get_info(rift_client *c, const char *stream,
                                            size_t stream_len,
                                            rift_client_stream_info *info,
                                            rift_error *err);

/**
 * rift_client_stream_create makes stream |stream| (the identity needs a
 * `streams` grant covering the name and subscribe rights on every
 * subject); |info| (may be NULL) receives the new stream's info.
 * rift_client_stream_update changes its limits (and subjects); the
 * stream's records and consumers are kept. Both work on run-time streams
 * only: a configured one is refused.
 *
 * Errors: RIFT_ERR_PERMISSION ("stream administration not permitted",
 * "subscription not permitted"); RIFT_ERR_REMOTE ("invalid stream name",
 * "stream already exists", "unknown stream", "stream <name> is configured:
 * change it in riftd's configuration", "stream is in use; try again",
 * "stream storage cannot change", "stream administration not offered",
 * the store's limit texts); as rift_client_ack otherwise.
 */
RIFT_EXTERN int rift_client_stream_create(rift_client *c, const char *stream,
                                          size_t stream_len,
                                          const rift_client_stream_spec *spec,
                                          rift_client_stream_info *info,
                                          rift_error *err);
RIFT_EXTERN int rift_client_stream_update(rift_client *c, const char *stream,
                                          size_t stream_len,
                                          const rift_client_stream_spec *spec,
                                          rift_client_stream_info *info,
                                          rift_error *err);

/**
 * rift_client_stream_purge drops every record of a run-time stream and
 * keeps its consumers (moved past the dropped records) and its sequence
 * (the next publish gets the next one); rift_client_stream_delete removes
 * the stream with its consumers and data. Errors: as
 * rift_client_stream_create.
 */
RIFT_EXTERN int rift_client_stream_purge(rift_client *c, const char *stream,
                                         size_t stream_len, rift_error *err);
RIFT_EXTERN int rift_client_stream_delete(rift_client *c, const char *stream,
                                          size_t stream_len, rift_error *err);

/** Completion of the asynchronous info, create and update: |info| (NULL
 * when |status| is not 0) is valid during the callback. */
typedef void (*rift_client_stream_info_cb)(void *user_data, int status,
                                           const rift_client_stream_info *info,
                                           const rift_error *err);

/* The same calls without the wait; |cb| runs on the client thread (the
 * rules of the asynchronous calls in rift/client.h). */
RIFT_EXTERN int rift_client_stream_get_info_async(
    rift_client *c, const char *stream, size_t stream_len,
    rift_client_stream_info_cb cb, void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_stream_create_async(
    rift_client *c, const char *stream, size_t stream_len,
    const rift_client_stream_spec *spec, rift_client_stream_info_cb cb,
    void *user_data, rift_error *err);
RIFT_EXTERN int rift_client_stream_update_async(
    rift_client *c, const char *stream, size_t stream_len,
    const rift_client_stream_spec *spec, rift_client_stream_info_cb cb,
    void *user_data, rift_error *err);
RIFT_EXTERN int
rift_client_stream_purge_async(rift_client *c, const char *stream,
                               size_t stream_len, rift_client_done_cb cb,
                               void *user_data, rift_error *err);
RIFT_EXTERN int
rift_client_stream_delete_async(rift_client *c, const char *stream,
                                size_t stream_len, rift_client_done_cb cb,
                                void *user_data, rift_error *err);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_CLIENT_STREAM_H */
