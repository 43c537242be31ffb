/*
 * control_bridge.h — the control bridge of riftd (daemon layer): request/reply
 * administration on rift.control.<command>, docs/protocol-v1.md §7.3.
 *
 * The bridge owns one broker subscription and one thread. It handles
 * requests serially; a request is answered only when its reply subject
 * starts with "_INBOX." (anything else is ignored silently, so nobody can
 * make riftd publish to an arbitrary subject). Checks, in order: payload at
 * most 8 KiB ("control payload exceeds 8 KiB"), a JSON object ("expected a
 * JSON object"), a known command ("unknown control subject"), no field
 * beyond the command's ("unknown control payload field"). The answer is
 * {"ok":true,"data":...} or {"ok":false,"error":"..."}; after every answered
 * request except status, {"command":<name>,"ok":bool} goes to
 * rift.events.control.
 *
 * Like the original, commands are single tokens after "rift.control."
 * (deeper subjects are ignored), except the two-token names listed in the
 * command table (riftd's "stream.info"): the subscription is
 * "rift.control.>" filtered by that rule, still one subscription slot.
 */
#ifndef RIFT_DAEMON_CONTROL_BRIDGE_H
#define RIFT_DAEMON_CONTROL_BRIDGE_H

#include "rift/broker.h"

#include <jansson.h>
#include <stdbool.h>

#define RIFT_CONTROL_PREFIX      "rift.control."
#define RIFT_CONTROL_MAX_PAYLOAD 8192
#define RIFT_CONTROL_TIMEOUT_MS  40000

/* One request as a command sees it. */
typedef struct rift_control_call {
    json_t *args;            /* the payload object; only allowed fields */
    rift_tstamp deadline_ns; /* absolute rift_now_ns() limit */
    const char *reply;       /* the requester's "_INBOX." subject */
    size_t reply_len;
} rift_control_call;

/*
 * A command. On success it stores a new reference in *data and returns 0;
 * on failure it returns a negative code with the requester-visible text in
 * |err|. RIFT_ERR_TIMEOUT becomes "control request timed out; inspect
 * status before retrying".
 */
typedef int (*rift_control_fn)(void *user_data, const rift_control_call *call,
                               json_t **data, rift_error *err);

typedef struct rift_control_command {
    const char *name;          /* subject suffix, e.g. "status" */
    const char *const *fields; /* allowed payload fields, NULL-ended */
    bool silent;               /* no rift.events.control (status) */
    rift_control_fn fn;
} rift_control_command;

typedef struct rift_control_settings {
    const rift_control_command *commands; /* borrowed; must outlive */
    size_t n_commands;
    void *user_data;
    /* Per-command limit in milliseconds; 0 = 40,000. */
    uint64_t timeout_ms;
} rift_control_settings;

typedef struct rift_control rift_control;

/*
 * rift_control_start subscribes to the control subjects and starts the
 * bridge thread. Errors: those of rift_broker_subscribe (for instance
 * RIFT_ERR_SUBSCRIPTION_LIMIT), RIFT_ERR_NOMEM, -errno.
 */
int rift_control_start(rift_control **pc, rift_broker *broker,
                       const rift_control_settings *settings, rift_error *err);

/* rift_control_stop stops the thread (after the request in progress),
 * closes the subscription and frees the bridge. NULL is a no-op. */
void rift_control_stop(rift_control *c);

#endif /* RIFT_DAEMON_CONTROL_BRIDGE_H */
