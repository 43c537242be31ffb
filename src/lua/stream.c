/*
 * stream.c — rift.stream(name) and rift.consumer(stream, name, cfg) for
 * plugins (lua layer): durable streams and pull consumers of src/store.
 *
 * TODO(issue 7): the durable store (include/rift/stream.h) is not on main
 * yet; until it is, both functions raise "rift.stream: durable streams are
 * not available in this build".
 */
#include "lua/internal.h"

#include <lauxlib.h>

static int l_unavailable(lua_State *L) {
    return luaL_error(L, "%s: durable streams are not available in this build",
                      lua_tostring(L, lua_upvalueindex(1)));
}

void rift_lua_open_streams(lua_State *L, rift_lua_vm *vm) {
    (void)vm;
    lua_pushliteral(L, "rift.stream");
    lua_pushcclosure(L, l_unavailable, 1);
    lua_setfield(L, -2, "stream");
    lua_pushliteral(L, "rift.consumer");
    lua_pushcclosure(L, l_unavailable, 1);
    lua_setfield(L, -2, "consumer");
}
