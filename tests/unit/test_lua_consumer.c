/*
 * test_lua_consumer.c — consumers from Lua beyond fetch and ack (tests
 * layer): config.start in the CLI's spellings and their errors, the resume
 * rule, consumer:info and consumer:delete, isolation between plugins, and
 * the waiting fetch: woken by a publish, timing out empty, costing no CPU
 * while many wait, and freed cleanly by a reload or an unload.
 */
// labels: threads
#include "lua_stream_fixture.h"

#include "common/common.h"
#include "rift/broker.h"
#include "rift/stream.h"

#include <sys/resource.h>

typedef lua_stream_fx fixture;

static int publish(fixture *fx, const char *subject, const char *payload) {
    return rift_broker_publish(fx->b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               NULL);
}

static int append(fixture *fx, const char *subject, const char *payload) {
    return rift_stream_publish(fx->events, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               NULL);
}

static bool load(fixture *fx, const char *name, const char *src) {
    lt_plugin(fx->root, name, src);
    rift_plugin_spec spec = lt_spec(fx->root, name);
    spec.deadline_ms = 5000;
    spec.instructions = 10000000;
    rift_error err;
    if (rift_plugin_host_apply(fx->h, &spec, 1, NULL, &err) != 0) {
        fprintf(stderr, "apply: %s\n", err.text);
        return false;
    }
    return true;
}

typedef struct req_wait {
    rift_plugin_host *h;
    const char *name;
    size_t requests;
} req_wait;

static bool requests_are(void *arg) {
    req_wait *w = arg;
    lt_status s = lt_get(w->h, w->name);
    return s.found && s.requests == w->requests;
}

/* Waits until plugin |name| has exactly |n| suspended requests/fetches. */
static bool await_requests(fixture *fx, const char *name, size_t n) {
    req_wait w = {fx->h, name, n};
    return rift_test_wait_until(requests_are, &w, 10000);
}

#define ERR_FN                                                                 \
 "local function err(f, ...) local ok, e = pcall(f, ...) "                     \
 "return ok and 'ok' or (e:gsub('^.-:%d+: ', '')) end\n"

/* ---- Start positions ---- */

static const char starts_src[] =
    ERR_FN "local function start(name, s)\n"
           "  local i = rift.consumer('events', name, {start = s}):info()\n"
           "  return i.start_sequence .. '=' .. i.start\n"
           "end\n"
           "rift.subscribe('go.start', function(m)\n"
           "  rift.publish('out.r', table.concat({\n"
           "    start('f', 'first'), start('l', 'last'), start('n', 'new'),\n"
           "    start('q', 'seq:2'), start('t', 'time:' .. m.payload),\n"
           "    start('r', 'time:2999-01-01T00:00:00Z'),\n"
           "    start('s', 'since:1h'), start('d', 'since:1500ms')}, ' '))\n"
           "end)\n"
           "rift.subscribe('go.bad', function()\n"
           "  for _, s in ipairs({'sometime', 'seq:0', 'seq:x', 'sequence',\n"
           "      'time:yesterday', 'since:5x', 'last_received', 5}) do\n"
           "    rift.publish('out.r', err(rift.consumer, 'events', 'x', "
           "{start = s}))\n"
           "  end\n"
           "  rift.publish('out.r', err(rift.consumer, 'events', 'x', "
           "{start = 'first', start_sequence = 3}))\n"
           "  rift.publish('out.r', err(rift.consumer, 'events', 'x', "
           "{since_ms = 3}))\n"
           "end)\n";

RIFT_TEST(start_spellings_as_the_cli) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK_OK(append(&fx, "events.a", "1"));
    rift_stored two;
    CHECK_OK(rift_stream_publish(fx.events, "events.a", 8, NULL, 0,
                                 (const uint8_t *)"2", 1, &two, NULL));
    CHECK_OK(append(&fx, "events.a", "3"));
    CHECK(load(&fx, "p", starts_src));
    char ms[32];
    snprintf(ms, sizeof(ms), "%llu", (unsigned long long)two.timestamp_ms);
    CHECK_OK(publish(&fx, "go.start", ms));
    /* time:<ms of record 2> starts at the first record that old (1 when
     * all three share the millisecond); the future starts after the end. */
    const char *got = lsf_next_out(&fx);
    char want_t[32];
    snprintf(want_t, sizeof(want_t), "=time:");
    CHECK_MSG(strncmp(got, "1=first 3=last 4=new 2=seq:2 ", 29) == 0, "%s",
              got);
    CHECK_MSG(strstr(got, want_t) != NULL, "%s", got);
    CHECK_MSG(strstr(got, " 4=time:2999-01-01T00:00:00.000Z 1=since:1h "
                          "1=since:1500ms") != NULL,
              "%s", got);
    CHECK_OK(publish(&fx, "go.bad", ""));
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start expects seq:N, first, last, new, "
                 "time:T or since:D (got \"sometime\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start seq:N expects N >= 1 (sequences "
                 "start at 1) (got \"seq:0\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start seq:N expects N >= 1 (sequences "
                 "start at 1) (got \"seq:x\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start expects seq:N, first, last, new, "
                 "time:T or since:D (got \"sequence\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start time:T expects RFC 3339 "
                 "(2026-01-02T15:04:05Z) or Unix milliseconds (got "
                 "\"time:yesterday\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start since:D expects a duration such "
                 "as 90s, 5m or 1h30m (got \"since:5x\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start expects seq:N, first, last, new, "
                 "time:T or since:D (got \"last_received\")");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start must be a string, not number");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.start_sequence is not a setting; the "
                 "start is one string: start = \"seq:N\", \"time:T\" or "
                 "\"since:D\"");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "rift.consumer: config.since_ms is not a setting; the start "
                 "is one string: start = \"seq:N\", \"time:T\" or \"since:D\"");
    /* None of the refused ones was created. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(fx.events, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 8);
    rift_stream_info_free(&info);
    lsf_close(&fx);
}

/* The store's parser and formatter round-trip every spelling. */
RIFT_TEST(start_text_round_trips) {
    const char *in[] = {"first",        "last",
                        "new",          "seq:42",
                        "since:90s",    "since:2d",
                        "since:1500ms", "time:2026-01-02T15:04:05.250Z"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        rift_consumer_config c;
        rift_consumer_config_default(&c);
        rift_error err;
        CHECK_MSG(rift_consumer_start_parse(in[i], strlen(in[i]), &c, &err) ==
                      0,
                  "%s: %s", in[i], err.text);
        char out[RIFT_CONSUMER_START_TEXT];
        rift_consumer_start_format(&c, out, sizeof(out));
        CHECK_EQ_STR(out, in[i]);
    }
    rift_consumer_config c;
    rift_consumer_config_default(&c);
    CHECK_OK(rift_consumer_start_parse("time:1767366245000", 18, &c, NULL));
    CHECK_EQ_INT(c.start, RIFT_START_TIME);
    CHECK_EQ_INT(c.start_time_ms, 1767366245000ull);
    CHECK_OK(rift_consumer_start_parse("since:90", 8, &c, NULL));
    CHECK_EQ_INT(c.start_time_ms, 90000);
    /* A failure leaves the configuration alone; NULs are refused. */
    CHECK_EQ_INT(rift_consumer_start_parse("seq:1\0x", 7, &c, NULL),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(c.start, RIFT_START_TIME_DELTA);
}

/* ---- Resume, info, delete, isolation ---- */

static const char resume_src[] =
    ERR_FN "rift.subscribe('go.resume', function()\n"
           "  local c = rift.consumer('events', 'w', {start = 'seq:2', "
           "filter = 'events.a', ack_wait_ms = 60000})\n"
           "  local r = c:fetch(1)\n"
           "  local again = rift.consumer('events', 'w', {start = 'new', "
           "filter = 'events.a', ack_wait_ms = 60000})\n"
           "  local i = again:info()\n"
           "  rift.publish('out.r', r[1].sequence .. ' ' .. i.name .. ' ' .. "
           "i.start .. ' ' .. i.filter .. ' ' .. i.ack_wait_ms .. ' ' .. "
           "i.max_ack_pending .. ' ' .. i.start_sequence .. ' ' .. "
           "i.next_sequence .. ' ' .. i.pending)\n"
           "  rift.publish('out.r', err(rift.consumer, 'events', 'w', "
           "{filter = 'events.b', ack_wait_ms = 60000}))\n"
           "  rift.publish('out.r', err(rift.consumer, 'events', 'w', "
           "{filter = 'events.a'}))\n"
           "  rift.publish('out.r', err(rift.consumer, 'events', 'w', "
           "{filter = 'events.a', ack_wait_ms = 60000, max_ack_pending = "
           "5}))\n"
           "  rift.publish('out.r', tostring(again:delete()))\n"
           "  rift.publish('out.r', err(again.info, again))\n"
           "  rift.publish('out.r', err(c.info, c))\n"
           "  local fresh = rift.consumer('events', 'w', {start = 'new'})\n"
           "  rift.publish('out.r', fresh:info().start .. ' ' .. "
           "fresh:info().pending)\n"
           "end)\n";

RIFT_TEST(resume_ignores_the_start_and_names_the_differing_field) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(append(&fx, "events.a", "x"));
    }
    CHECK(load(&fx, "p", resume_src));
    CHECK_OK(publish(&fx, "go.resume", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "2 w seq:2 events.a 60000 128 2 3 1");
    CHECK_EQ_STR(lsf_next_out(&fx), "invalid messaging configuration: consumer "
                                    "already exists with different filter");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "invalid messaging configuration: consumer "
                 "already exists with different ack_wait_ms");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "invalid messaging configuration: consumer already exists "
                 "with different max_ack_pending");
    CHECK_EQ_STR(lsf_next_out(&fx), "true");
    CHECK_EQ_STR(lsf_next_out(&fx), "consumer is closed");
    /* The other handle on the deleted consumer. */
    CHECK_EQ_STR(lsf_next_out(&fx), "consumer does not exist");
    CHECK_EQ_STR(lsf_next_out(&fx), "new 0");
    lsf_close(&fx);
}

/* Two restricted plugins with a consumer "w" each: two consumers, and
 * one's delete leaves the other's alone. */
RIFT_TEST(restricted_plugins_see_only_their_own_consumers) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK_OK(append(&fx, "events.a", "x"));
    const char *srcs[2] = {
        "rift.subscribe('a.go', function(m)\n"
        "  local c = rift.consumer('events', 'w', {filter = 'events.>'})\n"
        "  if m.payload == 'fetch' then\n"
        "    rift.publish('out.a', #c:fetch(5) .. '') return end\n"
        "  rift.publish('out.a', c:info().name .. ' ' .. "
        "tostring(c:delete()))\n"
        "end)\n",
        "rift.subscribe('b.go', function()\n"
        "  local c = rift.consumer('events', 'w', {filter = 'events.>', "
        "start = 'new'})\n"
        "  rift.publish('out.b', c:info().start .. ' ' .. #c:fetch(5))\n"
        "end)\n"};
    lt_plugin(fx.root, "a", srcs[0]);
    lt_plugin(fx.root, "b", srcs[1]);
    rift_plugin_spec spec[2] = {lt_spec(fx.root, "a"), lt_spec(fx.root, "b")};
    const char *pub_a[] = {"out.>"}, *sub_a[] = {"a.>", "events.>"};
    const char *sub_b[] = {"b.>", "events.>"};
    spec[0].restricted = spec[1].restricted = true;
    spec[0].publish = spec[1].publish = pub_a;
    spec[0].n_publish = spec[1].n_publish = 1;
    spec[0].subscribe = sub_a;
    spec[1].subscribe = sub_b;
    spec[0].n_subscribe = spec[1].n_subscribe = 2;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, spec, 2, NULL, &err) == 0, "%s",
              err.text);
    /* b's "w" starts new: it is not a's, which starts at the first. */
    CHECK_OK(publish(&fx, "b.go", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "new 0");
    CHECK_OK(publish(&fx, "a.go", "fetch"));
    CHECK_EQ_STR(lsf_next_out(&fx), "1");
    CHECK_OK(publish(&fx, "a.go", "delete"));
    CHECK_EQ_STR(lsf_next_out(&fx), "w true");
    /* b's consumer survived a's delete: reopening resumes it. */
    CHECK_OK(append(&fx, "events.a", "y"));
    CHECK_OK(publish(&fx, "b.go", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "new 1");
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(fx.events, &info, NULL));
    CHECK_EQ_INT(info.consumer_count, 1); /* b's; a's is gone */
    rift_stream_info_free(&info);
    lsf_close(&fx);
}

/* ---- The waiting fetch ---- */

static const char wait_src[] =
    ERR_FN "local c = rift.consumer('events', 'w', {start = 'new'})\n"
           "rift.subscribe('go.wait', function(m)\n"
           "  local r = c:fetch(5, {wait = tonumber(m.payload)})\n"
           "  local parts = {}\n"
           "  for _, x in ipairs(r) do parts[#parts + 1] = x.sequence .. ':' "
           ".. x.payload; c:ack(x.sequence) end\n"
           "  rift.publish('out.r', #r .. ' ' .. table.concat(parts, ','))\n"
           "end)\n"
           "rift.subscribe('go.ping', function() rift.publish('out.r', "
           "'pong') end)\n"
           "rift.subscribe('go.bad', function()\n"
           "  rift.publish('out.r', err(c.fetch, c, 1, {wait = 120001}))\n"
           "  rift.publish('out.r', err(c.fetch, c, 1, {wait = -1}))\n"
           "  rift.publish('out.r', err(c.fetch, c, 1, 5))\n"
           "  local co = coroutine.wrap(function() return c:fetch(1, "
           "{wait = 10}) end)\n"
           "  rift.publish('out.r', err(co))\n"
           "end)\n";

RIFT_TEST(waiting_fetch_is_woken_by_a_publish) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK(load(&fx, "p", wait_src));
    CHECK_OK(publish(&fx, "go.wait", "60000"));
    CHECK(await_requests(&fx, "p", 1));
    /* Suspended, it holds nothing up: the plugin answers meanwhile. */
    CHECK_OK(publish(&fx, "go.ping", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "pong");
    /* A record the filter takes (the stream's own subjects) wakes it. */
    rift_tstamp t0 = rift_now_ns();
    CHECK_OK(append(&fx, "events.a", "hello"));
    CHECK_EQ_STR(lsf_next_out(&fx), "1 1:hello");
    fprintf(stderr, "append -> woken fetch -> published: %.3f ms\n",
            (double)(rift_now_ns() - t0) / 1e6);
    CHECK(await_requests(&fx, "p", 0));
    /* A record already there is returned at once, waiting or not. */
    CHECK_OK(append(&fx, "events.b", "there"));
    CHECK_OK(publish(&fx, "go.wait", "60000"));
    CHECK_EQ_STR(lsf_next_out(&fx), "1 2:there");
    CHECK_OK(publish(&fx, "go.bad", ""));
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "consumer:fetch: wait must be an integer in "
                 "0..=120000 (milliseconds)");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "consumer:fetch: wait must be an integer in "
                 "0..=120000 (milliseconds)");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "consumer:fetch: argument #2 (options) must "
                 "be a table, not number");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "consumer:fetch: a waiting fetch must be called from the "
                 "callback itself (not from a coroutine it created, a "
                 "metamethod or a C function)");
    lsf_close(&fx);
}

/* A filter that does not take the record: woken, it parks again and
 * answers empty at its deadline. */
RIFT_TEST(waiting_fetch_times_out_empty) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK(load(&fx, "p",
               "local c = rift.consumer('events', 'w', {start = 'new', "
               "filter = 'events.mine'})\n"
               "rift.subscribe('go.wait', function(m)\n"
               "  local r = c:fetch(1, {wait = tonumber(m.payload)})\n"
               "  rift.publish('out.r', tostring(#r))\n"
               "end)\n"));
    CHECK_OK(publish(&fx, "go.wait", "50"));
    CHECK_EQ_STR(lsf_next_out(&fx), "0");
    CHECK_OK(publish(&fx, "go.wait", "3000"));
    CHECK(await_requests(&fx, "p", 1));
    /* Callbacks so far: the first wait's start and its deadline, and this
     * one's start (counted once it has returned). */
    lt_status before = lt_await(fx.h, "p", 0, 3, -1);
    CHECK_EQ_INT(before.callbacks, 3);
    CHECK_OK(append(&fx, "events.other", "not for it"));
    CHECK_EQ_STR(lsf_next_out(&fx), "0");
    /* The count moves once the callback that published has returned. */
    lt_status after = lt_await(fx.h, "p", 0, before.callbacks + 2, -1);
    /* Woken once by the append (parked again), once by the deadline. */
    CHECK(after.callbacks >= before.callbacks + 2);
    CHECK_EQ_INT(after.errors, 0);
    lsf_close(&fx);
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

#define MANY 100

/* MANY fetches waiting on MANY consumers: no callback runs and next to no
 * CPU is used while they wait; one append wakes every one of them. */
RIFT_TEST(many_waiting_fetches_cost_nothing_while_idle) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK(load(&fx, "p",
               "local n = 0\n"
               "rift.subscribe('go.wait', function(m)\n"
               "  n = n + 1\n"
               "  local c = rift.consumer('events', 'c' .. n, {start = "
               "'new'})\n"
               "  local r = c:fetch(1, {wait = 120000})\n"
               "  rift.publish('out.r', r[1].payload)\n"
               "end)\n"));
    for (int i = 0; i < MANY; i++) {
        CHECK_OK(publish(&fx, "go.wait", ""));
    }
    CHECK(await_requests(&fx, "p", MANY));
    lt_status before = lt_get(fx.h, "p");
    double cpu0 = cpu_seconds();
    /* The idle window: nothing is published for half a second. */
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(fx.out, 500000000, &m, NULL), RIFT_ERR_AGAIN);
    double idle_cpu = cpu_seconds() - cpu0;
    lt_status idle = lt_get(fx.h, "p");
    CHECK_EQ_INT(idle.callbacks, before.callbacks);
    CHECK_MSG(idle_cpu < 0.1, "%.3f s of CPU while %d fetches waited", idle_cpu,
              MANY);
    fprintf(stderr, "%d idle waiting fetches: %.4f s CPU in 0.5 s\n", MANY,
            idle_cpu);
    double cpu1 = cpu_seconds();
    rift_tstamp t0 = rift_now_ns();
    CHECK_OK(append(&fx, "events.a", "all"));
    for (int i = 0; i < MANY; i++) {
        CHECK_EQ_STR(lsf_next_out(&fx), "all");
    }
    fprintf(stderr, "one append woke %d fetches in %.3f ms, %.4f s CPU\n", MANY,
            (double)(rift_now_ns() - t0) / 1e6, cpu_seconds() - cpu1);
    CHECK(await_requests(&fx, "p", 0));
    lsf_close(&fx);
}

/* A reload while a fetch waits frees it with the old state: a later append
 * touches nothing freed, and the new code runs. An unload does the same. */
RIFT_TEST(reload_and_unload_while_a_fetch_waits) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    CHECK(load(&fx, "p", wait_src));
    CHECK_OK(publish(&fx, "go.wait", "60000"));
    CHECK(await_requests(&fx, "p", 1));
    CHECK(load(&fx, "p",
               "rift.subscribe('go.ping', function() rift.publish('out.r', "
               "'new code') end)\n"));
    CHECK(await_requests(&fx, "p", 0));
    CHECK_OK(append(&fx, "events.a", "after reload"));
    CHECK_OK(publish(&fx, "go.ping", ""));
    CHECK_EQ_STR(lsf_next_out(&fx), "new code");
    CHECK(load(&fx, "p", wait_src));
    /* The record appended meanwhile is there at once; the next one is
     * waited for. */
    CHECK_OK(publish(&fx, "go.wait", "60000"));
    CHECK_EQ_STR(lsf_next_out(&fx), "1 1:after reload");
    CHECK_OK(publish(&fx, "go.wait", "60000"));
    CHECK(await_requests(&fx, "p", 1));
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, NULL, &err));
    CHECK(!lt_get(fx.h, "p").found);
    CHECK_OK(append(&fx, "events.a", "after unload"));
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(fx.out, 0, &m, NULL), RIFT_ERR_AGAIN);
    lsf_close(&fx);
}

/* docs/riftd.md's bridge from a stream to live subscribers, as printed:
 * every batch in a fresh callback, each waiting for the next append. */
RIFT_TEST(the_documented_live_feed_pump) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    rift_sub *live;
    CHECK_OK(rift_broker_subscribe(fx.b, "events.>", 8, NULL, &live, NULL));
    CHECK(load(&fx, "p",
               "local feed = rift.consumer('events', 'live-feed', "
               "{ start = 'new' })\n"
               "local function pump()\n"
               "  for _, r in ipairs(feed:fetch(200, { wait = 60000 })) do\n"
               "    rift.publish(r.subject, r.payload)\n"
               "    feed:ack(r.sequence)\n"
               "  end\n"
               "  rift.after(0, pump)\n"
               "end\n"
               "rift.after(0, pump)\n"));
    for (int round = 0; round < 3; round++) {
        CHECK(await_requests(&fx, "p", 1));
        char payload[8];
        snprintf(payload, sizeof(payload), "r%d", round);
        CHECK_OK(append(&fx, "events.feed", payload));
        rift_msg *m;
        CHECK_OK(rift_sub_recv(live, 10000000000, &m, NULL));
        size_t len;
        const uint8_t *p = rift_msg_payload(m, &len);
        CHECK(len == strlen(payload) && memcmp(p, payload, len) == 0);
        rift_msg_unref(m);
    }
    CHECK_EQ_INT(lt_get(fx.h, "p").errors, 0);
    rift_sub_close(live);
    lsf_close(&fx);
}

/* The resumed callback runs under the plugin's budgets like any other:
 * a loop after the wake-up is stopped and counted as a failure. */
RIFT_TEST(a_resumed_fetch_is_budgeted) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    lt_plugin(fx.root, "p",
              "local c = rift.consumer('events', 'w', {start = 'new'})\n"
              "rift.subscribe('go.wait', function()\n"
              "  local r = c:fetch(1, {wait = 60000})\n"
              "  while #r > 0 do end\n"
              "end)\n");
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    spec.deadline_ms = 5000;
    spec.instructions = 100000;
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err));
    CHECK_OK(publish(&fx, "go.wait", ""));
    CHECK(await_requests(&fx, "p", 1));
    CHECK_OK(append(&fx, "events.a", "x"));
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_MSG(strstr(s.err, "script instruction budget exceeded") != NULL, "%s",
              s.err);
    CHECK_EQ_INT(s.requests, 0);
    lsf_close(&fx);
}
