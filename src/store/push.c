/*
 * push.c — push delivery over a durable consumer (store layer; see
 * push.h). The members live in a small array; the owner of each pending
 * sequence in an open-addressing table (linear probing, backward-shift
 * deletion); the ack-wait deadlines in a ring of batch deadlines, which
 * are non-decreasing because every batch of one push shares one ack wait.
 */
#include "store/push.h"

#include "store/consumer_state.h"

#include <string.h>

#define MAX_IN_FLIGHT 65536u
/* Deadlines kept; when full, a batch shares the newest deadline's slot,
 * which is earlier (a pump then finds nothing due yet, see push_due). */
#define DUE_SLOTS 64u
#define NO_MEMBER UINT32_MAX
/* Due deliveries asked for at once while every member is full. */
#define DUE_BATCH 256u

typedef struct member {
    void *ud;
    uint32_t max_in_flight;
    uint32_t pending;
} member;

typedef struct owner_slot {
    uint64_t seq; /* 0 = empty */
    uint32_t member;
} owner_slot;

struct rift_push {
    rift_push_settings s;
    uint64_t ack_wait_ms;
    member *members;
    size_t nmembers, members_cap;
    owner_slot *owners;
    size_t owners_cap, owners_used; /* cap is a power of two */
    uint64_t due[DUE_SLOTS];
    size_t due_head, due_count;
    /* Deliveries made due by a leaving member (rift_consumer_expire),
     * not yet fetched again: the next pump takes them whatever the room. */
    size_t expired;
};

/* ---- Owner table ---- */

static size_t slot_of(const rift_push *p, uint64_t seq) {
    uint64_t h = seq * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (p->owners_cap - 1);
}

static owner_slot *owner_find(const rift_push *p, uint64_t seq) {
    for (size_t i = slot_of(p, seq);; i = (i + 1) & (p->owners_cap - 1)) {
        if (p->owners[i].seq == seq) {
            return &p->owners[i];
        }
        if (p->owners[i].seq == 0) {
            return NULL;
        }
    }
}

static int owners_grow(rift_push *p) {
    size_t cap = p->owners_cap * 2;
    owner_slot *old = p->owners;
    size_t old_cap = p->owners_cap;
    owner_slot *n = rift_calloc(p->s.mem, cap, sizeof *n);
    if (!n) {
        return RIFT_ERR_NOMEM;
    }
    p->owners = n;
    p->owners_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].seq) {
            size_t j = slot_of(p, old[i].seq);
            while (n[j].seq) {
                j = (j + 1) & (cap - 1);
            }
            n[j] = old[i];
        }
    }
    rift_free(p->s.mem, old);
    return 0;
}

static int owner_set(rift_push *p, uint64_t seq, uint32_t m) {
    owner_slot *o = owner_find(p, seq);
    if (o) {
        o->member = m;
        return 0;
    }
    if ((p->owners_used + 1) * 2 > p->owners_cap && owners_grow(p) != 0) {
        return RIFT_ERR_NOMEM;
    }
    size_t i = slot_of(p, seq);
    while (p->owners[i].seq) {
        i = (i + 1) & (p->owners_cap - 1);
    }
    p->owners[i] = (owner_slot){seq, m};
    p->owners_used++;
    return 0;
}

/* owner_take removes |seq| and returns its member (NO_MEMBER if none). */
static uint32_t owner_take(rift_push *p, uint64_t seq) {
    owner_slot *o = owner_find(p, seq);
    if (!o) {
        return NO_MEMBER;
    }
    uint32_t m = o->member;
    size_t mask = p->owners_cap - 1;
    size_t hole = (size_t)(o - p->owners);
    for (size_t i = (hole + 1) & mask; p->owners[i].seq; i = (i + 1) & mask) {
        size_t home = slot_of(p, p->owners[i].seq);
        /* Move the entry back when its home is not in (hole, i]. */
        bool between =
            hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!between) {
            p->owners[hole] = p->owners[i];
            hole = i;
        }
    }
    p->owners[hole] = (owner_slot){0, 0};
    p->owners_used--;
    return m;
}

/* ---- Members ---- */

static uint32_t member_index(const rift_push *p, const void *ud) {
    for (size_t i = 0; i < p->nmembers; i++) {
        if (p->members[i].ud == ud) {
            return (uint32_t)i;
        }
    }
    return NO_MEMBER;
}

/* best_member: fewest pending, among those with room unless |forced|. */
static uint32_t best_member(const rift_push *p, bool forced) {
    uint32_t best = NO_MEMBER;
    for (size_t i = 0; i < p->nmembers; i++) {
        const member *m = &p->members[i];
        if (!forced && m->pending >= m->max_in_flight) {
            continue;
        }
        if (best == NO_MEMBER || m->pending < p->members[best].pending) {
            best = (uint32_t)i;
        }
    }
    return best;
}

static uint64_t room(const rift_push *p) {
    uint64_t r = 0;
    for (size_t i = 0; i < p->nmembers; i++) {
        const member *m = &p->members[i];
        if (m->pending < m->max_in_flight) {
            r += m->max_in_flight - m->pending;
        }
    }
    return r;
}

/* ---- Deadlines ---- */

static void due_push(rift_push *p, uint64_t at) {
    if (p->due_count == DUE_SLOTS) {
        return; /* the newest slot is earlier: it stands for this batch */
    }
    p->due[(p->due_head + p->due_count) % DUE_SLOTS] = at;
    p->due_count++;
}

static bool due_expired(const rift_push *p, uint64_t now_ms) {
    return p->due_count && p->due[p->due_head] <= now_ms;
}

static void due_pop_expired(rift_push *p, uint64_t now_ms) {
    while (due_expired(p, now_ms)) {
        p->due_head = (p->due_head + 1) % DUE_SLOTS;
        p->due_count--;
    }
}

/* ---- API ---- */

int rift_push_new(rift_push **pp, const rift_push_settings *s,
                  rift_error *err) {
    *pp = NULL;
    if (!s || !s->consumer || !s->deliver) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "push: consumer and deliver are required");
    }
    rift_consumer_info info;
    int rc = rift_consumer_get_info(s->consumer, &info, err);
    if (rc != 0) {
        return rc;
    }
    rift_push *p = rift_calloc(s->mem, 1, sizeof *p);
    if (p) {
        p->owners_cap = 64;
        p->owners = rift_calloc(s->mem, p->owners_cap, sizeof *p->owners);
    }
    if (!p || !p->owners) {
        rift_free(s->mem, p);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    p->s = *s;
    p->ack_wait_ms = info.config.ack_wait_ms;
    *pp = p;
    return 0;
}

void rift_push_del(rift_push *p) {
    if (!p) {
        return;
    }
    rift_free(p->s.mem, p->members);
    rift_free(p->s.mem, p->owners);
    rift_free(p->s.mem, p);
}

int rift_push_add_member(rift_push *p, void *ud, uint32_t max_in_flight,
                         rift_error *err) {
    if (p->nmembers == p->members_cap) {
        size_t cap = p->members_cap ? p->members_cap * 2 : 2;
        member *m = rift_realloc(p->s.mem, p->members, cap * sizeof *m);
        if (!m) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        p->members = m;
        p->members_cap = cap;
    }
    uint32_t mif = max_in_flight == 0 ? 1 : max_in_flight;
    p->members[p->nmembers++] =
        (member){ud, mif > MAX_IN_FLIGHT ? MAX_IN_FLIGHT : mif, 0};
    return 0;
}

void rift_push_remove_member(rift_push *p, void *ud) {
    uint32_t i = member_index(p, ud);
    if (i == NO_MEMBER) {
        return;
    }
    uint32_t last = (uint32_t)(p->nmembers - 1);
    /* Re-point the owners: the removed member's become unowned (and due
     * at once when others remain), the last member's move to slot i. */
    for (size_t k = 0; k < p->owners_cap; k++) {
        owner_slot *o = &p->owners[k];
        if (o->seq && o->member == i) {
            o->member = NO_MEMBER;
            if (p->nmembers > 1 &&
                rift_consumer_expire(p->s.consumer, o->seq, NULL) == 0) {
                p->expired++;
            }
        } else if (o->seq && o->member == last) {
            o->member = i;
        }
    }
    p->members[i] = p->members[last];
    p->nmembers--;
}

int rift_push_set_ack_wait(rift_push *p, uint64_t ack_wait_ms,
                           rift_error *err) {
    int rc = rift_consumer_set_ack_wait(p->s.consumer, ack_wait_ms, err);
    if (rc == 0) {
        p->ack_wait_ms = ack_wait_ms;
    }
    return rc;
}

size_t rift_push_member_count(const rift_push *p) {
    return p->nmembers;
}

uint32_t rift_push_member_pending(const rift_push *p, const void *ud) {
    uint32_t i = member_index(p, ud);
    return i == NO_MEMBER ? 0 : p->members[i].pending;
}

static void release_owner(rift_push *p, uint64_t seq) {
    uint32_t m = owner_take(p, seq);
    if (m != NO_MEMBER && m < p->nmembers && p->members[m].pending) {
        p->members[m].pending--;
    }
}

int rift_push_ack(rift_push *p, uint64_t seq, rift_error *err) {
    int rc = rift_consumer_ack_async(p->s.consumer, seq, NULL, NULL, NULL, err);
    if (rc < 0) {
        return rc;
    }
    release_owner(p, seq);
    return 0;
}

/* assign picks the member for one fetched delivery and records it. */
static uint32_t assign(rift_push *p, const rift_delivery *d) {
    uint32_t m = NO_MEMBER;
    if (d->delivery_count > 1) {
        uint32_t prev = owner_take(p, d->record.sequence);
        if (prev != NO_MEMBER && prev < p->nmembers) {
            p->members[prev].pending--;
            m = prev;
        }
        if (m == NO_MEMBER || p->nmembers > 1) {
            m = best_member(p, true); /* forced past max-in-flight */
        }
    } else {
        m = best_member(p, false);
        if (m == NO_MEMBER) {
            m = best_member(p, true);
        }
    }
    if (m != NO_MEMBER && owner_set(p, d->record.sequence, m) == 0) {
        p->members[m].pending++;
    }
    return m;
}

/* pump_plan: how many to ask for, and whether only due deliveries may
 * go. With every member full only expired deliveries may go (the
 * consumer hands those out first; they are forced past max-in-flight).
 * A leaving member's go alone (the consumer hands them out first too):
 * the room they take is only known once they are assigned. Full members
 * take only what is due: the consumer's ack deadline may be a little
 * later than ours (its clock is read at the fetch, ours before), and then
 * a plain fetch would hand out a new record instead, forced past
 * max_in_flight. */
static size_t pump_plan(rift_push *p, bool *due_only) {
    uint64_t r = room(p);
    size_t limit =
        r == 0 ? DUE_BATCH : (size_t)RIFT_MIN(r, (uint64_t)MAX_IN_FLIGHT);
    if (p->expired) {
        limit = RIFT_MIN(p->expired, (size_t)MAX_IN_FLIGHT);
    }
    *due_only = r == 0;
    return limit;
}

/* pump_settle: the bookkeeping of one fetched batch at |now_ms|: members
 * assigned (and, when |deliver|, handed their records), deadlines. A
 * fetch cut short by its limit or |max_bytes| may have left deliveries
 * due: their deadline stays, so the owner pumps again at once. */
static void pump_settle(rift_push *p, uint64_t now_ms, size_t limit,
                        uint64_t max_bytes, rift_batch *b, bool deliver) {
    p->expired -= RIFT_MIN(p->expired, b->count);
    uint64_t bytes = 0;
    for (size_t i = 0; i < b->count; i++) {
        bytes += b->items[i].record.payload_len;
    }
    if (b->count < limit && bytes < max_bytes) {
        due_pop_expired(p, now_ms);
    }
    for (size_t i = 0; i < b->count; i++) {
        uint32_t m = assign(p, &b->items[i]);
        if (deliver && m != NO_MEMBER) {
            (void)p->s.deliver(p->s.ctx, p->members[m].ud, &b->items[i]);
        }
    }
    if (b->count) {
        due_push(p, now_ms + p->ack_wait_ms);
    } else if (p->owners_used && p->due_count == 0) {
        /* Pending records whose deadline was folded into an earlier slot. */
        due_push(p, now_ms + p->ack_wait_ms);
    }
}

rift_ssize rift_push_pump(rift_push *p, uint64_t now_ms, rift_error *err) {
    if (p->nmembers == 0 || !rift_push_wants_pump(p, now_ms)) {
        return 0;
    }
    bool due_only;
    size_t limit = pump_plan(p, &due_only);
    rift_batch b = {0};
    int rc = due_only ? rift_consumer_fetch_due(p->s.consumer, limit, &b, err)
                      : rift_consumer_fetch(p->s.consumer, limit, &b, err);
    if (rc < 0) {
        return rc;
    }
    pump_settle(p, now_ms, limit, UINT64_MAX, &b, true);
    size_t n = b.count;
    rift_batch_free(&b);
    return (rift_ssize)n;
}

rift_ssize rift_push_pump_async(rift_push *p, uint64_t now_ms,
                                uint64_t max_bytes, rift_batch *out,
                                bool *completed, rift_stream_done_cb cb,
                                void *user_data, rift_error *err) {
    *out = (rift_batch){0};
    *completed = true;
    if (p->nmembers == 0 || !rift_push_wants_pump(p, now_ms)) {
        return 0;
    }
    bool due_only;
    size_t limit = pump_plan(p, &due_only);
    int rc = rift_consumer_fetch_push_async(p->s.consumer, limit, max_bytes,
                                            due_only, out, completed, cb,
                                            user_data, err);
    if (rc < 0) {
        return rc;
    }
    /* Assigned now, so the next pump's room is right; handed out by
     * rift_push_deliver once the fetch is durable. */
    pump_settle(p, now_ms, limit, max_bytes, out, false);
    return (rift_ssize)out->count;
}

void rift_push_deliver(rift_push *p, const rift_batch *b) {
    for (size_t i = 0; i < b->count; i++) {
        const owner_slot *o = owner_find(p, b->items[i].record.sequence);
        if (o != NULL && o->member < p->nmembers) {
            (void)p->s.deliver(p->s.ctx, p->members[o->member].ud,
                               &b->items[i]);
        }
    }
}

bool rift_push_wants_pump(const rift_push *p, uint64_t now_ms) {
    return p->nmembers &&
           (room(p) > 0 || p->expired > 0 || due_expired(p, now_ms));
}

void rift_push_adopt_pending(rift_push *p, uint64_t now_ms) {
    if (p->due_count == 0) {
        due_push(p, now_ms + p->ack_wait_ms);
    }
}

uint64_t rift_push_next_due_ms(const rift_push *p) {
    return p->due_count ? p->due[p->due_head] : UINT64_MAX;
}
