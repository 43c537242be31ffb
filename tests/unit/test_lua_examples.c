/*
 * test_lua_examples.c — the bundled example plugins (tests layer):
 * examples/plugins/echo answers demo.echo, examples/plugins/stats counts
 * demo.> and answers demo.stats with JSON.
 */
// labels: threads
#include "lua_test_util.h"

#include "rift/broker.h"

#include <jansson.h>

static int request(rift_broker *b, const char *subject, const char *payload,
                   char *out, size_t size) {
    rift_msg *reply;
    int rc = rift_broker_request(b, subject, strlen(subject),
                                 (const uint8_t *)payload, strlen(payload),
                                 5000000000, &reply, NULL);
    if (rc != 0) {
        return rc;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(reply, &len);
    len = len < size - 1 ? len : size - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    rift_msg_unref(reply);
    return 0;
}

RIFT_TEST(echo_and_stats) {
    const char *src = getenv("RIFT_SOURCE_DIR");
    CHECK(src != NULL);
    char echo[4096], stats[4096];
    snprintf(echo, sizeof(echo), "%s/examples/plugins/echo", src);
    snprintf(stats, sizeof(stats), "%s/examples/plugins/stats", src);
    rift_broker *b;
    rift_plugin_host *h;
    rift_error err;
    CHECK_OK(rift_broker_new(&b, NULL, &err));
    CHECK_OK(rift_plugin_host_new(&h, b, NULL, &err));
    rift_plugin_spec specs[] = {{.name = "echo", .path = echo},
                                {.name = "stats", .path = stats}};
    CHECK_MSG(rift_plugin_host_apply(h, specs, 2, NULL, &err) == 0, "%s",
              err.text);
    char out[4096];
    CHECK_OK(request(b, "demo.echo", "hi", out, sizeof(out)));
    CHECK_EQ_STR(out, "hi");
    CHECK_OK(request(b, "demo.echo", "again", out, sizeof(out)));
    CHECK_EQ_STR(out, "again");
    CHECK_OK(request(b, "demo.stats", "", out, sizeof(out)));
    json_t *j = json_loads(out, 0, NULL);
    CHECK(j != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "messages")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "bytes")), 7);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(j, "subjects"), "demo.echo")),
                 2);
    json_decref(j);
    lt_status s = lt_get(h, "stats");
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    CHECK_EQ_INT(s.timers, 1);
    rift_plugin_host_del(h);
    rift_broker_del(b);
}
