/*
 * lua_test_util.h — helpers shared by the Lua plugin host tests (tests
 * layer): plugin folders in a temporary directory, loading one plugin,
 * reading and awaiting a plugin's status.
 */
#ifndef RIFT_TESTS_LUA_TEST_UTIL_H
#define RIFT_TESTS_LUA_TEST_UTIL_H

#include "lua/plugin_host.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LT_UNUSED __attribute__((unused))

/* Writes |text| to |root|/|rel|, creating the directories on the way. */
LT_UNUSED static void lt_put(const char *root, const char *rel,
                             const char *text) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; *s != '\0'; s++) {
        if (*s == '/') {
            *s = '\0';
            (void)mkdir(path, 0700);
            *s = '/';
        }
    }
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

/* Path of plugin |name|'s folder under |root| (static buffer). */
LT_UNUSED static const char *lt_plugin_dir(const char *root, const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/plugins/%s", root, name);
    return buf;
}

/* Writes plugins/<name>/init.lua under |root|. */
LT_UNUSED static void lt_plugin(const char *root, const char *name,
                                const char *init) {
    char rel[512];
    snprintf(rel, sizeof(rel), "plugins/%s/init.lua", name);
    lt_put(root, rel, init);
}

/* A spec for plugins/<name> under |root| with default budgets. */
LT_UNUSED static rift_plugin_spec lt_spec(const char *root, const char *name) {
    static char paths[8][4096];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 4096, "%s/plugins/%s", root, name);
    rift_plugin_spec s = {.name = name, .path = p};
    return s;
}

/* A copy of one plugin's status (last_error kept in |err|). */
typedef struct lt_status {
    bool found;
    rift_plugin_state state;
    uint64_t callbacks, messages, errors, published, dropped;
    size_t memory_bytes, subscriptions, timers, requests, queued;
    char err[4200];
} lt_status;

LT_UNUSED static lt_status lt_get(rift_plugin_host *h, const char *name) {
    lt_status out;
    memset(&out, 0, sizeof(out));
    rift_plugin_status *st;
    size_t n;
    if (rift_plugin_host_status(h, &st, &n) != 0) {
        return out;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(st[i].name, name) != 0) {
            continue;
        }
        out.found = true;
        out.state = st[i].state;
        out.callbacks = st[i].callbacks;
        out.messages = st[i].messages;
        out.errors = st[i].errors;
        out.published = st[i].published;
        out.dropped = st[i].dropped;
        out.memory_bytes = st[i].memory_bytes;
        out.subscriptions = st[i].subscriptions;
        out.timers = st[i].timers;
        out.requests = st[i].requests;
        out.queued = st[i].queued;
        if (st[i].last_error != NULL) {
            snprintf(out.err, sizeof(out.err), "%s", st[i].last_error);
        }
    }
    rift_plugin_host_status_free(st, n);
    return out;
}

typedef struct lt_wait {
    rift_plugin_host *h;
    const char *name;
    uint64_t errors;    /* wait for at least this many errors */
    uint64_t callbacks; /* and this many callbacks */
    int state;          /* and this state (-1 = any) */
} lt_wait;

LT_UNUSED static bool lt_wait_cond(void *arg) {
    lt_wait *w = arg;
    lt_status s = lt_get(w->h, w->name);
    return s.found && s.errors >= w->errors && s.callbacks >= w->callbacks &&
           (w->state < 0 || (int)s.state == w->state);
}

/* Waits (up to 10 s) until |name| has at least |errors| failed and
 * |callbacks| run callbacks; returns its status. */
LT_UNUSED static lt_status lt_await(rift_plugin_host *h, const char *name,
                                    uint64_t errors, uint64_t callbacks,
                                    int state) {
    lt_wait w = {h, name, errors, callbacks, state};
    (void)rift_test_wait_until(lt_wait_cond, &w, 10000);
    return lt_get(h, name);
}

#endif /* RIFT_TESTS_LUA_TEST_UTIL_H */
