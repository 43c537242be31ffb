/*
 * plugin.c — plugins of the Lua host (lua layer): one scheduling turn of a
 * plugin on a worker (due timers, compatibility messages, ready
 * subscriptions and request replies, a quantum at a time), failure
 * accounting and disabling, loading and hot reload with subscription
 * adoption, and rift_plugin_host_apply, which makes the host run a given
 * configuration.
 *
 * Apply is all or nothing. It builds a new state for every plugin first,
 * each while the plugin is held (no worker runs it); rift.subscribe calls
 * of the new code that repeat a (pattern, queue) of the old code adopt the
 * old binding, broker subscription and queued messages included. Only when
 * every state loaded does it switch them all, closing each old state with
 * everything it did not hand over; otherwise the new states go, adopted
 * bindings return, and the old code keeps running everywhere.
 */
#include "lua/host_internal.h"

#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum drain_result {
    DRAIN_DONE,
    DRAIN_MORE,
    DRAIN_DISABLED,
};

/* ---- Failures ---- */

static void set_last_error(rift_lua_plugin *p, const char *cb,
                           const char *error) {
    rift_lua_host *h = p->host;
    size_t n = strlen(cb) + strlen(error) + 3;
    char *s = rift_malloc(h->mem, n);
    if (s != NULL) {
        snprintf(s, n, "%s: %s", cb, error);
    }
    rift_plugin_host_lock(h);
    rift_free(h->mem, p->last_error);
    p->last_error = s;
    rift_plugin_host_unlock(h);
}

/* Disables |p| (owner thread): its state and everything it created go;
 * reload brings it back. */
static void disable(rift_lua_plugin *p, const char *error) {
    rift_lua_host *h = p->host;
    rift_lua_vm *vm = p->vm;
    rift_plugin_host_lock(h);
    p->vm = NULL;
    p->state = RIFT_PLUGIN_DISABLED;
    p->compat_target = false;
    rift_plugin_host_unlock(h);
    rift_plugin_host_compat_flush(h, p);
    rift_log(RIFT_LOG_ERROR,
             "%s: disabled after %u consecutive failed callbacks; reload "
             "re-enables it",
             p->name, p->failures);
    rift_lua_vm_del(vm);
    atomic_store_explicit(&p->mem_snapshot, 0, memory_order_relaxed);
    rift_plugin_host_event(h, p, "disabled", error);
}

bool rift_lua_plugin_failed(rift_lua_plugin *p, const char *cb,
                            const char *error) {
    p->failures++;
    rift_log(RIFT_LOG_ERROR, "%s: %s: %s", p->name, cb, error);
    /* The text first: whoever sees the count sees the text too. */
    set_last_error(p, cb, error);
    atomic_fetch_add_explicit(&p->errors, 1, memory_order_relaxed);
    if (p->failures < p->host->settings.max_failures) {
        return false;
    }
    disable(p, error);
    return true;
}

/* Accounts one callback; true when the plugin got disabled. */
static bool settle(rift_lua_plugin *p, int outcome, const char *cb,
                   const char *errtext) {
    bool off = false;
    if (outcome == RIFT_LUA_FAILED) {
        off = rift_lua_plugin_failed(p, cb, errtext);
    } else {
        p->failures = 0;
    }
    atomic_fetch_add_explicit(&p->callbacks, 1, memory_order_relaxed);
    return off;
}

/* ---- One scheduling turn ---- */

static int push_msg(lua_State *L, void *ud) {
    rift_lua_push_msg(L, rift_lua_vm_of(L), ud);
    return 1;
}

static int push_error(lua_State *L, void *ud) {
    lua_pushnil(L);
    lua_pushstring(L, ud);
    return 2;
}

/* Resumes the coroutine of a finished request with (reply) or (nil, err). */
static bool finish_request(rift_lua_plugin *p, rift_lua_vm *vm,
                           rift_lua_request *r, rift_msg *reply,
                           const char *error, char *errtext) {
    char cb[sizeof(r->cb)];
    memcpy(cb, r->cb, sizeof(cb));
    int co = r->co_ref;
    r->co_ref = LUA_NOREF;
    rift_lua_request_free(r, false);
    if (co == LUA_NOREF) {
        return false;
    }
    rift_lua_call c = {
        .fn_ref = LUA_NOREF,
        .co_ref = co,
        .push = reply != NULL ? push_msg : push_error,
        .ud = reply != NULL ? (void *)reply : (void *)error,
        .cb = cb,
    };
    int oc = rift_lua_vm_call(vm, &c, errtext);
    return settle(p, oc, cb, errtext);
}

static bool fire_timer(rift_lua_plugin *p, rift_lua_vm *vm, rift_lua_timer *t,
                       char *errtext) {
    if (t->req != NULL) {
        return finish_request(p, vm, t->req, NULL, "request timed out",
                              errtext);
    }
    rift_lua_call c = {.co_ref = LUA_NOREF};
    if (t->every_ns == 0) {
        int fn = t->fn_ref;
        t->fn_ref = LUA_NOREF;
        rift_lua_timer_free(t, false);
        c.fn_ref = fn;
        c.cb = "after";
        int oc = rift_lua_vm_call(vm, &c, errtext);
        luaL_unref(vm->L, LUA_REGISTRYINDEX, fn);
        return settle(p, oc, c.cb, errtext);
    }
    c.fn_ref = t->fn_ref;
    c.cb = "every";
    vm->firing = t;
    int oc = rift_lua_vm_call(vm, &c, errtext);
    vm->firing = NULL;
    if (vm->firing_cancelled) {
        vm->firing_cancelled = false;
        rift_free(vm->mem, t);
    } else {
        rift_tstamp now = rift_now_ns();
        t->due += t->every_ns;
        if (t->due <= now) {
            t->due = now + t->every_ns;
        }
        rift_plugin_host_arm_timer(p->host, t);
    }
    return settle(p, oc, c.cb, errtext);
}

/* Handles up to *budget messages of one ready binding. */
/* True when a reload or stop waits for this plugin: the worker lets go
 * between two callbacks, leaving the rest queued. */
static bool yield_wanted(rift_lua_plugin *p) {
    return atomic_load_explicit(&p->hold_pending, memory_order_relaxed) > 0;
}

/* The reply (or the end) of a request's inbox. */
static int drain_inbox(rift_lua_plugin *p, rift_lua_vm *vm, rift_lua_binding *b,
                       int *budget, char *errtext) {
    if (b->sub == NULL) {
        return DRAIN_DONE;
    }
    rift_msg *msg;
    int rc = rift_sub_recv(b->sub, 0, &msg, NULL);
    if (rc == RIFT_ERR_AGAIN) {
        return DRAIN_DONE;
    }
    (*budget)--;
    bool off = finish_request(p, vm, b->req, rc == 0 ? msg : NULL,
                              "subscription closed", errtext);
    if (rc == 0) {
        rift_msg_unref(msg);
    }
    return off ? DRAIN_DISABLED : DRAIN_DONE;
}

/* Messages taken from a subscription under one lock acquisition. */
#define DRAIN_BATCH 32

/* Handles up to *budget messages of one ready subscription. */
static int drain(rift_lua_plugin *p, rift_lua_vm *vm, rift_lua_binding *b,
                 int *budget, char *errtext) {
    rift_lua_host *h = p->host;
    if (b->kind == RIFT_LUA_BIND_INBOX) {
        return drain_inbox(p, vm, b, budget, errtext);
    }
    rift_msg *batch[DRAIN_BATCH];
    while (*budget > 0 && !yield_wanted(p)) {
        if (b->sub == NULL) {
            return DRAIN_DONE;
        }
        size_t want = RIFT_MIN((size_t)*budget, (size_t)DRAIN_BATCH);
        rift_ssize n = rift_sub_recv_batch(b->sub, 0, batch, want, NULL);
        if (n == RIFT_ERR_SLOW_CONSUMER) {
            atomic_fetch_add_explicit(&p->dropped, 1, memory_order_relaxed);
            rift_plugin_host_resubscribe(h, b);
            continue;
        }
        if (n <= 0) {
            return DRAIN_DONE; /* AGAIN, or closed by the broker */
        }
        for (rift_ssize i = 0; i < n; i++) {
            (*budget)--;
            atomic_fetch_add_explicit(&p->messages, 1, memory_order_relaxed);
            rift_lua_call c = {
                .fn_ref = b->fn_ref,
                .co_ref = LUA_NOREF,
                .push = push_msg,
                .ud = batch[i],
                .cb = b->label,
            };
            vm->dispatching = b;
            int oc = rift_lua_vm_call(vm, &c, errtext);
            vm->dispatching = NULL;
            rift_msg_unref(batch[i]);
            bool gone = vm->dispatching_closed;
            vm->dispatching_closed = false;
            bool off = settle(p, oc, b->label, errtext);
            if (gone) {
                rift_lua_binding_free_deferred(h->mem, b);
            }
            if (off || gone) {
                /* Unsubscribed or disabled: the rest of the batch goes, as
                 * a closed subscription's queue does. */
                for (rift_ssize j = i + 1; j < n; j++) {
                    rift_msg_unref(batch[j]);
                }
                return off ? DRAIN_DISABLED : DRAIN_DONE;
            }
        }
        if ((size_t)n < want) {
            return DRAIN_DONE; /* left empty: as good as an AGAIN */
        }
    }
    return DRAIN_MORE;
}

void rift_lua_plugin_run(rift_lua_plugin *p) {
    rift_lua_host *h = p->host;
    rift_lua_vm *vm = p->vm;
    char errtext[RIFT_LUA_ERROR_MAX + 1];
    if (vm == NULL) {
        return;
    }
    rift_lua_timer *t;
    while (!yield_wanted(p) && (t = rift_plugin_host_pop_due(h, p)) != NULL) {
        if (fire_timer(p, vm, t, errtext)) {
            return;
        }
    }
    int budget = RIFT_LUA_QUANTUM;
    rift_msg *m;
    while (budget > 0 && !yield_wanted(p) &&
           (m = rift_plugin_host_pop_compat(h, p)) != NULL) {
        budget--;
        atomic_fetch_add_explicit(&p->messages, 1, memory_order_relaxed);
        rift_lua_call c = {
            .fn_ref = vm->chain_ref,
            .co_ref = LUA_NOREF,
            .push = push_msg,
            .ud = m,
            .cb = "on_message",
        };
        int oc = rift_lua_vm_call(vm, &c, errtext);
        rift_msg_unref(m);
        if (settle(p, oc, c.cb, errtext)) {
            return;
        }
    }
    rift_lua_binding *b;
    while (budget > 0 && !yield_wanted(p) &&
           (b = rift_plugin_host_pop_ready(h, p)) != NULL) {
        int r = drain(p, vm, b, &budget, errtext);
        if (r == DRAIN_DISABLED) {
            return;
        }
        if (r == DRAIN_MORE) {
            rift_plugin_host_push_ready(h, b);
        }
    }
    atomic_store_explicit(&p->mem_snapshot, vm->mem_used, memory_order_relaxed);
}

/* ---- Configurations of a state ---- */

static void set_budgets(rift_lua_conf *c, size_t mem, uint64_t instr,
                        uint32_t deadline_ms) {
    c->mem_limit = mem != 0 ? mem : RIFT_PLUGIN_DEFAULT_MEMORY;
    c->instr_limit = instr != 0 ? instr : RIFT_PLUGIN_DEFAULT_INSTRUCTIONS;
    c->deadline_ns =
        (uint64_t)(deadline_ms != 0 ? deadline_ms
                                    : RIFT_PLUGIN_DEFAULT_DEADLINE_MS) *
        1000000u;
}

/* A plugin's configuration from its spec. */
static int conf_from_spec(rift_lua_host *h, const rift_plugin_spec *s,
                          rift_lua_conf **pc, rift_error *err) {
    rift_lua_conf *c = rift_calloc(h->mem, 1, sizeof(*c));
    if (c == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_identity_init(&c->identity, h->mem);
    if (s->path != NULL) {
        c->dir = rift_strndup(h->mem, s->path, strlen(s->path));
    } else {
        size_t n = strlen(s->name) + sizeof("plugins/");
        c->dir = rift_malloc(h->mem, n);
        if (c->dir != NULL) {
            snprintf(c->dir, n, "plugins/%s", s->name);
        }
    }
    int rc = c->dir != NULL ? 0 : RIFT_ERR_NOMEM;
    set_budgets(c, s->memory_bytes, s->instructions, s->deadline_ms);
    c->restricted = s->restricted;
    if (rc == 0 && s->restricted) {
        rc = rift_identity_set_name(&c->identity, s->name, strlen(s->name));
        for (size_t i = 0; rc == 0 && i < s->n_publish; i++) {
            rc = rift_identity_allow_publish(&c->identity, s->publish[i],
                                             strlen(s->publish[i]));
        }
        for (size_t i = 0; rc == 0 && i < s->n_subscribe; i++) {
            rc = rift_identity_allow_subscribe(&c->identity, s->subscribe[i],
                                               strlen(s->subscribe[i]));
        }
        c->identity.control = s->control;
    }
    if (rc != 0) {
        rift_lua_conf_free(h->mem, c);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    *pc = c;
    return 0;
}

/* The configuration state's: its source and the handlers' budgets. */
static int conf_from_compat(rift_lua_host *h, const rift_plugin_compat *cc,
                            rift_lua_conf **pc, rift_error *err) {
    rift_lua_conf *c = rift_calloc(h->mem, 1, sizeof(*c));
    if (c == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_identity_init(&c->identity, h->mem);
    c->source = rift_strndup(h->mem, cc->source, cc->source_len);
    if (c->source == NULL) {
        rift_lua_conf_free(h->mem, c);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    c->source_len = cc->source_len;
    set_budgets(c, cc->memory_bytes, cc->instructions, cc->deadline_ms);
    *pc = c;
    return 0;
}

/* ---- Loading ---- */

/* Takes the configuration's on_message (from the returned table, or from
 * rift.config in script style) as the first message handler. Argument 1
 * is the chunk's result. */
static int compat_collect(lua_State *L) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    int root = 0;
    if (lua_type(L, 1) == LUA_TTABLE) {
        root = 1;
    } else if (lua_getglobal(L, "rift") == LUA_TTABLE) {
        lua_pushliteral(L, "config");
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            root = lua_gettop(L);
        }
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, vm->handlers_ref);
    int handlers = lua_gettop(L);
    if (root != 0) {
        lua_pushliteral(L, "on_message");
        if (lua_rawget(L, root) == LUA_TFUNCTION) {
            lua_Integer n = (lua_Integer)lua_rawlen(L, handlers);
            for (lua_Integer i = n; i >= 1; i--) {
                lua_rawgeti(L, handlers, i);
                lua_rawseti(L, handlers, i + 1);
            }
            lua_rawseti(L, handlers, 1);
        }
    }
    vm->has_handlers = lua_rawlen(L, handlers) > 0;
    return 0;
}

static int load_compat(rift_lua_plugin *p, rift_lua_vm *vm, rift_error *err) {
    const rift_lua_conf *c = vm->conf;
    char chunk[256];
    snprintf(chunk, sizeof(chunk), "@%s", p->name);
    int rc = rift_lua_vm_load(vm, c->source, c->source_len, chunk, 1, err);
    if (rc != 0) {
        return rc;
    }
    lua_State *L = vm->L;
    lua_pushcfunction(L, compat_collect);
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        char text[RIFT_LUA_ERROR_MAX + 1];
        rift_lua_error_text(L, -1, text, sizeof(text));
        lua_pop(L, 1);
        return rift_error_set(err, RIFT_ERR_LUA, "%s", text);
    }
    return 0;
}

/*
 * The texts of a plugin's errors travel: its status (rift.control.status),
 * rift.events.plugin, a rejected reload's answer. They name its files
 * relative to the plugin ("echo/init.lua:12:"), never by a server path;
 * only the local log gets the folder.
 */
static int load_failed(rift_lua_vm *vm, const char *path, const char *why,
                       rift_error *err) {
    const char *name = vm->plugin->name;
    rift_log(RIFT_LOG_ERROR, "%s: cannot read %s: %s", name, path, why);
    return rift_error_set(err, RIFT_ERR_LUA, "cannot read %s/init.lua: %s",
                          name, why);
}

static int load_folder(rift_lua_vm *vm, rift_error *err) {
    rift_lua_conf *c = vm->conf;
    char path[PATH_MAX];
    int w = snprintf(path, sizeof(path), "%s/init.lua", c->dir);
    if (w < 0 || (size_t)w >= sizeof(path)) {
        return rift_error_set(err, RIFT_ERR_LUA, "plugin path too long");
    }
    c->dir_real = realpath(c->dir, NULL);
    if (c->dir_real == NULL) {
        return load_failed(vm, path, strerror(errno), err);
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = rift_lua_read_file(vm->mem, path, c->dir_real, &buf, &len);
    if (rc != 0) {
        return load_failed(vm, path,
                           rc == RIFT_ERR_LIMIT ? "file exceeds 1 MiB"
                           : rc == RIFT_ERR_PERMISSION
                               ? "file lies outside the plugin folder"
                           : rc == RIFT_ERR_NOMEM ? "out of memory"
                                                  : strerror(-rc),
                           err);
    }
    char chunk[PATH_MAX + 2];
    snprintf(chunk, sizeof(chunk), "@%s/init.lua", vm->plugin->name);
    rc = rift_lua_vm_load(vm, buf, len, chunk, 0, err);
    rift_free(vm->mem, buf);
    return rc;
}

/* Gives adopted bindings back to the state they came from. */
static void adoption_rollback(rift_lua_vm *vm) {
    rift_lua_binding *b = vm->bindings, *next;
    for (; b != NULL; b = next) {
        next = b->next;
        if (b->old_vm != NULL) {
            rift_lua_vm *to = b->old_vm;
            b->fn_ref = b->old_fn_ref;
            b->old_fn_ref = LUA_NOREF;
            b->old_vm = NULL;
            rift_lua_binding_move(b, to);
        }
    }
}

static void adoption_commit(rift_lua_vm *vm) {
    for (rift_lua_binding *b = vm->bindings; b != NULL; b = b->next) {
        b->old_vm = NULL;
        b->old_fn_ref = LUA_NOREF;
    }
}

/*
 * Builds a new state for |p| from |conf| (owned from now on) and runs its
 * code, adopting the current state's subscriptions where the new code
 * repeats them (apply thread, |p| held). Nothing is switched yet: the
 * caller commits with plugin_commit or undoes with plugin_discard.
 */
static int plugin_prepare(rift_lua_plugin *p, rift_lua_conf *conf,
                          rift_lua_vm **pvm, rift_error *err) {
    rift_lua_host *h = p->host;
    rift_lua_vm *vm = NULL;
    int rc = rift_lua_vm_new(&vm, p, conf, err);
    if (rc != 0) {
        return rc;
    }
    vm->adopt_from = p->vm;
    rc = p->is_compat ? load_compat(p, vm, err) : load_folder(vm, err);
    vm->adopt_from = NULL;
    if (rc == 0 && vm->has_handlers && p->cq == NULL) {
        p->cq = rift_calloc(h->mem, h->sub_capacity, sizeof(*p->cq));
        if (p->cq == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    if (rc != 0) {
        adoption_rollback(vm);
        rift_lua_vm_del(vm);
        return rc;
    }
    *pvm = vm;
    return 0;
}

static void plugin_discard(rift_lua_vm *vm) {
    adoption_rollback(vm);
    rift_lua_vm_del(vm);
}

/* Makes |vm| the plugin's state and closes the previous one with
 * everything it did not hand over. */
static void plugin_commit(rift_lua_plugin *p, rift_lua_vm *vm) {
    rift_lua_host *h = p->host;
    rift_lua_vm *old = p->vm;
    bool was_running = old != NULL;
    adoption_commit(vm);
    rift_plugin_host_lock(h);
    p->vm = vm;
    p->state = RIFT_PLUGIN_RUNNING;
    p->cq_cap = p->cq != NULL ? h->sub_capacity : 0;
    rift_plugin_host_unlock(h);
    p->failures = 0;
    rift_lua_vm_del(old);
    atomic_store_explicit(&p->mem_snapshot, vm->mem_used, memory_order_relaxed);
    if (!p->is_compat || vm->has_handlers) {
        rift_log(RIFT_LOG_INFO, "%s: %s", p->name,
                 was_running ? "reloaded" : "loaded");
        rift_plugin_host_event(h, p, "running", NULL);
    }
}

/* ---- Plugin objects ---- */

static bool plugin_name_valid(const char *s) {
    size_t len = s != NULL ? strlen(s) : 0;
    if (len == 0 || len > 128) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}

static void plugin_free(rift_lua_plugin *p) {
    rift_lua_host *h = p->host;
    rift_lua_vm_del(p->vm);
    p->vm = NULL;
    if (p->cq != NULL) {
        rift_plugin_host_compat_flush(h, p);
    }
    rift_free(h->mem, p->name);
    rift_free(h->mem, p->cq);
    rift_free(h->mem, p->last_error);
    rift_free(h->mem, p);
}

static rift_lua_plugin *plugin_new(rift_lua_host *h, const char *name,
                                   bool compat) {
    rift_lua_plugin *p = rift_calloc(h->mem, 1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->host = h;
    p->is_compat = compat;
    p->state = RIFT_PLUGIN_RUNNING;
    p->held = 1; /* released once it is in the host's list */
    p->name = rift_strndup(h->mem, name, strlen(name));
    if (p->name == NULL) {
        plugin_free(p);
        return NULL;
    }
    return p;
}

/* ---- Compatibility subscriptions ---- */

static bool same_str(const char *a, const char *b) {
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void compat_binding_free(rift_lua_host *h, rift_lua_binding *b) {
    rift_plugin_host_close_sub(h, b);
    rift_free(h->mem, b->pattern);
    rift_free(h->mem, b->queue);
    rift_free(h->mem, b->label);
    rift_free(h->mem, b);
}

/* Makes h->compat exactly |subs|; unchanged entries keep their queue. */
static int compat_apply(rift_lua_host *h, const rift_plugin_subscription *subs,
                        size_t n, rift_error *err) {
    int rc = 0;
    rift_lua_binding **next = NULL;
    if (n > 0) {
        next = rift_calloc(h->mem, n, sizeof(*next));
        if (next == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    bool *taken = rift_calloc(h->mem, h->n_compat + 1, sizeof(*taken));
    if (taken == NULL) {
        rift_free(h->mem, next);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        rift_lua_binding *b = NULL;
        for (size_t j = 0; j < h->n_compat; j++) {
            rift_lua_binding *o = h->compat[j];
            if (!taken[j] && strcmp(o->pattern, subs[i].subject) == 0 &&
                same_str(o->queue, subs[i].queue)) {
                taken[j] = true;
                b = o;
                break;
            }
        }
        if (b == NULL) {
            b = rift_calloc(h->mem, 1, sizeof(*b));
            if (b == NULL ||
                (b->pattern = rift_strndup(h->mem, subs[i].subject,
                                           strlen(subs[i].subject))) == NULL ||
                (subs[i].queue != NULL &&
                 (b->queue = rift_strndup(h->mem, subs[i].queue,
                                          strlen(subs[i].queue))) == NULL)) {
                if (b != NULL) {
                    compat_binding_free(h, b);
                }
                if (rc == 0) {
                    rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
                }
                continue;
            }
            b->kind = RIFT_LUA_BIND_COMPAT;
            b->fn_ref = b->old_fn_ref = LUA_NOREF;
            rift_error e;
            int r = h->broker != NULL ? rift_plugin_host_subscribe(h, b, &e)
                                      : rift_error_set(&e, RIFT_ERR_CLOSED,
                                                       RIFT_LUA_TEXT_NO_BROKER);
            if (r != 0) {
                if (rc == 0) {
                    rc = rift_error_set(err, r, "messaging.subscriptions: %s",
                                        e.text);
                }
                compat_binding_free(h, b);
                continue;
            }
        }
        next[k++] = b;
    }
    rift_plugin_host_lock(h);
    rift_lua_binding **old = h->compat;
    size_t n_old = h->n_compat;
    h->compat = next;
    h->n_compat = k;
    rift_plugin_host_unlock(h);
    rift_plugin_host_wake(h);
    for (size_t j = 0; j < n_old; j++) {
        if (!taken[j]) {
            compat_binding_free(h, old[j]);
        }
    }
    rift_free(h->mem, old);
    rift_free(h->mem, taken);
    return rc;
}

/* ---- apply ---- */

static rift_lua_plugin *find_plugin(rift_lua_host *h, const char *name,
                                    bool compat) {
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
        if (p->is_compat == compat && (compat || strcmp(p->name, name) == 0)) {
            return p;
        }
    }
    return NULL;
}

/* One plugin of the configuration being applied. */
typedef struct staged {
    rift_lua_plugin *p;
    bool fresh;      /* created by this apply */
    rift_lua_vm *vm; /* its new state, until committed */
} staged;

/* Stages |p| (held) with a new state built from |conf|; on failure fills
 * |err| with "<name>: init: <error>". */
static int stage(staged *st, rift_lua_plugin *p, bool fresh,
                 rift_lua_conf *conf, rift_error *err) {
    st->p = p;
    st->fresh = fresh;
    st->vm = NULL;
    rift_error e;
    int rc = plugin_prepare(p, conf, &st->vm, &e);
    if (rc != 0) {
        rift_log(RIFT_LOG_ERROR, "%s: init: %s", p->name, e.text);
        set_last_error(p, "init", e.text);
        return rift_error_set(err, rc == RIFT_ERR_NOMEM ? rc : RIFT_ERR_LUA,
                              "%s: init: %s", p->name, e.text);
    }
    return 0;
}

/* Takes |p| out of the host and frees it (apply thread). */
static void plugin_remove(rift_lua_host *h, rift_lua_plugin *p) {
    rift_plugin_host_hold(h, p);
    plugin_free(p);
}

int rift_plugin_host_apply(rift_plugin_host *h, const rift_plugin_spec *specs,
                           size_t n_specs, const rift_plugin_compat *compat,
                           rift_error *err) {
    for (size_t i = 0; i < n_specs; i++) {
        bool dup = false;
        for (size_t j = 0; j < i; j++) {
            dup = dup || strcmp(specs[i].name, specs[j].name) == 0;
        }
        if (!plugin_name_valid(specs[i].name) || dup) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "plugins: names must be unique and contain "
                                  "1..=128 letters, digits, underscores or "
                                  "hyphens");
        }
    }
    pthread_mutex_lock(&h->apply_lock);
    staged *st = rift_calloc(h->mem, n_specs + 1, sizeof(*st));
    if (st == NULL) {
        pthread_mutex_unlock(&h->apply_lock);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    int rc = 0;
    rift_lua_conf *conf = NULL;

    /* 1. Build every new state; the running ones keep going meanwhile,
     * except each plugin being reloaded, held from here to the end. */
    bool with_compat = compat != NULL && compat->source != NULL;
    if (with_compat) {
        rift_lua_plugin *cp = find_plugin(h, NULL, true);
        bool fresh = cp == NULL;
        if (fresh) {
            cp = plugin_new(h, compat->name != NULL ? compat->name : "config",
                            true);
        } else {
            rift_plugin_host_hold(h, cp);
        }
        if (cp == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((rc = conf_from_compat(h, compat, &conf, err)) != 0 ||
            (rc = stage(&st[k], cp, fresh, conf, err)) != 0) {
            st[k].p = cp;
            st[k++].fresh = fresh;
            goto fail;
        }
        k++;
    }
    for (size_t i = 0; i < n_specs; i++) {
        rift_lua_plugin *p = find_plugin(h, specs[i].name, false);
        bool fresh = p == NULL;
        if (fresh) {
            p = plugin_new(h, specs[i].name, false);
        } else {
            rift_plugin_host_hold(h, p);
        }
        if (p == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((rc = conf_from_spec(h, &specs[i], &conf, err)) != 0 ||
            (rc = stage(&st[k], p, fresh, conf, err)) != 0) {
            st[k].p = p;
            st[k++].fresh = fresh;
            goto fail;
        }
        k++;
    }

    /* 2. The pairing rule of the original, over every new state. */
    bool handlers = false;
    for (size_t i = 0; i < k; i++) {
        handlers = handlers || st[i].vm->has_handlers;
    }
    if (handlers != (compat != NULL && compat->n_subs > 0)) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                            RIFT_LUA_TEXT_TOGETHER);
        goto fail;
    }

    /* 3. Switch. A configuration without handlers needs no state. */
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        rift_lua_plugin *p = st[i].p;
        if (p->is_compat && !st[i].vm->has_handlers) {
            rift_lua_vm_del(st[i].vm);
            if (st[i].fresh) {
                plugin_free(p);
            } /* else it leaves with the old list below */
            continue;
        }
        plugin_commit(p, st[i].vm);
        st[n++] = st[i];
    }
    rift_plugin_host_lock(h);
    rift_lua_plugin *old = h->plugins;
    h->plugins = NULL;
    for (size_t i = n; i-- > 0;) {
        st[i].p->next = h->plugins;
        h->plugins = st[i].p;
    }
    rift_plugin_host_unlock(h);
    while (old != NULL) {
        rift_lua_plugin *next = old->next;
        bool kept = false;
        for (size_t i = 0; i < n; i++) {
            kept = kept || st[i].p == old;
        }
        if (!kept) {
            plugin_remove(h, old);
        }
        old = next;
    }

    /* 4. Compatibility subscriptions, then who receives their messages. */
    rc = compat_apply(h, compat != NULL ? compat->subs : NULL,
                      compat != NULL ? compat->n_subs : 0, err);
    rift_plugin_host_lock(h);
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
        p->compat_target =
            p->vm != NULL && p->vm->has_handlers && h->n_compat > 0;
        if (!p->compat_target && p->cq_len > 0) {
            /* No handler left to run them. */
            while (p->cq_len > 0) {
                rift_msg_unref(p->cq[p->cq_head]);
                p->cq[p->cq_head] = NULL;
                p->cq_head = (p->cq_head + 1) % p->cq_cap;
                p->cq_len--;
            }
        }
    }
    rift_plugin_host_unlock(h);
    for (size_t i = 0; i < n; i++) {
        rift_plugin_host_release(h, st[i].p);
    }
    rift_free(h->mem, st);
    pthread_mutex_unlock(&h->apply_lock);
    return rc;

fail:
    /* Nothing changes: new states go, adopted subscriptions go back. */
    for (size_t i = k; i-- > 0;) {
        if (st[i].vm != NULL) {
            plugin_discard(st[i].vm);
        }
        if (st[i].fresh) {
            plugin_free(st[i].p);
        } else {
            rift_plugin_host_release(h, st[i].p);
        }
    }
    rift_free(h->mem, st);
    pthread_mutex_unlock(&h->apply_lock);
    return rc;
}

void rift_plugin_host_remove_all(rift_lua_host *h) {
    rift_lua_plugin *p = h->plugins;
    h->plugins = NULL;
    while (p != NULL) {
        rift_lua_plugin *next = p->next;
        plugin_free(p);
        p = next;
    }
    for (size_t i = 0; i < h->n_compat; i++) {
        compat_binding_free(h, h->compat[i]);
    }
    rift_free(h->mem, h->compat);
    h->compat = NULL;
    h->n_compat = 0;
}
