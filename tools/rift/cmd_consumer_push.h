/*
 * cmd_consumer_push.h — `rift consumer push` (tools layer,
 * cmd_consumer_push.c), called by cmd_consumer.c once its arguments are
 * parsed and the client is connected.
 */
#ifndef RIFT_TOOLS_CMD_CONSUMER_PUSH_H
#define RIFT_TOOLS_CMD_CONSUMER_PUSH_H

#include "rift/client.h"

#include <stdbool.h>

/* Prints STREAM's consumer NAME's pushed deliveries and acks each;
 * |max_in_flight|, |count| and |ack_wait| are the options' texts (NULL:
 * 1024, no limit, the consumer's). Returns the exit code. */
int rift_cli_consumer_push(rift_client *c, const char *stream, const char *name,
                           const char *max_in_flight, const char *count,
                           const char *ack_wait, bool raw);

#endif /* RIFT_TOOLS_CMD_CONSUMER_PUSH_H */
