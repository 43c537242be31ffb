/*
 * broker.c — the in-process subject broker (broker layer): configuration,
 * the subscription registry (trie + queue groups), publish with fan-out
 * and queue-group selection, introspection. Semantics: docs/protocol-v1.md
 * §1.1-§1.8.
 *
 * Concurrency: publishers take the broker lock (drlock.h) for reading
 * only, which costs one exchange on a thread-private cache line, so any
 * number route at once; the per-message work is a cache lookup and one
 * short per-subscription lock per receiver. Registry changes take it for
 * writing. Subscriptions keep a reference on the broker struct so that a
 * handle outliving rift_broker_del can still be closed safely.
 */
#include "broker/broker_internal.h"
#include "broker/msg_ext.h"

#include "common/dlist.h"
#include "common/hash.h"
#include "subject/subject.h"

#include <string.h>

/* ---- Errors ---- */

static int invalid_subject(rift_error *err, const char *s, size_t len) {
    /* The detail record caps the text anyway; bound the printf length so
     * it fits an int. */
    int n = (int)RIFT_MIN(len, (size_t)RIFT_ERROR_TEXT_MAX * 2);
    return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                          "invalid subject: %.*s", n, s ? s : "");
}

/* ---- Settings and lifetime ---- */

void rift_broker_settings_default(rift_broker_settings *s) {
    s->subscription_capacity = 1024;
    s->max_payload_bytes = 1048576;
    s->max_subject_bytes = 1024;
    s->max_subscriptions = 65536;
    s->mem = NULL;
}

int rift_broker_new(rift_broker **pbroker, const rift_broker_settings *settings,
                    rift_error *err) {
    rift_broker_settings s;
    if (settings != NULL) {
        s = *settings;
    } else {
        rift_broker_settings_default(&s);
    }
    if (s.subscription_capacity == 0 || s.max_payload_bytes == 0 ||
        s.max_subject_bytes == 0 || s.max_subscriptions == 0 ||
        s.subscription_capacity > RIFT_BROKER_MAX_CAPACITY) {
        return rift_error_set(
            err, RIFT_ERR_INVALID_CONFIG,
            "invalid messaging configuration: limits must be positive");
    }
    rift_broker *b = rift_calloc(s.mem, 1, sizeof(*b));
    if (b == NULL) {
        goto fail_alloc;
    }
    b->settings = s;
    b->mem = s.mem;
    if (rift_random(&b->seed, sizeof(b->seed)) != 0) {
        /* Only flooding resistance depends on the seed; carry on. */
        b->seed = rift_now_ns() ^ (uint64_t)(uintptr_t)b;
    }
    atomic_init(&b->refs, 1);
    atomic_init(&b->nsubs, 0);
    atomic_init(&b->slow_total, 0);
    rift_pmap_init(&b->groups);
    if (rift_sublist_init(&b->sl, b->mem, b->seed) != 0) {
        goto fail_sublist;
    }
    if (rift_cache_init(b) != 0) {
        goto fail_cache;
    }
    rift_drlock_init(&b->lock, b->mem);
    *pbroker = b;
    return 0;

fail_cache:
    rift_sublist_free(&b->sl);
fail_sublist:
    rift_free(s.mem, b);
fail_alloc:
    return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

void rift_broker_unref(rift_broker *b) {
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        rift_drlock_free(&b->lock);
        rift_free(b->mem, b);
    }
}

static void group_free(rift_broker *b, rift_qgroup *g) {
    rift_free(b->mem, g);
}

void rift_broker_del(rift_broker *b) {
    if (b == NULL) {
        return;
    }
    rift_drlock_wrlock(&b->lock);
    b->dead = true;
    /* Close every subscription still open: pending receivers wake up with
     * RIFT_ERR_CLOSED; the handles stay valid until rift_sub_close. */
    for (rift_sub *s = b->all_head; s != NULL; s = s->all_next) {
        rift_sub_shut(s);
        s->registered = false;
        s->group = NULL;
    }
    b->all_head = NULL;
    atomic_store_explicit(&b->nsubs, 0, memory_order_relaxed);
    rift_sublist_free(&b->sl);
    for (size_t i = 0; b->groups.slots != NULL && i <= b->groups.mask; i++) {
        if (b->groups.slots[i].item != NULL) {
            group_free(b, b->groups.slots[i].item);
        }
    }
    rift_pmap_free(&b->groups, b->mem);
    rift_cache_free(b);
    rift_drlock_wrunlock(&b->lock);
    rift_broker_unref(b);
}

const rift_broker_settings *rift_broker_get_settings(const rift_broker *b) {
    return &b->settings;
}

/* ---- Queue groups ---- */

static bool queue_valid(const char *q, size_t len) {
    if (len == 0 || len > 128) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)q[i];
        if (c < 0x21 || c > 0x7E || c == '*' || c == '>') {
            return false;
        }
    }
    return true;
}

static rift_qgroup *group_find(rift_broker *b, const char *name, size_t len,
                               uint64_t h) {
    const rift_pmap *m = &b->groups;
    if (m->slots == NULL) {
        return NULL;
    }
    for (size_t i = rift_pmap_first(m, h); m->slots[i].item != NULL;
         i = rift_pmap_next(m, i)) {
        rift_qgroup *g = m->slots[i].item;
        if (m->slots[i].hash == h && g->name_len == len &&
            memcmp(g->name, name, len) == 0) {
            return g;
        }
    }
    return NULL;
}

/* group_get finds or creates the group |name| (write lock held). */
static rift_qgroup *group_get(rift_broker *b, const char *name, size_t len) {
    uint64_t h = rift_hash_bytes(name, len, b->seed ^ RIFT_HASH_K2);
    rift_qgroup *g = group_find(b, name, len, h);
    if (g != NULL) {
        return g;
    }
    g = rift_calloc(b->mem, 1, sizeof(*g) + len + 1);
    if (g == NULL) {
        return NULL;
    }
    g->hash = h;
    g->name_len = len;
    memcpy(g->name, name, len);
    rift_spin_init(&g->lock);
    if (rift_pmap_insert(&b->groups, b->mem, h, g) != 0) {
        group_free(b, g);
        return NULL;
    }
    return g;
}

/* group_leave drops one member; the record goes with the last (§1.6). */
static void group_leave(rift_broker *b, rift_qgroup *g) {
    if (--g->nmembers == 0) {
        rift_pmap_remove(&b->groups, g->hash, g);
        group_free(b, g);
    }
}

/* ---- Registry ---- */

/* The pattern, queue group and capacity checks; *cap is the capacity
 * the subscription gets. */
static int check_subscribe(const rift_broker_settings *st, const char *pattern,
                           size_t pattern_len, const rift_sub_options *opts,
                           size_t *cap, rift_error *err) {
    if (pattern == NULL || !rift_subject_valid(pattern, pattern_len, true,
                                               st->max_subject_bytes)) {
        return invalid_subject(err, pattern, pattern_len);
    }
    const char *queue = opts ? opts->queue : NULL;
    size_t queue_len = opts ? opts->queue_len : 0;
    if (queue != NULL && !queue_valid(queue, queue_len)) {
        return rift_error_set(err, RIFT_ERR_INVALID_QUEUE,
                              "invalid queue group");
    }
    *cap = opts && opts->capacity ? opts->capacity : st->subscription_capacity;
    if (*cap > RIFT_BROKER_MAX_CAPACITY) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "subscription capacity %zu exceeds limit %zu",
                              *cap, RIFT_BROKER_MAX_CAPACITY);
    }
    return 0;
}

/* A new open subscription, not yet registered; NULL when out of memory. */
static rift_sub *sub_new(rift_broker *b, const char *pattern,
                         size_t pattern_len, const rift_sub_options *opts,
                         size_t cap) {
    rift_sub *sub = rift_calloc(b->mem, 1, sizeof(*sub) + pattern_len + 1);
    if (sub == NULL) {
        return NULL;
    }
    sub->mem = b->mem;
    sub->broker = b;
    sub->cap = cap;
    sub->efd = -1;
    sub->notifier = opts ? opts->notifier : NULL;
    sub->user_data = opts ? opts->user_data : NULL;
    sub->pattern_len = pattern_len;
    memcpy(sub->pattern, pattern, pattern_len);
    atomic_init(&sub->state, SUB_OPEN);
    atomic_init(&sub->count, 0);
    atomic_init(&sub->wseq, 0);
    rift_spin_init(&sub->lock);
    return sub;
}

/* bridge_interest tells the bridge, if any, that |sub| came or went
 * (write lock held). */
static void bridge_interest(rift_broker *b, const rift_sub *sub, int delta) {
    const rift_broker_bridge *br = b->bridge;
    if (br != NULL && br->interest != NULL) {
        const rift_qgroup *g = sub->group;
        br->interest(br->ud, sub->pattern, sub->pattern_len, g ? g->name : NULL,
                     g ? g->name_len : 0, delta);
    }
}

void rift_broker_set_bridge(rift_broker *b, const rift_broker_bridge *br) {
    rift_drlock_wrlock(&b->lock);
    b->bridge = b->dead ? NULL : br;
    for (rift_sub *s = b->all_head; br != NULL && s != NULL; s = s->all_next) {
        bridge_interest(b, s, 1);
    }
    rift_drlock_wrunlock(&b->lock);
}

/* Enters sub in the trie, its queue group and the broker's list; the
 * caller holds the write lock. */
static int sub_register(rift_broker *b, rift_sub *sub, const char *queue,
                        size_t queue_len, rift_error *err) {
    const char *pattern = sub->pattern;
    size_t pattern_len = sub->pattern_len;
    if (b->dead) {
        return rift_error_set(err, RIFT_ERR_CLOSED, "subscription closed");
    }
    if (atomic_load_explicit(&b->nsubs, memory_order_relaxed) >=
        b->settings.max_subscriptions) {
        return rift_error_set(err, RIFT_ERR_SUBSCRIPTION_LIMIT,
                              "subscription limit reached");
    }
    rift_qgroup *g = NULL;
    if (queue != NULL) {
        g = group_get(b, queue, queue_len);
        if (g == NULL) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    sub->entry.seq = ++b->next_seq;
    if (rift_sublist_insert(&b->sl, pattern, pattern_len, &sub->entry) != 0) {
        if (g != NULL && g->nmembers == 0) {
            g->nmembers = 1;
            group_leave(b, g);
        }
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (g != NULL) {
        g->nmembers++;
        sub->group = g;
    }
    rift_cache_invalidate(b, pattern, pattern_len, sub->entry.wildcard);
    rift_cache_collect(b);
    RIFT_DLIST_PUSH(b->all_head, sub, all_prev, all_next);
    bridge_interest(b, sub, 1);
    sub->registered = true;
    atomic_fetch_add_explicit(&b->nsubs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return 0;
}

int rift_broker_subscribe(rift_broker *b, const char *pattern,
                          size_t pattern_len, const rift_sub_options *opts,
                          rift_sub **psub, rift_error *err) {
    const rift_broker_settings *st = &b->settings;
    size_t cap = 0;
    int rc = check_subscribe(st, pattern, pattern_len, opts, &cap, err);
    if (rc != 0) {
        return rc;
    }
    rift_sub *sub = sub_new(b, pattern, pattern_len, opts, cap);
    if (sub == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_drlock_wrlock(&b->lock);
    rc = sub_register(b, sub, opts ? opts->queue : NULL,
                      opts ? opts->queue_len : 0, err);
    rift_drlock_wrunlock(&b->lock);
    if (rc != 0) {
        rift_free(b->mem, sub);
        return rc;
    }
    *psub = sub;
    return 0;
}

/* unregister removes |sub| from the registry (write lock held). */
static void unregister(rift_broker *b, rift_sub *sub) {
    if (!sub->registered) {
        return;
    }
    bool wildcard = sub->entry.wildcard;
    bridge_interest(b, sub, -1);
    rift_sublist_remove(&b->sl, &sub->entry);
    rift_cache_invalidate(b, sub->pattern, sub->pattern_len, wildcard);
    if (sub->group != NULL) {
        group_leave(b, sub->group);
        sub->group = NULL;
    }
    RIFT_DLIST_REMOVE(b->all_head, sub, all_prev, all_next);
    sub->registered = false;
    /* Publishers last wrote these under the read lock we now exclude. */
    b->gone_msgs_out += sub->msgs_out;
    b->gone_bytes_out += sub->bytes_out;
    atomic_fetch_sub_explicit(&b->nsubs, 1, memory_order_relaxed);
}

void rift_broker_unregister(rift_broker *b, rift_sub *sub) {
    rift_drlock_wrlock(&b->lock);
    if (!b->dead) {
        unregister(b, sub);
        rift_cache_collect(b);
    }
    rift_drlock_wrunlock(&b->lock);
}

size_t rift_broker_subscription_count(rift_broker *b) {
    return atomic_load_explicit(&b->nsubs, memory_order_relaxed);
}

/* ---- Publish ---- */

/*
 * deliver_group serves one queue group for one publication (§1.6): the
 * least recently served open member gets the message; if its enqueue
 * fails, the others are tried in candidate order. Returns 1 if delivered.
 */
static size_t deliver_group(const rift_gmatch *gm, rift_msg *msg,
                            size_t *slow) {
    rift_qgroup *g = gm->group;
    size_t ok = 0;
    rift_spin_lock(&g->lock);
    uint64_t stamp = ++g->cursor;
    rift_sub *best = NULL;
    for (size_t i = 0; i < gm->n; i++) {
        rift_sub *s = gm->members[i];
        if (atomic_load_explicit(&s->state, memory_order_relaxed) == SUB_OPEN &&
            (best == NULL || s->stamp < best->stamp)) {
            best = s;
        }
    }
    if (best != NULL) {
        best->stamp = stamp;
        int r = rift_sub_enqueue(best, msg);
        if (r == ENQ_OK) {
            ok = 1;
        } else {
            *slow += r == ENQ_SLOW;
            for (size_t i = 0; i < gm->n; i++) {
                rift_sub *s = gm->members[i];
                if (s == best ||
                    atomic_load_explicit(&s->state, memory_order_relaxed) !=
                        SUB_OPEN) {
                    continue;
                }
                s->stamp = stamp;
                r = rift_sub_enqueue(s, msg);
                if (r == ENQ_OK) {
                    ok = 1;
                    break;
                }
                *slow += r == ENQ_SLOW;
            }
        }
    }
    rift_spin_unlock(&g->lock);
    return ok;
}

/* The checks a publish passes before routing; a cached subject is known
 * to be valid. */
static inline int check_publish(const rift_broker_settings *st, bool cached,
                                const char *subject, size_t slen,
                                const char *reply, size_t rlen, size_t plen,
                                rift_error *err) {
    if (!cached &&
        !rift_subject_valid(subject, slen, false, st->max_subject_bytes)) {
        return invalid_subject(err, subject, slen);
    }
    if (reply != NULL &&
        !rift_subject_valid(reply, rlen, false, st->max_subject_bytes)) {
        return invalid_subject(err, reply, rlen);
    }
    if (plen > st->max_payload_bytes) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                              "payload size %zu exceeds limit %zu", plen,
                              st->max_payload_bytes);
    }
    return 0;
}

/* fan_filtered is fan_out's loop for a bridge's target |t|, or with
 * t NULL for a local publish under a bridge (plain subscribers only: the
 * backbone serves the groups). */
static size_t fan_filtered(const rift_match *m, rift_msg *msg,
                           const rift_bridge_target *t, size_t *slow) {
    size_t delivered = 0;
    bool all_plain = t == NULL || (t->pattern == NULL && t->queue == NULL);
    for (size_t i = 0; (all_plain || t->pattern) && i < m->nplain; i++) {
        rift_sub *s = m->plain[i];
        if (!all_plain && (s->pattern_len != t->pattern_len ||
                           memcmp(s->pattern, t->pattern, t->pattern_len))) {
            continue;
        }
        int r = rift_sub_enqueue(s, msg);
        delivered += r == ENQ_OK;
        *slow += r == ENQ_SLOW;
    }
    for (size_t i = 0; t != NULL && t->queue && i < m->ngroups; i++) {
        const rift_qgroup *g = m->groups[i].group;
        if (g->name_len == t->queue_len &&
            memcmp(g->name, t->queue, t->queue_len) == 0) {
            delivered += deliver_group(&m->groups[i], msg, slow);
        }
    }
    return delivered;
}

/* Hands msg, which holds want references for the purpose, to every plain
 * subscriber and one member per group (or what |bridged| says: |t| or,
 * with t NULL, the plain ones), then drops the references no one took;
 * returns the deliveries and adds the slow consumers to *slow. */
static inline size_t fan_out(rift_broker *b, const rift_match *m, rift_msg *msg,
                             size_t want, bool bridged,
                             const rift_bridge_target *t, size_t *slow) {
    size_t delivered = 0;
    if (RIFT_UNLIKELY(bridged)) {
        delivered = fan_filtered(m, msg, t, slow);
    } else {
        for (size_t i = 0; i < m->nplain; i++) {
            int r = rift_sub_enqueue(m->plain[i], msg);
            delivered += r == ENQ_OK;
            *slow += r == ENQ_SLOW;
        }
        for (size_t i = 0; i < m->ngroups; i++) {
            delivered += deliver_group(&m->groups[i], msg, slow);
        }
    }
    if (delivered < want) {
        rift_msg_unref_n(msg, want - delivered);
    }
    if (*slow > 0) {
        atomic_fetch_add_explicit(&b->slow_total, *slow, memory_order_relaxed);
    }
    return delivered;
}

/* block_headers: the NATS header block behind the origin of a message's
 * block (msg_ext.h), the one the bridge carries; NULL when there is none. */
static const uint8_t *block_headers(const rift_msg *given,
                                    const rift_msg_block *blk, size_t *len) {
    const uint8_t *p = NULL;
    *len = 0;
    if (given != NULL) {
        size_t elen;
        const uint8_t *ext = rift_msg_ext(given, &elen);
        if (elen > RIFT_MSG_EXT_ORIGIN) {
            p = ext + RIFT_MSG_EXT_ORIGIN;
            *len = elen - RIFT_MSG_EXT_ORIGIN;
        }
    } else if (blk != NULL && blk->len[0] == RIFT_MSG_EXT_ORIGIN &&
               blk->len[1] > 0) {
        p = blk->part[1];
        *len = blk->len[1];
    }
    return p;
}

/*
 * route is the publish path shared by rift_broker_publish and
 * rift_broker_publish_ext (given == NULL: the message, with |blk| when
 * set, is built only when somebody matches) and rift_broker_publish_msg.
 */
static int route(rift_broker *b, const char *subject, size_t slen,
                 const char *reply, size_t rlen, const uint8_t *payload,
                 size_t plen, rift_msg *given, const rift_msg_block *blk,
                 const rift_bridge_target *from, rift_publish_report *report,
                 rift_error *err) {
    const rift_broker_settings *st = &b->settings;
    size_t delivered = 0, slow = 0, forwarded = 0;
    const rift_broker_bridge *br = NULL;
    bool reclaim = false, temp = false;
    int rc = 0;
    /* Room for a result routed without entering the cache. */
    _Alignas(rift_match) char mbuf[RIFT_MATCH_STACK];
    if (subject == NULL) {
        subject = "";
        slen = 0;
    }
    if (reply != NULL && rlen == 0) {
        reply = NULL;
    }
    uint64_t h = rift_cache_hash(b, subject, slen);
    rift_drlock_slot *slot = rift_drlock_rdlock(&b->lock);
    /* Only valid subjects are ever cached, so a hit needs no validation. */
    rift_match *m = rift_cache_lookup(b, h, subject, slen);
    if ((rc = check_publish(st, m != NULL, subject, slen, reply, rlen, plen,
                            err)) != 0) {
        goto out;
    }
    if (m == NULL &&
        (rc = rift_cache_fill(b, h, subject, slen, mbuf, sizeof(mbuf), &m,
                              &temp, &reclaim)) != 0) {
        rc = rift_error_set(err, rc, "out of memory");
        goto out;
    }
    rift_drlock_count(&b->lock, slot, plen);
    br = from == NULL ? b->bridge : NULL;
    size_t want = m ? m->nplain + m->ngroups : 0;
    if (want == 0) {
        goto out;
    }
    /* One reference per possible delivery up front, the surplus dropped
     * at the end: no atomic operation per receiver. */
    rift_msg *msg = given;
    if (msg != NULL) {
        atomic_fetch_add_explicit(&msg->refs, want, memory_order_relaxed);
    } else {
        msg = rift_msg_alloc_ext(b->mem, want, subject, slen, reply, rlen, blk,
                                 payload, plen);
        if (msg == NULL) {
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            goto out;
        }
        msg->no_responders = from != NULL && from->no_responders;
    }
    delivered = fan_out(b, m, msg, want, from != NULL || b->bridge != NULL,
                        from, &slow);
out:
    if (rc == 0 && br != NULL && br->forward != NULL) {
        size_t hlen = 0;
        const uint8_t *hdr = block_headers(given, blk, &hlen);
        forwarded = br->forward(br->ud, subject, slen, reply, rlen, hdr, hlen,
                                payload, plen, delivered);
    }
    rift_drlock_rdunlock(&b->lock, slot);
    if (temp) {
        rift_free(b->mem, m);
    }
    if (reclaim) {
        rift_drlock_wrlock(&b->lock);
        rift_cache_collect(b);
        rift_drlock_wrunlock(&b->lock);
    }
    if (report != NULL) {
        report->delivered = delivered;
        report->slow_consumers = slow;
        report->forwarded = forwarded;
    }
    return rc;
}

int rift_broker_publish(rift_broker *b, const char *subject, size_t subject_len,
                        const char *reply, size_t reply_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_publish_report *report, rift_error *err) {
    return route(b, subject, subject_len, reply, reply_len, payload,
                 payload_len, NULL, NULL, NULL, report, err);
}

int rift_broker_publish_ext(rift_broker *b, const char *subject,
                            size_t subject_len, const char *reply,
                            size_t reply_len, const uint8_t *ext,
                            size_t ext_len, const uint8_t *ext2,
                            size_t ext2_len, const uint8_t *payload,
                            size_t payload_len, rift_publish_report *report,
                            rift_error *err) {
    rift_msg_block blk = {{ext, ext2}, {ext_len, ext2_len}};
    return route(b, subject, subject_len, reply, reply_len, payload,
                 payload_len, NULL, &blk, NULL, report, err);
}

int rift_broker_publish_bridged(rift_broker *b, const rift_bridge_target *t,
                                const char *subject, size_t subject_len,
                                const char *reply, size_t reply_len,
                                const uint8_t *payload, size_t payload_len,
                                rift_publish_report *report, rift_error *err) {
    static const uint8_t no_origin[RIFT_MSG_EXT_ORIGIN];
    rift_msg_block blk = {{no_origin, t->headers},
                          {sizeof no_origin, t->headers_len}};
    return route(b, subject, subject_len, reply, reply_len, payload,
                 payload_len, NULL, t->headers_len > 0 ? &blk : NULL, t, report,
                 err);
}

int rift_broker_publish_msg(rift_broker *b, rift_msg *msg,
                            rift_publish_report *report, rift_error *err) {
    size_t rlen;
    const char *reply = rift_msg_reply(msg, &rlen);
    return route(b, msg->subject, msg->subject_len, reply, rlen, msg->payload,
                 msg->payload_len, msg, NULL, NULL, report, err);
}

/* ---- Introspection ---- */

void rift_broker_get_stats(rift_broker *b, rift_broker_stats *stats) {
    memset(stats, 0, sizeof(*stats));
    rift_drlock_slot *slot = rift_drlock_rdlock(&b->lock);
    stats->subscriptions =
        atomic_load_explicit(&b->nsubs, memory_order_relaxed);
    rift_drlock_sum(&b->lock, &stats->msgs_in, &stats->bytes_in);
    stats->msgs_out = b->gone_msgs_out;
    stats->bytes_out = b->gone_bytes_out;
    for (rift_sub *s = b->all_head; s != NULL; s = s->all_next) {
        rift_spin_lock(&s->lock);
        stats->msgs_out += s->msgs_out;
        stats->bytes_out += s->bytes_out;
        rift_spin_unlock(&s->lock);
    }
    stats->slow_consumers =
        atomic_load_explicit(&b->slow_total, memory_order_relaxed);
    rift_drlock_rdunlock(&b->lock, slot);
}
