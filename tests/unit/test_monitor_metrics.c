/*
 * test_monitor_metrics.c — the Prometheus view of riftd's monitoring
 * listener (unit tests): counters and gauges from a status object, nested
 * values, per-stream, per-plugin and per-identity samples, label escaping,
 * families written once with their samples together, and values that are
 * absent left out rather than invented.
 */
#include "test.h"

#include "daemon/monitor.h"

#include <stdlib.h>

static char *render(const char *status_json) {
    json_error_t jerr;
    json_t *st = json_loads(status_json, 0, &jerr);
    if (st == NULL) {
        return NULL;
    }
    size_t len = 0;
    char *text = rift_monitor_metrics(st, &len);
    json_decref(st);
    if (text != NULL && strlen(text) != len) {
        free(text);
        return NULL;
    }
    return text;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL;
         p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static const char status[] =
    "{\"version\":\"0.1.0\",\"revision\":\"abc\",\"uptime_ms\":2500,"
    "\"connections\":{\"total\":3,\"authenticated\":2,"
    "\"by_identity\":{\"admin\":1,\"worker\":1}},"
    "\"subscriptions\":7,\"slow_consumers\":1,"
    "\"messages\":{\"in\":10,\"out\":20},\"bytes\":{\"in\":100,\"out\":200},"
    "\"remote\":{\"accepted\":4,\"refused\":0,\"auth_failures\":2,"
    "\"streams\":5,\"subscriptions\":6,\"slow_consumers\":0,"
    "\"messages\":{\"in\":8,\"out\":9},\"bytes\":{\"in\":80,\"out\":90}},"
    "\"streams\":[{\"name\":\"jobs\",\"messages\":12,\"bytes\":640,"
    "\"first_seq\":1,\"last_seq\":12,\"consumers\":2,\"open\":true,"
    "\"poisoned\":false},"
    "{\"name\":\"ev\",\"messages\":0,\"bytes\":0,\"first_seq\":1,"
    "\"last_seq\":0,\"consumers\":0,\"open\":false}],"
    "\"plugins\":[{\"name\":\"echo\",\"state\":\"running\",\"callbacks\":5,"
    "\"errors\":1}]}";

RIFT_TEST(metrics_render_broker_counters_and_gauges) {
    char *t = render(status);
    CHECK(t != NULL);
    CHECK(strstr(t, "rift_info{version=\"0.1.0\",revision=\"abc\"} 1\n"));
    CHECK(strstr(t, "\nrift_uptime_seconds 2.500\n"));
    CHECK(strstr(t, "\nrift_connections 3\n"));
    CHECK(strstr(t, "\nrift_connections_authenticated 2\n"));
    CHECK(strstr(t, "\nrift_subscriptions 7\n"));
    CHECK(strstr(t, "# TYPE rift_messages_in_total counter\n"
                    "rift_messages_in_total 10\n"));
    CHECK(strstr(t, "\nrift_bytes_out_total 200\n"));
    CHECK(strstr(t, "\nrift_remote_auth_failures_total 2\n"));
    CHECK(strstr(t, "\nrift_remote_messages_out_total 9\n"));
    CHECK(strstr(t, "\nrift_identity_connections{identity=\"admin\"} 1\n"));
    CHECK(strstr(t, "\nrift_identity_connections{identity=\"worker\"} 1\n"));
    free(t);
}

RIFT_TEST(metrics_per_stream_and_plugin_samples_group_by_family) {
    char *t = render(status);
    CHECK(t != NULL);
    /* One HELP and TYPE per family, its samples right after. */
    CHECK_EQ_INT(count(t, "# TYPE rift_stream_messages gauge\n"), 1);
    CHECK(strstr(t, "# TYPE rift_stream_messages gauge\n"
                    "rift_stream_messages{stream=\"jobs\"} 12\n"
                    "rift_stream_messages{stream=\"ev\"} 0\n"));
    CHECK(strstr(t, "rift_stream_open{stream=\"jobs\"} 1\n"
                    "rift_stream_open{stream=\"ev\"} 0\n"));
    /* "poisoned" is only known for the open stream. */
    CHECK(strstr(t, "rift_stream_poisoned{stream=\"jobs\"} 0\n"));
    CHECK(strstr(t, "rift_stream_poisoned{stream=\"ev\"}") == NULL);
    CHECK(
        strstr(t, "rift_plugin_state{plugin=\"echo\",state=\"running\"} 1\n"));
    CHECK(strstr(t, "rift_plugin_errors_total{plugin=\"echo\"} 1\n"));
    /* Absent values produce no sample (and no empty family). */
    CHECK(strstr(t, "rift_plugin_queued") == NULL);
    CHECK(strstr(t, "rift_stream_segments") == NULL);
    /* Every line is a comment or "name[{labels}] value". */
    for (const char *line = t; *line != '\0';) {
        const char *end = strchr(line, '\n');
        CHECK(end != NULL);
        CHECK(line[0] == '#' || strncmp(line, "rift_", 5) == 0);
        line = end + 1;
    }
    free(t);
}

RIFT_TEST(metrics_escape_label_values) {
    char *t = render("{\"version\":\"a\\\"b\\\\c\\nd\",\"revision\":\"r\","
                     "\"streams\":[{\"name\":\"q\\\"s\",\"messages\":1}]}");
    CHECK(t != NULL);
    CHECK(strstr(t, "rift_info{version=\"a\\\"b\\\\c\\nd\",revision=\"r\"} 1"));
    CHECK(strstr(t, "rift_stream_messages{stream=\"q\\\"s\"} 1\n"));
    free(t);
}

RIFT_TEST(metrics_of_an_empty_status_are_only_the_info_line) {
    char *t = render("{}");
    CHECK(t != NULL);
    CHECK_EQ_INT(strcmp(t, "# HELP rift_info riftd's version and "
                           "configuration revision.\n"
                           "# TYPE rift_info gauge\n"
                           "rift_info{version=\"\",revision=\"\"} 1\n"),
                 0);
    free(t);
}
