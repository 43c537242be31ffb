/*
 * test_riftd_lifecycle.c — riftd's shutdown and restart (integration
 * tests): SIGTERM publishes {"state":"draining"} to a remote subscriber
 * holding the grant, then closes its connection with code 0 "server
 * shutdown" and exits 0; a file stream and its durable consumer survive a
 * restart (the §4.8 end-to-end vector through riftd).
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include <signal.h>
#include <stdlib.h>

#define SECOND 1000000000ll

static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'plugin.>', 'rift.control.*', '_INBOX.>' },\n"
    "        subscribe = { 'plugin.>', 'rift.events.>', '_INBOX.>' },\n"
    "        control = true },\n"
    "    },\n"
    "    streams = { jobs = { subjects = { 'plugin.jobs' },\n"
    "                         storage_path = 'stream-data' } },\n"
    "  },\n"
    "}\n";

typedef struct closed_wait {
    rift_client *c;
} closed_wait;

static bool disconnected(void *arg) {
    return !rift_client_is_connected(((closed_wait *)arg)->c);
}

RIFT_TEST(sigterm_drains_then_closes_with_server_shutdown) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_client_sub *life;
    CHECK_OK(rift_client_subscribe(c, "rift.events.lifecycle", 21, NULL, 0,
                                   &life, &err));
    CHECK(kill(f.p.pid, SIGTERM) == 0);
    char *draining = riftd_fix_next(life);
    /* Then the connection ends: the subscription reports why. */
    rift_msg *m = NULL;
    int after = rift_client_sub_recv(life, 10 * SECOND, &m, &err);
    rift_msg_unref(m);
    closed_wait w = {c};
    bool closed = rift_test_wait_until(disconnected, &w, 10000);
    int rc = rift_proc_wait(&f.p, RIFT_PROC_WAIT_MS);
    f.running = false;
    char *log = rift_proc_read(f.p.err);
    rift_client_sub_close(life);
    rift_client_del(c);
    riftd_fix_free(&f);
    bool ok_log = log && strstr(log, "rift: SIGTERM received, shutting down") &&
                  strstr(log, "rift: stopped");
    free(log);
    bool ok_draining =
        draining && strcmp(draining, "{\"state\":\"draining\"}") == 0;
    free(draining);
    CHECK(ok_draining);
    CHECK_EQ_INT(after, RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "server shutdown");
    CHECK(closed);
    CHECK_EQ_INT(rc, 0);
    CHECK(ok_log);
}

/* Fetches up to |limit| records of consumer "worker" into |seqs|. */
static int fetch(rift_client *c, uint32_t limit, uint64_t *seqs,
                 size_t *count) {
    rift_client_delivery d[4];
    rift_error err = {0};
    int rc =
        rift_client_fetch(c, "jobs", 4, "worker", 6, limit, d, count, &err);
    if (rc != 0) {
        fprintf(stderr, "  fetch: %s\n", err.text);
        return rc;
    }
    for (size_t i = 0; i < *count; i++) {
        seqs[i] = d[i].sequence;
        rift_msg_unref(d[i].msg);
    }
    return 0;
}

RIFT_TEST(restart_keeps_file_streams_and_consumers) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_stored s1, s2;
    CHECK_OK(rift_client_stream_publish(c, "jobs", 4, "plugin.jobs", 11, NULL,
                                        0, (const uint8_t *)"first", 5, &s1,
                                        &err));
    CHECK_OK(rift_client_stream_publish(c, "jobs", 4, "plugin.jobs", 11, NULL,
                                        0, (const uint8_t *)"second", 6, &s2,
                                        &err));
    rift_consumer_config cc = {.filter = "plugin.jobs",
                               .filter_len = 11,
                               .start_sequence = 1,
                               .ack_wait_ms = 30000,
                               .max_ack_pending = 128};
    CHECK_OK(rift_client_consumer_open(c, "jobs", 4, "worker", 6, &cc, &err));
    uint64_t seqs[4];
    size_t n = 0;
    CHECK_OK(fetch(c, 2, seqs, &n));
    CHECK_EQ_INT(n, 2);
    CHECK_OK(rift_client_ack(c, "jobs", 4, "worker", 6, seqs[0], &err));
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);

    /* Same configuration, same directory: the unacknowledged record is
     * eligible again at once, the acknowledged one is gone. */
    CHECK(riftd_fix_start(&f, NULL));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    CHECK_OK(rift_client_consumer_open(c, "jobs", 4, "worker", 6, &cc, &err));
    n = 0;
    int frc = fetch(c, 2, seqs, &n);
    json_t *info = riftd_fix_control(c, "status", "{}", NULL);
    json_t *stream0 = json_array_get(
        json_object_get(json_object_get(info, "data"), "streams"), 0);
    json_int_t messages =
        json_integer_value(json_object_get(stream0, "messages"));
    json_int_t consumers =
        json_integer_value(json_object_get(stream0, "consumers"));
    json_decref(info);
    rift_client_del(c);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    CHECK_OK(frc);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_U64(seqs[0], s2.sequence);
    CHECK_EQ_INT(messages, 2);
    CHECK_EQ_INT(consumers, 1);
    CHECK_EQ_INT(rc, 0);
}
