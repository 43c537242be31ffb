/*
 * test_riftd_nats.c — riftd with a `nats` table (integration tests): the
 * NATS listener logs its address, a NATS publish reaches a QUIC (protocol
 * v1) subscriber and the reverse, `status` counts NATS connections by
 * identity, SIGHUP keeps NATS connections, shutdown closes them, and a
 * NATS-only riftd (principals without messaging.listen) serves them.
 */
// labels: threads
#include "natsraw.h"
#include "riftd_fix.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T 10000

static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'admin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'rift.control.*', '_INBOX.>', 'x.>' },\n"
    "        subscribe = { '_INBOX.>', 'x.>' }, control = true },\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN2',\n"
    "        publish = { 'x.>' }, subscribe = { 'x.>' } },\n"
    "    },\n"
    "  },\n"
    "  nats = { listen = '127.0.0.1:0', allow_plaintext = true },\n"
    "}\n";

/* The address of "rift: NATS on <addr>" in riftd's log, into |nf|. */
static bool nats_address(riftd_fix *f, natsraw_fix *nf) {
    memset(nf, 0, sizeof(*nf));
    char *log = rift_proc_read(f->p.err);
    const char *at = log ? strstr(log, "rift: NATS on ") : NULL;
    bool ok = at != NULL && sscanf(at, "rift: NATS on %63[0-9.]:%d", nf->host,
                                   &nf->port) == 2;
    free(log);
    return ok;
}

static long long nats_conns(rift_client *admin, const char *who) {
    json_t *st = riftd_fix_control(admin, "status", "{}", NULL);
    json_t *nats = json_object_get(json_object_get(st, "data"), "nats");
    long long n = json_integer_value(
        json_object_get(json_object_get(nats, "by_identity"), who));
    json_decref(st);
    return n;
}

RIFT_TEST(nats_and_quic_faces_share_the_broker) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    natsraw_fix nf;
    CHECK(nats_address(&f, &nf));
    natsraw *n = natsraw_connect(&nf, 0, NULL, 0);
    CHECK(n != NULL);
    CHECK(natsraw_hello(n, RIFTD_FIX_TOKEN2, ""));
    CHECK(natsraw_send(n, "SUB x.to-nats 1\r\n", 0));
    CHECK(natsraw_ping(n));
    rift_client *admin;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &admin));
    rift_client_sub *sub;
    rift_error err = {0};
    CHECK_OK(rift_client_subscribe(admin, "x.to-quic", 9, NULL, 0, &sub, &err));
    /* NATS -> QUIC. */
    CHECK(natsraw_send(n, "PUB x.to-quic 9\r\nfrom-nats\r\n", 0));
    char *got = riftd_fix_next(sub);
    CHECK(got != NULL && strcmp(got, "from-nats") == 0);
    free(got);
    /* QUIC -> NATS. */
    CHECK_OK(rift_client_publish(admin, "x.to-nats", 9,
                                 (const uint8_t *)"from-quic", 9, &err));
    CHECK(natsraw_expect(n, "MSG x.to-nats 1 9\r\nfrom-quic\r\n", T));
    CHECK_EQ_INT(nats_conns(admin, "worker"), 1);
    CHECK_EQ_INT(nats_conns(admin, "admin"), 0);
    /* `rift status` shows the NATS face's connections by identity. */
    char server[128], ca[800];
    snprintf(server, sizeof(server), "RIFT_SERVER=%s", f.p.address);
    snprintf(ca, sizeof(ca), "RIFT_CA=%s", f.ca);
    const char *env[] = {server, ca, "RIFT_TOKEN=" RIFTD_FIX_TOKEN,
                         "RIFT_SERVER_NAME=localhost", NULL};
    char *out = NULL, *errs = NULL;
    int rc =
        rift_proc_run(rift_proc_cli(), f.dir,
                      (const char *const[]){"status", NULL}, env, &out, &errs);
    CHECK_MSG(rc == 0 && out != NULL && strstr(out, "nats         ") != NULL &&
                  strstr(out, ": 1 connections (admin 0, worker 1)") != NULL,
              "rift status (%d): %s%s", rc, out ? out : "", errs ? errs : "");
    free(out);
    free(errs);
    /* SIGHUP reloads and keeps the NATS connection. */
    CHECK(kill(f.p.pid, SIGHUP) == 0);
    CHECK(rift_proc_wait_text(&f.p, true, "configuration reloaded", T));
    CHECK(natsraw_ping(n));
    rift_client_sub_close(sub);
    rift_client_del(admin);
    /* Shutdown closes it. */
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    CHECK(natsraw_wait_closed(n, T));
    natsraw_close(n);
    riftd_fix_free(&f);
}

static const char nats_only[] =
    "return {\n"
    "  messaging = {\n"
    "    principals = {\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN2',\n"
    "        publish = { 'x.>' }, subscribe = { 'x.>' } },\n"
    "    },\n"
    "  },\n"
    "  nats = { listen = '127.0.0.1:0', allow_plaintext = true },\n"
    "}\n";

RIFT_TEST(nats_only_riftd_serves_the_principals) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, nats_only));
    CHECK(riftd_fix_start(&f, NULL));
    CHECK_EQ_STR(f.p.address, ""); /* no QUIC listener */
    natsraw_fix nf;
    CHECK(nats_address(&f, &nf));
    natsraw *n = natsraw_connect(&nf, 0, NULL, 0);
    CHECK(natsraw_hello(n, RIFTD_FIX_TOKEN2, ""));
    CHECK(natsraw_send(n, "SUB x.a 1\r\nPUB x.a 2\r\nok\r\n", 0));
    CHECK(natsraw_expect(n, "MSG x.a 1 2\r\nok\r\n", T));
    natsraw_close(n);
    CHECK(rift_proc_wait_text(&f.p, true, "is plaintext", T));
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}
