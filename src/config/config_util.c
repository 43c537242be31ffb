/*
 * config_util.c — value-level helpers of rift_config (config layer): the
 * config pattern rule, listen-address parsing, the revision hash, tokens
 * from the environment, equality for reloads, and release.
 */
#include "config/config.h"

#include "subject/acl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* ---- Predicates ---- */

bool rift_config_pattern_valid(const char *s, size_t len, size_t max_bytes) {
    return rift_subject_config_valid(s, len, max_bytes);
}

static bool parse_port(const char *s, uint16_t *port) {
    size_t n = strlen(s);
    if (n == 0 || n > 5) {
        return false;
    }
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535) {
        return false;
    }
    *port = (uint16_t)v;
    return true;
}

bool rift_config_parse_listen(const char *s, struct sockaddr_storage *ss,
                              socklen_t *sslen) {
    char host[64];
    const char *colon = strrchr(s, ':');
    uint16_t port;
    if (colon == NULL || !parse_port(colon + 1, &port)) {
        return false;
    }
    size_t hl = (size_t)(colon - s);
    memset(ss, 0, sizeof(*ss));
    if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
        if (hl - 2 >= sizeof(host)) {
            return false;
        }
        memcpy(host, s + 1, hl - 2);
        host[hl - 2] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
            return false;
        }
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        *sslen = sizeof(*a);
        return true;
    }
    if (hl == 0 || hl >= sizeof(host)) {
        return false;
    }
    memcpy(host, s, hl);
    host[hl] = '\0';
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
        return false;
    }
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    *sslen = sizeof(*a);
    return true;
}

/* ---- Revision ---- */

void rift_config_revision(const char *src, size_t len, char out[17]) {
    /* 64-bit FNV-1a: the revision is opaque (§7.2), it only has to change
     * when the source does. */
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)src[i];
        h *= 1099511628211ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ---- Tokens ---- */

/* §5.2: 32..=1024 bytes of UTF-8 without control characters (Cc). */
static bool token_valid(const char *t, size_t len) {
    if (len < 32 || len > 1024 || !rift_utf8_valid((const uint8_t *)t, len)) {
        return false;
    }
    size_t pos = 0;
    while (pos < len) {
        uint32_t cp = rift_utf8_next((const uint8_t *)t, len, &pos);
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            return false;
        }
    }
    return true;
}

static const char *default_getenv(const char *name, void *ud) {
    (void)ud;
    return getenv(name);
}

static void wipe_free(char *s, size_t len) {
    if (s != NULL) {
        explicit_bzero(s, len);
        rift_free(NULL, s);
    }
}

/* Frees a string array of |n| entries (NULL entries and a NULL array are
 * fine). */
static void free_strv(char **v, size_t n) {
    for (size_t i = 0; v != NULL && i < n; i++) {
        rift_free(NULL, v[i]);
    }
    rift_free(NULL, v);
}

int rift_config_load_tokens(rift_config *cfg, rift_config_getenv_fn getenv_fn,
                            void *ud, rift_error *err) {
    if (getenv_fn == NULL) {
        getenv_fn = default_getenv;
    }
    rift_config_messaging *m = &cfg->messaging;
    for (size_t i = 0; i < m->n_principals; i++) {
        rift_config_principal *p = &m->principals[i];
        const char *t = getenv_fn(p->token_env, ud);
        if (t == NULL) {
            return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                                  "messaging: set %s to a secret of at least "
                                  "32 bytes",
                                  p->token_env);
        }
        size_t len = strlen(t);
        if (!token_valid(t, len)) {
            /* The §5.2 text, then which variable (never the secret). */
            return rift_error_set(
                err, RIFT_ERR_INVALID_CONFIG,
                "messaging token must contain 32..=1024 bytes without control "
                "characters: %s (principal \"%s\") %s%zu bytes",
                p->token_env, p->name,
                len < 32 || len > 1024 ? "holds "
                                       : "holds a control "
                                         "character or invalid "
                                         "UTF-8 in its ",
                len);
        }
        wipe_free(p->token, p->token_len);
        p->token = rift_strndup(NULL, t, len);
        p->token_len = len;
        if (p->token == NULL) {
            p->token_len = 0;
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    /* A token names one identity: two principals sharing one could not be
     * told apart (the programmatic AuthConfig rule, §3.7). */
    for (size_t i = 0; i < m->n_principals; i++) {
        for (size_t j = 0; j < i; j++) {
            if (m->principals[i].token_len == m->principals[j].token_len &&
                memcmp(m->principals[i].token, m->principals[j].token,
                       m->principals[i].token_len) == 0) {
                return rift_error_set(
                    err, RIFT_ERR_INVALID_CONFIG,
                    "invalid messaging configuration: identity names and "
                    "tokens must be nonempty and unique");
            }
        }
    }
    return 0;
}

/* ---- Lookup ---- */

const rift_config_stream *rift_config_find_stream(const rift_config *cfg,
                                                  const char *name) {
    for (size_t i = 0; i < cfg->messaging.n_streams; i++) {
        if (strcmp(cfg->messaging.streams[i].name, name) == 0) {
            return &cfg->messaging.streams[i];
        }
    }
    return NULL;
}

/* ---- Equality ---- */

static bool str_eq(const char *a, const char *b) {
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool list_eq(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb) {
        return false;
    }
    for (size_t i = 0; i < na; i++) {
        if (!str_eq(a[i], b[i])) {
            return false;
        }
    }
    return true;
}

static bool principal_eq(const rift_config_principal *a,
                         const rift_config_principal *b) {
    return str_eq(a->name, b->name) && str_eq(a->token_env, b->token_env) &&
           list_eq(a->publish, a->n_publish, b->publish, b->n_publish) &&
           list_eq(a->subscribe, a->n_subscribe, b->subscribe,
                   b->n_subscribe) &&
           list_eq(a->streams, a->n_streams, b->streams, b->n_streams) &&
           a->control == b->control;
}

static bool stream_eq(const rift_config_stream *a,
                      const rift_config_stream *b) {
    return str_eq(a->name, b->name) &&
           list_eq(a->subjects, a->n_subjects, b->subjects, b->n_subjects) &&
           a->max_messages == b->max_messages && a->max_bytes == b->max_bytes &&
           a->max_payload_bytes == b->max_payload_bytes &&
           a->max_consumers == b->max_consumers &&
           a->sync_on_write == b->sync_on_write &&
           str_eq(a->storage_path, b->storage_path) &&
           a->max_age_ms == b->max_age_ms && a->replicas == b->replicas;
}

const char *rift_config_messaging_diff(const rift_config_messaging *a,
                                       const rift_config_messaging *b) {
    static const char *const scalar_keys[] = {
        "subscription_capacity", "max_payload_bytes",
        "max_subject_bytes",     "max_subscriptions",
        "max_connections",       "max_streams_per_connection",
        "handshake_timeout_ms",  "io_timeout_ms"};
    const uint64_t av[] = {
        a->subscription_capacity, a->max_payload_bytes,
        a->max_subject_bytes,     a->max_subscriptions,
        a->max_connections,       a->max_streams_per_connection,
        a->handshake_timeout_ms,  a->io_timeout_ms};
    const uint64_t bv[] = {
        b->subscription_capacity, b->max_payload_bytes,
        b->max_subject_bytes,     b->max_subscriptions,
        b->max_connections,       b->max_streams_per_connection,
        b->handshake_timeout_ms,  b->io_timeout_ms};
    if (!str_eq(a->listen, b->listen)) {
        return "listen";
    }
    if (!str_eq(a->certificate, b->certificate)) {
        return "certificate";
    }
    if (!str_eq(a->private_key, b->private_key)) {
        return "private_key";
    }
    for (size_t i = 0; i < RIFT_ARRAY_LEN(scalar_keys); i++) {
        if (av[i] != bv[i]) {
            return scalar_keys[i];
        }
    }
    if (a->n_principals != b->n_principals) {
        return "principals";
    }
    for (size_t i = 0; i < a->n_principals; i++) {
        if (!principal_eq(&a->principals[i], &b->principals[i])) {
            return "principals";
        }
    }
    if (a->n_subscriptions != b->n_subscriptions) {
        return "subscriptions";
    }
    for (size_t i = 0; i < a->n_subscriptions; i++) {
        if (!str_eq(a->subscriptions[i].subject, b->subscriptions[i].subject) ||
            !str_eq(a->subscriptions[i].queue, b->subscriptions[i].queue)) {
            return "subscriptions";
        }
    }
    if (a->n_streams != b->n_streams) {
        return "streams";
    }
    for (size_t i = 0; i < a->n_streams; i++) {
        if (!stream_eq(&a->streams[i], &b->streams[i])) {
            return "streams";
        }
    }
    return NULL;
}

bool rift_config_messaging_equal(const rift_config_messaging *a,
                                 const rift_config_messaging *b) {
    return rift_config_messaging_diff(a, b) == NULL;
}

/* ---- Release ---- */

void rift_config_free(rift_config *cfg) {
    if (cfg == NULL) {
        return;
    }
    rift_config_messaging *m = &cfg->messaging;
    rift_config_nats_free(&cfg->nats);
    rift_free(NULL, m->listen);
    rift_free(NULL, m->certificate);
    rift_free(NULL, m->private_key);
    for (size_t i = 0; m->principals != NULL && i < m->n_principals; i++) {
        rift_config_principal *p = &m->principals[i];
        rift_free(NULL, p->name);
        rift_free(NULL, p->token_env);
        free_strv(p->publish, p->n_publish);
        free_strv(p->subscribe, p->n_subscribe);
        free_strv(p->streams, p->n_streams);
        wipe_free(p->token, p->token_len);
    }
    rift_free(NULL, m->principals);
    for (size_t i = 0; m->subscriptions != NULL && i < m->n_subscriptions;
         i++) {
        rift_free(NULL, m->subscriptions[i].subject);
        rift_free(NULL, m->subscriptions[i].queue);
    }
    rift_free(NULL, m->subscriptions);
    for (size_t i = 0; m->streams != NULL && i < m->n_streams; i++) {
        rift_config_stream *s = &m->streams[i];
        rift_free(NULL, s->name);
        free_strv(s->subjects, s->n_subjects);
        rift_free(NULL, s->storage_path);
    }
    rift_free(NULL, m->streams);
    for (size_t i = 0; cfg->plugins != NULL && i < cfg->n_plugins; i++) {
        rift_config_plugin *p = &cfg->plugins[i];
        rift_free(NULL, p->name);
        rift_free(NULL, p->path);
        free_strv(p->publish, p->n_publish);
        free_strv(p->subscribe, p->n_subscribe);
    }
    rift_free(NULL, cfg->plugins);
    rift_free(NULL, cfg->monitor.listen);
    rift_config_streaming_free(&cfg->streaming);
    rift_config_cluster_free(&cfg->cluster);
    rift_free(NULL, cfg->data_dir);
    rift_free(NULL, cfg->source);
    rift_free(NULL, cfg->source_name);
    memset(cfg, 0, sizeof(*cfg));
}
