/*
 * msg.c — messages received by the Rift client (client layer): MESSAGE
 * and DELIVERY bodies become the library's rift_msg, and the growable
 * FIFO that queues them in a subscription.
 *
 * A payload is copied at most once on its way to the application. When
 * the frame body was handed out in place (it lives only during the QUIC
 * callback), it is copied into the message's single allocation, which
 * comes from the client's message pool (msgpool.c).
 * When the frame reader had to assemble the body (large or fragmented
 * frames), the message adopts that buffer instead (rift_msg_new_external),
 * provided it came from the default allocator, which is the one rift_msg
 * releases with.
 */
#include "client/client_internal.h"

#include <string.h>

static void body_release(void *ud) {
    rift_free(NULL, ud);
}

int rift_client_msg_build(rift_msg **pm, const rift_mem *mem,
                          rift_msgpool *pool, const rift_frame_msg *f,
                          uint8_t *detached) {
    int rc;
    if (detached != NULL && (mem == NULL || mem == rift_mem_default())) {
        rc = rift_msg_new_external(
            pm, NULL, f->subject, f->subject_len, f->reply, f->reply_len,
            f->payload, f->payload_len, body_release, detached, NULL);
        if (rc != 0) {
            rift_free(mem, detached);
        }
        return rc;
    }
    if (pool != NULL) {
        rc = rift_msgpool_msg(pool, pm, f);
    } else {
        rc = rift_msg_new(pm, NULL, f->subject, f->subject_len, f->reply,
                          f->reply_len, f->payload, f->payload_len, NULL);
    }
    rift_free(mem, detached);
    return rc;
}

/* ---- Ring ---- */

void rift_client_ring_init(rift_client_ring *r, const rift_mem *mem) {
    memset(r, 0, sizeof(*r));
    r->mem = mem;
}

void rift_client_ring_free(rift_client_ring *r) {
    rift_client_entry e;
    while (rift_client_ring_pop(r, &e)) {
        rift_msg_unref(e.msg);
    }
    rift_free(r->mem, r->v);
    r->v = NULL;
    r->cap = 0;
}

/* Makes room for |more| entries. Doubling keeps pushes O(1) amortised;
 * the ring never shrinks (a subscription's queue is bounded by its stream
 * window, so its size is too). */
static int reserve(rift_client_ring *r, size_t more) {
    if (r->count + more <= r->cap) {
        return 0;
    }
    size_t cap = r->cap ? r->cap : 64;
    while (cap < r->count + more) {
        cap *= 2;
    }
    rift_client_entry *v = rift_malloc(r->mem, cap * sizeof(*v));
    if (v == NULL) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < r->count; i++) {
        v[i] = r->v[(r->head + i) & (r->cap - 1)];
    }
    rift_free(r->mem, r->v);
    r->v = v;
    r->cap = cap;
    r->head = 0;
    return 0;
}

int rift_client_ring_push(rift_client_ring *r, rift_client_entry e) {
    if (reserve(r, 1) != 0) {
        return RIFT_ERR_NOMEM;
    }
    r->v[(r->head + r->count) & (r->cap - 1)] = e;
    r->count++;
    return 0;
}

bool rift_client_ring_pop(rift_client_ring *r, rift_client_entry *e) {
    if (r->count == 0) {
        return false;
    }
    *e = r->v[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    r->count--;
    return true;
}

int rift_client_ring_move(rift_client_ring *to, rift_client_ring *from) {
    if (reserve(to, from->count) != 0) {
        return RIFT_ERR_NOMEM;
    }
    rift_client_entry e;
    while (rift_client_ring_pop(from, &e)) {
        to->v[(to->head + to->count) & (to->cap - 1)] = e;
        to->count++;
    }
    from->head = 0;
    return 0;
}
