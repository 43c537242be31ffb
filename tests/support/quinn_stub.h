/*
 * quinn_stub.h — runs the independent Quinn + rustls peer
 * (tests/quinn-peer, `rift-quinn-peer stub`) as a small Rift server for the
 * client's interop tests (tests layer): development certificates in a temp
 * dir, the stub on 127.0.0.1 port 0, its address parsed from its
 * "listening on" line.
 */
#ifndef RIFT_TESTS_QUINN_STUB_H
#define RIFT_TESTS_QUINN_STUB_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct quinn_stub {
    pid_t pid;
    int out_fd;    /* the stub's stdout (kept open until stop) */
    char *dir;     /* temp dir with ca.pem, server.pem, server.key */
    char *other;   /* a second, unrelated CA (wrong-CA tests) */
    char ca[4200]; /* CA file trusted by clients */
    char other_ca[4200];
    char addr[64];  /* "127.0.0.1:PORT" */
    char token[64]; /* the token the stub accepts */
    char why[512];  /* why start failed */
} quinn_stub;

/*
 * quinn_stub_binary returns the peer's path (RIFT_SOURCE_DIR/tests/
 * quinn-peer/target/release/rift-quinn-peer) or NULL when it is missing.
 */
const char *quinn_stub_binary(void);

/* Skips the running test (test.h SKIP) when the peer is not built: the one
 * lookup every interop test uses. CI builds the peer first, so there a
 * skip is unexpected and fails the run (scripts/test.sh). */
#define SKIP_WITHOUT_QUINN_PEER()                                              \
 do {                                                                          \
  if (quinn_stub_binary() == NULL) {                                           \
   SKIP("rift-quinn-peer is not built: run scripts/interop-build.sh");         \
  }                                                                            \
 } while (0)

/* Starts the stub accepting |token|. False (with st->why) on failure. */
bool quinn_stub_start(quinn_stub *st, const char *token);

/* Kills the stub and removes its files. */
void quinn_stub_stop(quinn_stub *st);

#endif /* RIFT_TESTS_QUINN_STUB_H */
