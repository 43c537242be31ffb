/*
 * dev.c — the built-in development configuration of riftd (daemon layer).
 * See dev.h; the Lua below is documented verbatim in docs/riftd.md.
 */
#include "daemon/dev.h"

#include "daemon/files.h"
#include "daemon/credentials.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char dev_source[] =
    "-- riftd built-in development configuration.\n"
    "--\n"
    "-- Used when riftd starts without -c and there is no ./rift.lua.\n"
    "-- FOR DEVELOPMENT ONLY: principal \"dev\" may publish, subscribe and\n"
    "-- send control commands on every subject.\n"
    "--\n"
    "-- Before evaluating this, riftd prepares ./rift-data (mode 0700): a\n"
    "-- random token in rift-data/dev.token (0600, reused by later starts)\n"
    "-- handed over as RIFT_DEV_TOKEN, a development CA (tls/ca.pem)\n"
    "-- with a server certificate for localhost, 127.0.0.1 and ::1, and\n"
    "-- the bundled example plugins in rift-data/plugins (written once,\n"
    "-- then yours to edit: SIGHUP or rift.control.reload reloads them).\n"
    "-- RIFT_DEV_LISTEN overrides the listen address.\n"
    "return {\n"
    "  data_dir = \"rift-data\",\n"
    "  messaging = {\n"
    "    listen = os.getenv(\"RIFT_DEV_LISTEN\") or \"127.0.0.1:7443\",\n"
    "    certificate = \"rift-data/tls/server.pem\",\n"
    "    private_key = \"rift-data/tls/server.key\",\n"
    "    -- Generous for development (a file's default is 1,024): each\n"
    "    -- subscriber may fall 1,000,000 messages behind (the protocol's\n"
    "    -- maximum) before riftd disconnects it, so a terminal running\n"
    "    -- `rift sub` keeps up with `rift bench pub`, and `rift bench\n"
    "    -- pubsub --msgs 1000000 --subs 4` loses nothing. The queue's\n"
    "    -- memory grows only as it fills.\n"
    "    subscription_capacity = 1000000,\n"
    "    principals = {\n"
    "      {\n"
    "        name = \"dev\",\n"
    "        token_env = \"RIFT_DEV_TOKEN\",\n"
    "        publish = { \">\" },\n"
    "        subscribe = { \">\" },\n"
    "        control = true,\n"
    "      },\n"
    "    },\n"
    "    streams = {\n"
    "      events = {\n"
    "        subjects = { \"events.>\" },\n"
    "        storage_path = \"rift-data/streams/events\",\n"
    "      },\n"
    "    },\n"
    "  },\n"
    "  plugins = {\n"
    "    -- rift req demo.echo hi\n"
    "    { name = \"echo\", path = \"rift-data/plugins/echo\" },\n"
    "    -- counts demo.> traffic; rift req demo.stats ''\n"
    "    { name = \"stats\", path = \"rift-data/plugins/stats\" },\n"
    "  },\n"
    "}\n";

const char *rift_dev_config_source(size_t *len) {
    *len = sizeof(dev_source) - 1;
    return dev_source;
}

/* The §5.2 token rule, applied to a token read back from dev.token. */
static bool token_ok(const char *t, size_t len) {
    if (len < 32 || len > RIFT_DEV_TOKEN_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c < 0x20 || c == 0x7F) {
            return false;
        }
    }
    return true;
}

static int read_token(rift_dev_state *st, rift_error *err) {
    char *buf = NULL;
    size_t len = 0;
    int rc = rift_file_check_private(RIFT_DEV_TOKEN_FILE, "dev token", err);
    if (rc != 0) {
        return rc;
    }
    rc =
        rift_file_read(RIFT_DEV_TOKEN_FILE, RIFT_DEV_TOKEN_MAX + 2, &buf, &len);
    if (rc == -ENOENT) {
        return rc;
    }
    if (rc != 0 && rc != -EFBIG) {
        return rift_error_set(err, rc, "cannot read %s: %s",
                              RIFT_DEV_TOKEN_FILE, strerror(-rc));
    }
    while (rc == 0 && len > 0 &&
           (buf[len - 1] == '\n' || buf[len - 1] == '\r')) {
        len--;
    }
    if (rc != 0 || !token_ok(buf, len)) {
        if (buf != NULL) {
            explicit_bzero(buf, len);
        }
        rift_free(NULL, buf);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s must hold 32..=1024 bytes without control "
                              "characters; delete it to generate a new token",
                              RIFT_DEV_TOKEN_FILE);
    }
    memcpy(st->token, buf, len);
    st->token[len] = '\0';
    explicit_bzero(buf, len);
    rift_free(NULL, buf);
    return 0;
}

static int create_token(rift_dev_state *st, rift_error *err) {
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RIFT_DEV_TOKEN_BYTES];
    char text[2 * RIFT_DEV_TOKEN_BYTES + 1];
    if (rift_random(raw, sizeof(raw)) != 0) {
        return rift_error_set(err, RIFT_ERR_IO,
                              "dev token: random generator unavailable");
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        text[2 * i] = hex[raw[i] >> 4];
        text[2 * i + 1] = hex[raw[i] & 15];
    }
    text[2 * sizeof(raw)] = '\n';
    int rc =
        rift_file_write_atomic(RIFT_DEV_TOKEN_FILE, text, sizeof(text), 0600);
    explicit_bzero(raw, sizeof(raw));
    if (rc != 0) {
        explicit_bzero(text, sizeof(text));
        return rift_error_set(err, rc, "cannot write %s: %s",
                              RIFT_DEV_TOKEN_FILE, strerror(-rc));
    }
    memcpy(st->token, text, 2 * sizeof(raw));
    st->token[2 * sizeof(raw)] = '\0';
    explicit_bzero(text, sizeof(text));
    st->created_token = true;
    return 0;
}

static bool certs_present(void) {
    static const char *const files[] = {
        RIFT_DEV_TLS_DIR "/" RIFT_DEV_CA_CERT,
        RIFT_DEV_TLS_DIR "/" RIFT_DEV_SERVER_CERT,
        RIFT_DEV_TLS_DIR "/" RIFT_DEV_SERVER_KEY,
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(files); i++) {
        if (access(files[i], R_OK) != 0) {
            return false;
        }
    }
    return true;
}

/* Creates the directories of |path| (relative, '/'-separated) below
 * RIFT_DEV_PLUGINS_DIR. */
static int make_parents(const char *path, rift_error *err) {
    char dir[512];
    for (const char *slash = strchr(path, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        snprintf(dir, sizeof(dir), "%s/%.*s", RIFT_DEV_PLUGINS_DIR,
                 (int)(slash - path), path);
        bool created;
        int rc = rift_dir_ensure_private(dir, &created);
        if (rc != 0) {
            return rift_error_set(err, rc, "cannot create %s: %s", dir,
                                  strerror(-rc));
        }
    }
    return 0;
}

/* Length of the plugin folder name that starts |path| ("echo/..."). */
static size_t folder_len(const char *path) {
    const char *slash = strchr(path, '/');
    return slash != NULL ? (size_t)(slash - path) : strlen(path);
}

/* Writes each bundled plugin whose folder is missing; an existing folder
 * is the user's (edited, or files deleted on purpose). The files of one
 * plugin are contiguous in the table. */
static int write_plugins(rift_dev_state *st, rift_error *err) {
    bool created, skip = false;
    int rc = rift_dir_ensure_private(RIFT_DEV_PLUGINS_DIR, &created);
    if (rc != 0) {
        return rift_error_set(err, rc, "cannot create %s: %s",
                              RIFT_DEV_PLUGINS_DIR, strerror(-rc));
    }
    for (size_t i = 0; i < rift_dev_n_plugin_files; i++) {
        const rift_dev_file *f = &rift_dev_plugin_files[i];
        const rift_dev_file *prev =
            i > 0 ? &rift_dev_plugin_files[i - 1] : NULL;
        size_t n = folder_len(f->path);
        if (prev == NULL || folder_len(prev->path) != n ||
            memcmp(prev->path, f->path, n) != 0) {
            char folder[512];
            snprintf(folder, sizeof(folder), "%s/%.*s", RIFT_DEV_PLUGINS_DIR,
                     (int)n, f->path);
            skip = access(folder, F_OK) == 0;
        }
        if (skip) {
            continue;
        }
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", RIFT_DEV_PLUGINS_DIR, f->path);
        if ((rc = make_parents(f->path, err)) != 0) {
            return rc;
        }
        rc = rift_file_write_atomic(path, f->content, strlen(f->content), 0600);
        if (rc != 0) {
            return rift_error_set(err, rc, "cannot write %s: %s", path,
                                  strerror(-rc));
        }
        st->created_plugins = true;
    }
    return 0;
}

int rift_dev_prepare(rift_dev_state *st, bool create, rift_error *err) {
    memset(st, 0, sizeof(*st));
    int rc;
    if (!create) {
        rc = read_token(st, err);
        return rc == -ENOENT ? 0 : rc;
    }
    bool created;
    if ((rc = rift_dir_ensure_private(RIFT_DEV_DATA_DIR, &created)) != 0) {
        return rift_error_set(err, rc, "cannot create %s: %s",
                              RIFT_DEV_DATA_DIR, strerror(-rc));
    }
    st->created_dir = created;
    rc = read_token(st, err);
    if (rc == -ENOENT) {
        rc = create_token(st, err);
    }
    if (rc != 0 || (rc = write_plugins(st, err)) != 0) {
        return rc;
    }
    if (certs_present()) {
        return 0;
    }
    if ((rc = rift_dir_ensure_private(RIFT_DEV_TLS_DIR, &created)) != 0) {
        return rift_error_set(err, rc, "cannot create %s: %s", RIFT_DEV_TLS_DIR,
                              strerror(-rc));
    }
    if ((rc = rift_daemon_devcert_generate(RIFT_DEV_TLS_DIR, err)) != 0) {
        return rc;
    }
    st->created_certs = true;
    return 0;
}

const char *rift_dev_getenv(const char *name, void *ud) {
    const rift_dev_state *st = ud;
    if (strcmp(name, RIFT_DEV_TOKEN_ENV) == 0) {
        return st->token[0] != '\0' ? st->token : NULL;
    }
    return getenv(name);
}
