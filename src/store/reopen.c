/*
 * reopen.c — getting a file stream going again after a failed write (store
 * layer), without a restart. A failed write or sync poisons the stream
 * (writer.c): the operations of that cycle and every later one fail, but
 * they were already applied in memory. Reopening stops the writer, cuts
 * the files back to what was acknowledged (the partial write, records and
 * state events of failed operations), reads the directory again as an open
 * would — consumers keep their handles — and starts the writer again.
 *
 * It happens by itself at the next operation after a failure (so counts
 * and consumer state are exact again at once, the stream still refusing
 * writes), and, after a lack of space, writes are tried again once a
 * back-off has passed; rift_stream_reopen does both at once, for any
 * failure. docs/storage-format.md "Writing", docs/riftd.md.
 */
#include "store/reopen.h"
#include "store/consumer_state.h"
#include "store/recover.h"
#include "store/retained.h"
#include "store/stage.h"
#include "store/writer.h"

#include <errno.h>
#include <string.h>

/* The back-off between automatic retries after a lack of space. */
#define BACKOFF_MIN_MS 1000u
#define BACKOFF_MAX_MS 30000u

static void reset_ring(rift_ring *r) {
    r->len = 0;
    r->head = 0;
}

/* Drops the records, segments and files of |st| except the directory
 * lock: the state recovery builds again. Under lock, writer stopped. */
static void forget_disk_state(rift_stream *st) {
    const rift_vfs *v = st->vfs;
    while (st->cache.len > 0) {
        rift_srec_unref(st->mem, *(rift_srec **)rift_ring_at(&st->cache, 0));
        rift_ring_pop_front(&st->cache);
    }
    reset_ring(&st->ents);
    reset_ring(&st->holes);
    reset_ring(&st->logged_holes);
    reset_ring(&st->bad);
    reset_ring(&st->wdirty);
    while (st->segs.len > 0) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            v->close(v->user_data, fd);
        }
        rift_seg_free(st, s);
        rift_ring_pop_front(&st->segs);
    }
    if (st->state_fd >= 0) {
        v->close(v->user_data, st->state_fd);
        st->state_fd = -1;
    }
    st->first_seq = 1;
    st->last_seq = 0;
    st->bytes = 0;
    st->cache_first = 1;
    st->cache_used = 0;
    st->front_ts_seq = 0;
    st->marker = 0;
    st->force_roll = false;
    st->repair_floor = 0;
    st->state_dirty = false;
    st->rseg = NULL;
    st->rbuf.len = 0;
}

/* Forgets what was staged since the writer stopped (an info call may
 * have staged retention's unlinks, which must not run against the files
 * read back). Under lock, writer stopped. */
static void drop_staged(rift_stream *st) {
    rift_stage *f = &st->fill;
    for (size_t i = 0; i < f->dead.len; i++) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&f->dead, i);
        int fd = atomic_load(&s->fd);
        if (fd >= 0) {
            st->vfs->close(st->vfs->user_data, fd);
        }
        rift_seg_free(st, s);
    }
    rift_stage_free(f);
    rift_stage_init(f, st->mem);
    f->nops = 0;
    st->fill_kicked = false;
}

/* Gives each consumer that exists in memory and on disk the state on disk,
 * keeping its object (handles point at it); the others go. Under lock. */
static void adopt_consumers(rift_stream *st, rift_consumer **old, size_t nold) {
    for (size_t i = 0; i < st->ncons; i++) {
        rift_consumer *r = st->cons[i];
        rift_consumer *o = NULL;
        for (size_t k = 0; k < nold; k++) {
            if (old[k] != NULL && old[k]->name_len == r->name_len &&
                memcmp(old[k]->name, r->name, r->name_len) == 0) {
                o = old[k];
                old[k] = NULL;
                break;
            }
        }
        if (o == NULL) {
            continue;
        }
        /* Swap what recovery read into the live object; |r| takes the old
         * state away with it. */
        rift_ring pend = o->pending;
        o->pending = r->pending;
        r->pending = pend;
        char *filter = o->filter;
        size_t flen = o->filter_len;
        o->filter = r->filter;
        o->filter_len = r->filter_len;
        r->filter = filter;
        r->filter_len = flen;
        o->live = r->live;
        o->id = r->id;
        o->ack_wait_ms = r->ack_wait_ms;
        o->max_ack_pending = r->max_ack_pending;
        o->start_mode = r->start_mode;
        o->start_arg = r->start_arg;
        o->start_seq = r->start_seq;
        o->next_seq = r->next_seq;
        o->created_gen = 0;
        o->deleted = false;
        st->cons[i] = o;
        rift_consumer_unref_locked(r);
    }
    for (size_t k = 0; k < nold; k++) {
        if (old[k] != NULL) {
            /* Its creation never reached the disk. */
            old[k]->deleted = true;
            rift_consumer_unref_locked(old[k]);
        }
    }
}

/*
 * Cuts the files back to the last acknowledged generation and recovers
 * the directory into |st| again. Under lock, with the writer stopped.
 */
static int read_back(rift_stream *st, rift_error *err) {
    const rift_vfs *v = st->vfs;
    uint64_t good_seq =
        st->cfg.sync_on_write ? st->durable_seq : st->written_seq;
    if (st->state_fd >= 0 && st->state_size != st->state_good) {
        /* Events of failed operations (or part of one). */
        int rc = v->ftruncate(v->user_data, st->state_fd, st->state_good);
        if (rc == 0) {
            rc = v->fdatasync(v->user_data, st->state_fd);
        }
        if (rc != 0) {
            char os[256];
            return rift_error_set(
                err, RIFT_ERR_IO, "messaging I/O: truncate %s: %s",
                RIFT_STATE_FILE, rift_vfs_os_error(rc, os, sizeof(os)));
        }
    }
    rift_consumer **old = st->cons;
    size_t nold = st->ncons;
    st->cons = NULL;
    st->ncons = 0;
    st->cons_cap = 0;
    st->next_cid = 1;
    drop_staged(st);
    forget_disk_state(st);
    st->cutting = true;
    st->cut_after = good_seq;
    int rc = rift_recover(st, err);
    st->cutting = false;
    adopt_consumers(st, old, nold);
    rift_free(st->mem, old);
    if (rc != 0) {
        return rc;
    }
    st->durable_seq = st->last_seq;
    st->written_seq = st->last_seq;
    st->state_good = st->state_size;
    return 0;
}

/* Lets writes be tried again. Under lock. */
static void clear_failure(rift_stream *st) {
    atomic_store(&st->poison, 0);
    atomic_store(&st->poison_gen, 0);
}

/*
 * The whole reopen: stop the writer (it fails what is still staged), read
 * the disk back, start it again. |retry_now| clears the failure at once
 * (an explicit reopen), else only a lack of space is retried, after the
 * back-off. Called with the lock, returns with it.
 */
static int revive_locked(rift_stream *st, bool retry_now, rift_error *err) {
    st->reviving = true;
    pthread_mutex_unlock(&st->lock);
    rift_writer_stop(st);
    pthread_mutex_lock(&st->lock);
    /* Every generation so far is settled; the failed ones stay failed for
     * a waiter that wakes only now. */
    atomic_store(&st->failed_from, st->poison_gen);
    atomic_store(&st->failed_to, st->fill_gen);
    atomic_store(&st->durable_gen, st->fill_gen - 1);
    st->woken_gen = st->fill_gen - 1;
    rift_error why = {0};
    int rc = read_back(st, &why);
    if (rc != 0) {
        /* The stream stays refused; an explicit reopen tries again. */
        rift_log(RIFT_LOG_ERROR, "stream storage: reopening %s: %s", st->dir,
                 why.text);
        rift_error_set(&st->poison_err, rc, "reopen failed: %s", why.text);
        st->space_failure = false;
        if (err != NULL) {
            rift_error_copy(err, &why);
        }
    } else {
        st->rolled_back = true;
        if (st->backoff_ms == 0) {
            st->backoff_ms = BACKOFF_MIN_MS;
        }
        st->retry_at = rift_stream_now(st) + st->backoff_ms;
        if (retry_now) {
            clear_failure(st);
            st->backoff_ms = 0;
        }
        rift_log(RIFT_LOG_WARN,
                 "stream storage: %s reopened after a failed write: last "
                 "sequence %llu, %llu records%s",
                 st->dir, (unsigned long long)st->last_seq,
                 (unsigned long long)st->ents.len,
                 retry_now ? ""
                 : st->space_failure
                     ? "; writes are retried after the back-off"
                     : "; writes stay refused until the stream is reopened");
    }
    int wrc = rift_writer_start(st, rc == 0 ? err : NULL);
    st->reviving = false;
    return rc != 0 ? rc : wrc;
}

void rift_stream_revive_if_due(rift_stream *st) {
    if (atomic_load_explicit(&st->poison, memory_order_relaxed) == 0 ||
        !st->file || rift_writer_is_self(st)) {
        return;
    }
    pthread_mutex_lock(&st->lock);
    if (st->poison != 0 && !st->closed && !st->reviving && st->writer_started) {
        if (!st->rolled_back) {
            (void)revive_locked(st, false, NULL);
        } else if (st->space_failure && rift_stream_now(st) >= st->retry_at) {
            /* The next failure doubles the wait. */
            st->backoff_ms = RIFT_MIN(st->backoff_ms * 2, BACKOFF_MAX_MS);
            clear_failure(st);
            rift_log(RIFT_LOG_INFO,
                     "stream storage: %s: retrying writes after a lack of "
                     "space",
                     st->dir);
        }
    }
    pthread_mutex_unlock(&st->lock);
}

int rift_stream_reopen(rift_stream *st, rift_error *err) {
    if (rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    pthread_mutex_lock(&st->lock);
    int rc = 0;
    if (st->closed) {
        rc = rift_stream_check_usable(st, err);
    } else if (st->reviving) {
        rc = rift_error_set(err, RIFT_ERR_STORAGE,
                            "stream storage: the stream is being reopened");
    } else if (st->file && st->poison != 0 && st->writer_started) {
        st->backoff_ms = 0;
        rc = revive_locked(st, true, err);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}
