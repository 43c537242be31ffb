/*
 * consumer_settle.c — settling one pending delivery beyond ack (store
 * layer, extension): NAK with an optional delay, TERM (never delivered
 * again, counted, journaled as RIFT_EV_TERM), in progress (the ack wait
 * starts again); the consumer's label (journaled) and the walk over a
 * stream's consumers and their labels; the stream's advisory
 * watch, which reports the records consumer.c's fetch dropped after
 * max_deliver. Semantics: docs/protocol-v1.md E.3, docs/storage-format.md.
 */
#include "store/consumer_settle.h"
#include "store/consumer_state.h"
#include "store/reopen.h"
#include "store/retained.h"
#include "store/stage.h"
#include "store/writer.h"

#include <string.h>

typedef enum settle_kind {
    SETTLE_NAK,
    SETTLE_TERM,
    SETTLE_PROGRESS,
} settle_kind;

static int usable(rift_consumer *c, rift_error *err) {
    int rc = rift_stream_check_usable(c->st, err);
    if (rc != 0) {
        return rc;
    }
    return c->deleted ? rift_error_set(err, RIFT_ERR_CONSUMER_NOT_FOUND,
                                       "consumer does not exist")
                      : 0;
}

/* TERM: journals the event and drops the entry. Under lock; nothing
 * changes on failure. */
static int term_locked(rift_consumer *c, rift_pend *p, rift_error *err) {
    rift_stream *st = c->st;
    if (!st->file) {
        rift_pend_drop(c, p);
        c->terminated++;
        return 0;
    }
    rift_sbuf *b = rift_stage_state_buf(st);
    size_t before = b->len;
    int64_t start = rift_ev_begin(b, RIFT_EV_TERM);
    if (start < 0 || rift_ev_put_u32(b, c->id) != 0 ||
        rift_ev_put_u64(b, p->seq) != 0 ||
        rift_ev_put_u8(b, RIFT_TERM_BY_CLIENT) != 0) {
        b->len = before;
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_ev_finish(b, start);
    rift_pend_drop(c, p);
    c->terminated++;
    rift_stage_state_done(st, before);
    return 0;
}

/* NAK and in progress move the delivery time only: a delivery is due once
 * now − delivered_at ≥ ack_wait (consumer.c), so a NAK with |delay| sets
 * the time that makes it due |delay| from now (0 = due at once). */
static void move_locked(rift_consumer *c, rift_pend *p, settle_kind kind,
                        uint64_t delay) {
    uint64_t now = rift_stream_now(c->st);
    if (kind == SETTLE_PROGRESS) {
        p->delivered_at = now;
    } else if (delay == 0 || now + delay < c->ack_wait_ms) {
        p->delivered_at = 0;
    } else {
        p->delivered_at = now + delay - c->ack_wait_ms;
    }
}

static int settle(rift_consumer *c, uint64_t seq, settle_kind kind,
                  uint64_t delay, bool blocking, bool *done,
                  rift_stream_done_cb cb, void *user_data, rift_error *err) {
    rift_stream *st = c->st;
    if (kind == SETTLE_NAK && delay > RIFT_CONSUMER_MAX_NAK_DELAY_MS) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "nak delay must be 0..3600000 ms");
    }
    bool journaled = kind == SETTLE_TERM && st->file;
    if (blocking && journaled && rift_writer_is_self(st)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "blocking stream call from its own completion "
                              "callback");
    }
    uint64_t wait = 0;
    rift_stream_revive_if_due(st);
    pthread_mutex_lock(&st->lock);
    int rc = usable(c, err);
    if (rc != 0) {
        goto out;
    }
    rift_pend *p = rift_pend_find(c, seq);
    if (p == NULL) {
        rc = rift_error_set(err, RIFT_ERR_INVALID_ACK,
                            "sequence is not pending acknowledgement");
        goto out;
    }
    if (kind != SETTLE_TERM) {
        move_locked(c, p, kind, delay);
        if (!blocking) {
            *done = true;
        }
        goto out;
    }
    if (!blocking && cb != NULL && journaled &&
        (rc = rift_writer_reserve(st, err)) != 0) {
        goto out;
    }
    if ((rc = term_locked(c, p, err)) != 0) {
        goto out;
    }
    rc = rift_writer_commit(st, journaled, cb, user_data, blocking, &wait, done,
                            err);
out:
    pthread_mutex_unlock(&st->lock);
    if (rc == 0 && wait != 0) {
        rc = rift_writer_wait(st, wait, err);
    }
    return rc;
}

int rift_consumer_nak(rift_consumer *c, uint64_t seq, uint64_t delay_ms,
                      rift_error *err) {
    return settle(c, seq, SETTLE_NAK, delay_ms, true, NULL, NULL, NULL, err);
}

int rift_consumer_nak_async(rift_consumer *c, uint64_t seq, uint64_t delay_ms,
                            bool *completed, rift_stream_done_cb cb,
                            void *user_data, rift_error *err) {
    bool done = false;
    int rc =
        settle(c, seq, SETTLE_NAK, delay_ms, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_consumer_term(rift_consumer *c, uint64_t seq, rift_error *err) {
    return settle(c, seq, SETTLE_TERM, 0, true, NULL, NULL, NULL, err);
}

int rift_consumer_term_async(rift_consumer *c, uint64_t seq, bool *completed,
                             rift_stream_done_cb cb, void *user_data,
                             rift_error *err) {
    bool done = false;
    int rc = settle(c, seq, SETTLE_TERM, 0, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

int rift_consumer_in_progress(rift_consumer *c, uint64_t seq, rift_error *err) {
    return settle(c, seq, SETTLE_PROGRESS, 0, true, NULL, NULL, NULL, err);
}

int rift_consumer_in_progress_async(rift_consumer *c, uint64_t seq,
                                    bool *completed, rift_stream_done_cb cb,
                                    void *user_data, rift_error *err) {
    bool done = false;
    int rc =
        settle(c, seq, SETTLE_PROGRESS, 0, false, &done, cb, user_data, err);
    return rift_async_result(rc, done, completed);
}

/* ---- Labels and advisories ---- */

int rift_consumer_set_label(rift_consumer *c, const char *label,
                            size_t label_len, rift_error *err) {
    rift_stream *st = c->st;
    label_len = RIFT_MIN(label_len, (size_t)RIFT_ADVISORY_LABEL_MAX);
    pthread_mutex_lock(&st->lock);
    if (c->label != NULL && c->label_len == label_len &&
        memcmp(c->label, label, label_len) == 0) {
        pthread_mutex_unlock(&st->lock);
        return 0; /* the usual case: the same client again */
    }
    pthread_mutex_unlock(&st->lock);
    char *copy = rift_strndup(st->mem, label, label_len);
    if (copy == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_lock(&st->lock);
    char *old = c->label;
    size_t old_len = c->label_len;
    c->label = copy;
    c->label_len = label_len;
    int rc = 0;
    /* Journaled so a listing can name the consumer after a restart
     * (CONSUMER_LIST). Nobody waits for it: a crash before it is written
     * leaves the consumer unlabelled until its next open sets it again. */
    if (st->file && !c->deleted && rift_stream_check_usable(st, NULL) == 0) {
        rift_sbuf *b = rift_stage_state_buf(st);
        size_t before = b->len;
        if (rift_consumer_encode_label(c, b) != 0) {
            c->label = old;
            c->label_len = old_len;
            old = copy;
            rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        } else {
            rift_stage_state_done(st, before);
            bool done = false;
            rc = rift_writer_commit(st, true, NULL, NULL, false, NULL, &done,
                                    err);
        }
    }
    pthread_mutex_unlock(&st->lock);
    rift_free(st->mem, old);
    return rc;
}

int rift_stream_consumer_each(rift_stream *st, rift_stream_consumer_fn fn,
                              void *arg, rift_error *err) {
    pthread_mutex_lock(&st->lock);
    int rc = st->closed ? rift_stream_check_usable(st, err) : 0;
    for (size_t i = 0; rc == 0 && i < st->ncons; i++) {
        const rift_consumer *c = st->cons[i];
        fn(arg, c->name, c->name_len, c->label,
           c->label != NULL ? c->label_len : 0);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void rift_stream_set_advisory_watch(rift_stream *st, rift_stream_advisory_fn fn,
                                    void *arg) {
    pthread_mutex_lock(&st->lock);
    st->advisory_fn = fn;
    st->advisory_arg = fn != NULL ? arg : NULL;
    pthread_mutex_unlock(&st->lock);
}

void rift_advisory_take(rift_consumer *c, rift_consumer_advisory *dead,
                        size_t ndead, rift_advisory_note *note) {
    (void)dead;
    note->fn = NULL;
    if (ndead == 0 || c->st->advisory_fn == NULL) {
        return;
    }
    note->fn = c->st->advisory_fn;
    note->arg = c->st->advisory_arg;
    note->name = c->name;
    note->name_len = c->name_len;
    note->label_len = 0;
    note->has_label = false;
    if (c->label != NULL) {
        memcpy(note->label, c->label, c->label_len);
        note->label_len = c->label_len;
        note->has_label = true;
    }
}

void rift_advisory_fire(const rift_advisory_note *note,
                        rift_consumer_advisory *dead, size_t ndead) {
    if (note->fn == NULL) {
        return;
    }
    for (size_t i = 0; i < ndead; i++) {
        dead[i].consumer = note->name;
        dead[i].consumer_len = note->name_len;
        dead[i].label = note->has_label ? note->label : NULL;
        dead[i].label_len = note->label_len;
        note->fn(note->arg, &dead[i]);
    }
}
