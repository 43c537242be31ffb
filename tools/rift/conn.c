/*
 * conn.c — connection options of the rift CLI (tools layer). See conn.h.
 */
#include "conn.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void rift_cli_conn_init(rift_cli_conn *cc) {
    memset(cc, 0, sizeof(*cc));
}

static const struct {
    const char *flag;
    size_t offset;
} conn_flags[] = {
    {"--server", offsetof(rift_cli_conn, server)},
    {"--ca", offsetof(rift_cli_conn, ca)},
    {"--server-name", offsetof(rift_cli_conn, server_name)},
    {"--token", offsetof(rift_cli_conn, token)},
    {"--token-env", offsetof(rift_cli_conn, token_env)},
};

int rift_cli_conn_flag(rift_cli_conn *cc, const char *cmd, int argc,
                       char **argv, int *i) {
    const char *a = argv[*i];
    for (size_t k = 0; k < sizeof(conn_flags) / sizeof(conn_flags[0]); k++) {
        size_t n = strlen(conn_flags[k].flag);
        if (strncmp(a, conn_flags[k].flag, n) != 0 ||
            (a[n] != '\0' && a[n] != '=')) {
            continue;
        }
        const char *value;
        if (a[n] == '=') {
            value = a + n + 1;
        } else if (*i + 1 < argc) {
            value = argv[++*i];
        } else {
            fprintf(stderr, "rift %s: %s needs a value\n", cmd,
                    conn_flags[k].flag);
            return -1;
        }
        memcpy((char *)cc + conn_flags[k].offset, &value, sizeof(value));
        (*i)++;
        return 1;
    }
    return 0;
}

void rift_cli_conn_usage(FILE *out) {
    fprintf(out, "connection (flag, else environment, else riftd's development "
                 "default):\n"
                 "  --server HOST:PORT   RIFT_SERVER       (127.0.0.1:7443)\n"
                 "  --ca FILE            RIFT_CA           (DIR/tls/ca.pem)\n"
                 "  --server-name NAME   RIFT_SERVER_NAME  (localhost)\n"
                 "  --token TOKEN        RIFT_TOKEN        (DIR/dev.token)\n"
                 "  --token-env VAR      read the token from $VAR\n"
                 "DIR is $RIFT_HOME or ./rift-data; the development defaults "
                 "apply when it exists\n"
                 "($RIFT_DEV_LISTEN, riftd's override of its address, is "
                 "honoured too).\n");
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the development token: the file's first line. */
static int read_token(rift_cli_conn *cc, const char *cmd, const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "rift %s: cannot read %s: %s\n", cmd, path,
                strerror(errno));
        return 1;
    }
    size_t n = fread(cc->token_buf, 1, sizeof(cc->token_buf) - 1, f);
    fclose(f);
    cc->token_buf[n] = '\0';
    cc->token_buf[strcspn(cc->token_buf, "\r\n")] = '\0';
    if (cc->token_buf[0] == '\0') {
        fprintf(stderr, "rift %s: %s is empty\n", cmd, path);
        return 1;
    }
    cc->token = cc->token_buf;
    return 0;
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

/* Fills the settings left open from the environment and the data dir. */
static int resolve(rift_cli_conn *cc, const char *cmd) {
    if (cc->token == NULL && cc->token_env != NULL) {
        cc->token = getenv(cc->token_env);
        if (cc->token == NULL) {
            fprintf(stderr, "rift %s: environment variable %s is not set\n",
                    cmd, cc->token_env);
            return 1;
        }
    }
    if (cc->server == NULL) {
        cc->server = env("RIFT_SERVER");
    }
    if (cc->ca == NULL) {
        cc->ca = env("RIFT_CA");
    }
    if (cc->server_name == NULL) {
        cc->server_name = env("RIFT_SERVER_NAME");
    }
    if (cc->token == NULL) {
        cc->token = env("RIFT_TOKEN");
    }
    const char *home = env("RIFT_HOME");
    snprintf(cc->dir, sizeof(cc->dir), "%s", home ? home : "rift-data");
    if (is_dir(cc->dir)) {
        if (cc->server == NULL) {
            cc->server = env("RIFT_DEV_LISTEN");
        }
        if (cc->server == NULL) {
            cc->server = "127.0.0.1:7443";
        }
        if (cc->ca == NULL) {
            snprintf(cc->ca_buf, sizeof(cc->ca_buf), "%s/tls/ca.pem", cc->dir);
            cc->ca = cc->ca_buf;
        }
        if (cc->token == NULL) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/dev.token", cc->dir);
            if (read_token(cc, cmd, path) != 0) {
                return 1;
            }
        }
    }
    if (cc->server_name == NULL) {
        cc->server_name = "localhost";
    }
    const char *missing = NULL;
    if (cc->server == NULL) {
        missing = "server (--server or RIFT_SERVER)";
    } else if (cc->ca == NULL) {
        missing = "CA file (--ca or RIFT_CA)";
    } else if (cc->token == NULL) {
        missing = "token (--token, --token-env or RIFT_TOKEN)";
    }
    if (missing != NULL) {
        fprintf(stderr,
                "rift %s: no %s given, and no development data directory "
                "%s (set RIFT_HOME, or run where riftd keeps rift-data)\n",
                cmd, missing, cc->dir);
        return 1;
    }
    return 0;
}

int rift_cli_conn_settings(rift_cli_conn *cc, const char *cmd,
                           rift_client_settings *s) {
    if (resolve(cc, cmd) != 0) {
        return 1;
    }
    rift_client_settings_default(s);
    s->address = cc->server;
    s->ca_file = cc->ca;
    s->server_name = cc->server_name;
    s->token = cc->token;
    return 0;
}

int rift_cli_connect(rift_cli_conn *cc, const char *cmd, rift_client **pc) {
    rift_client_settings s;
    if (rift_cli_conn_settings(cc, cmd, &s) != 0) {
        return 1;
    }
    rift_error err;
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "rift %s: %s: %s\n", cmd, cc->server, err.text);
        return 1;
    }
    return 0;
}
