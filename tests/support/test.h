/*
 * test.h — rift's in-house test runner (tests layer). A test file defines
 * tests with RIFT_TEST(name) { ... } and links runner.c; the binary runs
 * every test (or those named on the command line) and ends with the line
 * "N passed, N failed". CMake registers one ctest per RIFT_TEST.
 *
 * Assertions print file:line and both values, mark the test failed and
 * return from the test function. Helper functions that assert should be
 * called through CHECK_OK(helper(...)) style wrappers or return a status.
 */
#ifndef RIFT_TESTS_TEST_H
#define RIFT_TESTS_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*rift_test_fn)(void);

void rift_test_register(const char *name, rift_test_fn fn);
/* Marks the running test failed (the CHECK macros call it). */
void rift_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True when the running test has failed so far. */
bool rift_test_failed(void);
/* Marks the running test skipped: it could not run here (a peer program
 * or IPv6 missing), with the reason printed. Use SKIP(...), which also
 * returns. A binary whose selected tests all skipped exits with
 * RIFT_TEST_SKIPPED, which ctest reports as skipped (SKIP_RETURN_CODE);
 * scripts/test.sh fails on any skip it was not told to expect. */
void rift_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define RIFT_TEST_SKIPPED 77

#define SKIP(...)                                                              \
 do {                                                                          \
  rift_test_skip(__VA_ARGS__);                                                 \
  return;                                                                      \
 } while (0)

#define RIFT_TEST(name)                                                        \
 static void test_##name(void);                                                \
 __attribute__((constructor)) static void register_##name(void) {              \
  rift_test_register(#name, test_##name);                                      \
 }                                                                             \
 static void test_##name(void)

#define CHECK(cond)                                                            \
 do {                                                                          \
  if (!(cond)) {                                                               \
   rift_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                     \
   return;                                                                     \
  }                                                                            \
 } while (0)

#define CHECK_MSG(cond, ...)                                                   \
 do {                                                                          \
  if (!(cond)) {                                                               \
   rift_test_fail(__FILE__, __LINE__, __VA_ARGS__);                            \
   return;                                                                     \
  }                                                                            \
 } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
 do {                                                                          \
  long long a_ = (long long)(a), b_ = (long long)(b);                          \
  if (a_ != b_) {                                                              \
   rift_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_,    \
                  b_);                                                         \
   return;                                                                     \
  }                                                                            \
 } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
 do {                                                                          \
  uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                             \
  if (a_ != b_) {                                                              \
   rift_test_fail(__FILE__, __LINE__, "%s == %s: %" PRIu64 " != %" PRIu64, #a, \
                  #b, a_, b_);                                                 \
   return;                                                                     \
  }                                                                            \
 } while (0)

/* Succeeds when the int expression is 0; prints its name otherwise. */
#define CHECK_OK(expr)                                                         \
 do {                                                                          \
  long long r_ = (long long)(expr);                                            \
  if (r_ != 0) {                                                               \
   rift_test_fail(__FILE__, __LINE__, "%s returned %lld", #expr, r_);          \
   return;                                                                     \
  }                                                                            \
 } while (0)

#define CHECK_EQ_STR(a, b)                                                     \
 do {                                                                          \
  const char *a_ = (a), *b_ = (b);                                             \
  if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                       \
   rift_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,    \
                  a_ ? a_ : "(null)", b_ ? b_ : "(null)");                     \
   return;                                                                     \
  }                                                                            \
 } while (0)

#define CHECK_EQ_MEM(a, alen, b, blen)                                         \
 do {                                                                          \
  size_t al_ = (size_t)(alen), bl_ = (size_t)(blen);                           \
  if (al_ != bl_ || (al_ > 0 && memcmp((a), (b), al_) != 0)) {                 \
   rift_test_fail(__FILE__, __LINE__, "%s[%zu] != %s[%zu] (bytes differ)", #a, \
                  al_, #b, bl_);                                               \
   return;                                                                     \
  }                                                                            \
 } while (0)

/* ---- Support for tests that need files, ports, processes ---- */

/* Creates a fresh temporary directory; the caller frees the path with
 * rift_test_rmdir (which also removes it and its contents). */
char *rift_test_tmpdir(void);
void rift_test_rmdir(char *path);

/* Returns a free UDP port on 127.0.0.1 (bound then released). */
int rift_test_free_udp_port(void);
/* The same for TCP (a nats-server's or riftd's NATS listener's port). */
int rift_test_free_tcp_port(void);

/* Polls |cond(arg)| every millisecond until it is true or |timeout_ms|
 * passes. Returns true when the condition held. */
bool rift_test_wait_until(bool (*cond)(void *arg), void *arg, int timeout_ms);

#endif /* RIFT_TESTS_TEST_H */
