/*
 * plugin.c — plugins of the Lua host (lua layer): one scheduling turn of a
 * plugin on a worker (due timers, compatibility messages, ready
 * subscriptions and request replies, a quantum at a time), and failure
 * accounting and disabling. Loading, hot reload and
 * rift_plugin_host_apply live in plugin_apply.c.
 */
#include "lua/host_internal.h"

#include "broker/broker_face.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

enum drain_result {
    DRAIN_DONE,
    DRAIN_MORE,
    DRAIN_DISABLED,
};

/* ---- Failures ---- */

void rift_lua_plugin_set_last_error(rift_lua_plugin *p, const char *cb,
                                    const char *error) {
    rift_plugin_host *h = p->host;
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
    rift_plugin_host *h = p->host;
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
    rift_lua_plugin_set_last_error(p, cb, error);
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
        .push = reply != NULL   ? push_msg
                : error != NULL ? push_error
                                : NULL,
        .ud = reply != NULL ? (void *)reply : (void *)error,
        .cb = cb,
    };
    int oc = rift_lua_vm_call(vm, &c, errtext);
    return settle(p, oc, cb, errtext);
}

static bool fire_timer(rift_lua_plugin *p, rift_lua_vm *vm, rift_lua_timer *t,
                       char *errtext) {
    if (t->req != NULL) {
        /* A waiting fetch resumes with no arguments: woken by an append or
         * its deadline, it fetches again and decides. */
        return finish_request(
            p, vm, t->req, NULL,
            t->req->fetch_pin.stream != NULL ? NULL : "request timed out",
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
    /* Nobody on the cluster backbone answered (docs/cluster.md). */
    bool none = rc == 0 && rift_msg_no_responders(msg);
    bool off = finish_request(
        p, vm, b->req, rc == 0 && !none ? msg : NULL,
        none ? "no responders available" : "subscription closed", errtext);
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
    rift_plugin_host *h = p->host;
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
    rift_plugin_host *h = p->host;
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
