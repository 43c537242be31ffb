/*
 * test_riftd.c — integration tests of the riftd program (tests layer):
 * command line, one-line configuration errors, --check, the built-in
 * development configuration from an empty directory, SIGTERM/SIGINT and
 * SIGHUP reloads. Each test runs riftd in its own temporary directory.
 */
#include "config/config.h"
#include "daemon/files.h"
#include "daemon/tls.h"
#include "test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 30000

typedef struct proc {
    pid_t pid;
    int status;
    char dir[512];
    char out[600];
    char err[600];
} proc;

/* Starts riftd in |dir| with |args| (NULL-ended) and extra environment
 * "NAME=value" strings (NULL-ended, may be NULL). */
static bool spawn(proc *p, const char *dir, const char *const *args,
                  const char *const *env) {
    const char *riftd = getenv("RIFT_TEST_RIFTD");
    if (riftd == NULL || *riftd == '\0') {
        return false;
    }
    memset(p, 0, sizeof(*p));
    snprintf(p->dir, sizeof(p->dir), "%s", dir);
    snprintf(p->out, sizeof(p->out), "%s/riftd.out", dir);
    snprintf(p->err, sizeof(p->err), "%s/riftd.err", dir);
    /* A log left by an earlier run must not satisfy a wait for this one. */
    unlink(p->out);
    unlink(p->err);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)riftd;
    for (int i = 0; args != NULL && args[i] != NULL && n < 15; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    p->pid = fork();
    if (p->pid < 0) {
        return false;
    }
    if (p->pid == 0) {
        int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || chdir(dir) != 0) {
            _exit(127);
        }
        dup2(o, 1);
        dup2(e, 2);
        for (int i = 0; env != NULL && env[i] != NULL; i++) {
            putenv((char *)env[i]);
        }
        execv(riftd, argv);
        _exit(127);
    }
    return true;
}

static bool exited(void *arg) {
    proc *p = arg;
    return waitpid(p->pid, &p->status, WNOHANG) == p->pid;
}

/* Waits for the process to end; returns its exit status or -1. */
static int wait_exit(proc *p) {
    if (!rift_test_wait_until(exited, p, WAIT_MS)) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &p->status, 0);
        return -1;
    }
    return WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1;
}

static char *slurp(const char *path) {
    char *buf = NULL;
    size_t len = 0;
    if (rift_file_read(path, 1 << 20, &buf, &len) != 0) {
        return NULL;
    }
    return buf;
}

typedef struct log_wait {
    const char *path;
    const char *needle;
} log_wait;

static bool log_has(void *arg) {
    log_wait *w = arg;
    char *s = slurp(w->path);
    bool found = s != NULL && strstr(s, w->needle) != NULL;
    free(s);
    return found;
}

static bool wait_log(proc *p, const char *needle) {
    log_wait w = {p->err, needle};
    return rift_test_wait_until(log_has, &w, WAIT_MS);
}

static bool write_file(const char *dir, const char *name, const char *text) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return rift_file_write_atomic(path, text, strlen(text), 0644) == 0;
}

static int mode_of(const char *dir, const char *name) {
    char path[700];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

static char *read_in(const char *dir, const char *name) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return slurp(path);
}

/* Runs riftd to completion; returns the exit status. */
static int run(proc *p, const char *dir, const char *const *args,
               const char *const *env) {
    if (!spawn(p, dir, args, env)) {
        return -1;
    }
    return wait_exit(p);
}

RIFT_TEST(version_help_and_usage_errors) {
    char *dir = rift_test_tmpdir();
    proc p;
    const char *v[] = {"--version", NULL};
    CHECK_EQ_INT(run(&p, dir, v, NULL), 0);
    char *out = slurp(p.out);
    bool version = out && strcmp(out, "riftd " RIFT_VERSION
                                      " (protocol rift-messaging/1)\n") == 0;
    free(out);
    const char *h[] = {"--help", NULL};
    int help = run(&p, dir, h, NULL);
    out = slurp(p.out);
    bool usage = out && strstr(out, "usage: riftd") != NULL;
    free(out);
    const char *bad[] = {"--bogus", NULL};
    int bogus = run(&p, dir, bad, NULL);
    const char *lvl[] = {"--log-level", "loud", NULL};
    int level = run(&p, dir, lvl, NULL);
    rift_test_rmdir(dir);
    CHECK(version);
    CHECK_EQ_INT(help, 0);
    CHECK(usage);
    CHECK_EQ_INT(bogus, 2);
    CHECK_EQ_INT(level, 2);
}

RIFT_TEST(config_errors_are_one_line) {
    char *dir = rift_test_tmpdir();
    CHECK(write_file(dir, "bad.lua", "return { messaging = true }"));
    CHECK(write_file(dir, "token.lua",
                     "return { messaging = { listen = '127.0.0.1:0', "
                     "certificate = 'c.pem', private_key = 'k.pem', "
                     "principals = { { name = 'p', token_env = "
                     "'RIFT_TEST_ABSENT_TOKEN' } } } }"));
    CHECK(write_file(dir, "lua.lua", "error('first\\nsecond')"));
    proc p;
    const char *a1[] = {"-c", "bad.lua", NULL};
    int r1 = run(&p, dir, a1, NULL);
    char *e1 = slurp(p.err);
    const char *a2[] = {"--config", "token.lua", NULL};
    int r2 = run(&p, dir, a2, NULL);
    char *e2 = slurp(p.err);
    const char *a3[] = {"--config=lua.lua", NULL};
    int r3 = run(&p, dir, a3, NULL);
    char *e3 = slurp(p.err);
    const char *a4[] = {"-c", "absent.lua", NULL};
    int r4 = run(&p, dir, a4, NULL);
    char *e4 = slurp(p.err);
    rift_test_rmdir(dir);
    bool ok1 = e1 && strcmp(e1, "riftd: messaging: expected a table, nil or "
                                "false\n") == 0;
    bool ok2 = e2 && strcmp(e2, "riftd: messaging: set RIFT_TEST_ABSENT_TOKEN "
                                "to a secret of at least 32 bytes\n") == 0;
    bool ok3 = e3 && strcmp(e3, "riftd: lua.lua:1: first second\n") == 0;
    bool ok4 =
        e4 && strncmp(e4, "riftd: config: cannot read absent.lua:", 38) == 0;
    if (!(ok1 && ok2 && ok3 && ok4)) {
        fprintf(stderr, "  [%s] [%s] [%s] [%s]\n", e1, e2, e3, e4);
    }
    free(e1);
    free(e2);
    free(e3);
    free(e4);
    CHECK_EQ_INT(r1, 1);
    CHECK_EQ_INT(r2, 1);
    CHECK_EQ_INT(r3, 1);
    CHECK_EQ_INT(r4, 1);
    CHECK(ok1 && ok2 && ok3 && ok4);
}

static const char listener_config[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = { { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "      publish = { 'plugin.>', 'rift.control.*', '_INBOX.>' },\n"
    "      subscribe = { 'plugin.>', 'rift.events.>', '_INBOX.>' },\n"
    "      control = true } },\n"
    "    streams = { jobs = { subjects = { 'plugin.jobs' }, storage_path =\n"
    "      'stream-data' } },\n"
    "  },\n"
    "  plugins = { 'echo' },\n"
    "}\n";

RIFT_TEST(check_prints_summary_without_tokens) {
    char *dir = rift_test_tmpdir();
    char tls[600];
    snprintf(tls, sizeof(tls), "%s/tls", dir);
    CHECK(mkdir(tls, 0700) == 0);
    rift_error err = {0};
    CHECK_OK(rift_daemon_devcert_generate(tls, &err));
    CHECK(write_file(dir, "rift.lua", listener_config));
    proc p;
    const char *env[] = {"RIFT_TEST_TOKEN=0123456789abcdef-secret-0123456789",
                         NULL};
    const char *args[] = {"--check", NULL}; /* ./rift.lua is the default */
    int rc = run(&p, dir, args, env);
    char *out = slurp(p.out);
    int missing = run(&p, dir, args, NULL);
    char *err_out = slurp(p.err);
    bool created = mode_of(dir, "stream-data") == -1;
    rift_test_rmdir(dir);
    bool ok = out != NULL && strstr(out, "configuration: rift.lua") &&
              strstr(out, "listen: 127.0.0.1:0 (QUIC") &&
              strstr(out, "plugin: token from $RIFT_TEST_TOKEN, control=yes") &&
              strstr(out, "publish: plugin.>, rift.control.*, _INBOX.>") &&
              strstr(out, "jobs: file stream-data") &&
              strstr(out, "echo: plugins/echo/init.lua") &&
              strstr(out, "configuration OK") && !strstr(out, "secret");
    if (!ok) {
        fprintf(stderr, "%s\n", out ? out : "(no output)");
    }
    bool ok2 = err_out && strcmp(err_out, "riftd: messaging: set "
                                          "RIFT_TEST_TOKEN to a secret of at "
                                          "least 32 bytes\n") == 0;
    free(out);
    free(err_out);
    CHECK_EQ_INT(rc, 0);
    CHECK(ok);
    CHECK_EQ_INT(missing, 1);
    CHECK(ok2);
    CHECK(created);
}

RIFT_TEST(check_dev_default_creates_nothing) {
    char *dir = rift_test_tmpdir();
    proc p;
    const char *args[] = {"--check", NULL};
    int rc = run(&p, dir, args, NULL);
    char *out = slurp(p.out);
    int data = mode_of(dir, "rift-data");
    rift_test_rmdir(dir);
    bool ok = out && strstr(out, "(built-in development configuration)") &&
              strstr(out, "dev: token from $RIFT_DEV_TOKEN, control=yes") &&
              strstr(out, "events: file rift-data/streams/events") &&
              strstr(out, "configuration OK");
    free(out);
    CHECK_EQ_INT(rc, 0);
    CHECK(ok);
    CHECK_EQ_INT(data, -1);
}

RIFT_TEST(dev_default_from_empty_directory) {
    char *dir = rift_test_tmpdir();
    char listen[64];
    snprintf(listen, sizeof(listen), "RIFT_DEV_LISTEN=127.0.0.1:%d",
             rift_test_free_udp_port());
    const char *env[] = {listen, NULL};
    proc p;
    CHECK(spawn(&p, dir, NULL, env));
    bool ready = wait_log(&p, "rift: ready (revision runtime)");
    bool warned = wait_log(&p, "DEVELOPMENT CONFIGURATION");
    int m_dir = mode_of(dir, "rift-data");
    int m_tok = mode_of(dir, "rift-data/dev.token");
    int m_key = mode_of(dir, "rift-data/tls/server.key");
    int m_ca = mode_of(dir, "rift-data/tls/ca.pem");
    char *token1 = read_in(dir, "rift-data/dev.token");
    kill(p.pid, SIGTERM);
    int rc1 = wait_exit(&p);
    /* The second start reuses the token; SIGINT stops it as well. */
    CHECK(spawn(&p, dir, NULL, env));
    bool ready2 = wait_log(&p, "rift: ready");
    char *token2 = read_in(dir, "rift-data/dev.token");
    kill(p.pid, SIGINT);
    int rc2 = wait_exit(&p);
    char *log2 = slurp(p.err);
    rift_test_rmdir(dir);
    bool same =
        token1 && token2 && strlen(token1) == 65 && strcmp(token1, token2) == 0;
    bool stopped = log2 && strstr(log2, "SIGINT received, shutting down");
    free(token1);
    free(token2);
    free(log2);
    CHECK(ready);
    CHECK(warned);
    CHECK_EQ_INT(m_dir, 0700);
    CHECK_EQ_INT(m_tok, 0600);
    CHECK_EQ_INT(m_key, 0600);
    CHECK(m_ca > 0);
    CHECK_EQ_INT(rc1, 0);
    CHECK(ready2);
    CHECK(same);
    CHECK_EQ_INT(rc2, 0);
    CHECK(stopped);
}

/* Left by an older riftd or a careless copy: a world-readable data directory
 * is narrowed (with a warning), a world-readable token is refused. */
RIFT_TEST(dev_default_fixes_open_directories_and_refuses_an_open_token) {
    char *dir = rift_test_tmpdir();
    char path[700];
    snprintf(path, sizeof(path), "%s/rift-data", dir);
    CHECK_OK(mkdir(path, 0700));
    CHECK_OK(chmod(path, 0755));
    snprintf(path, sizeof(path), "%s/rift-data/streams", dir);
    CHECK_OK(mkdir(path, 0755));
    snprintf(path, sizeof(path), "%s/rift-data/streams/events", dir);
    CHECK_OK(mkdir(path, 0700));
    CHECK_OK(chmod(path, 0755));
    CHECK(write_file(dir, "rift-data/dev.token",
                     "0123456789abcdef0123456789abcdef0123456789abcdef"
                     "0123456789abcdef\n"));
    char listen[64];
    snprintf(listen, sizeof(listen), "RIFT_DEV_LISTEN=127.0.0.1:%d",
             rift_test_free_udp_port());
    const char *env[] = {listen, NULL};
    proc p;
    int rc1 = run(&p, dir, NULL, env);
    char *err1 = slurp(p.err);
    int m_data = mode_of(dir, "rift-data");
    snprintf(path, sizeof(path), "%s/rift-data/dev.token", dir);
    CHECK_OK(chmod(path, 0600));
    CHECK(spawn(&p, dir, NULL, env));
    bool ready = wait_log(&p, "rift: ready");
    int m_stream = mode_of(dir, "rift-data/streams/events");
    int m_lock = mode_of(dir, "rift-data/streams/events/stream.lock");
    int m_state = mode_of(dir, "rift-data/streams/events/state.log");
    int m_plugin = mode_of(dir, "rift-data/plugins/echo/init.lua");
    kill(p.pid, SIGTERM);
    int rc2 = wait_exit(&p);
    char *err2 = slurp(p.err);
    rift_test_rmdir(dir);
    CHECK_EQ_INT(rc1, 1);
    CHECK_MSG(err1 != NULL &&
                  strstr(err1, "rift-data: directory was open to group or "
                               "others (mode 0755); changed to 0700") &&
                  strstr(err1, "riftd: dev token (rift-data/dev.token) is "
                               "accessible by group or others (mode 0644); "
                               "run chmod 600 rift-data/dev.token\n"),
              "%s", err1 ? err1 : "(no log)");
    CHECK_EQ_INT(m_data, 0700);
    CHECK(ready);
    CHECK_EQ_INT(rc2, 0);
    CHECK_MSG(err2 != NULL && strstr(err2, "rift-data/streams/events: "
                                           "directory was open to group or "
                                           "others (mode 0755)"),
              "%s", err2 ? err2 : "(no log)");
    CHECK_EQ_INT(m_stream, 0700);
    CHECK_EQ_INT(m_lock, 0600);
    CHECK_EQ_INT(m_state, 0600);
    CHECK_EQ_INT(m_plugin, 0600);
    free(err1);
    free(err2);
}

RIFT_TEST(sighup_reloads_or_keeps_the_old_configuration) {
    char *dir = rift_test_tmpdir();
    CHECK(write_file(dir, "my.lua",
                     "return { data_dir = 'd', messaging = { "
                     "subscription_capacity = 16 } }"));
    proc p;
    const char *args[] = {"-c", "my.lua", NULL};
    CHECK(spawn(&p, dir, args, NULL));
    bool ready = wait_log(&p, "rift: ready");
    int m_data = mode_of(dir, "d");
    /* Accepted: only the log level changes. */
    const char *edited = "return { data_dir = 'd', log = 'debug', messaging "
                         "= { subscription_capacity = 16 } }";
    CHECK(write_file(dir, "my.lua", edited));
    char rev[17], line[100];
    rift_config_revision(edited, strlen(edited), rev);
    snprintf(line, sizeof(line), "configuration reloaded (revision %s)", rev);
    kill(p.pid, SIGHUP);
    bool reloaded = wait_log(&p, line);
    /* Rejected: messaging changed. */
    CHECK(write_file(dir, "my.lua",
                     "return { data_dir = 'd', messaging = { "
                     "subscription_capacity = 17 } }"));
    kill(p.pid, SIGHUP);
    bool rejected = wait_log(
        &p, "rift: reload rejected; previous configuration retained: "
            "listener names/addresses, admin and messaging settings require "
            "a restart");
    /* Rejected: a Lua error. */
    CHECK(write_file(dir, "my.lua", "return {"));
    kill(p.pid, SIGHUP);
    bool rejected2 = wait_log(&p, "rift: reload rejected; previous "
                                  "configuration retained: my.lua:1:");
    kill(p.pid, SIGTERM);
    int rc = wait_exit(&p);
    rift_test_rmdir(dir);
    CHECK(ready);
    CHECK_EQ_INT(m_data, 0700);
    CHECK(reloaded);
    CHECK(rejected);
    CHECK(rejected2);
    CHECK_EQ_INT(rc, 0);
}
