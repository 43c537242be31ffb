/*
 * msgpool.c — recycled storage for received messages (client layer).
 *
 * Every MESSAGE or DELIVERY a client receives becomes a rift_msg built on
 * the client thread and, usually, released by an application thread.
 * With malloc that is the worst case: the client thread's arena hands
 * out a chunk, another thread frees it back into that arena under its
 * lock, and the pair cost more than the rest of the receive path. The
 * pool keeps freed message blocks instead, in three size classes:
 *
 *   - the client thread (the only one that allocates) takes blocks from
 *     its private list, refilled in one exchange from the shared list;
 *   - any thread frees by pushing onto the class's shared list (a
 *     lock-free stack; popping is only ever "take all", so there is no ABA
 *     problem), up to about 4 MiB per class, beyond which blocks go back
 *     to the allocator.
 *
 * Messages may outlive the client, so the pool is reference-counted: one
 * reference for its owner and one for every block it allocated that is
 * not back with the allocator (in use, or on a list). Blocks bigger than
 * the largest class are allocated directly but hold a reference too: the
 * message's `mem` points into the pool. rift_msgpool_close swaps every
 * shared list for the LIST_CLOSED mark, after which every free goes
 * straight back to the allocator, and the last one frees the pool.
 *
 * A block pushed onto a shared list hands its reference to the list: the
 * closer may take and free it, and then the pool, at once. So a free
 * never touches the pool after its push succeeded; the closed mark lives
 * in the list head itself, where the push sees it atomically.
 */
#include "client/client_internal.h"

#include "broker/broker_face.h" /* rift_msg_alloc: a message on our allocator */

#include <string.h>

#define NCLASS    3
#define CLASS_BIG UINT32_MAX

/* The head of a closed shared list: push nothing, free directly. */
#define LIST_CLOSED ((slot *)(uintptr_t)1)

/* Usable bytes of each class: a 64-byte payload with a short subject
 * fits the first. */
static const size_t class_size[NCLASS] = {256, 1024, 4096};

/* Bytes of freed blocks a class keeps: a subscription's queue can hold a
 * stream window (2 MiB) of 64-byte messages, ~24,000 blocks, and a queue
 * that drains and refills should not go through the allocator. */
#define CLASS_KEEP_BYTES (4u << 20)

/* In front of every block (16 bytes keep malloc's alignment). */
typedef struct slot {
    struct slot *next; /* on a list */
    uint32_t cls;      /* class index, or CLASS_BIG */
    uint32_t big_len;  /* CLASS_BIG: usable bytes */
} slot;

typedef struct pool_class {
    slot *local;              /* client thread only */
    _Atomic(slot *) returned; /* freed blocks, any thread */
    atomic_size_t nreturned;  /* about the length of returned (a cap) */
    size_t keep;              /* cap on nreturned */
} pool_class;

struct rift_msgpool {
    rift_mem mem; /* what messages carry; user_data = the pool */
    const rift_mem *base;
    atomic_size_t refs;
    pool_class cls[NCLASS];
};

static void pool_unref_n(rift_msgpool *p, size_t n) {
    if (n > 0 && atomic_fetch_sub(&p->refs, n) == n) {
        rift_free(p->base, p);
    }
}

static void *slot_data(slot *s) {
    return s + 1;
}

static slot *slot_of(void *ptr) {
    return (slot *)ptr - 1;
}

/* Frees a list of blocks back to the allocator; returns how many. */
static size_t list_free(rift_msgpool *p, slot *s) {
    size_t n = 0;
    while (s != NULL) {
        slot *next = s->next;
        rift_free(p->base, s);
        s = next;
        n++;
    }
    return n;
}

static void *pool_malloc(size_t size, void *ud) {
    rift_msgpool *p = ud;
    uint32_t ci = 0;
    while (ci < NCLASS && size > class_size[ci]) {
        ci++;
    }
    if (ci < NCLASS) {
        /* Only the owner allocates, and never concurrently with close. */
        pool_class *c = &p->cls[ci];
        slot *head = atomic_load_explicit(&c->returned, memory_order_relaxed);
        if (c->local == NULL && head != NULL && head != LIST_CLOSED) {
            /* Refill in one step. The count only caps the shared list, so
             * an approximate reset is enough (walking the list to count it
             * would touch every block once more). */
            c->local = atomic_exchange(&c->returned, NULL);
            atomic_store_explicit(&c->nreturned, 0, memory_order_relaxed);
        }
        if (c->local != NULL) {
            slot *s = c->local;
            c->local = s->next;
            return slot_data(s);
        }
    }
    size_t usable = ci < NCLASS ? class_size[ci] : size;
    if (usable > UINT32_MAX - sizeof(slot)) {
        return NULL;
    }
    slot *s = rift_malloc(p->base, sizeof(slot) + usable);
    if (s == NULL) {
        return NULL;
    }
    s->next = NULL;
    s->cls = ci < NCLASS ? ci : CLASS_BIG;
    s->big_len = (uint32_t)usable;
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return slot_data(s);
}

static void pool_free(void *ptr, void *ud) {
    rift_msgpool *p = ud;
    if (ptr == NULL) {
        return;
    }
    slot *s = slot_of(ptr);
    if (s->cls != CLASS_BIG) {
        pool_class *c = &p->cls[s->cls];
        if (atomic_load_explicit(&c->nreturned, memory_order_relaxed) <
            c->keep) {
            atomic_fetch_add_explicit(&c->nreturned, 1, memory_order_relaxed);
            slot *head =
                atomic_load_explicit(&c->returned, memory_order_relaxed);
            while (head != LIST_CLOSED) {
                s->next = head;
                if (atomic_compare_exchange_weak(&c->returned, &head, s)) {
                    return; /* the pool may be gone from here on */
                }
            }
        }
    }
    rift_free(p->base, s);
    pool_unref_n(p, 1);
}

static void *pool_calloc(size_t nmemb, size_t size, void *ud) {
    if (size != 0 && nmemb > SIZE_MAX / size) {
        return NULL;
    }
    void *ptr = pool_malloc(nmemb * size, ud);
    if (ptr != NULL) {
        memset(ptr, 0, nmemb * size);
    }
    return ptr;
}

static void *pool_realloc(void *ptr, size_t size, void *ud) {
    if (ptr == NULL) {
        return pool_malloc(size, ud);
    }
    slot *s = slot_of(ptr);
    size_t have = s->cls == CLASS_BIG ? s->big_len : class_size[s->cls];
    if (size <= have) {
        return ptr;
    }
    void *np = pool_malloc(size, ud);
    if (np != NULL) {
        memcpy(np, ptr, have);
        pool_free(ptr, ud);
    }
    return np;
}

int rift_msgpool_new(rift_msgpool **pp, const rift_mem *base) {
    rift_msgpool *p = rift_calloc(base, 1, sizeof(*p));
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    p->base = base;
    p->mem.user_data = p;
    p->mem.malloc = pool_malloc;
    p->mem.free = pool_free;
    p->mem.calloc = pool_calloc;
    p->mem.realloc = pool_realloc;
    atomic_init(&p->refs, 1);
    for (size_t i = 0; i < NCLASS; i++) {
        atomic_init(&p->cls[i].returned, NULL);
        atomic_init(&p->cls[i].nreturned, 0);
        p->cls[i].keep = CLASS_KEEP_BYTES / class_size[i];
    }
    *pp = p;
    return 0;
}

void rift_msgpool_close(rift_msgpool *p) {
    if (p == NULL) {
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < NCLASS; i++) {
        n += list_free(p, atomic_exchange(&p->cls[i].returned, LIST_CLOSED));
        n += list_free(p, p->cls[i].local);
        p->cls[i].local = NULL;
    }
    pool_unref_n(p, n + 1); /* the blocks, and the owner's reference */
}

int rift_msgpool_msg(rift_msgpool *p, rift_msg **pm, const rift_frame_msg *f) {
    rift_msg *m =
        rift_msg_alloc(&p->mem, 1, f->subject, f->subject_len, f->reply,
                       f->reply_len, f->payload, f->payload_len);
    if (m == NULL) {
        return RIFT_ERR_NOMEM;
    }
    *pm = m;
    return 0;
}
