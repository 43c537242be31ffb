/*
 * broker.h — the in-process subject broker: publish, subscribe (with '*'
 * and terminal '>' wildcards and queue groups), request/reply, bounded
 * per-subscriber queues with slow-consumer disconnection.
 *
 * Semantics follow docs/protocol-v1.md §1 exactly; the error texts placed
 * in rift_error are the reference's display strings.
 *
 * Threading: a rift_broker is fully thread-safe; any thread may publish,
 * subscribe, unsubscribe and request concurrently. Publishing takes no
 * global write lock: routing costs one atomic exchange on a thread-private
 * cache line, a match-cache lookup and a short lock per receiving queue.
 * A rift_sub is consumed by one thread at a time (rift_sub_recv,
 * rift_sub_fd, rift_sub_close), while publishers on any thread enqueue into
 * it. A rift_msg is immutable and may be read and referenced from any
 * thread.
 *
 * Routing: subscriptions live in a subject trie (literal children in a
 * hash table, dedicated '*' and '>' branches), so matching costs grow with
 * the number of subject tokens, not with the number of subscriptions;
 * results are cached per subject (bounded, invalidated on (un)subscribe).
 *
 * Strings are length-delimited (pointer + length) and need not be
 * NUL-terminated; they are borrowed for the duration of the call. Error
 * texts are written to the optional |err| record only on failure.
 */
#ifndef RIFT_BROKER_H
#define RIFT_BROKER_H

#include "rift/rift.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rift_broker rift_broker;
typedef struct rift_sub rift_sub;
typedef struct rift_msg rift_msg;
typedef struct rift_notifier rift_notifier;

/* ---- Messages ---- */

/**
 * rift_msg_release_cb frees the payload of an external message
 * (rift_msg_new_external) once its last reference is gone. It runs once, on
 * whichever thread drops that reference, and must not block.
 */
typedef void (*rift_msg_release_cb)(void *user_data);

/**
 * rift_msg_new creates a message holding copies of |subject|, |reply| (may
 * be NULL/0 for none) and |payload| in one allocation from |mem| (NULL: the
 * library's default, malloc or the calling thread's message cache), with
 * one reference owned by the caller (*pmsg; rift_msg_unref). |mem| must
 * outlive the message. Subjects are not validated here; that happens when
 * the message is published. Any thread.
 *
 * Errors: RIFT_ERR_NOMEM ("out of memory"; also for a subject or reply
 * longer than 2^31-1 bytes).
 */
RIFT_EXTERN int rift_msg_new(rift_msg **pmsg, const rift_mem *mem,
                             const char *subject, size_t subject_len,
                             const char *reply, size_t reply_len,
                             const uint8_t *payload, size_t payload_len,
                             rift_error *err);

/**
 * rift_msg_new_external is rift_msg_new without copying |payload|: the
 * message borrows it until the last reference goes, then calls
 * |release|(|user_data|) (NULL: nothing to call). Subject and reply are
 * still copied. On failure |release| is not called and the caller keeps
 * the payload.
 *
 * Errors: RIFT_ERR_NOMEM ("out of memory").
 */
RIFT_EXTERN int rift_msg_new_external(rift_msg **pmsg, const rift_mem *mem,
                                      const char *subject, size_t subject_len,
                                      const char *reply, size_t reply_len,
                                      const uint8_t *payload,
                                      size_t payload_len,
                                      rift_msg_release_cb release,
                                      void *user_data, rift_error *err);

/** rift_msg_ref adds a reference and returns |msg|. Thread-safe; the
 * caller must already hold a reference. */
RIFT_EXTERN rift_msg *rift_msg_ref(rift_msg *msg);

/** rift_msg_unref drops a reference; the last one frees (and runs the
 * external release callback, on the calling thread). NULL is a no-op. */
RIFT_EXTERN void rift_msg_unref(rift_msg *msg);

/** The subject; the copy held by the message is also NUL-terminated. */
RIFT_EXTERN const char *rift_msg_subject(const rift_msg *msg, size_t *len);

/** The reply (NUL-terminated), or NULL and *len = 0 when there is none. */
RIFT_EXTERN const char *rift_msg_reply(const rift_msg *msg, size_t *len);

/** The payload bytes; the pointer is shared by every holder. */
RIFT_EXTERN const uint8_t *rift_msg_payload(const rift_msg *msg, size_t *len);

/* ---- Broker ---- */

typedef struct rift_broker_settings {
    /** Capacity of each subscription's queue, in messages. Default 1,024. */
    size_t subscription_capacity;
    /** Largest payload accepted by publish. Default 1,048,576. */
    size_t max_payload_bytes;
    /** Longest subject or pattern, in bytes. Default 1,024. */
    size_t max_subject_bytes;
    /** Live subscriptions, request inboxes included. Default 65,536. */
    size_t max_subscriptions;
    /** Allocator; NULL for malloc. Must outlive the broker. */
    const rift_mem *mem;
} rift_broker_settings;

/** rift_broker_settings_default fills |s| with the defaults above. */
RIFT_EXTERN void rift_broker_settings_default(rift_broker_settings *s);

/**
 * rift_broker_new creates a broker. |settings| is copied (NULL = defaults);
 * the caller owns *pbroker (rift_broker_del).
 *
 * Errors: RIFT_ERR_INVALID_CONFIG ("invalid messaging configuration: limits
 * must be positive") when a limit is zero or the capacity is above 2^30
 * messages; RIFT_ERR_NOMEM ("out of memory").
 */
RIFT_EXTERN int rift_broker_new(rift_broker **pbroker,
                                const rift_broker_settings *settings,
                                rift_error *err);

/**
 * rift_broker_del destroys the broker. Subscriptions still open stay valid
 * handles: their pending and later rift_sub_recv calls return
 * RIFT_ERR_CLOSED (queued messages are discarded), their fds and notifiers
 * report them, and each must still be released with rift_sub_close (before
 * or after; the broker's memory goes with the last handle). No other call
 * on the broker itself may run concurrently or follow; a thread blocked in
 * rift_sub_recv may. NULL is a no-op.
 */
RIFT_EXTERN void rift_broker_del(rift_broker *broker);

/** rift_broker_get_settings returns the settings in force (read-only). */
RIFT_EXTERN const rift_broker_settings *
rift_broker_get_settings(const rift_broker *broker);

typedef struct rift_publish_report {
    /** Successful enqueues: one per plain subscriber plus at most one per
     * queue group. */
    size_t delivered;
    /** Subscribers that became slow during this publish. */
    size_t slow_consumers;
    /** 1 when riftd's cluster backbone took the message too (more
     * subscribers may be reached on other nodes), else 0. */
    size_t forwarded;
} rift_publish_report;

/**
 * rift_broker_publish routes a message synchronously; it never blocks on a
 * consumer (a full queue makes its subscriber slow instead, §1.7). |reply|
 * may be NULL (or reply_len 0) for none. The payload is copied once, only
 * when somebody matches, into one refcounted message shared by every
 * receiver; with no match nothing is allocated. Delivery is at most once.
 * |report| may be NULL; on failure it reads {0, 0}.
 *
 * Errors (text in |err|), checked in this order: RIFT_ERR_INVALID_SUBJECT
 * ("invalid subject: <subject>": empty, too long, a wildcard, ...; then the
 * same for an invalid reply, naming the reply); RIFT_ERR_PAYLOAD_TOO_LARGE
 * ("payload size <n> exceeds limit <max>"); RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_broker_publish(rift_broker *broker, const char *subject,
                                    size_t subject_len, const char *reply,
                                    size_t reply_len, const uint8_t *payload,
                                    size_t payload_len,
                                    rift_publish_report *report,
                                    rift_error *err);

/**
 * rift_broker_publish_msg routes an existing message (for instance one made
 * with rift_msg_new_external over a network buffer) without copying it:
 * receivers get the very same rift_msg. The caller keeps its reference;
 * receivers take their own. Validation and errors as rift_broker_publish.
 */
RIFT_EXTERN int rift_broker_publish_msg(rift_broker *broker, rift_msg *msg,
                                        rift_publish_report *report,
                                        rift_error *err);

/* ---- Subscriptions ---- */

typedef struct rift_sub_options {
    /** Queue group name (1..128 ASCII graphic bytes, no '*' or '>'), or
     * NULL for a plain subscription. A non-NULL empty name is invalid.
     * Groups are identified by name alone, across subjects (§1.6). */
    const char *queue;
    size_t queue_len;
    /** Queue capacity override (at most 2^30); 0 = the broker's
     * subscription_capacity. Ring memory grows on demand up to it. */
    size_t capacity;
    /** When set, readiness of this subscription is also reported through
     * the notifier (see rift_notifier_new), which must outlive it. */
    rift_notifier *notifier;
    /** Opaque pointer returned by rift_sub_user_data. */
    void *user_data;
} rift_sub_options;

/**
 * rift_broker_subscribe registers a subscription to |pattern| and returns
 * it in *psub, which the caller owns (release with rift_sub_close). It
 * exists (and receives) when this returns. |opts| may be NULL for a plain
 * subscription with defaults; it is copied.
 *
 * Errors, checked in this order: RIFT_ERR_INVALID_SUBJECT ("invalid
 * subject: <pattern>"); RIFT_ERR_INVALID_QUEUE ("invalid queue group");
 * RIFT_ERR_INVALID_ARGUMENT (capacity above 2^30);
 * RIFT_ERR_SUBSCRIPTION_LIMIT ("subscription limit reached"); RIFT_ERR_CLOSED
 * ("subscription closed") when the broker is being destroyed; RIFT_ERR_NOMEM.
 */
RIFT_EXTERN int rift_broker_subscribe(rift_broker *broker, const char *pattern,
                                      size_t pattern_len,
                                      const rift_sub_options *opts,
                                      rift_sub **psub, rift_error *err);

/**
 * rift_sub_recv takes the next message, in publication order per
 * publisher. |timeout_ns|: 0 polls, a negative value waits forever,
 * otherwise waits at most that long. A waiting receiver polls for up to
 * 20 us before it sleeps (in-process replies usually arrive sooner than a
 * sleep and wake-up would take). On success the caller owns one reference
 * to *pmsg. One thread at a time per subscription.
 *
 * Errors: RIFT_ERR_AGAIN ("operation would block": nothing queued within
 * the timeout); RIFT_ERR_SLOW_CONSUMER ("subscriber exceeded its bounded
 * queue and was disconnected", once: the queue overflowed, the subscription
 * is now unregistered and its queue discarded); RIFT_ERR_CLOSED
 * ("subscription closed": afterwards, or when the broker was destroyed).
 */
RIFT_EXTERN int rift_sub_recv(rift_sub *sub, int64_t timeout_ns,
                              rift_msg **pmsg, rift_error *err);

/**
 * rift_sub_recv_batch is rift_sub_recv for up to |max| messages at once,
 * under one lock acquisition: it waits (as rift_sub_recv) until at least
 * one message is queued, then moves up to |max| of them, oldest first,
 * into |msgs| and returns how many. The caller owns one reference to each.
 * Event loops draining a busy subscription use it to amortise the
 * per-message synchronisation. When it returns fewer than |max|, the queue
 * was left empty (for a notifier, as good as an RIFT_ERR_AGAIN).
 *
 * Errors: as rift_sub_recv; RIFT_ERR_INVALID_ARGUMENT when |max| is 0.
 */
RIFT_EXTERN rift_ssize rift_sub_recv_batch(rift_sub *sub, int64_t timeout_ns,
                                           rift_msg **msgs, size_t max,
                                           rift_error *err);

/**
 * rift_sub_fd returns a file descriptor (an eventfd, created on first call)
 * that is readable while the subscription has messages queued or has
 * become slow or closed. Level-triggered: it stays readable until
 * rift_sub_recv drains the queue. The descriptor belongs to the
 * subscription. Returns the fd.
 *
 * Errors: -errno from eventfd.
 */
RIFT_EXTERN int rift_sub_fd(rift_sub *sub);

/** rift_sub_pending returns the number of messages queued right now (a
 * snapshot; any thread may call it). */
RIFT_EXTERN size_t rift_sub_pending(const rift_sub *sub);

/** rift_sub_user_data returns the user_data given at subscribe time. */
RIFT_EXTERN void *rift_sub_user_data(const rift_sub *sub);

/**
 * rift_sub_close unregisters the subscription at once (no publication
 * reaches it afterwards), discards its queue, closes its fd and frees the
 * handle. Works after rift_broker_del too. NULL is a no-op. Must not race
 * rift_sub_recv on the same handle.
 */
RIFT_EXTERN void rift_sub_close(rift_sub *sub);

/* ---- Notifier: one readiness fd for many subscriptions ---- */

/**
 * rift_notifier_new creates a notifier: an eventfd plus a ready list. Every
 * subscription created with it in rift_sub_options is put on the ready list
 * when its queue goes from empty to non-empty, or when it becomes slow or
 * closed; the fd becomes readable. This lets one event loop (the QUIC
 * server, a Lua worker) wait on any number of subscriptions with one fd.
 *
 * Publishers signal it from their own threads; only the thread running the
 * event loop calls rift_notifier_poll. The eventfd is written once per
 * empty-to-non-empty transition of the ready list. The caller owns *pn
 * (rift_notifier_del); |mem| (NULL: malloc) must outlive it.
 *
 * Errors: RIFT_ERR_NOMEM ("out of memory"); -errno from eventfd
 * ("notifier eventfd: <os error>").
 */
RIFT_EXTERN int rift_notifier_new(rift_notifier **pn, const rift_mem *mem,
                                  rift_error *err);

/**
 * rift_notifier_set_owner declares the calling thread the notifier's
 * poller: subscriptions that become ready because of a publication made on
 * this very thread put themselves on the ready list without writing the
 * eventfd, since the owner polls after its own publications anyway (an
 * event loop that publishes into subscriptions it serves saves a write and
 * a read syscall per message). Publications from other threads still
 * signal the fd.
 */
RIFT_EXTERN void rift_notifier_set_owner(rift_notifier *n);

/** rift_notifier_fd returns the notifier's readable fd. */
RIFT_EXTERN int rift_notifier_fd(const rift_notifier *n);

/**
 * rift_notifier_poll resets the fd and moves up to |max| ready
 * subscriptions into |subs|, returning how many. A subscription is reported
 * once per empty-to-ready transition; the consumer must drain it (with
 * rift_sub_recv until RIFT_ERR_AGAIN or an error, or rift_sub_recv_batch
 * until it returns fewer than asked), otherwise it is not reported again. When
 * more than |max| are ready the fd stays readable. Called by one thread at a
 * time.
 */
RIFT_EXTERN size_t rift_notifier_poll(rift_notifier *n, rift_sub **subs,
                                      size_t max);

/**
 * rift_notifier_del frees the notifier. Every subscription using it must
 * be closed first. NULL is a no-op.
 */
RIFT_EXTERN void rift_notifier_del(rift_notifier *n);

/* ---- Request/reply ---- */

/** Length of an inbox subject: "_INBOX." + 32 lowercase hex digits. */
#define RIFT_INBOX_LEN 39

/**
 * rift_broker_new_inbox writes a fresh inbox subject (RIFT_INBOX_LEN bytes
 * plus a NUL) into |out| from 16 CSPRNG bytes read as a little-endian
 * 128-bit number, printed as 32 zero-padded lowercase hex digits.
 * Thread-safe. Errors: RIFT_ERR_STORAGE ("stream storage: request inbox
 * entropy unavailable").
 */
RIFT_EXTERN int rift_broker_new_inbox(char out[RIFT_INBOX_LEN + 1],
                                      rift_error *err);

/**
 * rift_broker_request subscribes to a fresh inbox (it counts against
 * max_subscriptions), publishes |payload| to |subject| with that reply, and
 * waits up to |timeout_ns| (negative: forever) for the first reply, which
 * the caller then owns. The inbox subscription is removed in every case.
 * Blocks the calling thread; event loops compose the same steps with
 * rift_broker_new_inbox, a notifier and their own timer.
 *
 * Errors: RIFT_ERR_NO_RESPONDERS ("no responders available") at once when
 * the publish reached nobody (a passive subscriber such as a '>' monitor
 * counts as somebody); RIFT_ERR_TIMEOUT ("request timed out"); those of
 * rift_broker_new_inbox, rift_broker_subscribe and rift_broker_publish;
 * RIFT_ERR_SLOW_CONSUMER / RIFT_ERR_CLOSED from the inbox.
 */
RIFT_EXTERN int rift_broker_request(rift_broker *broker, const char *subject,
                                    size_t subject_len, const uint8_t *payload,
                                    size_t payload_len, int64_t timeout_ns,
                                    rift_msg **preply, rift_error *err);

/* ---- Introspection ---- */

typedef struct rift_broker_stats {
    uint64_t subscriptions;  /**< live subscriptions now */
    uint64_t msgs_in;        /**< publishes accepted */
    uint64_t bytes_in;       /**< payload bytes of accepted publishes */
    uint64_t msgs_out;       /**< successful enqueues */
    uint64_t bytes_out;      /**< payload bytes enqueued */
    uint64_t slow_consumers; /**< subscriptions that became slow, total */
} rift_broker_stats;

/** rift_broker_get_stats fills |stats| with a snapshot: exact when no
 * publish runs concurrently. Walks every subscription (O(n)). */
RIFT_EXTERN void rift_broker_get_stats(rift_broker *broker,
                                       rift_broker_stats *stats);

/** rift_broker_subscription_count returns the live subscription count. */
RIFT_EXTERN size_t rift_broker_subscription_count(rift_broker *broker);

#ifdef __cplusplus
}
#endif

#endif /* RIFT_BROKER_H */
