/*
 * config_messaging.c — the `messaging = { ... }` table of the Lua
 * configuration (lua layer; fills the daemon's rift_config): every key,
 * default, range and error text of docs/protocol-v1.md §5.1 and the stream
 * keys of §4.1.
 *
 * Validation order: unknown keys, scalar keys, the listener rules, then
 * principals, Lua subscriptions and streams. Where the reference does not
 * fix a text (a wrong type, a missing key) the message follows the same
 * "<path>.<key>: ..." shape; docs/riftd.md lists them.
 */
#include "lua/config_lua.h"

#include "subject/name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const messaging_keys[] = {
    "listen",
    "certificate",
    "private_key",
    "principals",
    "subscription_capacity",
    "max_payload_bytes",
    "max_subject_bytes",
    "max_subscriptions",
    "max_connections",
    "max_streams_per_connection",
    "handshake_timeout_ms",
    "io_timeout_ms",
    "subscriptions",
    "streams",
    NULL,
};

static const char *const principal_keys[] = {
    "name", "token_env", "publish", "subscribe", "control", "streams", NULL,
};

static const char *const subscription_keys[] = {"subject", "queue", NULL};

static const char *const stream_keys[] = {
    "subjects",      "max_messages",
    "max_bytes",     "max_payload_bytes",
    "max_consumers", "sync_on_write",
    "storage_path",  "max_age_ms",
    "replicas",      NULL,
};

static const char names_text[] =
    "messaging.principals: names must be unique and contain 1..=96 letters, "
    "digits, dots, underscores or hyphens";
static const char token_env_text[] =
    "messaging.principals.token_env: expected a unique environment variable "
    "name";
static const char queue_text[] =
    "messaging.subscriptions.queue: expected a nonempty queue name without "
    "wildcards or whitespace";
static const char stream_names_text[] =
    "messaging.streams: names must contain 1..=96 letters, digits, "
    "underscores or hyphens";
static const char storage_text[] =
    "messaging.streams.storage_path: paths must be nonempty and unique";

/* ---- Scalars ---- */

typedef struct int_key {
    const char *key;
    uint64_t max;
    bool ms;
    size_t offset;
} int_key;

#define M(field) offsetof(rift_config_messaging, field)

static const int_key int_keys[] = {
    {"subscription_capacity", 1000000, false, M(subscription_capacity)},
    {"max_payload_bytes", 16777216, false, M(max_payload_bytes)},
    {"max_subject_bytes", 1024, false, M(max_subject_bytes)},
    {"max_subscriptions", 1000000, false, M(max_subscriptions)},
    {"max_connections", 1000000, false, M(max_connections)},
    {"max_streams_per_connection", 65535, false, M(max_streams_per_connection)},
    {"handshake_timeout_ms", RIFT_CONFIG_MAX_TIMEOUT_MS, true,
     M(handshake_timeout_ms)},
    {"io_timeout_ms", RIFT_CONFIG_MAX_TIMEOUT_MS, true, M(io_timeout_ms)},
};

#undef M

static void set_defaults(rift_config_messaging *m) {
    m->subscription_capacity = 1024;
    m->max_payload_bytes = 1048576;
    m->max_subject_bytes = 1024;
    m->max_subscriptions = 65536;
    m->max_connections = 1024;
    m->max_streams_per_connection = 128;
    m->handshake_timeout_ms = 5000;
    m->io_timeout_ms = 30000;
}

static int parse_path(lua_State *L, int t, const char *key, char **out,
                      rift_error *err) {
    int rc = rift_config_get_string(L, t, "messaging", key, out, err);
    if (rc == 0 && *out != NULL && (*out)[0] == '\0') {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "messaging.%s: path must not be empty", key);
    }
    return rc;
}

static int parse_scalars(lua_State *L, int t, rift_config_messaging *m,
                         rift_error *err) {
    int rc;
    if ((rc = rift_config_get_string(L, t, "messaging", "listen", &m->listen,
                                     err)) != 0) {
        return rc;
    }
    if (m->listen != NULL &&
        !rift_config_parse_listen(m->listen, &m->listen_addr,
                                  &m->listen_addr_len)) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_CONFIG,
            "messaging.listen: expected an ip:port socket address");
    }
    if ((rc = parse_path(L, t, "certificate", &m->certificate, err)) != 0 ||
        (rc = parse_path(L, t, "private_key", &m->private_key, err)) != 0) {
        return rc;
    }
    for (size_t i = 0; i < RIFT_ARRAY_LEN(int_keys); i++) {
        const int_key *k = &int_keys[i];
        uint64_t *field = (uint64_t *)(void *)((char *)m + k->offset);
        if ((rc = rift_config_get_int(L, t, "messaging", k->key, 1, k->max,
                                      k->ms, field, NULL, err)) != 0) {
            return rc;
        }
    }
    if (m->max_subject_bytes < RIFT_CONFIG_MIN_SUBJECT_BYTES) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "messaging.max_subject_bytes: at least 64 bytes "
                              "are required for Rift control and request "
                              "inbox subjects");
    }
    return 0;
}

/* The listener rules of §5.1, checked before the lists are read. */
static int check_listener(lua_State *L, int t, rift_config_messaging *m,
                          bool nats_face, rift_error *err) {
    bool principals = false;
    int type = rift_config_push_field(L, t, "principals");
    if (type == LUA_TTABLE) {
        lua_pushnil(L);
        principals = lua_next(L, -2) != 0;
        if (principals) {
            lua_pop(L, 2);
        }
    } else {
        principals = type != LUA_TNIL;
    }
    lua_pop(L, 1);
    bool tls = m->certificate != NULL || m->private_key != NULL;
    if (m->listen == NULL) {
        /* A NATS-only riftd: its listener serves the principals (and may
         * use messaging's certificate). */
        if ((tls || principals) && !nats_face) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                  "messaging.listen: required when TLS or "
                                  "principals are configured");
        }
        return 0;
    }
    if (m->certificate == NULL || m->private_key == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "messaging.listen: certificate and private_key "
                              "are required for QUIC TLS");
    }
    if (!principals) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "messaging.principals: grant at least one "
                              "authenticated principal for a QUIC listener");
    }
    if (m->max_payload_bytes > RIFT_CONFIG_QUIC_MAX_PAYLOAD) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "messaging.max_payload_bytes: QUIC supports at "
                              "most 1048576 bytes");
    }
    return 0;
}

/* ---- Principals ---- */

static int parse_principal(lua_State *L, int t, rift_config_messaging *m,
                           rift_config_principal *p, rift_error *err) {
    int rc;
    const char *path = "messaging.principals";
    if (lua_type(L, t) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a list of tables", path);
    }
    if ((rc = rift_config_check_keys(L, t, path, principal_keys, err)) != 0) {
        return rc;
    }
    int type = rift_config_push_field(L, t, "name");
    size_t len = 0;
    const char *s = type == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (s == NULL || !rift_name_valid(s, len)) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s", names_text);
    }
    p->name = rift_config_strdup(s, len);
    lua_pop(L, 1);
    type = rift_config_push_field(L, t, "token_env");
    s = type == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (s == NULL || !rift_env_name_valid(s, len)) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                              token_env_text);
    }
    p->token_env = rift_config_strdup(s, len);
    lua_pop(L, 1);
    if (p->name == NULL || p->token_env == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    const char *list = "publish";
    if ((rc = rift_config_get_patterns(L, t, path, "publish", "messaging",
                                       m->max_subject_bytes, 0, &p->publish,
                                       &p->n_publish, NULL, err)) != 0 ||
        (list = "subscribe",
         rc = rift_config_get_patterns(L, t, path, "subscribe", "messaging",
                                       m->max_subject_bytes, 0, &p->subscribe,
                                       &p->n_subscribe, NULL, err)) != 0 ||
        (list = "streams",
         rc = rift_config_get_patterns(L, t, path, "streams", "messaging",
                                       m->max_subject_bytes, 0, &p->streams,
                                       &p->n_streams, NULL, err)) != 0) {
        /* The §5 text names the pattern only; say whose grant it is. */
        if (rc == RIFT_ERR_INVALID_CONFIG &&
            strncmp(err->text, "messaging: invalid subject pattern", 34) == 0) {
            size_t n = strlen(err->text);
            snprintf(err->text + n, sizeof(err->text) - n,
                     " (principal \"%s\", %s)", p->name, list);
        }
        return rc;
    }
    if ((rc = rift_config_get_bool(L, t, path, "control", &p->control, err)) !=
        0) {
        return rc;
    }
    return 0;
}

static int parse_principals(lua_State *L, int t, rift_config_messaging *m,
                            rift_error *err) {
    int rc = 0;
    if (rift_config_push_field(L, t, "principals") == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    size_t n;
    if ((rc = rift_config_list_len(L, -1, "messaging.principals", &n, err)) !=
        0) {
        goto out;
    }
    if (n > RIFT_CONFIG_MAX_PRINCIPALS) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "messaging.principals: at most %d principals are "
                            "allowed",
                            RIFT_CONFIG_MAX_PRINCIPALS);
        goto out;
    }
    m->principals = rift_calloc(NULL, n ? n : 1, sizeof(*m->principals));
    if (m->principals == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    m->n_principals = n;
    for (size_t i = 0; i < n; i++) {
        rift_config_principal *p = &m->principals[i];
        lua_rawgeti(L, -1, (lua_Integer)(i + 1));
        rc = parse_principal(L, lua_gettop(L), m, p, err);
        lua_pop(L, 1);
        if (rc != 0) {
            goto out;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(m->principals[j].name, p->name) == 0) {
                rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                    names_text);
                goto out;
            }
            if (strcmp(m->principals[j].token_env, p->token_env) == 0) {
                rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                    token_env_text);
                goto out;
            }
        }
    }
out:
    lua_pop(L, 1);
    return rc;
}

/* ---- Lua subscriptions ---- */

static int parse_subscription(lua_State *L, int t, rift_config_messaging *m,
                              rift_config_subscription *s, rift_error *err) {
    const char *path = "messaging.subscriptions";
    int rc;
    if (lua_type(L, t) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a list of tables", path);
    }
    if ((rc = rift_config_check_keys(L, t, path, subscription_keys, err)) !=
        0) {
        return rc;
    }
    int type = rift_config_push_field(L, t, "subject");
    if (type != LUA_TSTRING) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.subject: expected a subject pattern", path);
    }
    size_t len;
    const char *str = lua_tolstring(L, -1, &len);
    if (!rift_config_pattern_valid(str, len, m->max_subject_bytes)) {
        rc = rift_config_pattern_error(err, "messaging", str, len);
        lua_pop(L, 1);
        return rc;
    }
    s->subject = rift_config_strdup(str, len);
    lua_pop(L, 1);
    type = rift_config_push_field(L, t, "queue");
    if (type != LUA_TNIL) {
        str = type == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (str == NULL || !rift_queue_name_valid(str, len)) {
            lua_pop(L, 1);
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                  queue_text);
        }
        s->queue = rift_config_strdup(str, len);
        if (s->queue == NULL) {
            lua_pop(L, 1);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    lua_pop(L, 1);
    if (s->subject == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static bool same_opt(const char *a, const char *b) {
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int parse_subscriptions(lua_State *L, int t, rift_config_messaging *m,
                               rift_error *err) {
    int rc = 0;
    if (rift_config_push_field(L, t, "subscriptions") != LUA_TNIL) {
        size_t n;
        if ((rc = rift_config_list_len(L, -1, "messaging.subscriptions", &n,
                                       err)) != 0) {
            goto out;
        }
        if (n > RIFT_CONFIG_MAX_SUBSCRIPTIONS) {
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                "messaging.subscriptions: at most %d "
                                "subscriptions are allowed",
                                RIFT_CONFIG_MAX_SUBSCRIPTIONS);
            goto out;
        }
        m->subscriptions =
            rift_calloc(NULL, n ? n : 1, sizeof(*m->subscriptions));
        if (m->subscriptions == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        m->n_subscriptions = n;
        for (size_t i = 0; i < n; i++) {
            rift_config_subscription *s = &m->subscriptions[i];
            lua_rawgeti(L, -1, (lua_Integer)(i + 1));
            rc = parse_subscription(L, lua_gettop(L), m, s, err);
            lua_pop(L, 1);
            if (rc != 0) {
                goto out;
            }
            for (size_t j = 0; j < i; j++) {
                if (strcmp(m->subscriptions[j].subject, s->subject) == 0 &&
                    same_opt(m->subscriptions[j].queue, s->queue)) {
                    rc = rift_error_set(
                        err, RIFT_ERR_INVALID_CONFIG,
                        "messaging.subscriptions: duplicate subscription");
                    goto out;
                }
            }
        }
    }
    /* The control bridge needs one subscription beyond the Lua ones. */
    if (m->n_subscriptions >= m->max_subscriptions) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "messaging.subscriptions must leave one "
                            "max_subscriptions slot for Rift control");
    }
out:
    lua_pop(L, 1);
    return rc;
}

/* ---- Streams ---- */

/*
 * Lexical normal form of a storage path: absolute (relative paths are
 * taken against the working directory, as the store will open them), no
 * "." or empty components, ".." folded. Two spellings of one directory
 * then compare equal; symbolic links are not resolved because the
 * directories may not exist yet.
 */
static char *normalize_path(const char *path) {
    char cwd[4096];
    size_t plen = strlen(path);
    size_t clen = 0;
    if (path[0] != '/') {
        if (getcwd(cwd, sizeof(cwd)) == NULL) {
            cwd[0] = '\0';
        }
        clen = strlen(cwd);
    }
    char *buf = rift_malloc(NULL, clen + plen + 2);
    char *out = rift_malloc(NULL, clen + plen + 3);
    if (buf == NULL || out == NULL) {
        rift_free(NULL, buf);
        rift_free(NULL, out);
        return NULL;
    }
    if (clen != 0) {
        memcpy(buf, cwd, clen);
        buf[clen] = '/';
        memcpy(buf + clen + 1, path, plen + 1);
    } else {
        memcpy(buf, path, plen + 1);
    }
    size_t o = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, "/", &save); tok != NULL;
         tok = strtok_r(NULL, "/", &save)) {
        if (strcmp(tok, ".") == 0) {
            continue;
        }
        if (strcmp(tok, "..") == 0) {
            while (o > 0 && out[o - 1] != '/') {
                o--;
            }
            if (o > 0) {
                o--;
            }
            continue;
        }
        out[o++] = '/';
        size_t tl = strlen(tok);
        memcpy(out + o, tok, tl);
        o += tl;
    }
    if (o == 0) {
        out[o++] = '/';
    }
    out[o] = '\0';
    rift_free(NULL, buf);
    return out;
}

/* The stream's subjects; a stream without the key takes every subject
 * (">"), an empty list is an error. */
static int stream_subjects(lua_State *L, int t, const char *path,
                           rift_config_messaging *m, rift_config_stream *s,
                           rift_error *err) {
    bool present = false;
    int rc = rift_config_get_patterns(
        L, t, path, "subjects", "messaging", m->max_subject_bytes,
        RIFT_CONFIG_MAX_STREAM_SUBJECTS, &s->subjects, &s->n_subjects, &present,
        err);
    if (rc != 0) {
        return rc;
    }
    if (present && s->n_subjects == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.subjects: at least one pattern is required",
                              path);
    }
    if (!present) {
        s->subjects = rift_calloc(NULL, 1, sizeof(char *));
        if (s->subjects == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        s->n_subjects = 1;
        if ((s->subjects[0] = rift_config_strdup(">", 1)) == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

/* The stream's limits, defaults first. Stream limits are read as 0..=max
 * and a zero is reported as the stream validation failure of §5.1
 * ("limits must be positive"). */
static int stream_limits(lua_State *L, int t, const char *path,
                         rift_config_messaging *m, rift_config_stream *s,
                         rift_error *err) {
    int rc;
    s->max_messages = 100000;
    s->max_bytes = 67108864;
    s->max_consumers = 128;
    s->sync_on_write = true;
    bool payload_set = false;
    if ((rc = rift_config_get_int(L, t, path, "max_messages", 0,
                                  RIFT_CONFIG_STREAM_MAX_MESSAGES, false,
                                  &s->max_messages, NULL, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_bytes", 0,
                                  RIFT_CONFIG_STREAM_MAX_BYTES, false,
                                  &s->max_bytes, NULL, err)) != 0 ||
        (rc = rift_config_get_int(
             L, t, path, "max_payload_bytes", 0, RIFT_CONFIG_STREAM_MAX_PAYLOAD,
             false, &s->max_payload_bytes, &payload_set, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_consumers", 0,
                                  RIFT_CONFIG_STREAM_MAX_CONSUMERS, false,
                                  &s->max_consumers, NULL, err)) != 0 ||
        (rc = rift_config_get_bool(L, t, path, "sync_on_write",
                                   &s->sync_on_write, err)) != 0 ||
        (rc = rift_config_get_int(L, t, path, "max_age_ms", 1,
                                  RIFT_CONFIG_STREAM_MAX_AGE_MS, true,
                                  &s->max_age_ms, NULL, err)) != 0) {
        return rc;
    }
    if (!payload_set) {
        s->max_payload_bytes = RIFT_MIN(1048576u, m->max_payload_bytes);
    }
    if (s->max_messages == 0 || s->max_bytes == 0 ||
        s->max_payload_bytes == 0 || s->max_consumers == 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: limits must be positive", path);
    }
    if (s->max_payload_bytes > m->max_payload_bytes ||
        s->max_payload_bytes > s->max_bytes ||
        s->max_payload_bytes > UINT32_MAX - 4096u) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.max_payload_bytes: must fit both broker and "
                              "stream byte limits",
                              path);
    }
    return 0;
}

/* The stream's optional storage_path: a non-empty string without NULs. */
static int stream_storage(lua_State *L, int t, const char *path,
                          rift_config_stream *s, rift_error *err) {
    int type = rift_config_push_field(L, t, "storage_path");
    if (type != LUA_TNIL && type != LUA_TSTRING) {
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s.storage_path: expected a string", path);
    }
    if (type == LUA_TSTRING) {
        size_t len;
        const char *str = lua_tolstring(L, -1, &len);
        if (len == 0 || memchr(str, '\0', len) != NULL) {
            lua_pop(L, 1);
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                  storage_text);
        }
        s->storage_path = rift_config_strdup(str, len);
        if (s->storage_path == NULL) {
            lua_pop(L, 1);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    lua_pop(L, 1);
    return 0;
}

/* replicas: 1 (rift's own store, the default) or 3 (a JetStream stream
 * of the cluster backbone, which also stores it: no storage_path). That
 * a cluster table exists is checked once the whole file is read
 * (rift_config_check_replicas). */
static int stream_replicas(lua_State *L, int t, const char *path,
                           rift_config_stream *s, rift_error *err) {
    s->replicas = 1;
    int rc = rift_config_get_int(L, t, path, "replicas", 1, 3, false,
                                 &s->replicas, NULL, err);
    if (rc == 0 && s->replicas == 2) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "%s.replicas: expected 1 or 3", path);
    }
    if (rc == 0 && s->replicas == 3 && s->storage_path != NULL) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "%s.storage_path: a replicated stream is stored "
                            "by the cluster backbone",
                            path);
    }
    return rc;
}

static int parse_stream(lua_State *L, int t, rift_config_messaging *m,
                        rift_config_stream *s, rift_error *err) {
    char path[RIFT_CONFIG_PATH_MAX];
    int rc;
    snprintf(path, sizeof(path), "messaging.streams.%s", s->name);
    if (lua_type(L, t) != LUA_TTABLE) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "%s: expected a table", path);
    }
    if ((rc = rift_config_check_keys(L, t, path, stream_keys, err)) != 0 ||
        (rc = stream_subjects(L, t, path, m, s, err)) != 0 ||
        (rc = stream_limits(L, t, path, m, s, err)) != 0) {
        return rc;
    }
    if ((rc = stream_storage(L, t, path, s, err)) != 0) {
        return rc;
    }
    return stream_replicas(L, t, path, s, err);
}

static int cmp_stream(const void *a, const void *b) {
    return strcmp(((const rift_config_stream *)a)->name,
                  ((const rift_config_stream *)b)->name);
}

static int check_storage_unique(rift_config_messaging *m, rift_error *err) {
    int rc = 0;
    char **norm =
        rift_calloc(NULL, m->n_streams ? m->n_streams : 1, sizeof(char *));
    if (norm == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < m->n_streams && rc == 0; i++) {
        if (m->streams[i].storage_path == NULL) {
            continue;
        }
        norm[i] = normalize_path(m->streams[i].storage_path);
        if (norm[i] == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            break;
        }
        for (size_t j = 0; j < i; j++) {
            if (norm[j] != NULL && strcmp(norm[j], norm[i]) == 0) {
                rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                    storage_text);
                break;
            }
        }
    }
    rift_config_free_strings(norm, m->n_streams);
    return rc;
}

static int parse_streams(lua_State *L, int t, rift_config_messaging *m,
                         rift_error *err) {
    int rc = 0;
    int type = rift_config_push_field(L, t, "streams");
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    int st = lua_gettop(L);
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "messaging.streams: expected a table of streams");
        goto out;
    }
    /* Names first (all of them, so the order of the checks below does not
     * depend on Lua's hash order), then each stream in name order. */
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, st) != 0) {
        size_t len = 0;
        const char *s =
            lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : NULL;
        lua_pop(L, 1);
        if (s == NULL || !rift_config_stream_name_valid(s, len)) {
            lua_pop(L, 1);
            rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG, "%s",
                                stream_names_text);
            goto out;
        }
        n++;
    }
    m->streams = rift_calloc(NULL, n ? n : 1, sizeof(*m->streams));
    if (m->streams == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto out;
    }
    lua_pushnil(L);
    while (lua_next(L, st) != 0) {
        size_t len;
        const char *s = lua_tolstring(L, -2, &len);
        m->streams[m->n_streams].name = rift_config_strdup(s, len);
        lua_pop(L, 1);
        if (m->streams[m->n_streams++].name == NULL) {
            lua_pop(L, 1);
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    qsort(m->streams, m->n_streams, sizeof(*m->streams), cmp_stream);
    for (size_t i = 0; i < m->n_streams; i++) {
        rift_config_stream *s = &m->streams[i];
        lua_pushstring(L, s->name);
        lua_rawget(L, st);
        rc = parse_stream(L, lua_gettop(L), m, s, err);
        lua_pop(L, 1);
        if (rc != 0) {
            goto out;
        }
    }
    rc = check_storage_unique(m, err);
out:
    lua_settop(L, st - 1);
    return rc;
}

/* ---- Entry point ---- */

int rift_config_parse_messaging(lua_State *L, int root, rift_config *cfg,
                                rift_error *err) {
    rift_config_messaging *m = &cfg->messaging;
    int rc = 0;
    set_defaults(m);
    int type = rift_config_push_field(L, root, "messaging");
    int t = lua_gettop(L);
    if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean(L, t))) {
        goto out; /* the default local broker, no listener */
    }
    if (type != LUA_TTABLE) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            "messaging: expected a table, nil or false");
        goto out;
    }
    if ((rc = rift_config_check_keys(L, t, "messaging", messaging_keys, err)) !=
            0 ||
        (rc = parse_scalars(L, t, m, err)) != 0 ||
        (rc = check_listener(L, t, m, cfg->nats.listen != NULL, err)) != 0 ||
        (rc = parse_principals(L, t, m, err)) != 0 ||
        (rc = parse_subscriptions(L, t, m, err)) != 0 ||
        (rc = parse_streams(L, t, m, err)) != 0) {
        goto out;
    }
out:
    lua_settop(L, t - 1);
    return rc;
}
