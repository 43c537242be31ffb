/*
 * control_request.h — riftd's control commands from the rift CLI (tools layer):
 * a REQUEST to rift.control.<command> with a JSON object, the
 * {"ok","data"|"error"} envelope unwrapped, and small JSON accessors for
 * printing the answers. See docs/riftd.md for the commands.
 */
#ifndef RIFT_TOOLS_CONTROL_REQUEST_H
#define RIFT_TOOLS_CONTROL_REQUEST_H

#include "rift/client.h"

#include <jansson.h>
#include <stdio.h>

/* How long the CLI waits for a control answer (riftd allows a command
 * 40 s). */
#define RIFT_CLI_CONTROL_TIMEOUT_MS 45000

/*
 * rift_cli_control sends |args| (stolen; NULL = {}) to rift.control.|command|
 * and stores the answer's "data" in *data (a new reference). On failure it
 * prints "rift CMD: <error>" and returns 1.
 */
int rift_cli_control(rift_client *c, const char *cmd, const char *command,
                     json_t *args, json_t **data);

/*
 * rift_cli_control_quiet is rift_cli_control without the message: on
 * failure it copies the answer's error text (or the client's) into |why|
 * and returns 1, so the caller can add what it knows.
 */
int rift_cli_control_quiet(rift_client *c, const char *cmd, const char *command,
                           json_t *args, json_t **data, char *why,
                           size_t why_size);

/* rift_cli_control_error prints "rift CMD: |why|", with riftd's hints
 * that name its control commands put in the CLI's words. */
void rift_cli_control_error(const char *cmd, const char *why);

/* Field accessors that tolerate missing keys (0, "" or false). */
long long rift_cli_json_int(const json_t *o, const char *key);
const char *rift_cli_json_str(const json_t *o, const char *key);
bool rift_cli_json_bool(const json_t *o, const char *key);

/* Prints |v| as indented JSON with sorted keys and a newline. */
void rift_cli_json_print(FILE *out, const json_t *v);

#endif /* RIFT_TOOLS_CONTROL_REQUEST_H */
