/*
 * config_nats.c — helpers of riftd's `nats` table (config layer): free,
 * the --check lines, equality for reload. See config_nats.h.
 */
#include "config/config_nats.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <string.h>

void rift_config_nats_free(rift_config_nats *n) {
    rift_free(NULL, n->listen);
    rift_free(NULL, n->certificate);
    rift_free(NULL, n->private_key);
    rift_free(NULL, n->anonymous);
    memset(n, 0, sizeof(*n));
}

void rift_config_nats_print(const rift_config_nats *n, FILE *out) {
    if (n->listen == NULL) {
        return;
    }
    fprintf(out, "nats: listen=%s tls=%s anonymous=%s\n", n->listen,
            n->allow_plaintext ? "off (plaintext, loopback)" : "TLS 1.3",
            n->anonymous != NULL ? n->anonymous : "(none)");
    fprintf(out,
            "  nats: max_payload=%" PRIu64 " max_pending=%" PRIu64
            " max_control_line=%" PRIu64 " max_connections=%" PRIu64 "\n",
            n->max_payload, n->max_pending, n->max_control_line,
            n->max_connections);
    fprintf(out,
            "  nats: ping_interval=%" PRIu64 "s max_pings_out=%" PRIu64
            " auth_timeout=%" PRIu64 "s write_deadline=%" PRIu64
            "s producer_pause=%" PRIu64 "ms\n",
            n->ping_interval_s, n->max_pings_out, n->auth_timeout_s,
            n->write_deadline_s, n->producer_pause_ms);
}

static bool same(const char *a, const char *b) {
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool rift_config_nats_equal(const rift_config_nats *a,
                            const rift_config_nats *b) {
    return same(a->listen, b->listen) && same(a->certificate, b->certificate) &&
           same(a->private_key, b->private_key) &&
           same(a->anonymous, b->anonymous) &&
           a->allow_plaintext == b->allow_plaintext &&
           a->max_payload == b->max_payload &&
           a->max_pending == b->max_pending &&
           a->max_control_line == b->max_control_line &&
           a->ping_interval_s == b->ping_interval_s &&
           a->max_pings_out == b->max_pings_out &&
           a->auth_timeout_s == b->auth_timeout_s &&
           a->write_deadline_s == b->write_deadline_s &&
           a->max_connections == b->max_connections &&
           a->producer_pause_ms == b->producer_pause_ms;
}

bool rift_config_nats_loopback(const struct sockaddr_storage *ss) {
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}
