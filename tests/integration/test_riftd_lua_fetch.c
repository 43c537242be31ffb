/*
 * test_riftd_lua_fetch.c — a Lua plugin's waiting fetch inside riftd
 * (integration tests): the protocol server watches the configured stream
 * for its own waiting fetches, the plugin's fetch watches it too, and one
 * STREAM_PUBLISH from a remote client wakes both.
 */
// labels: threads
#include "riftd_fix.h"
#include "rift/broker.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'plugin.>', 'rift.control.*', '_INBOX.>' },\n"
    "        subscribe = { 'plugin.>', '_INBOX.>' },\n"
    "        control = true },\n"
    "    },\n"
    "    streams = { jobs = { subjects = { 'plugin.jobs' },\n"
    "                         storage_path = 'stream-data' } },\n"
    "  },\n"
    /* Two fdatasyncs (fetch, ack) fit a loaded machine's deadline. */
    "  plugins = { { name = 'waiter', deadline_ms = 5000 } },\n"
    "}\n";

static const char waiter_src[] =
    "local c = rift.consumer('jobs', 'w', {start = 'new'})\n"
    "rift.subscribe('plugin.wait', function()\n"
    "  local r = c:fetch(1, {wait = 60000})\n"
    "  c:ack(r[1].sequence)\n"
    "  rift.publish('plugin.out', r[1].payload)\n"
    "end)\n";

typedef struct suspended {
    rift_client *c;
} suspended;

/* The plugin's status counts its parked fetch as a request. */
static bool plugin_waits(void *arg) {
    suspended *s = arg;
    json_t *st = riftd_fix_control(s->c, "status", "{}", NULL);
    json_t *plugins = json_object_get(json_object_get(st, "data"), "plugins");
    bool waiting = false;
    for (size_t i = 0; i < json_array_size(plugins); i++) {
        json_t *p = json_array_get(plugins, i);
        const char *name = json_string_value(json_object_get(p, "name"));
        waiting = waiting ||
                  (name != NULL && strcmp(name, "waiter") == 0 &&
                   json_integer_value(json_object_get(p, "requests")) == 1);
    }
    json_decref(st);
    return waiting;
}

typedef struct remote_wait {
    rift_client *c;
    int rc;
    size_t count;
    char payload[64];
} remote_wait;

/* A remote CONSUMER_FETCH_WAIT on its own consumer, on a thread. */
static void *remote_fetch(void *arg) {
    remote_wait *w = arg;
    rift_client_delivery d[1];
    rift_error err;
    w->rc = rift_client_fetch_wait(w->c, "jobs", 4, "r", 1, 1, 60000, d,
                                   &w->count, &err);
    if (w->rc == 0 && w->count == 1) {
        size_t len;
        const uint8_t *p = rift_msg_payload(d[0].msg, &len);
        snprintf(w->payload, sizeof(w->payload), "%.*s", (int)len,
                 (const char *)p);
        rift_msg_unref(d[0].msg);
    }
    return NULL;
}

RIFT_TEST(one_stream_publish_wakes_the_server_and_the_plugin) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_plugin(&f, "waiter", waiter_src));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c, *c2;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c2));
    rift_error err = {0};
    rift_client_sub *out;
    CHECK_OK(rift_client_subscribe(c, "plugin.out", 10, NULL, 0, &out, &err));
    /* The remote consumer starts at sequence 1: the empty stream's next. */
    rift_consumer_config cc;
    rift_consumer_config_default(&cc);
    cc.filter = "plugin.jobs";
    cc.filter_len = 11;
    CHECK_OK(rift_client_consumer_open(c2, "jobs", 4, "r", 1, &cc, &err));
    remote_wait rw = {.c = c2};
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, remote_fetch, &rw));
    CHECK_OK(rift_client_publish(c, "plugin.wait", 11, NULL, 0, &err));
    suspended s = {c};
    CHECK(rift_test_wait_until(plugin_waits, &s, 10000));
    CHECK_OK(rift_client_stream_publish(c, "jobs", 4, "plugin.jobs", 11, NULL,
                                        0, (const uint8_t *)"both", 4, NULL,
                                        &err));
    char *got = riftd_fix_next(out);
    CHECK_OK(pthread_join(th, NULL));
    if (got == NULL) {
        char *log = rift_proc_read(f.p.err);
        fprintf(stderr, "riftd: %s\n", log ? log : "(no log)");
        free(log);
    }
    CHECK_MSG(got != NULL && strcmp(got, "both") == 0, "%s",
              got ? got : "(none)");
    free(got);
    CHECK_OK(rw.rc);
    CHECK_EQ_INT(rw.count, 1);
    CHECK_EQ_STR(rw.payload, "both");
    rift_client_sub_close(out);
    rift_client_del(c2);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}
