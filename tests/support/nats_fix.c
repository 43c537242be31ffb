/*
 * nats_fix.c — riftd or nats-server for the NATS interop tests (tests
 * layer). See nats_fix.h.
 */
#include "nats_fix.h"

#include "quic/certgen.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ALICE_TOKEN NATS_FIX_ALICE_TOKEN
#define BOB_TOKEN   NATS_FIX_BOB_TOKEN
#define CAROL_TOKEN NATS_FIX_CAROL_TOKEN

/* Limits both servers get, so that the slow-consumer scenario needs a
 * few MiB, not 64 (nats-server wants max_pending >= max_payload). 32 MiB,
 * not less: the scenario's publisher sends 4 MiB between flushes, and
 * riftd never slows a publisher down for a subscriber (nats-server stalls
 * it briefly), so a healthy reader needs room for bursts and for falling
 * behind on a loaded machine (16 MiB failed about one run in two at load
 * average 20 once the listener ingested faster). The scenario floods
 * 64 MiB, more than 32 MiB plus the socket buffers, so a client that never
 * reads is still cut off. */
#define MAX_PENDING    "33554432"
#define WRITE_DEADLINE "2"

const char *nats_fix_tool(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr,
                "  %s is not set: ctest sets it when CMake found the tool "
                "(scripts/deps.sh --test installs it; re-run cmake)\n",
                name);
        return "";
    }
    return v;
}

const char *nats_fix_name(const nats_fix *f) {
    return f->target == NATS_FIX_RIFTD ? "riftd" : "nats-server";
}

static bool write_riftd_config(nats_fix *f) {
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", f->port);
    char cfg[4096];
    int n = snprintf(
        cfg, sizeof(cfg),
        "return {\n"
        "  log = 'info',\n"
        "  messaging = {\n"
        "    listen = '127.0.0.1:0',\n"
        "    certificate = 'tls/server.pem', private_key = 'tls/server.key',\n"
        "    principals = {\n"
        "      { name = 'alice', token_env = 'NI_ALICE_TOKEN',\n"
        "        publish = { '>' }, subscribe = { '>' } },\n"
        "      { name = 'bob', token_env = 'NI_BOB_TOKEN',\n"
        "        publish = { '>' }, subscribe = { '>' } },\n"
        "      { name = 'carol', token_env = 'NI_CAROL_TOKEN',\n"
        "        publish = { 'ni.open.>' }, subscribe = { 'ni.open.>' } },\n"
        "    },\n"
        "  },\n"
        "  nats = { listen = '%s', max_pending = " MAX_PENDING ",\n"
        "           write_deadline = " WRITE_DEADLINE
        ", allow_plaintext = %s },\n"
        "%s%s"
        "}\n",
        listen, f->plaintext ? "true" : "false",
        f->plugin_init ? "  plugins = { 'ni' },\n" : "",
        f->riftd_extra ? f->riftd_extra : "");
    return n > 0 && (size_t)n < sizeof(cfg) &&
           rift_proc_write_file(f->dir, "rift.lua", cfg);
}

static bool write_nats_server_config(nats_fix *f) {
    char port[16];
    snprintf(port, sizeof(port), "%d", f->port == 0 ? -1 : f->port);
    const char *users =
        "authorization {\n"
        "  users = [\n"
        "    { user: alice, password: \"" ALICE_TOKEN "\" }\n"
        "    { user: bob, password: \"" BOB_TOKEN "\" }\n"
        "    { user: carol, password: \"" CAROL_TOKEN "\",\n"
        "      permissions: { publish: [\"ni.open.>\", \"_INBOX.>\"],\n"
        "                     subscribe: [\"ni.open.>\", \"_INBOX.>\"] } }\n"
        "  ]\n"
        "}\n";
    const char *token = "authorization { token: \"" ALICE_TOKEN "\" }\n";
    const char *tls = "tls { cert_file: \"tls/server.pem\", "
                      "key_file: \"tls/server.key\", timeout: 5 }\n";
    char cfg[2048];
    int n =
        snprintf(cfg, sizeof(cfg),
                 "host: 127.0.0.1\nport: %s\n"
                 "max_pending: " MAX_PENDING "\n"
                 "write_deadline: \"" WRITE_DEADLINE "s\"\n"
                 "%s%s",
                 port, f->plaintext ? "" : tls, f->token_mode ? token : users);
    return n > 0 && (size_t)n < sizeof(cfg) &&
           rift_proc_write_file(f->dir, "nats.conf", cfg);
}

/* Copies the "IP:PORT" after |key| in |log| into |out|. */
static bool address_after(const char *log, const char *key, char *out,
                          size_t cap) {
    const char *at = log ? strstr(log, key) : NULL;
    if (at == NULL) {
        return false;
    }
    at += strlen(key);
    size_t len = strcspn(at, " \r\n");
    if (len == 0 || len >= cap) {
        return false;
    }
    memcpy(out, at, len);
    out[len] = '\0';
    return true;
}

static bool learn_port(nats_fix *f, const char *key) {
    char *log = rift_proc_read(f->p.err);
    char addr[64];
    bool ok = address_after(log, key, addr, sizeof(addr));
    if (ok) {
        const char *colon = strrchr(addr, ':');
        f->port = colon ? atoi(colon + 1) : 0;
        ok = f->port > 0;
    }
    if (ok && f->target == NATS_FIX_RIFTD) {
        ok = address_after(log, "rift: messaging QUIC on ", f->quic,
                           sizeof(f->quic));
    }
    if (!ok) {
        fprintf(stderr, "  %s logged no \"%s<address>\":\n%s\n",
                nats_fix_name(f), key, log ? log : "(no log)");
    }
    free(log);
    snprintf(f->url, sizeof(f->url), "%s://127.0.0.1:%d",
             f->plaintext ? "nats" : "tls", f->port);
    return ok;
}

static bool start_riftd(nats_fix *f) {
    if (!write_riftd_config(f)) {
        return false;
    }
    const char *args[] = {"-c", "rift.lua", NULL};
    const char *env[] = {"NI_ALICE_TOKEN=" ALICE_TOKEN,
                         "NI_BOB_TOKEN=" BOB_TOKEN,
                         "NI_CAROL_TOKEN=" CAROL_TOKEN, NULL};
    if (!rift_proc_start(&f->p, rift_proc_riftd(), f->dir, "riftd", args, env,
                         NULL, 0)) {
        fprintf(stderr, "  cannot start riftd (RIFT_TEST_RIFTD unset?)\n");
        return false;
    }
    f->running = true;
    return rift_proc_riftd_ready(&f->p) && learn_port(f, "rift: NATS on ");
}

static bool start_nats_server(nats_fix *f) {
    const char *prog = nats_fix_tool("NI_NATS_SERVER");
    if (!write_nats_server_config(f)) {
        return false;
    }
    const char *args[] = {"-c", "nats.conf", NULL};
    if (!rift_proc_start(&f->p, prog, f->dir, "nats-server", args, NULL, NULL,
                         0)) {
        return false;
    }
    f->running = true;
    if (!rift_proc_wait_text(&f->p, true, "Server is ready",
                             RIFT_PROC_WAIT_MS)) {
        char *log = rift_proc_read(f->p.err);
        fprintf(stderr, "  nats-server did not become ready:\n%s\n",
                log ? log : "(no log)");
        free(log);
        return false;
    }
    return learn_port(f, "Listening for client connections on ");
}

static bool start(nats_fix *f) {
    return f->target == NATS_FIX_RIFTD ? start_riftd(f) : start_nats_server(f);
}

static bool set_up(nats_fix *f) {
    nats_fix_target target = f->target;
    bool token_mode = f->token_mode;
    const char *extra = f->riftd_extra;
    const char *plugin = f->plugin_init;
    bool plaintext = f->plaintext;
    memset(f, 0, sizeof(*f));
    f->plaintext = plaintext;
    f->target = target;
    f->token_mode = token_mode;
    f->riftd_extra = extra;
    f->plugin_init = plugin;
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    char tls[700];
    snprintf(tls, sizeof(tls), "%s/tls", f->dir);
    snprintf(f->ca, sizeof(f->ca), "%s/tls/ca.pem", f->dir);
    rift_error err = {0};
    if (rift_certgen_dev(tls, NULL, &err) != 0) {
        fprintf(stderr, "  certgen: %s\n", err.text);
        return false;
    }
    if (f->plugin_init != NULL) {
        char plugin_dir[700];
        snprintf(plugin_dir, sizeof(plugin_dir), "%s/plugins/ni", f->dir);
        char parent[700];
        snprintf(parent, sizeof(parent), "%s/plugins", f->dir);
        if (mkdir(parent, 0700) != 0 || mkdir(plugin_dir, 0700) != 0 ||
            !rift_proc_write_file(plugin_dir, "init.lua", f->plugin_init)) {
            return false;
        }
    }
    return start(f);
}

bool nats_fix_start(nats_fix *f) {
    if (set_up(f)) {
        return true;
    }
    nats_fix_free(f);
    return false;
}

static void stop(nats_fix *f) {
    if (!f->running) {
        return;
    }
    f->running = false;
    int rc = rift_proc_stop(&f->p, SIGTERM);
    /* nats-server ends with 1 on SIGTERM; riftd must end with 0. */
    if (rc != 0 && f->target == NATS_FIX_RIFTD) {
        char *log = rift_proc_read(f->p.err);
        fprintf(stderr, "  riftd exited with %d:\n%s\n", rc,
                log ? log : "(no log)");
        free(log);
        rift_test_fail(__FILE__, __LINE__, "riftd exited with %d", rc);
    }
}

bool nats_fix_restart(nats_fix *f) {
    stop(f);
    return start(f);
}

void nats_fix_free(nats_fix *f) {
    stop(f);
    rift_test_rmdir(f->dir);
    f->dir = NULL;
}

const char *const *nats_fix_env(const nats_fix *f) {
    static char url[128], ca[720], auth[32], target[32];
    static const char *env[] = {url,
                                ca,
                                auth,
                                target,
                                "NI_ALICE_TOKEN=" ALICE_TOKEN,
                                "NI_BOB_TOKEN=" BOB_TOKEN,
                                "NI_CAROL_TOKEN=" CAROL_TOKEN,
                                NULL};
    snprintf(url, sizeof(url), "NI_URL=%s", f->url);
    /* No CA in plaintext: the clients then do not ask for TLS. */
    snprintf(ca, sizeof(ca), "NI_CA=%s", f->plaintext ? "" : f->ca);
    /* riftd takes both forms at once; nats-server one per config. */
    bool token = f->target == NATS_FIX_RIFTD || f->token_mode;
    snprintf(auth, sizeof(auth), "NI_AUTH=%s", token ? "token" : "user");
    snprintf(target, sizeof(target), "NI_TARGET=%s", nats_fix_name(f));
    return env;
}

bool nats_fix_client_start(nats_fix *f, rift_proc *c, const char *tag,
                           const char *prog, const char *const *args) {
    if (prog[0] == '\0') {
        return false;
    }
    return rift_proc_start(c, prog, f->dir, tag, args, nats_fix_env(f), NULL,
                           0);
}

int nats_fix_client_wait(nats_fix *f, rift_proc *c) {
    (void)f;
    int rc = rift_proc_wait(c, 2 * RIFT_PROC_WAIT_MS);
    if (rc != 0) {
        char *out = rift_proc_read(c->out);
        char *err = rift_proc_read(c->err);
        fprintf(stderr,
                "  client exited with %d\n  stdout:\n%s\n  stderr:\n%s\n", rc,
                out ? out : "", err ? err : "");
        free(out);
        free(err);
    }
    return rc;
}

int nats_fix_client_run(nats_fix *f, const char *prog,
                        const char *const *args) {
    static unsigned counter;
    char tag[32];
    snprintf(tag, sizeof(tag), "client-%u", counter++);
    rift_proc c;
    if (!nats_fix_client_start(f, &c, tag, prog, args)) {
        return -1;
    }
    return nats_fix_client_wait(f, &c);
}

void nats_fix_scenario(nats_fix_target target, bool token_mode,
                       const char *name, const char *prog,
                       const char *const *args) {
    nats_fix f = {.target = target, .token_mode = token_mode};
    CHECK(nats_fix_start(&f));
    bool restart = strcmp(name, "reconnect") == 0;
    rift_proc c;
    bool started = nats_fix_client_start(&f, &c, name, prog, args);
    /* reconnect: the client says when to restart the server. */
    bool told =
        !restart || (started && rift_proc_wait_text(&c, false, "await-restart",
                                                    RIFT_PROC_WAIT_MS));
    bool restarted = !restart || (told && nats_fix_restart(&f));
    int rc = started ? nats_fix_client_wait(&f, &c) : -1;
    nats_fix_free(&f);
    CHECK(started);
    CHECK(told);
    CHECK(restarted);
    CHECK_EQ_INT(rc, 0);
}
