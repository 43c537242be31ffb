/*
 * slab.c — per-thread slabs of small message blocks in 2 MiB huge-page
 * chunks (common layer); see slab.h for why.
 *
 * Shape: a thread's slab (its "home") keeps, per 32-byte size class, a
 * free list and the chunk it is carving. A chunk holds blocks of one class
 * and starts with a header, so any thread finds a block's chunk and home
 * by masking its address. The owner allocates and frees without atomics
 * or locks; a block freed by another thread goes onto the home's remote
 * list under home->lock, and the owner takes that list back when a free
 * list runs dry. Each chunk counts the blocks not on a list of its home
 * (in use anywhere, or on the remote list): a chunk at zero may be
 * unmapped. Until the owner disables the home, only the owner touches
 * those counts; afterwards only threads holding home->lock do, and the
 * last block freed in a chunk unmaps it, the last chunk frees the home.
 */
#include "common/slab.h"

#include "common/dlist.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define CHUNK_SIZE RIFT_SLAB_HUGE
#define CHUNK_HEAD 64 /* header; blocks stay 32-aligned */
#define STEP       32
#define CLASSES    (RIFT_SLAB_MAX / STEP)

typedef struct home home;

typedef struct chunk {
    home *home;
    size_t block; /* bytes per block: its class */
    size_t used;  /* blocks not on a list of the home */
    struct chunk *prev, *next;
} chunk;

struct home {
    pthread_mutex_t lock;
    void *remote;           /* under lock: blocks freed by other threads */
    atomic_bool remote_any; /* a hint for the owner: remote is not empty */
    bool alive;             /* under lock: the owner has not disabled it */
    size_t nchunks;         /* owner's while alive, then under lock */
    /* The owner's alone. */
    size_t max_chunks;
    chunk *chunks; /* every chunk, doubly linked */
    void *free[CLASSES];
    chunk *cur[CLASSES]; /* being carved: its next block at carve[] */
    size_t carve[CLASSES];
};

static _Thread_local home *tls_home;

static inline chunk *chunk_of(const void *block) {
    return (chunk *)((uintptr_t)block & ~(uintptr_t)(CHUNK_SIZE - 1));
}

void *rift_slab_map_huge(size_t bytes) {
    /* Over-map by one page and trim: the kernel backs a huge page only at
     * a huge-page boundary. */
    if (bytes == 0 || bytes % RIFT_SLAB_HUGE != 0 ||
        bytes > SIZE_MAX - RIFT_SLAB_HUGE) {
        return NULL;
    }
    size_t len = bytes + RIFT_SLAB_HUGE;
    uint8_t *raw = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        return NULL;
    }
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + RIFT_SLAB_HUGE - 1) &
                             ~(uintptr_t)(RIFT_SLAB_HUGE - 1));
    if (p > raw) {
        munmap(raw, (size_t)(p - raw));
    }
    if (p + bytes < raw + len) {
        munmap(p + bytes, (size_t)(raw + len - (p + bytes)));
    }
#ifdef MADV_HUGEPAGE
    /* Fails harmlessly where transparent huge pages are off: the memory
     * is then faulted in by 4 KiB pages like any other. */
    (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

void rift_slab_unmap_huge(void *p, size_t bytes) {
    if (p != NULL) {
        munmap(p, bytes);
    }
}

static chunk *chunk_map(void) {
    return rift_slab_map_huge(CHUNK_SIZE);
}

static void chunk_unmap(chunk *c) {
    rift_slab_unmap_huge(c, CHUNK_SIZE);
}

static void home_destroy(home *h) {
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void rift_slab_enable(size_t max_bytes) {
    if (tls_home != NULL) {
        return;
    }
    home *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return; /* blocks then come from the C allocator */
    }
    pthread_mutex_init(&h->lock, NULL);
    atomic_init(&h->remote_any, false);
    h->alive = true;
    h->max_chunks = max_bytes / CHUNK_SIZE;
    tls_home = h;
}

/* Moves the blocks other threads freed onto the owner's free lists. */
static void take_remote(home *h) {
    pthread_mutex_lock(&h->lock);
    void *b = h->remote;
    h->remote = NULL;
    atomic_store_explicit(&h->remote_any, false, memory_order_relaxed);
    pthread_mutex_unlock(&h->lock);
    while (b != NULL) {
        void *next = *(void **)b;
        chunk *c = chunk_of(b);
        size_t cls = c->block / STEP - 1;
        c->used--;
        *(void **)b = h->free[cls];
        h->free[cls] = b;
        b = next;
    }
}

void *rift_slab_alloc(size_t size) {
    home *h = tls_home;
    if (h == NULL || size > RIFT_SLAB_MAX) {
        return NULL;
    }
    size_t cls = size > 0 ? (size - 1) / STEP : 0;
    if (h->free[cls] == NULL &&
        atomic_load_explicit(&h->remote_any, memory_order_relaxed)) {
        take_remote(h);
    }
    void *b = h->free[cls];
    if (b != NULL) {
        h->free[cls] = *(void **)b;
        chunk_of(b)->used++;
        return b;
    }
    size_t block = (cls + 1) * STEP;
    chunk *c = h->cur[cls];
    if (c == NULL || h->carve[cls] + block > CHUNK_SIZE) {
        if (h->nchunks >= h->max_chunks || (c = chunk_map()) == NULL) {
            return NULL;
        }
        c->home = h;
        c->block = block;
        c->used = 0;
        RIFT_DLIST_PUSH(h->chunks, c, prev, next);
        h->nchunks++;
        h->cur[cls] = c;
        h->carve[cls] = CHUNK_HEAD;
    }
    b = (uint8_t *)c + h->carve[cls];
    h->carve[cls] += block;
    c->used++;
    return b;
}

void rift_slab_free(void *block) {
    chunk *c = chunk_of(block);
    home *h = c->home;
    if (h == tls_home) {
        /* The owner, hence alive: no lock. */
        size_t cls = c->block / STEP - 1;
        c->used--;
        *(void **)block = h->free[cls];
        h->free[cls] = block;
        return;
    }
    pthread_mutex_lock(&h->lock);
    if (h->alive) {
        *(void **)block = h->remote;
        h->remote = block;
        atomic_store_explicit(&h->remote_any, true, memory_order_relaxed);
        pthread_mutex_unlock(&h->lock);
        return;
    }
    bool last_chunk = false;
    if (--c->used == 0) {
        chunk_unmap(c);
        last_chunk = --h->nchunks == 0;
    }
    pthread_mutex_unlock(&h->lock);
    if (last_chunk) {
        home_destroy(h);
    }
}

/* Drops from the free lists every block of a chunk with no block in use
 * (all of its carved blocks are on the lists), then unmaps those chunks. */
static void unmap_idle(home *h) {
    for (size_t cls = 0; cls < CLASSES; cls++) {
        void **link = &h->free[cls];
        while (*link != NULL) {
            void *b = *link;
            if (chunk_of(b)->used == 0) {
                *link = *(void **)b;
            } else {
                link = (void **)b;
            }
        }
    }
    chunk *c = h->chunks;
    while (c != NULL) {
        chunk *next = c->next;
        if (c->used == 0) {
            size_t cls = c->block / STEP - 1;
            if (h->cur[cls] == c) {
                h->cur[cls] = NULL;
            }
            RIFT_DLIST_REMOVE(h->chunks, c, prev, next);
            chunk_unmap(c);
            h->nchunks--;
        }
        c = next;
    }
}

void rift_slab_trim(void) {
    home *h = tls_home;
    if (h == NULL) {
        return;
    }
    take_remote(h);
    unmap_idle(h);
}

void rift_slab_disable(void) {
    home *h = tls_home;
    if (h == NULL) {
        return;
    }
    tls_home = NULL;
    /* From here on other threads free under the lock, so the last
     * accounting and the unmapping happen under it too. */
    pthread_mutex_lock(&h->lock);
    h->alive = false;
    void *b = h->remote;
    h->remote = NULL;
    while (b != NULL) {
        void *next = *(void **)b;
        chunk_of(b)->used--;
        b = next;
    }
    for (size_t cls = 0; cls < CLASSES; cls++) {
        h->free[cls] = NULL; /* every listed block goes with its chunk */
    }
    unmap_idle(h);
    bool empty = h->nchunks == 0;
    pthread_mutex_unlock(&h->lock);
    if (empty) {
        home_destroy(h);
    }
}
