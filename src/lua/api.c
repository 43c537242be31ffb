/*
 * api.c — the `rift` table offered to plugins (lua layer): publish (with
 * the original's per-callback budget and texts), subscribe and its handle,
 * request (suspending only the calling coroutine), message objects with
 * respond, rift.on("message"), timers, logging, and the bookkeeping of the
 * C objects these create (bindings, timers, requests).
 *
 * C functions here create their Lua-side objects (handles, references)
 * before any C resource, and release C resources before raising (rule
 * 32), so a Lua error never leaks a subscription or an allocation. Each
 * documents its stack effect as [-pop, +push, errors].
 */
#include "lua/host_internal.h"
#include "lua/on_event.h"

#include "common/dlist.h"
#include "subject/subject.h"

#include <lauxlib.h>
#include <string.h>

#define SUB_MT   "rift.subscription"
#define TIMER_MT "rift.timer"

typedef struct sub_handle {
    rift_lua_binding *b; /* NULL once unsubscribed */
} sub_handle;

typedef struct timer_handle {
    uint64_t id;
} timer_handle;

/* ---- Bookkeeping of bindings, timers and requests ---- */

/* Binding lists change under host->lock: status walks them. */
static void link_binding(rift_lua_vm *vm, rift_lua_binding *b) {
    rift_plugin_host_lock(vm->host);
    b->vm = vm;
    RIFT_DLIST_PUSH(vm->bindings, b, prev, next);
    vm->n_bindings++;
    rift_plugin_host_unlock(vm->host);
}

static void unlink_binding(rift_lua_binding *b) {
    rift_lua_vm *vm = b->vm;
    rift_plugin_host_lock(vm->host);
    RIFT_DLIST_REMOVE(vm->bindings, b, prev, next);
    vm->n_bindings--;
    rift_plugin_host_unlock(vm->host);
}

void rift_lua_binding_move(rift_lua_binding *b, rift_lua_vm *to) {
    unlink_binding(b);
    link_binding(to, b);
}

static void free_binding(const rift_mem *mem, rift_lua_binding *b) {
    rift_free(mem, b->pattern);
    rift_free(mem, b->queue);
    rift_free(mem, b->label);
    rift_free(mem, b);
}

void rift_lua_binding_close(rift_lua_binding *b) {
    rift_lua_vm *vm = b->vm;
    rift_plugin_host_close_sub(vm->host, b);
    unlink_binding(b);
    if (b->fn_ref != LUA_NOREF) {
        luaL_unref(vm->L, LUA_REGISTRYINDEX, b->fn_ref);
        b->fn_ref = LUA_NOREF;
    }
    if (vm->dispatching == b) {
        /* Its own handler unsubscribed it: the worker frees it after the
         * callback returns. */
        vm->dispatching_closed = true;
        return;
    }
    free_binding(vm->mem, b);
}

void rift_lua_binding_free_deferred(const rift_mem *mem, rift_lua_binding *b) {
    free_binding(mem, b);
}

static void link_timer(rift_lua_vm *vm, rift_lua_timer *t) {
    t->vm = vm;
    RIFT_DLIST_PUSH(vm->timers, t, prev, next);
    vm->n_timers++;
}

void rift_lua_timer_unlink(rift_lua_timer *t) {
    rift_lua_vm *vm = t->vm;
    RIFT_DLIST_REMOVE(vm->timers, t, prev, next);
    vm->n_timers--;
}

void rift_lua_timer_free(rift_lua_timer *t, bool unref) {
    rift_lua_vm *vm = t->vm;
    rift_plugin_host_disarm_timer(vm->host, t);
    rift_lua_timer_unlink(t);
    if (unref && t->fn_ref != LUA_NOREF) {
        luaL_unref(vm->L, LUA_REGISTRYINDEX, t->fn_ref);
    }
    t->fn_ref = LUA_NOREF;
    if (vm->firing == t) {
        vm->firing_cancelled = true;
        return;
    }
    rift_free(vm->mem, t);
}

void rift_lua_request_free(rift_lua_request *r, bool unref) {
    rift_lua_vm *vm = r->vm;
    rift_lua_fetch_wait_release(r);
    if (r->inbox != NULL) {
        rift_lua_binding_close(r->inbox);
    }
    if (r->timer != NULL) {
        /* Request timers live outside the vm's timer list. */
        rift_plugin_host_disarm_timer(vm->host, r->timer);
        rift_free(vm->mem, r->timer);
    }
    if (unref && r->co_ref != LUA_NOREF) {
        luaL_unref(vm->L, LUA_REGISTRYINDEX, r->co_ref);
    }
    RIFT_DLIST_REMOVE(vm->requests, r, prev, next);
    vm->n_requests--;
    rift_free(vm->mem, r);
}

/* ---- Shared checks ---- */

/*
 * Counts one publication attempt of the running callback (§7.1: at most
 * 256 publications and 1 MiB of payload per callback invocation; attempts
 * count even when the publish then fails). Raises the original's texts.
 */
static void count_publication(lua_State *L, rift_lua_vm *vm, const char *fn,
                              size_t len) {
    if (!vm->runtime) {
        luaL_error(L, "%s " RIFT_LUA_TEXT_NOT_RUNTIME, fn);
    }
    if (vm->host->broker == NULL) {
        luaL_error(L, RIFT_LUA_TEXT_NO_BROKER);
    }
    vm->pub_count++;
    vm->pub_bytes += RIFT_MIN(len, (size_t)RIFT_LUA_PUBLISH_MAX_BYTES + 1);
    if (vm->pub_count > RIFT_LUA_PUBLISH_MAX_MSGS ||
        vm->pub_bytes > RIFT_LUA_PUBLISH_MAX_BYTES) {
        luaL_error(L, RIFT_LUA_TEXT_BUDGET);
    }
    if (vm->deadline != 0 && rift_now_ns() >= vm->deadline) {
        luaL_error(L, RIFT_LUA_TEXT_DEADLINE);
    }
}

/* Subjects and replies cross into the broker as UTF-8 text. */
static void check_utf8(lua_State *L, const char *fn, const char *what,
                       const char *s, size_t len) {
    if (!rift_utf8_valid((const uint8_t *)s, len)) {
        luaL_error(L, "%s: %s must be a UTF-8 string", fn, what);
    }
}

/* A restricted plugin publishes only within its grants (§3.3). */
static void check_publish_acl(lua_State *L, const rift_lua_conf *p,
                              const char *subject, size_t slen,
                              const char *reply, size_t rlen) {
    if (!p->restricted) {
        return;
    }
    rift_error err;
    if (rift_identity_can_publish(&p->identity, subject, slen, reply, rlen,
                                  &err) != 0) {
        luaL_error(L, "%s", err.text);
    }
}

/* Publishes and pushes {delivered=, slow_consumers=}. [-0, +1, e] */
static int publish_and_report(lua_State *L, rift_lua_vm *vm,
                              const char *subject, size_t slen,
                              const char *reply, size_t rlen,
                              const char *payload, size_t plen) {
    rift_publish_report rep;
    rift_error err;
    if (rift_broker_publish(vm->host->broker, subject, slen, reply, rlen,
                            (const uint8_t *)payload, plen, &rep, &err) != 0) {
        return luaL_error(L, "%s", err.text);
    }
    atomic_fetch_add_explicit(&vm->plugin->published, 1, memory_order_relaxed);
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)rep.delivered);
    lua_setfield(L, -2, "delivered");
    lua_pushinteger(L, (lua_Integer)rep.slow_consumers);
    lua_setfield(L, -2, "slow_consumers");
    return 1;
}

/* ---- rift.publish(subject, payload [, reply]) [-0, +1, e] ---- */

static int l_publish(lua_State *L) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (!vm->runtime) {
        return luaL_error(L, "rift.publish " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    size_t slen, plen, rlen = 0;
    const char *subject = luaL_checklstring(L, 1, &slen);
    const char *payload = luaL_checklstring(L, 2, &plen);
    const char *reply = luaL_optlstring(L, 3, NULL, &rlen);
    count_publication(L, vm, "rift.publish", plen);
    check_utf8(L, "rift.publish", "subject", subject, slen);
    if (reply != NULL) {
        check_utf8(L, "rift.publish", "reply", reply, rlen);
    }
    check_publish_acl(L, vm->conf, subject, slen, reply, rlen);
    return publish_and_report(L, vm, subject, slen, reply, rlen, payload, plen);
}

/* ---- Messages ---- */

void rift_lua_push_msg(lua_State *L, rift_lua_vm *vm, const rift_msg *msg) {
    size_t sl, rl, pl;
    const char *subject = rift_msg_subject(msg, &sl);
    const char *reply = rift_msg_reply(msg, &rl);
    const uint8_t *payload = rift_msg_payload(msg, &pl);
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, subject, sl);
    lua_setfield(L, -2, "subject");
    lua_pushlstring(L, pl > 0 ? (const char *)payload : "", pl);
    lua_setfield(L, -2, "payload");
    if (reply != NULL) {
        lua_pushlstring(L, reply, rl);
        lua_setfield(L, -2, "reply");
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, vm->msg_mt_ref);
    lua_setmetatable(L, -2);
}

/*
 * msg:respond(payload) publishes to the message's reply subject and
 * returns the report, or nil when the message has no reply (a plain
 * publication to a responder is not an error). [-0, +1, e]
 */
static int l_msg_respond(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    size_t plen, rlen;
    const char *payload = luaL_checklstring(L, 2, &plen);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    lua_pushliteral(L, "reply");
    if (lua_rawget(L, 1) != LUA_TSTRING) {
        lua_pushnil(L);
        return 1;
    }
    const char *reply = lua_tolstring(L, -1, &rlen);
    count_publication(L, vm, "msg:respond", plen);
    check_utf8(L, "msg:respond", "reply", reply, rlen);
    check_publish_acl(L, vm->conf, reply, rlen, NULL, 0);
    return publish_and_report(L, vm, reply, rlen, NULL, 0, payload, plen);
}

/* ---- rift.subscribe(pattern [, {queue=}], fn) [-0, +1, e] ---- */

/* The first binding of the previous state with this pattern and queue that
 * no subscription of the new code has taken yet. */
static rift_lua_binding *find_adoptable(rift_lua_vm *old, const char *pattern,
                                        const char *queue) {
    for (rift_lua_binding *b = old->bindings; b != NULL; b = b->next) {
        if (b->kind != RIFT_LUA_BIND_SUB || b->sub == NULL ||
            strcmp(b->pattern, pattern) != 0) {
            continue;
        }
        if ((b->queue == NULL) != (queue == NULL) ||
            (queue != NULL && strcmp(b->queue, queue) != 0)) {
            continue;
        }
        return b;
    }
    return NULL;
}

/* Reads rift.subscribe's arguments; returns the index of the function.
 * The queue string stays on the stack, anchored, until l_subscribe
 * returns. */
static int subscribe_args(lua_State *L, const char **pattern, size_t *plen,
                          const char **queue, size_t *qlen) {
    *pattern = luaL_checklstring(L, 1, plen);
    *queue = NULL;
    *qlen = 0;
    int fn = 2;
    if (lua_type(L, 2) == LUA_TTABLE) {
        fn = 3;
        int t = lua_getfield(L, 2, "queue");
        if (t == LUA_TSTRING) {
            *queue = lua_tolstring(L, -1, qlen);
        } else if (t != LUA_TNIL) {
            return luaL_error(L, "rift.subscribe: queue must be a string");
        }
    }
    luaL_checktype(L, fn, LUA_TFUNCTION);
    return fn;
}

/* Raises unless this state may subscribe to |pattern| now: a broker, a
 * valid subject, room for one more binding, and the plugin's ACL. */
static void subscribe_check(lua_State *L, rift_lua_vm *vm, const char *pattern,
                            size_t plen, const char *queue, size_t qlen) {
    if (vm->host->broker == NULL) {
        luaL_error(L, RIFT_LUA_TEXT_NO_BROKER);
    }
    check_utf8(L, "rift.subscribe", "pattern", pattern, plen);
    if (strlen(pattern) != plen || (queue != NULL && strlen(queue) != qlen)) {
        luaL_error(L, "rift.subscribe: invalid subject: %s", pattern);
    }
    if (vm->n_bindings >= RIFT_LUA_MAX_BINDINGS) {
        luaL_error(L,
                   "rift.subscribe: at most %d subscriptions and "
                   "pending requests per plugin",
                   RIFT_LUA_MAX_BINDINGS);
    }
    if (vm->conf->restricted) {
        rift_error err;
        if (rift_identity_can_subscribe(&vm->conf->identity, pattern, plen,
                                        &err) != 0) {
            luaL_error(L, "%s", err.text);
        }
    }
}

/* Reload: keeps the broker subscription of |b| and its queued messages;
 * the binding moves to the new state with |ref| as its function (undone
 * if the load fails). */
static void adopt_binding(rift_lua_vm *vm, rift_lua_binding *b, int ref) {
    unlink_binding(b);
    b->old_vm = vm->adopt_from;
    b->old_fn_ref = b->fn_ref;
    b->fn_ref = ref;
    link_binding(vm, b);
}

/* A new subscription binding with its pattern, queue and label, not yet
 * subscribed; NULL when out of memory. */
static rift_lua_binding *sub_binding_new(rift_lua_vm *vm, const char *pattern,
                                         size_t plen, const char *queue,
                                         size_t qlen) {
    rift_lua_binding *b = rift_calloc(vm->mem, 1, sizeof(*b));
    if (b != NULL) {
        b->pattern = rift_strndup(vm->mem, pattern, plen);
        b->queue = queue != NULL ? rift_strndup(vm->mem, queue, qlen) : NULL;
        b->label = rift_malloc(vm->mem, plen + sizeof("subscription "));
        if (b->label != NULL) {
            snprintf(b->label, plen + sizeof("subscription "),
                     "subscription %s", pattern);
        }
    }
    if (b == NULL || b->pattern == NULL || b->label == NULL ||
        (queue != NULL && !b->queue)) {
        if (b != NULL) {
            free_binding(vm->mem, b);
        }
        return NULL;
    }
    return b;
}

static int l_subscribe(lua_State *L) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    size_t plen, qlen;
    const char *pattern, *queue;
    int fn = subscribe_args(L, &pattern, &plen, &queue, &qlen);
    subscribe_check(L, vm, pattern, plen, queue, qlen);
    /* Lua-side objects first: these may raise, nothing is held yet. */
    sub_handle *hd = lua_newuserdatauv(L, sizeof(*hd), 0);
    hd->b = NULL;
    luaL_setmetatable(L, SUB_MT);
    lua_pushvalue(L, fn);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);

    rift_lua_binding *b = NULL;
    if (vm->adopt_from != NULL) {
        b = find_adoptable(vm->adopt_from, pattern, queue);
    }
    if (b != NULL) {
        adopt_binding(vm, b, ref);
        hd->b = b;
        return 1;
    }
    b = sub_binding_new(vm, pattern, plen, queue, qlen);
    if (b == NULL) {
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
        return luaL_error(L, "rift.subscribe: out of memory");
    }
    b->plugin = vm->plugin;
    b->kind = RIFT_LUA_BIND_SUB;
    b->fn_ref = ref;
    b->old_fn_ref = LUA_NOREF;
    rift_error err;
    if (rift_plugin_host_subscribe(vm->host, b, &err) != 0) {
        free_binding(vm->mem, b);
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
        return luaL_error(L, "%s", err.text);
    }
    link_binding(vm, b);
    hd->b = b;
    return 1;
}

/* handle:unsubscribe() → true, or false when already unsubscribed.
 * [-0, +1, -] */
static int l_unsubscribe(lua_State *L) {
    sub_handle *hd = luaL_checkudata(L, 1, SUB_MT);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (hd->b == NULL || hd->b->vm != vm) {
        lua_pushboolean(L, 0);
        return 1;
    }
    rift_lua_binding_close(hd->b);
    hd->b = NULL;
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- rift.request(subject, payload [, timeout_ms]) [-0, +(1|2), e] ---- */

/* Raises unless the running callback may make this request now (after
 * the arguments are read). */
static void request_check(lua_State *L, rift_lua_vm *vm, const char *subject,
                          size_t slen, size_t plen) {
    if (L != vm->cur_co || !lua_isyieldable(L)) {
        luaL_error(L, "rift.request: call it from the callback "
                      "itself (not from a coroutine it created, a "
                      "metamethod or a C function)");
    }
    count_publication(L, vm, "rift.request", plen);
    check_utf8(L, "rift.request", "subject", subject, slen);
    check_publish_acl(L, vm->conf, subject, slen, NULL, 0);
    if (vm->n_bindings >= RIFT_LUA_MAX_BINDINGS) {
        luaL_error(L,
                   "rift.request: at most %d subscriptions and "
                   "pending requests per plugin",
                   RIFT_LUA_MAX_BINDINGS);
    }
}

/* Makes |b| the reply inbox of |r|: a fresh inbox subject, subscribed
 * (never raises; on failure |err| says why and the caller frees |b|). */
static int request_inbox(rift_lua_vm *vm, rift_lua_request *r,
                         rift_lua_binding *b, char *inbox, rift_error *err) {
    int rc = rift_broker_new_inbox(inbox, err);
    if (rc != 0) {
        return rc;
    }
    b->pattern = rift_strndup(vm->mem, inbox, RIFT_INBOX_LEN);
    if (b->pattern == NULL) {
        snprintf(err->text, sizeof(err->text), "rift.request: out of memory");
        return RIFT_ERR_NOMEM;
    }
    b->plugin = vm->plugin;
    b->kind = RIFT_LUA_BIND_INBOX;
    b->fn_ref = b->old_fn_ref = LUA_NOREF;
    b->req = r;
    return rift_plugin_host_subscribe(vm->host, b, err);
}

/* The request was published: the vm owns |r|, its inbox |b| and its
 * timeout |t| from now on, and the timeout runs for |ms|. */
static void request_start(rift_lua_vm *vm, rift_lua_request *r,
                          rift_lua_binding *b, rift_lua_timer *t,
                          lua_Integer ms) {
    atomic_fetch_add_explicit(&vm->plugin->published, 1, memory_order_relaxed);
    r->vm = vm;
    r->co_ref = LUA_NOREF;
    r->inbox = b;
    r->timer = t;
    RIFT_DLIST_PUSH(vm->requests, r, prev, next);
    vm->n_requests++;
    link_binding(vm, b);
    t->plugin = vm->plugin;
    t->vm = vm;
    t->fn_ref = LUA_NOREF;
    t->req = r;
    t->heap_idx = SIZE_MAX;
    t->due = rift_now_ns() + (uint64_t)ms * 1000000u;
    rift_plugin_host_arm_timer(vm->host, t);
    vm->yield_req = r;
}

static int l_request(lua_State *L) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    rift_plugin_host *h = vm->host;
    if (!vm->runtime) {
        return luaL_error(L, "rift.request " RIFT_LUA_TEXT_NOT_RUNTIME);
    }
    size_t slen, plen;
    const char *subject = luaL_checklstring(L, 1, &slen);
    const char *payload = luaL_checklstring(L, 2, &plen);
    lua_Integer ms = luaL_optinteger(L, 3, RIFT_LUA_REQUEST_DEFAULT_MS);
    luaL_argcheck(L, ms >= 1 && ms <= RIFT_LUA_REQUEST_MAX_MS, 3,
                  "timeout must be 1..=3600000 milliseconds");
    request_check(L, vm, subject, slen, plen);

    /* From here C resources exist: no Lua call may raise until they are
     * either released or owned by the vm. */
    rift_error err;
    int rc = RIFT_ERR_NOMEM;
    snprintf(err.text, sizeof(err.text), "rift.request: out of memory");
    char inbox[RIFT_INBOX_LEN + 1];
    rift_lua_request *r = rift_calloc(vm->mem, 1, sizeof(*r));
    rift_lua_binding *b = rift_calloc(vm->mem, 1, sizeof(*b));
    rift_lua_timer *t = rift_calloc(vm->mem, 1, sizeof(*t));
    if (r == NULL || b == NULL || t == NULL ||
        (rc = request_inbox(vm, r, b, inbox, &err)) != 0) {
        goto fail;
    }
    rift_publish_report rep;
    rc = rift_broker_publish(h->broker, subject, slen, inbox, RIFT_INBOX_LEN,
                             (const uint8_t *)payload, plen, &rep, &err);
    if (rc != 0 || (rep.delivered == 0 && rep.forwarded == 0)) {
        /* Closing outside any list: the binding was never linked. */
        rift_plugin_host_close_sub(h, b);
        goto fail;
    }
    request_start(vm, r, b, t, ms);
    /* Resumed with (reply message) or (nil, error) by the worker. */
    return lua_yield(L, 0);

fail:
    if (b != NULL) {
        free_binding(vm->mem, b);
    }
    rift_free(vm->mem, r);
    rift_free(vm->mem, t);
    if (rc == 0) {
        lua_pushnil(L);
        lua_pushliteral(L, "no responders available");
        return 2;
    }
    return luaL_error(L, "%s", err.text);
}

/* ---- Timers: rift.after(ms, fn), rift.every(ms, fn) [-0, +1, e] ---- */

static int add_timer(lua_State *L, bool every) {
    rift_lua_vm *vm = rift_lua_vm_of(L);
    lua_Integer ms = luaL_checkinteger(L, 1);
    luaL_argcheck(L, ms >= (every ? 1 : 0) && ms <= RIFT_LUA_TIMER_MAX_MS, 1,
                  every ? "interval must be 1..=86400000 milliseconds"
                        : "delay must be 0..=86400000 milliseconds");
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (vm->n_timers >= RIFT_LUA_MAX_TIMERS) {
        return luaL_error(L, "%s: at most %d timers per plugin",
                          every ? "rift.every" : "rift.after",
                          RIFT_LUA_MAX_TIMERS);
    }
    timer_handle *hd = lua_newuserdatauv(L, sizeof(*hd), 0);
    hd->id = 0;
    luaL_setmetatable(L, TIMER_MT);
    lua_pushvalue(L, 2);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    rift_lua_timer *t = rift_calloc(vm->mem, 1, sizeof(*t));
    if (t == NULL) {
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
        return luaL_error(L, "out of memory");
    }
    t->plugin = vm->plugin;
    t->id = atomic_fetch_add_explicit(&vm->host->next_timer_id, 1,
                                      memory_order_relaxed) +
            1;
    t->fn_ref = ref;
    t->every_ns = every ? (uint64_t)ms * 1000000u : 0;
    t->due = rift_now_ns() + (uint64_t)ms * 1000000u;
    t->heap_idx = SIZE_MAX;
    link_timer(vm, t);
    rift_plugin_host_arm_timer(vm->host, t);
    hd->id = t->id;
    return 1;
}

static int l_after(lua_State *L) {
    return add_timer(L, false);
}

static int l_every(lua_State *L) {
    return add_timer(L, true);
}

/* timer:cancel() → true, or false when it already fired or was
 * cancelled. [-0, +1, -] */
static int l_cancel(lua_State *L) {
    timer_handle *hd = luaL_checkudata(L, 1, TIMER_MT);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    for (rift_lua_timer *t = vm->timers; t != NULL; t = t->next) {
        if (t->id == hd->id) {
            rift_lua_timer_free(t, true);
            lua_pushboolean(L, 1);
            return 1;
        }
    }
    lua_pushboolean(L, 0);
    return 1;
}

/* ---- rift.on("message", fn) [-0, +0, e] ---- */

static int l_on(lua_State *L) {
    rift_lua_check_on_event(L);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, vm->handlers_ref);
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    vm->has_handlers = true;
    if (vm->runtime) {
        /* Registered by a running plugin: it starts receiving the
         * messaging.subscriptions messages now, if there are any. */
        if (!rift_plugin_host_add_compat_target(vm->host, vm)) {
            return luaL_error(L, RIFT_LUA_TEXT_TOGETHER);
        }
    }
    return 0;
}

/* ---- rift.log(level, ...) and rift.plugin(name) ---- */

static int l_log(lua_State *L) {
    static const char *const names[] = {"debug", "info", "warn", "error", NULL};
    static const rift_log_level levels[] = {RIFT_LOG_DEBUG, RIFT_LOG_INFO,
                                            RIFT_LOG_WARN, RIFT_LOG_ERROR};
    int lv = luaL_checkoption(L, 1, NULL, names);
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 2; i <= n; i++) {
        if (i > 2) {
            luaL_addchar(&b, ' ');
        }
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    rift_log(levels[lv], "%s: %s", vm->plugin->name, lua_tostring(L, -1));
    return 0;
}

static int l_plugin(lua_State *L) {
    luaL_checkstring(L, 1);
    rift_lua_vm *vm = rift_lua_vm_of(L);
    if (vm->plugin->is_compat) {
        /* riftd's configuration step already declared it; the host loads
         * plugins/<name>/init.lua in a state of its own. */
        return 0;
    }
    return luaL_error(L, "rift.plugin: declare plugins in the configuration "
                         "(plugins = { ... } or rift.plugin at its top level)");
}

/* ---- Opening ---- */

void rift_lua_open_api(lua_State *L, rift_lua_vm *vm) {
    luaL_newmetatable(L, SUB_MT);
    lua_newtable(L);
    lua_pushcfunction(L, l_unsubscribe);
    lua_setfield(L, -2, "unsubscribe");
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "protected");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);

    luaL_newmetatable(L, TIMER_MT);
    lua_newtable(L);
    lua_pushcfunction(L, l_cancel);
    lua_setfield(L, -2, "cancel");
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "protected");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);

    lua_newtable(L); /* message metatable */
    lua_newtable(L);
    lua_pushcfunction(L, l_msg_respond);
    lua_setfield(L, -2, "respond");
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "rift.message");
    lua_setfield(L, -2, "__name");
    vm->msg_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    static const luaL_Reg fns[] = {
        {"publish", l_publish}, {"subscribe", l_subscribe},
        {"request", l_request}, {"after", l_after},
        {"every", l_every},     {"on", l_on},
        {"log", l_log},         {"plugin", l_plugin},
        {NULL, NULL},
    };
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    lua_pushboolean(L, vm->host->broker != NULL);
    lua_setfield(L, -2, "enabled");
    lua_pushstring(L, RIFT_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushstring(L, vm->plugin->name);
    lua_setfield(L, -2, "name");
    rift_lua_open_json(L);
    lua_setfield(L, -2, "json");
    rift_lua_open_streams(L, vm);
    if (vm->plugin->is_compat) {
        lua_newtable(L);
        lua_setfield(L, -2, "config");
    }
    lua_setglobal(L, "rift");
}
