/*
 * config_eval.c — evaluation of the Lua configuration (lua layer; fills the
 * rift_config of config/config.h): a fresh Lua 5.4 state per evaluation with a
 * memory budget and an instruction/deadline hook, a restricted environment, the
 * `rift` table (rift.config, rift.on, rift.plugin, rift.publish), then the
 * protected parse into a rift_config.
 *
 * The environment offers only what a configuration needs: the base
 * functions that cannot reach files or load code (no load, loadfile,
 * dofile, require, collectgarbage, print), string, table, math, utf8, and
 * os.getenv/os.time/os.clock/os.date. Text chunks only (no bytecode).
 */
#include "lua/config_eval.h"
#include "lua/config_lua.h"
#include "lua/on_event.h"
#include "subject/name.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Instructions between two hook calls (budget and deadline checks). */
#define HOOK_EVERY 1000
/* Head-room granted to the parse itself on top of the script's budget. */
#define PARSE_HEADROOM (1024 * 1024)

enum stop_reason {
    STOP_NONE,
    STOP_INSTRUCTIONS,
    STOP_DEADLINE
};

typedef struct eval_state {
    size_t used;
    size_t limit;
    bool oom;
    uint64_t instructions;
    uint64_t max_instructions;
    rift_tstamp deadline_ns;
    enum stop_reason stop;
    size_t n_message_handlers;
} eval_state;

void rift_config_options_default(rift_config_options *opts) {
    opts->max_memory = 64u * 1024 * 1024;
    opts->max_instructions = 100000000u;
    opts->deadline_ns = 0;
}

/* ---- Budgets ---- */

static void *budget_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    eval_state *e = ud;
    size_t old = ptr != NULL ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        e->used -= old;
        return NULL;
    }
    if (nsize > old && e->used - old + nsize > e->limit) {
        e->oom = true;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p == NULL) {
        e->oom = true;
        return NULL;
    }
    e->used = e->used - old + nsize;
    return p;
}

static void budget_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    void *ud;
    lua_getallocf(L, &ud);
    eval_state *e = ud;
    e->instructions += HOOK_EVERY;
    if (e->stop == STOP_NONE) {
        if (e->instructions > e->max_instructions) {
            e->stop = STOP_INSTRUCTIONS;
        } else if (e->deadline_ns != 0 && rift_now_ns() >= e->deadline_ns) {
            e->stop = STOP_DEADLINE;
        }
    }
    if (e->stop != STOP_NONE) {
        /* Fire on every instruction from now on, so a pcall inside the
         * script cannot swallow the stop and carry on. */
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
        luaL_error(L, "configuration evaluation stopped");
    }
}

/* ---- The rift table ---- */

/* rift.on(event, fn): only "message" exists in a standalone broker. */
static int l_rift_on(lua_State *L) {
    rift_lua_check_on_event(L);
    void *ud;
    lua_getallocf(L, &ud);
    ((eval_state *)ud)->n_message_handlers++;
    return 0;
}

/* rift.plugin(name): records the name (upvalue 1 is the list); the plugin
 * host loads plugins/<name>/init.lua later. Loads are cached by name. */
static int l_rift_plugin(lua_State *L) {
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    if (!rift_plugin_name_valid(name, len)) {
        return luaL_error(L, "rift.plugin: names contain 1..=128 letters, "
                             "digits, underscores or hyphens");
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, lua_upvalueindex(1));
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, lua_upvalueindex(1), i);
        if (lua_rawequal(L, -1, 1)) {
            return 0;
        }
        lua_pop(L, 1);
    }
    lua_pushvalue(L, 1);
    lua_rawseti(L, lua_upvalueindex(1), n + 1);
    return 0;
}

static int l_rift_publish(lua_State *L) {
    return luaL_error(
        L, "rift.publish is only available inside runtime callbacks");
}

/*
 * setmetatable without finalizers: Lua runs __gc with hooks disabled, so a
 * looping finalizer could never be stopped by the budget. An object is
 * registered for finalization only when setmetatable sees a __gc field, so
 * refusing such metatables here is enough. Otherwise as the base library's.
 */
static int l_setmetatable(lua_State *L) {
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL) {
        return luaL_error(L, "cannot change a protected metatable");
    }
    if (t == LUA_TTABLE) {
        lua_pushstring(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL) {
            return luaL_error(L, "setmetatable: __gc is not available in "
                                 "configuration files");
        }
        lua_pop(L, 1);
    }
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* Pushes the env table; the plugin-name list is on top when called. */
static void build_env(lua_State *L) {
    int names = lua_gettop(L);
    lua_newtable(L);
    int env = lua_gettop(L);

    static const char *const base[] = {
        "assert",   "error",    "getmetatable", "ipairs", "next",     "pairs",
        "pcall",    "rawequal", "rawget",       "rawlen", "rawset",   "select",
        "tonumber", "tostring", "type",         "xpcall", "_VERSION", NULL,
    };
    lua_pushglobaltable(L);
    for (size_t i = 0; base[i] != NULL; i++) {
        lua_getfield(L, -1, base[i]);
        lua_setfield(L, env, base[i]);
    }
    lua_pushcfunction(L, l_setmetatable);
    lua_setfield(L, env, "setmetatable");
    lua_pop(L, 1);

    static const struct {
        const char *name;
        lua_CFunction open;
    } libs[] = {
        {LUA_STRLIBNAME, luaopen_string},
        {LUA_TABLIBNAME, luaopen_table},
        {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(libs); i++) {
        luaL_requiref(L, libs[i].name, libs[i].open, 0);
        lua_setfield(L, env, libs[i].name);
    }
    /* os: the read-only part. */
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 0);
    lua_newtable(L);
    static const char *const os_keep[] = {"getenv", "time", "clock", "date",
                                          NULL};
    for (size_t i = 0; os_keep[i] != NULL; i++) {
        lua_getfield(L, -2, os_keep[i]);
        lua_setfield(L, -2, os_keep[i]);
    }
    lua_setfield(L, env, "os");
    lua_pop(L, 1);

    lua_newtable(L); /* rift */
    lua_newtable(L);
    lua_setfield(L, -2, "config");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "enabled");
    lua_pushstring(L, RIFT_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushcfunction(L, l_rift_on);
    lua_setfield(L, -2, "on");
    lua_pushvalue(L, names);
    lua_pushcclosure(L, l_rift_plugin, 1);
    lua_setfield(L, -2, "plugin");
    lua_pushcfunction(L, l_rift_publish);
    lua_setfield(L, -2, "publish");
    lua_setfield(L, env, "rift");

    lua_pushvalue(L, env);
    lua_setfield(L, env, "_G");
}

/* ---- Protected steps ---- */

/*
 * Every Lua API call runs under lua_pcall: any of them may raise a memory
 * error once the script has used its budget, and outside a protected call
 * that would be a panic (abort).
 */

/* Pushes the plugin-name list and the environment. */
static int setup_protected(lua_State *L) {
    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    lua_pop(L, 1);
    lua_newtable(L);
    build_env(L);
    return 2;
}

typedef struct parse_ctx {
    rift_config *cfg;
    rift_error *err;
    size_t n_message_handlers;
    int rc;
} parse_ctx;

/* True when the table at |idx| has at least one entry. */
static bool table_nonempty(lua_State *L, int idx) {
    lua_pushnil(L);
    if (lua_next(L, idx) == 0) {
        return false;
    }
    lua_pop(L, 2);
    return true;
}

/*
 * A file that neither returns a table nor fills rift.config but assigns a
 * root key as a global (`messaging = {...}` alone) would silently run the
 * default broker; that is never what its author meant. Stack as below,
 * env at 3.
 */
static bool global_root_key(lua_State *L, const char **key) {
    static const char *const keys[] = {"messaging", "plugins", "data_dir",
                                       "quic",      "monitor", "limits",
                                       "nats",      NULL};
    for (size_t i = 0; keys[i] != NULL; i++) {
        lua_pushstring(L, keys[i]);
        int t = lua_rawget(L, 3);
        lua_pop(L, 1);
        if (t != LUA_TNIL) {
            *key = keys[i];
            return true;
        }
    }
    return false;
}

/*
 * Picks the root table — the value the chunk returned, or rift.config in
 * script style — and parses it. Raw accesses only: the script may have put
 * metatables on its environment. Stack: [1] ctx, [2] plugin names, [3] env,
 * [4] returned value.
 */
static int finish_protected(lua_State *L) {
    parse_ctx *ctx = lua_touserdata(L, 1);
    lua_pushstring(L, "rift");
    lua_rawget(L, 3);
    bool script = false;
    if (lua_type(L, 5) == LUA_TTABLE) {
        lua_pushstring(L, "config");
        lua_rawget(L, 5);
        script = lua_type(L, 6) == LUA_TTABLE && table_nonempty(L, 6);
    } else {
        lua_pushnil(L);
    }
    int root;
    if (lua_type(L, 4) == LUA_TTABLE) {
        if (script) {
            ctx->rc = rift_error_set(ctx->err, RIFT_ERR_INVALID_CONFIG,
                                     "config: return a table or assign "
                                     "rift.config fields, not both");
            return 0;
        }
        root = 4;
    } else if (lua_type(L, 4) == LUA_TNIL) {
        const char *key;
        if (!script && global_root_key(L, &key)) {
            ctx->rc = rift_error_set(ctx->err, RIFT_ERR_INVALID_CONFIG,
                                     "config: %s is assigned as a global, "
                                     "which is ignored; return { %s = ... } "
                                     "or assign rift.config.%s",
                                     key, key, key);
            return 0;
        }
        if (lua_type(L, 6) != LUA_TTABLE) {
            lua_newtable(L);
            lua_replace(L, 6);
        }
        root = 6;
    } else {
        ctx->rc = rift_error_set(ctx->err, RIFT_ERR_INVALID_CONFIG,
                                 "config: the file must return a table (or "
                                 "assign rift.config fields)");
        return 0;
    }
    ctx->cfg->n_message_handlers = ctx->n_message_handlers;
    ctx->rc = rift_config_parse_root(L, root, 2, ctx->cfg, ctx->err);
    return 0;
}

static int lua_failure(lua_State *L, int status, const eval_state *e,
                       const rift_config_options *opts, rift_error *err) {
    if (e->stop == STOP_INSTRUCTIONS) {
        return rift_error_set(err, RIFT_ERR_LIMIT,
                              "config: evaluation exceeded %llu instructions",
                              (unsigned long long)opts->max_instructions);
    }
    if (e->stop == STOP_DEADLINE) {
        return rift_error_set(err, RIFT_ERR_TIMEOUT,
                              "config: evaluation deadline exceeded");
    }
    if (status == LUA_ERRMEM) {
        return rift_error_set(err, RIFT_ERR_LIMIT,
                              "config: evaluation exceeded its %zu MiB memory "
                              "budget",
                              opts->max_memory / (1024 * 1024));
    }
    if (lua_type(L, -1) == LUA_TSTRING) {
        return rift_error_set(err, RIFT_ERR_LUA, "%s", lua_tostring(L, -1));
    }
    return rift_error_set(err, RIFT_ERR_LUA, "config: error object is a %s",
                          luaL_typename(L, -1));
}

static int evaluate(rift_config *cfg, const rift_config_options *opts,
                    const char *chunkname, rift_error *err) {
    eval_state e = {
        .limit = opts->max_memory,
        .max_instructions = opts->max_instructions,
        .deadline_ns = opts->deadline_ns,
    };
    lua_State *L = lua_newstate(budget_alloc, &e);
    if (L == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    /* The hook stays for the state's whole life: finalizers (__gc) run
     * Lua code during the parse and in lua_close, and must stop too. */
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
    int rc = 0;
    lua_pushcfunction(L, setup_protected);
    int status = lua_pcall(L, 0, 2, 0); /* 1: plugin names, 2: env */
    if (status != LUA_OK) {
        rc = lua_failure(L, status, &e, opts, err);
        goto done;
    }
    status = luaL_loadbufferx(L, cfg->source, cfg->source_len, chunkname, "t");
    if (status != LUA_OK) {
        rc = lua_failure(L, status, &e, opts, err);
        goto done;
    }
    lua_pushvalue(L, 2);
    lua_setupvalue(L, -2, 1);       /* _ENV */
    status = lua_pcall(L, 0, 1, 0); /* 3: returned value */
    if (status != LUA_OK) {
        rc = lua_failure(L, status, &e, opts, err);
        goto done;
    }
    parse_ctx ctx = {
        .cfg = cfg, .err = err, .n_message_handlers = e.n_message_handlers};
    e.limit += PARSE_HEADROOM;
    lua_pushcfunction(L, finish_protected);
    lua_pushlightuserdata(L, &ctx);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    status = lua_pcall(L, 4, 0, 0);
    if (status != LUA_OK) {
        rc = status == LUA_ERRMEM
                 ? rift_error_set(err, RIFT_ERR_NOMEM, "out of memory")
                 : lua_failure(L, status, &e, opts, err);
        goto done;
    }
    rc = ctx.rc;
done:
    lua_close(L);
    return rc;
}

/* ---- Entry points ---- */

int rift_config_load_string(rift_config *cfg, const char *source, size_t len,
                            const char *name, bool from_file,
                            const rift_config_options *opts, rift_error *err) {
    rift_config_options defaults;
    if (opts == NULL) {
        rift_config_options_default(&defaults);
        opts = &defaults;
    }
    memset(cfg, 0, sizeof(*cfg));
    if (len > RIFT_CONFIG_MAX_SOURCE) {
        return rift_error_set(err, RIFT_ERR_LIMIT,
                              "config: %s exceeds %d bytes", name,
                              RIFT_CONFIG_MAX_SOURCE);
    }
    cfg->source = rift_strndup(NULL, source, len);
    cfg->source_name = rift_strndup(NULL, name, strlen(name));
    if (cfg->source == NULL || cfg->source_name == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    cfg->source_len = len;
    cfg->from_file = from_file;
    if (from_file) {
        rift_config_revision(source, len, cfg->revision);
    } else {
        snprintf(cfg->revision, sizeof(cfg->revision), "%s",
                 RIFT_CONFIG_RUNTIME_REVISION);
    }
    /* "@name" makes Lua report "name:line:" in messages. */
    size_t nl = strlen(name);
    char *chunk = rift_malloc(NULL, nl + 2);
    if (chunk == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    chunk[0] = '@';
    memcpy(chunk + 1, name, nl + 1);
    int rc = evaluate(cfg, opts, chunk, err);
    rift_free(NULL, chunk);
    return rc;
}

int rift_config_load_file(rift_config *cfg, const char *path,
                          const rift_config_options *opts, rift_error *err) {
    memset(cfg, 0, sizeof(*cfg));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return rift_error_set(err, -e, "config: cannot read %s: %s", path,
                              strerror(e));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (len == cap) {
            if (cap > RIFT_CONFIG_MAX_SOURCE) {
                rc = rift_error_set(err, RIFT_ERR_LIMIT,
                                    "config: %s exceeds %d bytes", path,
                                    RIFT_CONFIG_MAX_SOURCE);
                goto out;
            }
            cap = cap ? cap * 2 : 8192;
            char *nb = rift_realloc(NULL, buf, cap);
            if (nb == NULL) {
                rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                goto out;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            int e = errno;
            rc = rift_error_set(err, -e, "config: cannot read %s: %s", path,
                                strerror(e));
            goto out;
        }
        if (r == 0) {
            break;
        }
        len += (size_t)r;
    }
    rc = rift_config_load_string(cfg, buf ? buf : "", len, path, true, opts,
                                 err);
out:
    rift_free(NULL, buf);
    close(fd);
    return rc;
}
