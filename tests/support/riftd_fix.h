/*
 * riftd_fix.h — a riftd process for integration tests (tests layer): a
 * temporary directory with development certificates (tls/) and a
 * configuration file, riftd started there on 127.0.0.1 port 0 with the
 * principals' tokens in its environment, clients connected to the address
 * it logged, and control requests over the wire.
 */
#ifndef RIFT_TESTS_RIFTD_FIX_H
#define RIFT_TESTS_RIFTD_FIX_H

#include "procs.h"
#include "rift/client.h"

#include <jansson.h>

/* Tokens handed to riftd as RIFT_TEST_TOKEN and RIFT_TEST_TOKEN2. */
#define RIFTD_FIX_TOKEN  "plugin-token-0123456789abcdef0123456789"
#define RIFTD_FIX_TOKEN2 "worker-token-0123456789abcdef0123456789"
/* The backbone password riftd reads from RIFT_TEST_BACKBONE_PASSWORD
 * (cluster_fix backbone_auth). */
#define RIFTD_FIX_BACKBONE_PW "bb-pw-5f0c2a91d7e34b68a1c9"

typedef struct riftd_fix {
    char *dir;
    char ca[700];
    rift_proc p;
    bool running;
} riftd_fix;

/* Creates the directory, tls/{ca,server}.pem and rift.lua = |config|. */
bool riftd_fix_init(riftd_fix *f, const char *config);

/* Starts `riftd -c rift.lua` (plus |extra| args, NULL-ended, may be NULL)
 * and waits until it is ready; f->p.address is the bound address. */
bool riftd_fix_start(riftd_fix *f, const char *const *extra);

/* SIGTERM; returns riftd's exit status. */
int riftd_fix_stop(riftd_fix *f);

/* Kills riftd if it still runs and removes the directory. */
void riftd_fix_free(riftd_fix *f);

/* Writes |init_lua| as plugins/|name|/init.lua under f->dir (the folder a
 * configuration's plugins = { { name = ..., path = "plugins/..." } } names). */
bool riftd_fix_plugin(const riftd_fix *f, const char *name,
                      const char *init_lua);

/* Connects a client with |token| to the running riftd. */
bool riftd_fix_connect(riftd_fix *f, const char *token, rift_client **pc);

/*
 * riftd_fix_control sends a REQUEST to rift.control.<cmd> with |payload|
 * and returns the parsed answer ({"ok":...}), or NULL (the failure is
 * printed). |text|, when not NULL, receives the raw answer (free()).
 */
json_t *riftd_fix_control(rift_client *c, const char *cmd, const char *payload,
                          char **text);

/* Receives one message within 10 s; returns its payload as a new string
 * (free()) or NULL. */
char *riftd_fix_next(rift_client_sub *sub);

#endif /* RIFT_TESTS_RIFTD_FIX_H */
