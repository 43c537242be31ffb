/*
 * test_lua_sandbox.c — the Lua plugin sandbox and budgets (tests layer):
 * what the environment offers and hides, bytecode and require escapes,
 * the instruction, deadline and memory budgets (string.rep bombs, table
 * growth, infinite loops, deep recursion, coroutine abuse, pcall), the
 * state surviving a budget failure, disabling after repeated failures and
 * re-enabling by reload, rift.json. No broker: rift.enabled is false.
 */
// labels: threads
#include "lua_test_util.h"

typedef struct fixture {
    char *root;
    rift_plugin_host *h;
} fixture;

static bool fx_open(fixture *fx, unsigned max_failures) {
    fx->root = rift_test_tmpdir();
    rift_plugin_host_settings s;
    rift_plugin_host_settings_default(&s);
    s.workers = 2;
    s.max_failures = max_failures;
    rift_error err;
    return fx->root != NULL &&
           rift_plugin_host_new(&fx->h, NULL, &s, &err) == 0;
}

static void fx_close(fixture *fx) {
    rift_plugin_host_del(fx->h);
    rift_test_rmdir(fx->root);
}

/* Loads plugin "p" with |init|; returns apply's code, text in |err|. */
static int fx_load(fixture *fx, const char *init, rift_plugin_spec *tweak,
                   rift_error *err) {
    lt_plugin(fx->root, "p", init);
    rift_plugin_spec s = lt_spec(fx->root, "p");
    if (tweak != NULL) {
        s.memory_bytes = tweak->memory_bytes;
        s.instructions = tweak->instructions;
        s.deadline_ms = tweak->deadline_ms;
    }
    memset(err, 0, sizeof(*err));
    return rift_plugin_host_apply(fx->h, &s, 1, NULL, err);
}

#define CHECK_LOADS(fx, init, tweak)                                           \
 do {                                                                          \
  rift_error e_;                                                               \
  int rc_ = fx_load((fx), (init), (tweak), &e_);                               \
  CHECK_MSG(rc_ == 0, "apply: %d %s", rc_, e_.text);                           \
 } while (0)

#define CHECK_CONTAINS(hay, needle)                                            \
 CHECK_MSG(strstr((hay), (needle)) != NULL, "\"%s\" lacks \"%s\"", (hay),      \
           (needle))

RIFT_TEST(environment_is_restricted) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx,
                "assert(io == nil and debug == nil and package == nil)\n"
                "assert(dofile == nil and loadfile == nil and warn == nil)\n"
                "assert(string.dump == nil)\n"
                "assert(os.execute == nil and os.getenv == nil)\n"
                "assert(os.remove == nil and os.exit == nil)\n"
                "assert(type(os.time) == 'function')\n"
                "assert(type(os.clock) == 'function')\n"
                "assert(type(require) == 'function')\n"
                "assert(type(coroutine.create) == 'function')\n"
                "assert(rift.enabled == false and rift.name == 'p')\n"
                "assert(pcall(collectgarbage, 'stop') == false)\n"
                "assert(collectgarbage('count') > 0)\n"
                "print('hello from', rift.name)\n"
                "rift.log('info', 'log', 1, true)\n"
                "local ok, e = pcall(setmetatable, {}, {__gc = print})\n"
                "assert(not ok and e:find('__gc'))\n"
                "ok, e = pcall(rift.plugin, 'other')\n"
                "assert(not ok and e:find('declare plugins'))\n"
                "ok, e = pcall(rift.on, 'route', print)\n"
                "assert(not ok and e:find('unknown event'))\n",
                NULL);
    lt_status s = lt_get(fx.h, "p");
    CHECK(s.found);
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    fx_close(&fx);
}

RIFT_TEST(bytecode_is_refused) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx,
                "local bc = '\\27LuaT\\0\\25\\147\\r\\n\\26\\n\\4\\8\\8'\n"
                "local f, e = load(bc)\n"
                "assert(f == nil and e:find('binary chunk'), e)\n"
                "f, e = load(bc, 'x', 'b')\n"
                "assert(f == nil and e:find('binary chunk'), e)\n"
                "f, e = load(bc, 'x', 'bt', {})\n"
                "assert(f == nil and e:find('binary chunk'), e)\n"
                "local parts = {bc}\n"
                "f, e = load(function() return table.remove(parts) end)\n"
                "assert(f == nil and e:find('binary chunk'), e)\n"
                "assert(load('return 1 + 1')() == 2)\n"
                "local env = {x = 5}\n"
                "assert(load('return x', 'c', 't', env)() == 5)\n"
                "assert(load('return x', 'c', nil, env)() == 5)\n",
                NULL);
    fx_close(&fx);
}

RIFT_TEST(require_stays_in_the_plugin_folder) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    lt_put(fx.root, "plugins/p/lua/good.lua", "return {v = 42}\n");
    lt_put(fx.root, "plugins/p/lua/sub/mod.lua", "return 'sub'\n");
    lt_put(fx.root, "plugins/p/lua/pkg/init.lua", "return 'pkg'\n");
    lt_put(fx.root, "plugins/p/lua/loop_a.lua", "return require('loop_b')\n");
    lt_put(fx.root, "plugins/p/lua/loop_b.lua", "return require('loop_a')\n");
    lt_put(fx.root, "plugins/p/lua/bad.lua", "error('bad module')\n");
    lt_put(fx.root, "secret.lua", "return 'secret'\n");
    char target[4200], link[4200];
    snprintf(target, sizeof(target), "%s/secret.lua", fx.root);
    snprintf(link, sizeof(link), "%s/plugins/p/lua/link.lua", fx.root);
    CHECK_OK(symlink(target, link));
    CHECK_LOADS(&fx,
                "local g = require('good')\n"
                "assert(g.v == 42 and require('good') == g)\n"
                "assert(require('sub.mod') == 'sub')\n"
                "assert(require('pkg') == 'pkg')\n"
                "assert(require('rift') == rift)\n"
                "assert(require('rift.json') == rift.json)\n"
                "local function fails(name, text)\n"
                "  local ok, e = pcall(require, name)\n"
                "  assert(not ok and e:find(text, 1, true), name .. ': ' .. "
                "tostring(e))\n"
                "end\n"
                "fails('../secret', 'module names')\n"
                "fails('../../secret', 'module names')\n"
                "fails('/etc/passwd', 'module names')\n"
                "fails('a..b', 'module names')\n"
                "fails('', 'module names')\n"
                "fails('link', 'outside the plugin folder')\n"
                "fails('missing', 'not found')\n"
                "fails('loop_a', 'require loop')\n"
                "fails('bad', 'bad module')\n"
                "fails('bad', 'bad module')\n",
                NULL);
    fx_close(&fx);
}

RIFT_TEST(init_failures_are_reported) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_error err;
    CHECK_EQ_INT(fx_load(&fx, "error('broken')", NULL, &err), RIFT_ERR_LUA);
    CHECK_CONTAINS(err.text, "p: init: ");
    CHECK_CONTAINS(err.text, "broken");
    /* All or nothing: a plugin that does not load is not added. */
    CHECK(!lt_get(fx.h, "p").found);
    CHECK_EQ_INT(fx_load(&fx, "syntax error here", NULL, &err), RIFT_ERR_LUA);
    rift_plugin_spec missing = {.name = "nope", .path = "/nonexistent/x"};
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, &missing, 1, NULL, &err),
                 RIFT_ERR_LUA);
    CHECK_CONTAINS(err.text, "nope: init: cannot read nope/init.lua");
    fx_close(&fx);
}

RIFT_TEST(publish_needs_a_runtime_callback_and_a_broker) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx,
                "local ok, e = pcall(rift.publish, 'a', 'b')\n"
                "assert(not ok and e:find('rift.publish is only available "
                "inside runtime callbacks', 1, true), e)\n"
                "ok, e = pcall(rift.request, 'a', 'b', 10)\n"
                "assert(not ok and e:find('only available inside runtime', "
                "1, true), e)\n"
                "local publish = rift.publish\n"
                "rift.after(0, function() publish('a.b', 'x') end)\n",
                NULL);
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_CONTAINS(s.err, "after: ");
    CHECK_CONTAINS(s.err, ": messaging broker unavailable");
    fx_close(&fx);
}

RIFT_TEST(deadline_stops_infinite_loops) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.deadline_ms = 20, .instructions = 1000000000000ull};
    CHECK_LOADS(&fx,
                "rift.after(0, function() while true do end end)\n"
                "rift.after(1, function()\n"
                "  while true do pcall(function() while true do end end) end\n"
                "end)\n"
                "rift.after(2, function()\n"
                "  local ok = pcall(function() while true do end end)\n"
                "  error('pcall swallowed the deadline')\n"
                "end)\n",
                &t);
    lt_status s = lt_await(fx.h, "p", 3, 3, -1);
    CHECK_EQ_U64(s.errors, 3);
    CHECK_EQ_STR(s.err, "after: script deadline exceeded");
    fx_close(&fx);
}

RIFT_TEST(instruction_budget) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.deadline_ms = 60000, .instructions = 20000};
    CHECK_LOADS(&fx,
                "rift.after(0, function() for i = 1, 1e9 do end end)\n"
                "rift.after(300, function() for i = 1, 100 do end "
                "error('small loop ran', 0) end)\n",
                &t);
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_EQ_STR(s.err, "after: script instruction budget exceeded (20000 "
                        "instructions)");
    s = lt_await(fx.h, "p", 2, 2, -1);
    CHECK_EQ_STR(s.err, "after: small loop ran");
    fx_close(&fx);
}

RIFT_TEST(coroutines_share_the_budget) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.deadline_ms = 20, .instructions = 1000000000000ull};
    CHECK_LOADS(&fx,
                /* a coroutine made at load time, run in a callback */
                "local spin = coroutine.create(function() while true do end "
                "end)\n"
                "rift.after(0, function() coroutine.resume(spin) "
                "while true do end end)\n"
                "rift.after(1, function()\n"
                "  local gen = coroutine.wrap(function() while true do end "
                "end)\n"
                "  gen()\n"
                "end)\n"
                /* many coroutines, each short */
                "rift.after(2, function()\n"
                "  while true do\n"
                "    coroutine.resume(coroutine.create(function() for i = 1, "
                "10 do end end))\n"
                "  end\n"
                "end)\n"
                /* nesting: each level resumes the next */
                "rift.after(3, function()\n"
                "  local function nest(n)\n"
                "    return coroutine.wrap(function() return nest(n + 1)() "
                "end)\n"
                "  end\n"
                "  nest(1)()\n"
                "end)\n"
                /* a coroutine absorbs the stop, the callback returns */
                "rift.after(4, function() coroutine.resume("
                "coroutine.create(function() while true do end end)) end)\n"
                /* yielding the host's own coroutine is refused */
                "rift.after(5, function() coroutine.yield(1) end)\n",
                &t);
    lt_status s = lt_await(fx.h, "p", 6, 6, -1);
    CHECK_EQ_U64(s.errors, 6);
    CHECK_CONTAINS(s.err, "callbacks cannot yield");
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    fx_close(&fx);
}

RIFT_TEST(memory_cap_stops_bombs_and_the_state_survives) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.memory_bytes = 4 * 1024 * 1024,
                          .instructions = 1000000000000ull,
                          .deadline_ms = 5000};
    CHECK_LOADS(
        &fx,
        "keep = {}\n"
        "local results = {}\n"
        "local function try(name, f)\n"
        "  local ok, e = pcall(f)\n"
        "  keep = nil\n"
        "  collectgarbage()\n"
        "  results[#results + 1] = name .. '=' .. (ok and 'ok' or e)\n"
        "end\n"
        "rift.after(0, function()\n"
        "  try('rep', function() return string.rep('x', 1 << 30) end)\n"
        "  try('sep', function() return string.rep('abc', 1e6, '--') end)\n"
        "  try('table', function() local t = {} for i = 1, 1e9 do t[i] = i "
        "end end)\n"
        "  try('concat', function() local s = 'x' for i = 1, 40 do s = s .. "
        "s end end)\n"
        "  try('threads', function() local t = {} for i = 1, 1e9 do "
        "t[i] = coroutine.create(print) end end)\n"
        "  keep = {}\n"
        "  try('keep', function() for i = 1, 1e9 do keep[i] = {i} end end)\n"
        "  local t = {} for i = 1, 1000 do t[i] = i end\n"
        "  error(table.concat(results, ';') .. ';alive ' .. #t, 0)\n"
        "end)\n"
        /* an uncaught overrun, then the state still works */
        "rift.after(50, function() keep = {} for i = 1, 1e9 do keep[i] = {i} "
        "end end)\n"
        "rift.after(300, function() keep = nil collectgarbage() "
        "error('alive', 0) end)\n",
        &t);
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_EQ_STR(s.err, "after: rep=not enough memory;sep=not enough memory;"
                        "table=not enough memory;concat=not enough memory;"
                        "threads=not enough memory;keep=not enough memory;"
                        "alive 1000");
    s = lt_await(fx.h, "p", 2, 2, -1);
    CHECK_EQ_STR(s.err, "after: script memory budget exceeded (4096 KiB)");
    s = lt_await(fx.h, "p", 3, 3, -1);
    CHECK_EQ_STR(s.err, "after: alive");
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    CHECK(s.memory_bytes < 4 * 1024 * 1024);
    fx_close(&fx);
}

RIFT_TEST(memory_budget_text) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.memory_bytes = 2 * 1024 * 1024,
                          .instructions = 1000000000000ull,
                          .deadline_ms = 5000};
    CHECK_LOADS(&fx,
                "rift.after(0, function() local s = string.rep('x', 8e6) "
                "end)\n"
                "rift.after(200, function() error('next', 0) end)\n",
                &t);
    lt_status s = lt_await(fx.h, "p", 1, 1, -1);
    CHECK_EQ_STR(s.err, "after: script memory budget exceeded (2048 KiB)");
    s = lt_await(fx.h, "p", 2, 2, -1);
    CHECK_EQ_STR(s.err, "after: next");
    fx_close(&fx);
}

RIFT_TEST(deep_recursion) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    rift_plugin_spec t = {.instructions = 1000000000000ull,
                          .deadline_ms = 10000};
    CHECK_LOADS(&fx,
                "rift.after(0, function() local function f(n) return 1 + "
                "f(n + 1) end f(1) end)\n"
                "rift.after(1, function() local t = setmetatable({}, "
                "{__index = function(t, k) return t[k] end}) return t.x "
                "end)\n"
                "rift.after(2, function() local s = string.rep('(', 300) "
                ".. string.rep(')', 300) load('return ' .. s) end)\n"
                "rift.after(3, function() string.gsub(string.rep('a', 1000), "
                "string.rep('(', 40) .. 'a' .. string.rep(')', 40), 'b') "
                "end)\n"
                "rift.after(10, function() error('still alive', 0) end)\n",
                &t);
    lt_status s = lt_await(fx.h, "p", 3, 3, -1);
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    s = lt_await(fx.h, "p", 4, 5, -1);
    CHECK_EQ_STR(s.err, "after: still alive");
    fx_close(&fx);
}

RIFT_TEST(globals_persist_between_callbacks) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx,
                "count = 0\n"
                "local t\n"
                "t = rift.every(1, function()\n"
                "  count = count + 1\n"
                "  if count == 5 then t:cancel() error('count ' .. count, 0) "
                "end\n"
                "end)\n",
                NULL);
    lt_status s = lt_await(fx.h, "p", 1, 5, -1);
    CHECK_EQ_STR(s.err, "every: count 5");
    CHECK_EQ_U64(s.callbacks, 5);
    CHECK_EQ_INT(s.timers, 0);
    fx_close(&fx);
}

RIFT_TEST(timers_fire_in_order_and_cancel) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx,
                "local seen = {}\n"
                "local c = rift.after(5, function() seen[#seen+1] = 'c' "
                "end)\n"
                "rift.after(30, function() seen[#seen+1] = 'b' end)\n"
                "rift.after(1, function() seen[#seen+1] = 'a' end)\n"
                "assert(c:cancel() == true and c:cancel() == false)\n"
                "rift.after(60, function() error(table.concat(seen, ','), 0) "
                "end)\n"
                "local ok = pcall(rift.every, 0, print)\n"
                "assert(not ok)\n"
                "ok = pcall(rift.after, -1, print)\n"
                "assert(not ok)\n",
                NULL);
    lt_status s = lt_await(fx.h, "p", 1, 3, -1);
    CHECK_EQ_STR(s.err, "after: a,b");
    fx_close(&fx);
}

RIFT_TEST(failing_plugin_is_disabled_and_reload_reenables) {
    fixture fx;
    CHECK(fx_open(&fx, 3));
    CHECK_LOADS(&fx, "rift.every(1, function() error('boom') end)\n", NULL);
    lt_status s = lt_await(fx.h, "p", 3, 3, RIFT_PLUGIN_DISABLED);
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_DISABLED);
    CHECK_EQ_U64(s.errors, 3);
    CHECK_CONTAINS(s.err, "every: ");
    CHECK_CONTAINS(s.err, "boom");
    CHECK_EQ_INT(s.timers, 0);
    CHECK_LOADS(&fx,
                "local n = 0\n"
                "rift.every(1, function() n = n + 1 if n == 4 then "
                "error('ok ' .. n) end end)\n",
                NULL);
    s = lt_await(fx.h, "p", 4, 7, -1);
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    CHECK_CONTAINS(s.err, "ok 4");
    fx_close(&fx);
}

RIFT_TEST(successes_reset_the_failure_count) {
    fixture fx;
    CHECK(fx_open(&fx, 3));
    CHECK_LOADS(&fx,
                "local n = 0\n"
                "rift.every(1, function() n = n + 1 if n % 2 == 0 then "
                "error('even') end end)\n",
                NULL);
    lt_status s = lt_await(fx.h, "p", 6, 12, -1);
    CHECK_EQ_INT(s.state, RIFT_PLUGIN_RUNNING);
    fx_close(&fx);
}

RIFT_TEST(json_round_trip) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(
        &fx,
        "local j = rift.json\n"
        "local s = j.encode({b = {1, 2, 3}, a = 1, c = 'x\\n\"', d = true, "
        "e = 1.5, f = {}})\n"
        "assert(s == '{\"a\":1,\"b\":[1,2,3],\"c\":\"x\\\\n\\\\\"\",\"d\":"
        "true,\"e\":1.5,\"f\":{}}', s)\n"
        "local v = j.decode(s)\n"
        "assert(v.a == 1 and math.type(v.a) == 'integer' and v.b[3] == 3)\n"
        "assert(v.c == 'x\\n\"' and v.d == true and v.e == 1.5)\n"
        "assert(j.encode(2.0) == '2.0' and j.decode('2.0') == 2.0)\n"
        "assert(j.encode(j.null) == 'null' and j.decode('null') == j.null)\n"
        "assert(j.decode('[1,null,3]')[2] == j.null)\n"
        "assert(j.encode('\\1') == '\"\\\\u0001\"')\n"
        "local x, e = j.decode('{bad')\n"
        "assert(x == nil and e:find('rift.json.decode'), e)\n"
        "assert(not pcall(j.encode, print))\n"
        "assert(not pcall(j.encode, 0/0))\n"
        "assert(not pcall(j.encode, {1, 2, x = 3}))\n"
        "assert(not pcall(j.encode, '\\255'))\n"
        "local cyc = {} cyc.self = cyc\n"
        "local ok, err = pcall(j.encode, cyc)\n"
        "assert(not ok and err:find('nesting'), err)\n"
        "local big = {} for i = 1, 1000 do big[i] = {k = i} end\n"
        "assert(#j.decode(j.encode(big)) == 1000)\n",
        NULL);
    fx_close(&fx);
}

RIFT_TEST(apply_is_all_or_nothing) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    lt_plugin(fx.root, "a", "rift.every(1, function() error('a1', 0) end)\n");
    lt_plugin(fx.root, "b", "rift.every(1, function() end)\n");
    rift_plugin_spec specs[] = {lt_spec(fx.root, "a"), lt_spec(fx.root, "b")};
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, specs, 2, NULL, &err));
    lt_status s = lt_await(fx.h, "a", 1, 1, -1);
    CHECK_EQ_STR(s.err, "every: a1");
    /* New code for a, broken code for b, and a third plugin: nothing of it
     * is applied. */
    lt_plugin(fx.root, "a", "rift.every(1, function() error('a2', 0) end)\n");
    lt_plugin(fx.root, "b", "error('b is broken', 0)\n");
    lt_plugin(fx.root, "c", "\n");
    rift_plugin_spec three[] = {lt_spec(fx.root, "a"), lt_spec(fx.root, "b"),
                                lt_spec(fx.root, "c")};
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, three, 3, NULL, &err),
                 RIFT_ERR_LUA);
    CHECK_EQ_STR(err.text, "b: init: b is broken");
    CHECK(!lt_get(fx.h, "c").found);
    CHECK_CONTAINS(lt_get(fx.h, "b").err, "b is broken");
    uint64_t before = lt_get(fx.h, "a").errors;
    s = lt_await(fx.h, "a", before + 2, 0, -1);
    CHECK_EQ_STR(s.err, "every: a1");
    /* Fixed: everything switches at once. */
    lt_plugin(fx.root, "b", "\n");
    CHECK_OK(rift_plugin_host_apply(fx.h, three, 3, NULL, &err));
    before = lt_get(fx.h, "a").errors;
    s = lt_await(fx.h, "a", before + 1, 0, -1);
    CHECK_EQ_STR(s.err, "every: a2");
    CHECK(lt_get(fx.h, "c").found);
    fx_close(&fx);
}

RIFT_TEST(apply_removes_plugins) {
    fixture fx;
    CHECK(fx_open(&fx, 0));
    CHECK_LOADS(&fx, "rift.every(1, function() end)\n", NULL);
    CHECK(lt_get(fx.h, "p").found);
    rift_error err;
    CHECK_OK(rift_plugin_host_apply(fx.h, NULL, 0, NULL, &err));
    CHECK(!lt_get(fx.h, "p").found);
    rift_plugin_spec bad[2] = {{.name = "a"}, {.name = "a"}};
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, bad, 2, NULL, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_plugin_spec dot = {.name = "a.b"};
    CHECK_EQ_INT(rift_plugin_host_apply(fx.h, &dot, 1, NULL, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    fx_close(&fx);
}
