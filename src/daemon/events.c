/*
 * events.c — riftd's rift.events.* publications (daemon layer). See
 * events.h.
 */
#include "daemon/events.h"

#include "common/common.h"

#include <stdlib.h>
#include <string.h>

char *rift_json_dump(const json_t *v, size_t *len) {
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    if (s != NULL && len != NULL) {
        *len = strlen(s);
    }
    return s;
}

int rift_events_publish(rift_broker *broker, const char *subject,
                        const json_t *payload, rift_error *err) {
    size_t len = 0;
    char *s = rift_json_dump(payload, &len);
    if (s == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    int rc = rift_broker_publish(broker, subject, strlen(subject), NULL, 0,
                                 (const uint8_t *)s, len, NULL, err);
    free(s);
    return rc;
}

/* Publishes a one-off object built by the caller and logs a failure. */
static int publish_owned(rift_broker *broker, const char *subject,
                         json_t *obj) {
    rift_error err = {0};
    if (obj == NULL) {
        return RIFT_ERR_NOMEM;
    }
    int rc = rift_events_publish(broker, subject, obj, &err);
    json_decref(obj);
    if (rc != 0) {
        rift_log(RIFT_LOG_WARN, "rift: cannot publish %s: %s", subject,
                 err.text);
    }
    return rc;
}

int rift_events_lifecycle(rift_broker *broker, const char *state) {
    return publish_owned(broker, RIFT_EVENTS_LIFECYCLE,
                         json_pack("{s:s}", "state", state));
}

int rift_events_reload(rift_broker *broker, const char *revision) {
    return publish_owned(broker, RIFT_EVENTS_RELOAD,
                         json_pack("{s:s}", "revision", revision));
}

int rift_events_control(rift_broker *broker, const char *command, bool ok) {
    return publish_owned(
        broker, RIFT_EVENTS_CONTROL,
        json_pack("{s:s,s:b}", "command", command, "ok", (int)ok));
}

int rift_events_max_deliver(rift_broker *broker, const char *stream,
                            const char *consumer, size_t consumer_len,
                            uint64_t sequence, uint32_t deliveries) {
    return publish_owned(broker, RIFT_EVENTS_CONSUMER,
                         json_pack("{s:s,s:s%,s:I,s:I,s:s}", "advisory",
                                   "max_deliver", "consumer", consumer,
                                   consumer_len, "deliveries",
                                   (json_int_t)deliveries, "sequence",
                                   (json_int_t)sequence, "stream", stream));
}
