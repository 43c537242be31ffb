/*
 * cmd.h — the rift CLI's command table (tools layer). Each subcommand lives
 * in its own tools/rift/cmd_<name>.c and is listed in commands.c.
 */
#ifndef RIFT_TOOLS_CMD_H
#define RIFT_TOOLS_CMD_H

/* A command gets argv with argv[0] = its own name; returns the exit code. */
typedef int (*rift_cmd_fn)(int argc, char **argv);

int rift_cmd_version(int argc, char **argv);
int rift_cmd_pub(int argc, char **argv);
int rift_cmd_sub(int argc, char **argv);
int rift_cmd_req(int argc, char **argv);
int rift_cmd_reply(int argc, char **argv);
int rift_cmd_bench(int argc, char **argv);
int rift_cmd_store(int argc, char **argv);
int rift_cmd_stan(int argc, char **argv);
int rift_cmd_status(int argc, char **argv);
int rift_cmd_stream(int argc, char **argv);
int rift_cmd_consumer(int argc, char **argv);
/* cmd_stan_import.c: `rift stan import`, called by rift_cmd_stan. */
int rift_cmd_stan_import(int argc, char **argv);
int rift_cmd_certs(int argc, char **argv);

#endif /* RIFT_TOOLS_CMD_H */
