/*
 * quota.c — per-identity resource accounting (subject layer). See quota.h.
 */
#include "subject/quota.h"

#include <pthread.h>
#include <string.h>

typedef struct quota_id {
    char *name;
    size_t len;
    bool control;
    uint64_t used[RIFT_QUOTA_KINDS];
} quota_id;

struct rift_quota {
    pthread_mutex_t lock;
    rift_quota_settings s; /* names/control not kept: copied into |ids| */
    uint64_t used[RIFT_QUOTA_KINDS];
    quota_id *ids;
    size_t n;
};

static const char *const limit_texts[RIFT_QUOTA_KINDS] = {
    "connection limit reached",
    "subscription limit reached",
    "invalid messaging configuration: stream consumer limit reached",
};

int rift_quota_new(rift_quota **pq, const rift_quota_settings *s,
                   rift_error *err) {
    *pq = NULL;
    for (int k = 0; k < RIFT_QUOTA_KINDS; k++) {
        if (s->capacity[k] != 0 && s->control_reserve[k] >= s->capacity[k]) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "control reserve must be below capacity");
        }
    }
    rift_quota *q = rift_calloc(NULL, 1, sizeof(*q));
    if (q == NULL ||
        (s->count > 0 &&
         (q->ids = rift_calloc(NULL, s->count, sizeof(*q->ids))) == NULL)) {
        rift_free(NULL, q);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&q->lock, NULL);
    q->s = *s;
    q->s.names = NULL;
    q->s.control = NULL;
    for (size_t i = 0; i < s->count; i++) {
        quota_id *id = &q->ids[i];
        id->len = strlen(s->names[i]);
        id->name = rift_strndup(NULL, s->names[i], id->len);
        id->control = s->control != NULL && s->control[i];
        q->n = i + 1;
        if (id->name == NULL) {
            rift_quota_del(q);
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    *pq = q;
    return 0;
}

void rift_quota_del(rift_quota *q) {
    if (q == NULL) {
        return;
    }
    for (size_t i = 0; i < q->n; i++) {
        rift_free(NULL, q->ids[i].name);
    }
    rift_free(NULL, q->ids);
    pthread_mutex_destroy(&q->lock);
    rift_free(NULL, q);
}

size_t rift_quota_find(const rift_quota *q, const char *name, size_t len) {
    for (size_t i = 0; q != NULL && i < q->n; i++) {
        if (q->ids[i].len == len && memcmp(q->ids[i].name, name, len) == 0) {
            return i;
        }
    }
    return SIZE_MAX;
}

int rift_quota_take(rift_quota *q, size_t slot, rift_quota_kind kind,
                    rift_error *err) {
    if (q == NULL || slot >= q->n) {
        return 0;
    }
    quota_id *id = &q->ids[slot];
    const rift_quota_settings *s = &q->s;
    pthread_mutex_lock(&q->lock);
    bool full;
    if (id->control) {
        full = s->capacity[kind] != 0 && q->used[kind] >= s->capacity[kind];
    } else {
        full = (s->per_identity[kind] != 0 &&
                id->used[kind] >= s->per_identity[kind]) ||
               (s->capacity[kind] != 0 &&
                q->used[kind] >= s->capacity[kind] - s->control_reserve[kind]);
    }
    if (!full) {
        id->used[kind]++;
        q->used[kind]++;
    }
    pthread_mutex_unlock(&q->lock);
    return full ? rift_quota_refusal(kind, err) : 0;
}

int rift_quota_refusal(rift_quota_kind kind, rift_error *err) {
    static const int codes[RIFT_QUOTA_KINDS] = {
        RIFT_ERR_LIMIT, RIFT_ERR_SUBSCRIPTION_LIMIT, RIFT_ERR_INVALID_CONFIG};
    return rift_error_set(err, codes[kind], "%s", limit_texts[kind]);
}

void rift_quota_give(rift_quota *q, size_t slot, rift_quota_kind kind) {
    if (q == NULL || slot >= q->n) {
        return;
    }
    pthread_mutex_lock(&q->lock);
    /* Never below zero: a give without its take is a caller bug, and
     * wrapping would lock the identity out for good. */
    if (q->ids[slot].used[kind] > 0) {
        q->ids[slot].used[kind]--;
        q->used[kind]--;
    }
    pthread_mutex_unlock(&q->lock);
}

uint64_t rift_quota_used(rift_quota *q, size_t slot, rift_quota_kind kind) {
    if (q == NULL) {
        return 0;
    }
    pthread_mutex_lock(&q->lock);
    uint64_t n = slot == SIZE_MAX ? q->used[kind]
                 : slot < q->n    ? q->ids[slot].used[kind]
                                  : 0;
    pthread_mutex_unlock(&q->lock);
    return n;
}
