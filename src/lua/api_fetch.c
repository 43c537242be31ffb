/*
 * api_fetch.c — consumer:fetch(n [, {wait = ms}]) for plugins (lua layer):
 * the records of a durable consumer as Lua tables, and the waiting fetch
 * that suspends the calling callback until a record arrives or the wait
 * has passed.
 *
 * A waiting fetch that finds nothing parks as a rift_lua_request with no
 * inbox: a timer at its deadline, and a watch on the stream's appends
 * (rift_stream_watch_add) that makes that timer due at once. So it costs
 * no CPU while idle and nothing polls: the host's poller sleeps until the
 * earliest deadline, a publish to the stream (from any thread: a plugin,
 * the QUIC server, NATS Streaming) schedules the plugin, and the worker
 * resumes the coroutine, which fetches again (fresh budgets, as after
 * rift.request). An append that brings it nothing (another fetcher was
 * faster, the filter does not match) parks it again until the same
 * deadline. The plugin's other callbacks run meanwhile; reload, unload
 * and disabling free the parked fetch with the state (vm.c), and its
 * watch is unhooked before its timer goes.
 *
 * Each step looks the stream up by name and pins it (api_stream.c); a
 * parked fetch keeps its pin until it resumes, as the QUIC server's
 * waiting fetch does, so the stream it watches stays the one in the
 * namespace (a run-time stream deleted meanwhile is closed at that
 * release, and the resumed fetch raises "consumer:fetch: unknown stream").
 *
 * Batches are boxed in a userdata with a finalizer while they are turned
 * into Lua tables, so a memory error leaks nothing.
 */
#include "lua/host_internal.h"

#include "common/dlist.h"

#include <lauxlib.h>
#include <string.h>

#define BATCH_MT "rift.batch"

/* The longest wait, as the wire's CONSUMER_FETCH_WAIT max_wait_ms. */
#define FETCH_WAIT_MAX_MS 120000

static int batch_gc(lua_State *L) {
    rift_batch *b = lua_touserdata(L, 1);
    rift_batch_free(b);
    return 0;
}

/* An empty batch boxed at the top of the stack (its finalizer frees it,
 * also after an error). [-0, +1, m] */
static rift_batch *new_box(lua_State *L) {
    rift_batch *b = lua_newuserdatauv(L, sizeof(*b), 0);
    memset(b, 0, sizeof(*b));
    luaL_setmetatable(L, BATCH_MT);
    return b;
}

/* Replaces the boxed batch at the top with the records' table.
 * [-1, +1, e] */
static void push_records(lua_State *L, rift_lua_vm *vm, rift_batch *b) {
    const rift_lua_conf *p = vm->conf;
    rift_error err;
    lua_createtable(L, (int)b->count, 0);
    for (size_t i = 0; i < b->count; i++) {
        const rift_delivery *d = &b->items[i];
        const rift_record *r = &d->record;
        if (p->restricted &&
            rift_identity_can_subscribe(&p->identity, r->subject,
                                        r->subject_len, &err) != 0) {
            /* §3.4: each fetched record's subject is checked too. */
            luaL_error(L, "%s", err.text);
        }
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, (lua_Integer)r->sequence);
        lua_setfield(L, -2, "sequence");
        lua_pushlstring(L, r->subject, r->subject_len);
        lua_setfield(L, -2, "subject");
        lua_pushlstring(L, r->payload_len > 0 ? (const char *)r->payload : "",
                        r->payload_len);
        lua_setfield(L, -2, "payload");
        if (r->reply != NULL) {
            lua_pushlstring(L, r->reply, r->reply_len);
            lua_setfield(L, -2, "reply");
        }
        lua_pushinteger(L, (lua_Integer)r->timestamp_ms);
        lua_setfield(L, -2, "timestamp_ms");
        lua_pushinteger(L, (lua_Integer)d->delivery_count);
        lua_setfield(L, -2, "delivery_count");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    rift_batch_free(b);
    lua_remove(L, -2); /* the box */
}

/* ---- The parked fetch ---- */

/* The stream's append watch (publisher's thread, stream lock held). */
static void on_append(void *arg) {
    rift_lua_request *r = arg;
    rift_plugin_host_timer_now(r->vm->host, r->timer);
}

void rift_lua_fetch_wait_release(rift_lua_request *r) {
    if (r->fetch_pin.stream == NULL) {
        return;
    }
    /* Unhooked first: once this returns on_append cannot run, so the
     * timer it touches may go. */
    rift_stream_watch_remove(r->fetch_pin.stream, &r->fetch_watch);
    rift_consumer_close(r->fetch_hold);
    r->fetch_hold = NULL;
    rift_lua_stream_unpin(r->vm, &r->fetch_pin, false);
}

/* Parks the fetch of |op| until |deadline|, taking over its pin and its
 * store handle: the vm owns the request from now on (freed by the
 * resume, or with the state). NULL when out of memory (|op| untouched).
 * Never raises. */
static rift_lua_request *park(rift_lua_vm *vm, rift_lua_consumer_op *op,
                              rift_tstamp deadline) {
    rift_lua_request *r = rift_calloc(vm->mem, 1, sizeof(*r));
    rift_lua_timer *t = rift_calloc(vm->mem, 1, sizeof(*t));
    if (r == NULL || t == NULL) {
        rift_free(vm->mem, r);
        rift_free(vm->mem, t);
        return NULL;
    }
    rift_stream *s = op->pin.stream;
    r->vm = vm;
    r->co_ref = LUA_NOREF;
    r->timer = t;
    r->fetch_hold = *op->box;
    *op->box = NULL;
    r->fetch_pin = op->pin;
    op->pin = (rift_lua_pin){NULL, NULL};
    r->fetch_watch.fn = on_append;
    r->fetch_watch.arg = r;
    RIFT_DLIST_PUSH(vm->requests, r, prev, next);
    vm->n_requests++;
    t->plugin = vm->plugin;
    t->vm = vm;
    t->fn_ref = LUA_NOREF;
    t->req = r;
    t->heap_idx = SIZE_MAX;
    t->due = deadline;
    rift_plugin_host_arm_timer(vm->host, t);
    rift_stream_watch_add(s, &r->fetch_watch);
    return r;
}

static int fetch_k(lua_State *L, int status, lua_KContext ctx);

/*
 * One step of a fetch; the stack holds (consumer, n, deadline_ns), where
 * deadline 0 means no wait. Returns the records, or suspends: a parked
 * fetch fetches once more after the watch is hooked, so an append
 * between the first fetch and the hook is not missed.
 */
static int fetch_step(lua_State *L) {
    rift_lua_consumer_op op;
    rift_lua_consumer_prepare(L, &op); /* the store handle's box */
    rift_lua_vm *vm = rift_lua_vm_of(L);
    size_t n = (size_t)lua_tointeger(L, 2);
    rift_tstamp deadline = (rift_tstamp)lua_tointeger(L, 3);
    rift_batch *b = new_box(L); /* at the top, above the handle's box */
    rift_lua_consumer_begin(L, &op, "consumer:fetch");
    rift_error err;
    int rc = rift_consumer_fetch(*op.box, n, b, &err);
    if (rc != 0 || b->count > 0 || deadline == 0 || rift_now_ns() >= deadline) {
        rift_lua_consumer_end(L, &op);
        if (rc != 0) {
            return luaL_error(L, "%s", err.text);
        }
        push_records(L, vm, b);
        return 1;
    }
    rift_lua_request *r = park(vm, &op, deadline);
    if (r == NULL) {
        rift_lua_consumer_end(L, &op);
        return luaL_error(L, "consumer:fetch: out of memory");
    }
    rift_batch_free(b);
    rc = rift_consumer_fetch(r->fetch_hold, n, b, &err);
    if (rc != 0 || b->count > 0) {
        rift_lua_request_free(r, false); /* and its pin */
        if (rc != 0) {
            return luaL_error(L, "%s", err.text);
        }
        push_records(L, vm, b);
        return 1;
    }
    lua_pop(L, 1); /* the empty box */
    vm->yield_req = r;
    /* Resumed with no values by the worker (plugin.c fire_timer). */
    return lua_yieldk(L, 0, 0, fetch_k);
}

static int fetch_k(lua_State *L, int status, lua_KContext ctx) {
    (void)status;
    (void)ctx;
    lua_settop(L, 3);
    return fetch_step(L);
}

/* consumer:fetch([n] [, {wait = ms}]) → { {sequence=, subject=, payload=,
 * reply=, timestamp_ms=, delivery_count=}, ... } (n: 1..=65536, default
 * 1; wait: 0..=120000, default 0 = answer at once) [-0, +1, e] */
int rift_lua_consumer_fetch(lua_State *L) {
    rift_lua_consumer_op op;
    rift_lua_consumer_prepare(L, &op); /* raises when closed */
    lua_pop(L, 1);                     /* its empty box */
    lua_Integer n = luaL_optinteger(L, 2, 1);
    luaL_argcheck(L, n >= 1 && n <= 65536, 2, "fetch limit must be 1..=65536");
    lua_Integer wait = 0;
    if (!lua_isnoneornil(L, 3)) {
        if (lua_type(L, 3) != LUA_TTABLE) {
            return luaL_error(L,
                              "consumer:fetch: argument #2 (options) must be "
                              "a table, not %s",
                              luaL_typename(L, 3));
        }
        lua_getfield(L, 3, "wait");
        int ok = 1;
        wait = lua_isnil(L, -1) ? 0 : lua_tointegerx(L, -1, &ok);
        if (!ok || wait < 0 || wait > FETCH_WAIT_MAX_MS) {
            return luaL_error(L, "consumer:fetch: wait must be an integer in "
                                 "0..=120000 (milliseconds)");
        }
        lua_pop(L, 1);
    }
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "consumer:fetch " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    if (wait > 0 && (L != vm->cur_co || !lua_isyieldable(L))) {
        return luaL_error(L, "consumer:fetch: a waiting fetch must be called "
                             "from the callback itself (not from a coroutine "
                             "it created, a metamethod or a C function)");
    }
    if (wait > 0 && vm->n_requests >= RIFT_LUA_MAX_BINDINGS) {
        return luaL_error(L,
                          "consumer:fetch: at most %d pending requests and "
                          "waiting fetches per plugin",
                          RIFT_LUA_MAX_BINDINGS);
    }
    lua_settop(L, 1);
    lua_pushinteger(L, n);
    lua_pushinteger(
        L, wait > 0 ? (lua_Integer)(rift_now_ns() + (uint64_t)wait * 1000000u)
                    : 0);
    return fetch_step(L);
}

void rift_lua_open_fetch(lua_State *L) {
    luaL_newmetatable(L, BATCH_MT);
    lua_pushcfunction(L, batch_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
}
