/*
 * plugin_apply.c — loading and hot reload of the Lua host's plugins (lua
 * layer): the configuration of each state, loading a plugin folder or the
 * configuration's own handlers, subscription adoption, the compatibility
 * subscriptions, and rift_plugin_host_apply, which makes the host run a
 * given configuration. Split from plugin.c, which runs the plugins.
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
#include "subject/name.h"

#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
static int conf_from_spec(rift_plugin_host *h, const rift_plugin_spec *s,
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
static int conf_from_compat(rift_plugin_host *h, const rift_plugin_compat *cc,
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
    rift_plugin_host *h = p->host;
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
    rift_plugin_host *h = p->host;
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

static void plugin_free(rift_lua_plugin *p) {
    rift_plugin_host *h = p->host;
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

static rift_lua_plugin *plugin_new(rift_plugin_host *h, const char *name,
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

static void compat_binding_free(rift_plugin_host *h, rift_lua_binding *b) {
    rift_plugin_host_close_sub(h, b);
    rift_free(h->mem, b->pattern);
    rift_free(h->mem, b->queue);
    rift_free(h->mem, b->label);
    rift_free(h->mem, b);
}

/* Makes h->compat exactly |subs|; unchanged entries keep their queue. */
static int compat_apply(rift_plugin_host *h,
                        const rift_plugin_subscription *subs, size_t n,
                        rift_error *err) {
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

static rift_lua_plugin *find_plugin(rift_plugin_host *h, const char *name,
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
        rift_lua_plugin_set_last_error(p, "init", e.text);
        return rift_error_set(err, rc == RIFT_ERR_NOMEM ? rc : RIFT_ERR_LUA,
                              "%s: init: %s", p->name, e.text);
    }
    return 0;
}

/* Takes |p| out of the host and frees it (apply thread). */
static void plugin_remove(rift_plugin_host *h, rift_lua_plugin *p) {
    rift_plugin_host_hold(h, p);
    plugin_free(p);
}

/* Plugin names must be valid and unique before anything is touched. */
static int check_names(const rift_plugin_spec *specs, size_t n_specs,
                       rift_error *err) {
    for (size_t i = 0; i < n_specs; i++) {
        bool dup = false;
        for (size_t j = 0; j < i; j++) {
            dup = dup || strcmp(specs[i].name, specs[j].name) == 0;
        }
        if (specs[i].name == NULL ||
            !rift_plugin_name_valid(specs[i].name, strlen(specs[i].name)) ||
            dup) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "plugins: names must be unique and contain "
                                  "1..=128 letters, digits, underscores or "
                                  "hyphens");
        }
    }
    return 0;
}

/* The running plugin called |name| (the configuration's when |compat|),
 * held so that no worker runs it while it reloads, or a fresh one, born
 * held. NULL when out of memory. */
static rift_lua_plugin *take_plugin(rift_plugin_host *h, const char *name,
                                    bool compat, bool *fresh) {
    rift_lua_plugin *p = find_plugin(h, name, compat);
    *fresh = p == NULL;
    if (*fresh) {
        p = plugin_new(h, name, compat);
    } else {
        rift_plugin_host_hold(h, p);
    }
    return p;
}

/* Stages |p| as st[*k] with |conf|, which conf_from_* made with result
 * |rc|. The slot counts even on failure, so the rollback releases or frees
 * |p|. */
static int stage_next(staged *st, size_t *k, rift_lua_plugin *p, bool fresh,
                      int rc, rift_lua_conf *conf, rift_error *err) {
    if (rc == 0) {
        rc = stage(&st[*k], p, fresh, conf, err);
    }
    st[*k].p = p;
    st[*k].fresh = fresh;
    (*k)++;
    return rc;
}

/* Step 1: builds every new state into st[0..*k); the running ones keep
 * going meanwhile, except each plugin being reloaded, held from here to
 * the end of the apply. */
static int stage_all(rift_plugin_host *h, const rift_plugin_spec *specs,
                     size_t n_specs, const rift_plugin_compat *compat,
                     staged *st, size_t *k, rift_error *err) {
    bool fresh;
    rift_lua_conf *conf = NULL;
    int rc;
    if (compat != NULL && compat->source != NULL) {
        rift_lua_plugin *cp = take_plugin(
            h, compat->name != NULL ? compat->name : "config", true, &fresh);
        if (cp == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rc = conf_from_compat(h, compat, &conf, err);
        if ((rc = stage_next(st, k, cp, fresh, rc, conf, err)) != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < n_specs; i++) {
        rift_lua_plugin *p = take_plugin(h, specs[i].name, false, &fresh);
        if (p == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rc = conf_from_spec(h, &specs[i], &conf, err);
        if ((rc = stage_next(st, k, p, fresh, rc, conf, err)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* Step 2: the pairing rule of the original, over every new state: message
 * handlers if and only if compatibility subscriptions. */
static int check_pairing(const staged *st, size_t k,
                         const rift_plugin_compat *compat, rift_error *err) {
    bool handlers = false;
    for (size_t i = 0; i < k; i++) {
        handlers = handlers || st[i].vm->has_handlers;
    }
    if (handlers != (compat != NULL && compat->n_subs > 0)) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              RIFT_LUA_TEXT_TOGETHER);
    }
    return 0;
}

/* Step 3a: makes every new state current and compacts st to the plugins
 * that stay; returns how many. A configuration without handlers needs no
 * state. */
static size_t commit_all(staged *st, size_t k) {
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        rift_lua_plugin *p = st[i].p;
        if (p->is_compat && !st[i].vm->has_handlers) {
            rift_lua_vm_del(st[i].vm);
            if (st[i].fresh) {
                plugin_free(p);
            } /* else it leaves with the old list in install_list */
            continue;
        }
        plugin_commit(p, st[i].vm);
        st[n++] = st[i];
    }
    return n;
}

/* Step 3b: the host's plugin list becomes st[0..n), in order; plugins of
 * the old list that are not in it go. */
static void install_list(rift_plugin_host *h, const staged *st, size_t n) {
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
}

/* Step 4b: who receives the compatibility messages now; a plugin left
 * without a handler to run its queued ones drops them. */
static void compat_retarget(rift_plugin_host *h) {
    rift_plugin_host_lock(h);
    for (rift_lua_plugin *p = h->plugins; p != NULL; p = p->next) {
        p->compat_target =
            p->vm != NULL && p->vm->has_handlers && h->n_compat > 0;
        while (!p->compat_target && p->cq_len > 0) {
            rift_msg_unref(p->cq[p->cq_head]);
            p->cq[p->cq_head] = NULL;
            p->cq_head = (p->cq_head + 1) % p->cq_cap;
            p->cq_len--;
        }
    }
    rift_plugin_host_unlock(h);
}

/* A failed apply changes nothing: new states go, adopted subscriptions go
 * back, fresh plugins are freed and reloaded ones run their old code. */
static void rollback(rift_plugin_host *h, staged *st, size_t k) {
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
}

int rift_plugin_host_apply(rift_plugin_host *h, const rift_plugin_spec *specs,
                           size_t n_specs, const rift_plugin_compat *compat,
                           rift_error *err) {
    int rc = check_names(specs, n_specs, err);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&h->apply_lock);
    staged *st = rift_calloc(h->mem, n_specs + 1, sizeof(*st));
    if (st == NULL) {
        pthread_mutex_unlock(&h->apply_lock);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    rc = stage_all(h, specs, n_specs, compat, st, &k, err);
    if (rc == 0) {
        rc = check_pairing(st, k, compat, err);
    }
    if (rc != 0) {
        rollback(h, st, k);
    } else {
        size_t n = commit_all(st, k);
        install_list(h, st, n);
        /* 4a. The compatibility subscriptions, after the states that
         * receive their messages. */
        rc = compat_apply(h, compat != NULL ? compat->subs : NULL,
                          compat != NULL ? compat->n_subs : 0, err);
        compat_retarget(h);
        for (size_t i = 0; i < n; i++) {
            rift_plugin_host_release(h, st[i].p);
        }
    }
    rift_free(h->mem, st);
    pthread_mutex_unlock(&h->apply_lock);
    return rc;
}

void rift_plugin_host_remove_all(rift_plugin_host *h) {
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
