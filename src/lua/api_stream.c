/*
 * api_stream.c — durable streams for plugins (lua layer): rift.stream(name)
 * with :publish and :info, and rift.consumer(stream, name, config) with
 * :ack, :nak, :term, :in_progress, :info, :delete and :close (its :fetch
 * is api_fetch.c), over the store of include/rift/stream.h. The streams
 * are riftd's one namespace (configured, run-time, NATS Streaming
 * channels), found through the host's stream_acquire callback. Run-time
 * streams and channels can be deleted or replaced at any time, so a
 * handle keeps only names: every operation looks its stream up again,
 * pins it, operates and releases it (a waiting fetch keeps the pin while
 * it waits). A stream gone meanwhile makes the next call raise "<method>:
 * unknown stream". config.start takes the CLI's spellings
 * (rift_consumer_start_parse), and reopening follows the wire's resume
 * rule: the start is ignored, every other setting must be equal, and the
 * one that differs is named.
 *
 * Between a pin and its release nothing may raise (a Lua error would leak
 * the pin): what a method needs from Lua is read or allocated first, the
 * store is called, the pin dropped, and only then are results built or
 * errors raised.
 *
 * The store calls block until the operation is durable (group-committed
 * fdatasync with sync_on_write): they hold the worker running the plugin,
 * never the QUIC loop or other plugins. Stream publications count against
 * the callback's publication budget. A restricted plugin needs a publish
 * grant for stream publications, a subscribe grant covering its consumer
 * filter, and its consumer names are scoped like a remote principal's
 * (§3.5) but by "plugin:<name>", so it can only reach its own consumers —
 * never those of a principal that happens to share its name.
 */
#include "lua/host_internal.h"

#include "rift/stream.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#define STREAM_MT   "rift.stream"
#define CONSUMER_MT "rift.consumer"
#define HOLD_MT     "rift.consumer_hold"

/* A stream handle: its name is user value 1. */
typedef struct stream_ud {
    char unused;
} stream_ud;

/* A consumer handle. User values: 1 the name the plugin gave (info()
 * shows it), 2 the stream's name, 3 the store's name (scoped for a
 * restricted plugin). */
typedef struct consumer_ud {
    bool closed;
} consumer_ud;

/* ---- Pins ---- */

bool rift_lua_stream_pin(rift_lua_vm *vm, const char *name, rift_lua_pin *pin) {
    const rift_plugin_host_settings *hs = &vm->host->settings;
    *pin = (rift_lua_pin){NULL, NULL};
    if (hs->stream_acquire != NULL) {
        pin->stream = hs->stream_acquire(hs->stream_ud, name, &pin->token);
    } else if (hs->stream_lookup != NULL) {
        pin->stream = hs->stream_lookup(hs->stream_ud, name);
    }
    return pin->stream != NULL;
}

void rift_lua_stream_unpin(rift_lua_vm *vm, rift_lua_pin *pin, bool appended) {
    const rift_plugin_host_settings *hs = &vm->host->settings;
    if (pin->stream != NULL && hs->stream_acquire != NULL &&
        hs->stream_release != NULL) {
        hs->stream_release(hs->stream_ud, pin->token, appended);
    }
    *pin = (rift_lua_pin){NULL, NULL};
}

/* ---- rift.stream(name) and its methods ---- */

/* The name of the stream handle at argument 1, anchored by the handle. */
static const char *stream_name(lua_State *L) {
    luaL_checkudata(L, 1, STREAM_MT);
    lua_getiuservalue(L, 1, 1);
    const char *name = lua_tostring(L, -1);
    lua_pop(L, 1);
    return name;
}

/* rift.stream(name) → stream [-0, +1, e] */
static int l_stream(lua_State *L) {
    luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_newuserdatauv(L, sizeof(stream_ud), 1);
    luaL_setmetatable(L, STREAM_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    rift_lua_pin pin;
    bool found = rift_lua_stream_pin(vm, lua_tostring(L, 1), &pin);
    rift_lua_stream_unpin(vm, &pin, false);
    if (!found) {
        return luaL_error(L, "rift.stream: unknown stream");
    }
    return 1;
}

/* stream:publish(subject, payload [, reply]) → {sequence=, timestamp_ms=}
 * [-0, +1, e] */
static int l_stream_publish(lua_State *L) {
    const char *name = stream_name(L);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    size_t slen, plen, rlen = 0;
    const char *subject = luaL_checklstring(L, 2, &slen);
    const char *payload = luaL_checklstring(L, 3, &plen);
    const char *reply = luaL_optlstring(L, 4, NULL, &rlen);
    if (!vm->runtime) {
        return luaL_error(L, "stream:publish " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    vm->pub_count++;
    vm->pub_bytes += RIFT_MIN(plen, (size_t)RIFT_LUA_PUBLISH_MAX_BYTES + 1);
    if (vm->pub_count > RIFT_LUA_PUBLISH_MAX_MSGS ||
        vm->pub_bytes > RIFT_LUA_PUBLISH_MAX_BYTES) {
        return luaL_error(L, RIFT_LUA_TEXT_BUDGET);
    }
    rift_error err;
    const rift_lua_conf *p = vm->conf;
    if (p->restricted && rift_identity_can_publish(&p->identity, subject, slen,
                                                   reply, rlen, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    rift_lua_pin pin;
    if (!rift_lua_stream_pin(vm, name, &pin)) {
        return luaL_error(L, "stream:publish: unknown stream");
    }
    rift_stored st;
    int rc = rift_stream_publish(pin.stream, subject, slen, reply, rlen,
                                 (const uint8_t *)payload, plen, &st, &err);
    rift_lua_stream_unpin(vm, &pin, rc == 0);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)st.sequence);
    lua_setfield(L, -2, "sequence");
    lua_pushinteger(L, (lua_Integer)st.timestamp_ms);
    lua_setfield(L, -2, "timestamp_ms");
    return 1;
}

/* stream:info() → {messages=, bytes=, first_sequence=, last_sequence=,
 * consumers=} [-0, +1, e] */
static int l_stream_info(lua_State *L) {
    const char *name = stream_name(L);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    rift_lua_pin pin;
    if (!rift_lua_stream_pin(vm, name, &pin)) {
        return luaL_error(L, "stream:info: unknown stream");
    }
    rift_stream_info info;
    rift_error err;
    int rc = rift_stream_get_info(pin.stream, &info, &err);
    /* Copy what Lua needs, release, then build (which may raise). */
    uint64_t v[5] = {0};
    if (rc == 0) {
        v[0] = info.messages;
        v[1] = info.bytes;
        v[2] = info.first_sequence;
        v[3] = info.last_sequence;
        v[4] = info.consumer_count;
        rift_stream_info_free(&info);
    }
    rift_lua_stream_unpin(vm, &pin, false);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    static const char *const keys[] = {"messages", "bytes", "first_sequence",
                                       "last_sequence", "consumers"};
    lua_createtable(L, 0, 5);
    for (size_t i = 0; i < RIFT_ARRAY_LEN(keys); i++) {
        lua_pushinteger(L, (lua_Integer)v[i]);
        lua_setfield(L, -2, keys[i]);
    }
    return 1;
}

/* ---- rift.consumer(stream, name [, config]) and its methods ---- */

static int hold_gc(lua_State *L) {
    rift_consumer **box = lua_touserdata(L, 1);
    rift_consumer_close(*box);
    *box = NULL;
    return 0;
}

void rift_lua_consumer_prepare(lua_State *L, rift_lua_consumer_op *op) {
    consumer_ud *u = luaL_checkudata(L, 1, CONSUMER_MT);
    if (u->closed) {
        luaL_error(L, "consumer is closed");
    }
    luaL_checkstack(L, 4, NULL);
    lua_getiuservalue(L, 1, 2);
    op->stream_name = lua_tostring(L, -1);
    lua_getiuservalue(L, 1, 3);
    op->name = lua_tolstring(L, -1, &op->name_len);
    lua_pop(L, 2); /* both stay anchored by the handle */
    op->box = lua_newuserdatauv(L, sizeof(*op->box), 0);
    *op->box = NULL;
    luaL_setmetatable(L, HOLD_MT);
    op->pin = (rift_lua_pin){NULL, NULL};
}

void rift_lua_consumer_begin(lua_State *L, rift_lua_consumer_op *op,
                             const char *fn) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!rift_lua_stream_pin(vm, op->stream_name, &op->pin)) {
        luaL_error(L, "%s: unknown stream", fn);
    }
    rift_error err;
    if (rift_stream_consumer_get(op->pin.stream, op->name, op->name_len,
                                 op->box, &err) != 0) {
        rift_lua_stream_unpin(vm, &op->pin, false);
        luaL_error(L, "%s", err.text);
    }
}

void rift_lua_consumer_end(lua_State *L, rift_lua_consumer_op *op) {
    rift_lua_stream_unpin(rift_lua_vm_of(L), &op->pin, false);
}

/* Closes the boxed store handle now (rather than at collection). */
static void op_close(rift_lua_consumer_op *op) {
    rift_consumer_close(*op->box);
    *op->box = NULL;
}

/* Reads an optional non-negative integer field of the table at |t|. */
static uint64_t opt_u64(lua_State *L, int t, const char *key, uint64_t def,
                        uint64_t max) {
    lua_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return def;
    }
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok || v < 0 || (uint64_t)v > max) {
        /* lua_pushfstring knows no %llu: format the bound first. */
        char text[160];
        snprintf(text, sizeof(text),
                 "rift.consumer: config.%s must be an integer in 0..=%llu", key,
                 (unsigned long long)max);
        luaL_error(L, "%s", text);
    }
    lua_pop(L, 1);
    return (uint64_t)v;
}

/* config.start at the top of the stack, in the CLI's spelling (the
 * store reads it: rift_consumer_start_parse); raises naming the function
 * and the field. */
static void check_start(lua_State *L, rift_consumer_config *cfg) {
    rift_error err;
    size_t len = 0;
    const char *v =
        lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (v == NULL) {
        luaL_error(L, "rift.consumer: config.start must be a string, not %s",
                   luaL_typename(L, -1));
    }
    if (rift_consumer_start_parse(v, len, cfg, &err) != 0) {
        luaL_error(L, "rift.consumer: config.start %s (got \"%s\")", err.text,
                   v);
    }
}

/* The first API's separate start fields are gone: one spelling. */
static void refuse_old_start_keys(lua_State *L, int t) {
    static const char *const keys[] = {"start_sequence", "start_time_ms",
                                       "since_ms"};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(keys); i++) {
        if (lua_getfield(L, t, keys[i]) != LUA_TNIL) {
            luaL_error(L,
                       "rift.consumer: config.%s is not a setting; the start "
                       "is one string: start = \"seq:N\", \"time:T\" or "
                       "\"since:D\"",
                       keys[i]);
        }
        lua_pop(L, 1);
    }
}

/* Opens |name| on |s| with the wire's resume rule (E.3): an existing
 * consumer keeps its start (the asked one is ignored) and every other
 * setting must be equal, the first differing one named. */
static int open_resume(rift_stream *s, const char *name, size_t nlen,
                       rift_consumer_config *cfg, rift_consumer **out,
                       rift_error *err) {
    rift_consumer *old = NULL;
    if (rift_stream_consumer_get(s, name, nlen, &old, NULL) == 0) {
        rift_consumer_info info;
        int rc = rift_consumer_get_info(old, &info, err);
        const char *field =
            rc == 0 ? rift_consumer_config_diff(&info.config, cfg, false)
                    : NULL;
        if (rc == 0 && field != NULL) {
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "invalid messaging configuration: consumer "
                                "already exists with different %s",
                                field);
        }
        if (rc != 0) {
            rift_consumer_close(old);
            return rc;
        }
        cfg->start = info.config.start;
        cfg->start_sequence = info.config.start_sequence;
        cfg->start_time_ms = info.config.start_time_ms;
    }
    int rc = rift_stream_consumer_open(s, name, nlen, cfg, out, err);
    rift_consumer_close(old); /* its filter was borrowed until the open */
    return rc;
}

/* rift.consumer(stream, name [, {filter=, start=, ack_wait_ms=,
 * max_ack_pending=, max_deliver=}]) → consumer [-0, +1, e] */
static int l_consumer(lua_State *L) {
    luaL_checkstring(L, 1);
    size_t nlen, flen = 0;
    if (lua_type(L, 2) != LUA_TSTRING) {
        return luaL_error(L,
                          "rift.consumer: argument #2 (name) must be a "
                          "string, not %s",
                          luaL_typename(L, 2));
    }
    const char *name = lua_tolstring(L, 2, &nlen);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    const rift_lua_conf *p = vm->conf;
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    if (!lua_isnoneornil(L, 3)) {
        if (lua_type(L, 3) != LUA_TTABLE) {
            return luaL_error(L,
                              "rift.consumer: argument #3 (config) must be "
                              "a table, not %s",
                              luaL_typename(L, 3));
        }
        lua_getfield(L, 3, "filter");
        if (!lua_isnil(L, -1)) {
            if (lua_type(L, -1) != LUA_TSTRING) {
                return luaL_error(L,
                                  "rift.consumer: config.filter must be a "
                                  "string, not %s",
                                  luaL_typename(L, -1));
            }
            /* Anchored on the stack until we return. */
            cfg.filter = lua_tolstring(L, -1, &flen);
            cfg.filter_len = flen;
        }
        lua_getfield(L, 3, "start");
        if (!lua_isnil(L, -1)) {
            check_start(L, &cfg);
        }
        lua_pop(L, 1);
        refuse_old_start_keys(L, 3);
        cfg.ack_wait_ms =
            opt_u64(L, 3, "ack_wait_ms", cfg.ack_wait_ms, UINT64_MAX >> 1);
        cfg.max_ack_pending = (uint32_t)opt_u64(
            L, 3, "max_ack_pending", cfg.max_ack_pending, UINT32_MAX);
        cfg.max_deliver =
            (uint32_t)opt_u64(L, 3, "max_deliver", cfg.max_deliver, UINT32_MAX);
    }
    rift_error err;
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
    if (p->restricted) {
        const char *filter = cfg.filter != NULL ? cfg.filter : ">";
        size_t len = cfg.filter != NULL ? cfg.filter_len : 1;
        if (rift_identity_can_subscribe(&p->identity, filter, len, &err) != 0 ||
            rift_plugin_consumer_name(p->identity.name, p->identity.name_len,
                                      name, nlen, scoped, &err) != 0) {
            return luaL_error(L, "%s", err.text);
        }
        name = scoped;
        nlen = RIFT_SCOPED_CONSUMER_LEN;
    }
    /* The handle is made (allocations that may raise) before the stream
     * is pinned; it holds names only. */
    const char *stream = lua_tostring(L, 1);
    consumer_ud *u = lua_newuserdatauv(L, sizeof(*u), 3);
    u->closed = false;
    luaL_setmetatable(L, CONSUMER_MT);
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 2);
    lua_pushlstring(L, name, nlen);
    lua_setiuservalue(L, -2, 3);
    rift_lua_pin pin;
    if (!rift_lua_stream_pin(vm, stream, &pin)) {
        return luaL_error(L, "rift.consumer: unknown stream");
    }
    rift_consumer *c = NULL;
    int rc = open_resume(pin.stream, name, nlen, &cfg, &c, &err);
    rift_consumer_close(c);
    rift_lua_stream_unpin(vm, &pin, false);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    return 1;
}

/* consumer:ack(sequence), consumer:nak(sequence [, delay_ms]),
 * consumer:term(sequence), consumer:in_progress(sequence) → true
 * [-0, +1, e]; |what| is the method. */
static int settle(lua_State *L, const char *what) {
    rift_lua_consumer_op op;
    lua_settop(L, 3); /* the box goes above the arguments */
    rift_lua_consumer_prepare(L, &op);
    lua_Integer seq = luaL_checkinteger(L, 2);
    lua_Integer delay = what[0] == 'n' ? luaL_optinteger(L, 3, 0) : 0;
    rift_lua_vm *vm = rift_lua_vm_of(L);
    char fn[32];
    snprintf(fn, sizeof(fn), "consumer:%s", what);
    if (!vm->runtime) {
        return luaL_error(L, "%s " RIFT_LUA_TEXT_NOT_RUNTIME, fn);
    }
    if (what[0] == 'n' &&
        (delay < 0 || delay > (lua_Integer)RIFT_CONSUMER_MAX_NAK_DELAY_MS)) {
        return luaL_error(L, "nak delay must be 0..3600000 ms");
    }
    if (seq < 1) {
        return luaL_error(L, "sequence is not pending acknowledgement");
    }
    rift_lua_consumer_begin(L, &op, fn);
    rift_consumer *c = *op.box;
    rift_error err;
    int rc = what[0] == 'a' ? rift_consumer_ack(c, (uint64_t)seq, &err)
             : what[0] == 'n'
                 ? rift_consumer_nak(c, (uint64_t)seq, (uint64_t)delay, &err)
             : what[0] == 't'
                 ? rift_consumer_term(c, (uint64_t)seq, &err)
                 : rift_consumer_in_progress(c, (uint64_t)seq, &err);
    op_close(&op);
    rift_lua_consumer_end(L, &op);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_ack(lua_State *L) {
    return settle(L, "ack");
}

static int l_nak(lua_State *L) {
    return settle(L, "nak");
}

static int l_term(lua_State *L) {
    return settle(L, "term");
}

static int l_in_progress(lua_State *L) {
    return settle(L, "in_progress");
}

/* consumer:info() → {name=, filter=, start=, ack_wait_ms=,
 * max_ack_pending=, max_deliver=, start_sequence=, next_sequence=,
 * pending=, terminated=, max_delivered=} [-0, +1, e] */
static int l_consumer_info(lua_State *L) {
    rift_lua_consumer_op op;
    lua_settop(L, 1);
    rift_lua_consumer_prepare(L, &op);
    rift_lua_consumer_begin(L, &op, "consumer:info");
    rift_consumer_info info;
    rift_error err;
    int rc = rift_consumer_get_info(*op.box, &info, &err);
    /* The boxed handle keeps info's filter valid past the unpin. */
    rift_lua_consumer_end(L, &op);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    /* Copied before building the table (which may raise). */
    char start[RIFT_CONSUMER_START_TEXT];
    rift_consumer_start_format(&info.config, start, sizeof(start));
    const rift_consumer_config cfg = info.config;
    const uint64_t v[] = {cfg.ack_wait_ms,    cfg.max_ack_pending,
                          cfg.max_deliver,    info.start_sequence,
                          info.next_sequence, info.pending,
                          info.terminated,    info.max_delivered};
    static const char *const keys[] = {
        "ack_wait_ms",   "max_ack_pending", "max_deliver", "start_sequence",
        "next_sequence", "pending",         "terminated",  "max_delivered"};
    lua_createtable(L, 0, 11);
    lua_getiuservalue(L, 1, 1);
    lua_setfield(L, -2, "name");
    if (cfg.filter != NULL && cfg.filter_len > 0) {
        lua_pushlstring(L, cfg.filter, cfg.filter_len);
    } else {
        lua_pushliteral(L, ">");
    }
    lua_setfield(L, -2, "filter");
    lua_pushstring(L, start);
    lua_setfield(L, -2, "start");
    for (size_t i = 0; i < RIFT_ARRAY_LEN(keys); i++) {
        lua_pushinteger(L, (lua_Integer)v[i]);
        lua_setfield(L, -2, keys[i]);
    }
    op_close(&op);
    return 1;
}

/* consumer:delete() removes the consumer and its durable state (a later
 * rift.consumer creates a fresh one) and closes the handle → true. Only
 * the plugin's own consumer can be reached: the handle came from
 * rift.consumer, scoped for a restricted plugin. [-0, +1, e] */
static int l_consumer_delete(lua_State *L) {
    rift_lua_consumer_op op;
    lua_settop(L, 1);
    rift_lua_consumer_prepare(L, &op);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "consumer:delete " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    consumer_ud *u = lua_touserdata(L, 1);
    u->closed = true; /* the handle goes first, whatever the store says */
    if (!rift_lua_stream_pin(vm, op.stream_name, &op.pin)) {
        return luaL_error(L, "consumer:delete: unknown stream");
    }
    rift_error err;
    int rc =
        rift_stream_consumer_delete(op.pin.stream, op.name, op.name_len, &err);
    rift_lua_consumer_end(L, &op);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* consumer:close() marks the handle closed (the consumer's durable state
 * stays); it holds no store resource between calls. [-0, +0, -] */
static int l_consumer_close(lua_State *L) {
    consumer_ud *u = luaL_checkudata(L, 1, CONSUMER_MT);
    u->closed = true;
    return 0;
}

static void new_class(lua_State *L, const char *name, const luaL_Reg *methods,
                      lua_CFunction gc) {
    luaL_newmetatable(L, name);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    if (gc != NULL) {
        lua_pushcfunction(L, gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pushliteral(L, "protected");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
}

void rift_lua_open_streams(lua_State *L, rift_lua_vm *vm) {
    (void)vm;
    static const luaL_Reg stream_methods[] = {
        {"publish", l_stream_publish},
        {"info", l_stream_info},
        {NULL, NULL},
    };
    static const luaL_Reg consumer_methods[] = {
        {"fetch", rift_lua_consumer_fetch},
        {"ack", l_ack},
        {"nak", l_nak},
        {"term", l_term},
        {"in_progress", l_in_progress},
        {"info", l_consumer_info},
        {"delete", l_consumer_delete},
        {"close", l_consumer_close},
        {NULL, NULL},
    };
    new_class(L, STREAM_MT, stream_methods, NULL);
    new_class(L, CONSUMER_MT, consumer_methods, NULL);
    luaL_newmetatable(L, HOLD_MT);
    lua_pushcfunction(L, hold_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    rift_lua_open_fetch(L);
    lua_pushcfunction(L, l_stream);
    lua_setfield(L, -2, "stream");
    lua_pushcfunction(L, l_consumer);
    lua_setfield(L, -2, "consumer");
}
