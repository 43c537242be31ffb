/*
 * on_event.h — the rule of rift.on(event, fn) (lua layer), shared by the
 * configuration file's `rift` table (config_eval.c) and the plugins'
 * (api.c), so both accept and refuse the same calls with the same text.
 */
#ifndef RIFT_LUA_ON_EVENT_H
#define RIFT_LUA_ON_EVENT_H

#include <lua.h>

/*
 * rift_lua_check_on_event checks the arguments of rift.on: argument 1 is
 * the event name, which must be "message" (the only event a standalone
 * broker has), argument 2 a function. Raises a Lua error otherwise.
 * [-0, +0, e]
 */
void rift_lua_check_on_event(lua_State *L);

#endif /* RIFT_LUA_ON_EVENT_H */
