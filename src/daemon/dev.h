/*
 * dev.h — riftd's built-in development configuration (daemon layer): the
 * embedded Lua source riftd evaluates when it has neither -c nor
 * ./rift.lua, and the preparation of ./rift-data it relies on (private
 * directory, dev token, development CA and server certificate).
 *
 * The dev default goes through the same evaluator and validator as any
 * file; its token reaches it through the usual token_env mechanism
 * (RIFT_DEV_TOKEN, served by rift_dev_getenv). docs/riftd.md quotes the
 * source verbatim (a unit test keeps them equal).
 */
#ifndef RIFT_DAEMON_DEV_H
#define RIFT_DAEMON_DEV_H

#include "common/common.h"

#define RIFT_DEV_DATA_DIR    "rift-data"
#define RIFT_DEV_TOKEN_FILE  "rift-data/dev.token"
#define RIFT_DEV_TLS_DIR     "rift-data/tls"
#define RIFT_DEV_PLUGINS_DIR "rift-data/plugins"
#define RIFT_DEV_TOKEN_ENV   "RIFT_DEV_TOKEN"
#define RIFT_DEV_LABEL       "(built-in development configuration)"

/* Random bytes in a generated dev token (written as 64 hex digits). */
#define RIFT_DEV_TOKEN_BYTES 32
#define RIFT_DEV_TOKEN_MAX   1024

/* One file of a bundled example plugin: its path under examples/plugins
 * (and rift-data/plugins) and its content. */
typedef struct rift_dev_file {
    const char *path;
    const char *content;
} rift_dev_file;

/* The bundled example plugins (dev_plugins.c, generated from
 * examples/plugins by scripts/gen-dev-plugins.py). */
extern const rift_dev_file rift_dev_plugin_files[];
extern const size_t rift_dev_n_plugin_files;

/* rift_dev_config_source returns the embedded Lua source and its length. */
const char *rift_dev_config_source(size_t *len);

typedef struct rift_dev_state {
    char token[RIFT_DEV_TOKEN_MAX + 1]; /* "" when none is available */
    bool created_dir;
    bool created_token;
    bool created_certs;
    bool created_plugins;
} rift_dev_state;

/*
 * rift_dev_prepare makes ./rift-data ready for the dev default, relative
 * to the working directory: the directory (0700), rift-data/dev.token
 * (0600; 32 random bytes as hex, or the existing token reused), the TLS
 * files in rift-data/tls (generated when any is missing) and the bundled
 * example plugins in rift-data/plugins/<name> (written when that folder is
 * missing, never overwritten: they are the newcomer's to edit). With |create|
 * false nothing is written: an existing token is read, a missing one
 * leaves st->token empty (what `riftd --check` wants).
 *
 * Errors (text in |err|): -errno for file-system failures; RIFT_ERR_TLS
 * when the certificates cannot be made; RIFT_ERR_INVALID_CONFIG when an
 * existing dev.token does not meet the token rule.
 */
int rift_dev_prepare(rift_dev_state *st, bool create, rift_error *err);

/*
 * rift_dev_getenv is a rift_config_getenv_fn (|ud| = rift_dev_state) that
 * answers RIFT_DEV_TOKEN from the state and everything else from the real
 * environment.
 */
const char *rift_dev_getenv(const char *name, void *ud);

#endif /* RIFT_DAEMON_DEV_H */
