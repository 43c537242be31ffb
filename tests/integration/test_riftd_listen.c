/*
 * test_riftd_listen.c — riftd with a QUIC listener, end to end (integration
 * tests): a valid configuration served to the C client (publish,
 * subscribe, streams), control status/reload/unknown over the wire with
 * rift.events.control seen by a subscriber holding the grant, rift.events
 * unpublishable remotely, control refused without control = true, and the
 * bound address of port 0 in the log.
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include "daemon/config.h"

#include <stdlib.h>
#include <sys/stat.h>

#define SECOND 1000000000ll

/* The original's end-to-end principal (§7.3) plus one without control. */
static const char config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'plugin.>', 'rift.control.*', 'rift.events.x',\n"
    "                    '_INBOX.>' },\n"
    "        subscribe = { 'plugin.>', 'rift.events.>', '_INBOX.>' },\n"
    "        control = true },\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN2',\n"
    "        publish = { 'rift.control.*', 'jobs.>' },\n"
    "        subscribe = { 'jobs.>' } },\n"
    "    },\n"
    "    streams = { jobs = { subjects = { 'plugin.jobs' },\n"
    "                         storage_path = 'stream-data' } },\n"
    "  },\n"
    "}\n";

static const char *str_at(json_t *v, const char *k1, const char *k2) {
    json_t *o = json_object_get(v, k1);
    return json_string_value(k2 ? json_object_get(o, k2) : o);
}

RIFT_TEST(valid_config_serves_the_c_client) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    /* Port 0 was replaced by the real port in the log line. */
    CHECK(strncmp(f.p.address, "127.0.0.1:", 10) == 0);
    CHECK(strcmp(f.p.address, "127.0.0.1:0") != 0);
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, "plugin.>", 8, NULL, 0, &sub, &err));
    CHECK_OK(rift_client_publish(c, "plugin.hello", 12, (const uint8_t *)"hi",
                                 2, &err));
    char *got = riftd_fix_next(sub);
    bool same = got && strcmp(got, "hi") == 0;
    free(got);
    /* The configured stream is served. */
    rift_stored st;
    CHECK_OK(rift_client_stream_publish(c, "jobs", 4, "plugin.jobs", 11, NULL,
                                        0, (const uint8_t *)"j", 1, &st, &err));
    json_t *status = riftd_fix_control(c, "status", "{}", NULL);
    json_t *data = json_object_get(status, "data");
    json_t *conns = json_object_get(data, "connections");
    json_t *stream0 = json_array_get(json_object_get(data, "streams"), 0);
    bool status_ok =
        json_is_true(json_object_get(status, "ok")) &&
        strcmp(str_at(data, "listen", NULL), "127.0.0.1:0") == 0 &&
        strcmp(str_at(data, "address", NULL), f.p.address) == 0 &&
        json_is_true(json_object_get(data, "listening")) &&
        json_integer_value(json_object_get(
            json_object_get(conns, "by_identity"), "plugin")) == 1 &&
        json_integer_value(json_object_get(
            json_object_get(conns, "by_identity"), "worker")) == 0 &&
        json_integer_value(json_object_get(json_object_get(data, "remote"),
                                           "subscriptions")) == 1 &&
        strcmp(str_at(stream0, "name", NULL), "jobs") == 0 &&
        json_integer_value(json_object_get(stream0, "messages")) == 1 &&
        json_integer_value(json_object_get(stream0, "last_seq")) == 1 &&
        json_is_true(json_object_get(stream0, "open"));
    if (!status_ok) {
        char *s = json_dumps(status, 0);
        fprintf(stderr, "  status: %s\n", s ? s : "(none)");
        free(s);
    }
    json_decref(status);
    rift_client_sub_close(sub);
    rift_client_del(c);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    CHECK(same);
    CHECK_EQ_U64(st.sequence, 1);
    CHECK(status_ok);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(control_over_the_wire_with_events) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c, *w;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN2, &w));
    rift_error err = {0};
    rift_client_sub *ev;
    CHECK_OK(rift_client_subscribe(c, "rift.events.>", 13, NULL, 0, &ev, &err));

    char *t_reload = NULL, *t_unknown = NULL, *t_field = NULL;
    json_t *reload = riftd_fix_control(c, "reload", "{}", &t_reload);
    json_t *unknown = riftd_fix_control(c, "shutdown", "{}", &t_unknown);
    json_t *field = riftd_fix_control(c, "status", "{\"x\":1}", &t_field);
    /* Events, in order: the reload, then one per answered command except
     * status. */
    char *e1 = riftd_fix_next(ev);
    char *e2 = riftd_fix_next(ev);
    char *e3 = riftd_fix_next(ev);
    /* Remote clients can never publish under rift.events, even with
     * control and a grant naming the subject. */
    int forged = rift_client_publish(c, "rift.events.x", 13,
                                     (const uint8_t *)"{}", 2, &err);
    rift_error forged_err = err;
    /* Without control = true the publish grant is not enough. */
    rift_msg *m = NULL;
    int denied =
        rift_client_request(w, "rift.control.status", 19, (const uint8_t *)"{}",
                            2, 5000 * RIFT_MSEC, &m, &err);
    rift_error denied_err = err;
    rift_msg_unref(m);

    char rev[17];
    rift_config_revision(config, strlen(config), rev);
    char want_reload[200], want_event[64];
    snprintf(want_reload, sizeof(want_reload),
             "{\"data\":{\"existing_sessions\":\"preserved\",\"reloaded\":"
             "true,\"revision\":\"%s\"},\"ok\":true}",
             rev);
    snprintf(want_event, sizeof(want_event), "{\"revision\":\"%s\"}", rev);
    bool ok_reload = t_reload && strcmp(t_reload, want_reload) == 0;
    bool ok_unknown =
        t_unknown && strcmp(t_unknown, "{\"error\":\"unknown control "
                                       "subject\",\"ok\":false}") == 0;
    bool ok_field =
        t_field && strcmp(t_field, "{\"error\":\"unknown control payload "
                                   "field\",\"ok\":false}") == 0;
    bool ok_events = e1 && e2 && e3 && strcmp(e1, want_event) == 0 &&
                     strcmp(e2, "{\"command\":\"reload\",\"ok\":true}") == 0 &&
                     strcmp(e3, "{\"command\":\"shutdown\",\"ok\":false}") == 0;
    if (!ok_events) {
        fprintf(stderr, "  events: %s | %s | %s\n", e1, e2, e3);
    }
    json_decref(reload);
    json_decref(unknown);
    json_decref(field);
    free(t_reload);
    free(t_unknown);
    free(t_field);
    free(e1);
    free(e2);
    free(e3);
    rift_client_sub_close(ev);
    rift_client_del(c);
    rift_client_del(w);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    CHECK(ok_reload);
    CHECK(ok_unknown);
    CHECK(ok_field);
    CHECK(ok_events);
    CHECK_EQ_INT(forged, RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(forged_err.text, "publication not permitted");
    CHECK_EQ_INT(denied, RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(denied_err.text, "publication not permitted");
    CHECK_EQ_INT(rc, 0);
}

/* The last line of a riftd's stderr (the failure; the log precedes it). */
static bool last_line_starts(const char *text, const char *prefix) {
    const char *end = text ? strrchr(text, '\n') : NULL;
    if (end == NULL) {
        return false;
    }
    const char *line = end;
    while (line > text && line[-1] != '\n') {
        line--;
    }
    return strncmp(line, prefix, strlen(prefix)) == 0;
}

static int second_riftd(const char *dir, const char *file, char **err) {
    rift_proc p;
    const char *args[] = {"-c", file, NULL};
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN,
                         "RIFT_TEST_TOKEN2=" RIFTD_FIX_TOKEN2, NULL};
    if (!rift_proc_start(&p, rift_proc_riftd(), dir, "second", args, env, NULL,
                         0)) {
        return -2;
    }
    int rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    *err = rift_proc_read(p.err);
    return rc;
}

RIFT_TEST(start_failures_are_one_line) {
    /* A second riftd over the same configuration: the stream directory is
     * locked (step 1 of §5.2, before anything binds). On the same fixed
     * port without streams: the bind fails. Both exit 1 with one line. */
    char cfg[sizeof(config) + 16];
    int port = rift_test_free_udp_port();
    CHECK(port > 0);
    snprintf(cfg, sizeof(cfg), "%s", config);
    char *at = strstr(cfg, "127.0.0.1:0'");
    CHECK(at != NULL);
    char tail[sizeof(config)];
    snprintf(tail, sizeof(tail), "%s", at + strlen("127.0.0.1:0"));
    snprintf(at, sizeof(cfg) - (size_t)(at - cfg), "127.0.0.1:%d%s", port,
             tail);
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    CHECK(riftd_fix_start(&f, NULL));
    char nostreams[sizeof(cfg)];
    snprintf(nostreams, sizeof(nostreams), "%s", cfg);
    char *streams = strstr(nostreams, "    streams =");
    CHECK(streams != NULL);
    snprintf(streams, sizeof(nostreams) - (size_t)(streams - nostreams),
             "  },\n}\n");
    CHECK(rift_proc_write_file(f.dir, "nostreams.lua", nostreams));
    char *err1 = NULL, *err2 = NULL;
    int rc1 = second_riftd(f.dir, "rift.lua", &err1);
    int rc2 = second_riftd(f.dir, "nostreams.lua", &err2);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    bool locked = last_line_starts(
        err1, "riftd: messaging.streams.jobs: stream storage: stream "
              "directory is already open");
    bool bind = last_line_starts(err2, "riftd: cannot bind");
    if (!locked || !bind) {
        fprintf(stderr, "  second riftd said:\n%s\n%s\n", err1, err2);
    }
    free(err1);
    free(err2);
    CHECK_EQ_INT(rc1, 1);
    CHECK(locked);
    CHECK_EQ_INT(rc2, 1);
    CHECK(bind);
    CHECK_EQ_INT(rc, 0);
}

/* The original's end-to-end vector (§7.3): a Lua queue subscriber answers
 * REQUESTs, a reload with edited Lua takes effect, a reload that changes
 * messaging is refused and the old behaviour stays. */
static const char lua_config_fmt[] =
    "local publish = rift.publish\n"
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    subscription_capacity = %d,\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'plugin.>', 'rift.control.*', '_INBOX.>' },\n"
    "        subscribe = { 'plugin.>', 'rift.events.>', '_INBOX.>' },\n"
    "        control = true },\n"
    "    },\n"
    "    subscriptions = { { subject = 'plugin.echo', queue = 'echo' } },\n"
    "  },\n"
    "  on_message = function(msg)\n"
    "    if msg.reply then publish(msg.reply, '%s' .. msg.payload) end\n"
    "  end,\n"
    "}\n";

static char *echo_request(rift_client *c, const uint8_t *p, size_t len) {
    rift_msg *reply = NULL;
    rift_error err = {0};
    if (rift_client_request(c, "plugin.echo", 11, p, len, 10000 * RIFT_MSEC,
                            &reply, &err) != 0) {
        fprintf(stderr, "  request: %s\n", err.text);
        return NULL;
    }
    size_t n;
    const uint8_t *q = rift_msg_payload(reply, &n);
    char *s = malloc(n + 1);
    memcpy(s, q, n);
    s[n] = '\0';
    rift_msg_unref(reply);
    return s;
}

RIFT_TEST(lua_responder_and_reload_over_the_wire) {
    char cfg[2048];
    snprintf(cfg, sizeof(cfg), lua_config_fmt, 1024, "");
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    /* A binary payload comes back unchanged. */
    static const uint8_t bin[] = {0, 1, 2, 0xff, 'x'};
    rift_msg *reply = NULL;
    rift_error err = {0};
    int r1 = rift_client_request(c, "plugin.echo", 11, bin, sizeof(bin),
                                 10000 * RIFT_MSEC, &reply, &err);
    size_t n = 0;
    const uint8_t *p = r1 == 0 ? rift_msg_payload(reply, &n) : NULL;
    bool same = p != NULL && n == sizeof(bin) && memcmp(p, bin, n) == 0;
    rift_msg_unref(reply);
    /* Edited Lua: the reload is accepted and the new reply is used. */
    snprintf(cfg, sizeof(cfg), lua_config_fmt, 1024, "v2:");
    CHECK(rift_proc_write_file(f.dir, "rift.lua", cfg));
    json_t *ok = riftd_fix_control(c, "reload", "{}", NULL);
    char *v2 = echo_request(c, (const uint8_t *)"hi", 2);
    /* A messaging change is refused; the old handler stays. */
    snprintf(cfg, sizeof(cfg), lua_config_fmt, 2048, "v3:");
    CHECK(rift_proc_write_file(f.dir, "rift.lua", cfg));
    char *refused = NULL;
    json_t *no = riftd_fix_control(c, "reload", "{}", &refused);
    char *still = echo_request(c, (const uint8_t *)"hi", 2);
    json_t *status = riftd_fix_control(c, "status", "{}", NULL);
    json_t *plugin0 = json_array_get(
        json_object_get(json_object_get(status, "data"), "plugins"), 0);
    bool compat = json_is_true(json_object_get(plugin0, "compat")) &&
                  json_integer_value(json_object_get(plugin0, "messages")) >= 3;
    rift_client_del(c);
    int rc = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    bool reloaded = json_is_true(json_object_get(ok, "ok"));
    bool ok_v2 = v2 && strcmp(v2, "v2:hi") == 0;
    bool ok_refused =
        refused && strcmp(refused, "{\"error\":\"reload rejected; previous "
                                   "configuration retained: listener "
                                   "names/addresses, admin and messaging "
                                   "settings require a restart\",\"ok\":"
                                   "false}") == 0;
    bool ok_still = still && strcmp(still, "v2:hi") == 0;
    if (!ok_v2 || !ok_still || !compat) {
        char *st = json_dumps(status, 0);
        fprintf(stderr, "  v2=%s still=%s status=%s\n", v2, still, st);
        free(st);
    }
    json_decref(ok);
    json_decref(no);
    json_decref(status);
    free(v2);
    free(refused);
    free(still);
    CHECK_OK(r1);
    CHECK(same);
    CHECK(reloaded);
    CHECK(ok_v2);
    CHECK(ok_refused);
    CHECK(ok_still);
    CHECK(compat);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(broken_plugin_stops_startup_with_one_line) {
    char cfg[sizeof(config) + 64];
    snprintf(cfg, sizeof(cfg), "%s", config);
    /* Append a plugin whose init.lua fails. */
    char *end = strrchr(cfg, '}');
    CHECK(end != NULL);
    snprintf(end, sizeof(cfg) - (size_t)(end - cfg),
             "  plugins = { 'broken' },\n}\n");
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/plugins/broken", f.dir);
    char plugins[700];
    snprintf(plugins, sizeof(plugins), "%s/plugins", f.dir);
    CHECK(mkdir(plugins, 0700) == 0 && mkdir(dir, 0700) == 0);
    CHECK(rift_proc_write_file(dir, "init.lua", "error('nope')\n"));
    rift_proc p;
    const char *args[] = {"-c", "rift.lua", NULL};
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN,
                         "RIFT_TEST_TOKEN2=" RIFTD_FIX_TOKEN2, NULL};
    CHECK(rift_proc_start(&p, rift_proc_riftd(), f.dir, "broken", args, env,
                          NULL, 0));
    int rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    char *err = rift_proc_read(p.err);
    riftd_fix_free(&f);
    bool line = last_line_starts(err, "riftd: broken: init: ") &&
                strstr(err, "nope") && !strstr(err, "rift: ready");
    if (!line) {
        fprintf(stderr, "  riftd said:\n%s\n", err);
    }
    free(err);
    CHECK_EQ_INT(rc, 1);
    CHECK(line);
}
