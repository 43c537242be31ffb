/*
 * vm.c — one sandboxed, budgeted Lua 5.4 state (lua layer): the counting
 * lua_Alloc that caps memory, the count hook that enforces the instruction
 * budget and the wall-clock deadline of each callback, the restricted
 * standard library (no io, os beyond time/clock, debug, bytecode, dofile,
 * loadfile, string.dump or __gc), and the runner that starts or resumes a
 * callback in a host-owned coroutine. Reading plugin files and `require`
 * are in vm_require.c.
 *
 * Every entry into Lua goes through lua_pcall (rule 31): state set-up,
 * loading and the per-callback body are protected C functions, so a memory
 * error raised while the host builds arguments is caught like any other.
 */
#include "lua/host_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Memory budget ---- */

/*
 * The allocator refuses any growth past the cap; Lua then collects garbage
 * and retries once before raising "not enough memory". Frees and shrinks
 * always succeed, so the state stays consistent and usable afterwards.
 */
static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    rift_lua_vm *vm = ud;
    size_t old = ptr != NULL ? osize : 0;
    if (nsize == 0) {
        rift_free(vm->mem, ptr);
        vm->mem_used -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > vm->mem_limit - vm->mem_used) {
        vm->mem_refused = true;
        return NULL;
    }
    void *p = rift_realloc(vm->mem, ptr, nsize);
    if (p == NULL) {
        vm->mem_refused = true;
        return NULL;
    }
    vm->mem_used = vm->mem_used - old + nsize;
    return p;
}

/* ---- Instruction and deadline budget ---- */

/*
 * The hook runs every RIFT_LUA_HOOK_EVERY instructions in every coroutine
 * of the state (new threads inherit the hook in Lua 5.4, so coroutines the
 * plugin creates are budgeted too). Once a budget is exceeded it fires on
 * every instruction of the thread it hits, so neither pcall nor a
 * coroutine boundary can swallow the stop: each further instruction raises
 * again until the callback unwinds. Threads left at count 1 heal on their
 * next hook call.
 */
static void budget_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    rift_lua_vm *vm = rift_lua_vm_of(L);
    int every = lua_gethookcount(L);
    if (!vm->armed) {
        return;
    }
    vm->instr += (uint64_t)every;
    if (vm->stop == RIFT_LUA_STOP_NONE) {
        if (vm->instr > vm->instr_limit) {
            vm->stop = RIFT_LUA_STOP_INSTRUCTIONS;
        } else if (vm->deadline != 0 && rift_now_ns() >= vm->deadline) {
            vm->stop = RIFT_LUA_STOP_DEADLINE;
        }
    }
    if (vm->stop != RIFT_LUA_STOP_NONE) {
        if (every != 1) {
            lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
        }
        lua_pushstring(L, vm->stop == RIFT_LUA_STOP_DEADLINE
                              ? RIFT_LUA_TEXT_DEADLINE
                              : "script instruction budget exceeded");
        lua_error(L);
    }
    if (every != RIFT_LUA_HOOK_EVERY) {
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, RIFT_LUA_HOOK_EVERY);
    }
}

void rift_lua_vm_arm(rift_lua_vm *vm, uint64_t instr_limit,
                     uint64_t deadline_ns, bool runtime) {
    vm->armed = true;
    vm->instr = 0;
    vm->instr_limit = instr_limit;
    vm->deadline = deadline_ns != 0 ? rift_now_ns() + deadline_ns : 0;
    vm->stop = RIFT_LUA_STOP_NONE;
    vm->mem_refused = false;
    vm->pub_count = 0;
    vm->pub_bytes = 0;
    vm->runtime = runtime;
}

void rift_lua_vm_disarm(rift_lua_vm *vm) {
    vm->armed = false;
    vm->runtime = false;
    vm->cur_co = NULL;
}

/* ---- Error texts ---- */

void rift_lua_error_text(lua_State *L, int idx, char *out, size_t size) {
    size_t len = 0;
    const char *s = NULL;
    char num[64];
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &len);
        break;
    case LUA_TNUMBER:
        /* Formatted here: lua_tolstring would convert in place and may
         * allocate. */
        if (lua_isinteger(L, idx)) {
            snprintf(num, sizeof(num), "%lld",
                     (long long)lua_tointeger(L, idx));
        } else {
            snprintf(num, sizeof(num), "%.14g", (double)lua_tonumber(L, idx));
        }
        s = num;
        len = strlen(num);
        break;
    default:
        snprintf(num, sizeof(num), "(error object is a %s value)",
                 luaL_typename(L, idx));
        s = num;
        len = strlen(num);
        break;
    }
    len = rift_text_cut(s, len, RIFT_MIN(size - 1, RIFT_LUA_ERROR_MAX));
    memcpy(out, s, len);
    out[len] = '\0';
}

/* Replaces the text of a failure caused by a budget with its own text. */
static void budget_text(const rift_lua_vm *vm, int status, char *text,
                        size_t size) {
    if (vm->stop == RIFT_LUA_STOP_DEADLINE) {
        snprintf(text, size, "%s", RIFT_LUA_TEXT_DEADLINE);
    } else if (vm->stop == RIFT_LUA_STOP_INSTRUCTIONS) {
        snprintf(text, size,
                 "script instruction budget exceeded (%llu instructions)",
                 (unsigned long long)vm->instr_limit);
    } else if (status == LUA_ERRMEM && vm->mem_refused) {
        snprintf(text, size, "script memory budget exceeded (%zu KiB)",
                 vm->mem_limit / 1024);
    }
}

/* ---- Sandboxed standard library ---- */

/* load(chunk [, chunkname [, mode [, env]]]) with mode forced to "t": text
 * only, never precompiled bytecode. Upvalue 1 is the real load. */
static int l_load(lua_State *L) {
    int n = lua_gettop(L);
    if (n < 3) {
        lua_settop(L, 3);
        n = 3;
    }
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* setmetatable refusing __gc: finalizers run with hooks disabled (Lua
 * stops debug hooks inside GC metamethods), so a plugin finalizer could
 * loop forever outside every budget. Upvalue 1 is the real function. */
static int l_setmetatable(lua_State *L) {
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL) {
            return luaL_error(L, "setmetatable: __gc metamethods are not "
                                 "available to plugins");
        }
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* collectgarbage limited to the harmless options. */
static int l_collectgarbage(lua_State *L) {
    static const char *const opts[] = {"collect", "count", "step", "isrunning",
                                       NULL};
    (void)luaL_checkoption(L, 1, "collect", opts);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* The registry key of the weak set of the host's callback coroutines. */
static const char host_threads_key = 0;

/* coroutine.resume and coroutine.close refusing the host's own callback
 * coroutines: a callback could otherwise capture coroutine.running() and
 * resume another callback suspended in rift.request with a forged reply,
 * or close it under the host. Upvalue 1 is the real function. */
static int l_coguard(lua_State *L) {
    if (lua_type(L, 1) == LUA_TTHREAD) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &host_threads_key);
        lua_pushvalue(L, 1);
        if (lua_rawget(L, -2) != LUA_TNIL) {
            return luaL_error(L, "cannot resume or close a callback's own "
                                 "coroutine");
        }
        lua_pop(L, 2);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* print(...) logs at info level as "<plugin>: <args separated by tabs>". */
static int l_print(lua_State *L) {
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1) {
            luaL_addchar(&b, '\t');
        }
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    rift_log(RIFT_LOG_INFO, "%s: %s", vm->plugin->name, lua_tostring(L, -1));
    return 0;
}

/* ---- State set-up ---- */

/* Runs every message handler in registration order; an error stops the
 * chain for that message (§7.1). Lua, so handlers may yield in requests. */
static const char chain_src[] =
    "local handlers = ...\n"
    "return function(msg)\n"
    "  for i = 1, #handlers do handlers[i](msg) end\n"
    "end\n";

/* Replaces global |name| by a C closure over its original value. */
static void wrap_global(lua_State *L, const char *name, lua_CFunction fn) {
    lua_getglobal(L, name);
    lua_pushcclosure(L, fn, 1);
    lua_setglobal(L, name);
}

/* The safe standard libraries, without the functions that reach files
 * (dofile, loadfile), the console (warn) or bytecode (string.dump). */
static void open_libs(lua_State *L) {
    static const struct {
        const char *name;
        lua_CFunction open;
    } libs[] = {
        {LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
        {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_COLIBNAME, luaopen_coroutine},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(libs); i++) {
        luaL_requiref(L, libs[i].name, libs[i].open, 1);
        lua_pop(L, 1);
    }
    static const char *const drop[] = {"dofile", "loadfile", "warn", NULL};
    for (size_t i = 0; drop[i] != NULL; i++) {
        lua_pushnil(L);
        lua_setglobal(L, drop[i]);
    }
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
}

/* Guards the builtins that could break the host's hold on the state: the
 * host's own coroutines (a weak-keyed registry set) cannot be resumed or
 * closed by plugin code, and load, setmetatable, collectgarbage and print
 * go through the host. */
static void wrap_builtins(lua_State *L) {
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &host_threads_key);
    lua_getglobal(L, LUA_COLIBNAME);
    static const char *const guarded[] = {"resume", "close"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(guarded); i++) {
        lua_getfield(L, -1, guarded[i]);
        lua_pushcclosure(L, l_coguard, 1);
        lua_setfield(L, -2, guarded[i]);
    }
    lua_pop(L, 1);
    wrap_global(L, "load", l_load);
    wrap_global(L, "setmetatable", l_setmetatable);
    wrap_global(L, "collectgarbage", l_collectgarbage);
    lua_pushcfunction(L, l_print);
    lua_setglobal(L, "print");
}

/* os: the clock functions; the configuration also reads the environment
 * and dates, as riftd's configuration evaluator allows. */
static void open_os(lua_State *L, bool compat) {
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 0);
    lua_newtable(L);
    static const char *const os_plugin[] = {"time", "clock", NULL};
    static const char *const os_compat[] = {"time", "clock", "getenv", "date",
                                            NULL};
    const char *const *keep = compat ? os_compat : os_plugin;
    for (size_t i = 0; keep[i] != NULL; i++) {
        lua_getfield(L, -2, keep[i]);
        lua_setfield(L, -2, keep[i]);
    }
    lua_setglobal(L, LUA_OSLIBNAME);
    lua_pop(L, 1);
}

/* require for plugins (the configuration has none); its loaded-modules
 * table starts with rift and rift.json, which are reserved names. */
static void open_require(lua_State *L, bool compat) {
    lua_newtable(L);
    lua_getglobal(L, "rift");
    lua_setfield(L, -2, "rift");
    lua_getglobal(L, "rift");
    lua_getfield(L, -1, "json");
    lua_setfield(L, -3, "rift.json");
    lua_pop(L, 1);
    if (!compat) {
        lua_pushcclosure(L, rift_lua_require, 1);
        lua_setglobal(L, "require");
    } else {
        lua_pop(L, 1);
    }
}

/* The message handlers' list and the chain that runs them, both kept in
 * the registry. */
static int make_chain(lua_State *L, rift_lua_vm *vm) {
    lua_newtable(L);
    lua_pushvalue(L, -1);
    vm->handlers_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    if (luaL_loadbufferx(L, chain_src, sizeof(chain_src) - 1, "=rift.chain",
                         "t") != LUA_OK) {
        return lua_error(L);
    }
    lua_insert(L, -2);
    lua_call(L, 1, 1);
    vm->chain_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static int setup(lua_State *L) {
    rift_lua_vm *vm = lua_touserdata(L, 1);
    open_libs(L);
    wrap_builtins(L);
    open_os(L, vm->plugin->is_compat);
    rift_lua_open_api(L, vm);
    open_require(L, vm->plugin->is_compat);
    return make_chain(L, vm);
}

void rift_lua_conf_free(const rift_mem *mem, rift_lua_conf *c) {
    if (c == NULL) {
        return;
    }
    rift_free(mem, c->dir);
    free(c->dir_real); /* from realpath */
    rift_free(mem, c->source);
    rift_identity_free(&c->identity);
    rift_free(mem, c);
}

int rift_lua_vm_new(rift_lua_vm **pvm, rift_lua_plugin *p, rift_lua_conf *conf,
                    rift_error *err) {
    rift_plugin_host *h = p->host;
    rift_lua_vm *vm = rift_calloc(h->mem, 1, sizeof(*vm));
    if (vm == NULL) {
        rift_lua_conf_free(h->mem, conf);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    vm->plugin = p;
    vm->host = h;
    vm->conf = conf;
    vm->mem = h->mem;
    vm->mem_limit = conf->mem_limit;
    vm->msg_mt_ref = vm->co_ref = vm->handlers_ref = vm->chain_ref = LUA_NOREF;
    vm->L = lua_newstate(vm_alloc, vm);
    if (vm->L == NULL) {
        rift_lua_vm_del(vm);
        return rift_error_set(err, RIFT_ERR_NOMEM,
                              "cannot create a Lua state within %zu KiB",
                              conf->mem_limit / 1024);
    }
    *(rift_lua_vm **)lua_getextraspace(vm->L) = vm;
    /* Installed before anything runs: every coroutine inherits it. */
    lua_sethook(vm->L, budget_hook, LUA_MASKCOUNT, RIFT_LUA_HOOK_EVERY);
    lua_pushcfunction(vm->L, setup);
    lua_pushlightuserdata(vm->L, vm);
    int status = lua_pcall(vm->L, 1, 0, 0);
    if (status != LUA_OK) {
        char text[RIFT_LUA_ERROR_MAX + 1];
        rift_lua_error_text(vm->L, -1, text, sizeof(text));
        budget_text(vm, status, text, sizeof(text));
        rift_lua_vm_del(vm);
        return rift_error_set(
            err, status == LUA_ERRMEM ? RIFT_ERR_NOMEM : RIFT_ERR_LUA, "%s",
            text);
    }
    *pvm = vm;
    return 0;
}

void rift_lua_vm_del(rift_lua_vm *vm) {
    if (vm == NULL) {
        return;
    }
    while (vm->requests != NULL) {
        rift_lua_request_free(vm->requests, false);
    }
    while (vm->timers != NULL) {
        rift_lua_timer_free(vm->timers, false);
    }
    while (vm->bindings != NULL) {
        rift_lua_binding_close(vm->bindings);
    }
    if (vm->L != NULL) {
        /* No Lua finalizer can exist (setmetatable refuses __gc), so
         * closing runs only the host's own C finalizers. */
        lua_close(vm->L);
    }
    rift_lua_conf_free(vm->mem, vm->conf);
    rift_free(vm->mem, vm);
}

/* ---- Loading ---- */

int rift_lua_vm_load(rift_lua_vm *vm, const char *src, size_t len,
                     const char *chunkname, int nret, rift_error *err) {
    lua_State *L = vm->L;
    const rift_lua_conf *p = vm->conf;
    char text[RIFT_LUA_ERROR_MAX + 1];
    int status = luaL_loadbufferx(L, src, len, chunkname, "t");
    if (status == LUA_OK) {
        uint64_t instr = RIFT_MAX(p->instr_limit, RIFT_LUA_INIT_INSTRUCTIONS);
        uint64_t deadline = RIFT_MAX(
            p->deadline_ns, (uint64_t)RIFT_LUA_INIT_DEADLINE_MS * 1000000u);
        rift_lua_vm_arm(vm, instr, deadline, false);
        status = lua_pcall(L, 0, nret, 0);
        if (status != LUA_OK) {
            rift_lua_error_text(L, -1, text, sizeof(text));
            budget_text(vm, status, text, sizeof(text));
        }
        rift_lua_vm_disarm(vm);
    } else {
        rift_lua_error_text(L, -1, text, sizeof(text));
        budget_text(vm, status, text, sizeof(text));
    }
    if (status != LUA_OK) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_LUA, "%s", text);
    }
    return 0;
}

/* ---- Running a callback ---- */

typedef struct call_body {
    rift_lua_vm *vm;
    const rift_lua_call *call;
    int status; /* of lua_resume; -1 until it ran */
    char *errtext;
} call_body;

/* Releases the coroutine at the top of the main stack: kept as the idle
 * coroutine when there is none (it finished cleanly), else dropped. Never
 * allocates: references are moved, not created. */
static void settle_co(lua_State *L, rift_lua_vm *vm, int ref, bool reusable) {
    if (reusable && vm->co_ref == LUA_NOREF) {
        vm->co_ref = ref;
    } else {
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
    }
}

/*
 * The protected body: fetch or create the coroutine, push the function and
 * the arguments (either may raise a memory error, caught by the pcall),
 * resume, and dispose of the coroutine. After lua_resume nothing here
 * allocates, so the outcome recorded in |b| is final.
 */
static int call_protected(lua_State *L) {
    call_body *b = lua_touserdata(L, 1);
    rift_lua_vm *vm = b->vm;
    const rift_lua_call *c = b->call;
    lua_State *co;
    int ref;
    if (c->co_ref != LUA_NOREF) {
        ref = c->co_ref;
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
        co = lua_tothread(L, -1);
    } else {
        /* The idle coroutine stays registered as idle until the resume, so
         * a memory error while pushing leaks nothing; its stack is cleared
         * first in case such an error left a function on it. */
        if (vm->co_ref == LUA_NOREF) {
            lua_newthread(L);
            /* Remember it as the host's: plugin code must not resume or
             * close it (see l_coguard). */
            lua_rawgetp(L, LUA_REGISTRYINDEX, &host_threads_key);
            lua_pushvalue(L, -2);
            lua_pushboolean(L, 1);
            lua_rawset(L, -3);
            lua_pop(L, 1);
            vm->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        }
        ref = vm->co_ref;
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
        co = lua_tothread(L, -1);
        lua_settop(co, 0);
        lua_rawgeti(L, LUA_REGISTRYINDEX, c->fn_ref);
        lua_xmove(L, co, 1);
    }
    int nargs = c->push != NULL ? c->push(L, c->ud) : 0;
    if (!lua_checkstack(co, nargs + 1)) {
        return luaL_error(L, "stack overflow");
    }
    lua_xmove(L, co, nargs);
    if (c->co_ref == LUA_NOREF) {
        vm->co_ref = LUA_NOREF;
    }
    vm->cur_co = co;
    vm->yield_req = NULL;
    int nres = 0;
    int status = lua_resume(co, L, nargs, &nres);
    vm->cur_co = NULL;
    b->status = status;
    if (status == LUA_OK) {
        lua_pop(co, nres);
        settle_co(L, vm, ref, true);
    } else if (status == LUA_YIELD) {
        lua_pop(co, nres);
        if (vm->yield_req != NULL) {
            vm->yield_req->co_ref = ref;
            snprintf(vm->yield_req->cb, sizeof(vm->yield_req->cb), "%s", c->cb);
            vm->yield_req = NULL;
        } else {
            snprintf(b->errtext, RIFT_LUA_ERROR_MAX + 1,
                     "callbacks cannot yield (only rift.request and a "
                     "waiting consumer:fetch suspend them)");
            settle_co(L, vm, ref, false);
        }
    } else {
        rift_lua_error_text(co, -1, b->errtext, RIFT_LUA_ERROR_MAX + 1);
        settle_co(L, vm, ref, false);
    }
    return 0;
}

int rift_lua_vm_call(rift_lua_vm *vm, const rift_lua_call *call,
                     char *errtext) {
    lua_State *L = vm->L;
    const rift_lua_conf *p = vm->conf;
    call_body b = {.vm = vm, .call = call, .status = -1, .errtext = errtext};
    errtext[0] = '\0';
    rift_lua_vm_arm(vm, p->instr_limit, p->deadline_ns, true);
    lua_pushcfunction(L, call_protected);
    lua_pushlightuserdata(L, &b);
    int status = lua_pcall(L, 1, 0, 0);
    int outcome;
    if (status != LUA_OK) {
        /* The host failed to prepare the call (memory). A resume target
         * that never ran is dropped with its reference. */
        rift_lua_error_text(L, -1, errtext, RIFT_LUA_ERROR_MAX + 1);
        lua_pop(L, 1);
        if (b.status == -1 && call->co_ref != LUA_NOREF) {
            luaL_unref(L, LUA_REGISTRYINDEX, call->co_ref);
        }
        budget_text(vm, status, errtext, RIFT_LUA_ERROR_MAX + 1);
        outcome = RIFT_LUA_FAILED;
    } else if (b.status == LUA_OK && vm->stop != RIFT_LUA_STOP_NONE) {
        /* It returned, but only because a coroutine of its own absorbed the
         * stop: the callback still overran its budget. */
        budget_text(vm, b.status, errtext, RIFT_LUA_ERROR_MAX + 1);
        outcome = RIFT_LUA_FAILED;
    } else if (b.status == LUA_OK) {
        outcome = RIFT_LUA_DONE;
    } else if (b.status == LUA_YIELD && errtext[0] == '\0') {
        outcome = RIFT_LUA_SUSPENDED;
    } else {
        budget_text(vm, b.status, errtext, RIFT_LUA_ERROR_MAX + 1);
        outcome = RIFT_LUA_FAILED;
    }
    rift_lua_vm_disarm(vm);
    return outcome;
}
