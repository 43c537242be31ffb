/*
 * test_nats_cross.c — one broker, two faces (tests layer): the rift CLI
 * (Rift v1 over QUIC) publishes and a NATS client (nats.go) receives; a
 * NATS request is answered by `rift reply` and by a Lua plugin; a rift
 * CLI request is answered by a NATS responder.
 */
// labels: nats
#include "nats_fix.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rift CLI's environment: riftd's QUIC face as alice. */
static const char *const *cli_env(const nats_fix *f) {
    static char server[96], ca[720];
    static const char *env[] = {server, ca, "RIFT_SERVER_NAME=localhost",
                                "RIFT_TOKEN=" NATS_FIX_ALICE_TOKEN, NULL};
    snprintf(server, sizeof(server), "RIFT_SERVER=%s", f->quic);
    snprintf(ca, sizeof(ca), "RIFT_CA=%s", f->ca);
    return env;
}

static int cli(const nats_fix *f, const char *const *args, char **out) {
    char *err = NULL;
    int rc =
        rift_proc_run(rift_proc_cli(), f->dir, args, cli_env(f), out, &err);
    if (rc != 0) {
        fprintf(stderr, "  rift %s exited with %d: %s\n", args[0], rc,
                err ? err : "");
    }
    free(err);
    return rc;
}

RIFT_TEST(cli_publishes_nats_receives) {
    nats_fix f = {.target = NATS_FIX_RIFTD};
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    CHECK(nats_fix_start(&f));
    const char *args[] = {"recv", "ni.open.cross.*", "2", NULL};
    rift_proc c;
    bool started = nats_fix_client_start(&f, &c, "recv", go, args);
    bool subscribed = started && rift_proc_wait_text(&c, false, "subscribed",
                                                     RIFT_PROC_WAIT_MS);
    const char *pub1[] = {"pub", "ni.open.cross.a", "from rift", NULL};
    const char *pub2[] = {"pub", "ni.open.cross.b", "second", NULL};
    int rc1 = subscribed ? cli(&f, pub1, NULL) : -1;
    int rc2 = subscribed ? cli(&f, pub2, NULL) : -1;
    int rc = started ? nats_fix_client_wait(&f, &c) : -1;
    char *out = started ? rift_proc_read(c.out) : NULL;
    nats_fix_free(&f);
    CHECK(subscribed);
    CHECK_EQ_INT(rc1, 0);
    CHECK_EQ_INT(rc2, 0);
    CHECK_EQ_INT(rc, 0);
    CHECK_MSG(out != NULL && strstr(out, "msg ni.open.cross.a from rift\n") &&
                  strstr(out, "msg ni.open.cross.b second\n"),
              "NATS client printed: %s", out ? out : "(nothing)");
    free(out);
}

/* Runs the Go client's `request SUBJECT ping` (it retries while no
 * responder is subscribed yet) and checks the reply it printed. */
static void nats_request(nats_fix *f, const char *subject, const char *want) {
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    const char *args[] = {"request", subject, "ping", NULL};
    rift_proc c;
    CHECK(nats_fix_client_start(f, &c, "request", go, args));
    int rc = nats_fix_client_wait(f, &c);
    char *out = rift_proc_read(c.out);
    CHECK_EQ_INT(rc, 0);
    CHECK_MSG(out != NULL && strstr(out, want) != NULL,
              "reply printed: %s, want %s", out ? out : "(nothing)", want);
    free(out);
}

RIFT_TEST(rift_reply_answers_nats_request) {
    nats_fix f = {.target = NATS_FIX_RIFTD};
    CHECK(nats_fix_start(&f));
    const char *args[] = {"reply",   "ni.open.svc", "answer from rift",
                          "--count", "1",           NULL};
    rift_proc r;
    bool started = rift_proc_start(&r, rift_proc_cli(), f.dir, "reply", args,
                                   cli_env(&f), NULL, 0);
    if (started) {
        nats_request(&f, "ni.open.svc", "reply answer from rift\n");
    }
    int rc = started ? rift_proc_wait(&r, RIFT_PROC_WAIT_MS) : -1;
    nats_fix_free(&f);
    CHECK(started);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(lua_plugin_answers_nats_request) {
    nats_fix f = {.target = NATS_FIX_RIFTD,
                  .plugin_init = "rift.subscribe('ni.open.lua', function(msg)\n"
                                 "  msg:respond('lua got ' .. msg.payload)\n"
                                 "end)\n"};
    CHECK(nats_fix_start(&f));
    nats_request(&f, "ni.open.lua", "reply lua got ping\n");
    nats_fix_free(&f);
}

RIFT_TEST(nats_responder_answers_rift_request) {
    nats_fix f = {.target = NATS_FIX_RIFTD};
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    CHECK(nats_fix_start(&f));
    const char *args[] = {"serve", "ni.open.back", "1", NULL};
    rift_proc c;
    bool started = nats_fix_client_start(&f, &c, "serve", go, args);
    bool ready = started && rift_proc_wait_text(&c, false, "subscribed",
                                                RIFT_PROC_WAIT_MS);
    char *out = NULL;
    const char *req[] = {"req", "ni.open.back", "from rift", NULL};
    int rc = ready ? cli(&f, req, &out) : -1;
    int served = started ? nats_fix_client_wait(&f, &c) : -1;
    nats_fix_free(&f);
    CHECK(ready);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(served, 0);
    CHECK_MSG(out != NULL && strstr(out, "nats got from rift") != NULL,
              "rift req printed: %s", out ? out : "(nothing)");
    free(out);
}
