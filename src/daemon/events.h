/*
 * events.h — the events riftd publishes on its own broker (daemon layer),
 * docs/protocol-v1.md §7.2: rift.events.lifecycle, rift.events.reload,
 * rift.events.control and rift.events.consumer, JSON payloads with sorted
 * keys, at most once.
 */
#ifndef RIFT_DAEMON_EVENTS_H
#define RIFT_DAEMON_EVENTS_H

#include "rift/broker.h"

#include <jansson.h>
#include <stdbool.h>

#define RIFT_EVENTS_LIFECYCLE "rift.events.lifecycle"
#define RIFT_EVENTS_RELOAD    "rift.events.reload"
#define RIFT_EVENTS_CONTROL   "rift.events.control"
#define RIFT_EVENTS_CONSUMER  "rift.events.consumer"
/* {"node","server","state":"up"|"down"}: the cluster backbone. */
#define RIFT_EVENTS_CLUSTER "rift.events.cluster"

/*
 * rift_json_dump serializes |v| compactly with sorted keys (serde_json's
 * order, §7.2) into a new buffer freed with free(); NULL on failure.
 */
char *rift_json_dump(const json_t *v, size_t *len);

/*
 * rift_events_publish publishes |payload| (borrowed) as JSON on |subject|.
 * Errors are those of rift_broker_publish (or RIFT_ERR_NOMEM); events are
 * best effort, so callers usually only log them.
 */
int rift_events_publish(rift_broker *broker, const char *subject,
                        const json_t *payload, rift_error *err);

/* {"state":"ready"} or {"state":"draining"} on rift.events.lifecycle. */
int rift_events_lifecycle(rift_broker *broker, const char *state);

/* {"revision":"<16 hex>"|"runtime"} on rift.events.reload. */
int rift_events_reload(rift_broker *broker, const char *revision);

/* {"command":"<name>","ok":bool} on rift.events.control. */
int rift_events_control(rift_broker *broker, const char *command, bool ok);

/* {"advisory":"max_deliver","consumer":"<name>","deliveries":N,
 * "sequence":N,"stream":"<name>"} on rift.events.consumer: a record
 * dropped after max_deliver deliveries. */
int rift_events_max_deliver(rift_broker *broker, const char *stream,
                            const char *consumer, size_t consumer_len,
                            uint64_t sequence, uint32_t deliveries);

#endif /* RIFT_DAEMON_EVENTS_H */
