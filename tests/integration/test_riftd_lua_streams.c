/*
 * test_riftd_lua_streams.c — a Lua plugin inside riftd on the streams of
 * riftd's one namespace besides the configured ones (integration tests):
 * a stream made at run time (STREAM_CREATE through the C client) that the
 * plugin publishes to, fetches from (also with a waiting fetch woken by a
 * remote publish) and acknowledges; the same stream deleted while the
 * plugin holds handles on it and while a fetch of it waits (no crash, the
 * next calls raise "<method>: unknown stream", the stream's files go once
 * the waiting fetch lets go); a NATS Streaming channel, whose STAN
 * subscriber receives what the plugin published and whose STAN publish
 * wakes the plugin's waiting fetch; and a channel removed by
 * max_inactivity under the plugin's handle (docs/lua.md "Which streams a
 * plugin sees").
 */
// labels: threads
#define NATS_HAS_STREAMING 1
#include "libnats.h" /* <nats/nats.h>, see tests/CMakeLists.txt */

#include "riftd_fix.h"
#include "test.h"
#include "stan/stan_connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two fdatasyncs (publish, fetch, ack...) fit a loaded machine's
 * deadline. The plugin reports every outcome on plugin.out: "err:<text>"
 * for a raised error. */
static const char plugin_src[] =
    "local s, c\n"
    "local function out(x) rift.publish('plugin.out', x) end\n"
    "local function try(f, ...)\n"
    "  local ok, v = pcall(f, ...)\n"
    "  if ok then return 'ok' end\n"
    "  return 'err:' .. tostring(v)\n"
    "end\n"
    "rift.subscribe('plugin.open', function(m)\n"
    "  local ok, e = pcall(function()\n"
    "    s = rift.stream(m.payload)\n"
    "    c = rift.consumer(m.payload, 'w')\n"
    "  end)\n"
    "  out(ok and 'opened' or 'err:' .. tostring(e))\n"
    "end)\n"
    "rift.subscribe('plugin.use', function(m)\n"
    "  local r = s:publish(m.payload, 'from-lua')\n"
    "  local parts = { tostring(r.sequence) }\n"
    "  for _, d in ipairs(c:fetch(10)) do\n"
    "    parts[#parts + 1] = d.payload\n"
    "    c:ack(d.sequence)\n"
    "  end\n"
    "  parts[#parts + 1] = 'messages=' .. s:info().messages\n"
    "  parts[#parts + 1] = 'pending=' .. c:info().pending\n"
    "  out(table.concat(parts, ','))\n"
    "end)\n"
    "rift.subscribe('plugin.wait', function(m)\n"
    "  local ok, r = pcall(c.fetch, c, 1, { wait = tonumber(m.payload) })\n"
    "  if not ok then return out('err:' .. tostring(r)) end\n"
    "  if #r == 0 then return out('empty') end\n"
    "  c:ack(r[1].sequence)\n"
    "  out(r[1].payload)\n"
    "end)\n"
    "rift.subscribe('plugin.gone', function()\n"
    "  out(table.concat({\n"
    "    try(s.publish, s, 'orders.new', 'x'), try(s.info, s),\n"
    "    try(c.fetch, c, 1), try(c.ack, c, 1), try(c.nak, c, 1),\n"
    "    try(c.info, c), try(rift.stream, 'orders'),\n"
    "    try(rift.consumer, 'orders', 'x') }, '|'))\n"
    "end)\n"
    "rift.subscribe('plugin.drop', function()\n"
    "  out('dropped:' .. try(c.delete, c))\n"
    "end)\n"
    "rift.subscribe('plugin.probe', function()\n"
    "  out(try(s.info, s))\n"
    "end)\n"
    "rift.subscribe('plugin.again', function()\n"
    "  local r = s:publish('orders.new', 'again')\n"
    "  out(r.sequence .. '|' .. try(c.fetch, c, 1))\n"
    "end)\n";

/* The plugin's status counts a parked fetch as a request. */
static bool plugin_waits(void *arg) {
    rift_client *c = arg;
    json_t *st = riftd_fix_control(c, "status", "{}", NULL);
    json_t *plugins = json_object_get(json_object_get(st, "data"), "plugins");
    bool waiting = false;
    for (size_t i = 0; i < json_array_size(plugins); i++) {
        json_t *p = json_array_get(plugins, i);
        const char *name = json_string_value(json_object_get(p, "name"));
        waiting = waiting ||
                  (name != NULL && strcmp(name, "lua") == 0 &&
                   json_integer_value(json_object_get(p, "requests")) == 1);
    }
    json_decref(st);
    return waiting;
}

static int send_msg(rift_client *c, const char *subject, const char *payload) {
    rift_error err = {0};
    return rift_client_publish(c, subject, strlen(subject),
                               (const uint8_t *)payload, strlen(payload), &err);
}

static int stream_publish(rift_client *c, const char *stream,
                          const char *subject, const char *payload) {
    rift_error err = {0};
    return rift_client_stream_publish(
        c, stream, strlen(stream), subject, strlen(subject), NULL, 0,
        (const uint8_t *)payload, strlen(payload), NULL, &err);
}

/* The next plugin.out payload (free()), the riftd log printed when none
 * came. */
static char *next_out(riftd_fix *f, rift_client_sub *out) {
    char *got = riftd_fix_next(out);
    if (got == NULL) {
        char *log = rift_proc_read(f->p.err);
        fprintf(stderr, "riftd: %s\n", log ? log : "(no log)");
        free(log);
    }
    return got;
}

#define CHECK_OUT(f, out, want)                                                \
 do {                                                                          \
  char *got_ = next_out(f, out);                                               \
  CHECK_MSG(got_ != NULL && strcmp(got_, want) == 0, "%s != %s",               \
            got_ ? got_ : "(none)", want);                                     \
  free(got_);                                                                  \
 } while (0)

static const char rt_config[] =
    "return {\n"
    "  data_dir = 'data',\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'plugin.>', 'orders.>', 'rift.control.*',\n"
    "                    '_INBOX.>' },\n"
    "        subscribe = { 'plugin.>', 'orders.>', '_INBOX.>' },\n"
    "        control = true, streams = { 'orders' } },\n"
    "    },\n"
    "  },\n"
    "  plugins = { { name = 'lua', deadline_ms = 5000 } },\n"
    "}\n";

static bool dir_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

RIFT_TEST(run_time_stream_used_then_deleted_under_the_plugin) {
    riftd_fix f;
    CHECK(riftd_fix_init(&f, rt_config));
    CHECK(riftd_fix_plugin(&f, "lua", plugin_src));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_client_sub *out;
    CHECK_OK(rift_client_subscribe(c, "plugin.out", 10, NULL, 0, &out, &err));
    static const char *const subjects[] = {"orders.>"};
    rift_client_stream_spec spec = {0};
    spec.subjects = subjects;
    spec.subjects_count = 1;
    spec.file = true;
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    char stream_dir[4200];
    snprintf(stream_dir, sizeof(stream_dir), "%s/data/streams/orders", f.dir);
    CHECK(dir_exists(stream_dir));

    /* Opened, published to, fetched from and acknowledged by the plugin:
     * the remote record and its own. */
    CHECK_OK(send_msg(c, "plugin.open", "orders"));
    CHECK_OUT(&f, out, "opened");
    CHECK_OK(stream_publish(c, "orders", "orders.x", "remote"));
    CHECK_OK(send_msg(c, "plugin.use", "orders.new"));
    CHECK_OUT(&f, out, "2,remote,from-lua,messages=2,pending=0");

    /* A waiting fetch on the run-time stream is woken by a remote publish. */
    CHECK_OK(send_msg(c, "plugin.wait", "60000"));
    CHECK(rift_test_wait_until(plugin_waits, c, 10000));
    CHECK_OK(stream_publish(c, "orders", "orders.x", "woken"));
    CHECK_OUT(&f, out, "woken");

    /* Deleted while a fetch waits on it: gone from the namespace at once,
     * its files once the fetch lets go of its pin, and the fetch resumes
     * (at its deadline) with the error. */
    CHECK_OK(send_msg(c, "plugin.wait", "3000"));
    CHECK(rift_test_wait_until(plugin_waits, c, 10000));
    CHECK_OK(rift_client_stream_delete(c, "orders", 6, &err));
    rift_client_stream_info info;
    CHECK(rift_client_stream_get_info(c, "orders", 6, &info, &err) ==
          RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    char *got = next_out(&f, out);
    CHECK(got != NULL && strstr(got, "err:") == got &&
          strstr(got, "consumer:fetch: unknown stream") != NULL);
    free(got);
    CHECK(!dir_exists(stream_dir));

    /* Every call through the old handles, and new lookups, raise. */
    CHECK_OK(send_msg(c, "plugin.gone", ""));
    got = next_out(&f, out);
    CHECK(got != NULL);
    static const char *const want[] = {
        "stream:publish: unknown stream", "stream:info: unknown stream",
        "consumer:fetch: unknown stream", "consumer:ack: unknown stream",
        "consumer:nak: unknown stream",   "consumer:info: unknown stream",
        "rift.stream: unknown stream",    "rift.consumer: unknown stream"};
    char *save = NULL;
    char *part = got != NULL ? strtok_r(got, "|", &save) : NULL;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK_MSG(part != NULL && strncmp(part, "err:", 4) == 0 &&
                      strstr(part, want[i]) != NULL,
                  "%zu: %s, want %s", i, part ? part : "(none)", want[i]);
        part = strtok_r(NULL, "|", &save);
    }
    CHECK(part == NULL);
    free(got);

    /* Handles keep names: a new stream of that name is the one they
     * reach, without the old one's consumer. */
    spec.file = false;
    CHECK_OK(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err));
    CHECK_OK(send_msg(c, "plugin.again", ""));
    got = next_out(&f, out);
    CHECK_MSG(got != NULL && strncmp(got, "1|err:", 6) == 0 &&
                  strstr(got, "consumer does not exist") != NULL,
              "%s", got ? got : "(none)");
    free(got);

    rift_client_sub_close(out);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

/* ---- A NATS Streaming channel ---- */

typedef struct got_msgs {
    pthread_mutex_t mu;
    char payloads[8][32];
    size_t n;
} got_msgs;

static void on_msg(stanConnection *sc, stanSubscription *sub,
                   const char *channel, stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    got_msgs *g = closure;
    stanSubscription_AckMsg(sub, msg); /* before the count: see stan_fix.c */
    pthread_mutex_lock(&g->mu);
    if (g->n < 8) {
        snprintf(g->payloads[g->n++], sizeof(g->payloads[0]), "%.*s",
                 stanMsg_GetDataLength(msg), stanMsg_GetData(msg));
    }
    pthread_mutex_unlock(&g->mu);
    stanMsg_Destroy(msg);
}

static bool got_two(void *arg) {
    got_msgs *g = arg;
    pthread_mutex_lock(&g->mu);
    bool ok = g->n >= 2;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

/* riftd with a QUIC principal that may drive the plugin and read status,
 * and a NATS Streaming service on |port| with |limits|. */
static void stan_config(char *cfg, size_t size, int port, const char *limits) {
    snprintf(cfg, size,
             "return {\n"
             "  data_dir = 'data',\n"
             "  messaging = {\n"
             "    listen = '127.0.0.1:0',\n"
             "    certificate = 'tls/server.pem',\n"
             "    private_key = 'tls/server.key',\n"
             "    principals = {\n"
             "      { name = 'worker', token_env = 'RIFT_TEST_TOKEN',\n"
             "        publish = { 'plugin.>', 'rift.control.*', '_INBOX.>' },\n"
             "        subscribe = { 'plugin.>', '_INBOX.>' },\n"
             "        control = true },\n"
             "      { name = 'stan', token_env = 'RIFT_TEST_TOKEN2',\n"
             "        publish = { '_STAN.>', '_INBOX.>' },\n"
             "        subscribe = { '_INBOX.>', '_STAN.acks.>' } } } },\n"
             "  nats = { listen = '127.0.0.1:%d', anonymous = 'stan',\n"
             "           allow_plaintext = true },\n"
             "  streaming = { store = 'memory', limits = { %s } },\n"
             "  plugins = { { name = 'lua', deadline_ms = 5000 } },\n"
             "}\n",
             port, limits);
}

RIFT_TEST(stan_channel_published_to_and_fetched_from) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    char cfg[2048];
    stan_config(cfg, sizeof cfg, port, "");
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    CHECK(riftd_fix_plugin(&f, "lua", plugin_src));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_client_sub *out;
    CHECK_OK(rift_client_subscribe(c, "plugin.out", 10, NULL, 0, &out, &err));

    /* Not a channel yet: a lookup never creates one. */
    CHECK_OK(send_msg(c, "plugin.open", "chan"));
    char *got = next_out(&f, out);
    CHECK_MSG(got != NULL && strstr(got, "rift.stream: unknown stream"), "%s",
              got ? got : "(none)");
    free(got);

    stanConnection *sc = stan_fix_connect(port, "lua-test");
    CHECK(sc != NULL);
    CHECK(stanConnection_Publish(sc, "chan", "stan-1", 6) == NATS_OK);
    CHECK_OK(send_msg(c, "plugin.open", "chan"));
    CHECK_OUT(&f, out, "opened");
    /* A live STAN subscriber receives the plugin's record as the
     * channel's second. */
    got_msgs g = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    stanSubOptions *so = NULL;
    stanSubscription *sub = NULL;
    CHECK(stanSubOptions_Create(&so) == NATS_OK);
    stanSubOptions_DeliverAllAvailable(so);
    CHECK(stanConnection_Subscribe(&sub, sc, "chan", on_msg, &g, so) ==
          NATS_OK);
    stanSubOptions_Destroy(so);
    CHECK_OK(send_msg(c, "plugin.use", "chan"));
    CHECK_OUT(&f, out, "2,stan-1,from-lua,messages=2,pending=0");

    CHECK(rift_test_wait_until(got_two, &g, 10000));
    pthread_mutex_lock(&g.mu);
    CHECK_EQ_STR(g.payloads[0], "stan-1");
    CHECK_EQ_STR(g.payloads[1], "from-lua");
    pthread_mutex_unlock(&g.mu);

    /* The plugin's waiting fetch on the channel is woken by a STAN
     * publish. */
    CHECK_OK(send_msg(c, "plugin.wait", "60000"));
    CHECK(rift_test_wait_until(plugin_waits, c, 10000));
    CHECK(stanConnection_Publish(sc, "chan", "stan-2", 6) == NATS_OK);
    CHECK_OUT(&f, out, "stan-2");
    stanSubscription_Unsubscribe(sub);
    stanSubscription_Destroy(sub);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);

    rift_client_sub_close(out);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000); /* libnats' global state */
}

typedef struct probe {
    riftd_fix *f;
    rift_client *c;
    rift_client_sub *out;
    char last[256];
    int probes;
} probe;

/* Asks the plugin for stream:info of its handle; true once it raises. */
static bool channel_gone(void *arg) {
    probe *p = arg;
    p->probes++;
    if (send_msg(p->c, "plugin.probe", "") != 0) {
        return false;
    }
    char *got = next_out(p->f, p->out);
    snprintf(p->last, sizeof(p->last), "%s", got ? got : "(none)");
    free(got);
    return strncmp(p->last, "err:", 4) == 0;
}

RIFT_TEST(stan_channel_removed_under_the_plugin) {
    int port = rift_test_free_tcp_port();
    CHECK(port > 0);
    char cfg[2048];
    stan_config(cfg, sizeof cfg, port, "max_inactivity_ms = 300");
    riftd_fix f;
    CHECK(riftd_fix_init(&f, cfg));
    CHECK(riftd_fix_plugin(&f, "lua", plugin_src));
    CHECK(riftd_fix_start(&f, NULL));
    rift_client *c;
    CHECK(riftd_fix_connect(&f, RIFTD_FIX_TOKEN, &c));
    rift_error err = {0};
    rift_client_sub *out;
    CHECK_OK(rift_client_subscribe(c, "plugin.out", 10, NULL, 0, &out, &err));
    stanConnection *sc = stan_fix_connect(port, "lua-gone");
    CHECK(sc != NULL);
    CHECK(stanConnection_Publish(sc, "brief", "x", 1) == NATS_OK);
    CHECK(stanConnection_Close(sc) == NATS_OK);
    stanConnection_Destroy(sc);
    /* The plugin's consumer keeps the channel (an offline durable would);
     * deleting it leaves the channel to max_inactivity. A channel removed
     * before the open is possible on a slow machine: then the open itself
     * reports it, and the test has nothing left to show. */
    CHECK_OK(send_msg(c, "plugin.open", "brief"));
    char *got = next_out(&f, out);
    CHECK(got != NULL);
    bool opened = strcmp(got, "opened") == 0;
    free(got);
    if (opened) {
        CHECK_OK(send_msg(c, "plugin.drop", ""));
        CHECK_OUT(&f, out, "dropped:ok");
        probe p = {&f, c, out, "", 0};
        CHECK_MSG(rift_test_wait_until(channel_gone, &p, 20000), "%s", p.last);
        CHECK_MSG(strstr(p.last, "stream:info: unknown stream") != NULL, "%s",
                  p.last);
        printf("channel removed under the plugin after %d probes\n", p.probes);
    } else {
        printf("channel removed before the plugin opened it\n");
    }
    rift_client_sub_close(out);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
    nats_CloseAndWait(5000); /* libnats' global state */
}
