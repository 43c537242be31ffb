/*
 * devfix.c — riftd's development default for CLI tests (tests layer).
 * See devfix.h.
 */
#include "devfix.h"

#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

bool devfix_start(devfix *f) {
    memset(f, 0, sizeof(*f));
    f->dir = rift_test_tmpdir();
    if (f->dir == NULL) {
        return false;
    }
    snprintf(f->listen, sizeof(f->listen), "RIFT_DEV_LISTEN=127.0.0.1:0");
    f->env[0] = f->listen;
    f->env[1] = NULL;
    if (!rift_proc_start(&f->p, rift_proc_riftd(), f->dir, "riftd", NULL,
                         f->env, NULL, 0) ||
        !rift_proc_riftd_ready(&f->p)) {
        return false;
    }
    snprintf(f->listen, sizeof(f->listen), "RIFT_DEV_LISTEN=%s", f->p.address);
    return true;
}

int devfix_stop(devfix *f) {
    int rc = rift_proc_stop(&f->p, SIGTERM);
    rift_test_rmdir(f->dir);
    return rc;
}

int devfix_cli(devfix *f, char **out, char **err, const char *const *args) {
    return rift_proc_run(rift_proc_cli(), f->dir, args, f->env, out, err);
}
