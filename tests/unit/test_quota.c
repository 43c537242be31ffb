/*
 * test_quota.c — the per-identity accounting of subject/quota.h (tests of
 * the subject layer): per-identity limits, the control reserve, control
 * identities, giving back, and the texts and codes of refusals.
 */
#include "test.h"

#include "subject/quota.h"

static const char *const names[] = {"a", "b", "admin"};
static const bool control[] = {false, false, true};

static rift_quota *make(uint64_t cap, uint64_t per, uint64_t reserve) {
    rift_quota_settings s = {
        .capacity = {cap, cap, cap},
        .per_identity = {per, per, per},
        .control_reserve = {reserve, reserve, reserve},
        .names = names,
        .control = control,
        .count = 3,
    };
    rift_quota *q = NULL;
    rift_error err;
    return rift_quota_new(&q, &s, &err) == 0 ? q : NULL;
}

RIFT_TEST(per_identity_limit_and_texts) {
    rift_quota *q = make(0, 2, 0);
    CHECK(q != NULL);
    size_t a = rift_quota_find(q, "a", 1);
    CHECK_EQ_U64(a, 0);
    CHECK_EQ_U64(rift_quota_find(q, "nobody", 6), SIZE_MAX);
    CHECK_EQ_U64(rift_quota_find(q, "adm", 3), SIZE_MAX);
    rift_error err;
    static const char *const texts[] = {
        "connection limit reached",
        "subscription limit reached",
        "invalid messaging configuration: stream consumer limit reached",
    };
    static const int codes[] = {RIFT_ERR_LIMIT, RIFT_ERR_SUBSCRIPTION_LIMIT,
                                RIFT_ERR_INVALID_CONFIG};
    for (int k = 0; k < RIFT_QUOTA_KINDS; k++) {
        CHECK_OK(rift_quota_take(q, a, (rift_quota_kind)k, &err));
        CHECK_OK(rift_quota_take(q, a, (rift_quota_kind)k, &err));
        CHECK_EQ_INT(rift_quota_take(q, a, (rift_quota_kind)k, &err), codes[k]);
        CHECK_EQ_STR(err.text, texts[k]);
        /* Kinds and identities are counted apart. */
        CHECK_OK(rift_quota_take(q, 1, (rift_quota_kind)k, &err));
        rift_quota_give(q, a, (rift_quota_kind)k);
        CHECK_OK(rift_quota_take(q, a, (rift_quota_kind)k, &err));
        CHECK_EQ_U64(rift_quota_used(q, a, (rift_quota_kind)k), 2);
        CHECK_EQ_U64(rift_quota_used(q, SIZE_MAX, (rift_quota_kind)k), 3);
    }
    /* Control identities have no per-identity limit. */
    size_t admin = rift_quota_find(q, "admin", 5);
    for (int i = 0; i < 10; i++) {
        CHECK_OK(rift_quota_take(q, admin, RIFT_QUOTA_SUBSCRIPTIONS, &err));
    }
    /* Unknown identities and a missing quota are not accounted. */
    CHECK_OK(rift_quota_take(q, SIZE_MAX, RIFT_QUOTA_CONNECTIONS, &err));
    CHECK_OK(rift_quota_take(NULL, 0, RIFT_QUOTA_CONNECTIONS, &err));
    rift_quota_give(NULL, 0, RIFT_QUOTA_CONNECTIONS);
    rift_quota_del(q);
}

RIFT_TEST(control_reserve) {
    rift_quota *q = make(4, 0, 1);
    CHECK(q != NULL);
    rift_error err;
    CHECK_OK(rift_quota_take(q, 0, RIFT_QUOTA_CONNECTIONS, &err));
    CHECK_OK(rift_quota_take(q, 0, RIFT_QUOTA_CONNECTIONS, &err));
    CHECK_OK(rift_quota_take(q, 1, RIFT_QUOTA_CONNECTIONS, &err));
    /* Three of four taken: the last one is the control reserve. */
    CHECK_EQ_INT(rift_quota_take(q, 1, RIFT_QUOTA_CONNECTIONS, &err),
                 RIFT_ERR_LIMIT);
    CHECK_OK(rift_quota_take(q, 2, RIFT_QUOTA_CONNECTIONS, &err));
    /* Control identities stop at the capacity itself. */
    CHECK_EQ_INT(rift_quota_take(q, 2, RIFT_QUOTA_CONNECTIONS, &err),
                 RIFT_ERR_LIMIT);
    rift_quota_give(q, 2, RIFT_QUOTA_CONNECTIONS);
    rift_quota_give(q, 0, RIFT_QUOTA_CONNECTIONS);
    CHECK_OK(rift_quota_take(q, 1, RIFT_QUOTA_CONNECTIONS, &err));
    /* A give without a take never wraps the count. */
    rift_quota_give(q, 2, RIFT_QUOTA_CONNECTIONS);
    CHECK_EQ_U64(rift_quota_used(q, SIZE_MAX, RIFT_QUOTA_CONNECTIONS), 3);
    rift_quota_del(q);
}

RIFT_TEST(reserve_must_be_below_capacity) {
    CHECK(make(4, 0, 4) == NULL);
    rift_quota *q = make(0, 0, 4); /* unbounded: no reserve to keep */
    CHECK(q != NULL);
    rift_quota_del(q);
}
