/*
 * host_status.c — what the Lua plugin host tells about its plugins (lua
 * layer): rift.events.plugin events and the status table (plain and as
 * JSON) that rift.control.status and riftd report. Split from host.c, which
 * runs the threads.
 */
#include "lua/host_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- Events ---- */

void rift_plugin_host_event(rift_plugin_host *h, const rift_lua_plugin *p,
                            const char *state, const char *error) {
    if (h->broker == NULL) {
        return;
    }
    json_t *o = json_object();
    if (o == NULL) {
        return;
    }
    json_object_set_new(o, "plugin", json_string(p->name));
    json_object_set_new(o, "state", json_string(state));
    if (error != NULL) {
        /* Lua error texts are not always valid UTF-8. */
        json_t *e = json_string(error);
        json_object_set_new(o, "error",
                            e != NULL ? e : json_string("(not UTF-8)"));
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (s == NULL) {
        return;
    }
    rift_error err;
    if (rift_broker_publish(h->broker, RIFT_PLUGIN_EVENT_SUBJECT,
                            sizeof(RIFT_PLUGIN_EVENT_SUBJECT) - 1, NULL, 0,
                            (const uint8_t *)s, strlen(s), NULL, &err) != 0) {
        rift_log(RIFT_LOG_WARN, "%s: event: %s", p->name, err.text);
    }
    free(s);
}

/* ---- Status ---- */

const char *rift_plugin_state_name(rift_plugin_state state) {
    switch (state) {
    case RIFT_PLUGIN_RUNNING:
        return "running";
    case RIFT_PLUGIN_DISABLED:
        return "disabled";
    }
    return "unknown";
}

int rift_plugin_host_status(rift_plugin_host *h, rift_plugin_status **out,
                            size_t *n) {
    pthread_mutex_lock(&h->lock);
    size_t count = 0;
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
        count++;
    }
    rift_plugin_status *st = rift_calloc(NULL, count + 1, sizeof(*st));
    if (st == NULL) {
        pthread_mutex_unlock(&h->lock);
        return RIFT_ERR_NOMEM;
    }
    size_t i = 0;
    int rc = 0;
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next, i++) {
        rift_plugin_status *s = &st[i];
        s->name = rift_strndup(NULL, p->name, strlen(p->name));
        if (p->last_error != NULL) {
            s->last_error =
                rift_strndup(NULL, p->last_error, strlen(p->last_error));
        }
        if (s->name == NULL || (p->last_error != NULL && !s->last_error)) {
            rc = RIFT_ERR_NOMEM;
            i++;
            break;
        }
        s->state = (rift_plugin_state)p->state;
        s->compat = p->is_compat;
        s->callbacks =
            atomic_load_explicit(&p->callbacks, memory_order_relaxed);
        s->messages = atomic_load_explicit(&p->messages, memory_order_relaxed);
        s->errors = atomic_load_explicit(&p->errors, memory_order_relaxed);
        s->published =
            atomic_load_explicit(&p->published, memory_order_relaxed);
        s->dropped = atomic_load_explicit(&p->dropped, memory_order_relaxed);
        s->memory_bytes =
            atomic_load_explicit(&p->mem_snapshot, memory_order_relaxed);
        s->queued = p->cq_len;
        if (p->vm != NULL) {
            s->timers =
                atomic_load_explicit(&p->vm->n_timers, memory_order_relaxed);
            s->requests =
                atomic_load_explicit(&p->vm->n_requests, memory_order_relaxed);
            for (rift_lua_binding *b = p->vm->bindings; b != NULL;
                 b = b->next) {
                if (b->kind == RIFT_LUA_BIND_SUB) {
                    s->subscriptions++;
                }
                if (b->sub != NULL) {
                    s->queued += rift_sub_pending(b->sub);
                }
            }
        }
    }
    pthread_mutex_unlock(&h->lock);
    if (rc != 0) {
        rift_plugin_host_status_free(st, i);
        return rc;
    }
    *out = st;
    *n = count;
    return 0;
}

void rift_plugin_host_status_free(rift_plugin_status *st, size_t n) {
    if (st == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        free(st[i].name);
        free(st[i].last_error);
    }
    free(st);
}

void *rift_plugin_host_status_json(rift_plugin_host *h) {
    rift_plugin_status *st;
    size_t n;
    if (rift_plugin_host_status(h, &st, &n) != 0) {
        return NULL;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        const rift_plugin_status *s = &st[i];
        json_t *o = json_pack(
            "{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
            "s:I}",
            "name", s->name, "state", rift_plugin_state_name(s->state),
            "compat", s->compat, "callbacks", (json_int_t)s->callbacks,
            "messages", (json_int_t)s->messages, "errors",
            (json_int_t)s->errors, "published", (json_int_t)s->published,
            "dropped", (json_int_t)s->dropped, "memory_bytes",
            (json_int_t)s->memory_bytes, "subscriptions",
            (json_int_t)s->subscriptions, "timers", (json_int_t)s->timers,
            "requests", (json_int_t)s->requests, "queued",
            (json_int_t)s->queued);
        if (o != NULL && s->last_error != NULL) {
            json_t *e = json_string(s->last_error);
            json_object_set_new(o, "last_error",
                                e != NULL ? e : json_string("(not UTF-8)"));
        }
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    rift_plugin_host_status_free(st, n);
    return arr;
}
