/*
 * rift.h — common public definitions of librift: version, export marker,
 * error codes and the error detail record, the allocator hook.
 *
 * Every other public header includes this one.
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
