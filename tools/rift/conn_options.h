/*
 * conn_options.h — connection options shared by the rift CLI's client commands
 * (tools layer): the flags --server, --ca, --server-name, --token and
 * --token-env, their environment variables, and the discovery of riftd's
 * development default (./rift-data or $RIFT_HOME).
 *
 * Each setting comes from, in order: its flag; its environment variable
 * (RIFT_SERVER, RIFT_CA, RIFT_SERVER_NAME, RIFT_TOKEN); riftd's
 * development default when the data directory exists: 127.0.0.1:7443 (or
 * $RIFT_DEV_LISTEN, riftd's own override), DIR/tls/ca.pem, "localhost" and
 * the token in DIR/dev.token, where DIR is $RIFT_HOME or ./rift-data.
 */
#ifndef RIFT_TOOLS_CONN_OPTIONS_H
#define RIFT_TOOLS_CONN_OPTIONS_H

#include "rift/client.h"

#include <stdio.h>

/* Longest token read from a file (the protocol's string limit + 1). */
#define RIFT_CLI_TOKEN_MAX 4097

typedef struct rift_cli_conn {
    const char *server;
    const char *ca;
    const char *server_name;
    const char *token;
    const char *token_env;
    /* Storage for values derived from the data directory. */
    char ca_buf[4200];
    char token_buf[RIFT_CLI_TOKEN_MAX + 2];
    char dir[4096];
} rift_cli_conn;

/* rift_cli_conn_init clears |cc|. */
void rift_cli_conn_init(rift_cli_conn *cc);

/*
 * rift_cli_conn_flag consumes argv[*i] when it is a connection flag (with
 * its value in argv[*i + 1], or as --flag=value) and advances *i past it.
 * Returns 1 when consumed, 0 when argv[*i] is not a connection flag, -1
 * (after printing why) when the value is missing.
 */
int rift_cli_conn_flag(rift_cli_conn *cc, const char *cmd, int argc,
                       char **argv, int *i);

/* rift_cli_conn_usage prints the connection flags for a command's help. */
void rift_cli_conn_usage(FILE *out);

/*
 * rift_cli_conn_settings fills in what the flags left open and writes the
 * client settings (defaults plus address, CA, server name and token; the
 * strings point into |cc| or the environment, so |cc| must outlive |s|).
 * Returns 0, or prints "rift CMD: <why>" and returns the exit code (1).
 * Commands that open several connections resolve once with this.
 */
int rift_cli_conn_settings(rift_cli_conn *cc, const char *cmd,
                           rift_client_settings *s);

/*
 * rift_cli_connect fills in what the flags left open, connects and
 * returns 0, or prints "rift CMD: <why>" to stderr and returns the exit
 * code (1).
 */
int rift_cli_connect(rift_cli_conn *cc, const char *cmd, rift_client **pc);

#endif /* RIFT_TOOLS_CONN_OPTIONS_H */
