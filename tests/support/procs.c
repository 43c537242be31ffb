/*
 * procs.c — child processes for program tests (tests layer). See
 * procs.h.
 */
#include "procs.h"

#include "daemon/files.h"
#include "test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool ours(const char *e) {
    static const char *const names[] = {
        "RIFT_SERVER=", "RIFT_CA=",   "RIFT_SERVER_NAME=",
        "RIFT_TOKEN=",  "RIFT_HOME=", "RIFT_DEV_LISTEN="};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strncmp(e, names[i], strlen(names[i])) == 0) {
            return true;
        }
    }
    return false;
}

const char *rift_proc_riftd(void) {
    const char *s = getenv("RIFT_TEST_RIFTD");
    return s ? s : "";
}

const char *rift_proc_cli(void) {
    const char *s = getenv("RIFT_TEST_CLI");
    return s ? s : "";
}

bool rift_proc_write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return rift_file_write_atomic(path, text, strlen(text), 0644) == 0;
}

bool rift_proc_start(rift_proc *p, const char *prog, const char *cwd,
                     const char *tag, const char *const *args,
                     const char *const *env, const char *input,
                     size_t input_len) {
    memset(p, 0, sizeof(*p));
    p->pid = -1;
    p->status = -1;
    if (prog == NULL || *prog == '\0') {
        return false;
    }
    snprintf(p->out, sizeof(p->out), "%s/%s.out", cwd, tag);
    snprintf(p->err, sizeof(p->err), "%s/%s.err", cwd, tag);
    char in_path[700] = "/dev/null";
    if (input != NULL) {
        snprintf(in_path, sizeof(in_path), "%s/%s.in", cwd, tag);
        if (rift_file_write_atomic(in_path, input, input_len, 0644) != 0) {
            return false;
        }
    }
    /* Everything the child needs is prepared before fork: the test may
     * have threads (clients), so the child only calls async-signal-safe
     * functions until execve. */
    const char *argv[40];
    size_t n = 0;
    argv[n++] = prog;
    for (size_t i = 0; args != NULL && args[i] != NULL && n < 39; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    const char *envp[300];
    size_t m = 0;
    for (char **e = environ; *e != NULL && m < 250; e++) {
        if (!ours(*e)) {
            envp[m++] = *e;
        }
    }
    for (size_t i = 0; env != NULL && env[i] != NULL && m < 299; i++) {
        envp[m++] = env[i];
    }
    envp[m] = NULL;
    unlink(p->out);
    unlink(p->err);
    pid_t pid = fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int i = open(in_path, O_RDONLY);
        int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (i < 0 || o < 0 || e < 0 || chdir(cwd) != 0) {
            _exit(126);
        }
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        for (int fd = 3; fd < 256; fd++) {
            close(fd);
        }
        /* execve's prototype predates const; it modifies nothing. */
        execve(prog, (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    p->pid = pid;
    return true;
}

static bool exited(void *arg) {
    rift_proc *p = arg;
    if (p->reaped) {
        return true;
    }
    int st;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
        p->reaped = true;
        p->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        return true;
    }
    return false;
}

int rift_proc_wait(rift_proc *p, int timeout_ms) {
    if (p->pid <= 0) {
        return -1;
    }
    if (!rift_test_wait_until(exited, p, timeout_ms)) {
        rift_proc_kill(p);
        return -1;
    }
    return p->status;
}

int rift_proc_stop(rift_proc *p, int sig) {
    if (p->pid <= 0) {
        return -1;
    }
    if (!p->reaped) {
        kill(p->pid, sig);
    }
    return rift_proc_wait(p, RIFT_PROC_WAIT_MS);
}

void rift_proc_kill(rift_proc *p) {
    if (p->pid > 0 && !p->reaped) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->reaped = true;
        p->status = -1;
    }
}

char *rift_proc_read(const char *path) {
    char *buf = NULL;
    size_t len = 0;
    if (rift_file_read(path, 16u << 20, &buf, &len) != 0) {
        return NULL;
    }
    return buf;
}

typedef struct text_wait {
    rift_proc *p;
    const char *path;
    const char *needle;
} text_wait;

static bool has_text(void *arg) {
    text_wait *w = arg;
    char *s = rift_proc_read(w->path);
    bool found = s != NULL && strstr(s, w->needle) != NULL;
    free(s);
    return found;
}

bool rift_proc_wait_text(rift_proc *p, bool in_err, const char *needle,
                         int timeout_ms) {
    text_wait w = {p, in_err ? p->err : p->out, needle};
    return rift_test_wait_until(has_text, &w, timeout_ms);
}

size_t rift_proc_count_out(rift_proc *p, const char *needle) {
    char *s = rift_proc_read(p->out);
    size_t n = 0;
    for (const char *q = s; q != NULL && (q = strstr(q, needle)) != NULL;
         q += strlen(needle)) {
        n++;
    }
    free(s);
    return n;
}

/* "ready" appeared, or the process is gone. */
static bool ready_or_gone(void *arg) {
    text_wait *w = arg;
    return has_text(w) || exited(w->p);
}

bool rift_proc_riftd_ready(rift_proc *p) {
    text_wait w = {p, p->err, "rift: ready"};
    if (!rift_test_wait_until(ready_or_gone, &w, RIFT_PROC_WAIT_MS) ||
        !has_text(&w)) {
        char *log = rift_proc_read(p->err);
        fprintf(stderr, "  riftd did not become ready:\n%s\n",
                log ? log : "(no log)");
        free(log);
        return false;
    }
    char *log = rift_proc_read(p->err);
    const char *key = "rift: messaging QUIC on ";
    const char *at = log ? strstr(log, key) : NULL;
    p->address[0] = '\0';
    if (at != NULL) {
        at += strlen(key);
        size_t len = strcspn(at, " \r\n");
        if (len < sizeof(p->address)) {
            memcpy(p->address, at, len);
            p->address[len] = '\0';
        }
    }
    free(log);
    return true;
}

int rift_proc_run(const char *prog, const char *cwd, const char *const *args,
                  const char *const *env, char **out, char **err) {
    static atomic_uint counter;
    char tag[32];
    snprintf(tag, sizeof(tag), "run-%u", atomic_fetch_add(&counter, 1));
    rift_proc p;
    if (!rift_proc_start(&p, prog, cwd, tag, args, env, NULL, 0)) {
        return -1;
    }
    int rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    if (out != NULL) {
        *out = rift_proc_read(p.out);
    }
    if (err != NULL) {
        *err = rift_proc_read(p.err);
    }
    unlink(p.out);
    unlink(p.err);
    return rc;
}
