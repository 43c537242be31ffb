/*
 * config_lua.h — internal helpers of the configuration parser (lua
 * layer): typed, raw (metamethod-free) reads of Lua table fields that
 * produce the §5 error texts. Used by config_parse.c and
 * config_messaging.c only.
 *
 * Every helper runs inside the lua_pcall that protects the parse (a Lua
 * memory error may longjmp out of any API call), so each C allocation is
 * stored into the rift_config before the next Lua API call: a longjmp then
 * leaks nothing, because rift_config_free releases whatever was attached.
 *
 * Helpers return 0 or a negative code with |err| filled. A field that is
 * nil counts as absent.
 */
#ifndef RIFT_LUA_CONFIG_LUA_H
#define RIFT_LUA_CONFIG_LUA_H

#include "config/config.h"

#include <lua.h>

/* Longest path prefix used in an error message ("messaging.streams.x"). */
#define RIFT_CONFIG_PATH_MAX 160

/*
 * rift_config_check_keys fails with "<path>.<key>: unknown field (expected
 * a, b, ...)" when the table at |idx| holds a key outside the NULL-ended
 * |keys|. The lexically smallest offending key is named, so the message
 * does not depend on Lua's hash order.
 */
int rift_config_check_keys(lua_State *L, int idx, const char *path,
                           const char *const *keys, rift_error *err);

/* rift_config_push_field pushes t[key] (raw) and returns its Lua type. */
int rift_config_push_field(lua_State *L, int idx, const char *key);

/*
 * rift_config_get_int reads an integral number in |min|..=|max| (|min| is 0
 * or 1). Absent leaves *out untouched and *present false. Other values fail
 * with "<path>.<key>: expected an integer in 1..=<max>", or with
 * "<path>.<key>: expected 1..=<max> milliseconds" when |ms| is set.
 */
int rift_config_get_int(lua_State *L, int idx, const char *path,
                        const char *key, uint64_t min, uint64_t max, bool ms,
                        uint64_t *out, bool *present, rift_error *err);

/* rift_config_get_bool reads a boolean ("<path>.<key>: expected a
 * boolean"); absent leaves *out untouched. */
int rift_config_get_bool(lua_State *L, int idx, const char *path,
                         const char *key, bool *out, rift_error *err);

/*
 * rift_config_get_string copies a string field into *out (freed first if
 * set). Absent leaves *out NULL. Non-strings fail with "<path>.<key>:
 * expected a string"; embedded NUL bytes with "<path>.<key>: expected a
 * string without NUL bytes".
 */
int rift_config_get_string(lua_State *L, int idx, const char *path,
                           const char *key, char **out, rift_error *err);

/*
 * rift_config_list_len checks that the value at |idx| is a sequence (keys
 * exactly 1..n) and stores n. Fails with "<path>: expected a list".
 */
int rift_config_list_len(lua_State *L, int idx, const char *path, size_t *n,
                         rift_error *err);

/*
 * rift_config_get_patterns reads an optional list of subject patterns at
 * t[key] into *out (an array owned by the caller, attached before it is
 * filled). At most |max_items| (0 = unlimited) entries, else "<path>.<key>:
 * at most <max> patterns are allowed". Each must satisfy the config
 * pattern rule with |max_bytes|, else "<prefix>: invalid subject pattern
 * "<p>"; use tokens, * or terminal >". *present tells whether the key was
 * set.
 */
int rift_config_get_patterns(lua_State *L, int idx, const char *path,
                             const char *key, const char *prefix,
                             size_t max_bytes, size_t max_items, char ***out,
                             size_t *n, bool *present, rift_error *err);

/* Formats the pattern error of §5 for |s|, escaped like Rust's Debug. */
int rift_config_pattern_error(rift_error *err, const char *prefix,
                              const char *s, size_t len);

/* rift_config_strdup copies a Lua string; NULL on allocation failure. */
char *rift_config_strdup(const char *s, size_t len);

/* rift_config_free_strings frees an array of |n| strings (some NULL). */
void rift_config_free_strings(char **v, size_t n);

/* Parsers of the two halves of the root table (index |root|). */
/* rift_config_parse_streaming reads the optional `streaming` table (after
 * data_dir, which its file store defaults under); config_streaming_table.c. */
int rift_config_parse_streaming(lua_State *L, int root, rift_config *cfg,
                                rift_error *err);

/* rift_config_parse_cluster reads the optional `cluster` table;
 * config_cluster_table.c. */
int rift_config_parse_cluster(lua_State *L, int root, rift_config *cfg,
                              rift_error *err);

int rift_config_parse_messaging(lua_State *L, int root, rift_config *cfg,
                                rift_error *err);
int rift_config_parse_root(lua_State *L, int root, int plugin_names,
                           rift_config *cfg, rift_error *err);
/* The `nats` table (config_nats_table.c): read before messaging,
 * finished after. */
int rift_config_parse_nats(lua_State *L, int root, rift_config *cfg,
                           rift_error *err);
int rift_config_nats_finish(rift_config *cfg, rift_error *err);

#endif /* RIFT_LUA_CONFIG_LUA_H */
