/*
 * views.h — what the STAN service shows the rest of riftd (stan layer):
 * its channels as streams (registry.c), so that the daemon's stream
 * lookup reaches them, and snapshots of its clients, channels and
 * subscriptions for the monitoring views (views.c), modelled on
 * nats-streaming-server's /streaming/clientsz and /streaming/channelsz.
 *
 * Threading: every function here may be called from any thread while the
 * service runs.
 */
#ifndef RIFT_STAN_VIEWS_H
#define RIFT_STAN_VIEWS_H

#include "rift/stream.h"
#include "stan/stan.h"

/* ---- Channels as streams (registry.c) ---- */

/*
 * rift_stan_channel_acquire returns the stream of channel |name| and pins
 * the channel in *token, or NULL when there is no such channel (channels
 * are created by STAN clients only). The stream stays valid until
 * rift_stan_channel_release: max_inactivity passes over a pinned channel.
 * Takes only the short registry lock, never the service lock, so a caller
 * does not wait for a delivery's fsync.
 */
rift_stream *rift_stan_channel_acquire(rift_stan *s, const char *name,
                                       size_t len, void **token);

/* rift_stan_channel_release drops the pin; |appended|: the user stored
 * records in the stream, and the service is woken to push them to its
 * subscribers at once. */
void rift_stan_channel_release(rift_stan *s, void *token, bool appended);

/* The settings a channel's stream is opened with (stream.info): its
 * limits (0 = unlimited), consumer limit and sync_on_write. */
typedef struct rift_stan_channel_settings {
    rift_stan_limits limits;
    uint32_t max_consumers;
    bool sync_on_write;
} rift_stan_channel_settings;
void rift_stan_channel_settings_of(rift_stan *s, const char *name,
                                   rift_stan_channel_settings *out);

/* rift_stan_channel_names returns the channel names, sorted, in a new
 * vector (free with rift_stan_names_free). RIFT_ERR_NOMEM. */
int rift_stan_channel_names(rift_stan *s, char ***names, size_t *count);
void rift_stan_names_free(char **names, size_t count);

/* ---- Monitoring snapshots (views.c) ---- */

/* One subscription, with the fields of the original's Subscriptionz. */
typedef struct rift_stan_sub_view {
    char *client_id;
    char *inbox;
    char *ack_inbox;
    char *durable_name; /* NULL for none */
    char *queue_name;   /* NULL for none */
    char *consumer;     /* its consumer in the channel's stream */
    bool is_durable;
    bool is_offline; /* a durable (queue group) without live members */
    bool is_stalled; /* pending_count reached max_inflight */
    uint32_t max_inflight;
    uint32_t ack_wait_s;
    uint64_t last_sent;
    uint64_t pending_count;
} rift_stan_sub_view;

typedef struct rift_stan_channel_view {
    char *name;
    uint64_t msgs, bytes, first_seq, last_seq;
    rift_stan_sub_view *subs;
    size_t nsubs;
} rift_stan_channel_view;

typedef struct rift_stan_client_view {
    char *id;
    char *hb_inbox;
    size_t subscriptions;
} rift_stan_client_view;

typedef struct rift_stan_view {
    char *cluster_id;
    bool file_store;
    size_t subscriptions; /* live ones, all channels */
    uint64_t total_msgs, total_bytes;
    rift_stan_client_view *clients; /* sorted by id */
    size_t nclients;
    rift_stan_channel_view *channels; /* sorted by name */
    size_t nchannels;
} rift_stan_view;

/*
 * rift_stan_view_take fills |out| with a snapshot taken under the service
 * lock: every client, and every channel (only |channel| when not NULL;
 * none matching leaves nchannels 0) with its subscriptions, the live ones
 * and the offline durables. Errors: RIFT_ERR_NOMEM, the store's info
 * errors. Free with rift_stan_view_free (also after an error).
 */
int rift_stan_view_take(rift_stan *s, const char *channel, rift_stan_view *out,
                        rift_error *err);
void rift_stan_view_free(rift_stan_view *v);

#endif /* RIFT_STAN_VIEWS_H */
