/*
 * test_lua_host.c — Lua plugins on a live broker (tests layer): publish
 * with its report and budget, subscribe/unsubscribe, queue groups,
 * msg:respond, rift.request (suspending only the calling coroutine,
 * timeouts, no responders), the original's compatibility mode (on_message,
 * rift.on("message"), messaging.subscriptions, the pairing rule), hot
 * reload keeping queued messages, slow consumers, disabling with its
 * rift.events.plugin event, restricted grants, status.
 */
// labels: threads
#include "lua_test_util.h"

#include "rift/broker.h"

#include <jansson.h>

typedef struct fixture {
    char *root;
    rift_broker *b;
    rift_plugin_host *h;
    rift_sub *out; /* the test's own subscription to "out.>" */
} fixture;

static bool fx_open_cap(fixture *fx, unsigned max_failures, size_t capacity) {
    memset(fx, 0, sizeof(*fx));
    fx->root = rift_test_tmpdir();
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    if (capacity != 0) {
        bs.subscription_capacity = capacity;
    }
    rift_error err;
    if (fx->root == NULL || rift_broker_new(&fx->b, &bs, &err) != 0) {
        return false;
    }
    rift_plugin_host_settings s;
    rift_plugin_host_settings_default(&s);
    s.workers = 2;
    s.max_failures = max_failures;
    return rift_plugin_host_new(&fx->h, fx->b, &s, &err) == 0 &&
           rift_broker_subscribe(fx->b, "out.>", 5, NULL, &fx->out, &err) == 0;
}

static bool fx_open(fixture *fx, unsigned max_failures) {
    return fx_open_cap(fx, max_failures, 0);
}

static void fx_close(fixture *fx) {
    rift_plugin_host_del(fx->h);
    rift_sub_close(fx->out);
    rift_broker_del(fx->b);
    rift_test_rmdir(fx->root);
}

/* Next payload on |sub| as a string (empty on timeout; "TIMEOUT" then). */
static const char *next_on(rift_sub *sub, int timeout_ms) {
    static char buf[8192];
    rift_msg *m;
    if (rift_sub_recv(sub, (int64_t)timeout_ms * 1000000, &m, NULL) != 0) {
        return "TIMEOUT";
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    len = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    rift_msg_unref(m);
    return buf;
}

static const char *next_out(fixture *fx) {
    return next_on(fx->out, 5000);
}

static int publish(fixture *fx, const char *subject, const char *payload) {
    return rift_broker_publish(fx->b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               NULL);
}

static int load(fixture *fx, const char *name, const char *init,
                rift_error *err) {
    lt_plugin(fx->root, name, init);
    rift_plugin_spec s = lt_spec(fx->root, name);
    /* Generous: sanitizer builds run callbacks many times slower. */
    s.deadline_ms = 5000;
    memset(err, 0, sizeof(*err));
    return rift_plugin_host_apply(fx->h, &s, 1, NULL, err);
}

#define CHECK_LOAD(fx, name, init)                                             \
 do {                                                                          \
  rift_error e_;                                                               \
  int rc_ = load((fx), (name), (init), &e_);                                   \
  CHECK_MSG(rc_ == 0, "apply: %d %s", rc_, e_.text);                           \
 } while (0)

#define CHECK_CONTAINS(hay, needle)                                            \
 CHECK_MSG(strstr((hay), (needle)) != NULL, "\"%s\" lacks \"%s\"", (hay),      \
           (needle))

/* ---- publish, subscribe, respond ---- */

RIFT_TEST(echo_responder_and_message_fields) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('demo.echo', function(msg) "
               "msg:respond(msg.payload) end)\n"
               "rift.subscribe('demo.info', function(msg)\n"
               "  local r = rift.publish('out.info', msg.subject .. '|' .. "
               "msg.payload .. '|' .. tostring(msg.reply))\n"
               "  rift.publish('out.info', r.delivered .. ',' .. "
               "r.slow_consumers)\n"
               "  assert(msg:respond('x') == nil)\n"
               "end)\n");
    rift_msg *reply = NULL;
    rift_error err;
    const uint8_t bin[] = {'h', 0, 'i', 0xff};
    CHECK_OK(rift_broker_request(fx.b, "demo.echo", 9, bin, sizeof(bin),
                                 2000000000, &reply, &err));
    size_t len;
    const uint8_t *p = rift_msg_payload(reply, &len);
    CHECK_EQ_MEM(p, len, bin, sizeof(bin));
    rift_msg_unref(reply);
    CHECK_OK(publish(&fx, "demo.info", "x"));
    CHECK_EQ_STR(next_out(&fx), "demo.info|x|nil");
    CHECK_EQ_STR(next_out(&fx), "1,0");
    lt_status s = lt_await(fx.h, "p", 0, 2, -1);
    CHECK_EQ_INT(s.subscriptions, 2);
    CHECK_EQ_U64(s.messages, 2);
    CHECK_EQ_U64(s.published, 3);
    CHECK_EQ_U64(s.errors, 0);
    fx_close(&fx);
}

RIFT_TEST(publish_errors_and_budget) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    /* Results are published by a later callback: the one under test has
     * spent its budget. */
    CHECK_LOAD(
        &fx, "p",
        "local results = {}\n"
        "local function try(f, ...) local ok, e = pcall(f, ...)\n"
        "  results[#results + 1] = ok and 'ok' or e:gsub('^.-:%d+: ', '')\n"
        "end\n"
        "local function report()\n"
        "  rift.after(0, function()\n"
        "    for _, r in ipairs(results) do rift.publish('out.r', r) end\n"
        "    results = {}\n"
        "  end)\n"
        "end\n"
        "rift.subscribe('go.count', function()\n"
        "  for i = 1, 256 do rift.publish('out.sink', 'm') end\n"
        "  try(rift.publish, 'out.sink', 'm') report()\n"
        "end)\n"
        "rift.subscribe('go.bytes', function()\n"
        "  rift.publish('out.sink', string.rep('x', 1024 * 1024 - 1))\n"
        "  try(rift.publish, 'out.sink', 'xx') report()\n"
        "end)\n"
        "rift.subscribe('go.failing', function()\n"
        "  for i = 1, 256 do pcall(rift.publish, 'bad..subject', 'm') end\n"
        "  try(rift.publish, 'out.sink', 'm') report()\n"
        "end)\n"
        "rift.subscribe('go.invalid', function()\n"
        "  try(rift.publish, 'a..b', 'm')\n"
        "  try(rift.publish, 'a.*', 'm')\n"
        "  try(rift.publish, 'a', 'm', 'r.>')\n"
        "  try(rift.publish, '\\255', 'm')\n"
        "  try(rift.publish, 'a', string.rep('x', 2 * 1024 * 1024))\n"
        "  report()\n"
        "end)\n");
    rift_sub *sink;
    CHECK_OK(rift_broker_subscribe(fx.b, "out.r", 5, NULL, &sink, NULL));
    CHECK_OK(publish(&fx, "go.count", ""));
    CHECK_EQ_STR(next_on(sink, 5000),
                 "script messaging budget exceeded (256 messages / 1 MiB)");
    CHECK_OK(publish(&fx, "go.bytes", ""));
    CHECK_EQ_STR(next_on(sink, 5000),
                 "script messaging budget exceeded (256 messages / 1 MiB)");
    CHECK_OK(publish(&fx, "go.failing", ""));
    CHECK_EQ_STR(next_on(sink, 5000),
                 "script messaging budget exceeded (256 messages / 1 MiB)");
    CHECK_OK(publish(&fx, "go.invalid", ""));
    CHECK_EQ_STR(next_on(sink, 5000), "invalid subject: a..b");
    CHECK_EQ_STR(next_on(sink, 5000), "invalid subject: a.*");
    CHECK_EQ_STR(next_on(sink, 5000), "invalid subject: r.>");
    CHECK_EQ_STR(next_on(sink, 5000),
                 "rift.publish: subject must be a UTF-8 string");
    CHECK_EQ_STR(next_on(sink, 5000),
                 "script messaging budget exceeded (256 messages / 1 MiB)");
    rift_sub_close(sink);
    fx_close(&fx);
}

RIFT_TEST(publish_after_the_deadline) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    lt_plugin(fx.root, "p",
              "rift.subscribe('go', function()\n"
              "  local t = os.clock()\n"
              "  local ok, e = pcall(function() while true do end end)\n"
              "  rift.publish('out.r', 'late')\n"
              "end)\n");
    rift_plugin_spec s = lt_spec(fx.root, "p");
    s.deadline_ms = 20;
    s.instructions = 1000000000000ull;
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &s, 1, NULL, &err));
    CHECK_OK(publish(&fx, "go", ""));
    lt_status st = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_EQ_STR(st.err, "subscription go: script deadline exceeded");
    CHECK_EQ_STR(next_on(fx.out, 100), "TIMEOUT");
    fx_close(&fx);
}

RIFT_TEST(queue_groups_and_unsubscribe) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(
        &fx, "p",
        "local seen = {0, 0}\n"
        "local a = rift.subscribe('work', {queue = 'w'}, function() "
        "seen[1] = seen[1] + 1 end)\n"
        "local b = rift.subscribe('work', {queue = 'w'}, function() "
        "seen[2] = seen[2] + 1 end)\n"
        "rift.subscribe('report', function()\n"
        "  rift.publish('out.r', seen[1] .. ',' .. seen[2])\n"
        "  assert(a:unsubscribe() == true and a:unsubscribe() == false)\n"
        "end)\n"
        "local self\n"
        "self = rift.subscribe('once', function()\n"
        "  self:unsubscribe()\n"
        "  rift.publish('out.r', 'once')\n"
        "end)\n"
        "local ok, e = pcall(rift.subscribe, 'x', {queue = 1}, print)\n"
        "assert(not ok and e:find('queue must be a string'))\n"
        "ok, e = pcall(rift.subscribe, 'a..b', print)\n"
        "assert(not ok and e:find('invalid subject: a..b', 1, true))\n"
        "ok, e = pcall(rift.subscribe, 'x', {queue = 'a b'}, print)\n"
        "assert(not ok and e:find('invalid queue group'))\n");
    for (int i = 0; i < 20; i++) {
        CHECK_OK(publish(&fx, "work", ""));
    }
    CHECK_OK(publish(&fx, "report", ""));
    CHECK_EQ_STR(next_out(&fx), "10,10");
    CHECK_OK(publish(&fx, "once", ""));
    CHECK_OK(publish(&fx, "once", ""));
    CHECK_EQ_STR(next_out(&fx), "once");
    CHECK_EQ_STR(next_on(fx.out, 200), "TIMEOUT");
    CHECK_EQ_INT(lt_get(fx.h, "p").subscriptions, 2);
    fx_close(&fx);
}

/* ---- requests ---- */

RIFT_TEST(request_suspends_only_the_calling_coroutine) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    /* The plugin answers its own request: it can only do so if the
     * request does not block it. */
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('svc.double', function(msg)\n"
               "  msg:respond(msg.payload .. msg.payload)\n"
               "end)\n"
               "rift.subscribe('go', function(msg)\n"
               "  local r, e = rift.request('svc.double', msg.payload, 2000)\n"
               "  assert(r and r.subject:find('^_INBOX%.') and r.reply == "
               "nil)\n"
               "  local r2 = rift.request('svc.double', r.payload, 2000)\n"
               "  rift.publish('out.r', r2.payload)\n"
               "end)\n"
               "rift.subscribe('go.none', function()\n"
               "  local r, e = rift.request('nobody.home', 'x', 100)\n"
               "  rift.publish('out.r', tostring(r) .. ',' .. e)\n"
               "end)\n"
               "rift.subscribe('go.idle', function()\n"
               "  local r, e = rift.request('idle', 'x', 50)\n"
               "  rift.publish('out.r', tostring(r) .. ',' .. e)\n"
               "end)\n"
               "rift.subscribe('go.nested', function()\n"
               "  local co = coroutine.wrap(function() return "
               "rift.request('svc.double', 'x') end)\n"
               "  local ok, e = pcall(co)\n"
               "  rift.publish('out.r', e:gsub('^.-:%d+: ', ''))\n"
               "end)\n");
    CHECK_OK(publish(&fx, "go", "ab"));
    CHECK_EQ_STR(next_out(&fx), "abababab");
    CHECK_OK(publish(&fx, "go.none", ""));
    CHECK_EQ_STR(next_out(&fx), "nil,no responders available");
    rift_sub *idle;
    CHECK_OK(rift_broker_subscribe(fx.b, "idle", 4, NULL, &idle, NULL));
    CHECK_OK(publish(&fx, "go.idle", ""));
    CHECK_EQ_STR(next_out(&fx), "nil,request timed out");
    rift_sub_close(idle);
    CHECK_OK(publish(&fx, "go.nested", ""));
    CHECK_CONTAINS(next_out(&fx), "rift.request: call it from the callback");
    lt_status s = lt_get(fx.h, "p");
    CHECK_EQ_INT(s.requests, 0);
    CHECK_EQ_U64(s.errors, 0);
    fx_close(&fx);
}

static bool one_request(void *h) {
    return lt_get(h, "p").requests == 1;
}

RIFT_TEST(plugin_keeps_handling_messages_while_a_request_waits) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('go', function()\n"
               "  local r, e = rift.request('slow.svc', 'q', 5000)\n"
               "  rift.publish('out.r', 'reply:' .. (r and r.payload or e))\n"
               "end)\n"
               "rift.subscribe('ping', function() rift.publish('out.r', "
               "'pong') end)\n");
    rift_sub *svc;
    CHECK_OK(rift_broker_subscribe(fx.b, "slow.svc", 8, NULL, &svc, NULL));
    CHECK_OK(publish(&fx, "go", ""));
    rift_msg *req;
    CHECK_OK(rift_sub_recv(svc, 5000000000, &req, NULL));
    /* The request is counted once its coroutine has suspended. */
    CHECK(rift_test_wait_until(one_request, fx.h, 5000));
    CHECK_OK(publish(&fx, "ping", ""));
    CHECK_EQ_STR(next_out(&fx), "pong");
    size_t rlen;
    const char *reply = rift_msg_reply(req, &rlen);
    CHECK(reply != NULL);
    CHECK_OK(rift_broker_publish(fx.b, reply, rlen, NULL, 0,
                                 (const uint8_t *)"done", 4, NULL, NULL));
    rift_msg_unref(req);
    CHECK_EQ_STR(next_out(&fx), "reply:done");
    rift_sub_close(svc);
    fx_close(&fx);
}

RIFT_TEST(stop_with_pending_requests_and_timers) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.every(1000, function() end)\n"
               "rift.subscribe('go', function() rift.request('hole', 'x', "
               "60000) end)\n");
    rift_sub *hole;
    CHECK_OK(rift_broker_subscribe(fx.b, "hole", 4, NULL, &hole, NULL));
    size_t before = rift_broker_subscription_count(fx.b);
    CHECK_OK(publish(&fx, "go", ""));
    rift_msg *m;
    CHECK_OK(rift_sub_recv(hole, 5000000000, &m, NULL));
    rift_msg_unref(m);
    CHECK(rift_test_wait_until(one_request, fx.h, 5000));
    CHECK_EQ_INT(rift_broker_subscription_count(fx.b), before + 1);
    rift_sub_close(hole);
    fx_close(&fx);
}

/* ---- compatibility mode ---- */

static const char compat_src[] =
    "local publish = rift.publish\n"
    "rift.on('message', function(msg)\n"
    "  publish('out.c', 'on:' .. msg.subject .. ':' .. msg.payload .. ':' "
    ".. tostring(msg.reply))\n"
    "  if msg.payload == 'fail' then error('handler failed', 0) end\n"
    "end)\n"
    "rift.on('message', function(msg) publish('out.c', 'second') end)\n"
    "return {\n"
    "  messaging = { subscriptions = { { subject = 'cin.>' } } },\n"
    "  on_message = function(msg) publish('out.c', 'root:' .. "
    "msg.payload) end,\n"
    "}\n";

RIFT_TEST(compat_on_message_and_handlers_in_order) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_subscription subs[] = {{.subject = "cin.>"}};
    rift_plugin_compat c = {.name = "rift.lua",
                            .source = compat_src,
                            .source_len = sizeof(compat_src) - 1,
                            .subs = subs,
                            .n_subs = 1};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err));
    CHECK_OK(publish(&fx, "cin.a", "x"));
    CHECK_EQ_STR(next_out(&fx), "root:x");
    CHECK_EQ_STR(next_out(&fx), "on:cin.a:x:nil");
    CHECK_EQ_STR(next_out(&fx), "second");
    CHECK_OK(rift_broker_publish(fx.b, "cin.b", 5, "r.1", 3,
                                 (const uint8_t *)"fail", 4, NULL, NULL));
    CHECK_EQ_STR(next_out(&fx), "root:fail");
    CHECK_EQ_STR(next_out(&fx), "on:cin.b:fail:r.1");
    lt_status s = lt_await(fx.h, "rift.lua", 1, 2, -1);
    CHECK_EQ_STR(s.err, "on_message: handler failed");
    /* The chain stopped at the error: no "second". */
    CHECK_EQ_STR(next_on(fx.out, 100), "TIMEOUT");
    fx_close(&fx);
}

RIFT_TEST(compat_plugins_with_message_handlers) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    /* Handlers only in a folder plugin (rift.plugin("p") in the
     * configuration), fed by the configuration's subscriptions. */
    lt_plugin(fx.root, "p",
              "rift.on('message', function(msg) rift.publish('out.p', "
              "msg.payload) end)\n");
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    rift_plugin_subscription subs[] = {{.subject = "cin.x", .queue = "g"}};
    static const char src[] = "rift.plugin('p')\n";
    rift_plugin_compat c = {.name = "rift.lua",
                            .source = src,
                            .source_len = sizeof(src) - 1,
                            .subs = subs,
                            .n_subs = 1};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &spec, 1, &c, &err));
    CHECK(!lt_get(fx.h, "rift.lua").found);
    CHECK_OK(publish(&fx, "cin.x", "hello"));
    CHECK_EQ_STR(next_out(&fx), "hello");
    fx_close(&fx);
}

RIFT_TEST(compat_must_be_configured_together) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    static const char src[] = "return { on_message = function() end }\n";
    rift_plugin_compat c = {
        .name = "rift.lua", .source = src, .source_len = sizeof(src) - 1};
    rift_error err;
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "on_message and messaging.subscriptions must be "
                           "configured together");
    rift_plugin_subscription subs[] = {{.subject = "cin.>"}};
    static const char none[] = "return {}\n";
    rift_plugin_compat c2 = {.name = "rift.lua",
                             .source = none,
                             .source_len = sizeof(none) - 1,
                             .subs = subs,
                             .n_subs = 1};
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, NULL, 0, &c2, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "on_message and messaging.subscriptions must be "
                           "configured together");
    /* Script style: rift.config.on_message, and a publish at evaluation. */
    static const char script[] =
        "rift.config.on_message = function(m) rift.publish('out.s', "
        "m.payload) end\n"
        "local ok, e = pcall(rift.publish, 'out.s', 'early')\n"
        "assert(not ok and e:find('rift.publish is only available inside "
        "runtime callbacks', 1, true))\n"
        "assert(os.getenv('PATH') ~= nil and type(os.date()) == 'string')\n";
    rift_plugin_compat c3 = {.name = "rift.lua",
                             .source = script,
                             .source_len = sizeof(script) - 1,
                             .subs = subs,
                             .n_subs = 1};
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c3, &err));
    CHECK_OK(publish(&fx, "cin.z", "late"));
    CHECK_EQ_STR(next_out(&fx), "late");
    fx_close(&fx);
}

RIFT_TEST(compat_reload_keeps_subscriptions) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_subscription subs[] = {{.subject = "cin.>"},
                                       {.subject = "other"}};
    static const char v1[] =
        "return { on_message = function(m) rift.publish('out.v', 'v1') end "
        "}\n";
    static const char v2[] =
        "return { on_message = function(m) rift.publish('out.v', 'v2') end "
        "}\n";
    rift_plugin_compat c = {.name = "rift.lua",
                            .source = v1,
                            .source_len = sizeof(v1) - 1,
                            .subs = subs,
                            .n_subs = 2};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err));
    size_t count = rift_broker_subscription_count(fx.b);
    CHECK_OK(publish(&fx, "cin.a", ""));
    CHECK_EQ_STR(next_out(&fx), "v1");
    c.source = v2;
    c.source_len = sizeof(v2) - 1;
    c.n_subs = 1;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err));
    CHECK_EQ_INT(rift_broker_subscription_count(fx.b), count - 1);
    CHECK_OK(publish(&fx, "cin.a", ""));
    CHECK_EQ_STR(next_out(&fx), "v2");
    fx_close(&fx);
}

/* ---- reload, slow consumers, disabling ---- */

RIFT_TEST(reload_keeps_queued_messages) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    static const char v1[] =
        "rift.subscribe('q.a', function(m) rift.publish('out.q', 'v1:' .. "
        "m.payload) end)\n"
        "rift.subscribe('q.b', function(m) end)\n"
        "rift.subscribe('block', function()\n"
        "  rift.publish('out.q', 'blocking')\n"
        "  local t = os.clock() while os.clock() - t < 0.3 do end\n"
        "end)\n";
    static const char v2[] =
        "rift.subscribe('q.a', function(m) rift.publish('out.q', 'v2:' .. "
        "m.payload) end)\n"
        "rift.subscribe('q.c', function(m) end)\n";
    lt_plugin(fx.root, "p", v1);
    rift_plugin_spec s = lt_spec(fx.root, "p");
    s.instructions = 1000000000000ull;
    s.deadline_ms = 5000;
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &s, 1, NULL, &err));
    size_t count = rift_broker_subscription_count(fx.b);
    CHECK_OK(publish(&fx, "block", ""));
    CHECK_EQ_STR(next_out(&fx), "blocking");
    const char *nums[] = {"1", "2", "3", "4", "5"};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(publish(&fx, "q.a", nums[i]));
    }
    lt_plugin(fx.root, "p", v2);
    /* Waits for the blocking callback, then swaps the code while the five
     * messages are still queued in q.a. */
    CHECK_OK(rift_plugin_host_apply(fx.h, &s, 1, NULL, &err));
    for (int i = 0; i < 5; i++) {
        char want[8];
        snprintf(want, sizeof(want), "v2:%s", nums[i]);
        CHECK_EQ_STR(next_out(&fx), want);
    }
    CHECK_EQ_INT(rift_broker_subscription_count(fx.b), count - 1);
    CHECK_EQ_INT(lt_get(fx.h, "p").subscriptions, 2);
    fx_close(&fx);
}

RIFT_TEST(failed_reload_keeps_the_old_code) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('x', function(m) rift.publish('out.x', 'old') "
               "end)\n");
    rift_error err;
    CHECK_EQ_INT(load(&fx, "p",
                      "rift.subscribe('x', function() end)\n"
                      "error('new code is broken', 0)\n",
                      &err),
                 RIFT_ERR_LUA);
    CHECK_EQ_STR(err.text, "p: init: new code is broken");
    lt_status s = lt_get(fx.h, "p");
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    CHECK_EQ_STR(s.err, "init: new code is broken");
    CHECK_OK(publish(&fx, "x", ""));
    CHECK_EQ_STR(next_out(&fx), "old");
    CHECK_EQ_INT(s.subscriptions, 1);
    fx_close(&fx);
}

RIFT_TEST(slow_plugin_subscription_resubscribes) {
    fixture fx;
    CHECK(fx_open_cap(&fx, 0, 4));
    lt_plugin(fx.root, "p",
              "rift.subscribe('flood', function(m)\n"
              "  if m.payload == 'first' then\n"
              "    rift.publish('out.f', 'busy')\n"
              "    local t = os.clock() while os.clock() - t < 0.2 do end\n"
              "  end\n"
              "  if m.payload == 'last' then rift.publish('out.f', 'last') "
              "end\n"
              "end)\n");
    rift_plugin_spec s = lt_spec(fx.root, "p");
    s.instructions = 1000000000000ull;
    s.deadline_ms = 5000;
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, &s, 1, NULL, &err));
    CHECK_OK(publish(&fx, "flood", "first"));
    CHECK_EQ_STR(next_out(&fx), "busy");
    for (int i = 0; i < 20; i++) {
        CHECK_OK(publish(&fx, "flood", "x"));
    }
    lt_status st = lt_await(fx.h, "p", 0, 1, -1);
    (void)st;
    /* After the overflow the subscription comes back: keep publishing
     * until a message gets through. */
    const char *got = "TIMEOUT";
    for (int i = 0; i < 50 && strcmp(got, "last") != 0; i++) {
        CHECK_OK(publish(&fx, "flood", "last"));
        got = next_on(fx.out, 100);
    }
    CHECK_EQ_STR(got, "last");
    CHECK(lt_get(fx.h, "p").dropped >= 1);
    fx_close(&fx);
}

RIFT_TEST(disable_publishes_an_event) {
    fixture fx;
    CHECK(fx_open(&fx, 2));
    rift_sub *ev;
    CHECK_OK(
        rift_broker_subscribe(fx.b, "rift.events.plugin", 18, NULL, &ev, NULL));
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('x', function() error('nope', 0) end)\n");
    CHECK_EQ_STR(next_on(ev, 5000), "{\"plugin\":\"p\",\"state\":\"running\"}");
    CHECK_OK(publish(&fx, "x", ""));
    CHECK_OK(publish(&fx, "x", ""));
    CHECK_EQ_STR(next_on(ev, 5000), "{\"error\":\"nope\",\"plugin\":\"p\","
                                    "\"state\":\"disabled\"}");
    lt_status s = lt_get(fx.h, "p");
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_DISABLED);
    CHECK_EQ_INT(s.subscriptions, 0);
    rift_error err;
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, NULL, 0, NULL, &err), 0);
    rift_sub_close(ev);
    fx_close(&fx);
}

/* Error texts travel to remote subscribers (rift.events.plugin, status):
 * they name the plugin's files relative to it, never by the server path. */
RIFT_TEST(plugin_errors_name_files_relative_to_the_plugin) {
    fixture fx;
    CHECK(fx_open(&fx, 2));
    rift_sub *ev;
    CHECK_OK(
        rift_broker_subscribe(fx.b, "rift.events.plugin", 18, NULL, &ev, NULL));
    lt_put(fx.root, "plugins/p/lua/m.lua",
           "return function() error('in module') end\n");
    CHECK_LOAD(&fx, "p",
               "local m = require('m')\n"
               "rift.subscribe('x', function() m() end)\n"
               "rift.subscribe('y', function() error('boom') end)\n");
    CHECK_EQ_STR(next_on(ev, 5000), "{\"plugin\":\"p\",\"state\":\"running\"}");
    CHECK_OK(publish(&fx, "x", ""));
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_EQ_STR(s.err, "subscription x: p/lua/m.lua:1: in module");
    CHECK_OK(publish(&fx, "y", ""));
    const char *got = next_on(ev, 5000);
    CHECK_EQ_STR(got, "{\"error\":\"p/init.lua:3: boom\",\"plugin\":\"p\","
                      "\"state\":\"disabled\"}");
    CHECK(strstr(got, fx.root) == NULL);
    s = lt_get(fx.h, "p");
    CHECK(strstr(s.err, fx.root) == NULL);
    rift_sub_close(ev);
    /* A missing folder or module: the text names neither path. */
    rift_error err;
    rift_plugin_spec missing = lt_spec(fx.root, "gone");
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, &missing, 1, NULL, &err),
                 RIFT_ERR_LUA);
    CHECK_CONTAINS(err.text, "gone: init: cannot read gone/init.lua: ");
    CHECK(strstr(err.text, fx.root) == NULL);
    CHECK_EQ_INT(load(&fx, "q", "require('absent')\n", &err), RIFT_ERR_LUA);
    CHECK_CONTAINS(err.text,
                   "module 'absent' not found in q/lua: no such file");
    CHECK(strstr(err.text, fx.root) == NULL);
    fx_close(&fx);
}

RIFT_TEST(restricted_plugin_grants) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    lt_plugin(fx.root, "p",
              "local function err(f, ...) local ok, e = pcall(f, ...) "
              "return ok and 'ok' or e:gsub('^.-:%d+: ', '') end\n"
              "assert(err(rift.subscribe, 'other', print) == "
              "'subscription not permitted')\n"
              "assert(err(rift.subscribe, 'rift.control.>', print) == "
              "'subscription not permitted')\n"
              "rift.subscribe('in.x', function(m)\n"
              "  rift.publish('out.g', err(rift.publish, 'no.x', 'm'))\n"
              "  rift.publish('out.g', err(rift.publish, 'rift.events.x', "
              "'m'))\n"
              "  rift.publish('out.g', err(rift.publish, 'out.g', 'm', "
              "'_INBOX.x'))\n"
              "  rift.publish('out.g', err(rift.request, 'no.x', 'm'))\n"
              "  rift.publish('out.g', 'done')\n"
              "end)\n");
    rift_plugin_spec s = lt_spec(fx.root, "p");
    const char *pub[] = {"out.>"};
    const char *sub[] = {"in.>"};
    s.restricted = true;
    s.publish = pub;
    s.n_publish = 1;
    s.subscribe = sub;
    s.n_subscribe = 1;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &s, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "in.x", ""));
    CHECK_EQ_STR(next_out(&fx), "publication not permitted");
    CHECK_EQ_STR(next_out(&fx), "publication not permitted");
    CHECK_EQ_STR(next_out(&fx), "reply must be an authorized _INBOX subject");
    CHECK_EQ_STR(next_out(&fx), "publication not permitted");
    CHECK_EQ_STR(next_out(&fx), "done");
    fx_close(&fx);
}

RIFT_TEST(status_json) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p", "rift.subscribe('a', function() end)\n");
    json_t *j = rift_plugin_host_status_json(fx.h);
    CHECK(j != NULL);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    CHECK(s != NULL);
    CHECK_CONTAINS(s, "\"name\":\"p\"");
    CHECK_CONTAINS(s, "\"state\":\"running\"");
    CHECK_CONTAINS(s, "\"subscriptions\":1");
    free(s);
    fx_close(&fx);
}

static bool ten_requests(void *h) {
    return lt_get(h, "p").requests == 10;
}

RIFT_TEST(many_requests_wait_at_once) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.subscribe('go', function(msg)\n"
               "  local r, e = rift.request('slow.svc', msg.payload, 5000)\n"
               "  rift.publish('out.r', r and r.payload or e)\n"
               "end)\n");
    rift_sub *svc;
    CHECK_OK(rift_broker_subscribe(fx.b, "slow.svc", 8, NULL, &svc, NULL));
    const char *ids[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    for (int i = 0; i < 10; i++) {
        CHECK_OK(publish(&fx, "go", ids[i]));
    }
    rift_msg *reqs[10];
    for (int i = 0; i < 10; i++) {
        CHECK_OK(rift_sub_recv(svc, 5000000000, &reqs[i], NULL));
    }
    CHECK(rift_test_wait_until(ten_requests, fx.h, 5000));
    /* Answer in reverse order: each continuation gets its own reply. */
    for (int i = 9; i >= 0; i--) {
        size_t rlen, plen;
        const char *reply = rift_msg_reply(reqs[i], &rlen);
        const uint8_t *pl = rift_msg_payload(reqs[i], &plen);
        char answer[16];
        snprintf(answer, sizeof(answer), "re%.*s", (int)plen, (const char *)pl);
        CHECK_OK(rift_broker_publish(fx.b, reply, rlen, NULL, 0,
                                     (const uint8_t *)answer, strlen(answer),
                                     NULL, NULL));
        char want[16];
        snprintf(want, sizeof(want), "re%s", ids[i]);
        CHECK_EQ_STR(next_out(&fx), want);
        rift_msg_unref(reqs[i]);
    }
    CHECK_EQ_INT(lt_get(fx.h, "p").requests, 0);
    rift_sub_close(svc);
    fx_close(&fx);
}

RIFT_TEST(reload_drops_old_timers_and_requests) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "rift.every(5, function() rift.publish('out.t', 'old') end)\n"
               "rift.subscribe('go', function() rift.request('hole', 'x', "
               "60000) rift.publish('out.t', 'resumed') end)\n");
    rift_sub *hole;
    CHECK_OK(rift_broker_subscribe(fx.b, "hole", 4, NULL, &hole, NULL));
    CHECK_EQ_STR(next_out(&fx), "old");
    CHECK_OK(publish(&fx, "go", ""));
    rift_msg *req;
    CHECK_OK(rift_sub_recv(hole, 5000000000, &req, NULL));
    CHECK(rift_test_wait_until(one_request, fx.h, 5000));
    size_t before = rift_broker_subscription_count(fx.b);
    CHECK_LOAD(&fx, "p",
               "rift.after(0, function() rift.publish('out.t', 'new') "
               "end)\n");
    /* The inbox and the old subscription are gone. */
    CHECK_EQ_INT(rift_broker_subscription_count(fx.b), before - 2);
    size_t rlen;
    const char *reply = rift_msg_reply(req, &rlen);
    rift_publish_report rep;
    CHECK_OK(rift_broker_publish(fx.b, reply, rlen, NULL, 0,
                                 (const uint8_t *)"late", 4, &rep, NULL));
    CHECK_EQ_INT(rep.delivered, 0);
    rift_msg_unref(req);
    /* Drain: "old" ticks may still be queued from before the reload, then
     * only "new" arrives. */
    const char *m;
    do {
        m = next_out(&fx);
    } while (strcmp(m, "old") == 0);
    CHECK_EQ_STR(m, "new");
    CHECK_EQ_STR(next_on(fx.out, 100), "TIMEOUT");
    lt_status s = lt_get(fx.h, "p");
    CHECK_EQ_INT(s.timers, 0);
    CHECK_EQ_INT(s.requests, 0);
    rift_sub_close(hole);
    fx_close(&fx);
}

RIFT_TEST(compat_slow_handler_drops_and_recovers) {
    fixture fx;
    CHECK(fx_open_cap(&fx, 0, 4));
    static const char src[] =
        "return { on_message = function(m)\n"
        "  if m.payload == 'first' then\n"
        "    rift.publish('out.c', 'busy')\n"
        "    local t = os.clock() while os.clock() - t < 0.2 do end\n"
        "  end\n"
        "  if m.payload == 'last' then rift.publish('out.c', 'last') end\n"
        "end }\n";
    rift_plugin_subscription subs[] = {{.subject = "cin"}};
    rift_plugin_compat c = {.name = "rift.lua",
                            .source = src,
                            .source_len = sizeof(src) - 1,
                            .subs = subs,
                            .n_subs = 1,
                            .instructions = 1000000000000ull,
                            .deadline_ms = 5000};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err));
    CHECK_OK(publish(&fx, "cin", "first"));
    CHECK_EQ_STR(next_out(&fx), "busy");
    for (int i = 0; i < 20; i++) {
        CHECK_OK(publish(&fx, "cin", "x"));
    }
    const char *got = "TIMEOUT";
    for (int i = 0; i < 50 && strcmp(got, "last") != 0; i++) {
        CHECK_OK(publish(&fx, "cin", "last"));
        got = next_on(fx.out, 100);
    }
    CHECK_EQ_STR(got, "last");
    CHECK(lt_get(fx.h, "rift.lua").dropped >= 1);
    fx_close(&fx);
}

RIFT_TEST(compat_handler_budgets) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    static const char src[] =
        "return { on_message = function(m) while true do end end }\n";
    rift_plugin_subscription subs[] = {{.subject = "cin"}};
    rift_plugin_compat c = {.name = "rift.lua",
                            .source = src,
                            .source_len = sizeof(src) - 1,
                            .subs = subs,
                            .n_subs = 1,
                            .instructions = 1000000000000ull,
                            .deadline_ms = 20};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, &c, &err));
    CHECK_OK(publish(&fx, "cin", ""));
    lt_status s = lt_await(fx.h, "rift.lua", 1, 1, -1);
    CHECK_EQ_STR(s.err, "on_message: script deadline exceeded");
    fx_close(&fx);
}

RIFT_TEST(busy_plugin_does_not_starve_others) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    /* Swap in a host with a single worker. */
    rift_plugin_host_del(fx.h);
    rift_plugin_host_settings hs;
    rift_plugin_host_settings_default(&hs);
    hs.workers = 1;
    rift_error err;
    CHECK_OK(rift_plugin_host_new(&fx.h, fx.b, &hs, &err));
    /* "busy" gets a long backlog of slow messages: it always has work. */
    lt_plugin(fx.root, "busy",
              "rift.subscribe('spin', function(m)\n"
              "  local x = 0 for i = 1, 20000 do x = x + i end\n"
              "  if m.payload == 'last' then rift.publish('out.o', 'done') "
              "end\n"
              "end)\n");
    lt_plugin(fx.root, "other",
              "rift.subscribe('go', function()\n"
              "  rift.after(20, function() rift.publish('out.o', 'tick') "
              "end)\n"
              "end)\n");
    rift_plugin_spec specs[] = {lt_spec(fx.root, "busy"),
                                lt_spec(fx.root, "other")};
    CHECK_OK(rift_plugin_host_apply(fx.h, specs, 2, NULL, &err));
    CHECK_OK(publish(&fx, "go", ""));
    for (int i = 0; i < 999; i++) {
        CHECK_OK(publish(&fx, "spin", "x"));
    }
    CHECK_OK(publish(&fx, "spin", "last"));
    /* The timer fires while "busy" still works through its backlog. */
    CHECK_EQ_STR(next_out(&fx), "tick");
    CHECK_EQ_STR(next_out(&fx), "done");
    fx_close(&fx);
}

RIFT_TEST(callback_coroutines_cannot_be_hijacked) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOAD(&fx, "p",
               "local waiting\n"
               "rift.subscribe('go', function()\n"
               "  waiting = coroutine.running()\n"
               "  local r, e = rift.request('hole', 'x', 300)\n"
               "  rift.publish('out.r', 'resumed:' .. tostring(r and "
               "r.payload or e))\n"
               "end)\n"
               "rift.subscribe('hijack', function()\n"
               "  local ok1, e1 = pcall(coroutine.resume, waiting, "
               "{payload = 'forged'})\n"
               "  local ok2, e2 = pcall(coroutine.close, waiting)\n"
               "  rift.publish('out.r', tostring(ok1) .. ',' .. tostring(ok2) "
               ".. ',' .. coroutine.status(waiting))\n"
               "end)\n");
    rift_sub *hole;
    CHECK_OK(rift_broker_subscribe(fx.b, "hole", 4, NULL, &hole, NULL));
    CHECK_OK(publish(&fx, "go", ""));
    rift_msg *m;
    CHECK_OK(rift_sub_recv(hole, 5000000000, &m, NULL));
    rift_msg_unref(m);
    CHECK(rift_test_wait_until(one_request, fx.h, 5000));
    CHECK_OK(publish(&fx, "hijack", ""));
    CHECK_EQ_STR(next_out(&fx), "false,false,suspended");
    CHECK_EQ_STR(next_out(&fx), "resumed:request timed out");
    rift_sub_close(hole);
    fx_close(&fx);
}
