/*
 * cluster_fix.c — three nats-servers with routes and three riftd bridged
 * to them, for the cluster tests (tests layer; see cluster_fix.h).
 */
#include "cluster_fix.h"

#include "quic/certgen.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int cluster_fix_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

static bool write_ns_config(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    char routes[256] = "";
    size_t off = 0;
    for (int j = 0; j < CLUSTER_FIX_NODES; j++) {
        if (j != i) {
            off += (size_t)snprintf(routes + off, sizeof routes - off,
                                    "%snats-route://127.0.0.1:%d",
                                    off ? ", " : "", f->n[j].route_port);
        }
    }
    /* no_advertise: a node's riftd knows only its own nats-server, so
     * killing that server really leaves the node without a backbone
     * (nats.c would otherwise fail over to a discovered route peer). */
    char js[900] = "";
    if (f->o.jetstream) {
        snprintf(js, sizeof js,
                 "jetstream {\n  store_dir: \"%s/js\"\n"
                 "  max_memory_store: 64MB\n  max_file_store: 1GB\n}\n",
                 n->ns_dir);
    }
    /* Top-level tls and authorization apply to the client port only. */
    char tls[1600] = "";
    if (f->o.backbone_tls) {
        snprintf(tls, sizeof tls,
                 "tls {\n  cert_file: \"%s/server.pem\"\n"
                 "  key_file: \"%s/server.key\"\n  timeout: 2\n}\n",
                 f->tls_dir, f->tls_dir);
    }
    char auth[256] = "";
    if (f->o.backbone_auth) {
        snprintf(auth, sizeof auth,
                 "authorization {\n  user: riftd\n  password: \"%s\"\n}\n",
                 RIFTD_FIX_BACKBONE_PW);
    }
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "server_name: n%d\nhost: 127.0.0.1\nport: %d\n%s%s%s"
             "cluster {\n  name: rift\n  host: 127.0.0.1\n  port: %d\n"
             "  routes: [%s]\n  no_advertise: true\n}\n",
             i + 1, n->client_port, js, tls, auth, n->route_port, routes);
    return rift_proc_write_file(n->ns_dir, "nats.conf", cfg);
}

bool cluster_fix_ns_start(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    const char *prog = getenv("NI_NATS_SERVER");
    if (prog == NULL || prog[0] == '\0') {
        fprintf(stderr, "  NI_NATS_SERVER is not set (nats-server 2.9)\n");
        return false;
    }
    const char *args[] = {"-c", "nats.conf", NULL};
    if (!rift_proc_start(&n->ns, prog, n->ns_dir, "nats-server", args, NULL,
                         NULL, 0)) {
        return false;
    }
    n->ns_running = true;
    if (!rift_proc_wait_text(&n->ns, true, "Server is ready",
                             RIFT_PROC_WAIT_MS)) {
        char *log = rift_proc_read(n->ns.err);
        fprintf(stderr, "  nats-server n%d did not become ready:\n%s\n", i + 1,
                log ? log : "(no log)");
        free(log);
        return false;
    }
    return true;
}

void cluster_fix_ns_kill(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    if (n->ns_running) {
        rift_proc_kill(&n->ns);
        n->ns_running = false;
    }
}

static bool start_riftd(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    char streams[4096] = "";
    const char *lua = f->o.streams;
    if (i == CLUSTER_FIX_NODES - 1 && f->o.streams_last != NULL) {
        lua = f->o.streams_last;
    }
    if (lua != NULL) {
        snprintf(streams, sizeof streams, "    streams = %s,\n", lua);
    }
    char grant[512] = "";
    if (f->o.app_streams != NULL) {
        snprintf(grant, sizeof grant, ",\n      streams = %s",
                 f->o.app_streams);
    }
    char worker[512] = "";
    if (f->o.second_principal) {
        snprintf(worker, sizeof worker,
                 ",\n      { name = 'worker', token_env = "
                 "'RIFT_TEST_TOKEN2',\n"
                 "        publish = { '>' }, subscribe = %s }",
                 f->o.worker_subscribe != NULL ? f->o.worker_subscribe
                                               : "{ '>' }");
    }
    char limits[512] = "";
    if (f->o.limits != NULL) {
        snprintf(limits, sizeof limits, "  limits = %s,\n", f->o.limits);
    }
    char backbone[1024];
    snprintf(backbone, sizeof backbone, "servers = { '%s://127.0.0.1:%d' }",
             f->o.backbone_tls ? "tls" : "nats", n->client_port);
    if (f->o.backbone_auth) {
        size_t len = strlen(backbone);
        snprintf(backbone + len, sizeof backbone - len,
                 ", user = 'riftd', password_env = "
                 "'RIFT_TEST_BACKBONE_PASSWORD'");
    }
    if (f->o.backbone_tls) {
        size_t len = strlen(backbone);
        snprintf(backbone + len, sizeof backbone - len,
                 ",\n      tls = { ca = '%s/ca.pem' }", f->tls_dir);
    }
    char cfg[8192];
    snprintf(
        cfg, sizeof cfg,
        "return {\n  log = 'info',\n  messaging = {\n"
        "    listen = '127.0.0.1:0', certificate = 'tls/server.pem',\n"
        "    private_key = 'tls/server.key',\n"
        "    subscription_capacity = 65536,\n%s"
        "    principals = { { name = 'app', token_env = "
        "'RIFT_TEST_TOKEN',\n"
        "      publish = { '>' }, subscribe = { '>' }, control = true%s }%s "
        "} },\n"
        "  nats = { listen = '127.0.0.1:0', allow_plaintext = true },\n%s"
        "  cluster = { node = 'r%d',\n"
        "    nats = { %s } },\n}\n",
        streams, grant, worker, limits, i + 1, backbone);
    if (!riftd_fix_init(&n->r, cfg)) {
        return false;
    }
    return cluster_fix_riftd_start(f, i);
}

void cluster_fix_riftd_kill(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    if (n->c != NULL) {
        rift_client_del(n->c);
        n->c = NULL;
    }
    if (n->r.running) {
        rift_proc_kill(&n->r.p);
        n->r.running = false;
    }
}

bool cluster_fix_riftd_start(cluster_fix *f, int i) {
    cluster_node *n = &f->n[i];
    if (!riftd_fix_start(&n->r, NULL)) {
        return false;
    }
    /* The NATS listener's port from "rift: NATS on 127.0.0.1:<port>". */
    char *log = rift_proc_read(n->r.p.err);
    const char *at = log ? strstr(log, "rift: NATS on ") : NULL;
    const char *colon = at ? strchr(at + 14, ':') : NULL;
    n->nats_port = colon ? atoi(colon + 1) : 0;
    free(log);
    if (n->nats_port <= 0) {
        fprintf(stderr, "  riftd r%d: no NATS listener address\n", i + 1);
        return false;
    }
    return riftd_fix_connect(&n->r, RIFTD_FIX_TOKEN, &n->c);
}

bool cluster_fix_start(cluster_fix *f) {
    return cluster_fix_start_opts(f, NULL);
}

bool cluster_fix_start_opts(cluster_fix *f, const cluster_fix_opts *o) {
    memset(f, 0, sizeof *f);
    if (o != NULL) {
        f->o = *o;
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        cluster_node *n = &f->n[i];
        n->client_port = cluster_fix_free_port();
        n->route_port = cluster_fix_free_port();
        if ((n->ns_dir = rift_test_tmpdir()) == NULL || n->client_port == 0 ||
            n->route_port == 0) {
            return false;
        }
    }
    if (f->o.backbone_tls) {
        rift_error err = {0};
        char dir[700];
        snprintf(dir, sizeof dir, "%s/tls", f->n[0].ns_dir);
        if (rift_certgen_dev(dir, NULL, &err) != 0) {
            fprintf(stderr, "  certgen: %s\n", err.text);
            return false;
        }
        f->tls_dir = strdup(dir);
        if (f->tls_dir == NULL) {
            return false;
        }
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        if (!write_ns_config(f, i) || !cluster_fix_ns_start(f, i)) {
            return false;
        }
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        if (!start_riftd(f, i)) {
            return false;
        }
    }
    return true;
}

/* A new reference to |parent|'s member |key| (NULL if absent), letting go
 * of the caller's reference to |parent| (which may be NULL). */
static json_t *take_member(json_t *parent, const char *key) {
    json_t *m = parent ? json_object_get(parent, key) : NULL;
    if (m != NULL) {
        json_incref(m);
    }
    json_decref(parent);
    return m;
}

json_t *cluster_fix_status(cluster_fix *f, int i) {
    return take_member(riftd_fix_control(f->n[i].c, "status", "{}", NULL),
                       "data");
}

json_t *cluster_fix_cluster(cluster_fix *f, int i) {
    return take_member(cluster_fix_status(f, i), "cluster");
}

json_t *cluster_fix_replicated(cluster_fix *f, int i) {
    json_t *a = take_member(cluster_fix_cluster(f, i), "replicated");
    json_t *r = a ? json_array_get(a, 0) : NULL;
    if (r != NULL) {
        json_incref(r);
    }
    json_decref(a);
    return r;
}

/* True when every replicated[] entry of node |i|'s status is ready. */
static bool replicated_ready(cluster_fix *f, int i, bool print) {
    json_t *st = cluster_fix_status(f, i);
    json_t *cl = st ? json_object_get(st, "cluster") : NULL;
    json_t *a = cl ? json_object_get(cl, "replicated") : NULL;
    bool ok = json_is_array(a) && json_array_size(a) > 0;
    size_t k;
    json_t *v;
    json_array_foreach(a, k, v) {
        ok = ok && json_is_true(json_object_get(v, "ready"));
    }
    if (!ok && print) {
        char *text = st ? json_dumps(st, JSON_COMPACT) : NULL;
        fprintf(stderr, "  r%d: replicated streams not ready: %s\n", i + 1,
                text ? text : "(no status)");
        free(text);
    }
    json_decref(st);
    return ok;
}

static bool all_replicated_ready(void *arg) {
    cluster_fix *f = arg;
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        if (f->n[i].c != NULL && !replicated_ready(f, i, false)) {
            return false;
        }
    }
    return true;
}

bool cluster_fix_wait_replicated(cluster_fix *f, int ms) {
    if (rift_test_wait_until(all_replicated_ready, f, ms)) {
        return true;
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        if (f->n[i].c != NULL) {
            (void)replicated_ready(f, i, true);
        }
    }
    return false;
}

long cluster_fix_rss_kib(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    long kib = 0;
    char line[256];
    while (fp != NULL && fgets(line, sizeof line, fp) != NULL) {
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) {
            break;
        }
    }
    if (fp != NULL) {
        fclose(fp);
    }
    return kib;
}

bool cluster_fix_stop(cluster_fix *f) {
    bool ok = true;
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        cluster_node *n = &f->n[i];
        if (n->c != NULL) {
            rift_client_del(n->c);
            n->c = NULL;
        }
        if (n->r.running && riftd_fix_stop(&n->r) != 0) {
            ok = false;
        }
        riftd_fix_free(&n->r);
    }
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        cluster_fix_ns_kill(f, i);
    }
    /* tls_dir lies inside n[0]'s directory. */
    free(f->tls_dir);
    f->tls_dir = NULL;
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        rift_test_rmdir(f->n[i].ns_dir);
        f->n[i].ns_dir = NULL;
    }
    return ok;
}
