/*
 * rift.h — common public definitions of librift: version, export marker,
 * error codes and the error detail record, the allocator hook, and the
 * conventions every public header (rift.h, broker.h, stream.h, server.h,
 * client.h) follows.
 *
 * Every other public header includes this one.
 *
 * Conventions
 *
 * Names. Functions read rift_<object>_<verb>; types are rift_<noun>, the
 * struct tag equal to the typedef. The client's stand-in for an in-process
 * object is rift_client_<noun> (rift_client_sub mirrors rift_sub,
 * rift_client_delivery rift_delivery); data that means the same on both
 * sides is one type (rift_stored, rift_consumer_config).
 *
 * Lifecycle. An object that stands alone is made by rift_<obj>_new(&obj,
 * ..., err) and destroyed by rift_<obj>_del(obj) (rift_broker, rift_stream,
 * rift_server, rift_client, rift_notifier). A handle opened on another
 * object is made by that object's verb (rift_broker_subscribe,
 * rift_stream_consumer_open, rift_client_subscribe,
 * rift_client_publisher_open) and released by rift_<handle>_close, which
 * ends the handle, not what it names (a durable consumer's state stays).
 * A message is counted: rift_msg_new, rift_msg_ref, rift_msg_unref.
 * _del, _close, _unref and _free accept NULL as a no-op.
 *
 * Results. A created object comes back through a rift_<x> ** out-parameter,
 * set only on success. A result struct (rift_stored, rift_batch,
 * rift_stream_info, rift_server_stats, ...) is caller storage filled on
 * success; when it holds memory the library allocated, rift_<type>_free
 * empties it. Optional result pointers are documented as "may be NULL".
 *
 * Returns. A call that can fail returns int: 0 on success, a negative
 * RIFT_ERR_* code or -errno on failure; a count-or-error is rift_ssize.
 * Predicates return bool, calls that cannot fail return void. No call
 * returns a positive status: a success that needs telling apart is a
 * result (stream.h's _async calls set `bool *completed` when already
 * complete and their callback will not run).
 *
 * Errors. A call that can fail takes `rift_error *err` as its last
 * parameter; NULL is allowed, and it is written only on failure (code and
 * the reference's text). The _fd getters, whose one failure is -errno from
 * eventfd, are the exception. Every function's comment ends with its
 * error codes.
 *
 * Callbacks. A callback type is rift_<event>_cb. Its first parameter is
 * `void *user_data`, then `int status` (0 or the failure code) and the
 * results, then `const rift_error *err` (valid during the call). A call
 * that registers one takes `(rift_<event>_cb cb, void *user_data)` side by
 * side; if the call fails, the callback never runs. Each header says on
 * which thread callbacks run and what they may call.
 *
 * Time. A wait passed to a call is `int64_t timeout_ns`: 0 polls, a
 * negative value waits without limit (RIFT_MSEC and RIFT_SEC spell
 * values). A configured duration or a protocol field (settings, consumer
 * configuration) is `uint64_t <name>_ms`, the unit of the wire and of
 * riftd's configuration. Timestamps are rift_tstamp (ns) or *_ms since the
 * Unix epoch, as named.
 *
 * Memory. An object with settings takes its allocator in settings.mem;
 * other constructors take `const rift_mem *mem` right after the
 * out-pointer. NULL means malloc (or the library's own message cache); a
 * given allocator must outlive everything made with it.
 *
 * Ownership words. "Borrowed": valid for the call only, the library keeps
 * no pointer (all string and payload arguments, always pointer + length,
 * no NUL needed). "Copied": settings and configurations. "The caller owns":
 * release it with the function named. "Must outlive": the library keeps the
 * pointer (a broker, a stream, an allocator).
 *
 * Threads. Each header's opening comment says which calls are
 * thread-safe; a function that differs says so in its own comment.
 *
 * Seams. Two settings fields point at types the public headers only name:
 * rift_stream_settings.vfs (struct rift_vfs, src/store/vfs.h: the file
 * system the store's fault tests replace) and rift_server_settings.quota
 * (struct rift_quota, src/subject/quota.h: accounting riftd shares between
 * front ends). They are for the library's own tests and riftd;
 * applications leave them NULL.
 */
#ifndef RIFT_RIFT_H
#define RIFT_RIFT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RIFT_BUILDING) && defined(__GNUC__)
# define RIFT_EXTERN __attribute__((visibility("default")))
#else
# define RIFT_EXTERN
#endif

#if defined(__GNUC__)
# define RIFT_NODISCARD __attribute__((warn_unused_result))
#else
# define RIFT_NODISCARD
#endif

#define RIFT_VERSION_MAJOR 0
#define RIFT_VERSION_MINOR 1
#define RIFT_VERSION_PATCH 0
#define RIFT_VERSION       "0.1.0"

/** The messaging protocol spoken on the wire (ALPN). */
#define RIFT_ALPN "rift-messaging/1"

/** "Bytes or error" return type. */
typedef ssize_t rift_ssize;

/** Monotonic or wall-clock timestamp in nanoseconds, as documented. */
typedef uint64_t rift_tstamp;

/** One millisecond and one second as a timeout_ns (`5 * RIFT_SEC`). */
#define RIFT_MSEC ((int64_t)1000000)
#define RIFT_SEC  ((int64_t)1000000000)

/* ---- Error codes ---- */

/*
 * Functions return 0 (or a count) on success and a negative value on
 * failure. System failures are -errno. Library codes live in [-1000,-1999];
 * codes below RIFT_ERR_FATAL mean the object is dead and only its _del
 * (or _close) function may be called.
 *
 * The X-macro below is the single source of the enum, rift_strerror(),
 * rift_err_name() and rift_err_is_fatal().
 */
#define RIFT_ERRORS(X)                                                         \
 X(INVALID_ARGUMENT, -1001, "invalid argument")                                \
 X(NOMEM, -1002, "out of memory")                                              \
 X(INVALID_SUBJECT, -1003, "invalid subject")                                  \
 X(INVALID_QUEUE, -1004, "invalid queue group")                                \
 X(INVALID_CONFIG, -1005, "invalid messaging configuration")                   \
 X(PAYLOAD_TOO_LARGE, -1006, "payload exceeds limit")                          \
 X(SUBSCRIPTION_LIMIT, -1007, "subscription limit reached")                    \
 X(SLOW_CONSUMER, -1008,                                                       \
   "subscriber exceeded its bounded queue and was disconnected")               \
 X(CLOSED, -1009, "subscription closed")                                       \
 X(TIMEOUT, -1010, "request timed out")                                        \
 X(NO_RESPONDERS, -1011, "no responders available")                            \
 X(IO, -1012, "messaging I/O")                                                 \
 X(STORAGE, -1013, "stream storage")                                           \
 X(STREAM_NOT_MATCHED, -1014, "subject does not match this stream")            \
 X(CONSUMER_NOT_FOUND, -1015, "consumer does not exist")                       \
 X(INVALID_ACK, -1016, "sequence is not pending acknowledgement")              \
 X(PERMISSION, -1017, "permission denied")                                     \
 X(PROTOCOL, -1018, "protocol error")                                          \
 X(AGAIN, -1019, "operation would block")                                      \
 X(UNKNOWN_STREAM, -1020, "unknown stream")                                    \
 X(TLS, -1021, "TLS error")                                                    \
 X(CONNECTION, -1022, "connection error")                                      \
 X(REMOTE, -1023, "server error")                                              \
 X(CALLBACK_FAILURE, -1024, "callback failure")                                \
 X(LUA, -1025, "Lua error")                                                    \
 X(UNUSABLE, -1026, "object unusable after a previous failure")                \
 X(EXISTS, -1027, "already exists")                                            \
 X(LIMIT, -1028, "limit reached")                                              \
 X(FATAL, -1500, "fatal error")                                                \
 X(POISONED, -1501, "object poisoned by an earlier failure")

typedef enum rift_err {
    RIFT_OK = 0,
#define RIFT_ERR_ENUM_(name, value, text) RIFT_ERR_##name = (value),
    RIFT_ERRORS(RIFT_ERR_ENUM_)
#undef RIFT_ERR_ENUM_
} rift_err;

/**
 * rift_strerror returns a static description of |code| (a RIFT_ERR_* value,
 * a negative errno, or 0). Never returns NULL. Thread-safe.
 */
RIFT_EXTERN const char *rift_strerror(int code);

/**
 * rift_err_name returns the symbolic name of |code| ("RIFT_ERR_TIMEOUT",
 * "ENOENT", ...), or "UNKNOWN". Never returns NULL. Thread-safe.
 */
RIFT_EXTERN const char *rift_err_name(int code);

/** rift_err_is_fatal returns nonzero when |code| is below RIFT_ERR_FATAL. */
RIFT_EXTERN int rift_err_is_fatal(int code);

/* ---- Error detail ---- */

/** Longest error text, in bytes (the protocol's peer-visible cap). */
#define RIFT_ERROR_TEXT_MAX 1024

/**
 * rift_error carries the code of a failure and its display text: the exact
 * text of the Rift v1 reference (for instance "invalid subject: a..b" or
 * "payload size 3 exceeds limit 2"). The caller owns the storage; functions
 * that fail fill it when a non-NULL pointer is passed and leave it untouched
 * on success. The text is NUL-terminated and never longer than
 * RIFT_ERROR_TEXT_MAX bytes (cut at a UTF-8 character boundary).
 */
typedef struct rift_error {
    int code;
    char text[RIFT_ERROR_TEXT_MAX + 4];
} rift_error;

/**
 * rift_error_wire_code returns the protocol ERROR code for |code|: 1 for
 * RIFT_ERR_PERMISSION, 2 for everything else.
 */
RIFT_EXTERN uint16_t rift_error_wire_code(int code);

/* ---- Allocator ---- */

/**
 * rift_mem lets an embedder supply the allocator. Pass NULL wherever a
 * `const rift_mem *` is taken to use malloc/realloc/free. The functions
 * must be thread-safe when the object using them is.
 */
typedef struct rift_mem {
    void *user_data;
    void *(*malloc)(size_t size, void *user_data);
    void (*free)(void *ptr, void *user_data);
    void *(*calloc)(size_t nmemb, size_t size, void *user_data);
    void *(*realloc)(void *ptr, size_t size, void *user_data);
} rift_mem;

/** rift_mem_default returns the malloc-based allocator. */
RIFT_EXTERN const rift_mem *rift_mem_default(void);

/** rift_version returns RIFT_VERSION of the library actually linked. */
RIFT_EXTERN const char *rift_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_RIFT_H */
