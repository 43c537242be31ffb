/*
 * test_client_cli.c — the rift CLI's client commands (pub, sub, req,
 * reply) against the Quinn stub server (integration tests): output
 * formats, stdin bodies, binary-safe --raw, request/reply between two CLI
 * processes, server and local error texts with non-zero exits, and the
 * connection discovery (flags, environment, ./rift-data, $RIFT_HOME).
 */
// labels: interop
#include "quinn_stub.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "cli-interop-token-0123456789abcdef"

extern char **environ;

/* ---- Processes ---- */

typedef struct proc {
    pid_t pid;
    int in, out, err;
} proc;

typedef struct buf {
    char *b;
    size_t len;
} buf;

static bool cli_env_var(const char *e) {
    static const char *const ours[] = {
        "RIFT_SERVER=", "RIFT_CA=",   "RIFT_SERVER_NAME=",
        "RIFT_TOKEN=",  "RIFT_HOME=", "RIFT_DEV_LISTEN="};
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
        if (strncmp(e, ours[i], strlen(ours[i])) == 0) {
            return true;
        }
    }
    return false;
}

/* Starts the CLI with |args| (NULL-terminated, without argv[0]), the
 * environment minus the CLI's own variables plus |env| (NULL-terminated
 * "K=V" list or NULL), in directory |cwd| (NULL: ours). */
static proc start_prog(const char *cli, const char *const *args,
                       const char *const *env, const char *cwd) {
    proc p = {-1, -1, -1, -1};
    if (cli == NULL || *cli == '\0') {
        return p;
    }
    const char *argv[32];
    size_t n = 0;
    argv[n++] = cli;
    for (; args[n - 1] != NULL && n < 31; n++) {
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    const char *envp[256];
    size_t m = 0;
    for (char **e = environ; *e != NULL && m < 200; e++) {
        if (!cli_env_var(*e)) {
            envp[m++] = *e;
        }
    }
    for (size_t i = 0; env != NULL && env[i] != NULL && m < 255; i++) {
        envp[m++] = env[i];
    }
    envp[m] = NULL;
    int in[2], out[2], err[2];
    if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) {
        return p;
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (int fd = 3; fd < 64; fd++) {
            close(fd);
        }
        if (cwd != NULL && chdir(cwd) != 0) {
            _exit(126);
        }
        /* execve's prototype predates const; it does not modify them. */
        execve(cli, (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    p.pid = pid;
    p.in = in[1];
    p.out = out[0];
    p.err = err[0];
    return p;
}

static proc start(const char *const *args, const char *const *env,
                  const char *cwd) {
    return start_prog(getenv("RIFT_TEST_CLI"), args, env, cwd);
}

static void append(buf *b, const char *d, size_t n) {
    b->b = realloc(b->b, b->len + n + 1);
    memcpy(b->b + b->len, d, n);
    b->len += n;
    b->b[b->len] = '\0';
}

/* Writes |in| to stdin (then closes it), collects stdout and stderr until
 * the process exits or |ms| pass (then kills it). Returns the exit status,
 * or -1 when it had to be killed. */
static int finish(proc *p, const void *in, size_t inlen, buf *out, buf *err,
                  int ms) {
    out->b = err->b = NULL;
    out->len = err->len = 0;
    append(out, "", 0);
    append(err, "", 0);
    if (p->pid < 0) {
        return -2;
    }
    if (inlen > 0) {
        const char *d = in;
        size_t off = 0;
        while (off < inlen) {
            ssize_t w = write(p->in, d + off, inlen - off);
            if (w <= 0) {
                break;
            }
            off += (size_t)w;
        }
    }
    close(p->in);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int open_fds = 2;
    bool killed = false;
    while (open_fds > 0) {
        struct pollfd pf[2] = {{p->out, POLLIN, 0}, {p->err, POLLIN, 0}};
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = ms - ((now.tv_sec - t0.tv_sec) * 1000 +
                          (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            kill(p->pid, SIGKILL);
            killed = true;
            break;
        }
        if (poll(pf, 2, (int)left) <= 0) {
            continue;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP))) {
                continue;
            }
            char chunk[65536];
            ssize_t r = read(pf[i].fd, chunk, sizeof(chunk));
            if (r <= 0) {
                close(pf[i].fd);
                if (i == 0) {
                    p->out = -1;
                } else {
                    p->err = -1;
                }
                open_fds--;
            } else {
                append(i == 0 ? out : err, chunk, (size_t)r);
            }
        }
        if (p->out < 0 && p->err < 0) {
            break;
        }
    }
    if (p->out >= 0) {
        close(p->out);
    }
    if (p->err >= 0) {
        close(p->err);
    }
    int status = 0;
    waitpid(p->pid, &status, 0);
    if (killed || !WIFEXITED(status)) {
        return -1;
    }
    return WEXITSTATUS(status);
}

static int run(const char *const *args, const char *const *env, const char *cwd,
               const void *in, size_t inlen, buf *out, buf *err) {
    proc p = start(args, env, cwd);
    return finish(&p, in, inlen, out, err, 20000);
}

static void bufs_free(buf *a, buf *b) {
    free(a->b);
    free(b->b);
}

#define STUB_START(st)                                                         \
 do {                                                                          \
  CHECK_MSG(getenv("RIFT_TEST_CLI") && *getenv("RIFT_TEST_CLI"),               \
            "RIFT_TEST_CLI is not set");                                       \
  SKIP_WITHOUT_QUINN_PEER();                                                   \
  if (!quinn_stub_start(&(st), TOKEN)) {                                       \
   quinn_stub_stop(&(st));                                                     \
   CHECK_MSG(false, "quinn stub: %s", (st).why);                               \
  }                                                                            \
 } while (0)

/* True once |p| has exited (it stays waitable for finish). */
static bool exited(proc *p) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) ==
               0 &&
           info.si_pid == p->pid;
}

/* Publishes with `rift pub` every 50 ms until |sub| exits; returns its
 * exit status with its output. */
static int pub_until_done(quinn_stub *st, proc *sub, const char *subject,
                          const void *data, size_t len, buf *out, buf *err) {
    for (int i = 0; i < 200; i++) {
        const char *args[] = {"pub",  subject, "-",       "--server", st->addr,
                              "--ca", st->ca,  "--token", st->token,  NULL};
        buf o, e;
        run(args, NULL, NULL, data, len, &o, &e);
        bufs_free(&o, &e);
        if (exited(sub)) {
            break;
        }
        struct timespec ms = {0, 50000000};
        nanosleep(&ms, NULL);
    }
    return finish(sub, NULL, 0, out, err, 1000);
}

/* ---- pub and sub ---- */

RIFT_TEST(pub_to_sub_with_escaping_and_reply) {
    quinn_stub st;
    STUB_START(st);
    const char *sub_args[] = {"sub",      "cli.>", "--count", "1",
                              "--server", st.addr, "--ca",    st.ca,
                              "--token",  TOKEN,   NULL};
    proc sub = start(sub_args, NULL, NULL);
    CHECK(sub.pid > 0);
    const uint8_t data[] = {'h', 'i', 0, 1, 0xff, '\\', '\n'};
    buf out, err;
    int rc =
        pub_until_done(&st, &sub, "cli.bin", data, sizeof(data), &out, &err);
    CHECK_MSG(rc == 0, "sub exit %d: %s", rc, err.b);
    CHECK_EQ_STR(out.b, "cli.bin: hi\\x00\\x01\\xff\\\\\\x0a\n");
    bufs_free(&out, &err);

    /* A reply subject is shown; data from the command line. */
    proc sub2 = start(sub_args, NULL, NULL);
    for (int i = 0; i < 200; i++) {
        const char *args[] = {"pub",      "cli.r",    "text",  "--reply",
                              "_INBOX.x", "--server", st.addr, "--ca",
                              st.ca,      "--token",  TOKEN,   NULL};
        buf o, e;
        CHECK_EQ_INT(run(args, NULL, NULL, NULL, 0, &o, &e), 0);
        bufs_free(&o, &e);
        if (exited(&sub2)) {
            break;
        }
        struct timespec ms = {0, 50000000};
        nanosleep(&ms, NULL);
    }
    finish(&sub2, NULL, 0, &out, &err, 1000);
    CHECK_EQ_STR(out.b, "cli.r (reply _INBOX.x): text\n");
    bufs_free(&out, &err);
    quinn_stub_stop(&st);
}

RIFT_TEST(raw_sub_is_binary_safe) {
    quinn_stub st;
    STUB_START(st);
    const char *sub_args[] = {"sub",   "cli.raw",  "--count", "1",
                              "--raw", "--server", st.addr,   "--ca",
                              st.ca,   "--token",  TOKEN,     NULL};
    proc sub = start(sub_args, NULL, NULL);
    uint8_t data[3000];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 13);
    }
    buf out, err;
    int rc =
        pub_until_done(&st, &sub, "cli.raw", data, sizeof(data), &out, &err);
    CHECK_MSG(rc == 0, "sub exit %d: %s", rc, err.b);
    CHECK_EQ_MEM(out.b, out.len, data, sizeof(data));
    bufs_free(&out, &err);
    quinn_stub_stop(&st);
}

/* ---- req and reply ---- */

static int req_until_answered(quinn_stub *st, const char *subject,
                              const char *data, buf *out, buf *err) {
    int rc = -1;
    for (int i = 0; i < 200; i++) {
        const char *args[] = {"req",  subject,    data,     "--timeout",
                              "2000", "--server", st->addr, "--ca",
                              st->ca, "--token",  TOKEN,    NULL};
        rc = run(args, NULL, NULL, NULL, 0, out, err);
        if (rc == 0 || strstr(err->b, "no responders available") == NULL) {
            return rc;
        }
        bufs_free(out, err);
        struct timespec ms = {0, 50000000};
        nanosleep(&ms, NULL);
    }
    return rc;
}

RIFT_TEST(req_and_reply_between_two_processes) {
    quinn_stub st;
    STUB_START(st);
    const char *echo_args[] = {"reply", "svc.cli",  "--echo", "--count",
                               "1",     "--server", st.addr,  "--ca",
                               st.ca,   "--token",  TOKEN,    NULL};
    proc responder = start(echo_args, NULL, NULL);
    buf out, err;
    int rc = req_until_answered(&st, "svc.cli", "ping", &out, &err);
    CHECK_MSG(rc == 0, "req exit %d: %s", rc, err.b);
    CHECK_EQ_STR(out.b, "ping\n");
    bufs_free(&out, &err);
    CHECK_EQ_INT(finish(&responder, NULL, 0, &out, &err, 10000), 0);
    CHECK_MSG(strncmp(out.b, "svc.cli (reply _INBOX.", 22) == 0, "%s", out.b);
    bufs_free(&out, &err);

    const char *fixed_args[] = {"reply", "svc.fixed", "pong",  "--count",
                                "1",     "--server",  st.addr, "--ca",
                                st.ca,   "--token",   TOKEN,   NULL};
    responder = start(fixed_args, NULL, NULL);
    rc = req_until_answered(&st, "svc.fixed", "x", &out, &err);
    CHECK_MSG(rc == 0, "req exit %d: %s", rc, err.b);
    CHECK_EQ_STR(out.b, "pong\n");
    bufs_free(&out, &err);
    CHECK_EQ_INT(finish(&responder, NULL, 0, &out, &err, 10000), 0);
    bufs_free(&out, &err);
    quinn_stub_stop(&st);
}

/* ---- Errors ---- */

RIFT_TEST(errors_print_the_text_and_exit_nonzero) {
    quinn_stub st;
    STUB_START(st);
    buf out, err;
    const char *lit[] = {"pub",  "a.*", "x",       "--server", st.addr,
                         "--ca", st.ca, "--token", TOKEN,      NULL};
    /* Checked before connecting, naming the subject: a usage error. */
    CHECK_EQ_INT(run(lit, NULL, NULL, NULL, 0, &out, &err), 2);
    CHECK_EQ_STR(err.b, "rift pub: subject \"a.*\" has a wildcard token; it "
                        "must be a literal subject (* and > are for rift "
                        "sub)\n");
    bufs_free(&out, &err);

    const char *tok[] = {"pub",  "a.b", "x",       "--server", st.addr,
                         "--ca", st.ca, "--token", "wrong",    NULL};
    CHECK_EQ_INT(run(tok, NULL, NULL, NULL, 0, &out, &err), 1);
    CHECK_MSG(strstr(err.b, "authentication failed") != NULL, "%s", err.b);
    bufs_free(&out, &err);

    const char *none[] = {"req",  "svc.none", "x",       "--server", st.addr,
                          "--ca", st.ca,      "--token", TOKEN,      NULL};
    CHECK_EQ_INT(run(none, NULL, NULL, NULL, 0, &out, &err), 1);
    CHECK_EQ_STR(err.b, "rift req: no responders available\n");
    bufs_free(&out, &err);

    const char *tmo[] = {"req", "svc.x",    "x",     "--timeout",
                         "0",   "--server", st.addr, "--ca",
                         st.ca, "--token",  TOKEN,   NULL};
    CHECK_EQ_INT(run(tmo, NULL, NULL, NULL, 0, &out, &err), 2);
    CHECK_EQ_STR(err.b, "rift req: request timeout must be 1..120000 ms\n");
    bufs_free(&out, &err);

    size_t big = 1048577;
    char *data = calloc(1, big);
    const char *over[] = {"pub",  "a.b", "-",       "--server", st.addr,
                          "--ca", st.ca, "--token", TOKEN,      NULL};
    CHECK_EQ_INT(run(over, NULL, NULL, data, big, &out, &err), 1);
    CHECK_EQ_STR(err.b, "rift pub: payload exceeds 1 MiB transport limit\n");
    bufs_free(&out, &err);
    /* Exactly 1 MiB is fine. */
    CHECK_EQ_INT(run(over, NULL, NULL, data, big - 1, &out, &err), 0);
    bufs_free(&out, &err);
    free(data);

    const char *usage[] = {"sub", NULL};
    CHECK_EQ_INT(run(usage, NULL, NULL, NULL, 0, &out, &err), 2);
    CHECK(strstr(err.b, "usage: rift sub") != NULL);
    bufs_free(&out, &err);
    const char *badcount[] = {"sub", "a", "--count", "x", NULL};
    CHECK_EQ_INT(run(badcount, NULL, NULL, NULL, 0, &out, &err), 2);
    bufs_free(&out, &err);
    quinn_stub_stop(&st);
}

/* ---- Connection discovery ---- */

static bool copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    bool ok = a != NULL && b != NULL;
    char chunk[4096];
    size_t n;
    while (ok && (n = fread(chunk, 1, sizeof(chunk), a)) > 0) {
        ok = fwrite(chunk, 1, n, b) == n;
    }
    if (a != NULL) {
        fclose(a);
    }
    if (b != NULL) {
        fclose(b);
    }
    return ok;
}

RIFT_TEST(connection_comes_from_env_and_dev_data_dir) {
    quinn_stub st;
    STUB_START(st);
    char *dir = rift_test_tmpdir();
    char path[4500], data_dir[4400], server_env[128], home_env[4500],
        listen_env[128];
    snprintf(data_dir, sizeof(data_dir), "%s/rift-data", dir);
    CHECK(mkdir(data_dir, 0700) == 0);
    snprintf(path, sizeof(path), "%s/tls", data_dir);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/tls/ca.pem", data_dir);
    CHECK(copy_file(st.ca, path));
    snprintf(path, sizeof(path), "%s/dev.token", data_dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "%s\n", TOKEN);
    fclose(f);
    snprintf(server_env, sizeof(server_env), "RIFT_SERVER=%s", st.addr);
    snprintf(home_env, sizeof(home_env), "RIFT_HOME=%s", data_dir);
    snprintf(listen_env, sizeof(listen_env), "RIFT_DEV_LISTEN=%s", st.addr);
    buf out, err;

    /* ./rift-data in the working directory; the address from the env. */
    const char *pub[] = {"pub", "a.b", "x", NULL};
    const char *env1[] = {server_env, NULL};
    int rc = run(pub, env1, dir, NULL, 0, &out, &err);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, err.b);
    bufs_free(&out, &err);

    /* $RIFT_HOME and riftd's own address override, from anywhere. */
    const char *env2[] = {home_env, listen_env, NULL};
    rc = run(pub, env2, "/", NULL, 0, &out, &err);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, err.b);
    bufs_free(&out, &err);

    /* Everything from the environment, the token through --token-env. */
    char ca_env[4300];
    snprintf(ca_env, sizeof(ca_env), "RIFT_CA=%s", st.ca);
    const char *env3[] = {server_env, ca_env, "MY_TOKEN=" TOKEN,
                          "RIFT_SERVER_NAME=localhost", NULL};
    const char *pub_env[] = {"pub",         "a.b",      "x",
                             "--token-env", "MY_TOKEN", NULL};
    rc = run(pub_env, env3, "/", NULL, 0, &out, &err);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, err.b);
    bufs_free(&out, &err);
    const char *env4[] = {server_env, ca_env, "RIFT_TOKEN=" TOKEN, NULL};
    rc = run(pub, env4, "/", NULL, 0, &out, &err);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, err.b);
    bufs_free(&out, &err);

    /* Flags win over the environment. */
    const char *env5[] = {server_env, ca_env, "RIFT_TOKEN=wrong", NULL};
    const char *pub_flag[] = {"pub", "a.b", "x", "--token", TOKEN, NULL};
    rc = run(pub_flag, env5, "/", NULL, 0, &out, &err);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, err.b);
    bufs_free(&out, &err);
    rc = run(pub, env5, "/", NULL, 0, &out, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK(strstr(err.b, "authentication failed") != NULL);
    bufs_free(&out, &err);

    /* Nothing at all. */
    rc = run(pub, NULL, "/", NULL, 0, &out, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK_MSG(strstr(err.b, "rift pub: no server") != NULL, "%s", err.b);
    bufs_free(&out, &err);
    const char *pub_tenv[] = {"pub",         "a.b",        "x",
                              "--token-env", "NOPE_UNSET", NULL};
    rc = run(pub_tenv, env4, "/", NULL, 0, &out, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK(strstr(err.b, "NOPE_UNSET is not set") != NULL);
    bufs_free(&out, &err);
    rift_test_rmdir(dir);
    quinn_stub_stop(&st);
}

/* ---- The example program ---- */

RIFT_TEST(example_client_pubsub_runs) {
    quinn_stub st;
    STUB_START(st);
    const char *bin = getenv("RIFT_BINARY_DIR");
    CHECK(bin != NULL);
    char path[4200];
    snprintf(path, sizeof(path), "%s/example_client_pubsub", bin);
    CHECK_MSG(access(path, X_OK) == 0, "%s is missing", path);
    const char *args[] = {st.addr, st.ca, "localhost", TOKEN, NULL};
    proc p = start_prog(path, args, NULL, NULL);
    buf out, err;
    CHECK_EQ_INT(finish(&p, NULL, 0, &out, &err, 20000), 0);
    CHECK_EQ_STR(out.b, "demo.greeting: hello #0\n"
                        "demo.greeting: hello #1\n"
                        "demo.greeting: hello #2\n"
                        "demo.greeting: hello #3\n"
                        "demo.greeting: hello #4\n");
    bufs_free(&out, &err);
    quinn_stub_stop(&st);
}
