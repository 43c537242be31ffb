/*
 * internal.h — the STAN service's shared state (stan layer, private to
 * src/stan): clients (clients.c), channels and publishing (channels.c),
 * subscriptions and delivery (subs.c), the thread and dispatch
 * (service.c). Everything below is touched by the service thread only,
 * under |lock| (which status readers take too), except what says
 * otherwise.
 */
#ifndef RIFT_STAN_INTERNAL_H
#define RIFT_STAN_INTERNAL_H

#include "rift/stream.h"
#include "stan/proto.h"
#include "stan/stan.h"
#include "store/push.h"

#include <pthread.h>
#include <stdatomic.h>

/* The original's error texts (nats-streaming-server server.go, stores). */
#define STAN_ERR_INVALID_SUBJECT  "stan: invalid subject"
#define STAN_ERR_INVALID_START    "stan: invalid start position"
#define STAN_ERR_INVALID_SEQUENCE "stan: invalid start sequence"
#define STAN_ERR_INVALID_TIME     "stan: invalid start time"
#define STAN_ERR_INVALID_SUB      "stan: invalid subscription"
#define STAN_ERR_DUP_CLIENT       "stan: clientID already registered"
#define STAN_ERR_MISSING_CLIENT   "stan: clientID missing"
#define STAN_ERR_INVALID_CLIENT_ID                                             \
 "stan: invalid clientID: only alphanumeric and `-` or `_` characters allowed"
#define STAN_ERR_ACK_WAIT     "stan: invalid ack wait time, should be >= 1s"
#define STAN_ERR_MAX_INFLIGHT "stan: invalid MaxInflight, should be >= 1"
#define STAN_ERR_CONN_REQ     "stan: invalid connection request"
#define STAN_ERR_PUB_REQ      "stan: invalid publish request"
#define STAN_ERR_SUB_REQ      "stan: invalid subscription request"
#define STAN_ERR_UNSUB_REQ    "stan: invalid unsubscribe request"
#define STAN_ERR_CLOSE_REQ    "stan: invalid close request"
#define STAN_ERR_DUP_DURABLE  "stan: duplicate durable registration"
#define STAN_ERR_DUR_NAME                                                      \
 "stan: durable name of a durable queue subscriber can't contain the "         \
 "character ':'"
#define STAN_ERR_UNKNOWN_CLIENT    "stan: unknown clientID"
#define STAN_ERR_TOO_MANY_CHANNELS "too many channels"
#define STAN_ERR_TOO_MANY_SUBS     "too many subscriptions per channel"
#define STAN_ERR_PING_UNKNOWN                                                  \
 "client has been replaced or is no longer registered"

typedef struct stan_channel stan_channel;
typedef struct stan_feed stan_feed;
typedef struct stan_sub stan_sub;

typedef struct stan_client {
    struct stan_client *next;
    char *id;
    char *hb_inbox;
    uint8_t *conn_id;
    size_t conn_id_len;
    int32_t protocol, ping_interval, ping_max_out; /* kept with the file */
    uint64_t serial;   /* names its heartbeat replies */
    uint32_t hb_fails; /* probes unanswered in a row */
    uint64_t hb_probe; /* the probe awaiting its answer, 0 for none */
    uint64_t hb_sent_ms, hb_next_ms;
    /* Restored from the session file and not heard from since: its
     * subscriptions deliver nothing yet (the client may still be
     * reconnecting: what went to its inboxes now would be lost until the
     * ack wait), and it is probed at once, then at gaps doubling from
     * 200 ms up to the heartbeat interval (clients.c). */
    bool held;
    uint64_t hold_probe_ms, hold_gap_ms;
} stan_client;

/* A connect whose client ID is registered, waiting for the old client to
 * answer the probe of its heartbeat inbox (or for the probe to time out). */
typedef struct stan_pending_connect {
    struct stan_pending_connect *next;
    char *client_id;
    uint64_t old_serial, probe, deadline_ms;
    uint8_t *request; /* the ConnectRequest's bytes */
    size_t request_len;
    char *reply;
} stan_pending_connect;

/* A feed is one consumer and its push engine: a plain subscription has
 * one member, a queue group several. */
struct stan_feed {
    stan_feed *next;
    stan_channel *ch;
    char *name; /* the consumer's name in the channel's stream */
    bool durable;
    rift_consumer *consumer;
    rift_push *push;
    size_t members;
};

struct stan_sub {
    stan_sub *next;
    stan_client *client;
    stan_feed *feed;
    uint64_t id;
    char *inbox;
    char *ack_inbox;
    char *durable; /* NULL for none */
    char *q_group; /* NULL for none */
    int32_t max_in_flight, ack_wait_s;
    uint64_t last_sent; /* highest sequence pushed to it (views.c) */
    bool attached;      /* a member of its feed's push (see stan_client.held) */
};

struct stan_channel {
    stan_channel *next;
    struct rift_stan *svc;
    char *name;
    rift_stream *stream;
    stan_feed *feeds;
    size_t subs;
    uint64_t last_activity_ms;
    /* Set by a publish completion on a writer thread. */
    atomic_bool dirty;
    /* Users outside the service (registry.c): taken under |reg_lock|,
     * dropped from any thread. A pinned channel is not removed. */
    atomic_uint pins;
};

struct rift_stan {
    rift_stan_settings s;
    char *cluster_id, *discover_prefix, *dir;
    rift_broker *broker;
    rift_stan_transport *tp; /* how requests come and replies go */
    int wake_fd;
    pthread_t thread;
    bool running;
    atomic_bool stop;
    pthread_mutex_t lock;
    /* Guards the links of |channels| against readers on other threads
     * (registry.c); the service thread takes it only to link or unlink a
     * channel, so a reader never waits for a pump or an fsync. */
    pthread_mutex_t reg_lock;

    /* Subjects, NUL-terminated. */
    char *discover, *pub_prefix, *sub_subj, *unsub_subj, *subclose_subj,
        *close_subj, *ping_subj, *ack_prefix, *hb_prefix;

    stan_client *clients;
    stan_pending_connect *pending;
    stan_channel *channels;
    stan_sub *sub_list;
    size_t nclients, nchannels, nsubs, npending;
    uint64_t next_serial;
    /* Part of every ack inbox, new at each start: an ack a client sends to
     * an inbox of a previous run never reaches a new subscription. */
    char boot[20];

    /* The session file (sessions.c): file store only, else -1. */
    int sessions_fd;
    void *sessions_enc; /* its record buffer */
    uint64_t sessions_records;
    bool sessions_broken; /* an append failed: rewrite at the next change */
    bool restoring;
};

/* ---- service.c ---- */
/* Publishes |len| bytes to |subject| (no reply); errors are logged. */
void stan_send(rift_stan *svc, const char *subject, size_t subject_len,
               const uint8_t *p, size_t len);
/* Publishes through the transport (any thread). */
int stan_publish(rift_stan *svc, const char *subject, size_t subject_len,
                 const char *reply, size_t reply_len, const uint8_t *p,
                 size_t len, rift_error *err);
void stan_wake(rift_stan *svc);
uint64_t stan_mono_ms(void);
char *stan_strdup(rift_stan *svc, rift_stan_str s);
bool stan_client_id_valid(rift_stan_str id);

/* ---- clients.c ---- */
void stan_on_connect(rift_stan *svc, const rift_msg *m);
void stan_on_close(rift_stan *svc, const rift_msg *m);
void stan_on_ping(rift_stan *svc, const rift_msg *m);
void stan_on_hb_reply(rift_stan *svc, const rift_msg *m);
/* Sends the probes that are due, counts the unanswered ones and settles
 * the pending connects; returns when it next has something to do. */
uint64_t stan_heartbeat_tick(rift_stan *svc, uint64_t now_ms);
/* Registers a client read back from the session file. */
stan_client *stan_client_restore(rift_stan *svc,
                                 const rift_stan_connect_req *q);
stan_client *stan_client_find(rift_stan *svc, rift_stan_str id);
stan_client *stan_client_by_conn(rift_stan *svc, rift_stan_str conn_id);
/* The client made itself known (a request, ping, ack or heartbeat
 * answer): a held one's subscriptions start delivering. NULL: no-op. */
void stan_client_heard(rift_stan *svc, stan_client *c);
void stan_clients_free(rift_stan *svc);

/* ---- sessions.c ---- */
/* The file store's client registrations and live subscriptions
 * (<dir>/.sessions): stan_sessions_open reads them back, restores them
 * (truncating a torn or corrupt tail, reported) and rewrites the file;
 * the other calls append one record each. Memory store: no-ops. */
int stan_sessions_open(rift_stan *svc, rift_error *err);
void stan_sessions_close(rift_stan *svc);
void stan_sessions_client_added(rift_stan *svc, const stan_client *c);
void stan_sessions_client_removed(rift_stan *svc, const stan_client *c);
void stan_sessions_sub_added(rift_stan *svc, const stan_sub *s);
void stan_sessions_sub_removed(rift_stan *svc, const stan_sub *s);

/* ---- channels.c ---- */
/* The limits of channel |name|: the first matching override, else the
 * service's. */
rift_stan_limits stan_limits_for(const rift_stan *svc, rift_stan_str name);
/* stan_channel_get opens (or creates, within max_channels) |name|; on
 * failure |errtext| is the text for the client. */
stan_channel *stan_channel_get(rift_stan *svc, rift_stan_str name,
                               const char **errtext);
void stan_on_publish(rift_stan *svc, const rift_msg *m);
void stan_channels_close(rift_stan *svc);
void stan_channels_expire(rift_stan *svc, uint64_t now_ms);
/* Deletes the consumers of non-durable subscriptions a previous run left
 * in |ch|'s stream, except those of the live feeds (restored ones). */
void stan_channel_drop_leftovers(rift_stan *svc, stan_channel *ch);

/* ---- subs.c ---- */
void stan_on_subscribe(rift_stan *svc, const rift_msg *m);
void stan_on_unsubscribe(rift_stan *svc, const rift_msg *m, bool close);
void stan_on_ack(rift_stan *svc, const rift_msg *m);
/* Opens a subscription read back from the session file, with its ack
 * inbox, id and consumer name; NULL errtext = restored. */
const char *stan_sub_restore(rift_stan *svc, const rift_stan_sub_req *q,
                             uint64_t id, const char *ack_inbox,
                             const char *feed);
/* Makes |c|'s held subscriptions members of their feeds' pushes. */
void stan_subs_attach_client(rift_stan *svc, stan_client *c);
/* Closes every subscription of |c| (durables kept). */
void stan_subs_drop_client(rift_stan *svc, stan_client *c);
/* Pumps every feed; returns the earliest ack-wait deadline (mono ms). */
uint64_t stan_subs_pump(rift_stan *svc, uint64_t now_ms);
void stan_subs_free(rift_stan *svc);

#endif /* RIFT_STAN_INTERNAL_H */
