/*
 * json.c — rift.json for plugins (lua layer): encode(value) → string and
 * decode(string) → value | nil, error, with rift.json.null standing for
 * JSON null.
 *
 * The encoder writes into a buffer allocated through the state's own
 * lua_Alloc (so it counts against the plugin's memory cap) and owned by a
 * userdata whose finalizer frees it if an error unwinds the encoder. The
 * decoder parses with jansson; the parsed tree is held by a userdata with
 * a finalizer for the same reason while it is converted to Lua values.
 */
#include "lua/host_internal.h"

#include <jansson.h>
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 128
#define BUF_MT         "rift.json.buffer"
#define TREE_MT        "rift.json.tree"

/* The address of this byte is rift.json.null. */
static const char json_null_mark = 0;

/* ---- Encoder ---- */

typedef struct jbuf {
    char *p;
    size_t len, cap;
    lua_Alloc f;
    void *ud;
} jbuf;

static int jbuf_gc(lua_State *L) {
    jbuf *b = lua_touserdata(L, 1);
    if (b->p != NULL) {
        b->f(b->ud, b->p, b->cap, 0);
        b->p = NULL;
    }
    return 0;
}

static void jb_add(lua_State *L, jbuf *b, const char *s, size_t n) {
    if (n > b->cap - b->len) {
        size_t cap = RIFT_MAX(b->cap * 2, RIFT_MAX(b->len + n, (size_t)256));
        char *np = b->f(b->ud, b->p, b->p != NULL ? b->cap : 0, cap);
        if (np == NULL) {
            luaL_error(L, "rift.json.encode: not enough memory");
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void jb_lit(lua_State *L, jbuf *b, const char *s) {
    jb_add(L, b, s, strlen(s));
}

static void encode_string(lua_State *L, jbuf *b, const char *s, size_t len) {
    if (!rift_utf8_valid((const uint8_t *)s, len)) {
        luaL_error(L, "rift.json.encode: strings must be UTF-8");
    }
    jb_add(L, b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(u, sizeof(u), "\\u%04x", c);
                esc = u;
            }
            break;
        }
        if (esc != NULL) {
            jb_add(L, b, s + run, i - run);
            jb_lit(L, b, esc);
            run = i + 1;
        }
    }
    jb_add(L, b, s + run, len - run);
    jb_add(L, b, "\"", 1);
}

typedef struct key_ent {
    const char *s;
    size_t len;
    lua_Integer i;
} key_ent;

static int key_cmp(const void *a, const void *b) {
    const key_ent *x = a, *y = b;
    size_t n = RIFT_MIN(x->len, y->len);
    int c = memcmp(x->s, y->s, n);
    if (c != 0) {
        return c;
    }
    return x->len < y->len ? -1 : x->len > y->len;
}

static void encode(lua_State *L, jbuf *b, int idx, int depth);

/* Encodes the table at |idx|: a sequence 1..n (n > 0) as an array,
 * anything else as an object with string keys in sorted order. */
static void encode_table(lua_State *L, jbuf *b, int idx, int depth) {
    if (depth > JSON_MAX_DEPTH) {
        luaL_error(L,
                   "rift.json.encode: nesting deeper than %d levels (or "
                   "a cycle)",
                   JSON_MAX_DEPTH);
    }
    luaL_checkstack(L, 8, "rift.json.encode: nesting too deep");
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    lua_Integer count = 0;
    bool seq = true, strkeys = true;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        count++;
        if (lua_type(L, -2) == LUA_TSTRING) {
            seq = false;
        } else {
            strkeys = false;
            if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 ||
                lua_tointeger(L, -2) > n) {
                seq = false;
            }
        }
        lua_pop(L, 1);
    }
    if (seq && count == n && n > 0) {
        jb_add(L, b, "[", 1);
        for (lua_Integer i = 1; i <= n; i++) {
            if (i > 1) {
                jb_add(L, b, ",", 1);
            }
            lua_rawgeti(L, idx, i);
            encode(L, b, lua_gettop(L), depth + 1);
            lua_pop(L, 1);
        }
        jb_add(L, b, "]", 1);
        return;
    }
    if (!strkeys) {
        luaL_error(L, "rift.json.encode: tables must be sequences or have "
                      "only string keys");
    }
    /* Keys are anchored by a list table while the sorted index (a
     * userdata, so an error frees it too) points into them. */
    lua_createtable(L, (int)count, 0);
    int keys = lua_gettop(L);
    key_ent *ents = lua_newuserdatauv(L, sizeof(key_ent) * (size_t)count, 0);
    lua_Integer k = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, ++k);
        ents[k - 1].s = lua_tolstring(L, -1, &ents[k - 1].len);
        ents[k - 1].i = k;
    }
    qsort(ents, (size_t)count, sizeof(key_ent), key_cmp);
    jb_add(L, b, "{", 1);
    for (lua_Integer i = 0; i < count; i++) {
        if (i > 0) {
            jb_add(L, b, ",", 1);
        }
        encode_string(L, b, ents[i].s, ents[i].len);
        jb_add(L, b, ":", 1);
        lua_rawgeti(L, keys, ents[i].i);
        lua_rawget(L, idx);
        encode(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    jb_add(L, b, "}", 1);
    lua_pop(L, 2);
}

static void encode(lua_State *L, jbuf *b, int idx, int depth) {
    char num[64];
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        jb_lit(L, b, "null");
        break;
    case LUA_TBOOLEAN:
        jb_lit(L, b, lua_toboolean(L, idx) ? "true" : "false");
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            snprintf(num, sizeof(num), "%lld",
                     (long long)lua_tointeger(L, idx));
        } else {
            double d = (double)lua_tonumber(L, idx);
            if (!isfinite(d)) {
                luaL_error(L, "rift.json.encode: cannot encode NaN or "
                              "infinity");
            }
            /* The shortest of 15 or 17 digits that reads back exactly. */
            snprintf(num, sizeof(num), "%.15g", d);
            if (strtod(num, NULL) != d) {
                snprintf(num, sizeof(num), "%.17g", d);
            }
            /* Keep floats floats across a round trip ("1" would decode as
             * an integer). */
            if (strspn(num, "-0123456789") == strlen(num)) {
                strcat(num, ".0");
            }
        }
        jb_lit(L, b, num);
        break;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        encode_string(L, b, s, len);
        break;
    }
    case LUA_TTABLE:
        encode_table(L, b, idx, depth);
        break;
    default:
        if (lua_type(L, idx) == LUA_TLIGHTUSERDATA &&
            lua_touserdata(L, idx) == &json_null_mark) {
            jb_lit(L, b, "null");
            break;
        }
        luaL_error(L, "rift.json.encode: cannot encode a %s value",
                   luaL_typename(L, idx));
    }
}

/* rift.json.encode(value) → string [-0, +1, e] */
static int l_encode(lua_State *L) {
    luaL_checkany(L, 1);
    lua_settop(L, 1);
    jbuf *b = lua_newuserdatauv(L, sizeof(*b), 0);
    memset(b, 0, sizeof(*b));
    b->f = lua_getallocf(L, &b->ud);
    luaL_setmetatable(L, BUF_MT);
    encode(L, b, 1, 0);
    lua_pushlstring(L, b->p != NULL ? b->p : "", b->len);
    /* Give the memory back now rather than at the next collection. */
    b->f(b->ud, b->p, b->cap, 0);
    b->p = NULL;
    return 1;
}

/* ---- Decoder ---- */

static int tree_gc(lua_State *L) {
    json_t **t = lua_touserdata(L, 1);
    json_decref(*t);
    *t = NULL;
    return 0;
}

static void push_json(lua_State *L, json_t *j) {
    luaL_checkstack(L, 4, "rift.json.decode: nesting too deep");
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        lua_createtable(L, 0, (int)RIFT_MIN(json_object_size(j), 1u << 20));
        const char *key;
        size_t klen;
        json_t *v;
        void *tmp;
        json_object_keylen_foreach_safe(j, tmp, key, klen, v) {
            lua_pushlstring(L, key, klen);
            push_json(L, v);
            lua_rawset(L, -3);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        lua_createtable(L, (int)RIFT_MIN(n, 1u << 20), 0);
        for (size_t i = 0; i < n; i++) {
            push_json(L, json_array_get(j, i));
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(j));
        break;
    case JSON_REAL:
        lua_pushnumber(L, (lua_Number)json_real_value(j));
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    case JSON_NULL:
    default:
        lua_pushlightuserdata(L, (void *)&json_null_mark);
        break;
    }
}

/* rift.json.decode(text) → value, or nil and an error [-0, +(1|2), e] */
static int l_decode(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    json_t **box = lua_newuserdatauv(L, sizeof(*box), 0);
    *box = NULL;
    luaL_setmetatable(L, TREE_MT);
    json_error_t e;
    *box = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (*box == NULL) {
        lua_pushnil(L);
        lua_pushfstring(L, "rift.json.decode: %s at line %d column %d", e.text,
                        e.line, e.column);
        return 2;
    }
    push_json(L, *box);
    json_decref(*box);
    *box = NULL;
    return 1;
}

void rift_lua_open_json(lua_State *L) {
    luaL_newmetatable(L, BUF_MT);
    lua_pushcfunction(L, jbuf_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, TREE_MT);
    lua_pushcfunction(L, tree_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, l_encode);
    lua_setfield(L, -2, "encode");
    lua_pushcfunction(L, l_decode);
    lua_setfield(L, -2, "decode");
    lua_pushlightuserdata(L, (void *)&json_null_mark);
    lua_setfield(L, -2, "null");
}
