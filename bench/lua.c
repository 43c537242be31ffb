/*
 * lua.c — benchmark of the Lua plugin host (bench layer), in process:
 *
 *   deliver  messages/s handed to one plugin's Lua handler on one worker
 *            thread: the bench publishes bursts on the broker, the handler
 *            counts them and publishes an acknowledgement per burst, and
 *            at most two bursts are in flight (no slow consumer).
 *   reqrep   request/reply through a Lua responder (msg:respond): one
 *            requester doing rift_broker_request back to back; msgs/s and
 *            p50/p99 round-trip latency.
 *   quic     the same through the QUIC server: a rift_client connected to
 *            an in-process rift_server on 127.0.0.1 (development
 *            certificates in a temporary directory) does
 *            rift_client_request back to back.
 *
 * Informational (no thresholds); the target for deliver is 500,000/s.
 * Everything runs in this one process (server, client and Lua worker
 * threads), so the numbers include their competition for the CPUs.
 *
 *   build/release/bench/lua [messages] [requests] [--csv FILE]
 */
#include "bench_csv.h"
#include "lua/plugin_host.h"
#include "quic/certgen.h"
#include "rift/broker.h"
#include "rift/client.h"
#include "rift/server.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BURST 1024

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_file(const char *dir, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (mkdir(path, 0700) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s/init.lua", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    fputs(text, f);
    return fclose(f);
}

static void remove_plugin(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/init.lua", dir, name);
    (void)unlink(path);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    (void)rmdir(path);
}

#define TOKEN "lua-benchmark-only-token-of-32-bytes"

typedef struct latencies {
    uint64_t *ns;
    size_t n;
    double seconds;
    uint64_t errors;
} latencies;

static void report(const char *what, const latencies *l, double cpu,
                   const char *csv, const char *scenario,
                   const char *transport) {
    qsort(l->ns, l->n, sizeof(*l->ns), bench_cmp_u64);
    double p50 = (double)l->ns[l->n / 2] / 1e3;
    double p95 = (double)l->ns[l->n * 95 / 100] / 1e3;
    double p99 = (double)l->ns[l->n * 99 / 100] / 1e3;
    double max = (double)l->ns[l->n - 1] / 1e3;
    printf("%s: %zu requests through a Lua responder in %.3f s: %.0f req/s, "
           "p50 %.1f us, p99 %.1f us, max %.1f us, %llu errors\n",
           what, l->n, l->seconds, (double)l->n / l->seconds, p50, p99, max,
           (unsigned long long)l->errors);
    if (csv != NULL) {
        bench_row r = {.impl = "rift",
                       .transport = transport,
                       .label = "lua",
                       .scenario = scenario,
                       .size = 16,
                       .msgs = l->n,
                       .pubs = 1,
                       .subs = 1,
                       .batch = 1,
                       .seconds = l->seconds,
                       .lat_what = "rtt",
                       .p50_us = p50,
                       .p95_us = p95,
                       .p99_us = p99,
                       .max_us = max,
                       .errors = l->errors,
                       .client_cpu_s = -1,
                       .server_cpu_s = cpu};
        (void)bench_csv_append(csv, &r);
    }
}

/* Request/reply through the QUIC server to the Lua echo responder. */
static int quic_reqrep(rift_broker *b, const char *dir, uint64_t requests,
                       const char *csv) {
    char tls[4200], cert[4300], key[4300], ca[4300], addr[64];
    snprintf(tls, sizeof(tls), "%s/tls", dir);
    snprintf(cert, sizeof(cert), "%s/server.pem", tls);
    snprintf(key, sizeof(key), "%s/server.key", tls);
    snprintf(ca, sizeof(ca), "%s/ca.pem", tls);
    rift_error err;
    if (rift_certgen_dev(tls, NULL, &err) != 0) {
        fprintf(stderr, "bench/lua: certgen: %s\n", err.text);
        return -1;
    }
    const char *grants[] = {"bench.>"};
    rift_server_identity id = {
        .name = "bench",
        .name_len = 5,
        .token = TOKEN,
        .token_len = strlen(TOKEN),
        .publish = grants,
        .publish_count = 1,
        .subscribe = grants,
        .subscribe_count = 1,
    };
    rift_server_settings ss;
    rift_server_settings_default(&ss);
    ss.cert_file = cert;
    ss.key_file = key;
    ss.identities = &id;
    ss.identity_count = 1;
    rift_server *srv = NULL;
    rift_client *c = NULL;
    int rc = -1;
    if (rift_server_new(&srv, b, &ss, &err) != 0 ||
        rift_server_start(srv, "127.0.0.1:0", &err) != 0 ||
        rift_server_address(srv, addr, sizeof(addr), NULL) != 0) {
        fprintf(stderr, "bench/lua: server: %s\n", err.text);
        goto out;
    }
    rift_client_settings cs;
    rift_client_settings_default(&cs);
    cs.address = addr;
    cs.ca_file = ca;
    cs.server_name = "127.0.0.1";
    cs.token = TOKEN;
    if (rift_client_new(&c, &cs, &err) != 0) {
        fprintf(stderr, "bench/lua: connect: %s\n", err.text);
        goto out;
    }
    uint8_t payload[16];
    memset(payload, 'q', sizeof(payload));
    latencies l = {.ns = calloc(requests, sizeof(uint64_t)), .n = requests};
    if (l.ns == NULL) {
        goto out;
    }
    double cpu0 = bench_cpu_seconds();
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < requests; i++) {
        uint64_t s = now_ns();
        rift_msg *reply;
        if (rift_client_request(c, "bench.echo", 10, payload, sizeof(payload),
                                1000 * RIFT_MSEC, &reply, NULL) != 0) {
            l.errors++;
        } else {
            rift_msg_unref(reply);
        }
        l.ns[i] = now_ns() - s;
    }
    l.seconds = (double)(now_ns() - t0) / 1e9;
    report("quic", &l, bench_cpu_seconds() - cpu0, csv, "lua_reqrep", "quic");
    free(l.ns);
    rc = 0;
out:
    rift_client_del(c);
    rift_server_del(srv);
    static const char *const files[] = {"ca.pem", "ca.key", "server.pem",
                                        "server.key"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", tls, files[i]);
        (void)unlink(path);
    }
    (void)rmdir(tls);
    return rc;
}

static const char sink_src[] =
    "local n = 0\n"
    "rift.subscribe('bench.deliver', function(msg)\n"
    "  n = n + 1\n"
    "  if n % 1024 == 0 then rift.publish('bench.ack', tostring(n)) end\n"
    "end)\n";

static const char echo_src[] =
    "rift.subscribe('bench.echo', function(msg) msg:respond(msg.payload) "
    "end)\n";

int main(int argc, char **argv) {
    uint64_t messages = 2000000, requests = 50000;
    const char *csv = NULL;
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = argv[++i];
        } else if (pos++ == 0) {
            messages = strtoull(argv[i], NULL, 10);
        } else {
            requests = strtoull(argv[i], NULL, 10);
        }
    }
    messages = (messages + BURST - 1) / BURST * BURST;

    char dir[] = "/tmp/rift-bench-lua-XXXXXX";
    if (mkdtemp(dir) == NULL || write_file(dir, "sink", sink_src) != 0 ||
        write_file(dir, "echo", echo_src) != 0) {
        perror("bench/lua: temporary plugins");
        return 1;
    }
    rift_error err;
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.subscription_capacity = 4 * BURST;
    rift_broker *b;
    rift_plugin_host *h;
    rift_plugin_host_settings hs;
    rift_plugin_host_settings_default(&hs);
    hs.workers = 1;
    if (rift_broker_new(&b, &bs, &err) != 0 ||
        rift_plugin_host_new(&h, b, &hs, &err) != 0) {
        fprintf(stderr, "bench/lua: %s\n", err.text);
        return 1;
    }
    char sink_dir[4200], echo_dir[4200];
    snprintf(sink_dir, sizeof(sink_dir), "%s/sink", dir);
    snprintf(echo_dir, sizeof(echo_dir), "%s/echo", dir);
    rift_plugin_spec specs[2] = {
        {.name = "sink", .path = sink_dir},
        {.name = "echo", .path = echo_dir},
    };
    rift_sub *ack;
    if (rift_plugin_host_apply(h, specs, 2, NULL, &err) != 0 ||
        rift_broker_subscribe(b, "bench.ack", 9, NULL, &ack, &err) != 0) {
        fprintf(stderr, "bench/lua: %s\n", err.text);
        return 1;
    }

    /* ---- deliver ---- */
    uint8_t payload[16];
    memset(payload, 'x', sizeof(payload));
    uint64_t errors = 0, acked = 0;
    double cpu0 = bench_cpu_seconds();
    uint64_t t0 = now_ns();
    for (uint64_t sent = 0; sent < messages;) {
        for (int i = 0; i < BURST; i++) {
            if (rift_broker_publish(b, "bench.deliver", 13, NULL, 0, payload,
                                    sizeof(payload), NULL, NULL) != 0) {
                errors++;
            }
        }
        sent += BURST;
        /* Keep at most two bursts in flight. */
        while (acked + 2 * BURST <= sent) {
            rift_msg *m;
            if (rift_sub_recv(ack, 10000000000, &m, NULL) != 0) {
                fprintf(stderr, "bench/lua: no acknowledgement\n");
                return 1;
            }
            acked += BURST;
            rift_msg_unref(m);
        }
    }
    while (acked < messages) {
        rift_msg *m;
        if (rift_sub_recv(ack, 10000000000, &m, NULL) != 0) {
            fprintf(stderr, "bench/lua: no acknowledgement\n");
            return 1;
        }
        acked += BURST;
        rift_msg_unref(m);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    double cpu = bench_cpu_seconds() - cpu0;
    printf("deliver: %llu messages to one Lua handler (1 worker) in %.3f s: "
           "%.0f msgs/s, %.2f us CPU per message (all threads)\n",
           (unsigned long long)messages, secs, (double)messages / secs,
           cpu * 1e6 / (double)messages);
    if (csv != NULL) {
        bench_row r = {.impl = "rift",
                       .transport = "inproc",
                       .label = "lua",
                       .scenario = "lua_deliver",
                       .size = sizeof(payload),
                       .msgs = messages,
                       .pubs = 1,
                       .subs = 1,
                       .batch = BURST,
                       .seconds = secs,
                       .lat_what = "",
                       .p50_us = -1,
                       .p95_us = -1,
                       .p99_us = -1,
                       .max_us = -1,
                       .errors = errors,
                       .client_cpu_s = -1,
                       .server_cpu_s = cpu};
        (void)bench_csv_append(csv, &r);
    }

    /* ---- reqrep ---- */
    latencies l = {.ns = calloc(requests, sizeof(uint64_t)), .n = requests};
    if (l.ns == NULL) {
        return 1;
    }
    cpu0 = bench_cpu_seconds();
    t0 = now_ns();
    for (uint64_t i = 0; i < requests; i++) {
        uint64_t s = now_ns();
        rift_msg *reply;
        if (rift_broker_request(b, "bench.echo", 10, payload, sizeof(payload),
                                1000000000, &reply, NULL) != 0) {
            l.errors++;
        } else {
            rift_msg_unref(reply);
        }
        l.ns[i] = now_ns() - s;
    }
    l.seconds = (double)(now_ns() - t0) / 1e9;
    report("reqrep", &l, bench_cpu_seconds() - cpu0, csv, "lua_reqrep",
           "inproc");
    free(l.ns);

    /* ---- quic ---- */
    int qrc = quic_reqrep(b, dir, requests, csv);

    rift_sub_close(ack);
    rift_plugin_host_del(h);
    rift_broker_del(b);
    remove_plugin(dir, "sink");
    remove_plugin(dir, "echo");
    return rmdir(dir) == 0 && qrc == 0 ? 0 : 1;
}
