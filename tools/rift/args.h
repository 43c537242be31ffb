/*
 * args.h — the one command-line parser of the rift CLI's subcommands
 * (tools layer). A subcommand describes its options in a table and hands
 * its argv over; every subcommand thus accepts the same forms
 * ("--name VALUE", "--name=VALUE", connection flags anywhere, -h/--help)
 * and refuses with the same texts ("rift CMD: unexpected argument 'X'",
 * "rift CMD: --name needs a value").
 *
 * Each argument is tried, in order, as a connection flag (conn_options.h),
 * a value option of the table, --help or -h (the usage on stdout), a flag
 * of the table, and finally a positional argument.
 */
#ifndef RIFT_TOOLS_ARGS_H
#define RIFT_TOOLS_ARGS_H

#include "conn_options.h"

#include <stdbool.h>
#include <stdio.h>

/*
 * One option. Exactly one of the three targets is set: |value| for
 * "--name VALUE" (the last one given wins), |take| for a value the
 * command checks as it comes (returns -1 to go on, or an exit code after
 * printing why), |flag| for "--name" without a value. A table ends with {NULL}.
 */
typedef struct rift_cli_opt {
    const char *name;
    const char **value;
    int (*take)(void *ud, const char *value);
    bool *flag;
} rift_cli_opt;

typedef struct rift_cli_args {
    const char *cmd;          /* "pub", "stream": names the command in texts */
    void (*usage)(FILE *out); /* the command's help */
    rift_cli_conn *conn;      /* NULL: the command connects nowhere */
    const rift_cli_opt *opts; /* NULL or a table ending with {NULL} */
    void *ud;                 /* handed to each |take| */
    int first;                /* argv index to start at: 1, or 2 after a
                                 subcommand word */
    /* Positional arguments are stored in |pos| (at most |max_pos|; more
     * are unexpected). "-" is one when |dash_is_arg| (stdin as DATA),
     * any other word starting with '-' never. */
    const char **pos;
    int max_pos;
    bool dash_is_arg;
    /* Instead of |pos|: each positional argument handed to |take_pos| as
     * it comes (returns -1 to go on, or an exit code). */
    int (*take_pos)(void *ud, const char *arg);
    int npos; /* out: how many were stored */
} rift_cli_args;

/*
 * rift_cli_parse parses argv[a->first..argc-1] as described above.
 * Returns -1 when the command should go on; otherwise the exit code: 0
 * after printing the usage for --help, 2 after printing a usage error
 * (or what a |take| returned).
 */
int rift_cli_parse(rift_cli_args *a, int argc, char **argv);

#endif /* RIFT_TOOLS_ARGS_H */
