/*
 * args.c — the rift CLI's command-line parser (tools layer). See args.h.
 */
#include "args.h"

#include <string.h>

/* Option |name| at argv[*i] ("--name VALUE" or "--name=VALUE"): stores
 * the value in *value and advances *i. Returns 1 when consumed, 0 when
 * argv[*i] is another argument, -1 (after printing why) when the value is
 * missing. */
static int opt_value(const char *cmd, const char *name, int argc, char **argv,
                     int *i, const char **value) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '=')) {
        return 0;
    }
    if (a[n] == '=') {
        *value = a + n + 1;
        (*i)++;
        return 1;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "rift %s: %s needs a value\n", cmd, name);
        return -1;
    }
    *value = argv[*i + 1];
    *i += 2;
    return 1;
}


/* A value option of the table at argv[*i]: 1 consumed, 0 none, else
 * -1 - the exit code (a missing value, or what |take| returned). */
static int value_option(rift_cli_args *a, int argc, char **argv, int *i) {
    for (const rift_cli_opt *o = a->opts; o != NULL && o->name != NULL; o++) {
        if (o->flag != NULL) {
            continue;
        }
        const char *v = NULL;
        int r = opt_value(a->cmd, o->name, argc, argv, i, &v);
        if (r < 0) {
            return -1 - 2;
        }
        if (r == 0) {
            continue;
        }
        if (o->value != NULL) {
            *o->value = v;
            return 1;
        }
        int rc = o->take(a->ud, v);
        return rc < 0 ? 1 : -1 - rc;
    }
    return 0;
}

static bool flag_option(const rift_cli_args *a, const char *s) {
    for (const rift_cli_opt *o = a->opts; o != NULL && o->name != NULL; o++) {
        if (o->flag != NULL && strcmp(s, o->name) == 0) {
            *o->flag = true;
            return true;
        }
    }
    return false;
}

static int unexpected(const rift_cli_args *a, const char *s) {
    fprintf(stderr, "rift %s: unexpected argument '%s'\n", a->cmd, s);
    a->usage(stderr);
    return 2;
}

int rift_cli_parse(rift_cli_args *a, int argc, char **argv) {
    a->npos = 0;
    for (int i = a->first; i < argc;) {
        int r = 0;
        if (a->conn != NULL) {
            r = rift_cli_conn_flag(a->conn, a->cmd, argc, argv, &i);
            if (r < 0) {
                return 2;
            }
        }
        if (r == 0) {
            r = value_option(a, argc, argv, &i);
            if (r < 0) {
                return -1 - r;
            }
        }
        if (r > 0) {
            continue;
        }
        const char *s = argv[i++];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->usage(stdout);
            return 0;
        }
        if (flag_option(a, s)) {
            continue;
        }
        bool dash = s[0] == '-' && !(a->dash_is_arg && s[1] == '\0');
        if (dash || (a->take_pos == NULL && a->npos == a->max_pos)) {
            return unexpected(a, s);
        }
        if (a->take_pos != NULL) {
            int rc = a->take_pos(a->ud, s);
            if (rc >= 0) {
                return rc;
            }
            continue;
        }
        a->pos[a->npos++] = s;
    }
    return -1;
}
