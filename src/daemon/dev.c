/*
 * dev.c — the built-in development configuration of riftd (daemon layer).
 * See dev.h; the Lua below is documented verbatim in docs/riftd.md.
 */
#include "daemon/dev.h"

#include "daemon/files.h"
#include "daemon/tls.h"

#include <errno.h>
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
    "-- handed over as RIFT_DEV_TOKEN, and a development CA (tls/ca.pem)\n"
    "-- with a server certificate for localhost, 127.0.0.1 and ::1.\n"
    "-- RIFT_DEV_LISTEN overrides the listen address.\n"
    "return {\n"
    "  data_dir = \"rift-data\",\n"
    "  messaging = {\n"
    "    listen = os.getenv(\"RIFT_DEV_LISTEN\") or \"127.0.0.1:7443\",\n"
    "    certificate = \"rift-data/tls/server.pem\",\n"
    "    private_key = \"rift-data/tls/server.key\",\n"
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
    "  -- TODO(issue 6): list the bundled example plugins once they exist.\n"
    "  plugins = {},\n"
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
    int rc =
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
    if (rc != 0) {
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
