/*
 * stage.c — the writer's staging area as callers fill it (store layer),
 * under the stream lock: records placed in the active segment (a new one
 * when it is full), state events and their accounting, the snapshot that
 * replaces the state log when it has grown, and the segments retention
 * emptied. The writer thread (writer.c) swaps a filled stage out and
 * cycle.c writes it; nothing here does I/O.
 */
#include "store/stage.h"
#include "store/consumer_state.h"

#include <stdio.h>
#include <string.h>

/* Stage buffers larger than this are released after a cycle. */
#define STAGE_KEEP (4u << 20)

/* ---- Stages ---- */

void rift_stage_init(rift_stage *s, const rift_mem *mem) {
    rift_sbuf_init(&s->seg_data, mem);
    rift_ring_init(&s->extents, sizeof(rift_extent), mem);
    rift_sbuf_init(&s->state_data, mem);
    rift_sbuf_init(&s->snapshot, mem);
    s->has_snapshot = false;
    rift_ring_init(&s->dead, sizeof(rift_seg *), mem);
    s->need_sync = false;
    s->full_sync = false;
    s->last_seq = 0;
}

void rift_stage_free(rift_stage *s) {
    rift_sbuf_free(&s->seg_data);
    rift_ring_free(&s->extents);
    rift_sbuf_free(&s->state_data);
    rift_sbuf_free(&s->snapshot);
    rift_ring_free(&s->dead);
}

bool rift_stage_empty(const rift_stage *s) {
    return s->extents.len == 0 && s->state_data.len == 0 && !s->has_snapshot &&
           s->dead.len == 0 && !s->full_sync;
}

void rift_stage_reset(rift_stage *s) {
    rift_sbuf_reset(&s->seg_data, STAGE_KEEP);
    s->extents.len = 0;
    s->extents.head = 0;
    rift_sbuf_reset(&s->state_data, STAGE_KEEP);
    rift_sbuf_reset(&s->snapshot, 0);
    s->has_snapshot = false;
    s->dead.len = 0;
    s->dead.head = 0;
    s->need_sync = false;
    s->full_sync = false;
    s->last_seq = 0;
    s->nops = 0;
}

/* ---- Staging (callers, under lock) ---- */

uint8_t *rift_stage_record(rift_stream *st, size_t len, uint32_t *off,
                           rift_error *err) {
    rift_stage *f = &st->fill;
    rift_seg *a = st->segs.len
                      ? *(rift_seg **)rift_ring_at(&st->segs, st->segs.len - 1)
                      : NULL;
    bool roll = a == NULL || st->force_roll ||
                (a->end > a->base && a->size + len > st->cfg.segment_bytes);
    if (roll) {
        rift_seg *s = rift_calloc(st->mem, 1, sizeof(*s));
        size_t plen = strlen(st->dir) + 1 + RIFT_SEG_NAME_LEN + 1;
        char *path = s ? rift_malloc(st->mem, plen) : NULL;
        rift_seg **slot = path ? rift_ring_push(&st->segs) : NULL;
        rift_extent *e = slot ? rift_ring_push(&f->extents) : NULL;
        uint8_t *h = e ? rift_sbuf_grow(&f->seg_data, RIFT_SEG_HEADER) : NULL;
        if (h == NULL) {
            if (e != NULL) {
                rift_ring_pop_back(&f->extents);
            }
            if (slot != NULL) {
                rift_ring_pop_back(&st->segs);
            }
            rift_free(st->mem, path);
            rift_free(st->mem, s);
            rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        char name[RIFT_SEG_NAME_LEN + 1];
        rift_seg_name(name, sizeof(name), st->last_seq + 1);
        snprintf(path, plen, "%s/%s", st->dir, name);
        s->path = path;
        s->base = st->last_seq + 1;
        s->end = s->base;
        s->size = RIFT_SEG_HEADER;
        atomic_init(&s->fd, -1);
        *slot = s;
        rift_seg_header_encode(h, s->base);
        e->seg = s;
        e->off = 0;
        e->pos = (size_t)(h - f->seg_data.data);
        e->len = RIFT_SEG_HEADER;
        st->force_roll = false;
        a = s;
    }
    rift_extent *e =
        f->extents.len ? rift_ring_at(&f->extents, f->extents.len - 1) : NULL;
    bool extend = e != NULL && e->seg == a && e->off + e->len == a->size &&
                  e->pos + e->len == f->seg_data.len;
    if (!extend) {
        e = rift_ring_push(&f->extents);
        if (e == NULL) {
            rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        e->seg = a;
        e->off = a->size;
        e->pos = f->seg_data.len;
        e->len = 0;
    }
    uint8_t *p = rift_sbuf_grow(&f->seg_data, len);
    if (p == NULL) {
        if (!extend) {
            rift_ring_pop_back(&f->extents);
        }
        rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->len += len;
    *off = (uint32_t)a->size;
    a->size += len;
    a->end++;
    f->last_seq = st->last_seq + 1;
    return p;
}

rift_sbuf *rift_stage_state_buf(rift_stream *st) {
    return &st->fill.state_data;
}

void rift_stage_state_done(rift_stream *st, size_t before) {
    st->state_bytes += st->fill.state_data.len - before;
    uint64_t limit =
        RIFT_MAX(st->cfg.state_snapshot_bytes, 2 * st->snapshot_bytes);
    if (st->state_bytes > limit) {
        /* Out of memory only postpones the snapshot to a later event. */
        (void)rift_stage_snapshot(st);
    }
}

int rift_stage_snapshot(rift_stream *st) {
    rift_sbuf *b = &st->fill.snapshot;
    b->len = 0;
    uint8_t *h = rift_sbuf_grow(b, RIFT_STATE_HEADER);
    if (h == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_state_header_encode(h);
    int64_t start = rift_ev_begin(b, RIFT_EV_FIRST_SEQ);
    if (start < 0 || rift_ev_put_u64(b, st->first_seq) != 0) {
        b->len = 0;
        return RIFT_ERR_NOMEM;
    }
    rift_ev_finish(b, start);
    for (size_t i = 0; i < st->holes.len; i++) {
        const rift_hole *hole = rift_ring_at(&st->holes, i);
        start = rift_ev_begin(b, RIFT_EV_HOLE);
        if (start < 0 || rift_ev_put_u64(b, hole->from) != 0 ||
            rift_ev_put_u64(b, hole->to) != 0) {
            b->len = 0;
            return RIFT_ERR_NOMEM;
        }
        rift_ev_finish(b, start);
    }
    for (size_t i = 0; i < st->ncons; i++) {
        if (rift_consumer_encode(st->cons[i], b) != 0) {
            b->len = 0;
            return RIFT_ERR_NOMEM;
        }
    }
    /* Events staged so far are contained in the snapshot. */
    st->fill.state_data.len = 0;
    st->fill.has_snapshot = true;
    st->marker = st->first_seq;
    st->snapshot_bytes = b->len;
    st->state_bytes = b->len;
    return 0;
}

void rift_stage_drop_segments(rift_stream *st) {
    bool dropped = false;
    while (st->segs.len > 1) {
        rift_seg *s = *(rift_seg **)rift_ring_at(&st->segs, 0);
        if (s->end > st->first_seq) {
            break;
        }
        rift_seg **slot = rift_ring_push(&st->fill.dead);
        if (slot == NULL) {
            break; /* retried at the next eviction */
        }
        *slot = s;
        rift_ring_pop_front(&st->segs);
        if (st->rseg == s) {
            st->rseg = NULL;
        }
        dropped = true;
    }
    if (dropped && st->marker != st->first_seq) {
        /* Recovery must not bring back what the unlinks remove (the
         * marker is written before them in the same cycle). */
        rift_sbuf *b = &st->fill.state_data;
        size_t before = b->len;
        int64_t start = rift_ev_begin(b, RIFT_EV_FIRST_SEQ);
        if (start >= 0 && rift_ev_put_u64(b, st->first_seq) == 0) {
            rift_ev_finish(b, start);
            st->marker = st->first_seq;
            rift_stage_state_done(st, before);
        } else {
            b->len = before;
        }
    }
}
