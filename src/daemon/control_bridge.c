/*
 * control_bridge.c — the rift.control.* bridge of riftd (daemon layer). See
 * control_bridge.h for the rules; this file is the thread, the checks in their
 * reference order and the reply/event publication.
 */
#include "daemon/control_bridge.h"

#include "common/common.h"
#include "daemon/events.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define CONTROL_PATTERN "rift.control.>"
#define INBOX_PREFIX    "_INBOX."

struct rift_control {
    rift_broker *broker;
    rift_sub *sub;
    rift_control_settings settings;
    int stop_fd;
    pthread_t thread;
};

/* ---- One request ---- */

static const rift_control_command *find_command(const rift_control *c,
                                                const char *name, size_t len) {
    for (size_t i = 0; i < c->settings.n_commands; i++) {
        const rift_control_command *cmd = &c->settings.commands[i];
        if (strlen(cmd->name) == len && memcmp(cmd->name, name, len) == 0) {
            return cmd;
        }
    }
    return NULL;
}

static bool field_allowed(const rift_control_command *cmd, const char *key) {
    for (size_t i = 0; cmd->fields != NULL && cmd->fields[i] != NULL; i++) {
        if (strcmp(cmd->fields[i], key) == 0) {
            return true;
        }
    }
    return false;
}

/* Runs the checks and the command; returns the response object. */
static json_t *answer(rift_control *c, const rift_control_command *cmd,
                      const uint8_t *payload, size_t len, const char *reply,
                      size_t rlen, bool *ok) {
    rift_error err = {0};
    json_t *args = NULL, *data = NULL, *resp = NULL;
    *ok = false;
    if (len > RIFT_CONTROL_MAX_PAYLOAD) {
        rift_error_set(&err, RIFT_ERR_INVALID_ARGUMENT,
                       "control payload exceeds 8 KiB");
        goto fail;
    }
    json_error_t jerr;
    args =
        json_loadb((const char *)payload, len, JSON_REJECT_DUPLICATES, &jerr);
    if (args == NULL || !json_is_object(args)) {
        rift_error_set(&err, RIFT_ERR_INVALID_ARGUMENT,
                       "expected a JSON object");
        goto fail;
    }
    if (cmd == NULL) {
        rift_error_set(&err, RIFT_ERR_INVALID_ARGUMENT,
                       "unknown control subject");
        goto fail;
    }
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value) {
        (void)value;
        if (!field_allowed(cmd, key)) {
            rift_error_set(&err, RIFT_ERR_INVALID_ARGUMENT,
                           "unknown control payload field");
            goto fail;
        }
    }
    uint64_t ms = c->settings.timeout_ms ? c->settings.timeout_ms
                                         : RIFT_CONTROL_TIMEOUT_MS;
    rift_tstamp deadline = rift_now_ns() + ms * 1000000ull;
    rift_control_call call = {args, deadline, reply, rlen};
    int rc = cmd->fn(c->settings.user_data, &call, &data, &err);
    if (rc == RIFT_ERR_TIMEOUT || (rc == 0 && rift_now_ns() > deadline)) {
        /* Past the limit the requester has given up waiting in the
         * original; report the timeout even if the work completed. */
        json_decref(data);
        data = NULL;
        rift_error_set(&err, RIFT_ERR_TIMEOUT,
                       "control request timed out; inspect status before "
                       "retrying");
        goto fail;
    }
    if (rc != 0) {
        goto fail;
    }
    resp = json_pack("{s:b,s:o}", "ok", 1, "data",
                     data != NULL ? data : json_null());
    json_decref(args);
    *ok = resp != NULL;
    return resp;
fail:
    json_decref(args);
    return json_pack("{s:b,s:s}", "ok", 0, "error", err.text);
}

static void handle(rift_control *c, rift_msg *msg) {
    size_t slen, rlen, plen;
    const char *subject = rift_msg_subject(msg, &slen);
    const char *reply = rift_msg_reply(msg, &rlen);
    const uint8_t *payload = rift_msg_payload(msg, &plen);
    size_t prefix = sizeof(RIFT_CONTROL_PREFIX) - 1;
    if (slen <= prefix) {
        return;
    }
    const char *name = subject + prefix;
    size_t nlen = slen - prefix;
    const rift_control_command *cmd = find_command(c, name, nlen);
    /* rift.control.* is one token: deeper subjects are not ours unless a
     * command is named that way. */
    if (cmd == NULL && memchr(name, '.', nlen) != NULL) {
        return;
    }
    if (reply == NULL || rlen < sizeof(INBOX_PREFIX) - 1 ||
        memcmp(reply, INBOX_PREFIX, sizeof(INBOX_PREFIX) - 1) != 0) {
        return;
    }
    bool ok;
    json_t *resp = answer(c, cmd, payload, plen, reply, rlen, &ok);
    if (resp == NULL) {
        rift_log(RIFT_LOG_ERROR, "rift: control %.*s: out of memory", (int)nlen,
                 name);
        return;
    }
    rift_error err = {0};
    size_t len;
    char *text = rift_json_dump(resp, &len);
    json_decref(resp);
    if (text == NULL ||
        rift_broker_publish(c->broker, reply, rlen, NULL, 0,
                            (const uint8_t *)text, len, NULL, &err) != 0) {
        rift_log(RIFT_LOG_DEBUG, "rift: control reply to %.*s not sent: %s",
                 (int)rlen, reply, text ? err.text : "out of memory");
    }
    free(text);
    if (cmd == NULL || !cmd->silent) {
        char event_name[RIFT_ERROR_TEXT_MAX];
        snprintf(event_name, sizeof(event_name), "%.*s", (int)nlen, name);
        rift_events_control(c->broker, event_name, ok);
    }
}

/* ---- Thread ---- */

static int subscribe(rift_control *c, rift_error *err) {
    return rift_broker_subscribe(c->broker, CONTROL_PATTERN,
                                 sizeof(CONTROL_PATTERN) - 1, NULL, &c->sub,
                                 err);
}

static void *bridge_main(void *arg) {
    rift_control *c = arg;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = rift_sub_fd(c->sub), .events = POLLIN},
                                {.fd = c->stop_fd, .events = POLLIN}};
        if (pfd[0].fd < 0) {
            rift_log(RIFT_LOG_ERROR, "rift: control bridge: %s",
                     rift_strerror(pfd[0].fd));
            return NULL;
        }
        int n = poll(pfd, 2, -1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || (pfd[1].revents & POLLIN) != 0) {
            return NULL;
        }
        for (;;) {
            rift_msg *msg = NULL;
            rift_error err = {0};
            int rc = rift_sub_recv(c->sub, 0, &msg, &err);
            if (rc == RIFT_ERR_AGAIN) {
                break;
            }
            if (rc == RIFT_ERR_SLOW_CONSUMER) {
                /* A flood of requests overflowed the queue: the dropped
                 * requests are lost (their requesters time out), the
                 * bridge carries on with a fresh subscription. */
                rift_log(RIFT_LOG_WARN,
                         "rift: control bridge exceeded its queue; dropped "
                         "pending requests and resubscribing");
                rift_sub_close(c->sub);
                c->sub = NULL;
                if (subscribe(c, &err) != 0) {
                    rift_log(RIFT_LOG_ERROR,
                             "rift: control bridge cannot resubscribe: %s",
                             err.text);
                    return NULL;
                }
                break;
            }
            if (rc != 0) {
                return NULL; /* closed: the broker is going away */
            }
            handle(c, msg);
            rift_msg_unref(msg);
        }
    }
}

/* ---- Lifecycle ---- */

int rift_control_start(rift_control **pc, rift_broker *broker,
                       const rift_control_settings *settings, rift_error *err) {
    rift_control *c = rift_calloc(NULL, 1, sizeof(*c));
    if (c == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    c->broker = broker;
    c->settings = *settings;
    c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int rc;
    if (c->stop_fd < 0) {
        rc = rift_error_set(err, -errno, "control bridge: %s", strerror(errno));
        goto fail_fd;
    }
    if ((rc = subscribe(c, err)) != 0) {
        goto fail_sub;
    }
    int e = pthread_create(&c->thread, NULL, bridge_main, c);
    if (e != 0) {
        rc = rift_error_set(err, -e, "control bridge: %s", strerror(e));
        goto fail_thread;
    }
    *pc = c;
    return 0;
fail_thread:
    rift_sub_close(c->sub);
fail_sub:
    close(c->stop_fd);
fail_fd:
    rift_free(NULL, c);
    return rc;
}

void rift_control_stop(rift_control *c) {
    if (c == NULL) {
        return;
    }
    uint64_t one = 1;
    ssize_t w = write(c->stop_fd, &one, sizeof(one));
    (void)w;
    pthread_join(c->thread, NULL);
    rift_sub_close(c->sub);
    close(c->stop_fd);
    rift_free(NULL, c);
}
