/*
 * natsraw.h — test support for the NATS listener (src/nats): a listener
 * on an ephemeral loopback port over an in-process broker with three
 * principals, and a raw-socket client that waits for bytes with a
 * deadline (no sleeps).
 *
 * Principals: "alice" (token NATSRAW_ALICE) publishes a.>, svc.>, _INBOX.>
 * and subscribes a.>; "bob" (NATSRAW_BOB) publishes svc.>, b.>, _INBOX.>
 * and subscribes svc.>, b.>, _INBOX.> (the broad inbox grant an attacker
 * would want); "carol" (NATSRAW_CAROL) publishes and subscribes c.>.
 */
#ifndef RIFT_TEST_NATSRAW_H
#define RIFT_TEST_NATSRAW_H

#include "nats/nats.h"

#include <stdbool.h>
#include <stddef.h>

#define NATSRAW_ALICE "alice-token-0123456789abcdefghijklmnopqrstuvwxyz"
#define NATSRAW_BOB   "bob-token-0123456789abcdefghijklmnopqrstuvwxyz"
#define NATSRAW_CAROL "carol-token-0123456789abcdefghijklmnopqrstuvwxyz"

typedef struct natsraw_fix {
    rift_broker *broker;
    rift_nats *nats;
    char host[64];
    int port;
} natsraw_fix;

/* Starts the listener; |tweak| (may be NULL) adjusts the settings. */
int natsraw_start(natsraw_fix *f, void (*tweak)(rift_nats_settings *s));
void natsraw_stop(natsraw_fix *f);

typedef struct natsraw {
    int fd;
    char *buf; /* what arrived and was not consumed yet */
    size_t len;
    size_t cap;
    bool eof;
} natsraw;

/* Connects and reads the INFO line (kept in *info when not NULL). */
natsraw *natsraw_connect(const natsraw_fix *f, int rcvbuf, char *info,
                         size_t info_cap);
void natsraw_close(natsraw *c);
/* Sends all of |s| (|len| bytes; strlen when 0). */
bool natsraw_send(natsraw *c, const char *s, size_t len);
/* Reads until |needle| arrived; drops everything up to its end. */
bool natsraw_expect(natsraw *c, const char *needle, int timeout_ms);
/* Reads until |needle| arrived, consuming nothing. */
bool natsraw_await(natsraw *c, const char *needle, int timeout_ms);
/* Reads until the server closed; true when it did in time. */
bool natsraw_wait_closed(natsraw *c, int timeout_ms);
/* Whether |needle| is among the bytes received so far (not consumed). */
bool natsraw_has(const natsraw *c, const char *needle);
/* CONNECT with |token| and extra JSON members |opts| ("" for none),
 * then PING; true once PONG came back. */
bool natsraw_hello(natsraw *c, const char *token, const char *opts);
/* Sends PING and waits for PONG (a flush barrier). */
bool natsraw_ping(natsraw *c);

#endif /* RIFT_TEST_NATSRAW_H */
