/*
 * test_control.c — unit tests of riftd's control bridge and events
 * (daemon layer), in process: a daemon started on a temporary
 * configuration, requests made with rift_broker_request. Vectors adapted
 * from docs/protocol-v1.md §7.3 to riftd's commands.
 */
// labels: threads
#include "daemon/daemon.h"
#include "daemon/files.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#define SECOND 1000000000ll

typedef struct fixture {
    char *dir;
    char path[512];
    char config[1024];
    rift_daemon *d;
    rift_broker *b;
} fixture;

static bool write_config(fixture *f, const char *src) {
    return rift_file_write_atomic(f->path, src, strlen(src), 0644) == 0;
}

/* The file stream lives in the test's own directory (storage paths are
 * relative to the working directory, which tests share). */
static const char base_config_fmt[] =
    "return { log = 'warn', messaging = { streams = { jobs = { subjects = { "
    "'jobs.>' } }, archive = { storage_path = '%s/archive-data' } } } }";

static bool setup(fixture *f, uint64_t timeout_ms) {
    memset(f, 0, sizeof(*f));
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    snprintf(f->path, sizeof(f->path), "%s/rift.lua", f->dir);
    snprintf(f->config, sizeof(f->config), base_config_fmt, f->dir);
    if (!write_config(f, f->config)) {
        return false;
    }
    rift_daemon_options opts = {.config_path = f->path,
                                .control_timeout_ms = timeout_ms};
    rift_error err = {0};
    if (rift_daemon_start(&f->d, &opts, &err) != 0) {
        fprintf(stderr, "start: %s\n", err.text);
        return false;
    }
    f->b = rift_daemon_broker(f->d);
    return true;
}

static void teardown(fixture *f) {
    rift_daemon_stop(f->d);
    rift_test_rmdir(f->dir);
}

/* Sends a request and returns the reply payload as a new string. */
static char *request(rift_broker *b, const char *subject, const char *payload,
                     size_t len) {
    rift_msg *reply = NULL;
    rift_error err = {0};
    if (rift_broker_request(b, subject, strlen(subject),
                            (const uint8_t *)payload, len, 10 * SECOND, &reply,
                            &err) != 0) {
        fprintf(stderr, "request %s: %s\n", subject, err.text);
        return NULL;
    }
    size_t plen;
    const uint8_t *p = rift_msg_payload(reply, &plen);
    char *s = strndup((const char *)p, plen);
    rift_msg_unref(reply);
    return s;
}

static char *req(rift_broker *b, const char *subject, const char *payload) {
    return request(b, subject, payload, strlen(payload));
}

/* Receives one message within 5 s and returns its payload. */
static char *next_payload(rift_sub *sub) {
    rift_msg *m = NULL;
    rift_error err = {0};
    if (rift_sub_recv(sub, 5 * SECOND, &m, &err) != 0) {
        return NULL;
    }
    size_t plen;
    const uint8_t *p = rift_msg_payload(m, &plen);
    char *s = strndup((const char *)p, plen);
    rift_msg_unref(m);
    return s;
}

static rift_sub *sub_to(rift_broker *b, const char *pattern) {
    rift_sub *s = NULL;
    rift_error err = {0};
    if (rift_broker_subscribe(b, pattern, strlen(pattern), NULL, &s, &err) !=
        0) {
        return NULL;
    }
    return s;
}

#define CHECK_REPLY(f, subject, payload, want)                                 \
 do {                                                                          \
  char *got_ = req((f)->b, subject, payload);                                  \
  bool same_ = got_ != NULL && strcmp(got_, want) == 0;                        \
  if (!same_) {                                                                \
   fprintf(stderr, "  got %s\n", got_ ? got_ : "(no reply)");                  \
  }                                                                            \
  free(got_);                                                                  \
  CHECK(same_);                                                                \
 } while (0)

RIFT_TEST(status_reports_the_broker) {
    fixture f;
    CHECK(setup(&f, 0));
    char *s = req(f.b, "rift.control.status", "{}");
    json_t *v = s ? json_loads(s, 0, NULL) : NULL;
    json_t *data = json_object_get(v, "data");
    bool ok =
        json_is_true(json_object_get(v, "ok")) &&
        strcmp(json_string_value(json_object_get(data, "version")),
               RIFT_VERSION) == 0 &&
        json_is_integer(json_object_get(data, "uptime_ms")) &&
        json_integer_value(json_object_get(data, "subscriptions")) >= 2 &&
        json_is_object(json_object_get(data, "connections")) &&
        json_array_size(json_object_get(data, "streams")) == 2 &&
        json_is_array(json_object_get(data, "plugins")) &&
        json_is_null(json_object_get(data, "listen")) &&
        json_is_null(json_object_get(data, "remote")) &&
        json_is_true(json_object_get(
            json_array_get(json_object_get(data, "streams"), 0), "open")) &&
        strlen(json_string_value(json_object_get(data, "revision"))) == 16;
    /* Keys are sorted, like the original's serde_json output. */
    bool sorted = s != NULL &&
                  strncmp(s, "{\"data\":{\"address\":null,\"bytes\":", 32) == 0;
    json_decref(v);
    free(s);
    teardown(&f);
    CHECK(ok);
    CHECK(sorted);
}

RIFT_TEST(field_and_shape_errors) {
    fixture f;
    CHECK(setup(&f, 0));
    CHECK_REPLY(&f, "rift.control.status", "{\"unexpected\":1}",
                "{\"error\":\"unknown control payload field\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.status", "[]",
                "{\"error\":\"expected a JSON object\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.status", "",
                "{\"error\":\"expected a JSON object\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.status", "{\"a\":1,\"a\":2}",
                "{\"error\":\"expected a JSON object\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.shutdown", "{}",
                "{\"error\":\"unknown control subject\",\"ok\":false}");
    /* Shape is checked before the command is looked up. */
    CHECK_REPLY(&f, "rift.control.shutdown", "[]",
                "{\"error\":\"expected a JSON object\",\"ok\":false}");
    teardown(&f);
}

RIFT_TEST(payload_limit_is_8_kib) {
    fixture f;
    CHECK(setup(&f, 0));
    /* Exactly 8,192 bytes passes the size check (then fails on the field). */
    char *p = malloc(8194);
    CHECK(p != NULL);
    memcpy(p, "{\"a\":\"", 6);
    memset(p + 6, 'x', 8192 - 8);
    memcpy(p + 8190, "\"}", 2);
    char *r1 = request(f.b, "rift.control.status", p, 8192);
    p[8190] = 'x';
    memcpy(p + 8191, "\"}", 2);
    char *r2 = request(f.b, "rift.control.status", p, 8193);
    free(p);
    teardown(&f);
    bool ok1 = r1 && strcmp(r1, "{\"error\":\"unknown control payload "
                                "field\",\"ok\":false}") == 0;
    bool ok2 = r2 && strcmp(r2, "{\"error\":\"control payload exceeds 8 "
                                "KiB\",\"ok\":false}") == 0;
    free(r1);
    free(r2);
    CHECK(ok1);
    CHECK(ok2);
}

RIFT_TEST(events_follow_every_command_but_status) {
    fixture f;
    CHECK(setup(&f, 0));
    rift_sub *ev = sub_to(f.b, "rift.events.control");
    CHECK(ev != NULL);
    char *a = req(f.b, "rift.control.status", "{}");
    char *b = req(f.b, "rift.control.shutdown", "{}");
    char *c = req(f.b, "rift.control.streams", "{}");
    char *e1 = next_payload(ev);
    char *e2 = next_payload(ev);
    rift_msg *extra = NULL;
    int more = rift_sub_recv(ev, 0, &extra, NULL);
    rift_msg_unref(extra);
    rift_sub_close(ev);
    teardown(&f);
    bool ok = a && b && c && e1 && e2 &&
              strcmp(e1, "{\"command\":\"shutdown\",\"ok\":false}") == 0 &&
              strcmp(e2, "{\"command\":\"streams\",\"ok\":true}") == 0 &&
              more == RIFT_ERR_AGAIN;
    free(a);
    free(b);
    free(c);
    free(e1);
    free(e2);
    CHECK(ok);
}

RIFT_TEST(non_inbox_reply_is_ignored) {
    fixture f;
    CHECK(setup(&f, 0));
    rift_sub *ev = sub_to(f.b, "rift.events.>");
    rift_sub *trap = sub_to(f.b, "not.an.inbox");
    CHECK(ev != NULL && trap != NULL);
    /* Reload with a reply that is not an inbox: no answer, no event, and
     * the reload does not happen (no rift.events.reload). */
    rift_error err = {0};
    CHECK_OK(rift_broker_publish(f.b, "rift.control.reload", 19, "not.an.inbox",
                                 12, (const uint8_t *)"{}", 2, NULL, &err));
    CHECK_OK(rift_broker_publish(f.b, "rift.control.reload", 19, NULL, 0,
                                 (const uint8_t *)"{}", 2, NULL, &err));
    /* Deeper subjects are not commands (rift.control.* is one token). */
    CHECK_OK(rift_broker_publish(f.b, "rift.control.streams.x", 22,
                                 "_INBOX.00000000000000000000000000000000", 39,
                                 (const uint8_t *)"{}", 2, NULL, &err));
    /* Requests are serial: once this answer arrives, the ones above were
     * handled (and ignored). */
    char *r = req(f.b, "rift.control.streams", "{}");
    char *e = next_payload(ev);
    rift_msg *m = NULL;
    int trapped = rift_sub_recv(trap, 0, &m, NULL);
    rift_msg_unref(m);
    rift_sub_close(ev);
    rift_sub_close(trap);
    teardown(&f);
    bool ok = r && e &&
              strcmp(e, "{\"command\":\"streams\",\"ok\":true}") == 0 &&
              trapped == RIFT_ERR_AGAIN;
    free(r);
    free(e);
    CHECK(ok);
}

RIFT_TEST(reload_applies_and_announces) {
    fixture f;
    CHECK(setup(&f, 0));
    rift_sub *ev = sub_to(f.b, "rift.events.>");
    CHECK(ev != NULL);
    /* Only non-messaging settings change: accepted. */
    char edited[sizeof(f.config)];
    snprintf(edited, sizeof(edited), "%s", f.config);
    memcpy(strstr(edited, "'warn'"), "'info'", 6);
    CHECK(write_config(&f, edited));
    char *r = req(f.b, "rift.control.reload", "{}");
    char *e1 = next_payload(ev);
    char *e2 = next_payload(ev);
    char rev[17];
    rift_daemon_revision(f.d, rev);
    char want_reply[200], want_event[100];
    snprintf(want_reply, sizeof(want_reply),
             "{\"data\":{\"existing_sessions\":\"preserved\",\"reloaded\":"
             "true,\"revision\":\"%s\"},\"ok\":true}",
             rev);
    snprintf(want_event, sizeof(want_event), "{\"revision\":\"%s\"}", rev);
    char expect_rev[17];
    rift_config_revision(edited, strlen(edited), expect_rev);
    rift_sub_close(ev);
    teardown(&f);
    bool ok = r && e1 && e2 && strcmp(r, want_reply) == 0 &&
              strcmp(e1, want_event) == 0 &&
              strcmp(e2, "{\"command\":\"reload\",\"ok\":true}") == 0 &&
              strcmp(rev, expect_rev) == 0;
    if (!ok) {
        fprintf(stderr, "  %s | %s | %s\n", r, e1, e2);
    }
    free(r);
    free(e1);
    free(e2);
    CHECK(ok);
}

RIFT_TEST(reload_rejected_when_messaging_changes) {
    fixture f;
    CHECK(setup(&f, 0));
    char before[17], after[17];
    rift_daemon_revision(f.d, before);
    CHECK(write_config(&f, "return { messaging = { subscription_capacity = "
                           "8 } }"));
    char *r = req(f.b, "rift.control.reload", "{}");
    /* riftd's quic table is listener configuration too. */
    CHECK(write_config(&f, "return { quic = { retry = true } }"));
    char *r3 = req(f.b, "rift.control.reload", "{}");
    CHECK(write_config(&f, "return { messaging = "));
    char *r2 = req(f.b, "rift.control.reload", "{}");
    rift_daemon_revision(f.d, after);
    teardown(&f);
    static const char restart[] =
        "{\"error\":\"reload rejected; previous configuration retained: "
        "listener names/addresses, admin and messaging settings require a "
        "restart\",\"ok\":false}";
    bool ok = r && strcmp(r, restart) == 0 && r3 && strcmp(r3, restart) == 0;
    bool ok2 = r2 &&
               strstr(r2, "\"error\":\"reload rejected; previous "
                          "configuration retained: ") != NULL &&
               strstr(r2, "rift.lua:1:") != NULL;
    if (!ok || !ok2) {
        fprintf(stderr, "  %s\n  %s\n  %s\n", r, r3, r2);
    }
    free(r);
    free(r2);
    free(r3);
    CHECK(ok);
    CHECK(ok2);
    CHECK_EQ_STR(before, after);
}

RIFT_TEST(command_timeout_text) {
    fixture f;
    CHECK(setup(&f, 100));
    CHECK(write_config(&f, "while true do end"));
    char *r = req(f.b, "rift.control.reload", "{}");
    teardown(&f);
    bool ok =
        r && strcmp(r, "{\"error\":\"control request timed out; "
                       "inspect status before retrying\",\"ok\":false}") == 0;
    free(r);
    CHECK(ok);
}

RIFT_TEST(streams_and_stream_info) {
    fixture f;
    CHECK(setup(&f, 0));
    char *list = req(f.b, "rift.control.streams", "{}");
    char *info = req(f.b, "rift.control.stream.info", "{\"name\":\"archive\"}");
    char *missing = req(f.b, "rift.control.stream.info", "{\"name\":\"nope\"}");
    char *noname = req(f.b, "rift.control.stream.info", "{}");
    char *badname = req(f.b, "rift.control.stream.info", "{\"name\":5}");
    char *extra =
        req(f.b, "rift.control.stream.info", "{\"name\":\"jobs\",\"x\":1}");
    char archive[600];
    snprintf(archive, sizeof(archive), "%s/archive-data", f.dir);
    teardown(&f);
    json_t *lv = list ? json_loads(list, 0, NULL) : NULL;
    json_t *streams = json_object_get(json_object_get(lv, "data"), "streams");
    json_t *iv = info ? json_loads(info, 0, NULL) : NULL;
    json_t *idata = json_object_get(iv, "data");
    bool ok =
        json_array_size(streams) == 2 &&
        strcmp(json_string_value(
                   json_object_get(json_array_get(streams, 0), "name")),
               "archive") == 0 &&
        strcmp(json_string_value(json_object_get(idata, "storage_path")),
               archive) == 0 &&
        json_object_get(idata, "open") == json_true() &&
        strcmp(json_string_value(json_object_get(idata, "storage")), "file") ==
            0 &&
        json_integer_value(json_object_get(idata, "max_messages")) == 100000 &&
        json_is_null(json_object_get(idata, "max_age_ms")) &&
        strcmp(json_string_value(
                   json_array_get(json_object_get(idata, "subjects"), 0)),
               ">") == 0;
    const char *name_err = "{\"error\":\"name must be a nonempty string of at "
                           "most 96 bytes\",\"ok\":false}";
    bool errs =
        missing && noname && badname && extra &&
        strcmp(missing, "{\"error\":\"unknown stream \\\"nope\\\"; use "
                        "streams to list streams\",\"ok\":false}") == 0 &&
        strcmp(noname, name_err) == 0 && strcmp(badname, name_err) == 0 &&
        strcmp(extra, "{\"error\":\"unknown control payload "
                      "field\",\"ok\":false}") == 0;
    json_decref(lv);
    json_decref(iv);
    free(list);
    free(info);
    free(missing);
    free(noname);
    free(badname);
    free(extra);
    CHECK(ok);
    CHECK(errs);
}

/* stream.reopen answers the stream's summary (a healthy stream has
 * nothing to reopen; the store's tests cover a failed one). */
RIFT_TEST(stream_reopen_command) {
    fixture f;
    CHECK(setup(&f, 0));
    char *ok = req(f.b, "rift.control.stream.reopen", "{\"name\":\"archive\"}");
    CHECK_REPLY(&f, "rift.control.stream.reopen", "{\"name\":\"nope\"}",
                "{\"error\":\"unknown stream \\\"nope\\\"; use streams to "
                "list streams\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.stream.reopen", "{}",
                "{\"error\":\"name must be a nonempty string of at most 96 "
                "bytes\",\"ok\":false}");
    teardown(&f);
    json_t *v = ok ? json_loads(ok, 0, NULL) : NULL;
    json_t *data = json_object_get(v, "data");
    CHECK_MSG(json_object_get(v, "ok") == json_true() &&
                  strcmp(json_string_value(json_object_get(data, "name")),
                         "archive") == 0 &&
                  json_object_get(data, "poisoned") == json_false(),
              "%s", ok ? ok : "(no reply)");
    json_decref(v);
    free(ok);
}

RIFT_TEST(control_uses_one_subscription_slot) {
    /* max_subscriptions = 1 leaves exactly the control bridge's slot, and
     * the bridge needs no more than that one. */
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/rift.lua", dir);
    const char *src = "return { messaging = { max_subscriptions = 1 } }";
    CHECK_OK(rift_file_write_atomic(path, src, strlen(src), 0644));
    rift_daemon_options opts = {.config_path = path};
    rift_daemon *d = NULL;
    rift_error err = {0};
    int rc = rift_daemon_start(&d, &opts, &err);
    size_t subs =
        rc == 0 ? rift_broker_subscription_count(rift_daemon_broker(d)) : 0;
    rift_daemon_stop(d);
    rift_test_rmdir(dir);
    CHECK_OK(rc);
    CHECK_EQ_INT(subs, 1);
}

static void subscribe_lifecycle(void *ud, rift_broker *b) {
    *(rift_sub **)ud = sub_to(b, "rift.events.lifecycle");
}

RIFT_TEST(lifecycle_ready_then_draining) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/rift.lua", dir);
    CHECK_OK(rift_file_write_atomic(path, "return {}", 9, 0644));
    rift_sub *life = NULL;
    rift_daemon_options opts = {.config_path = path,
                                .on_broker = subscribe_lifecycle,
                                .on_broker_ud = &life};
    rift_daemon *d = NULL;
    rift_error err = {0};
    int rc = rift_daemon_start(&d, &opts, &err);
    char *ready = rc == 0 && life ? next_payload(life) : NULL;
    rift_daemon_shutdown(d);
    char *draining = rc == 0 && life ? next_payload(life) : NULL;
    /* The control bridge is gone after shutdown: nobody answers. */
    rift_msg *reply = NULL;
    int after = rc == 0 ? rift_broker_request(
                              rift_daemon_broker(d), "rift.control.status", 19,
                              (const uint8_t *)"{}", 2, SECOND, &reply, &err)
                        : 0;
    rift_msg_unref(reply);
    rift_sub_close(life);
    rift_daemon_del(d);
    rift_test_rmdir(dir);
    bool ok = ready && draining &&
              strcmp(ready, "{\"state\":\"ready\"}") == 0 &&
              strcmp(draining, "{\"state\":\"draining\"}") == 0;
    free(ready);
    free(draining);
    CHECK_OK(rc);
    CHECK(ok);
    CHECK_EQ_INT(after, RIFT_ERR_NO_RESPONDERS);
}

RIFT_TEST(stream_and_consumer_command_errors) {
    fixture f;
    CHECK(setup(&f, 0));
    /* Replay of an empty stream: no records, next = 1. */
    CHECK_REPLY(&f, "rift.control.stream.replay", "{\"stream\":\"jobs\"}",
                "{\"data\":{\"first_seq\":1,\"last_seq\":0,\"next\":1,"
                "\"records\":[],\"stream\":\"jobs\"},\"ok\":true}");
    CHECK_REPLY(&f, "rift.control.stream.replay",
                "{\"stream\":\"jobs\",\"limit\":1001}",
                "{\"error\":\"limit must be an integer in 1..=1000\","
                "\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.stream.replay",
                "{\"stream\":\"jobs\",\"from\":0}",
                "{\"error\":\"from must be an integer in "
                "1..=9223372036854775807\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.stream.replay", "{\"stream\":\"nope\"}",
                "{\"error\":\"unknown stream \\\"nope\\\"; use streams to "
                "list streams\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.stream.replay", "{}",
                "{\"error\":\"stream must be a nonempty string of at most 96 "
                "bytes\",\"ok\":false}");
    /* In process there is no QUIC requester to act for, and this
     * configuration has no principals. */
    CHECK_REPLY(&f, "rift.control.consumer.open",
                "{\"stream\":\"jobs\",\"name\":\"w\"}",
                "{\"error\":\"identity is required unless the request comes "
                "from a QUIC client (REQUEST)\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.consumer.delete",
                "{\"stream\":\"jobs\",\"name\":\"w\",\"identity\":\"x\"}",
                "{\"error\":\"unknown identity \\\"x\\\"; use status to list "
                "identities\",\"ok\":false}");
    CHECK_REPLY(&f, "rift.control.consumer.info",
                "{\"stream\":\"jobs\",\"name\":\"w\",\"filter\":\">\"}",
                "{\"error\":\"unknown control payload field\",\"ok\":false}");
    teardown(&f);
}
