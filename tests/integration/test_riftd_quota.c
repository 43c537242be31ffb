/*
 * test_riftd_quota.c — riftd's default per-identity quotas (integration
 * tests): one principal can no longer take every subscription slot, and
 * the control principal's `rift status` still works when the others hold
 * all they may (docs/riftd.md "limits").
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include <stdlib.h>

/* 16 slots, one of them the control bridge's; no `limits` table: the
 * defaults let one identity hold 8 and keep 1 for control principals. */
static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    max_subscriptions = 16,\n"
    "    principals = {\n"
    "      { name = 'admin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'rift.control.*', '_INBOX.>' },\n"
    "        subscribe = { '_INBOX.>' }, control = true },\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN2',\n"
    "        publish = { 'work.>' }, subscribe = { 'work.>' } },\n"
    "    },\n"
    "  },\n"
    "}\n";

RIFT_TEST(one_identity_cannot_take_every_subscription) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *worker, *admin;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &worker));
    rift_client_sub *subs[20] = {0};
    int taken = 0;
    rift_error err = {0};
    for (int i = 0; i < 20; i++) {
        char pattern[32];
        int n = snprintf(pattern, sizeof(pattern), "work.%d", i);
        if (rift_client_subscribe(worker, pattern, (size_t)n, NULL, 0, &subs[i],
                                  &err) != 0) {
            break;
        }
        taken++;
    }
    CHECK_EQ_INT(taken, 8);
    CHECK_EQ_STR(err.text, "subscription limit reached");
    /* A second connection of the same identity shares its count. */
    rift_client *again;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &again));
    rift_client_sub *extra = NULL;
    CHECK(rift_client_subscribe(again, "work.x", 6, NULL, 0, &extra, &err) !=
          0);
    rift_client_del(again);
    /* The administrator's request needs an inbox: it is still served. */
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &admin));
    json_t *st = riftd_fix_control(admin, "status", "{}", NULL);
    CHECK(st != NULL && json_is_true(json_object_get(st, "ok")));
    json_decref(st);
    for (int i = 0; i < taken; i++) {
        rift_client_sub_close(subs[i]);
    }
    rift_client_del(admin);
    rift_client_del(worker);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}
