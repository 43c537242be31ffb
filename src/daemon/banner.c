/*
 * banner.c — riftd's development banner (daemon layer). See banner.h.
 */
#include "daemon/banner.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The address the CLI assumes when nothing else is given
 * (tools/rift/conn_options.h). */
#define CLI_DEFAULT_ADDRESS "127.0.0.1:7443"

/* |s| as one shell word: unchanged when it is plain, else single-quoted. */
static void shell_word(const char *s, char *out, size_t size) {
    bool plain = *s != '\0';
    for (const char *p = s; *p != '\0' && plain; p++) {
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789/._-+:,@%=",
                       *p) != NULL;
    }
    if (plain) {
        snprintf(out, size, "%s", s);
        return;
    }
    size_t n = 0;
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    for (const char *p = s; *p != '\0' && n + 5 < size; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    if (n + 1 < size) {
        out[n++] = '\'';
    }
    out[n] = '\0';
}

/* True when `rift` on $PATH is the file at |path|: then the plain name
 * works wherever the user stands. */
static bool on_path(const char *path) {
    struct stat want, st;
    const char *env = getenv("PATH");
    if (env == NULL || stat(path, &want) != 0) {
        return false;
    }
    char dir[PATH_MAX + 8];
    for (const char *p = env; *p != '\0';) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < PATH_MAX) {
            snprintf(dir, sizeof(dir), "%.*s/rift", (int)n, p);
            if (stat(dir, &st) == 0) {
                /* The first rift on PATH is the one the shell runs. */
                return st.st_dev == want.st_dev && st.st_ino == want.st_ino;
            }
        }
        p += n + (p[n] == ':');
    }
    return false;
}

/* How the user calls the CLI next to this riftd: "rift" when that name
 * resolves to it, else its absolute path (riftd and rift are built and
 * installed side by side). */
static void cli_command(char *out, size_t size) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash = n > 0 ? memrchr(self, '/', (size_t)n) : NULL;
    if (slash == NULL) {
        snprintf(out, size, "rift");
        return;
    }
    self[n] = '\0';
    char path[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%.*s/rift", (int)(slash - self), self);
    if (access(path, X_OK) != 0 || on_path(path)) {
        snprintf(out, size, "rift");
        return;
    }
    shell_word(path, out, size);
}

typedef struct text {
    char *buf;
    size_t size, len;
} text;

static void add(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(text *t, const char *fmt, ...) {
    if (t->len + 1 >= t->size) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        t->len +=
            (size_t)n < t->size - t->len ? (size_t)n : t->size - t->len - 1;
    }
}

size_t rift_daemon_banner_format(char *buf, size_t size, const char *address,
                                 bool echo) {
    text t = {buf, size, 0};
    if (size == 0) {
        return 0;
    }
    buf[0] = '\0';
    char rift[PATH_MAX + 64], cwd[PATH_MAX], dir[PATH_MAX + 64];
    cli_command(rift, sizeof(rift));
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        snprintf(cwd, sizeof(cwd), ".");
    }
    shell_word(cwd, dir, sizeof(dir));
    add(&t, "riftd: development broker on %s. In another terminal, try:\n",
        address ? address : "(no listener)");
    /* The CLI finds ./rift-data, so the commands run where riftd runs. */
    add(&t, "  cd %s\n", dir);
    if (address != NULL && strcmp(address, CLI_DEFAULT_ADDRESS) != 0) {
        add(&t, "  export RIFT_SERVER=%s\n", address);
    }
    add(&t, "  %s sub '>'  # every message as it arrives\n", rift);
    add(&t, "  %s pub demo.hello hi  # publish one\n", rift);
    if (echo) {
        add(&t, "  %s req demo.echo hi  # the echo plugin answers\n", rift);
    }
    add(&t, "  %s stream pub events events.demo hi\n", rift);
    add(&t, "  %s stream replay events\n", rift);
    add(&t, "  %s status\n", rift);
    return t.len;
}

void rift_daemon_banner(const char *address, bool echo) {
    char buf[8 * (PATH_MAX + 96)];
    size_t len = rift_daemon_banner_format(buf, sizeof(buf), address, echo);
    /* One write, so log lines of other threads cannot split it. */
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(STDERR_FILENO, buf + off, len - off);
        if (w <= 0) {
            break;
        }
        off += (size_t)w;
    }
}
