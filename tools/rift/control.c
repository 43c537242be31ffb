/*
 * control.c — control requests of the rift CLI (tools layer). See
 * control.h.
 */
#include "control.h"

#include <stdlib.h>
#include <string.h>

int rift_cli_control_quiet(rift_client *c, const char *cmd, const char *command,
                           json_t *args, json_t **data, char *why,
                           size_t why_size) {
    *data = NULL;
    why[0] = '\0';
    char subject[128];
    snprintf(subject, sizeof(subject), "rift.control.%s", command);
    if (args == NULL) {
        args = json_object();
    }
    char *payload =
        args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(args);
    if (payload == NULL) {
        snprintf(why, why_size, "out of memory");
        return 1;
    }
    (void)cmd;
    rift_msg *reply = NULL;
    rift_error err = {0};
    int rc = rift_client_request(
        c, subject, strlen(subject), (const uint8_t *)payload, strlen(payload),
        RIFT_CLI_CONTROL_TIMEOUT_MS * RIFT_MSEC, &reply, &err);
    free(payload);
    if (rc != 0) {
        snprintf(why, why_size, "%s", err.text);
        return 1;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(reply, &len);
    json_t *v = json_loadb((const char *)p, len, 0, NULL);
    rift_msg_unref(reply);
    if (!json_is_object(v)) {
        snprintf(why, why_size, "the answer is not a JSON object");
        json_decref(v);
        return 1;
    }
    if (!json_is_true(json_object_get(v, "ok"))) {
        const char *text = json_string_value(json_object_get(v, "error"));
        snprintf(why, why_size, "%s", text ? text : "request failed");
        json_decref(v);
        return 1;
    }
    *data = json_incref(json_object_get(v, "data"));
    json_decref(v);
    if (*data == NULL) {
        *data = json_null();
    }
    return 0;
}

void rift_cli_control_error(const char *cmd, const char *why) {
    /* riftd's text points at its control command; a CLI user types
     * `rift stream info`. */
    static const char streams_hint[] = "; use streams to list streams";
    size_t n = strlen(why), h = sizeof(streams_hint) - 1;
    if (n >= h && strcmp(why + n - h, streams_hint) == 0) {
        fprintf(stderr, "rift %s: %.*s; rift stream info lists the streams\n",
                cmd, (int)(n - h), why);
        return;
    }
    fprintf(stderr, "rift %s: %s\n", cmd, why);
}

int rift_cli_control(rift_client *c, const char *cmd, const char *command,
                     json_t *args, json_t **data) {
    char why[RIFT_ERROR_TEXT_MAX + 1];
    if (rift_cli_control_quiet(c, cmd, command, args, data, why, sizeof(why)) !=
        0) {
        rift_cli_control_error(cmd, why);
        return 1;
    }
    return 0;
}

long long rift_cli_json_int(const json_t *o, const char *key) {
    return (long long)json_integer_value(json_object_get(o, key));
}

const char *rift_cli_json_str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

bool rift_cli_json_bool(const json_t *o, const char *key) {
    return json_is_true(json_object_get(o, key));
}

void rift_cli_json_print(FILE *out, const json_t *v) {
    json_dumpf(v, out, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', out);
}
