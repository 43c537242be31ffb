/*
 * host_internal.h — shared internals of the Lua plugin host (lua layer): the
 * sandboxed state with its budgets (vm.c) and its files (vm_require.c), the
 * rift.* API (api.c, json.c), plugins (plugin.c) and their reload
 * (plugin_apply.c), the worker pool, the poller and timers (host.c), and
 * events and status (host_status.c).
 *
 * Locking: host->lock guards scheduling (run queue, each plugin's sched,
 * held, ready and due lists, compat queue), the timer heap, the plugin
 * list, and every rift_sub_close of a subscription created with the host's
 * notifier (the poller maps polled subscriptions to bindings under the
 * same lock, so it never touches a closed one). Everything else of a
 * plugin (its lua_State, binding/timer/request lists) belongs to the
 * thread that runs the plugin: a worker (sched == RUNNING) or the apply
 * thread (held > 0 and not RUNNING).
 */
#ifndef RIFT_LUA_HOST_INTERNAL_H
#define RIFT_LUA_HOST_INTERNAL_H

#include "common/common.h"
#include "lua/plugin_host.h"
#include "rift/broker.h"
#include "rift/stream.h"
#include "subject/acl.h"

#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>

/* Instructions between two hook calls (budget and deadline checks). */
#define RIFT_LUA_HOOK_EVERY 1000
/* Per-callback publication budget of the original (§7.1). */
#define RIFT_LUA_PUBLISH_MAX_MSGS  256
#define RIFT_LUA_PUBLISH_MAX_BYTES (1024 * 1024)
/* Failing handlers are logged truncated to this many bytes (§7.1). */
#define RIFT_LUA_ERROR_MAX 2048
/* Live subscriptions plus pending requests of one plugin. */
#define RIFT_LUA_MAX_BINDINGS 4096
/* Armed timers of one plugin. */
#define RIFT_LUA_MAX_TIMERS 4096
/* Messages one plugin handles before another plugin gets the worker. */
#define RIFT_LUA_QUANTUM 256
/* Budgets of loading (init.lua's top level, the configuration source). */
#define RIFT_LUA_INIT_INSTRUCTIONS 100000000u
#define RIFT_LUA_INIT_DEADLINE_MS  1000u
/* Largest Lua source file (init.lua, modules). */
#define RIFT_LUA_MAX_SOURCE (1024 * 1024)
/* rift.request timeout: default and maximum, milliseconds. */
#define RIFT_LUA_REQUEST_DEFAULT_MS 5000
#define RIFT_LUA_REQUEST_MAX_MS     3600000
/* Longest timer interval, milliseconds (a day). */
#define RIFT_LUA_TIMER_MAX_MS 86400000

/* Error texts of the original (§7.1). */
#define RIFT_LUA_TEXT_BUDGET                                                   \
 "script messaging budget exceeded (256 messages / 1 MiB)"
#define RIFT_LUA_TEXT_DEADLINE    "script deadline exceeded"
#define RIFT_LUA_TEXT_NO_BROKER   "messaging broker unavailable"
#define RIFT_LUA_TEXT_NOT_RUNTIME "is only available inside runtime callbacks"
#define RIFT_LUA_TEXT_TOGETHER                                                 \
 "on_message and messaging.subscriptions must be configured together"

typedef struct rift_lua_vm rift_lua_vm;
typedef struct rift_lua_plugin rift_lua_plugin;
typedef struct rift_lua_binding rift_lua_binding;
typedef struct rift_lua_timer rift_lua_timer;
typedef struct rift_lua_request rift_lua_request;
typedef struct rift_lua_conf rift_lua_conf;

enum rift_lua_bind_kind {
    RIFT_LUA_BIND_SUB,    /* rift.subscribe */
    RIFT_LUA_BIND_INBOX,  /* a rift.request inbox */
    RIFT_LUA_BIND_COMPAT, /* a messaging.subscriptions entry (host-owned) */
};

enum rift_lua_sched {
    RIFT_LUA_IDLE,
    RIFT_LUA_QUEUED,
    RIFT_LUA_ACTIVE,
};

/* A broker subscription and what its messages go to. */
struct rift_lua_binding {
    rift_lua_plugin *plugin; /* NULL for compat entries */
    rift_lua_vm *vm;         /* owning state (SUB, INBOX) */
    int kind;
    rift_sub *sub;         /* NULL once the broker closed it */
    char *pattern;         /* NUL-terminated copies */
    char *queue;           /* NULL = no queue group */
    char *label;           /* "subscription <pattern>" for logs (SUB) */
    int fn_ref;            /* handler in vm's registry (SUB) */
    int old_fn_ref;        /* handler in the previous state while reloading */
    rift_lua_vm *old_vm;   /* non-NULL while adopted by a reloading state */
    rift_lua_request *req; /* INBOX */
    uint64_t dropped;      /* messages lost to overflow (compat) */
    /* vm's list (owner thread). */
    rift_lua_binding *prev, *next;
    /* host->lock */
    bool on_ready;
    bool closed;
    rift_lua_binding *ready_next;
};

/* A rift.after/rift.every timer, or the timeout of a request. */
struct rift_lua_timer {
    rift_lua_plugin *plugin;
    rift_lua_vm *vm;
    uint64_t id;
    rift_tstamp due;
    uint64_t every_ns; /* 0 = once */
    int fn_ref;        /* LUA_NOREF for a request timeout */
    rift_lua_request *req;
    /* vm's list (owner thread). */
    rift_lua_timer *prev, *next;
    /* host->lock */
    size_t heap_idx; /* SIZE_MAX when not in the heap */
    bool on_due;
    rift_lua_timer *due_next;
};

/* A stream pinned for one Lua operation (rift_lua_stream_pin): valid
 * until rift_lua_stream_unpin. */
typedef struct rift_lua_pin {
    rift_stream *stream; /* NULL: nothing pinned */
    void *token;
} rift_lua_pin;

/* A coroutine suspended in rift.request, or in a waiting consumer:fetch
 * (fetch_pin.stream set: no inbox; the stream's append watch makes the
 * timer due at once, api_fetch.c). The waiting fetch keeps its stream
 * pinned for the wait, as the QUIC server's CONSUMER_FETCH_WAIT does. */
struct rift_lua_request {
    rift_lua_vm *vm;
    rift_lua_binding *inbox;
    rift_lua_timer *timer;
    int co_ref;
    char cb[96]; /* the callback that made the request, for logs */
    rift_lua_request *prev, *next;
    rift_lua_pin fetch_pin;
    rift_consumer *fetch_hold;
    rift_stream_watch fetch_watch;
};

/* What the running callback is, for budgets and error messages. */
enum rift_lua_stop {
    RIFT_LUA_STOP_NONE,
    RIFT_LUA_STOP_INSTRUCTIONS,
    RIFT_LUA_STOP_DEADLINE,
};

/* One sandboxed lua_State: a plugin's current (or reloading) code. */
struct rift_lua_vm {
    lua_State *L;
    rift_lua_plugin *plugin;
    rift_plugin_host *host;
    rift_lua_conf *conf; /* owned */
    const rift_mem *mem;
    /* Memory budget (the lua_Alloc). */
    size_t mem_used;
    size_t mem_limit;
    bool mem_refused;
    /* Budgets of the running callback (the hook). */
    bool armed;
    uint64_t instr;
    uint64_t instr_limit;
    rift_tstamp deadline;
    int stop;
    unsigned pub_count;
    size_t pub_bytes;
    bool runtime;      /* inside a runtime callback (publish allowed) */
    lua_State *cur_co; /* the host coroutine running, or NULL */
    rift_lua_request *yield_req; /* set by rift.request before yielding */
    /* Registry references. */
    int msg_mt_ref;
    int co_ref;       /* an idle coroutine kept for reuse */
    int handlers_ref; /* rift.on("message") handlers, in order */
    int chain_ref;    /* function(msg) running every handler */
    bool has_handlers;
    /* Objects owned by this state. */
    rift_lua_binding *bindings; /* links change under host->lock */
    size_t n_bindings;
    rift_lua_timer *timers;
    _Atomic size_t n_timers;
    rift_lua_request *requests;
    _Atomic size_t n_requests;
    /* The binding whose handler runs, and whether it unsubscribed itself
     * (then the worker frees it afterwards); the same for timers. */
    rift_lua_binding *dispatching;
    bool dispatching_closed;
    rift_lua_timer *firing;
    bool firing_cancelled;
    /* While reloading: the state whose subscriptions may be adopted. */
    rift_lua_vm *adopt_from;
};

/* A configured plugin; survives reloads (its vm is replaced). */
/* What one state of a plugin was built from: a plugin's spec, or the
 * configuration's source. Owned by the state (a reload builds a new one,
 * so a rejected reload leaves the running state's untouched). */
struct rift_lua_conf {
    char *dir;      /* folder holding init.lua; NULL for the configuration */
    char *dir_real; /* its realpath, for require containment */
    char *source;   /* the configuration's source (compat) */
    size_t source_len;
    size_t mem_limit;
    uint64_t instr_limit;
    uint64_t deadline_ns;
    bool restricted;
    rift_identity identity;
};

struct rift_lua_plugin {
    rift_plugin_host *host;
    char *name;
    bool is_compat;    /* the configuration's root handlers */
    rift_lua_vm *vm;   /* NULL when disabled */
    unsigned failures; /* consecutive, owner thread */
    /* host->lock */
    int state; /* rift_plugin_state */
    int sched;
    unsigned held;
    rift_lua_plugin *rq_prev, *rq_next;
    rift_lua_binding *ready_head, *ready_tail;
    rift_lua_timer *due_head, *due_tail;
    rift_msg **cq; /* compat queue (ring) */
    size_t cq_cap, cq_head, cq_len;
    bool compat_target;
    char *last_error;
    rift_lua_plugin *next; /* host list */
    /* Set while someone waits in rift_plugin_host_hold: the worker running
     * the plugin stops after its current callback. */
    _Atomic unsigned hold_pending;
    /* Counters (relaxed atomics). */
    _Atomic uint64_t callbacks, messages, errors, published, dropped;
    _Atomic size_t mem_snapshot;
};

struct rift_plugin_host {
    const rift_mem *mem;
    rift_broker *broker;
    rift_notifier *notifier;
    rift_plugin_host_settings settings;
    size_t sub_capacity;
    pthread_mutex_t lock;
    pthread_cond_t work_cv;
    pthread_cond_t idle_cv;
    pthread_mutex_t apply_lock;
    rift_lua_plugin *rq_head, *rq_tail;
    rift_lua_timer **heap;
    size_t heap_len, heap_cap;
    int wake_fd;
    bool stopping;
    bool polling;    /* a worker is the poller */
    bool in_poll;    /* ... and sleeps in ppoll right now */
    bool poll_woken; /* the wake eventfd was written since it went to sleep */
    pthread_t *workers;
    size_t n_workers;
    rift_lua_plugin *plugins; /* compat first, then configuration order */
    rift_lua_binding **compat;
    size_t n_compat;
    _Atomic uint64_t next_timer_id;
};

/* ---- vm.c: the sandboxed state ---- */

/* The vm of any thread of a state (kept in the extra space). */
static inline rift_lua_vm *rift_lua_vm_of(lua_State *L) {
    return *(rift_lua_vm **)lua_getextraspace(L);
}

/*
 * rift_lua_vm_new creates a sandboxed state for |p| built from |conf|
 * (which it owns from now on, also on failure): its memory cap, the safe
 * standard libraries and the rift table (api.c). The state is idle:
 * nothing of the plugin has run yet.
 * Errors: RIFT_ERR_NOMEM, RIFT_ERR_LUA (text filled).
 */
int rift_lua_vm_new(rift_lua_vm **pvm, rift_lua_plugin *p, rift_lua_conf *conf,
                    rift_error *err);

/* rift_lua_conf_free releases a configuration. NULL is a no-op. */
void rift_lua_conf_free(const rift_mem *mem, rift_lua_conf *c);

/*
 * rift_lua_vm_del closes every binding, timer and request of |vm| (taking
 * host->lock for the subscriptions) and closes the state. NULL is a no-op.
 */
void rift_lua_vm_del(rift_lua_vm *vm);

/*
 * rift_lua_vm_load runs a text chunk as the plugin's loading step (init
 * budgets, rift.publish unavailable). With |nret| 1 the chunk's first
 * result is left on the stack. Errors: RIFT_ERR_LUA with the message.
 */
int rift_lua_vm_load(rift_lua_vm *vm, const char *src, size_t len,
                     const char *chunkname, int nret, rift_error *err);

/*
 * rift_lua_read_file reads a regular file of at most RIFT_LUA_MAX_SOURCE
 * bytes into a new buffer (through |mem|). When |root| is not NULL the
 * file's real path must lie under it. Returns 0, RIFT_ERR_LIMIT,
 * RIFT_ERR_PERMISSION, RIFT_ERR_NOMEM or -errno (ENOENT when missing).
 */
int rift_lua_read_file(const rift_mem *mem, const char *path, const char *root,
                       char **pbuf, size_t *plen);

/* require(name) for plugins (vm_require.c): modules from <plugin>/lua/;
 * upvalue 1 is the plugin's loaded-modules table. */
int rift_lua_require(lua_State *L);

/* A callback to start or resume. */
typedef struct rift_lua_call {
    int fn_ref; /* function to start in a fresh coroutine, or LUA_NOREF */
    int co_ref; /* suspended coroutine to resume (reference consumed) */
    /* Pushes the arguments onto the main stack (may raise); returns how
     * many. NULL = no arguments. */
    int (*push)(lua_State *L, void *ud);
    void *ud;
    const char *cb; /* label for logs and the suspended request */
} rift_lua_call;

enum rift_lua_outcome {
    RIFT_LUA_DONE,
    RIFT_LUA_SUSPENDED,
    RIFT_LUA_FAILED,
};

/*
 * rift_lua_vm_call runs one callback in a host coroutine with fresh
 * budgets (instructions, deadline, publication budget). Returns an
 * rift_lua_outcome; on RIFT_LUA_FAILED |errtext| (RIFT_LUA_ERROR_MAX + 1
 * bytes) holds the error, budget overruns named with the original's texts.
 */
int rift_lua_vm_call(rift_lua_vm *vm, const rift_lua_call *call, char *errtext);

/* Arms and disarms the budgets around host-driven Lua execution. */
void rift_lua_vm_arm(rift_lua_vm *vm, uint64_t instr_limit,
                     uint64_t deadline_ns, bool runtime);
void rift_lua_vm_disarm(rift_lua_vm *vm);

/* Copies the error at the top of |L| into |out| (cut to the limit). */
void rift_lua_error_text(lua_State *L, int idx, char *out, size_t size);

/* ---- api.c: the rift table ---- */

/* rift_lua_open_api builds the global `rift` table (and message/handle
 * metatables). Runs inside the state's setup pcall. */
void rift_lua_open_api(lua_State *L, rift_lua_vm *vm);

/* Pushes a message table {subject, payload, reply} with the msg methods. */
void rift_lua_push_msg(lua_State *L, rift_lua_vm *vm, const rift_msg *msg);

/* Closes a binding's subscription and unlinks it (owner thread); frees it
 * unless its own handler is running (see vm->dispatching). */
void rift_lua_binding_close(rift_lua_binding *b);

/* Frees a binding closed while its handler ran. */
void rift_lua_binding_free_deferred(const rift_mem *mem, rift_lua_binding *b);

/* Moves a binding to another state's list (reload adoption). */
void rift_lua_binding_move(rift_lua_binding *b, rift_lua_vm *to);

/* Unlinks a timer from its state's list (owner thread). */
void rift_lua_timer_unlink(rift_lua_timer *t);

/* Frees a request, its inbox and its timer (owner thread). */
void rift_lua_request_free(rift_lua_request *r, bool unref);

/* Cancels a timer (owner thread); frees it. */
void rift_lua_timer_free(rift_lua_timer *t, bool unref);

/* ---- json.c, api_stream.c, api_fetch.c ---- */

/* Pushes the rift.json table. */
void rift_lua_open_json(lua_State *L);

/* Adds rift.stream and rift.consumer to the table at the top. */
void rift_lua_open_streams(lua_State *L, rift_lua_vm *vm);

/* Pins the stream |name| through the host's stream_acquire (or finds it
 * with stream_lookup): false when there is none. Never raises; nothing
 * between the pin and rift_lua_stream_unpin may raise either, or the pin
 * would leak (api_stream.c). */
bool rift_lua_stream_pin(rift_lua_vm *vm, const char *name, rift_lua_pin *pin);
void rift_lua_stream_unpin(rift_lua_vm *vm, rift_lua_pin *pin, bool appended);

/* One consumer operation (api_stream.c): the consumer handle at argument
 * 1 looked up afresh by name — the handle keeps only its stream's and its
 * consumer's names. */
typedef struct rift_lua_consumer_op {
    const char *stream_name;
    const char *name; /* the store's (scoped for a restricted plugin) */
    size_t name_len;
    rift_consumer **box; /* boxed at the top of the stack: closed by __gc */
    rift_lua_pin pin;
} rift_lua_consumer_op;

/* Step 1, raising: checks the handle at argument 1 ("consumer is closed")
 * and pushes the box that will hold the store's handle at the top (set
 * the stack to the method's arguments first, or the box takes the place
 * of an absent optional one). [-0, +1, e] */
void rift_lua_consumer_prepare(lua_State *L, rift_lua_consumer_op *op);

/* Step 2: pins the stream and takes a handle on the consumer into the box
 * (*op->box). On failure nothing stays pinned and it raises "<fn>: unknown
 * stream" or the store's text ("consumer does not exist"). Call with no
 * other pin held. [-0, +0, e] */
void rift_lua_consumer_begin(lua_State *L, rift_lua_consumer_op *op,
                             const char *fn);

/* Drops the pin (the boxed handle stays until closed or collected: a
 * consumer handle keeps the stream object alive, closed or not). Never
 * raises. */
void rift_lua_consumer_end(lua_State *L, rift_lua_consumer_op *op);

/* consumer:fetch and the batch metatable it uses (api_fetch.c). */
int rift_lua_consumer_fetch(lua_State *L);
void rift_lua_open_fetch(lua_State *L);

/* Unhooks a waiting fetch's stream watch and drops its handle (owner
 * thread; before its timer goes). A no-op for a rift.request. */
void rift_lua_fetch_wait_release(rift_lua_request *r);

/* ---- host.c: scheduling and timers ---- */

void rift_plugin_host_lock(rift_plugin_host *h);
void rift_plugin_host_unlock(rift_plugin_host *h);

/* Makes a sleeping poller run one more turn. */
void rift_plugin_host_wake(rift_plugin_host *h);

/* Work of a plugin, taken by the thread running it (each takes the lock).
 * NULL when there is none. */
rift_lua_binding *rift_plugin_host_pop_ready(rift_plugin_host *h,
                                             rift_lua_plugin *p);
rift_lua_timer *rift_plugin_host_pop_due(rift_plugin_host *h,
                                         rift_lua_plugin *p);
rift_msg *rift_plugin_host_pop_compat(rift_plugin_host *h, rift_lua_plugin *p);

/* Puts a binding that still holds messages back on its plugin's list. */
void rift_plugin_host_push_ready(rift_plugin_host *h, rift_lua_binding *b);

/* Drops the compatibility messages queued for |p|. */
void rift_plugin_host_compat_flush(rift_plugin_host *h, rift_lua_plugin *p);

/* The slow-consumer rule of Lua subscriptions: log the original's text,
 * close, subscribe again. */
void rift_plugin_host_resubscribe(rift_plugin_host *h, rift_lua_binding *b);

/* rift.on("message") at run time: false when there are no compatibility
 * subscriptions to feed it. */
bool rift_plugin_host_add_compat_target(rift_plugin_host *h, rift_lua_vm *vm);

/* Frees every plugin and compatibility subscription (threads stopped). */
void rift_plugin_host_remove_all(rift_plugin_host *h);

/* Adds |t| to the timer heap (takes host->lock, wakes a sleeping poller
 * when |t| is the earliest). */
void rift_plugin_host_arm_timer(rift_plugin_host *h, rift_lua_timer *t);

/* Makes |t| due now if it is still in the heap (takes host->lock; any
 * thread, also under a stream's lock: nothing here calls the store). */
void rift_plugin_host_timer_now(rift_plugin_host *h, rift_lua_timer *t);

/* Removes |t| from the heap and the due list (takes host->lock). */
void rift_plugin_host_disarm_timer(rift_plugin_host *h, rift_lua_timer *t);

/* Closes a subscription under host->lock and unlinks the binding from its
 * plugin's ready list. */
void rift_plugin_host_close_sub(rift_plugin_host *h, rift_lua_binding *b);

/*
 * rift_plugin_host_subscribe subscribes |b| (its pattern and queue) with the
 * host's notifier, storing the subscription in b->sub.
 */
int rift_plugin_host_subscribe(rift_plugin_host *h, rift_lua_binding *b,
                               rift_error *err);

/* Waits until |p| is not running and keeps workers off it until
 * rift_plugin_host_release. */
void rift_plugin_host_hold(rift_plugin_host *h, rift_lua_plugin *p);
void rift_plugin_host_release(rift_plugin_host *h, rift_lua_plugin *p);

/* Publishes a rift.events.plugin event {"plugin","state","error"?}. */
void rift_plugin_host_event(rift_plugin_host *h, const rift_lua_plugin *p,
                            const char *state, const char *error);

/* ---- plugin.c ---- */

/* Runs one scheduling turn of |p| on a worker (plugin.c). */
void rift_lua_plugin_run(rift_lua_plugin *p);

/* Records a failed callback: logs "<name>: <cb>: <error>", counts, and
 * disables the plugin after too many in a row (owner thread). Returns true
 * when it was disabled (its vm is gone). */
bool rift_lua_plugin_failed(rift_lua_plugin *p, const char *cb,
                            const char *error);

/* Sets the plugin's status error to "<cb>: <error>" (it keeps none when
 * out of memory); plugin_apply.c records a failed load with it. */
void rift_lua_plugin_set_last_error(rift_lua_plugin *p, const char *cb,
                                    const char *error);

#endif /* RIFT_LUA_HOST_INTERNAL_H */
