/*
 * io.c — input and output helpers of the rift CLI (tools layer). See io.h.
 */
#include "io.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One byte more than the transport carries, so an oversized body reaches
 * the library and draws its exact error. */
#define BODY_MAX (1048576u + 1u)

int rift_cli_read_data(const char *cmd, const char *arg, uint8_t **pbuf,
                       size_t *plen, bool *owned) {
    *owned = false;
    if (arg == NULL) {
        *pbuf = NULL;
        *plen = 0;
        return 0;
    }
    if (strcmp(arg, "-") != 0) {
        *pbuf = (uint8_t *)arg;
        *plen = strlen(arg);
        return 0;
    }
    uint8_t *buf = malloc(BODY_MAX);
    if (buf == NULL) {
        fprintf(stderr, "rift %s: out of memory\n", cmd);
        return 1;
    }
    size_t len = 0;
    while (len < BODY_MAX) {
        ssize_t n = read(STDIN_FILENO, buf + len, BODY_MAX - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "rift %s: reading stdin: %s\n", cmd,
                    strerror(errno));
            free(buf);
            return 1;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    *pbuf = buf;
    *plen = len;
    *owned = true;
    return 0;
}

bool rift_cli_parse_u64(const char *cmd, const char *opt, const char *s,
                        uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0) {
        fprintf(stderr, "rift %s: %s expects a number, not '%s'\n", cmd, opt,
                s);
        return false;
    }
    *out = v;
    return true;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool rift_cli_parse_sep(const char *cmd, const char *text,
                        char out[RIFT_CLI_SEP_MAX], size_t *len) {
    size_t n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        char c = *p;
        if (c == '\\') {
            static const char from[] = "nrt0\\", to[] = "\n\r\t\0\\";
            const char *k = p[1] != '\0' ? strchr(from, p[1]) : NULL;
            if (k != NULL) {
                c = to[k - from];
                p++;
            } else if (p[1] == 'x' && hex_digit(p[2]) >= 0 &&
                       hex_digit(p[3]) >= 0) {
                c = (char)(hex_digit(p[2]) * 16 + hex_digit(p[3]));
                p += 3;
            } else {
                fprintf(stderr,
                        "rift %s: --sep: unknown escape in '%s' (use \\n, "
                        "\\r, \\t, \\0, \\\\ or \\xHH)\n",
                        cmd, text);
                return false;
            }
        }
        if (n == RIFT_CLI_SEP_MAX) {
            fprintf(stderr, "rift %s: --sep is longer than %d bytes\n", cmd,
                    RIFT_CLI_SEP_MAX);
            return false;
        }
        out[n++] = c;
    }
    if (n == 0) {
        fprintf(stderr, "rift %s: --sep needs a separator\n", cmd);
        return false;
    }
    *len = n;
    return true;
}

/* 1536 -> "1.5 KiB". */
void rift_cli_human_bytes(long long n, char *out, size_t cap) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(out, cap, "%lld B", n);
    } else {
        snprintf(out, cap, "%.1f %s", v, units[u]);
    }
}

void rift_cli_print_escaped(FILE *out, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        if (b == '\\') {
            fputs("\\\\", out);
        } else if (b >= 0x20 && b < 0x7f) {
            fputc(b, out);
        } else {
            fprintf(out, "\\x%02x", b);
        }
    }
}

void rift_cli_print_msg(FILE *out, const rift_msg *m, bool raw) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    if (raw) {
        if (len > 0) {
            fwrite(p, 1, len, out);
        }
        fflush(out);
        return;
    }
    size_t slen, rlen;
    const char *subject = rift_msg_subject(m, &slen);
    const char *reply = rift_msg_reply(m, &rlen);
    rift_cli_print_escaped(out, (const uint8_t *)subject, slen);
    if (reply != NULL) {
        fputs(" (reply ", out);
        rift_cli_print_escaped(out, (const uint8_t *)reply, rlen);
        fputc(')', out);
    }
    fputs(": ", out);
    rift_cli_print_escaped(out, p, len);
    fputc('\n', out);
    fflush(out);
}

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

void rift_cli_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool rift_cli_stop_requested(void) {
    return stop_flag != 0;
}
