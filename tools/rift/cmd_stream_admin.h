/*
 * cmd_stream_admin.h — `rift stream add|edit|purge|rm` and the extension
 * path of `rift stream info` (tools layer, cmd_stream_admin.c).
 */
#ifndef RIFT_TOOLS_CMD_STREAM_ADMIN_H
#define RIFT_TOOLS_CMD_STREAM_ADMIN_H

#include "control_request.h"

/* argv[1] is add, edit, purge or rm; the exit code. */
int rift_cli_stream_admin(int argc, char **argv);

/* Prints stream |name| through STREAM_INFO_GET (|json|: as JSON); the
 * exit code, after printing why on failure. */
int rift_cli_stream_info_ext(rift_client *c, const char *name, bool json);

#endif /* RIFT_TOOLS_CMD_STREAM_ADMIN_H */
