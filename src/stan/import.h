/*
 * import.h — `rift stan import`: converts a nats-streaming-server file
 * store (its --dir) into the STAN service's streaming directory, offline
 * (stan layer; the CLI is tools/rift/cmd_stan.c). Each channel becomes the
 * stream directory riftd's STAN service opens for it, with the original
 * sequence numbers and timestamps; each durable subscription becomes the
 * durable consumer the service resumes, at its position (cursor after the
 * last message sent, unacknowledged messages pending). docs/streaming.md
 * ("Importing from nats-streaming-server") says what is and is not kept.
 */
#ifndef RIFT_STAN_IMPORT_H
#define RIFT_STAN_IMPORT_H

#include "common/common.h"

typedef struct rift_stan_import_report {
    /** server.dat's ClusterID: riftd's streaming cluster_id must match
     * for clients to find the imported data. */
    char cluster_id[256];
    size_t channels;
    uint64_t messages;
    /** Durable consumers written (a durable queue group counts once). */
    size_t consumers;
    /** Subscriptions not imported: not durable (their clients cannot
     * resume them after a server change either). */
    size_t skipped_subs;
    /** Pending sequences dropped because the channel no longer holds
     * them. */
    uint64_t dropped_pending;
    /** Client registrations found in clients.dat (not imported: clients
     * register again when they reconnect). */
    uint64_t clients;
    /** Gaps in a channel's sequences, kept as holes. */
    uint64_t holes;
} rift_stan_import_report;

/* Called after each channel is in place. */
typedef void (*rift_stan_import_cb)(void *user_data, const char *channel,
                                    uint64_t messages, uint64_t first_seq,
                                    uint64_t last_seq, size_t consumers);

/*
 * rift_stan_import reads the store |src| and writes its channels under
 * |dst| (created if absent). A channel whose directory under |dst| exists
 * and is not empty is refused before anything is written for it; each
 * channel is written to a temporary directory, verified
 * (rift_store_verify) and renamed into place, so a failure leaves no
 * half-imported channel. Channels already in place stay when a later one
 * fails. |cb| may be NULL. Memory is bounded by the largest record and the
 * live subscriptions of one channel, not by the store's size.
 *
 * Errors: RIFT_ERR_STORAGE (the input is not a file store or is corrupt:
 * the text names the file and the byte offset of the bad record; or the
 * written stream failed verification); RIFT_ERR_EXISTS (destination
 * channel not empty); RIFT_ERR_LIMIT (something rift cannot represent:
 * more than 65,536 unacknowledged messages on a durable, a channel name
 * that is not a valid subject); RIFT_ERR_IO; RIFT_ERR_NOMEM.
 */
int rift_stan_import(const char *src, const char *dst,
                     rift_stan_import_report *report, rift_stan_import_cb cb,
                     void *user_data, rift_error *err);

#endif /* RIFT_STAN_IMPORT_H */
