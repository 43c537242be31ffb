/*
 * riftd.c — riftd, the rift daemon (tools layer): command line, logging
 * level, `--check`, then the runtime of src/daemon (start-up order, signal
 * loop, shutdown). Exit status: 0 after SIGTERM/SIGINT or a successful
 * check, 1 on a configuration or start-up error (one line on stderr, before
 * anything binds), 2 on a usage error.
 */
#include "common/common.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/dev.h"
#include "daemon/credentials.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: riftd [-c FILE] [--check] [-v | --log-level LEVEL]\n"
            "\n"
            "  -c, --config FILE    Lua configuration (default: ./rift.lua, "
            "else the\n"
            "                       built-in development configuration)\n"
            "      --check          validate the configuration, print a "
            "summary, exit\n"
            "  -v, --verbose        log at debug level\n"
            "      --log-level L    debug, info, warn, error or off "
            "(overrides log.level)\n"
            "      --print-dev-config\n"
            "                       print the built-in development "
            "configuration\n"
            "  -h, --help           this help\n"
            "      --version        print the version\n"
            "\n"
            "Signals: SIGHUP reloads the configuration, SIGTERM/SIGINT stop.\n"
            "See docs/riftd.md.\n");
}

/* Prints "riftd: <text>" on one line whatever the text contains. */
static void fail_line(const char *text) {
    char line[RIFT_ERROR_TEXT_MAX + 8];
    size_t n = 0;
    for (const char *p = text; *p != '\0' && n + 1 < sizeof(line); p++) {
        line[n++] = ((unsigned char)*p < 0x20) ? ' ' : *p;
    }
    line[n] = '\0';
    fprintf(stderr, "riftd: %s\n", line);
}

static int parse_level(const char *s, rift_log_level *out) {
    static const char *const names[] = {"debug", "info", "warn", "error",
                                        "off"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (rift_log_level)i;
            return 0;
        }
    }
    return -1;
}

static void print_warning(void *ud, const char *text) {
    fprintf(ud, "warning: %s\n", text);
}

/* `riftd --check`: evaluate, load tokens, check TLS files, print. */
static int check(const char *path, const rift_daemon_options *opts) {
    rift_config cfg;
    rift_dev_state dev;
    rift_error err = {0};
    int rc = rift_daemon_load_config(&cfg, path, false, &dev, opts, &err);
    if (rc == 0 && cfg.messaging.listen != NULL) {
        bool dev_pending =
            path == NULL && (access(cfg.messaging.certificate, R_OK) != 0 ||
                             access(cfg.messaging.private_key, R_OK) != 0);
        if (!dev_pending) {
            rc = rift_daemon_tls_check(cfg.messaging.certificate,
                                       cfg.messaging.private_key, NULL, &err);
        }
    }
    if (rc != 0) {
        fail_line(err.text);
        rift_config_free(&cfg);
        return 1;
    }
    rift_config_print_summary(&cfg, stdout);
    rift_config_warn(&cfg, print_warning, stdout);
    if (path == NULL) {
        printf("note: development configuration; %s and the certificates in "
               "%s are created at the first start when missing\n",
               RIFT_DEV_TOKEN_FILE, RIFT_DEV_TLS_DIR);
    }
    printf("configuration OK\n");
    explicit_bzero(&dev, sizeof(dev));
    rift_config_free(&cfg);
    return 0;
}

/*
 * glibc's defaults return the free top of a thread's arena to the kernel
 * once it passes 128 KiB (MADV_DONTNEED) and grow it again page by page.
 * A queue that fills and drains a few hundred KiB many times a second —
 * libnats's message list on a cluster node, a burst through the NATS
 * face — then pays a page fault per 4 KiB each time: profiled on the
 * cluster-1to1 row, sysmalloc, its page faults and madvise were 40% of
 * the receiving node's CPU (docs/performance.md, "Memory allocator").
 * Keeping up to 16 MiB of free top per arena, growing 1 MiB at a time, and
 * serving blocks up to 4 MiB from the arenas (a fixed threshold: setting
 * the trim threshold stops glibc's own adjustment of it) ends that. The
 * cost is bounded: at most 16 MiB more resident per arena, and glibc keeps
 * at most 8 arenas per CPU. Settings given in GLIBC_TUNABLES win.
 */
static void tune_malloc(void) {
    const char *t = getenv("GLIBC_TUNABLES");
    if (t != NULL && strstr(t, "glibc.malloc.") != NULL) {
        return;
    }
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    mallopt(M_TOP_PAD, 1 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
}

int main(int argc, char **argv) {
    tune_malloc();
    /* Block the signals riftd waits for before any thread exists, so only
     * the signal loop ever receives them. */
    sigset_t set;
    rift_daemon_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    const char *config = NULL;
    bool do_check = false;
    rift_daemon_options opts = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
            if (++i == argc) {
                fprintf(stderr, "riftd: %s needs a file\n", a);
                return 2;
            }
            config = argv[i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            config = a + 9;
        } else if (strcmp(a, "--check") == 0) {
            do_check = true;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            rift_log_set_level(RIFT_LOG_DEBUG);
            opts.log_level_forced = true;
        } else if (strcmp(a, "--log-level") == 0 ||
                   strncmp(a, "--log-level=", 12) == 0) {
            const char *v = a[11] == '=' ? a + 12 : (++i < argc ? argv[i] : "");
            rift_log_level level;
            if (parse_level(v, &level) != 0) {
                fprintf(stderr,
                        "riftd: --log-level expects debug, info, warn, error "
                        "or off\n");
                return 2;
            }
            rift_log_set_level(level);
            opts.log_level_forced = true;
        } else if (strcmp(a, "--print-dev-config") == 0) {
            size_t len;
            const char *src = rift_dev_config_source(&len);
            fwrite(src, 1, len, stdout);
            return 0;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("riftd %s (protocol %s)\n", rift_version(), RIFT_ALPN);
            return 0;
        } else {
            fprintf(stderr, "riftd: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    opts.config_path = rift_daemon_config_path(config);
    if (do_check) {
        return check(opts.config_path, &opts);
    }
    rift_daemon *d = NULL;
    rift_error err = {0};
    if (rift_daemon_start(&d, &opts, &err) != 0) {
        fail_line(err.text);
        return 1;
    }
    int rc = rift_daemon_wait_signals(d);
    rift_daemon_stop(d);
    rift_log(RIFT_LOG_INFO, "rift: stopped");
    return rc;
}
