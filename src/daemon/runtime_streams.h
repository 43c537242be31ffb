/*
 * runtime_streams.h — streams made at run time (daemon layer): the
 * STREAM_CREATE/UPDATE/PURGE/DELETE requests of identities with a
 * `streams` grant, their definitions kept in <data_dir>/streams.json
 * (0600, replaced atomically) and their data in <data_dir>/streams/<name>,
 * restored at start before any listener opens. docs/riftd.md "Streams at
 * run time".
 *
 * Thread-safe: the QUIC server thread administers and acquires, the
 * control bridge and the monitor acquire and list. A stream in use is
 * pinned (acquire/release); deleting a pinned stream unlinks it at once
 * and closes it at the last release.
 */
#ifndef RIFT_DAEMON_RUNTIME_STREAMS_H
#define RIFT_DAEMON_RUNTIME_STREAMS_H

#include "config/config.h"
#include "rift/broker.h"
#include "rift/server.h"
#include "rift/stream.h"

#include <jansson.h>

typedef struct rift_runtime_streams rift_runtime_streams;

/*
 * rift_runtime_streams_open reads <data_dir>/streams.json (absent: none)
 * and opens every stream in it, except those whose name |cfg| configures:
 * the configuration wins, which is logged, and the definition is kept.
 * Without a data_dir there are none and creating one is refused. A file
 * that does not parse is "data_dir: streams.json is corrupt: ..." and
 * nothing is opened or removed. Copies what it needs of |cfg|. Records
 * its streams drop after max_deliver are advised on rift.events.consumer
 * of |broker| (rift_daemon_advise_max_deliver; NULL: not advised), which
 * must outlive the streams.
 */
int rift_runtime_streams_open(rift_runtime_streams **prt,
                              const rift_config *cfg, rift_broker *broker,
                              rift_error *err);

/* Closes every stream (consumer-state snapshot first). NULL is a no-op. */
void rift_runtime_streams_close(rift_runtime_streams *rt);

/* The stream |name| pinned until rift_runtime_streams_release(|*token|),
 * or NULL. */
rift_stream *rift_runtime_streams_acquire(rift_runtime_streams *rt,
                                          const char *name, size_t len,
                                          void **token);
void rift_runtime_streams_release(rift_runtime_streams *rt, void *token);

/* Carries out |req| (rift_server_stream_admin's call); texts reach the
 * client and name no path. */
int rift_runtime_streams_admin(rift_runtime_streams *rt,
                               const rift_server_stream_request *req,
                               rift_error *err);

/* Appends every run-time stream's rift_daemon_stream_json entry (plus
 * "runtime": true) to |list|, sorted by name. */
void rift_runtime_streams_append(rift_runtime_streams *rt, json_t *list);

#endif /* RIFT_DAEMON_RUNTIME_STREAMS_H */
