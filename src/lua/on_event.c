/*
 * on_event.c — the rule of rift.on(event, fn) (lua layer). See on_event.h.
 */
#include "lua/on_event.h"

#include <lauxlib.h>
#include <string.h>

void rift_lua_check_on_event(lua_State *L) {
    size_t len;
    const char *event = luaL_checklstring(L, 1, &len);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (len != 7 || memcmp(event, "message", 7) != 0) {
        luaL_error(L,
                   "rift.on: unknown event \"%s\" (riftd supports "
                   "\"message\")",
                   event);
    }
}
