/*
 * ni.h — the nats.c interop client (tests layer): shared helpers of its
 * scenarios. The program's contract (NI_* environment, exit status, the
 * "await-restart" line) is the Go client's, tests/interop/go/nats-interop.
 */
#ifndef RIFT_TESTS_NI_H
#define RIFT_TESTS_NI_H

#include <nats/nats.h>
#include <stdbool.h>

/* Every wait is bounded by this many milliseconds. */
#define NI_WAIT_MS 10000

/* Records why the scenario failed (first reason wins) and returns false. */
bool ni_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Fails with |what| and the status text unless |s| is NATS_OK. */
bool ni_ok(natsStatus s, const char *what);

/* Connects as "alice" (NI_AUTH's way), "bob" or "carol"; |opts_out|, when
 * not NULL, gets the options to adjust before connecting through
 * ni_connect_opts instead. */
bool ni_connect(const char *who, natsConnection **nc);
natsOptions *ni_options(const char *who);
bool ni_connect_opts(natsOptions *o, natsConnection **nc);

/* Receives one message with payload |want| on |sub|. */
bool ni_expect(natsSubscription *sub, const char *want);

/* The scenarios; each returns true when it held. */
bool ni_tls_ca(void);
bool ni_missing_ca(void);
bool ni_auth_token(void);
bool ni_auth_userpass(void);
bool ni_bad_token(void);
bool ni_wildcards(void);
bool ni_queue(void);
bool ni_headers(void);
bool ni_request_reply(void);
bool ni_no_responders(void);
bool ni_permissions(void);
bool ni_reconnect(void);

#endif /* RIFT_TESTS_NI_H */
