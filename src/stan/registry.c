/*
 * registry.c — the service's channels as streams for the rest of riftd
 * (stan layer; see views.h). riftd's stream lookup asks here for names it
 * does not have, so a Rift v1 client publishes to and consumes from a
 * channel's stream like any other.
 *
 * Lifetime: a user pins the channel (an atomic count taken under
 * |reg_lock|); the only removal at runtime, max_inactivity, unlinks a
 * channel under the same lock and only when it is not pinned, so no pin
 * can arrive after its check. The service thread holds |reg_lock| only to
 * link or unlink, never across a pump, so the QUIC loop never waits for a
 * delivery.
 */
#include "stan/internal.h"
#include "stan/views.h"

#include <stdlib.h>
#include <string.h>

rift_stream *rift_stan_channel_acquire(rift_stan *svc, const char *name,
                                       size_t len, void **token) {
    *token = NULL;
    rift_stream *st = NULL;
    pthread_mutex_lock(&svc->reg_lock);
    for (stan_channel *c = svc->channels; c; c = c->next) {
        if (strlen(c->name) == len && memcmp(c->name, name, len) == 0) {
            atomic_fetch_add(&c->pins, 1);
            *token = c;
            st = c->stream;
            break;
        }
    }
    pthread_mutex_unlock(&svc->reg_lock);
    return st;
}

void rift_stan_channel_release(rift_stan *svc, void *token, bool appended) {
    stan_channel *c = token;
    if (!c) {
        return;
    }
    if (appended) {
        /* Before the unpin: the channel is still there to be marked. */
        atomic_store(&c->dirty, true);
    }
    atomic_fetch_sub(&c->pins, 1);
    if (appended) {
        stan_wake(svc);
    }
}

void rift_stan_channel_settings_of(rift_stan *svc, const char *name,
                                   rift_stan_channel_settings *out) {
    /* The settings are copied at start and never change: no lock. */
    out->limits = stan_limits_for(svc, (rift_stan_str){name, strlen(name)});
    out->max_consumers = svc->s.max_subs ? svc->s.max_subs : 1;
    out->sync_on_write = svc->s.sync_on_write;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void rift_stan_names_free(char **names, size_t count) {
    for (size_t i = 0; names && i < count; i++) {
        rift_free(NULL, names[i]);
    }
    rift_free(NULL, names);
}

int rift_stan_channel_names(rift_stan *svc, char ***pnames, size_t *pcount) {
    *pnames = NULL;
    *pcount = 0;
    pthread_mutex_lock(&svc->reg_lock);
    size_t n = 0;
    for (stan_channel *c = svc->channels; c; c = c->next) {
        n++;
    }
    char **v = rift_calloc(NULL, n ? n : 1, sizeof *v);
    size_t i = 0;
    for (stan_channel *c = svc->channels; v && c; c = c->next, i++) {
        if (!(v[i] = rift_strndup(NULL, c->name, strlen(c->name)))) {
            break;
        }
    }
    pthread_mutex_unlock(&svc->reg_lock);
    if (!v || i < n) {
        rift_stan_names_free(v, i);
        return RIFT_ERR_NOMEM;
    }
    qsort(v, n, sizeof *v, cmp_names);
    *pnames = v;
    *pcount = n;
    return 0;
}
