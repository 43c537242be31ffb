/*
 * config_fields.c — typed reads of Lua configuration fields with the §5
 * error texts (lua layer; fills the daemon's rift_config). See config_lua.h.
 */
#include "lua/config_lua.h"

#include "common/debug_str.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "<path>.<key>", or "<key>" at the root. */
static void join(char *buf, size_t cap, const char *path, const char *key) {
    if (path[0] == '\0') {
        snprintf(buf, cap, "%s", key);
    } else {
        snprintf(buf, cap, "%s.%s", path, key);
    }
}

char *rift_config_strdup(const char *s, size_t len) {
    return rift_strndup(NULL, s, len);
}

void rift_config_free_strings(char **v, size_t n) {
    if (v == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        rift_free(NULL, v[i]);
    }
    rift_free(NULL, v);
}

int rift_config_push_field(lua_State *L, int idx, const char *key) {
    idx = lua_absindex(L, idx);
    lua_pushstring(L, key);
    return lua_rawget(L, idx);
}

/* ---- Unknown keys ---- */

static bool known(const char *const *keys, const char *s, size_t len) {
    for (size_t i = 0; keys[i] != NULL; i++) {
        if (strlen(keys[i]) == len && memcmp(keys[i], s, len) == 0) {
            return true;
        }
    }
    return false;
}

/* How a non-string key is shown: "[1]", "[2.5]", "[boolean]". */
static void describe_key(lua_State *L, int idx, char *buf, size_t cap) {
    if (lua_isinteger(L, idx)) {
        snprintf(buf, cap, "[%lld]", (long long)lua_tointeger(L, idx));
    } else if (lua_type(L, idx) == LUA_TNUMBER) {
        snprintf(buf, cap, "[%.17g]", (double)lua_tonumber(L, idx));
    } else {
        snprintf(buf, cap, "[%s]", lua_typename(L, lua_type(L, idx)));
    }
}

int rift_config_check_keys(lua_State *L, int idx, const char *path,
                           const char *const *keys, rift_error *err) {
    char worst[192] = "";
    bool found = false, worst_str = false;
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        char name[192];
        bool is_str = lua_type(L, -2) == LUA_TSTRING;
        if (is_str) {
            size_t len;
            const char *s = lua_tolstring(L, -2, &len);
            if (known(keys, s, len)) {
                lua_pop(L, 1);
                continue;
            }
            snprintf(name, sizeof(name), "%.*s", (int)RIFT_MIN(len, 128), s);
        } else {
            describe_key(L, -2, name, sizeof(name));
        }
        if (!found || strcmp(name, worst) < 0) {
            snprintf(worst, sizeof(worst), "%s", name);
            worst_str = is_str;
            found = true;
        }
        lua_pop(L, 1);
    }
    if (!found) {
        return 0;
    }
    char expected[512] = "";
    size_t off = 0;
    for (size_t i = 0; keys[i] != NULL && off < sizeof(expected); i++) {
        int n = snprintf(expected + off, sizeof(expected) - off, "%s%s",
                         i ? ", " : "", keys[i]);
        if (n < 0) {
            break;
        }
        off += (size_t)n;
    }
    char where[RIFT_CONFIG_PATH_MAX + 200];
    if (worst_str) {
        join(where, sizeof(where), path, worst);
    } else {
        snprintf(where, sizeof(where), "%s%s", path, worst);
    }
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "%s: unknown field (expected %s)", where, expected);
}

/* ---- Scalars ---- */

int rift_config_get_int(lua_State *L, int idx, const char *path,
                        const char *key, uint64_t min, uint64_t max, bool ms,
                        uint64_t *out, bool *present, rift_error *err) {
    int t = rift_config_push_field(L, idx, key);
    if (present != NULL) {
        *present = t != LUA_TNIL;
    }
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    int isnum = 0;
    lua_Integer v = 0;
    if (t == LUA_TNUMBER) {
        v = lua_tointegerx(L, -1, &isnum);
    }
    lua_pop(L, 1);
    if (!isnum || v < (lua_Integer)min || (uint64_t)v > max) {
        char where[RIFT_CONFIG_PATH_MAX + 64];
        join(where, sizeof(where), path, key);
        if (ms) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                  "%s: expected 1..=%" PRIu64 " milliseconds",
                                  where, max);
        }
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected an integer in 1..=%" PRIu64, where,
                              max);
    }
    *out = (uint64_t)v;
    return 0;
}

int rift_config_get_bool(lua_State *L, int idx, const char *path,
                         const char *key, bool *out, rift_error *err) {
    int t = rift_config_push_field(L, idx, key);
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (t == LUA_TNIL) {
        return 0;
    }
    if (t != LUA_TBOOLEAN) {
        char where[RIFT_CONFIG_PATH_MAX + 64];
        join(where, sizeof(where), path, key);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a boolean", where);
    }
    *out = v;
    return 0;
}

int rift_config_get_string(lua_State *L, int idx, const char *path,
                           const char *key, char **out, rift_error *err) {
    char where[RIFT_CONFIG_PATH_MAX + 64];
    int t = rift_config_push_field(L, idx, key);
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    join(where, sizeof(where), path, key);
    if (t != LUA_TSTRING) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a string", where);
    }
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (memchr(s, '\0', len) != NULL) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a string without NUL bytes", where);
    }
    rift_free(NULL, *out);
    *out = rift_config_strdup(s, len);
    lua_pop(L, 1);
    if (*out == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* ---- Lists ---- */

int rift_config_list_len(lua_State *L, int idx, const char *path, size_t *n,
                         rift_error *err) {
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a list", path);
    }
    /* Every key must be an integer in 1..count: then the keys are exactly
     * 1..count, because there are count distinct ones. */
    size_t count = 0;
    lua_Integer max = 0;
    bool ok = true;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1) {
            ok = false;
        } else if (lua_tointeger(L, -2) > max) {
            max = lua_tointeger(L, -2);
        }
        count++;
        lua_pop(L, 1);
    }
    if (!ok || (uint64_t)max != count) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a list", path);
    }
    *n = count;
    return 0;
}

int rift_config_pattern_error(rift_error *err, const char *prefix,
                              const char *s, size_t len) {
    /* The pattern is rendered like Rust's {:?} (src/common/debug_str.h),
     * which also keeps the message on one line. The text is cut at
     * RIFT_ERROR_TEXT_MAX anyway, so render at most that much input. */
    char quoted[RIFT_ERROR_TEXT_MAX + 1];
    rift_debug_str(quoted, sizeof(quoted), s,
                   RIFT_MIN(len, (size_t)RIFT_ERROR_TEXT_MAX));
    return rift_error_set(
        err, RIFT_ERR_INVALID_CONFIG,
        "%s: invalid subject pattern %s; use tokens, * or terminal >", prefix,
        quoted);
}

int rift_config_get_patterns(lua_State *L, int idx, const char *path,
                             const char *key, const char *prefix,
                             size_t max_bytes, size_t max_items, char ***out,
                             size_t *n, bool *present, rift_error *err) {
    char where[RIFT_CONFIG_PATH_MAX + 64];
    int rc = 0;
    idx = lua_absindex(L, idx);
    int t = rift_config_push_field(L, idx, key);
    if (present != NULL) {
        *present = t != LUA_TNIL;
    }
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    join(where, sizeof(where), path, key);
    size_t count;
    if ((rc = rift_config_list_len(L, -1, where, &count, err)) != 0) {
        goto out;
    }
    if (max_items != 0 && count > max_items) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "%s: at most %zu patterns are allowed", where,
                            max_items);
        goto out;
    }
    rift_config_free_strings(*out, *n);
    *n = 0;
    *out = rift_calloc(NULL, count ? count : 1, sizeof(char *));
    if (*out == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    *n = count;
    for (size_t i = 0; i < count; i++) {
        lua_rawgeti(L, -1, (lua_Integer)(i + 1));
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "%s: expected a list of strings", where);
            goto out;
        }
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (!rift_config_pattern_valid(s, len, max_bytes)) {
            rc = rift_config_pattern_error(err, prefix, s, len);
            lua_pop(L, 1);
            goto out;
        }
        (*out)[i] = rift_config_strdup(s, len);
        lua_pop(L, 1);
        if ((*out)[i] == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
out:
    lua_pop(L, 1);
    return rc;
}
