/*
 * nats_fix.h — a NATS server for the interop tests (tests layer): riftd
 * with its NATS listener, or the real nats-server (parity: the same
 * scenario must hold against both), in a temporary directory with
 * development certificates and the same three principals:
 *
 *   alice, bob  may publish and subscribe everything
 *   carol       may publish and subscribe under ni.open.> only (on
 *               nats-server also _INBOX.>, which riftd does not need)
 *
 * Clients (tests/interop/{go,c,js}) get the server and the credentials in
 * NI_* variables (tests/interop/go/nats-interop/main.go lists them).
 * Servers and clients come from the environment ctest sets: NI_NATS_SERVER,
 * NI_GO_CLIENT, NI_C_CLIENT, NI_NODE and NI_JS_CLIENT.
 */
#ifndef RIFT_TESTS_NATS_FIX_H
#define RIFT_TESTS_NATS_FIX_H

#include "procs.h"

#include <stdbool.h>

/* The principals' tokens (alice's also serves the rift CLI over QUIC). */
#define NATS_FIX_ALICE_TOKEN "alice-token-0123456789abcdef0123456789"
#define NATS_FIX_BOB_TOKEN   "bob-token-0123456789abcdef0123456789ab"
#define NATS_FIX_CAROL_TOKEN "carol-token-0123456789abcdef0123456789"

typedef enum nats_fix_target {
    NATS_FIX_RIFTD,
    NATS_FIX_NATS_SERVER,
} nats_fix_target;

typedef struct nats_fix {
    nats_fix_target target;
    /* nats-server only: `authorization { token }` instead of the users
     * (it cannot have both); alice then authenticates with the token. */
    bool token_mode;
    /* Plaintext on loopback (riftd: nats.allow_plaintext; nats-server: no
     * tls block); the URL is then nats://. */
    bool plaintext;
    /* riftd only: Lua table fields added to the configuration. */
    const char *riftd_extra;
    /* riftd only: init.lua of a plugin "ni" (plugins/ni/), or NULL. */
    const char *plugin_init;
    char *dir;
    char ca[700];
    rift_proc p;
    bool running;
    int port;      /* the NATS port, kept across restarts */
    char url[96];  /* tls://127.0.0.1:PORT */
    char quic[64]; /* riftd: the QUIC address, for the rift CLI */
} nats_fix;

/* Creates the directory and certificates and starts the server (on
 * failure it cleans up, as nats_fix_free); the
 * fields target, token_mode, plaintext, riftd_extra and plugin_init are
 * set by the caller first (the rest is zeroed). */
bool nats_fix_start(nats_fix *f);

/* Stops the server (SIGTERM) and starts it again on the same port. */
bool nats_fix_restart(nats_fix *f);

/* Stops the server and removes the directory. */
void nats_fix_free(nats_fix *f);

/* "riftd" or "nats-server". */
const char *nats_fix_name(const nats_fix *f);

/* The NI_* environment for a client (static storage, NULL-ended). */
const char *const *nats_fix_env(const nats_fix *f);

/* Starts |prog| |args| as a client of |f|, output in <dir>/<tag>.out/err. */
bool nats_fix_client_start(nats_fix *f, rift_proc *c, const char *tag,
                           const char *prog, const char *const *args);

/* Waits for a client started with nats_fix_client_start (at most
 * RIFT_PROC_WAIT_MS * 2); on a non-zero status prints its output. */
int nats_fix_client_wait(nats_fix *f, rift_proc *c);

/* One scenario of an official client (nats.c, nats.js): starts |target|,
 * runs |prog| |args| as scenario |name| ("reconnect": restarts the server
 * when the client prints await-restart) and checks it ends with 0. */
void nats_fix_scenario(nats_fix_target target, bool token_mode,
                       const char *name, const char *prog,
                       const char *const *args);

/* Runs a client to completion: nats_fix_client_start + _wait. */
int nats_fix_client_run(nats_fix *f, const char *prog, const char *const *args);

/* Environment variable |name|, or "" (then the test fails with a hint:
 * ctest sets them; scripts/deps.sh --test installs what they name). */
const char *nats_fix_tool(const char *name);

#endif /* RIFT_TESTS_NATS_FIX_H */
