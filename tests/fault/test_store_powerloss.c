/*
 * test_store_powerloss.c — power cuts, not only kill -9 (fault tests of
 * the store layer). A stream runs on the crash-simulating file system of
 * tests/support/crash_vfs.h: a seeded workload (blocking and pipelined
 * publishes, fetches and acks of two consumers, checkpoints, clean
 * reopens, with segments small enough that they roll and retention
 * deletes them whole) runs until the power is cut at a random mutating
 * file operation; the file system then keeps a random prefix of each
 * file's unsynced writes (the last one possibly torn at or inside a
 * sector) and of each directory's unsynced entry changes, and the next
 * round recovers from that and checks it against what was acknowledged:
 *
 *   - a synced stream has every STORED record, byte for byte, and every
 *     acknowledged ack and delivery (acked: never delivered again;
 *     delivered and not acked: still pending);
 *   - an unsynced one has a prefix of each round's acknowledged records,
 *     and everything acknowledged before a checkpoint or clean close;
 *   - nothing partial or invented shows (every record present is intact
 *     and is a publish that was made, in publish order).
 *
 * Some cuts land in the recovery itself. A quarter of the cuts are harsh
 * (any subset of the writes survives; torn regions read as zeros or
 * garbage): such damage in a complete record cannot be told from
 * corruption (docs/protocol-v1.md §4.6 makes a complete record with a
 * bad checksum fatal), so the open may then refuse with a storage error;
 * `rift store repair` must bring it back with nothing acknowledged lost.
 * A refusal after a gentle cut is a failure.
 *
 * RIFT_CRASH_CUTS=N sets the cuts per campaign (default 300) and
 * RIFT_CRASH_SEED=S replays a campaign (the seed is printed); with
 * RIFT_CRASH_ASYNC=0 the workload is single-threaded on the caller's
 * side, so a seed replays the same cuts exactly.
 */
#include "test.h"

#include "crash_vfs.h"
#include "rift/stream.h"
#include "common/common.h"
#include "store/consumer_state.h"
#include "store/offline.h"
#include "store/retained.h"
#include "test_rng.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIR_PATH     "/pl/stream"
#define MAX_MESSAGES 120
#define NCONS        2
#define DEFAULT_CUTS 300

/* CHECK_MSG without the early return (usable in any function). */
#define EXPECT(cond, ...)                                                      \
 do {                                                                          \
  if (!(cond)) {                                                               \
   rift_test_fail(__FILE__, __LINE__, __VA_ARGS__);                            \
  }                                                                            \
 } while (0)

/* Durability of a fact the test knows: 0 none, 1 acknowledged but not
 * (yet) guaranteed to survive a power cut, 2 guaranteed. */
enum {
    LV_NONE = 0,
    LV_VOLATILE = 1,
    LV_DURABLE = 2
};

typedef struct seq_truth {
    uint64_t id;  /* the publish acknowledged at this sequence */
    uint8_t lv;   /* of that publish */
    uint8_t done; /* per consumer: must never be delivered again */
    uint8_t pend; /* per consumer bit pair: must be delivered again */
} seq_truth;

typedef struct acked_pub {
    uint64_t id;
    uint64_t seq;
} acked_pub;

typedef struct campaign {
    bool sync;
    bool async_ok;
    uint64_t seed;
    rng r;
    crash_vfs *fs;
    crash_stats cs;
    crash_policy last_policy;
    bool last_harsh;
    bool harsh_damage; /* a harsh cut's damage may still be on disk */

    seq_truth *t; /* indexed by sequence */
    size_t tcap;
    uint64_t max_seq; /* highest sequence acknowledged or seen */
    uint64_t scan_lo; /* sequences below were evicted at a check */
    uint64_t next_id; /* next publish id (ids start at 1) */
    /* Publishes since the last check that were not acknowledged (their
     * records may or may not have survived): id and sequence (0 when
     * the call failed before telling). */
    acked_pub *unacked;
    size_t nunacked;
    size_t unacked_cap;
    /* This round's acknowledged publishes, in order (prefix check). */
    acked_pub *round_pubs;
    size_t nround;
    size_t round_cap;
    /* Facts at LV_VOLATILE, raised to LV_DURABLE by a checkpoint. */
    uint64_t *vol;
    size_t nvol;
    size_t vol_cap;
    uint8_t cons_exists[NCONS];
    uint64_t inflight_ack[NCONS]; /* an ack the cut may have cut */

    /* Outcomes. */
    int rounds;
    int recovery_cuts;
    int refused;
    uint64_t checked_records;
    uint64_t checked_acks;
    uint64_t checked_pending;
    uint64_t stored;
    uint64_t acks;
    uint64_t lost_unsynced; /* acknowledged unsynced records lost */
    rift_error err;         /* of the last failed operation */
} campaign;

static const char *cons_name[NCONS] = {"alpha", "beta"};

/* ---- Records derived from their publish id ---- */

static size_t payload_len_of(uint64_t id) {
    /* 8..1807 bytes: records from a few per sector to several sectors. */
    return 8 + (size_t)((id * 2654435761u) % 1800);
}

static void make_subject(uint64_t id, char *out, size_t cap) {
    snprintf(out, cap, "pl.s%u", (unsigned)(id % 7));
}

static void make_payload(uint64_t id, uint8_t *out, size_t len) {
    memcpy(out, &id, 8);
    for (size_t i = 8; i < len; i++) {
        out[i] = (uint8_t)(id * 31 + i * 7 + (i >> 8));
    }
}

/* The publish id of |r| when it is exactly what that publish wrote. */
static bool record_id(const rift_record *r, uint64_t *id) {
    if (r->payload_len < 8) {
        return false;
    }
    memcpy(id, r->payload, 8);
    uint8_t want[2048];
    size_t len = payload_len_of(*id);
    char subj[32];
    make_subject(*id, subj, sizeof(subj));
    if (len != r->payload_len || strcmp(subj, r->subject) != 0 ||
        r->reply_len != 0) {
        return false;
    }
    make_payload(*id, want, len);
    return memcmp(want, r->payload, len) == 0;
}

/* ---- Truth bookkeeping ---- */

static seq_truth *truth_at(campaign *c, uint64_t seq) {
    if (seq >= c->tcap) {
        size_t n = c->tcap ? c->tcap : 4096;
        while (n <= seq) {
            n *= 2;
        }
        c->t = realloc(c->t, n * sizeof(seq_truth));
        memset(c->t + c->tcap, 0, (n - c->tcap) * sizeof(seq_truth));
        c->tcap = n;
    }
    if (seq > c->max_seq) {
        c->max_seq = seq;
    }
    return &c->t[seq];
}

static uint8_t fact_level(const campaign *c) {
    return c->sync ? LV_DURABLE : LV_VOLATILE;
}

/* Remembers |seq| for a later raise (kind 0 record, 1 + k consumer k). */
static void note_volatile(campaign *c, uint64_t seq) {
    if (c->sync) {
        return;
    }
    if (c->nvol == c->vol_cap) {
        c->vol_cap = c->vol_cap ? c->vol_cap * 2 : 256;
        c->vol = realloc(c->vol, c->vol_cap * sizeof(uint64_t));
    }
    c->vol[c->nvol++] = seq;
}

static int get2(uint8_t v, int k) {
    return (v >> (2 * k)) & 3;
}

static uint8_t set2(uint8_t v, int k, int lv) {
    return (uint8_t)((v & ~(3u << (2 * k))) | ((unsigned)lv << (2 * k)));
}

/* A checkpoint or clean close succeeded: what was acknowledged is on
 * disk. */
static void raise_all(campaign *c) {
    for (size_t i = 0; i < c->nvol; i++) {
        seq_truth *t = truth_at(c, c->vol[i]);
        if (t->lv == LV_VOLATILE) {
            t->lv = LV_DURABLE;
        }
        for (int k = 0; k < NCONS; k++) {
            if (get2(t->done, k) == LV_VOLATILE) {
                t->done = set2(t->done, k, LV_DURABLE);
            }
            if (get2(t->pend, k) == LV_VOLATILE) {
                t->pend = set2(t->pend, k, LV_DURABLE);
            }
        }
    }
    c->nvol = 0;
    for (int k = 0; k < NCONS; k++) {
        if (c->cons_exists[k] == LV_VOLATILE) {
            c->cons_exists[k] = LV_DURABLE;
        }
    }
}

static void not_stored(campaign *c, uint64_t id, uint64_t seq) {
    if (c->nunacked == c->unacked_cap) {
        c->unacked_cap = c->unacked_cap ? c->unacked_cap * 2 : 64;
        c->unacked = realloc(c->unacked, c->unacked_cap * sizeof(acked_pub));
    }
    c->unacked[c->nunacked++] = (acked_pub){id, seq};
    if (seq != 0) {
        (void)truth_at(c, seq); /* it may have caused evictions */
    }
}

static void stored(campaign *c, uint64_t id, uint64_t seq) {
    seq_truth *t = truth_at(c, seq);
    t->id = id;
    t->lv = fact_level(c);
    /* A reused sequence (a lost unsynced tail) starts afresh. */
    t->done = 0;
    t->pend = 0;
    note_volatile(c, seq);
    if (c->nround == c->round_cap) {
        c->round_cap = c->round_cap ? c->round_cap * 2 : 256;
        c->round_pubs =
            realloc(c->round_pubs, c->round_cap * sizeof(acked_pub));
    }
    c->round_pubs[c->nround++] = (acked_pub){id, seq};
    c->stored++;
}

/* ---- The workload ---- */

typedef struct pub_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
    int failed;
    int ok[16];
} pub_wait;

typedef struct pub_slot {
    pub_wait *w;
    int idx;
} pub_slot;

static void pub_done(void *ud, int status, const rift_error *err) {
    (void)err;
    pub_slot *s = ud;
    pthread_mutex_lock(&s->w->mu);
    s->w->ok[s->idx] = status == 0;
    s->w->failed |= status != 0;
    s->w->left--;
    pthread_cond_broadcast(&s->w->cv);
    pthread_mutex_unlock(&s->w->mu);
}

static bool do_publish(campaign *c, rift_stream *st) {
    uint64_t id = c->next_id++;
    char subj[32];
    uint8_t payload[2048];
    make_subject(id, subj, sizeof(subj));
    size_t len = payload_len_of(id);
    make_payload(id, payload, len);
    rift_stored out;
    if (rift_stream_publish(st, subj, strlen(subj), NULL, 0, payload, len, &out,
                            &c->err) != 0) {
        not_stored(c, id, 0);
        return false;
    }
    stored(c, id, out.sequence);
    return true;
}

/* Up to 16 publishes in flight at once: the writer groups them, and
 * synced ones overlap their syncs (pipelined group commit). */
static bool do_publish_batch(campaign *c, rift_stream *st) {
    int n = 2 + (int)below(&c->r, 15);
    pub_wait w = {.left = n};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pub_slot slots[16];
    uint64_t ids[16], seqs[16];
    int submitted = 0;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        uint64_t id = c->next_id++;
        char subj[32];
        uint8_t payload[2048];
        make_subject(id, subj, sizeof(subj));
        size_t len = payload_len_of(id);
        make_payload(id, payload, len);
        slots[i] = (pub_slot){&w, i};
        rift_stored out;
        bool completed = false;
        int rc = rift_stream_publish_async(st, subj, strlen(subj), NULL, 0,
                                           payload, len, &out, &completed,
                                           pub_done, &slots[i], &c->err);
        if (rc == 0 && completed) {
            pub_done(&slots[i], 0, NULL); /* durable already */
        } else if (rc != 0) {
            not_stored(c, id, 0);
            ok = false;
            break;
        }
        ids[i] = id;
        seqs[i] = out.sequence;
        submitted++;
    }
    pthread_mutex_lock(&w.mu);
    w.left -= n - submitted;
    while (w.left > 0) {
        pthread_cond_wait(&w.cv, &w.mu);
    }
    pthread_mutex_unlock(&w.mu);
    for (int i = 0; i < submitted; i++) {
        if (w.ok[i]) {
            stored(c, ids[i], seqs[i]);
        } else {
            not_stored(c, ids[i], seqs[i]);
        }
    }
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    return ok && !w.failed;
}

static bool do_fetch(campaign *c, rift_consumer *h, int k) {
    rift_batch b = {0};
    if (rift_consumer_fetch(h, 1 + below(&c->r, 16), &b, &c->err) != 0) {
        return false;
    }
    for (size_t i = 0; i < b.count; i++) {
        uint64_t q = b.items[i].record.sequence;
        seq_truth *t = truth_at(c, q);
        EXPECT(get2(t->done, k) == LV_NONE,
               "seed %llu: %s got acked sequence %llu again",
               (unsigned long long)c->seed, cons_name[k],
               (unsigned long long)q);
        t->pend = set2(t->pend, k, fact_level(c));
        note_volatile(c, q);
    }
    rift_batch_free(&b);
    return true;
}

/* Acks one sequence the test knows to be pending for consumer |k|. */
static bool do_ack(campaign *c, rift_stream *st, rift_consumer *h, int k) {
    pthread_mutex_lock(&st->lock);
    uint64_t lo = st->first_seq;
    pthread_mutex_unlock(&st->lock);
    uint64_t n = c->max_seq >= lo ? c->max_seq - lo + 1 : 0;
    if (n == 0) {
        return true;
    }
    uint64_t start = lo + below(&c->r, (uint32_t)n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t q = lo + (start - lo + i) % n;
        seq_truth *t = truth_at(c, q);
        if (get2(t->pend, k) == LV_NONE) {
            continue;
        }
        c->inflight_ack[k] = q;
        rift_error err = {0};
        int rc = rift_consumer_ack(h, q, &err);
        c->err = err;
        if (rc == RIFT_ERR_INVALID_ACK) {
            /* Evicted by retention meanwhile. */
            pthread_mutex_lock(&st->lock);
            uint64_t now_first = st->first_seq;
            pthread_mutex_unlock(&st->lock);
            EXPECT(q < now_first, "seed %llu: ack %llu: %s",
                   (unsigned long long)c->seed, (unsigned long long)q,
                   err.text);
            t->pend = set2(t->pend, k, LV_NONE);
            c->inflight_ack[k] = 0;
            return true;
        }
        if (rc != 0) {
            return false;
        }
        c->inflight_ack[k] = 0;
        t->pend = set2(t->pend, k, LV_NONE);
        t->done = set2(t->done, k, fact_level(c));
        note_volatile(c, q);
        c->acks++;
        return true;
    }
    return true;
}

/* ---- Opening, checking ---- */

static void settings_for(campaign *c, rift_stream_settings *s) {
    rift_stream_settings_default(s);
    s->storage_path = DIR_PATH;
    s->sync_on_write = c->sync;
    s->segment_bytes = 4096 * (1 + c->seed % 3);
    s->cache_bytes = 4096;
    s->state_snapshot_bytes = 2048;
    s->max_messages = MAX_MESSAGES;
    s->max_consumers = 8;
    s->vfs = crash_vfs_table(c->fs);
}

static bool open_consumers(campaign *c, rift_stream *st,
                           rift_consumer *h[NCONS]) {
    for (int k = 0; k < NCONS; k++) {
        h[k] = NULL;
    }
    for (int k = 0; k < NCONS; k++) {
        rift_consumer_config cfg;
        rift_consumer_config_default(&cfg);
        cfg.max_ack_pending = 1000;
        cfg.ack_wait_ms = 3600000;
        bool existed =
            rift_stream_consumer_get(st, cons_name[k], strlen(cons_name[k]),
                                     &h[k], NULL) == 0;
        if (!existed &&
            rift_stream_consumer_open(st, cons_name[k], strlen(cons_name[k]),
                                      &cfg, &h[k], NULL) != 0) {
            return false;
        }
        if (!existed) {
            c->cons_exists[k] = fact_level(c);
        }
    }
    return true;
}

static void close_consumers(rift_consumer *h[NCONS]) {
    for (int k = 0; k < NCONS; k++) {
        if (h[k] != NULL) {
            rift_consumer_close(h[k]);
            h[k] = NULL;
        }
    }
}

/* Whether |id| at |seq| may be a publish that was not acknowledged. */
static bool unacked_publish(const campaign *c, uint64_t id, uint64_t seq) {
    for (size_t i = 0; i < c->nunacked; i++) {
        if (c->unacked[i].id == id &&
            (c->unacked[i].seq == 0 || c->unacked[i].seq == seq)) {
            return true;
        }
    }
    return false;
}

/* Prints the recovered index (after a failure). */
static void dump_stream(rift_stream *st) {
    pthread_mutex_lock(&st->lock);
    fprintf(stderr, "  first %llu last %llu entries %zu holes:",
            (unsigned long long)st->first_seq, (unsigned long long)st->last_seq,
            st->ents.len);
    for (size_t i = 0; i < st->holes.len; i++) {
        const rift_hole *h = rift_ring_at(&st->holes, i);
        fprintf(stderr, " [%llu, %llu)", (unsigned long long)h->from,
                (unsigned long long)h->to);
    }
    fprintf(stderr, "\n  segments:");
    for (size_t i = 0; i < st->segs.len; i++) {
        const rift_seg *g = *(rift_seg **)rift_ring_at(&st->segs, i);
        fprintf(stderr, " %llu..%llu/%llu", (unsigned long long)g->base,
                (unsigned long long)g->end, (unsigned long long)g->size);
    }
    fprintf(stderr, "\n");
    pthread_mutex_unlock(&st->lock);
}

/*
 * Checks the recovered stream against the truth, then makes the truth
 * what was recovered (it is all on disk now). A failed CHECK returns
 * early.
 */
static void check_recovered(campaign *c, rift_stream *st) {
    unsigned long long seed = (unsigned long long)c->seed;
    pthread_mutex_lock(&st->lock);
    uint64_t first = st->first_seq;
    uint64_t last = rift_stream_newest(st);
    pthread_mutex_unlock(&st->lock);
    size_t span = last >= first ? (size_t)(last - first + 1) : 0;
    uint64_t *present = calloc(span + 1, sizeof(uint64_t));

    /* Every record present is intact, was published, and ids rise with
     * sequences (nothing duplicated or reordered). */
    uint64_t prev_id = 0;
    uint64_t seq = first;
    while (span > 0 && seq <= last) {
        rift_batch b = {0};
        rift_error err = {0};
        if (rift_stream_replay(st, seq, 512, &b, &err) != 0) {
            dump_stream(st);
            EXPECT(false, "seed %llu: replay %llu: %s", seed,
                   (unsigned long long)seq, err.text);
            free(present);
            return;
        }
        if (b.count == 0) {
            break;
        }
        for (size_t i = 0; i < b.count; i++) {
            const rift_record *r = &b.items[i].record;
            uint64_t id = 0;
            bool intact = record_id(r, &id);
            const seq_truth *t = truth_at(c, r->sequence);
            /* An acknowledged publish owns its sequence (within a round
             * no sequence is used twice; a reused one was reset). */
            bool known = t->lv != LV_NONE ? t->id == id
                                          : unacked_publish(c, id, r->sequence);
            bool ok = intact && r->sequence >= first && r->sequence <= last &&
                      id > prev_id && known;
            if (!ok) {
                EXPECT(false,
                       "seed %llu round %d: record %llu (id %llu, "
                       "intact %d) was not published there (truth id "
                       "%llu lv %d)",
                       seed, c->rounds, (unsigned long long)r->sequence,
                       (unsigned long long)id, intact,
                       (unsigned long long)t->id, t->lv);
                rift_batch_free(&b);
                free(present);
                return;
            }
            prev_id = id;
            present[r->sequence - first] = id;
            c->checked_records++;
            seq = r->sequence + 1;
        }
        rift_batch_free(&b);
    }

    /* Every guaranteed record is there, unless retention may have
     * evicted it: the newest MAX_MESSAGES records are retained. A synced
     * stream writes the eviction (FIRST_SEQ) after the records that
     * caused it, so they count from the newest record recovered; an
     * unsynced one may have evicted for records the cut then lost. */
    uint64_t horizon = c->sync ? last : RIFT_MAX(last, c->max_seq + 1);
    uint64_t lo = RIFT_MIN(c->scan_lo, first);
    for (uint64_t s = lo; s <= c->max_seq && s < c->tcap; s++) {
        const seq_truth *t = &c->t[s];
        if (t->lv != LV_DURABLE || (s < first && s + MAX_MESSAGES <= horizon)) {
            continue;
        }
        bool here = s >= first && s <= last && present[s - first] == t->id;
        EXPECT(here,
               "seed %llu round %d: %s record %llu (id %llu) lost; "
               "recovered [%llu, %llu]",
               seed, c->rounds, c->sync ? "STORED" : "checkpointed",
               (unsigned long long)s, (unsigned long long)t->id,
               (unsigned long long)first, (unsigned long long)last);
        if (!here) {
            free(present);
            return;
        }
    }

    /* This round's acknowledged records survive as a prefix. */
    bool gap = false;
    for (size_t i = 0; i < c->nround; i++) {
        const acked_pub *p = &c->round_pubs[i];
        if (p->seq < first) {
            continue; /* evicted */
        }
        bool here = p->seq <= last && present[p->seq - first] == p->id;
        EXPECT(!(here && gap),
               "seed %llu round %d: record %llu survived after a lost "
               "one (not a prefix)",
               seed, c->rounds, (unsigned long long)p->seq);
        if (!here) {
            gap = true;
            c->lost_unsynced++;
        }
        if (rift_test_failed()) {
            break;
        }
    }

    /* Consumers: acked stays acked, delivered stays pending. */
    for (int k = 0; k < NCONS; k++) {
        rift_consumer *h = NULL;
        if (rift_stream_consumer_get(st, cons_name[k], strlen(cons_name[k]), &h,
                                     NULL) != 0) {
            EXPECT(c->cons_exists[k] != LV_DURABLE,
                   "seed %llu round %d: consumer %s lost", seed, c->rounds,
                   cons_name[k]);
            c->cons_exists[k] = LV_NONE;
            for (uint64_t s = first; s <= c->max_seq && s < c->tcap; s++) {
                c->t[s].done = set2(c->t[s].done, k, LV_NONE);
                c->t[s].pend = set2(c->t[s].pend, k, LV_NONE);
            }
            continue;
        }
        pthread_mutex_lock(&st->lock);
        for (uint64_t s = first; s <= last && !rift_test_failed(); s++) {
            seq_truth *t = truth_at(c, s);
            bool pending = rift_pend_find(h, s) != NULL;
            bool past = s < h->next_seq;
            if (present[s - first] != 0 && s != c->inflight_ack[k]) {
                if (get2(t->done, k) == LV_DURABLE) {
                    EXPECT(past && !pending,
                           "seed %llu round %d: %s: acked %llu would be "
                           "delivered again (cursor %llu, pending %d)",
                           seed, c->rounds, cons_name[k], (unsigned long long)s,
                           (unsigned long long)h->next_seq, pending);
                    c->checked_acks++;
                }
                if (get2(t->pend, k) == LV_DURABLE) {
                    EXPECT(pending,
                           "seed %llu round %d: %s: delivered %llu is no "
                           "longer pending (cursor %llu)",
                           seed, c->rounds, cons_name[k], (unsigned long long)s,
                           (unsigned long long)h->next_seq);
                    c->checked_pending++;
                }
            }
            t->done = set2(t->done, k, past && !pending ? LV_DURABLE : 0);
            t->pend = set2(t->pend, k, pending ? LV_DURABLE : 0);
        }
        for (uint64_t s = last + 1; s <= c->max_seq && s < c->tcap; s++) {
            c->t[s].done = set2(c->t[s].done, k, LV_NONE);
            c->t[s].pend = set2(c->t[s].pend, k, LV_NONE);
        }
        pthread_mutex_unlock(&st->lock);
        c->cons_exists[k] = LV_DURABLE;
        rift_consumer_close(h);
    }

    /* The recovered state is the truth from now on. */
    for (uint64_t s = lo; s <= c->max_seq && s < c->tcap; s++) {
        seq_truth *t = &c->t[s];
        bool here = s >= first && s <= last && present[s - first] != 0;
        t->lv = here ? LV_DURABLE : LV_NONE;
        t->id = here ? present[s - first] : 0;
    }
    c->scan_lo = first;
    c->nround = 0;
    c->nvol = 0;
    c->nunacked = 0;
    for (int k = 0; k < NCONS; k++) {
        c->inflight_ack[k] = 0;
    }
    free(present);
}

static int dump_entry(const char *name, void *arg) {
    const rift_vfs *v = arg;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", DIR_PATH, name);
    int fd = v->open(v->user_data, path, O_RDONLY, 0);
    uint64_t size = 0;
    uint8_t head[48] = {0};
    if (fd >= 0) {
        v->fsize(v->user_data, fd, &size);
        v->pread(v->user_data, fd, head, sizeof(head), 0);
        v->close(v->user_data, fd);
    }
    fprintf(stderr, "    %s %llu bytes:", name, (unsigned long long)size);
    for (size_t i = 0; i < sizeof(head); i++) {
        fprintf(stderr, " %02x", head[i]);
    }
    fprintf(stderr, "\n");
    return 0;
}

/* Lists the stream directory (after a failure). */
static void dump_dir(campaign *c) {
    const rift_vfs *v = crash_vfs_table(c->fs);
    fprintf(stderr, "  %s after the cut:\n", DIR_PATH);
    v->list(v->user_data, DIR_PATH, dump_entry, (void *)v);
}

/* Opens the stream after a cut; repairs when a harsh cut left damage
 * that looks like corruption. NULL when the power failed meanwhile. */
static rift_stream *reopen(campaign *c) {
    rift_stream_settings s;
    settings_for(c, &s);
    rift_stream *st = NULL;
    rift_error err = {0};
    int rc = rift_stream_new(&st, &s, &err);
    if (rc != 0 && !crash_vfs_is_off(c->fs)) {
        EXPECT(c->harsh_damage && rc == RIFT_ERR_STORAGE,
               "seed %llu round %d: open after a %s cut: %s",
               (unsigned long long)c->seed, c->rounds,
               c->harsh_damage ? "harsh" : "gentle", err.text);
        if (rift_test_failed()) {
            dump_dir(c);
            return NULL;
        }
        c->refused++;
        rift_store_report rep;
        rc = rift_store_offline(DIR_PATH, &rep, RIFT_OPEN_REPAIR, s.vfs, &err);
        EXPECT(rc == 0 || crash_vfs_is_off(c->fs),
               "seed %llu round %d: repair: %s", (unsigned long long)c->seed,
               c->rounds, err.text);
        if (rift_test_failed()) {
            dump_dir(c);
        }
        if (rc == 0) {
            rc = rift_stream_new(&st, &s, &err);
            EXPECT(rc == 0 || crash_vfs_is_off(c->fs),
                   "seed %llu round %d: open after repair: %s",
                   (unsigned long long)c->seed, c->rounds, err.text);
        }
    }
    if (rc == 0 && crash_vfs_is_off(c->fs)) {
        /* The cut came during recovery. */
        rift_stream_del(st);
        return NULL;
    }
    if (rc == 0) {
        c->harsh_damage = false;
    }
    return rc == 0 ? st : NULL;
}

/* Cuts the power and brings the machine back with what survived. */
static void cut(campaign *c) {
    crash_vfs_power_off(c->fs);
    c->last_harsh = below(&c->r, 4) == 0;
    c->harsh_damage |= c->last_harsh;
    c->last_policy.subset = c->last_harsh && below(&c->r, 2) == 0;
    c->last_policy.fill_torn = c->last_harsh && !c->last_policy.subset
                                   ? true
                                   : c->last_harsh && below(&c->r, 2) == 0;
    crash_vfs_restart(c->fs, rnd(&c->r), &c->last_policy, &c->cs);
}

static void one_round(campaign *c) {
    c->rounds++;
    crash_vfs_set_now(c->fs, 1700000000000ull + (uint64_t)c->rounds * 1000);
    bool early = below(&c->r, 10) == 0;
    if (early) {
        /* The cut may come during recovery's own writes. */
        crash_vfs_arm(c->fs, 1 + below(&c->r, 6));
    }
    rift_stream *st = reopen(c);
    if (st == NULL) {
        if (!rift_test_failed()) {
            c->recovery_cuts++;
            cut(c);
        }
        return;
    }
    crash_vfs_arm(c->fs, 0);
    check_recovered(c, st);
    if (rift_test_failed()) {
        rift_stream_del(st);
        return;
    }
    rift_consumer *h[NCONS];
    bool alive = open_consumers(c, st, h);
    EXPECT(alive, "seed %llu round %d: consumer open failed",
           (unsigned long long)c->seed, c->rounds);
    crash_vfs_arm(c->fs, 1 + below(&c->r, 160));
    int ops = 20 + (int)below(&c->r, 200);
    for (int i = 0; alive && i < ops && !rift_test_failed(); i++) {
        uint32_t k = below(&c->r, 100);
        int ck = (int)below(&c->r, NCONS);
        if (k < 45) {
            alive = do_publish(c, st);
        } else if (k < 55) {
            alive = c->async_ok ? do_publish_batch(c, st) : do_publish(c, st);
        } else if (k < 75) {
            alive = do_fetch(c, h[ck], ck);
        } else if (k < 95) {
            for (uint32_t n = 1 + below(&c->r, 4); alive && n > 0; n--) {
                alive = do_ack(c, st, h[ck], ck);
            }
        } else if (k < 97) {
            alive = rift_stream_checkpoint(st, &c->err) == 0;
            if (alive) {
                raise_all(c);
            }
        } else {
            /* A clean close leaves everything acknowledged on disk. */
            close_consumers(h);
            rift_stream_del(st);
            st = NULL;
            if (crash_vfs_is_off(c->fs)) {
                alive = false;
                break;
            }
            raise_all(c);
            rift_stream_settings s;
            settings_for(c, &s);
            rift_error err = {0};
            alive = rift_stream_new(&st, &s, &err) == 0;
            EXPECT(alive || crash_vfs_is_off(c->fs),
                   "seed %llu round %d: clean reopen: %s",
                   (unsigned long long)c->seed, c->rounds, err.text);
            alive = alive && open_consumers(c, st, h);
        }
        EXPECT(alive || crash_vfs_is_off(c->fs),
               "seed %llu round %d: operation %u failed with the power on: %s",
               (unsigned long long)c->seed, c->rounds, k, c->err.text);
    }
    crash_vfs_power_off(c->fs);
    close_consumers(h);
    if (st != NULL) {
        rift_stream_del(st);
    }
    cut(c);
}

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : def;
}

static void campaign_run(bool sync) {
    campaign c = {0};
    c.sync = sync;
    c.seed = env_u64("RIFT_CRASH_SEED", 0);
    if (c.seed == 0) {
        c.seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32) ^ sync;
    }
    c.async_ok = env_u64("RIFT_CRASH_ASYNC", 1) != 0;
    int cuts = (int)env_u64("RIFT_CRASH_CUTS", DEFAULT_CUTS);
    c.r.s = c.seed | 1;
    c.fs = crash_vfs_new();
    c.next_id = 1;
    c.scan_lo = 1;
    /* Every cut fails the writes in flight, and each failure is logged. */
    rift_log_level saved = rift_log_get_level();
    rift_log_set_level(RIFT_LOG_OFF);
    fprintf(stderr, "%s: seed %llu (RIFT_CRASH_SEED=%llu replays it)\n",
            sync ? "synced" : "unsynced", (unsigned long long)c.seed,
            (unsigned long long)c.seed);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((int)c.cs.cuts < cuts && !rift_test_failed()) {
        one_round(&c);
    }
    /* The last cut is checked too. */
    if (!rift_test_failed()) {
        rift_stream *st = reopen(&c);
        if (st != NULL) {
            check_recovered(&c, st);
            rift_stream_del(st);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    const crash_stats *s = &c.cs;
    fprintf(stderr,
            "%s: %d rounds, %llu cuts (%llu losing data, %d in recovery), "
            "%llu volatile writes: %llu kept, %llu dropped, %llu torn "
            "(%llu zero/garbage filled); dir changes %llu, %llu lost; "
            "%d opens refused after harsh cuts, repaired; %llu stored, %llu "
            "acks; checked %llu records, %llu acks, %llu pending; %llu "
            "acknowledged unsynced records lost; %.1f s\n",
            sync ? "synced" : "unsynced", c.rounds, (unsigned long long)s->cuts,
            (unsigned long long)s->cuts_losing_data, c.recovery_cuts,
            (unsigned long long)s->volatile_writes, (unsigned long long)s->kept,
            (unsigned long long)s->dropped, (unsigned long long)s->torn,
            (unsigned long long)s->torn_filled, (unsigned long long)s->dir_ops,
            (unsigned long long)s->dir_ops_lost, c.refused,
            (unsigned long long)c.stored, (unsigned long long)c.acks,
            (unsigned long long)c.checked_records,
            (unsigned long long)c.checked_acks,
            (unsigned long long)c.checked_pending,
            (unsigned long long)c.lost_unsynced, secs);
    if (rift_test_failed()) {
        fprintf(stderr, "failed: RIFT_CRASH_SEED=%llu, round %d\n",
                (unsigned long long)c.seed, c.rounds);
    }
    rift_log_set_level(saved);
    crash_vfs_free(c.fs);
    free(c.t);
    free(c.round_pubs);
    free(c.unacked);
    free(c.vol);
}

RIFT_TEST(power_cuts_synced) {
    campaign_run(true);
}

RIFT_TEST(power_cuts_unsynced) {
    campaign_run(false);
}
