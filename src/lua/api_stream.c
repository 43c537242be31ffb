/*
 * api_stream.c — durable streams for plugins (lua layer): rift.stream(name)
 * with :publish and :info, and rift.consumer(stream, name, config) with
 * :fetch, :ack, :nak, :term, :in_progress and :info, over the store of
 * include/rift/stream.h. The streams are riftd's configured ones, found through
 * the host's lookup callback.
 *
 * The store calls block until the operation is durable (group-committed
 * fdatasync with sync_on_write): they hold the worker running the plugin,
 * never the QUIC loop or other plugins. Stream publications count against
 * the callback's publication budget. A restricted plugin needs a publish
 * grant for stream publications, a subscribe grant covering its consumer
 * filter, and its consumer names are scoped like a remote principal's
 * (§3.5) but by "plugin:<name>", so it can only reach its own consumers —
 * never those of a principal that happens to share its name.
 *
 * Batches returned by fetch are boxed in a userdata with a finalizer while
 * they are turned into Lua tables, so a memory error leaks nothing.
 */
#include "lua/host_internal.h"

#include "rift/stream.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#define STREAM_MT   "rift.stream"
#define CONSUMER_MT "rift.consumer"
#define BATCH_MT    "rift.batch"

typedef struct stream_ud {
    rift_stream *stream;
} stream_ud;

typedef struct consumer_ud {
    rift_consumer *consumer;
} consumer_ud;

/* ---- Lookup ---- */

static rift_stream *lookup(lua_State *L, const char *fn, int idx) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    const char *name = luaL_checkstring(L, idx);
    rift_plugin_host *h = vm->host;
    rift_stream *s =
        h->settings.stream_lookup != NULL
            ? h->settings.stream_lookup(h->settings.stream_ud, name)
            : NULL;
    if (s == NULL) {
        luaL_error(L, "%s: unknown stream", fn);
    }
    return s;
}

/* ---- rift.stream(name) and its methods ---- */

/* rift.stream(name) → stream [-0, +1, e] */
static int l_stream(lua_State *L) {
    rift_stream *s = lookup(L, "rift.stream", 1);
    stream_ud *u = lua_newuserdatauv(L, sizeof(*u), 1);
    u->stream = s;
    luaL_setmetatable(L, STREAM_MT);
    return 1;
}

/* stream:publish(subject, payload [, reply]) → {sequence=, timestamp_ms=}
 * [-0, +1, e] */
static int l_stream_publish(lua_State *L) {
    stream_ud *u = luaL_checkudata(L, 1, STREAM_MT);
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
    rift_stored st;
    if (rift_stream_publish(u->stream, subject, slen, reply, rlen,
                            (const uint8_t *)payload, plen, &st, &err) != 0) {
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
    stream_ud *u = luaL_checkudata(L, 1, STREAM_MT);
    rift_stream_info info;
    rift_error err;
    if (rift_stream_get_info(u->stream, &info, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    /* Copy what Lua needs, release, then build (which may raise). */
    uint64_t v[5] = {info.messages, info.bytes, info.first_sequence,
                     info.last_sequence, info.consumer_count};
    rift_stream_info_free(&info);
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

static int consumer_gc(lua_State *L) {
    consumer_ud *u = luaL_checkudata(L, 1, CONSUMER_MT);
    rift_consumer_close(u->consumer);
    u->consumer = NULL;
    return 0;
}

static rift_consumer *check_consumer(lua_State *L) {
    consumer_ud *u = luaL_checkudata(L, 1, CONSUMER_MT);
    if (u->consumer == NULL) {
        luaL_error(L, "consumer is closed");
    }
    return u->consumer;
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

/* The start positions by the names the CLI and the control commands
 * use; the second column holds the names the Lua API had first, still
 * accepted. Indexed by rift_consumer_start. */
static const char *const start_names[][2] = {
    [RIFT_START_SEQUENCE] = {"sequence", NULL},
    [RIFT_START_FIRST] = {"first", NULL},
    [RIFT_START_LAST_RECEIVED] = {"last", "last_received"},
    [RIFT_START_NEW_ONLY] = {"new", "new_only"},
    [RIFT_START_TIME] = {"time", NULL},
    [RIFT_START_TIME_DELTA] = {"since", "time_delta"},
};

/* config.start at the top of the stack; raises naming the function, the
 * field and the accepted names (luaL_checkoption would say "bad argument
 * #5 to '?'": the value is no argument of the call). */
static rift_consumer_start check_start(lua_State *L) {
    const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    for (size_t i = 0; v != NULL && i < RIFT_ARRAY_LEN(start_names); i++) {
        if (strcmp(v, start_names[i][0]) == 0 ||
            (start_names[i][1] != NULL && strcmp(v, start_names[i][1]) == 0)) {
            return (rift_consumer_start)i;
        }
    }
    luaL_error(L,
               "rift.consumer: config.start must be one of \"sequence\", "
               "\"first\", \"last\", \"new\", \"time\" or \"since\" "
               "(got %s%s%s)",
               v ? "\"" : "", v ? v : luaL_typename(L, -1), v ? "\"" : "");
    return RIFT_START_SEQUENCE;
}

/* rift.consumer(stream, name [, {filter=, start=, start_sequence=,
 * start_time_ms=, since_ms=, ack_wait_ms=, max_ack_pending=,
 * max_deliver=}]) → consumer
 * [-0, +1, e] */
static int l_consumer(lua_State *L) {
    rift_stream *s = lookup(L, "rift.consumer", 1);
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
            cfg.start = check_start(L);
        }
        lua_pop(L, 1);
        cfg.start_sequence = opt_u64(L, 3, "start_sequence", cfg.start_sequence,
                                     UINT64_MAX >> 1);
        cfg.start_time_ms =
            opt_u64(L, 3, "start_time_ms", cfg.start_time_ms, UINT64_MAX >> 1);
        /* "since" counts back since_ms, the control commands' name; the
         * first API read start_time_ms for it, which still works. */
        cfg.start_time_ms =
            opt_u64(L, 3, "since_ms", cfg.start_time_ms, UINT64_MAX >> 1);
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
    /* The handle exists before the consumer: a memory error here leaks
     * nothing, and once set the finalizer owns it. */
    consumer_ud *u = lua_newuserdatauv(L, sizeof(*u), 0);
    u->consumer = NULL;
    luaL_setmetatable(L, CONSUMER_MT);
    if (rift_stream_consumer_open(s, name, nlen, &cfg, &u->consumer, &err) !=
        0) {
        return luaL_error(L, "%s", err.text);
    }
    return 1;
}

static int batch_gc(lua_State *L) {
    rift_batch *b = lua_touserdata(L, 1);
    rift_batch_free(b);
    return 0;
}

/* consumer:fetch([n]) → { {sequence=, subject=, payload=, reply=,
 * timestamp_ms=, delivery_count=}, ... } (n: 1..=65536, default 1)
 * [-0, +1, e] */
static int l_fetch(lua_State *L) {
    rift_consumer *c = check_consumer(L);
    lua_Integer n = luaL_optinteger(L, 2, 1);
    luaL_argcheck(L, n >= 1 && n <= 65536, 2, "fetch limit must be 1..=65536");
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "consumer:fetch " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    rift_batch *b = lua_newuserdatauv(L, sizeof(*b), 0);
    memset(b, 0, sizeof(*b));
    luaL_setmetatable(L, BATCH_MT);
    rift_error err;
    if (rift_consumer_fetch(c, (size_t)n, b, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    const rift_lua_conf *p = vm->conf;
    lua_createtable(L, (int)b->count, 0);
    for (size_t i = 0; i < b->count; i++) {
        const rift_delivery *d = &b->items[i];
        const rift_record *r = &d->record;
        if (p->restricted &&
            rift_identity_can_subscribe(&p->identity, r->subject,
                                        r->subject_len, &err) != 0) {
            /* §3.4: each fetched record's subject is checked too. */
            return luaL_error(L, "%s", err.text);
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
    return 1;
}

/* consumer:ack(sequence) → true [-0, +1, e] */
static int l_ack(lua_State *L) {
    rift_consumer *c = check_consumer(L);
    lua_Integer seq = luaL_checkinteger(L, 2);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "consumer:ack " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    rift_error err;
    if (seq < 1) {
        return luaL_error(L, "sequence is not pending acknowledgement");
    }
    if (rift_consumer_ack(c, (uint64_t)seq, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* consumer:nak(sequence [, delay_ms]), consumer:term(sequence),
 * consumer:in_progress(sequence) → true [-0, +1, e]; |what| is the
 * method. */
static int settle(lua_State *L, const char *what) {
    rift_consumer *c = check_consumer(L);
    lua_Integer seq = luaL_checkinteger(L, 2);
    lua_Integer delay = luaL_optinteger(L, 3, 0);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "consumer:%s " RIFT_LUA_TEXT_NOT_RUNTIME, what);
    }
    if (what[0] == 'n' &&
        (delay < 0 || delay > (lua_Integer)RIFT_CONSUMER_MAX_NAK_DELAY_MS)) {
        return luaL_error(L, "nak delay must be 0..3600000 ms");
    }
    if (seq < 1) {
        return luaL_error(L, "sequence is not pending acknowledgement");
    }
    rift_error err;
    int rc = what[0] == 'n'
                 ? rift_consumer_nak(c, (uint64_t)seq, (uint64_t)delay, &err)
             : what[0] == 't'
                 ? rift_consumer_term(c, (uint64_t)seq, &err)
                 : rift_consumer_in_progress(c, (uint64_t)seq, &err);
    if (rc != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_pushboolean(L, 1);
    return 1;
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

/* consumer:info() → {pending=, next_sequence=, start_sequence=,
 * terminated=, max_delivered=} [-0, +1, e] */
static int l_consumer_info(lua_State *L) {
    rift_consumer *c = check_consumer(L);
    rift_consumer_info info;
    rift_error err;
    if (rift_consumer_get_info(c, &info, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, (lua_Integer)info.terminated);
    lua_setfield(L, -2, "terminated");
    lua_pushinteger(L, (lua_Integer)info.max_delivered);
    lua_setfield(L, -2, "max_delivered");
    lua_pushinteger(L, (lua_Integer)info.pending);
    lua_setfield(L, -2, "pending");
    lua_pushinteger(L, (lua_Integer)info.next_sequence);
    lua_setfield(L, -2, "next_sequence");
    lua_pushinteger(L, (lua_Integer)info.start_sequence);
    lua_setfield(L, -2, "start_sequence");
    return 1;
}

/* consumer:close() releases the handle now (the consumer's durable state
 * stays); the collector would do it eventually. [-0, +0, -] */
static int l_consumer_close(lua_State *L) {
    return consumer_gc(L);
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
        {"fetch", l_fetch},
        {"ack", l_ack},
        {"info", l_consumer_info},
        {"close", l_consumer_close},
        {"nak", l_nak},
        {"term", l_term},
        {"in_progress", l_in_progress},
        {NULL, NULL},
    };
    new_class(L, STREAM_MT, stream_methods, NULL);
    new_class(L, CONSUMER_MT, consumer_methods, consumer_gc);
    luaL_newmetatable(L, BATCH_MT);
    lua_pushcfunction(L, batch_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_pushcfunction(L, l_stream);
    lua_setfield(L, -2, "stream");
    lua_pushcfunction(L, l_consumer);
    lua_setfield(L, -2, "consumer");
}
