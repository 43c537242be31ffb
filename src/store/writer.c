/*
 * writer.c — the per-stream writer thread and group commit (store layer).
 *
 * Callers stage encoded records and state events under the stream lock in
 * |fill| and get a ticket, the generation of that stage. The writer swaps
 * |fill| for its empty |io| stage, writes and syncs it without the lock,
 * then marks the generation durable, wakes blocking callers and runs the
 * completion callbacks of async ones. While one cycle's fdatasync runs,
 * the next stage collects everything submitted meanwhile: that is the
 * group commit, and it is why fsync never runs on a caller's thread.
 *
 * Order inside a cycle (crash consistency): segment data, its fdatasync
 * (the previous segment is synced before a new one is written), directory
 * sync for new files, then the state log (or a snapshot replacing it) and
 * its fdatasync, then unlinks of segments retention emptied. State that
 * refers to a record is therefore never durable before the record.
 * cycle.c does the writes in that order (rift_cycle_write); this file
 * decides when a cycle runs and what it settles.
 *
 * Unsynced streams (sync_on_write false) skip the syncs but still
 * acknowledge a mutation only once its bytes were written (pwrite): the
 * writer completes a generation after writing it, and a blocking caller
 * that finds the writer parked writes the stage itself under the lock
 * (write_inline), saving two thread wake-ups per publish.
 */
#include "store/writer.h"
#include "store/cycle.h"
#include "store/kick_hold.h"
#include "store/retained.h"
#include "store/stage.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static _Thread_local const rift_stream *tls_writer;

/* ---- Callers (under lock) ---- */

/*
 * One wake-up per stage is enough: once signalled the writer will find
 * everything staged after it. While the writer gathers a group it wants a
 * wake-up only when the group is complete. A futex call per publish would
 * otherwise cost more than the publish.
 */
void rift_writer_kick(rift_stream *st) {
    if (!st->writer_idle) {
        return;
    }
    if (st->gather_want > 0 ? st->fill.nops >= st->gather_want
                            : !st->fill_kicked) {
        st->fill_kicked = true;
        pthread_cond_signal(&st->work_cv);
    }
}

bool rift_writer_is_self(const rift_stream *st) {
    return tls_writer == st;
}

int rift_writer_poisoned(rift_stream *st, rift_error *err) {
    char cause[sizeof(st->poison_err.text)];
    memcpy(cause, st->poison_err.text, sizeof(cause));
    if (st->space_failure) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: journal write previously "
                              "failed for lack of space; writes are retried "
                              "automatically once space is freed (at most "
                              "every %llu s), or at once when you reopen "
                              "the stream (%s)",
                              (unsigned long long)(st->backoff_ms / 1000),
                              cause);
    }
    return rift_error_set(err, RIFT_ERR_STORAGE,
                          "stream storage: journal write previously failed; "
                          "nothing is retried after an I/O error: check the "
                          "disk, then reopen the stream (%s)",
                          cause);
}

int rift_stream_check_usable(rift_stream *st, rift_error *err) {
    if (st->closed) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "stream storage: stream is closed");
    }
    if (st->poison != 0) {
        return rift_writer_poisoned(st, err);
    }
    return 0;
}

int rift_writer_reserve(rift_stream *st, rift_error *err) {
    if (st->completions.len < st->completions.cap) {
        return 0;
    }
    if (rift_ring_push(&st->completions) == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_ring_pop_back(&st->completions);
    return 0;
}

int rift_writer_wait(rift_stream *st, uint64_t ticket, rift_error *err) {
    if (ticket == 0) {
        return 0;
    }
    size_t slot = ticket % RIFT_ARRAY_LEN(st->gen_wait);
    pthread_mutex_t *mu = &st->gen_wait[slot].mu;
    pthread_cond_t *cv = &st->gen_wait[slot].cv;
    pthread_mutex_lock(mu);
    bool failed = false;
    while (atomic_load(&st->durable_gen) < ticket) {
        if (atomic_load(&st->poison) != 0 &&
            ticket >= atomic_load(&st->poison_gen)) {
            failed = true;
            break;
        }
        pthread_cond_wait(cv, mu);
    }
    pthread_mutex_unlock(mu);
    /* A generation that failed before a reopen counts as settled after
     * it, but never as durable. */
    failed = failed || (ticket >= atomic_load(&st->failed_from) &&
                        ticket < atomic_load(&st->failed_to));
    if (!failed) {
        return 0;
    }
    pthread_mutex_lock(&st->lock);
    rift_error_copy(err, &st->poison_err);
    int rc = st->poison != 0 ? st->poison : st->fail_rc;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Wakes the blocking callers of every generation settled since the last
 * call (all of them after a failure). Under lock. */
static void wake_slot(rift_stream *st, size_t i) {
    pthread_mutex_lock(&st->gen_wait[i].mu);
    pthread_cond_broadcast(&st->gen_wait[i].cv);
    pthread_mutex_unlock(&st->gen_wait[i].mu);
}

static void wake_settled(rift_stream *st) {
    size_t n = RIFT_ARRAY_LEN(st->gen_wait);
    uint64_t durable = st->durable_gen;
    if (st->poison != 0) {
        for (size_t i = 0; i < n; i++) {
            wake_slot(st, i);
        }
        return;
    }
    uint64_t from = st->woken_gen + 1;
    if (durable >= from + n) {
        from = durable - n + 1;
    }
    for (uint64_t g = from; g <= durable; g++) {
        wake_slot(st, (size_t)(g % n));
    }
    st->woken_gen = durable;
}

/* ---- Waiting for work (writer thread, under lock) ---- */

static void wait_work(rift_stream *st) {
    /* The writer looks at the stage now and finds it empty: whatever
     * kick came before is spent. Left set, it would turn the next
     * stage's kick into a no-op and leave the writer asleep over staged
     * records (a kick on an empty stage, say a held flush after the
     * writer took the records, or a checkpoint's, set it). */
    st->fill_kicked = false;
    st->writer_idle = true;
    st->writer_parked = true;
    if (st->cfg.max_age_ms > 0) {
        /* Age retention also runs when nobody calls, so expired segments
         * leave the disk. */
        uint64_t period = RIFT_MIN(st->cfg.max_age_ms, 1000);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + period * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        if (pthread_cond_timedwait(&st->work_cv, &st->lock, &ts) == ETIMEDOUT &&
            st->poison == 0) {
            rift_stream_retain(st, rift_stream_now(st));
        }
    } else {
        pthread_cond_wait(&st->work_cv, &st->lock);
    }
    st->writer_idle = false;
    st->writer_parked = false;
}

/*
 * Group commit needs the callers a cycle released to have come back before
 * the next sync starts, or syncs alternate between big and tiny groups.
 * While the stage holds fewer mutations than the last cycle did, wait a
 * little (a fraction of a sync, at most 200 us) for the rest.
 */
static void gather(rift_stream *st) {
    if (!st->cfg.sync_on_write || st->fill.nops >= st->last_ops ||
        st->stopping) {
        return;
    }
    uint64_t delay = RIFT_MIN(st->last_sync_ns / 4, 200000u);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + delay;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    st->writer_idle = true;
    while (st->fill.nops < st->last_ops && !st->stopping) {
        if (pthread_cond_timedwait(&st->work_cv, &st->lock, &ts) == ETIMEDOUT) {
            break;
        }
    }
    st->writer_idle = false;
}

/* ---- Settling completions (under lock) ---- */

/* Moves the completions that are now decided into |out| with their
 * status: durable ones succeed, those at or after a failed generation
 * fail. They are in ticket order, so the first undecided one stops it. */
static void collect(rift_stream *st, rift_ring *out) {
    out->len = 0;
    out->head = 0;
    while (st->completions.len > 0) {
        rift_completion *c = rift_ring_at(&st->completions, 0);
        int status;
        if (c->ticket <= st->durable_gen) {
            status = 0;
        } else if (st->poison != 0 && c->ticket >= st->poison_gen) {
            status = st->poison;
        } else {
            break;
        }
        rift_completion *f = rift_ring_push(out);
        if (f == NULL) {
            break; /* settled at the next opportunity */
        }
        *f = *c;
        f->status = status;
        rift_ring_pop_front(&st->completions);
    }
}

static void fire(const rift_ring *out, const rift_error *perr) {
    for (size_t i = 0; i < out->len; i++) {
        const rift_completion *c = rift_ring_at(out, i);
        c->cb(c->user_data, c->status, c->status ? perr : NULL);
    }
}

static void set_poison(rift_stream *st, int rc, uint64_t gen,
                       const rift_error *err) {
    if (st->poison != 0 && gen >= st->poison_gen) {
        return;
    }
    st->poison = rc;
    st->poison_gen = gen;
    st->fail_rc = rc;
    st->rolled_back = false;
    int os = atomic_load(&st->io_errno);
    st->space_failure = os == -ENOSPC || os == -EDQUOT;
    rift_error_copy(&st->poison_err, err);
    if (st->poison_err.code == 0) {
        rift_error_set(&st->poison_err, rc, "%s", rift_strerror(rc));
    }
}

/* ---- Sync helpers: pipelined segment syncs ---- */

/*
 * A publish-only cycle needs just an fdatasync of the segment it appended
 * to, and concurrent fdatasyncs overlap on the device, so the writer hands
 * them to helpers and goes on writing the next stage. They complete in
 * generation order: a sync that returns early is not reported before the
 * older ones, so one failure can never be hidden by a later success.
 */
static void settle_jobs(rift_stream *st) {
    while (st->jlen > 0) {
        rift_sync_job *j = &st->jobs[st->jhead];
        if (j->state != 2) {
            break;
        }
        if (j->rc != 0) {
            set_poison(st, j->rc, j->gen, &j->err);
        } else if (st->poison == 0 || j->gen < st->poison_gen) {
            if (j->gen > st->durable_gen) {
                st->durable_gen = j->gen;
            }
            if (j->last_seq > st->durable_seq) {
                st->durable_seq = j->last_seq;
            }
        }
        st->jhead = (st->jhead + 1) % RIFT_SYNC_HELPERS;
        st->jlen--;
    }
}

static void *helper_main(void *arg) {
    rift_stream *st = arg;
    tls_writer = st;
    rift_ring out;
    rift_ring_init(&out, sizeof(rift_completion), st->mem);
    pthread_mutex_lock(&st->lock);
    for (;;) {
        rift_sync_job *j = NULL;
        for (size_t k = 0; k < st->jlen; k++) {
            rift_sync_job *c = &st->jobs[(st->jhead + k) % RIFT_SYNC_HELPERS];
            if (c->state == 0) {
                j = c;
                break;
            }
        }
        if (j == NULL) {
            if (st->helpers_stop) {
                break;
            }
            pthread_cond_wait(&st->job_cv, &st->lock);
            continue;
        }
        j->state = 1;
        int fd = j->fd;
        pthread_mutex_unlock(&st->lock);

        rift_error err = {0};
        uint64_t t0 = rift_now_ns();
        int rc = rift_cycle_sync_fd(st, fd, true, j->path, &err);
        uint64_t dt = rift_now_ns() - t0;

        pthread_mutex_lock(&st->lock);
        st->last_sync_ns = dt;
        j->rc = rc;
        if (rc != 0) {
            rift_error_copy(&j->err, &err);
        }
        j->state = 2;
        settle_jobs(st);
        collect(st, &out);
        rift_error perr = st->poison_err;
        wake_settled(st);
        pthread_cond_broadcast(&st->done_cv);
        pthread_mutex_unlock(&st->lock);
        fire(&out, &perr);
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    rift_ring_free(&out);
    return NULL;
}

/* Waits until no segment sync is in flight. Under lock. */
static void drain_jobs(rift_stream *st) {
    while (st->jlen > 0) {
        pthread_cond_wait(&st->done_cv, &st->lock);
    }
}

/*
 * Queues the sync of generation |gen| (its writes are done). Helpers are
 * started on demand, up to RIFT_SYNC_HELPERS, so an idle or lightly used
 * stream keeps a single I/O thread. Returns false when no helper can be
 * started at all: the caller then syncs inline. Under lock.
 */
static bool dispatch(rift_stream *st, uint64_t gen, rift_seg *s,
                     uint64_t last_seq) {
    while (st->jlen == st->nhelpers) {
        if (st->nhelpers < RIFT_SYNC_HELPERS &&
            pthread_create(&st->helpers[st->nhelpers], NULL, helper_main, st) ==
                0) {
            st->nhelpers++;
            break;
        }
        if (st->nhelpers == 0) {
            return false;
        }
        pthread_cond_wait(&st->done_cv, &st->lock);
    }
    rift_sync_job *j = &st->jobs[(st->jhead + st->jlen) % RIFT_SYNC_HELPERS];
    st->jlen++;
    j->gen = gen;
    j->last_seq = last_seq;
    j->fd = atomic_load(&s->fd);
    j->path = s->path;
    j->state = 0;
    j->rc = 0;
    pthread_cond_signal(&st->job_cv);
    return true;
}

/* ---- Commit ---- */

int rift_writer_commit_ticket(rift_stream *st, uint64_t ticket,
                              rift_stream_done_cb cb, void *user_data,
                              bool blocking, uint64_t *wait, bool *done,
                              rift_error *err) {
    (void)err;
    if (!st->file || st->durable_gen >= ticket) {
        if (!blocking) {
            *done = true;
        }
        return 0;
    }
    if (!blocking) {
        if (cb == NULL) {
            return 0; /* nobody waits; the operation stands all the same */
        }
        /* Callers reserved the slot before mutating, so this succeeds. */
        rift_completion *c = rift_ring_push(&st->completions);
        c->ticket = ticket;
        c->cb = cb;
        c->user_data = user_data;
        return 0;
    }
    *wait = ticket;
    return 0;
}

/*
 * Whether a blocking caller may write |fill| itself: an unsynced stream,
 * the writer parked with nothing in flight, nobody's async completion in
 * the stage, and nothing in it but appends to existing files (new
 * segments, snapshots, unlinks and syncs stay on the writer thread).
 * Handing a publish to the writer and being woken costs two thread
 * wake-ups, several times a write() (measured: concurrent blocking
 * publishers went through the writer 6x slower than writing inline, one
 * by one under the lock). Under lock.
 */
static bool can_write_inline(rift_stream *st) {
    const rift_stage *f = &st->fill;
    if (st->cfg.sync_on_write || !st->writer_parked ||
        st->completions.len > 0 || f->has_snapshot || f->dead.len > 0 ||
        f->full_sync || st->poison != 0) {
        return false;
    }
    for (size_t i = 0; i < f->extents.len; i++) {
        const rift_extent *e = rift_ring_at(&f->extents, i);
        if (atomic_load(&e->seg->fd) < 0) {
            return false;
        }
    }
    return true;
}

/*
 * Writes |fill| on the caller's thread, under the lock, exactly as the
 * writer's cycle would (segment data, then state events, one write each,
 * no sync) and settles its generation. The lock keeps everyone else out,
 * and the writer is parked, so the order of generations is kept. Returns
 * 0 or the write error (the stream is then poisoned).
 */
static int write_inline(rift_stream *st, rift_error *err) {
    rift_stage *f = &st->fill;
    uint64_t gen = st->fill_gen++;
    rift_error cerr = {0};
    int rc = rift_cycle_write_unsynced(st, f, &cerr);
    if (rc == 0) {
        rift_cycle_mark_flushed(st, f);
        atomic_store(&st->durable_gen, gen);
        st->state_good = st->state_size;
        st->backoff_ms = 0;
    } else {
        set_poison(st, rc, gen, &cerr);
        rift_error_copy(err, &cerr);
    }
    rift_stage_reset(f);
    st->fill_kicked = false;
    wake_settled(st);
    rift_stream_cache_trim(st);
    return rc;
}

int rift_writer_commit(rift_stream *st, bool staged, rift_stream_done_cb cb,
                       void *user_data, bool blocking, uint64_t *wait,
                       bool *done, rift_error *err) {
    if (!staged || !st->file) {
        if (!blocking) {
            *done = true;
        }
        return 0;
    }
    uint64_t ticket = st->fill_gen;
    st->fill.nops++;
    if (st->cfg.sync_on_write) {
        st->fill.need_sync = true;
    } else if (blocking && can_write_inline(st)) {
        return write_inline(st, err);
    }
    /* An async call with a callback may leave the wake-up to its thread's
     * flush (kick_hold.h); everything else wakes the writer now. */
    if (blocking || cb == NULL || !rift_kick_hold_note(st)) {
        rift_writer_kick(st);
    }
    return rift_writer_commit_ticket(st, ticket, cb, user_data, blocking, wait,
                                     done, err);
}

/* ---- The thread ---- */

/* After the writes of generation |gen| (|rc|, started at |t0|, taking
 * |dt|): hands a
 * publish-only stage's sync to a helper (or syncs here), then marks the
 * generation durable or poisons the stream. Under lock (released around
 * an inline sync). */
static void settle_cycle(rift_stream *st, rift_stage *io, uint64_t gen,
                         rift_seg *simple, bool poisoned, int rc, uint64_t t0,
                         uint64_t dt, rift_error *cerr) {
    if (!poisoned && rc == 0) {
        rift_cycle_mark_flushed(st, io);
        bool settled_here = true;
        if (simple != NULL) {
            if (dispatch(st, gen, simple, io->last_seq)) {
                settled_here = false;
            } else {
                /* No helper could start (and so none is busy): sync
                 * here. */
                pthread_mutex_unlock(&st->lock);
                rc = rift_cycle_sync_fd(st, atomic_load(&simple->fd), true,
                                        simple->path, cerr);
                dt = rift_now_ns() - t0;
                pthread_mutex_lock(&st->lock);
            }
        }
        if (rc != 0) {
            set_poison(st, rc, gen, cerr);
        } else if (settled_here) {
            st->last_sync_ns = dt;
            if ((io->need_sync || io->full_sync) &&
                io->last_seq > st->durable_seq) {
                st->durable_seq = io->last_seq;
            }
            st->durable_gen = gen;
            st->state_good = st->state_size;
            st->backoff_ms = 0;
        }
        rift_stream_cache_trim(st);
    } else if (!poisoned) {
        set_poison(st, rc, gen, cerr);
    }
}

static void *writer_main(void *arg) {
    rift_stream *st = arg;
    tls_writer = st;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (rift_stage_empty(&st->fill) && !st->stopping) {
            wait_work(st);
        }
        if (rift_stage_empty(&st->fill)) {
            break;
        }
        gather(st);
        st->last_ops = st->fill.nops;
        rift_stage tmp = st->fill;
        st->fill = st->io;
        st->io = tmp;
        st->fill_kicked = false;
        rift_stage *io = &st->io;
        uint64_t gen = st->fill_gen++;
        rift_seg *simple =
            st->poison == 0 ? rift_cycle_simple_stage(st, io) : NULL;
        if (simple == NULL) {
            /* Everything else runs in order after the syncs in flight. */
            drain_jobs(st);
        }
        bool poisoned = st->poison != 0;
        pthread_mutex_unlock(&st->lock);

        rift_error cerr = {0};
        uint64_t t0 = rift_now_ns();
        int rc;
        if (poisoned) {
            rc = st->poison;
        } else if (simple != NULL) {
            rc = rift_cycle_write_extents(st, io, &cerr);
        } else {
            rc = rift_cycle_write(st, io, &cerr);
        }
        uint64_t dt = rift_now_ns() - t0;

        pthread_mutex_lock(&st->lock);
        settle_cycle(st, io, gen, simple, poisoned, rc, t0, dt, &cerr);
        /* Callbacks this cycle settles run unlocked. */
        collect(st, &st->wfire);
        rift_error perr = st->poison_err;
        wake_settled(st);
        pthread_cond_broadcast(&st->done_cv);
        pthread_mutex_unlock(&st->lock);

        rift_cycle_free_dead(st, io);
        rift_stage_reset(io);
        fire(&st->wfire, &perr);
        pthread_mutex_lock(&st->lock);
    }
    drain_jobs(st);
    st->helpers_stop = true;
    pthread_cond_broadcast(&st->job_cv);
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

int rift_writer_start(rift_stream *st, rift_error *err) {
    st->writer_idle = false;
    st->stopping = false;
    st->helpers_stop = false;
    st->nhelpers = 0;
    pthread_cond_init(&st->job_cv, NULL);
    int rc = pthread_create(&st->writer, NULL, writer_main, st);
    if (rc != 0) {
        pthread_cond_destroy(&st->job_cv);
        return rift_error_set(err, RIFT_ERR_IO,
                              "messaging I/O: cannot start writer thread: %s",
                              strerror(rc));
    }
    st->writer_started = true;
    return 0;
}

void rift_writer_stop(rift_stream *st) {
    if (!st->writer_started) {
        return;
    }
    pthread_mutex_lock(&st->lock);
    st->stopping = true;
    st->fill.full_sync = true;
    pthread_cond_signal(&st->work_cv);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->writer, NULL);
    for (size_t i = 0; i < st->nhelpers; i++) {
        pthread_join(st->helpers[i], NULL);
    }
    st->nhelpers = 0;
    pthread_cond_destroy(&st->job_cv);
    st->writer_started = false;
}
