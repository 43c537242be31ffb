/*
 * test_lua_stream.c — durable streams from Lua (tests layer):
 * rift.stream(name):publish/info and rift.consumer(...):fetch/ack/info,
 * their errors, the publication budget, and a restricted plugin's scoped
 * consumer names and filter grants.
 */
// labels: threads
#include "lua_stream_fixture.h"

#include "rift/broker.h"
#include "rift/stream.h"
#include "subject/acl.h"

typedef lua_stream_fx fixture;

static int publish(fixture *fx, const char *subject, const char *payload) {
    return rift_broker_publish(fx->b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               NULL);
}

static const char plugin_src[] =
    "local function err(f, ...) local ok, e = pcall(f, ...) "
    "return ok and 'ok' or (e:gsub('^.-:%d+: ', '')) end\n"
    "assert(err(rift.stream, 'nope') == 'rift.stream: unknown stream')\n"
    "assert(err(rift.consumer, 'nope', 'c') == 'rift.consumer: unknown "
    "stream')\n"
    "local s = rift.stream('events')\n"
    "assert(err(s.publish, s, 'events.a', 'x') == 'stream:publish is only "
    "available inside runtime callbacks')\n"
    "rift.subscribe('go.pub', function(m)\n"
    "  local r = s:publish('events.' .. m.payload, m.payload)\n"
    "  rift.publish('out.r', r.sequence .. ',' .. tostring(r.timestamp_ms > "
    "0))\n"
    "end)\n"
    "rift.subscribe('go.bad', function(m)\n"
    "  rift.publish('out.r', err(s.publish, s, 'other', 'x'))\n"
    "  rift.publish('out.r', err(s.publish, s, 'events.*', 'x'))\n"
    "  local i = s:info()\n"
    "  rift.publish('out.r', i.messages .. ',' .. i.first_sequence .. ',' "
    ".. i.last_sequence)\n"
    "end)\n"
    "rift.subscribe('go.consume', function(m)\n"
    "  local c = rift.consumer('events', 'worker', {filter = 'events.>', "
    "start = 'first', ack_wait_ms = 60000})\n"
    "  local parts = {}\n"
    "  for _, r in ipairs(c:fetch(10)) do\n"
    "    parts[#parts + 1] = r.sequence .. ':' .. r.subject .. ':' .. "
    "r.payload .. ':' .. r.delivery_count\n"
    "    if r.sequence ~= 2 then c:ack(r.sequence) end\n"
    "  end\n"
    "  rift.publish('out.r', table.concat(parts, ' '))\n"
    "  rift.publish('out.r', err(c.ack, c, 1))\n"
    "  local i = c:info()\n"
    "  rift.publish('out.r', i.pending .. ',' .. i.next_sequence)\n"
    "  rift.publish('out.r', #c:fetch(5) .. '')\n"
    "  c:close()\n"
    "  rift.publish('out.r', err(c.fetch, c))\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 'worker', "
    "{ack_wait_ms = 1}))\n"
    "end)\n";

RIFT_TEST(stream_publish_fetch_ack) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    lt_plugin(fx.root, "p", plugin_src);
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    spec.deadline_ms = 5000;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "go.pub", "a"));
    CHECK_EQ_STR(lsf_next_out(&fx), "1,true");
    CHECK_OK(publish(&fx, "go.pub", "b"));
    CHECK_EQ_STR(lsf_next_out(&fx), "2,true");
    CHECK_OK(publish(&fx, "go.pub", "c"));
    CHECK_EQ_STR(lsf_next_out(&fx), "3,true");
    CHECK_OK(publish(&fx, "go.bad", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "subject does not match this stream");
    CHECK_EQ_STR(lsf_next_out(&fx), "invalid subject: events.*");
    CHECK_EQ_STR(lsf_next_out(&fx), "3,1,3");
    CHECK_OK(publish(&fx, "go.consume", ""));
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "1:events.a:a:1 2:events.b:b:1 3:events.c:c:1");
    CHECK_EQ_STR(lsf_next_out(&fx), "sequence is not pending acknowledgement");
    CHECK_EQ_STR(lsf_next_out(&fx), "1,4");
    CHECK_EQ_STR(lsf_next_out(&fx), "0");
    CHECK_EQ_STR(lsf_next_out(&fx), "consumer is closed");
    CHECK_EQ_STR(lsf_next_out(&fx), "invalid messaging configuration: consumer "
                                    "already exists with different filter");
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(fx.events, &info, &err));
    CHECK_EQ_INT(info.consumer_count, 1);
    CHECK_EQ_STR(info.consumer_names[0], "worker");
    rift_stream_info_free(&info);
    lsf_close(&fx);
}

/* Start positions by the CLI's spellings (test_lua_consumer.c has them
 * all), and errors that name the function and the field. */
static const char start_names_src[] =
    "local function err(f, ...) local ok, e = pcall(f, ...) "
    "return ok and 'ok' or (e:gsub('^.-:%d+: ', '')) end\n"
    "local function start(name, cfg)\n"
    "  local c = rift.consumer('events', name, cfg)\n"
    "  return tostring(c:info().start_sequence)\n"
    "end\n"
    "rift.subscribe('go.start', function()\n"
    "  rift.publish('out.r', table.concat({\n"
    "    start('l', {start = 'last'}), start('n', {start = 'new'}),\n"
    "    start('s', {start = 'since:1h'})}, ','))\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 'x', "
    "{start = 'sometime'}))\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 'x', "
    "{filter = 5}))\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 7))\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 'x', "
    "{ack_wait_ms = -1}))\n"
    "end)\n";

RIFT_TEST(consumer_start_names_and_errors) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rift_stream_publish(fx.events, "events.a", 8, NULL, 0,
                                     (const uint8_t *)"x", 1, NULL, NULL));
    }
    lt_plugin(fx.root, "p", start_names_src);
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    spec.deadline_ms = 5000;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "go.start", ""));
    /* last = the newest record (3), new = the next one (4), since 1 h =
     * the first (1). */
    CHECK_EQ_STR(lsf_next_out(&fx), "3,4,1");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start expects seq:N, first, last, new, "
                 "time:T or since:D (got \"sometime\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.filter must be a string, not number");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: argument #2 (name) must be a "
                 "string, not number");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.ack_wait_ms must be an "
                 "integer in 0..=9223372036854775807");
    lsf_close(&fx);
}

RIFT_TEST(stream_publications_count_against_the_budget) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    lt_plugin(fx.root, "p",
              "local s = rift.stream('events')\n"
              "rift.subscribe('go', function()\n"
              "  for i = 1, 256 do s:publish('events.x', 'm') end\n"
              "  local ok, e = pcall(s.publish, s, 'events.x', 'm')\n"
              "  error(e, 0)\n"
              "end)\n");
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    spec.deadline_ms = 10000;
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err));
    CHECK_OK(publish(&fx, "go", ""));
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_MSG(strstr(s.err, "script messaging budget exceeded (256 messages "
                            "/ 1 MiB)") != NULL,
              "%s", s.err);
    lsf_close(&fx);
}

RIFT_TEST(restricted_plugin_consumers_are_scoped) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    lt_plugin(fx.root, "p",
              "local function err(f, ...) local ok, e = pcall(f, ...) "
              "return ok and 'ok' or (e:gsub('^.-:%d+: ', '')) end\n"
              "rift.subscribe('in.go', function()\n"
              "  rift.publish('out.r', err(rift.consumer, 'events', 'w'))\n"
              "  local c = rift.consumer('events', 'w', {filter = "
              "'events.mine.>'})\n"
              "  local s = rift.stream('events')\n"
              "  rift.publish('out.r', err(s.publish, s, 'events.other', "
              "'x'))\n"
              "  s:publish('events.mine.1', 'x')\n"
              "  rift.publish('out.r', #c:fetch(5) .. '')\n"
              "end)\n");
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    const char *pub[] = {"out.>", "events.mine.>"};
    const char *sub[] = {"in.>", "events.mine.>"};
    spec.restricted = true;
    spec.publish = pub;
    spec.n_publish = 2;
    spec.subscribe = sub;
    spec.n_subscribe = 2;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "in.go", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "subscription not permitted");
    CHECK_EQ_STR(lsf_next_out(&fx), "publication not permitted");
    CHECK_EQ_STR(lsf_next_out(&fx), "1");
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(fx.events, &info, &err));
    CHECK_EQ_INT(info.consumer_count, 1);
    CHECK(strncmp(info.consumer_names[0], "remote_", 7) == 0);
    CHECK_EQ_INT(strlen(info.consumer_names[0]), 71);
    rift_stream_info_free(&info);
    lsf_close(&fx);
}

/* A restricted plugin "alice" and a remote principal "alice" opening "w1"
 * are two consumers: the plugin's name is scoped by "plugin:alice". */
RIFT_TEST(restricted_plugin_consumers_are_not_a_principals) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    rift_error err;
    rift_identity principal;
    rift_identity_init(&principal, NULL);
    CHECK_OK(rift_identity_set_name(&principal, "alice", 5));
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    CHECK_OK(rift_identity_consumer_name(&principal, "w1", 2, scoped, &err));
    rift_identity_free(&principal);
    rift_consumer_config cc;
    rift_consumer_config_default(&cc);
    cc.filter = "events.>";
    cc.filter_len = 8;
    rift_consumer *mine;
    CHECK_OK(rift_stream_consumer_open(
        fx.events, scoped, RIFT_SCOPED_CONSUMER_LEN, &cc, &mine, &err));
    rift_stored stored;
    CHECK_OK(rift_stream_publish(fx.events, "events.a", 8, NULL, 0,
                                 (const uint8_t *)"for-the-principal", 17,
                                 &stored, &err));
    lt_plugin(fx.root, "alice",
              "rift.subscribe('in.go', function()\n"
              "  local c = rift.consumer('events', 'w1', {filter = "
              "'events.>'})\n"
              "  rift.publish('out.r', #c:fetch(5) .. '')\n"
              "end)\n");
    rift_plugin_spec spec = lt_spec(fx.root, "alice");
    const char *pub[] = {"out.>"};
    const char *sub[] = {"in.>", "events.>"};
    spec.restricted = true;
    spec.publish = pub;
    spec.n_publish = 1;
    spec.subscribe = sub;
    spec.n_subscribe = 2;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "in.go", ""));
    /* Its own consumer starts at sequence 1 as well, so it sees the record;
     * what must differ is the consumer. */
    CHECK_EQ_STR(lsf_next_out(&fx), "1");
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(fx.events, &info, &err));
    CHECK_EQ_INT(info.consumer_count, 2);
    char plugins[RIFT_SCOPED_CONSUMER_SIZE];
    CHECK_OK(rift_plugin_consumer_name("alice", 5, "w1", 2, plugins, &err));
    CHECK(strcmp(plugins, scoped) != 0);
    bool found = false;
    for (size_t i = 0; i < info.consumer_count; i++) {
        found = found || strcmp(info.consumer_names[i], plugins) == 0;
    }
    CHECK(found);
    rift_stream_info_free(&info);
    /* The principal's consumer still has its record undelivered. */
    rift_batch b;
    memset(&b, 0, sizeof(b));
    CHECK_OK(rift_consumer_fetch(mine, 5, &b, &err));
    CHECK_EQ_INT(b.count, 1);
    rift_batch_free(&b);
    rift_consumer_close(mine);
    lsf_close(&fx);
}
