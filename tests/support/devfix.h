/*
 * devfix.h — riftd on its built-in development configuration in a fresh
 * temporary directory, and the rift CLI run there (tests layer): the
 * situation of a newcomer. riftd binds a free port (RIFT_DEV_LISTEN
 * 127.0.0.1:0) and the CLI gets the bound address through the same
 * variable; everything else it finds in ./rift-data.
 */
#ifndef RIFT_TESTS_DEVFIX_H
#define RIFT_TESTS_DEVFIX_H

#include "procs.h"

typedef struct devfix {
    char *dir;
    char listen[96]; /* "RIFT_DEV_LISTEN=<address riftd bound>" */
    const char *env[2];
    rift_proc p;
} devfix;

/* Starts riftd in a new temporary directory and waits until it is ready. */
bool devfix_start(devfix *f);

/* SIGTERM, removes the directory; returns riftd's exit status. */
int devfix_stop(devfix *f);

/* Runs the CLI in the fixture's directory; returns its exit status. */
int devfix_cli(devfix *f, char **out, char **err, const char *const *args);

#define DEVFIX_CLI(f, out, err, ...)                                           \
 devfix_cli((f), (out), (err), (const char *const[]){__VA_ARGS__, NULL})

#endif /* RIFT_TESTS_DEVFIX_H */
