/*
 * common.h — internal helpers shared by every layer (common layer): error
 * detail formatting, allocation through rift_mem, UTF-8 checks, clocks,
 * logging. Nothing here touches the network or the disk.
 */
#ifndef RIFT_COMMON_COMMON_H
#define RIFT_COMMON_COMMON_H

#include "rift/rift.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
# define RIFT_PRINTF(f, a) __attribute__((format(printf, f, a)))
# define RIFT_LIKELY(x)    __builtin_expect(!!(x), 1)
# define RIFT_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#else
# define RIFT_PRINTF(f, a)
# define RIFT_LIKELY(x)   (x)
# define RIFT_UNLIKELY(x) (x)
#endif

#define RIFT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RIFT_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define RIFT_MAX(a, b)    ((a) > (b) ? (a) : (b))

/* ---- Error detail ---- */

/*
 * rift_error_set fills |err| (if not NULL) with |code| and a printf-style
 * text, cut to RIFT_ERROR_TEXT_MAX bytes at a UTF-8 boundary. Returns |code|
 * so callers can write `return rift_error_set(err, RIFT_ERR_X, "...")`.
 */
int rift_error_set(rift_error *err, int code, const char *fmt, ...)
    RIFT_PRINTF(3, 4);
int rift_error_setv(rift_error *err, int code, const char *fmt, va_list ap)
    RIFT_PRINTF(3, 0);

/* rift_error_copy copies |src| into |dst| (either may be NULL). */
void rift_error_copy(rift_error *dst, const rift_error *src);

/*
 * rift_text_cut returns the largest length <= |max| such that |s|[0..len)
 * ends on a UTF-8 character boundary (the wire's truncation rule: keep the
 * characters that start at or before byte |max|... and end by it).
 */
size_t rift_text_cut(const char *s, size_t len, size_t max);

/* ---- Memory ---- */

void *rift_malloc(const rift_mem *mem, size_t size);
void *rift_calloc(const rift_mem *mem, size_t nmemb, size_t size);
void *rift_realloc(const rift_mem *mem, void *ptr, size_t size);
void rift_free(const rift_mem *mem, void *ptr);
/* Copies |len| bytes into a new NUL-terminated buffer. */
char *rift_strndup(const rift_mem *mem, const char *s, size_t len);

/* ---- UTF-8 ---- */

/* rift_utf8_valid returns true when |s|[0..len) is well-formed UTF-8. */
bool rift_utf8_valid(const uint8_t *s, size_t len);

/*
 * rift_utf8_next decodes the code point at |s|[*pos] (which must be valid
 * UTF-8), advances *pos past it and returns it.
 */
uint32_t rift_utf8_next(const uint8_t *s, size_t len, size_t *pos);

/* ---- Clocks ---- */

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
rift_tstamp rift_now_ns(void);
/* Wall-clock milliseconds since the Unix epoch (CLOCK_REALTIME). */
uint64_t rift_wall_ms(void);

/* ---- Randomness ---- */

/* rift_random fills |buf| from the CSPRNG (GnuTLS). 0 or RIFT_ERR_IO. */
int rift_random(void *buf, size_t len);

/* ---- Logging ---- */

typedef enum rift_log_level {
    RIFT_LOG_DEBUG = 0,
    RIFT_LOG_INFO = 1,
    RIFT_LOG_WARN = 2,
    RIFT_LOG_ERROR = 3,
    RIFT_LOG_OFF = 4,
} rift_log_level;

/* Longest message of one log line, bytes (longer ones are cut on a UTF-8
 * character boundary). */
#define RIFT_LOG_LINE_MAX 4096

/* rift_log writes one line "<UTC time> <level> <message>" to stderr with a
 * single write; line breaks in the message become spaces. */
void rift_log(rift_log_level level, const char *fmt, ...) RIFT_PRINTF(2, 3);
void rift_log_set_level(rift_log_level level);
rift_log_level rift_log_get_level(void);

#endif /* RIFT_COMMON_COMMON_H */
