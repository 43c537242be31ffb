/*
 * config_eval.h — the Lua evaluator of riftd's configuration (lua layer):
 * evaluates a Lua 5.4 configuration in a restricted environment and fills
 * a rift_config (config/config.h). What the daemon (daemon.c), the tests
 * and the fuzz target call; the parser's own helpers are in config_lua.h.
 */
#ifndef RIFT_LUA_CONFIG_EVAL_H
#define RIFT_LUA_CONFIG_EVAL_H

#include "config/config.h"

/* ---- Evaluation ---- */

typedef struct rift_config_options {
    /* Lua memory budget for the evaluation, in bytes. Default 64 MiB. */
    size_t max_memory;
    /* Lua VM instructions allowed. Default 100,000,000. */
    uint64_t max_instructions;
    /* Absolute rift_now_ns() deadline, 0 = none. Exceeding it fails with
     * RIFT_ERR_TIMEOUT (the control bridge's 40 s command limit). */
    rift_tstamp deadline_ns;
} rift_config_options;

/* Largest configuration source accepted, in bytes. */
#define RIFT_CONFIG_MAX_SOURCE (1024 * 1024)

void rift_config_options_default(rift_config_options *opts);

/*
 * rift_config_load_file reads and evaluates the Lua file |path| and fills
 * |cfg| (which the caller then releases with rift_config_free, also on
 * failure). |opts| may be NULL for defaults. The revision is the content
 * hash of the file.
 *
 * Errors (text in |err|, one line): RIFT_ERR_INVALID_CONFIG with the §5
 * validation text; RIFT_ERR_LUA for a Lua syntax or runtime error
 * ("<file>:<line>: <message>"); RIFT_ERR_TIMEOUT when the deadline passed;
 * RIFT_ERR_LIMIT for the memory or instruction budget; -errno when the file
 * cannot be read; RIFT_ERR_NOMEM.
 */
int rift_config_load_file(rift_config *cfg, const char *path,
                          const rift_config_options *opts, rift_error *err);

/*
 * rift_config_load_string is rift_config_load_file over a source held in
 * memory. |name| labels it in Lua error messages. When |from_file| is false
 * the revision is "runtime". Same errors, without -errno.
 */
int rift_config_load_string(rift_config *cfg, const char *source, size_t len,
                            const char *name, bool from_file,
                            const rift_config_options *opts, rift_error *err);

#endif /* RIFT_LUA_CONFIG_EVAL_H */
