/*
 * subject_acl.c — benchmark of the subject layer's per-message predicates
 * (bench layer): wire validation, covers, can_publish, can_subscribe and
 * the token lookup. Prints nanoseconds per call; numbers are noisy on a
 * shared machine and carry no thresholds.
 */
#include "subject/auth.h"

#include <stdio.h>
#include <string.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static volatile int sink;

static double per_call_ns(rift_tstamp start, long n) {
    return (double)(rift_now_ns() - start) / (double)n;
}

int main(void) {
    const long n = 2000000;
    rift_identity id;
    rift_identity_init(&id, NULL);
    static const char *grants[] = {"chat.*.room", "metrics.cpu.*", "game.>",
                                   "_INBOX.>"};
    for (size_t i = 0; i < 4; i++) {
        if (rift_identity_allow_publish(&id, grants[i], strlen(grants[i])) ||
            rift_identity_allow_subscribe(&id, grants[i], strlen(grants[i]))) {
            return 1;
        }
    }
    static const char subject[] = "game.region.eu-west.player.12345.moved";
    static const char reply[] = "_INBOX.0123456789abcdef0123456789abcdef";

    rift_tstamp t = rift_now_ns();
    for (long i = 0; i < n; i++) {
        sink += rift_subject_validate_literal(S(subject), NULL);
    }
    printf("validate_literal (38 B)          %6.1f ns\n", per_call_ns(t, n));

    t = rift_now_ns();
    for (long i = 0; i < n; i++) {
        sink += rift_subject_covers(S("game.*.eu-west.>"), S(subject));
    }
    printf("covers (pattern vs 38 B)         %6.1f ns\n", per_call_ns(t, n));

    t = rift_now_ns();
    for (long i = 0; i < n; i++) {
        sink += rift_identity_can_publish(&id, S(subject), S(reply), NULL);
    }
    printf("can_publish (4 grants, reply)    %6.1f ns\n", per_call_ns(t, n));

    t = rift_now_ns();
    for (long i = 0; i < n; i++) {
        sink += rift_identity_can_subscribe(&id, S("game.*.eu-west.>"), NULL);
    }
    printf("can_subscribe (4 grants)         %6.1f ns\n", per_call_ns(t, n));

    rift_identity ids[64];
    char name[32], token[64];
    for (int i = 0; i < 64; i++) {
        rift_identity_init(&ids[i], NULL);
        int nl = snprintf(name, sizeof(name), "plugin-%d", i);
        int tl = snprintf(token, sizeof(token),
                          "token-%d-abcdefghijklmnopqrstuvwxyz012345", i);
        if (rift_identity_set_name(&ids[i], name, (size_t)nl) ||
            rift_identity_set_token(&ids[i], token, (size_t)tl)) {
            return 1;
        }
    }
    rift_auth_table table;
    if (rift_auth_table_init(&table, ids, 64, NULL) != 0) {
        return 1;
    }
    const long na = 20000;
    t = rift_now_ns();
    for (long i = 0; i < na; i++) {
        sink +=
            rift_auth_table_lookup(
                &table, S("token-63-abcdefghijklmnopqrstuvwxyz012345")) != NULL;
    }
    printf("auth lookup (64 identities)      %6.1f ns\n", per_call_ns(t, na));
    rift_auth_table_free(&table);
    for (int i = 0; i < 64; i++) {
        rift_identity_free(&ids[i]);
    }
    rift_identity_free(&id);
    return 0;
}
