/* Naming shared by the STAN service and the importer (see names.h). */
#include "stan/names.h"

static const char hex[] = "0123456789abcdef";

bool stan_dir_name(const char *name, size_t len, char *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        /* A leading '.' is escaped so no channel names "." or "..". */
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                     (c == '.' && i > 0);
        if (n + 4 > cap || n + 3 > STAN_MAX_DIR_NAME) {
            return false;
        }
        if (plain) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
    return true;
}

void stan_append_safe(char *out, size_t cap, size_t *n, const char *s,
                      size_t len) {
    for (size_t i = 0; i < len && *n + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.') {
            out[(*n)++] = (char)c;
        } else {
            out[(*n)++] = '%';
            out[(*n)++] = hex[c >> 4];
            out[(*n)++] = hex[c & 15];
        }
    }
    out[*n] = '\0';
}

void stan_durable_name(char *out, size_t cap, size_t *n, const char *client,
                       size_t client_len, const char *durable,
                       size_t durable_len) {
    stan_append_safe(out, cap, n, "d-", 2);
    stan_append_safe(out, cap, n, client, client_len);
    stan_append_safe(out, cap, n, "-", 1);
    stan_append_safe(out, cap, n, durable, durable_len);
}

void stan_queue_durable_name(char *out, size_t cap, size_t *n,
                             const char *durable, size_t durable_len,
                             const char *group, size_t group_len) {
    stan_append_safe(out, cap, n, "q-", 2);
    stan_append_safe(out, cap, n, durable, durable_len);
    /* ':' cannot come out of stan_append_safe, so no group can forge it. */
    if (*n + 2 < cap) {
        out[(*n)++] = ':';
        out[*n] = '\0';
    }
    stan_append_safe(out, cap, n, group, group_len);
}
