/*
 * lua_stream_fixture.h — the fixture of the Lua stream and consumer tests
 * (tests layer): a broker, a memory stream "events" over events.>, a
 * plugin host with two workers that finds that stream, and a subscription
 * to out.> where the test plugins report.
 */
#ifndef RIFT_TESTS_LUA_STREAM_FIXTURE_H
#define RIFT_TESTS_LUA_STREAM_FIXTURE_H

#include "lua_test_util.h"
#include "rift/broker.h"
#include "rift/stream.h"

typedef struct lua_stream_fx {
    char *root;
    rift_broker *b;
    rift_stream *events;
    rift_plugin_host *h;
    rift_sub *out;
} lua_stream_fx;

LT_UNUSED static rift_stream *lsf_lookup(void *ud, const char *name) {
    lua_stream_fx *fx = ud;
    return strcmp(name, "events") == 0 ? fx->events : NULL;
}

/* Opens it all. |s| (may be NULL) carries the host's stream callbacks and
 * their stream_ud; NULL finds "events" by lookup. */
LT_UNUSED static bool lsf_open(lua_stream_fx *fx,
                               const rift_plugin_host_settings *s) {
    memset(fx, 0, sizeof(*fx));
    fx->root = rift_test_tmpdir();
    rift_error err;
    if (fx->root == NULL || rift_broker_new(&fx->b, NULL, &err) != 0) {
        return false;
    }
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subjects[] = {"events.>"};
    ss.subjects = subjects;
    ss.subjects_count = 1;
    if (rift_stream_new(&fx->events, &ss, &err) != 0) {
        return false;
    }
    rift_plugin_host_settings hs;
    if (s != NULL) {
        hs = *s;
    } else {
        rift_plugin_host_settings_default(&hs);
        hs.stream_lookup = lsf_lookup;
        hs.stream_ud = fx;
    }
    hs.workers = 2;
    return rift_plugin_host_new(&fx->h, fx->b, &hs, &err) == 0 &&
           rift_broker_subscribe(fx->b, "out.>", 5, NULL, &fx->out, &err) == 0;
}

LT_UNUSED static void lsf_close(lua_stream_fx *fx) {
    rift_plugin_host_del(fx->h);
    rift_stream_del(fx->events);
    rift_sub_close(fx->out);
    rift_broker_del(fx->b);
    rift_test_rmdir(fx->root);
}

/* The next report on out.> (within 5 s, else "TIMEOUT"); static buffer. */
LT_UNUSED static const char *lsf_next_out(lua_stream_fx *fx) {
    static char buf[8192];
    rift_msg *m;
    if (rift_sub_recv(fx->out, 5000000000, &m, NULL) != 0) {
        return "TIMEOUT";
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    len = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    rift_msg_unref(m);
    return buf;
}

#endif
