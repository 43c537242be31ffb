/*
 * riftd_fix.c — riftd processes for integration tests (tests layer). See
 * riftd_fix.h.
 */
#include "riftd_fix.h"

#include "quic/certgen.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SECOND 1000000000ll

bool riftd_fix_init(riftd_fix *f, const char *config) {
    memset(f, 0, sizeof(*f));
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    char tls[700];
    snprintf(tls, sizeof(tls), "%s/tls", f->dir);
    snprintf(f->ca, sizeof(f->ca), "%s/tls/ca.pem", f->dir);
    rift_error err = {0};
    if (rift_certgen_dev(tls, NULL, &err) != 0) {
        fprintf(stderr, "  certgen: %s\n", err.text);
        return false;
    }
    return rift_proc_write_file(f->dir, "rift.lua", config);
}

bool riftd_fix_start(riftd_fix *f, const char *const *extra) {
    const char *args[12] = {"-c", "rift.lua"};
    size_t n = 2;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 11; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    const char *env[] = {"RIFT_TEST_TOKEN=" RIFTD_FIX_TOKEN,
                         "RIFT_TEST_TOKEN2=" RIFTD_FIX_TOKEN2,
                         "RIFT_TEST_BACKBONE_PASSWORD=" RIFTD_FIX_BACKBONE_PW,
                         NULL};
    if (!rift_proc_start(&f->p, rift_proc_riftd(), f->dir, "riftd", args, env,
                         NULL, 0)) {
        fprintf(stderr, "  cannot start riftd (RIFT_TEST_RIFTD unset?)\n");
        return false;
    }
    f->running = true;
    return rift_proc_riftd_ready(&f->p);
}

int riftd_fix_stop(riftd_fix *f) {
    f->running = false;
    int rc = rift_proc_stop(&f->p, SIGTERM);
    if (rc != 0) {
        /* Sanitizer reports and failures end up here: show them. */
        char *log = rift_proc_read(f->p.err);
        fprintf(stderr, "  riftd exited with %d:\n%s\n", rc,
                log ? log : "(no log)");
        free(log);
    }
    return rc;
}

void riftd_fix_free(riftd_fix *f) {
    if (f->running) {
        rift_proc_kill(&f->p);
    }
    rift_test_rmdir(f->dir);
    f->dir = NULL;
}

bool riftd_fix_connect(riftd_fix *f, const char *token, rift_client **pc) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = f->p.address;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = token;
    rift_error err = {0};
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "  connect %s: %s\n", f->p.address, err.text);
        return false;
    }
    return true;
}

json_t *riftd_fix_control(rift_client *c, const char *cmd, const char *payload,
                          char **text) {
    char subject[256];
    snprintf(subject, sizeof(subject), "rift.control.%s", cmd);
    rift_msg *reply = NULL;
    rift_error err = {0};
    if (text != NULL) {
        *text = NULL;
    }
    if (rift_client_request(c, subject, strlen(subject),
                            (const uint8_t *)payload, strlen(payload),
                            30000 * RIFT_MSEC, &reply, &err) != 0) {
        fprintf(stderr, "  request %s: %s\n", subject, err.text);
        return NULL;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(reply, &len);
    json_t *v = json_loadb((const char *)p, len, 0, NULL);
    if (text != NULL) {
        *text = strndup((const char *)p, len);
    }
    rift_msg_unref(reply);
    return v;
}

char *riftd_fix_next(rift_client_sub *sub) {
    rift_msg *m = NULL;
    rift_error err = {0};
    if (rift_client_sub_recv(sub, 10 * SECOND, &m, &err) != 0) {
        fprintf(stderr, "  recv: %s\n", err.text);
        return NULL;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    char *s = strndup((const char *)p, len);
    rift_msg_unref(m);
    return s;
}

bool riftd_fix_plugin(const riftd_fix *f, const char *name,
                      const char *init_lua) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/plugins", f->dir);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/plugins/%s", f->dir, name);
    (void)mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/plugins/%s/init.lua", f->dir, name);
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        return false;
    }
    fputs(init_lua, out);
    return fclose(out) == 0;
}
