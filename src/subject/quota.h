/*
 * quota.h — per-identity resource accounting (subject layer): how many
 * connections, subscriptions and durable consumers each principal holds,
 * with a per-identity ceiling and a share of the global capacity that only
 * control principals may use. Front ends (the QUIC server today, a NATS
 * listener later) take a unit before creating a resource and give it back
 * when the resource goes, so every front end counts under the same names.
 *
 * Thread-safe (one mutex; resources are created far less often than
 * messages flow). No allocation after rift_quota_new.
 */
#ifndef RIFT_SUBJECT_QUOTA_H
#define RIFT_SUBJECT_QUOTA_H

#include "common/common.h"

typedef enum rift_quota_kind {
    RIFT_QUOTA_CONNECTIONS = 0,
    RIFT_QUOTA_SUBSCRIPTIONS,
    RIFT_QUOTA_CONSUMERS,
    RIFT_QUOTA_KINDS
} rift_quota_kind;

typedef struct rift_quota_settings {
    /* Global capacity of each kind (messaging.max_connections, ...); 0 =
     * unbounded here (the resource's own limit still applies). */
    uint64_t capacity[RIFT_QUOTA_KINDS];
    /* Most one non-control identity may hold; 0 = no per-identity limit. */
    uint64_t per_identity[RIFT_QUOTA_KINDS];
    /* The last |control_reserve| units of |capacity| are for control
     * principals: others are refused once capacity - reserve are taken. */
    uint64_t control_reserve[RIFT_QUOTA_KINDS];
    /* Principals, by name (unique), and which of them have control. */
    const char *const *names;
    const bool *control;
    size_t count;
} rift_quota_settings;

typedef struct rift_quota rift_quota;

/* Errors: RIFT_ERR_INVALID_ARGUMENT (a reserve not below its capacity),
 * RIFT_ERR_NOMEM. */
int rift_quota_new(rift_quota **pq, const rift_quota_settings *s,
                   rift_error *err);
void rift_quota_del(rift_quota *q);

/* The slot of identity |name|, or SIZE_MAX when it is not a principal
 * (front ends look it up once, at authentication). */
size_t rift_quota_find(const rift_quota *q, const char *name, size_t len);

/*
 * rift_quota_take counts one |kind| for |slot|, or refuses with the
 * resource's limit error — RIFT_ERR_LIMIT "connection limit reached",
 * RIFT_ERR_SUBSCRIPTION_LIMIT "subscription limit reached",
 * RIFT_ERR_INVALID_CONFIG "invalid messaging configuration: stream consumer
 * limit reached" (the last two are the wire's texts, §1.2, §2.9; all go
 * out as ERROR code 2) — when the identity is at its per-identity limit or, for
 * a non-control identity, the global count reached capacity - reserve. Control
 * identities are held to neither per-identity limits nor the reserve. A NULL
 * |q| or SIZE_MAX |slot| always succeeds (no accounting).
 */
int rift_quota_take(rift_quota *q, size_t slot, rift_quota_kind kind,
                    rift_error *err);

/* rift_quota_refusal fills |err| with the error rift_quota_take refuses
 * |kind| with and returns its code (a front end that learns only later
 * that an operation would have needed a unit). */
int rift_quota_refusal(rift_quota_kind kind, rift_error *err);

/* rift_quota_give returns a unit taken with rift_quota_take. */
void rift_quota_give(rift_quota *q, size_t slot, rift_quota_kind kind);

/* Units of |kind| held by |slot|, or by everyone when |slot| is SIZE_MAX. */
uint64_t rift_quota_used(rift_quota *q, size_t slot, rift_quota_kind kind);

#endif /* RIFT_SUBJECT_QUOTA_H */
