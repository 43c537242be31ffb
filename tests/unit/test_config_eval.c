/*
 * test_config_eval.c — unit tests of configuration evaluation (daemon
 * layer): the restricted environment, budgets and deadline, script-style
 * rift.config, riftd's own keys (plugins, data_dir, log), the --check
 * summary, files.
 */
#include "lua/config_eval.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static int load_opts(const char *src, rift_config *cfg,
                     const rift_config_options *opts, rift_error *err) {
    return rift_config_load_string(cfg, src, strlen(src), "test.lua", true,
                                   opts, err);
}

static const char *load_error(const char *src) {
    static rift_error err;
    rift_config cfg;
    memset(&err, 0, sizeof(err));
    int rc = load_opts(src, &cfg, NULL, &err);
    rift_config_free(&cfg);
    return rc == 0 ? "" : err.text;
}

#define CHECK_REJECTS(src, text) CHECK_EQ_STR(load_error(src), text)
#define CHECK_ACCEPTS(src)       CHECK_EQ_STR(load_error(src), "")

/* ---- environment ---- */

RIFT_TEST(sandbox_hides_io_and_loaders) {
    static const char *hidden[] = {"io",      "load",           "loadfile",
                                   "dofile",  "require",        "package",
                                   "debug",   "os.execute",     "os.remove",
                                   "os.exit", "collectgarbage", "print"};
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
        char src[200];
        snprintf(src, sizeof(src), "assert(%s == nil, '%s visible') return {}",
                 hidden[i], hidden[i]);
        CHECK_ACCEPTS(src);
    }
    CHECK_ACCEPTS("assert(string.rep and table.concat and math.max and "
                  "utf8.char and pairs and pcall and tostring) return {}");
    CHECK_ACCEPTS("assert(type(os.time()) == 'number') return {}");
    CHECK_ACCEPTS("assert(rift.enabled == true and type(rift.version) == "
                  "'string') return {}");
}

RIFT_TEST(os_getenv_reads_environment) {
    setenv("RIFT_TEST_CFG_LISTEN", "127.0.0.1:4222", 1);
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts(
        "return { messaging = { listen = os.getenv('RIFT_TEST_CFG_LISTEN') "
        "or '127.0.0.1:1', certificate = 'c', private_key = 'k', "
        "principals = { { name = 'p', token_env = 'T' } } } }",
        &cfg, NULL, &err));
    CHECK_EQ_STR(cfg.messaging.listen, "127.0.0.1:4222");
    rift_config_free(&cfg);
    unsetenv("RIFT_TEST_CFG_LISTEN");
}

RIFT_TEST(bytecode_is_refused) {
    /* A binary chunk starts with ESC 'Lua'; text mode refuses it. */
    rift_config cfg;
    rift_error err = {0};
    int rc = rift_config_load_string(&cfg, "\x1bLua\x54", 5, "b.lua", true,
                                     NULL, &err);
    rift_config_free(&cfg);
    CHECK_EQ_INT(rc, RIFT_ERR_LUA);
    CHECK(strstr(err.text, "binary") != NULL);
}

RIFT_TEST(publish_is_runtime_only) {
    CHECK_REJECTS("rift.publish('a', 'b')",
                  "test.lua:1: rift.publish is only available inside runtime "
                  "callbacks");
    /* A captured reference is fine as long as it is not called now. */
    CHECK_ACCEPTS("local publish = rift.publish return {}");
}

RIFT_TEST(lua_errors_carry_file_and_line) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_EQ_INT(load_opts("return {\n  messaging = {\n", &cfg, NULL, &err),
                 RIFT_ERR_LUA);
    rift_config_free(&cfg);
    CHECK(strncmp(err.text, "test.lua:3:", 11) == 0);
    CHECK_EQ_INT(load_opts("\nerror('boom')", &cfg, NULL, &err), RIFT_ERR_LUA);
    rift_config_free(&cfg);
    CHECK_EQ_STR(err.text, "test.lua:2: boom");
    CHECK_EQ_INT(load_opts("error({})", &cfg, NULL, &err), RIFT_ERR_LUA);
    rift_config_free(&cfg);
    CHECK_EQ_STR(err.text, "config: error object is a table");
    CHECK_REJECTS("return 5", "config: the file must return a table (or "
                              "assign rift.config fields)");
}

/* ---- budgets ---- */

RIFT_TEST(instruction_budget_stops_loops) {
    rift_config_options opts;
    rift_config_options_default(&opts);
    opts.max_instructions = 1000000;
    rift_config cfg;
    rift_error err = {0};
    CHECK_EQ_INT(load_opts("while true do end", &cfg, &opts, &err),
                 RIFT_ERR_LIMIT);
    rift_config_free(&cfg);
    CHECK_EQ_STR(err.text, "config: evaluation exceeded 1000000 instructions");
    /* pcall cannot swallow the stop. */
    CHECK_EQ_INT(load_opts("while true do pcall(function() while true do end "
                           "end) end",
                           &cfg, &opts, &err),
                 RIFT_ERR_LIMIT);
    rift_config_free(&cfg);
}

RIFT_TEST(deadline_stops_evaluation) {
    rift_config_options opts;
    rift_config_options_default(&opts);
    opts.max_instructions = UINT64_MAX;
    opts.deadline_ns = rift_now_ns() + 20 * 1000000ull;
    rift_config cfg;
    rift_error err = {0};
    CHECK_EQ_INT(load_opts("while true do end", &cfg, &opts, &err),
                 RIFT_ERR_TIMEOUT);
    rift_config_free(&cfg);
    CHECK_EQ_STR(err.text, "config: evaluation deadline exceeded");
}

RIFT_TEST(memory_budget) {
    rift_config_options opts;
    rift_config_options_default(&opts);
    opts.max_memory = 4u * 1024 * 1024;
    rift_config cfg;
    rift_error err = {0};
    CHECK_EQ_INT(load_opts("local t = {} for i = 1, 1e7 do t[i] = "
                           "string.rep('x', 64) .. i end",
                           &cfg, &opts, &err),
                 RIFT_ERR_LIMIT);
    rift_config_free(&cfg);
    CHECK_EQ_STR(err.text,
                 "config: evaluation exceeded its 4 MiB memory budget");
}

/* ---- script style ---- */

RIFT_TEST(script_style_rift_config) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts("rift.config.messaging = { subscription_capacity = 7 }\n"
                       "rift.config.data_dir = 'd'\n",
                       &cfg, NULL, &err));
    CHECK_EQ_U64(cfg.messaging.subscription_capacity, 7);
    CHECK_EQ_STR(cfg.data_dir, "d");
    rift_config_free(&cfg);
    /* Replacing rift.config wholesale works too. */
    CHECK_OK(load_opts("rift.config = { log = 'error' }", &cfg, NULL, &err));
    CHECK(cfg.log_level_set);
    CHECK_EQ_INT(cfg.log_level, RIFT_LOG_ERROR);
    rift_config_free(&cfg);
    CHECK_REJECTS("rift.config.log = 'info' return { data_dir = 'x' }",
                  "config: return a table or assign rift.config fields, not "
                  "both");
    CHECK_REJECTS(
        "rift.config.bogus = 1",
        "bogus: unknown field (expected messaging, plugins, "
        "data_dir, log, on_message, quic, monitor, limits, nats, streaming, "
        "cluster)");
}

/* A root key assigned as a plain global is neither style: refused rather
 * than silently running the default broker. */
RIFT_TEST(root_keys_as_globals_are_refused) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_REJECTS("messaging = { listen = '127.0.0.1:1' }",
                  "config: messaging is assigned as a global, which is "
                  "ignored; return { messaging = ... } or assign "
                  "rift.config.messaging");
    CHECK_REJECTS("monitor = {}",
                  "config: monitor is assigned as a global, which is "
                  "ignored; return { monitor = ... } or assign "
                  "rift.config.monitor");
    /* Other globals are the script's own business. */
    CHECK_OK(
        load_opts("helper = 1 return { data_dir = 'd' }", &cfg, NULL, &err));
    rift_config_free(&cfg);
    CHECK_OK(load_opts("limit = 7 rift.config.log = 'warn'", &cfg, NULL, &err));
    rift_config_free(&cfg);
    CHECK_OK(load_opts("local messaging = {}", &cfg, NULL, &err));
    rift_config_free(&cfg);
}

/* ---- our keys ---- */

RIFT_TEST(data_dir_and_log) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts("return { data_dir = 'rift-data', log = { level = "
                       "'debug' } }",
                       &cfg, NULL, &err));
    CHECK_EQ_STR(cfg.data_dir, "rift-data");
    CHECK_EQ_INT(cfg.log_level, RIFT_LOG_DEBUG);
    rift_config_free(&cfg);
    CHECK_OK(load_opts("return {}", &cfg, NULL, &err));
    CHECK(cfg.data_dir == NULL);
    CHECK(!cfg.log_level_set);
    rift_config_free(&cfg);
    CHECK_REJECTS("return { data_dir = '' }",
                  "data_dir: path must not be empty");
    CHECK_REJECTS("return { data_dir = 5 }", "data_dir: expected a string");
    CHECK_REJECTS("return { data_dir = 'a\\0b' }",
                  "data_dir: expected a string without NUL bytes");
    CHECK_REJECTS("return { log = 'loud' }",
                  "log.level: expected one of debug, info, warn, error, off");
    CHECK_REJECTS("return { log = { lvl = 'info' } }",
                  "log.lvl: unknown field (expected level)");
}

RIFT_TEST(quic_retry) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts("return {}", &cfg, NULL, &err));
    CHECK(!cfg.quic.retry);
    rift_config_free(&cfg);
    CHECK_OK(load_opts("return { quic = { retry = true } }", &cfg, NULL, &err));
    CHECK(cfg.quic.retry);
    rift_config_free(&cfg);
    CHECK_OK(
        load_opts("rift.config.quic = { retry = false }", &cfg, NULL, &err));
    CHECK(!cfg.quic.retry);
    rift_config_free(&cfg);
    CHECK_REJECTS("return { quic = true }", "quic: expected a table");
    CHECK_REJECTS("return { quic = { retry = 1 } }",
                  "quic.retry: expected a boolean");
    CHECK_REJECTS("return { quic = { reset = true } }",
                  "quic.reset: unknown field (expected retry)");
}

RIFT_TEST(plugins_schema) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts(
        "rift.plugin('late') rift.plugin('echo') rift.plugin('late')\n"
        "return { plugins = { 'echo', { name = 'audit', path = 'vendor/audit', "
        "memory_mb = 16, instructions = 500000, deadline_ms = 200, grants = "
        "{ publish = { 'audit.>' }, subscribe = { 'orders.*' }, control = "
        "false } } } }",
        &cfg, NULL, &err));
    CHECK_EQ_INT(cfg.n_plugins, 3);
    rift_config_plugin *echo = &cfg.plugins[0], *audit = &cfg.plugins[1],
                       *late = &cfg.plugins[2];
    CHECK_EQ_STR(echo->name, "echo");
    CHECK_EQ_STR(echo->path, "plugins/echo");
    CHECK(!echo->restricted);
    CHECK_EQ_INT(echo->memory_mb, 64);
    CHECK_EQ_U64(echo->instructions, 100000);
    CHECK_EQ_INT(echo->deadline_ms, 50);
    CHECK_EQ_STR(audit->path, "vendor/audit");
    CHECK(audit->restricted);
    CHECK_EQ_INT(audit->n_publish, 1);
    CHECK_EQ_STR(audit->subscribe[0], "orders.*");
    CHECK_EQ_INT(audit->memory_mb, 16);
    CHECK_EQ_U64(audit->instructions, 500000);
    CHECK_EQ_INT(audit->deadline_ms, 200);
    CHECK_EQ_STR(late->name, "late"); /* from rift.plugin, once */
    rift_config_free(&cfg);

    const char *names = "plugins: names must be unique and contain 1..=128 "
                        "letters, digits, underscores or hyphens";
    CHECK_REJECTS("return { plugins = { 'a.b' } }", names);
    CHECK_REJECTS("return { plugins = { 'a', { name = 'a' } } }", names);
    CHECK_REJECTS("return { plugins = { {} } }", names);
    CHECK_REJECTS("return { plugins = { 5 } }",
                  "plugins: expected a list of names or tables");
    CHECK_REJECTS("return { plugins = 'a' }", "plugins: expected a list");
    CHECK_REJECTS("return { plugins = { { name = 'a', memory_mb = 0 } } }",
                  "plugins.a.memory_mb: expected an integer in 1..=1024");
    CHECK_REJECTS("return { plugins = { { name = 'a', deadline_ms = 60001 } "
                  "} }",
                  "plugins.a.deadline_ms: expected 1..=60000 milliseconds");
    CHECK_REJECTS("return { plugins = { { name = 'a', path = '' } } }",
                  "plugins.a.path: path must not be empty");
    CHECK_REJECTS("return { plugins = { { name = 'a', grants = { publish = { "
                  "'a..b' } } } } }",
                  "plugins: invalid subject pattern \"a..b\"; use tokens, * "
                  "or terminal >");
    CHECK_REJECTS("return { plugins = { { name = 'a', grants = { admin = "
                  "true } } } }",
                  "plugins.a.grants.admin: unknown field (expected publish, "
                  "subscribe, control)");
    CHECK_REJECTS("return { plugins = { { name = 'a', budget = 1 } } }",
                  "plugins.budget: unknown field (expected name, path, "
                  "grants, memory_mb, instructions, deadline_ms)");
    CHECK_REJECTS("rift.plugin('a b')",
                  "test.lua:1: rift.plugin: names contain 1..=128 letters, "
                  "digits, underscores or hyphens");
}

/* ---- summary ---- */

static const char *ok_getenv(const char *name, void *ud) {
    (void)name;
    (void)ud;
    return "super-secret-token-0123456789abcdef";
}

RIFT_TEST(summary_lists_everything_but_tokens) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load_opts(
        "return { data_dir = 'rift-data', on_message = function() end,\n"
        "  messaging = { listen = '[::1]:7443', certificate = 'c.pem',\n"
        "    private_key = 'k.pem', principals = { { name = 'dev', token_env\n"
        "    = 'DEV_TOKEN', publish = { '>' }, subscribe = { 'a.*', 'b' },\n"
        "    control = true } }, subscriptions = { { subject = 'jobs.>',\n"
        "    queue = 'w' } }, streams = { events = { subjects = { 'events.>' "
        "},\n"
        "    storage_path = 'rift-data/streams/events' } } },\n"
        "  plugins = { 'echo' } }",
        &cfg, NULL, &err));
    CHECK_OK(rift_config_load_tokens(&cfg, ok_getenv, NULL, &err));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    rift_config_print_summary(&cfg, f);
    fclose(f);
    rift_config_free(&cfg);
    CHECK(strstr(buf, "listen: [::1]:7443 (QUIC") != NULL);
    CHECK(strstr(buf, "dev: token from $DEV_TOKEN, control=yes") != NULL);
    CHECK(strstr(buf, "subscribe: a.*, b") != NULL);
    CHECK(strstr(buf, "jobs.> (queue w)") != NULL);
    CHECK(strstr(buf, "events: file rift-data/streams/events") != NULL);
    CHECK(strstr(buf, "echo: plugins/echo/init.lua") != NULL);
    CHECK(strstr(buf, "super-secret") == NULL);
    free(buf);
}

/* ---- files ---- */

RIFT_TEST(load_file_and_missing_file) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/rift.lua", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("return { messaging = { max_subject_bytes = 10 } }\n", f);
    fclose(f);
    rift_config cfg;
    rift_error err = {0};
    CHECK_EQ_INT(rift_config_load_file(&cfg, path, NULL, &err),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK(cfg.from_file);
    rift_config_free(&cfg);
    CHECK(strstr(err.text, "messaging.max_subject_bytes:") == err.text);
    snprintf(path, sizeof(path), "%s/absent.lua", dir);
    CHECK_EQ_INT(rift_config_load_file(&cfg, path, NULL, &err), -2);
    rift_config_free(&cfg);
    CHECK(strstr(err.text, "config: cannot read ") == err.text);
    rift_test_rmdir(dir);
}

RIFT_TEST(finalizers_are_refused) {
    /* Lua runs __gc with hooks off, so no budget could stop a looping
     * finalizer at lua_close: setmetatable refuses __gc. */
    CHECK_REJECTS("setmetatable({}, { __gc = function() while true do end "
                  "end }) return {}",
                  "test.lua:1: setmetatable: __gc is not available in "
                  "configuration files");
    CHECK_REJECTS("setmetatable({}, { __gc = false })",
                  "test.lua:1: setmetatable: __gc is not available in "
                  "configuration files");
    /* Adding __gc later does not register a finalizer, so it is harmless. */
    CHECK_ACCEPTS("local mt = {} setmetatable({}, mt) mt.__gc = function() "
                  "while true do end end");
    /* Other metatables work as usual, __close included. */
    CHECK_ACCEPTS("local t = setmetatable({}, { __index = function(_, k) "
                  "return k end }) assert(t.x == 'x') do local c <close> = "
                  "setmetatable({}, { __close = function() end }) end");
    CHECK_REJECTS("setmetatable(1, {})", "test.lua:1: bad argument #1 to "
                                         "'setmetatable' (table expected, "
                                         "got number)");
}

RIFT_TEST(metatables_are_not_consulted) {
    /* Metamethods on the environment, the rift table or the returned
     * tables never run: the parser only reads raw fields. */
    CHECK_ACCEPTS("setmetatable(_G, { __index = function() error('no') end "
                  "}) return setmetatable({ messaging = {} }, { __index = "
                  "function() error('no') end, __pairs = function() "
                  "error('no') end })");
    CHECK_ACCEPTS("setmetatable(rift, { __index = function() error('no') end "
                  "}) rift.config = nil");
    /* An inherited (metatable) messaging = true is not a field. */
    CHECK_ACCEPTS("return setmetatable({}, { __index = { messaging = true } "
                  "})");
    CHECK_ACCEPTS("setmetatable(_G, { __newindex = function() error('no') "
                  "end })");
}
