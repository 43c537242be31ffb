/*
 * test_lua_stream_pins.c — the plugin host's stream_acquire/stream_release
 * (tests layer): every Lua stream call pins its stream and releases it
 * before it returns or raises (store errors and argument errors alike),
 * a stream:publish that stored a record releases with |appended|, a
 * waiting fetch keeps its pin exactly while it waits (released when it
 * resumes and when its plugin is unloaded), and a stream the host no
 * longer finds makes every call raise "<method>: unknown stream".
 */
// labels: threads
#include "lua_stream_fixture.h"

#include "rift/broker.h"
#include "rift/stream.h"

#include <stdatomic.h>

typedef struct fixture {
    lua_stream_fx x;
    atomic_int pins;       /* acquired, not yet released */
    atomic_int acquires;   /* successful acquires */
    atomic_int appended;   /* releases with appended */
    atomic_bool gone;      /* the stream is no longer found */
    atomic_bool bad_token; /* a release got a token it did not hand out */
} fixture;

static rift_stream *acquire(void *ud, const char *name, void **token) {
    fixture *fx = ud;
    if (strcmp(name, "events") != 0 || atomic_load(&fx->gone)) {
        return NULL;
    }
    atomic_fetch_add(&fx->pins, 1);
    atomic_fetch_add(&fx->acquires, 1);
    *token = fx->x.events;
    return fx->x.events;
}

static void release(void *ud, void *token, bool appended) {
    fixture *fx = ud;
    if (token != fx->x.events) {
        atomic_store(&fx->bad_token, true);
    }
    atomic_fetch_sub(&fx->pins, 1);
    if (appended) {
        atomic_fetch_add(&fx->appended, 1);
    }
}

static bool fx_open(fixture *fx) {
    memset(fx, 0, sizeof(*fx));
    rift_plugin_host_settings s;
    rift_plugin_host_settings_default(&s);
    s.stream_acquire = acquire;
    s.stream_release = release;
    s.stream_ud = fx;
    return lsf_open(&fx->x, &s);
}

static int publish(fixture *fx, const char *subject) {
    return rift_broker_publish(fx->x.b, subject, strlen(subject), NULL, 0,
                               (const uint8_t *)"", 0, NULL, NULL);
}

static const char plugin_src[] =
    "local function err(f, ...) local ok, e = pcall(f, ...) "
    "return ok and 'ok' or (tostring(e):gsub('^.-:%d+: ', '')) end\n"
    "local s = rift.stream('events')\n"
    "local c = rift.consumer('events', 'w', {start = 'first', "
    "ack_wait_ms = 60000})\n"
    "rift.subscribe('go.all', function()\n"
    "  rift.publish('out.r', table.concat({\n"
    "    err(s.publish, s, 'events.a', 'x'),\n"
    "    err(s.publish, s, 'other', 'x'),\n"
    "    err(s.info, s),\n"
    "    err(c.fetch, c, 5),\n"
    "    err(c.fetch, c, 0),\n"
    "    err(c.ack, c, 999),\n"
    "    err(c.nak, c, 999, 5),\n"
    "    err(c.term, c, 999),\n"
    "    err(c.in_progress, c, 999),\n"
    "    err(c.info, c),\n"
    "    err(rift.consumer, 'events', 'w', {ack_wait_ms = 1}),\n"
    "    err(rift.consumer, 'events', 'w2') }, '|'))\n"
    "end)\n"
    "rift.subscribe('go.wait', function()\n"
    "  local ok, got = pcall(c.fetch, c, 1, {wait = 60000})\n"
    "  if not ok then\n"
    "    return rift.publish('out.r', (tostring(got):gsub('^.-:%d+: ', '')))\n"
    "  end\n"
    "  rift.publish('out.r', 'woke:' .. #got .. ':' .. got[1].payload)\n"
    "end)\n"
    "rift.subscribe('go.gone', function()\n"
    "  rift.publish('out.r', table.concat({\n"
    "    err(s.publish, s, 'events.a', 'x'), err(s.info, s),\n"
    "    err(c.fetch, c, 1), err(c.ack, c, 1), err(c.term, c, 1),\n"
    "    err(c.info, c), err(c.delete, c), err(c.fetch, c, 1),\n"
    "    err(rift.stream, 'events') }, '|'))\n"
    "end)\n";

typedef struct pin_wait {
    fixture *fx;
    int pins;
} pin_wait;

static bool pins_are(void *arg) {
    pin_wait *w = arg;
    return atomic_load(&w->fx->pins) == w->pins;
}

typedef struct park_wait {
    fixture *fx;
    uint64_t callbacks; /* the plugin's callbacks settled by then */
} park_wait;

/* The fetch is parked: its request exists and its callback has yielded.
 * The request alone is not enough: it is counted before the fetch looks
 * once more, so a record stored in between would still be fetched by
 * that look. A yield settles the callback as a return does. */
static bool plugin_waits(void *arg) {
    park_wait *w = arg;
    lt_status st = lt_get(w->fx->x.h, "p");
    return st.requests == 1 && st.callbacks == w->callbacks;
}

/* Publishes go.wait and waits until its fetch is parked, the plugin's
 * |callbacks|-th settled callback. */
static bool start_waiting_fetch(fixture *fx, uint64_t callbacks) {
    park_wait w = {fx, callbacks};
    return publish(fx, "go.wait") == 0 &&
           rift_test_wait_until(plugin_waits, &w, 10000);
}

static int store_publish(fixture *fx, const char *payload) {
    rift_error err;
    return rift_stream_publish(fx->x.events, "events.b", 8, NULL, 0,
                               (const uint8_t *)payload, strlen(payload), NULL,
                               &err);
}

RIFT_TEST(every_call_releases_its_pin) {
    fixture fx;
    CHECK(fx_open(&fx));
    lt_plugin(fx.x.root, "p", plugin_src);
    rift_plugin_spec spec = lt_spec(fx.x.root, "p");
    spec.deadline_ms = 5000;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.x.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    /* Loading looked the stream up twice and let go. */
    CHECK_EQ_INT(atomic_load(&fx.pins), 0);
    CHECK_EQ_INT(atomic_load(&fx.acquires), 2);

    CHECK_OK(publish(&fx, "go.all"));
    CHECK_EQ_STR(lsf_next_out(&fx.x),
                 "ok|subject does not match this stream|ok|ok|"
                 "bad argument #2 to '?' (fetch limit must be 1..=65536)|"
                 "sequence is not pending acknowledgement|"
                 "sequence is not pending acknowledgement|"
                 "sequence is not pending acknowledgement|"
                 "sequence is not pending acknowledgement|ok|"
                 "invalid messaging configuration: consumer already exists "
                 "with different ack_wait_ms|ok");
    CHECK_EQ_INT(atomic_load(&fx.pins), 0);
    /* Eleven calls reached the store (the bad fetch limit raised first). */
    CHECK_EQ_INT(atomic_load(&fx.acquires), 2 + 11);
    CHECK_EQ_INT(atomic_load(&fx.appended), 1); /* the stored record only */
    CHECK(!atomic_load(&fx.bad_token));

    /* A waiting fetch (the record is pending now: nothing to deliver)
     * holds one pin while it waits, and none once woken. */
    CHECK(start_waiting_fetch(&fx, 2));
    CHECK_EQ_INT(atomic_load(&fx.pins), 1);
    CHECK_OK(store_publish(&fx, "b"));
    CHECK_EQ_STR(lsf_next_out(&fx.x), "woke:1:b");
    CHECK_EQ_INT(atomic_load(&fx.pins), 0);

    /* Gone while a fetch waits: the wake-up finds no stream. */
    CHECK(start_waiting_fetch(&fx, 4));
    CHECK_EQ_INT(atomic_load(&fx.pins), 1);
    atomic_store(&fx.gone, true);
    CHECK_OK(store_publish(&fx, "c"));
    CHECK_EQ_STR(lsf_next_out(&fx.x), "consumer:fetch: unknown stream");
    CHECK_EQ_INT(atomic_load(&fx.pins), 0);

    CHECK_OK(publish(&fx, "go.gone"));
    CHECK_EQ_STR(lsf_next_out(&fx.x), "stream:publish: unknown stream|"
                                      "stream:info: unknown stream|"
                                      "consumer:fetch: unknown stream|"
                                      "consumer:ack: unknown stream|"
                                      "consumer:term: unknown stream|"
                                      "consumer:info: unknown stream|"
                                      "consumer:delete: unknown stream|"
                                      "consumer is closed|"
                                      "rift.stream: unknown stream");
    CHECK_EQ_INT(atomic_load(&fx.pins), 0);

    /* Back: an unload frees a waiting fetch with its pin. */
    atomic_store(&fx.gone, false);
    CHECK_MSG(rift_plugin_host_apply(fx.x.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(publish(&fx, "go.wait")); /* the record stored while gone */
    CHECK_EQ_STR(lsf_next_out(&fx.x), "woke:1:c");
    CHECK(start_waiting_fetch(&fx, 8));
    pin_wait one = {&fx, 1};
    CHECK(pins_are(&one));
    CHECK_OK(rift_plugin_host_apply(fx.x.h, NULL, 0, NULL, &err));
    pin_wait none = {&fx, 0};
    CHECK(rift_test_wait_until(pins_are, &none, 10000));
    CHECK(!atomic_load(&fx.bad_token));
    lsf_close(&fx.x);
}
