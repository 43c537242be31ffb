/*
 * nats_url.c — the `streaming.nats_server` URL (stan layer; see stan.h):
 * what riftd accepts before libnats parses it, and the form it shows in
 * logs, --check and errors, with credentials masked.
 */
#include "stan/stan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX 1024

static int bad(rift_error *err, const char *why) {
    return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                          "streaming.nats_server: %s (expected "
                          "nats://[user:password@]host[:port] or tls://...)",
                          why);
}

int rift_stan_nats_url_check(const char *url, char *shown, size_t shown_cap,
                             rift_error *err) {
    if (shown && shown_cap) {
        shown[0] = '\0';
    }
    size_t len = strlen(url);
    if (len == 0 || len > URL_MAX) {
        return bad(err, len ? "URL too long" : "empty URL");
    }
    const char *scheme = NULL;
    if (strncmp(url, "nats://", 7) == 0) {
        scheme = "nats";
    } else if (strncmp(url, "tls://", 6) == 0) {
        scheme = "tls";
    } else {
        return bad(err, "unknown scheme");
    }
    const char *rest = url + strlen(scheme) + 3;
    /* Credentials end at the last '@' (a password may hold one). */
    const char *at = strrchr(rest, '@');
    bool creds = at != NULL;
    const char *host = creds ? at + 1 : rest;
    for (const char *c = rest; c < url + len; c++) {
        if ((unsigned char)*c <= ' ' || *c == ',' || *c == '/') {
            /* A list or a path is not one server; whitespace is a typo.
             * Which byte is not said: it may be in the password. */
            return bad(err, c < host ? "invalid credentials"
                                     : "invalid character in host");
        }
    }
    const char *colon = strrchr(host, ':');
    if (host[0] == '[') { /* [v6]:port */
        const char *close = strchr(host, ']');
        colon = close && close[1] == ':' ? close + 1 : NULL;
        if (!close || (close[1] != '\0' && close[1] != ':')) {
            return bad(err, "invalid IPv6 host");
        }
    }
    size_t host_len = colon ? (size_t)(colon - host) : strlen(host);
    if (host_len == 0) {
        return bad(err, "missing host");
    }
    if (colon) {
        char *end = NULL;
        long port = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535) {
            return bad(err, "invalid port");
        }
    }
    if (shown && shown_cap) {
        snprintf(shown, shown_cap, "%s://%s%s", scheme, creds ? "***@" : "",
                 host);
    }
    return 0;
}
