/*
 * sublist.c — the subscription trie (broker layer). See sublist.h.
 *
 * Every non-root node, whatever its token, is also kept in the children
 * table under (parent, token); the '*' and '>' pointers are shortcuts for
 * the walk. That lets rift_sublist_free reach every node without recursion
 * and without a separate node list.
 */
#include "broker/sublist.h"

#include "common/dlist.h"
#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

enum {
    NODE_LITERAL,
    NODE_STAR,
    NODE_GT
};

/* 56 bytes plus the token: a million single-subscription subjects cost
 * about one node each, so the node is kept small (its table hash is
 * recomputed on removal rather than stored). */
struct rift_sl_node {
    rift_sl_node *parent;
    rift_sl_node *star, *gt;
    rift_sl_entry *head, *tail;
    uint32_t nchildren; /* children of any kind */
    uint32_t token_len; /* tokens are at most max_subject_bytes long */
    bool wild;          /* the path from the root has a wildcard */
    uint8_t kind;
    char token[];
};

/* ---- Vectors ---- */

void rift_sl_vec_init(rift_sl_vec *vec, const rift_mem *mem) {
    vec->v = vec->inline_buf;
    vec->len = 0;
    vec->cap = RIFT_SL_VEC_INLINE;
    vec->mem = mem;
}

void rift_sl_vec_free(rift_sl_vec *vec) {
    if (vec->v != vec->inline_buf) {
        rift_free(vec->mem, vec->v);
    }
    rift_sl_vec_init(vec, vec->mem);
}

static int vec_reserve(rift_sl_vec *vec, size_t extra) {
    if (vec->len + extra <= vec->cap) {
        return 0;
    }
    size_t cap = vec->cap * 2;
    while (cap < vec->len + extra) {
        cap *= 2;
    }
    if (cap > SIZE_MAX / sizeof(*vec->v)) {
        return RIFT_ERR_NOMEM;
    }
    rift_sl_entry **v = rift_malloc(vec->mem, cap * sizeof(*v));
    if (v == NULL) {
        return RIFT_ERR_NOMEM;
    }
    memcpy(v, vec->v, vec->len * sizeof(*v));
    if (vec->v != vec->inline_buf) {
        rift_free(vec->mem, vec->v);
    }
    vec->v = v;
    vec->cap = cap;
    return 0;
}

/* ---- Nodes ---- */

static uint64_t child_hash(const rift_sublist *sl, const rift_sl_node *parent,
                           const char *tok, size_t len) {
    uint64_t seed = sl->seed ^ ((uint64_t)(uintptr_t)parent * RIFT_HASH_K2);
    return rift_hash_bytes(tok, len, seed);
}

static rift_sl_node *child_find(const rift_sublist *sl,
                                const rift_sl_node *parent, const char *tok,
                                size_t len, uint64_t h) {
    const rift_pmap *m = &sl->children;
    if (m->slots == NULL) {
        return NULL;
    }
    for (size_t i = rift_pmap_first(m, h); m->slots[i].item != NULL;
         i = rift_pmap_next(m, i)) {
        rift_sl_node *n = m->slots[i].item;
        if (m->slots[i].hash == h && n->parent == parent &&
            n->token_len == len && memcmp(n->token, tok, len) == 0) {
            return n;
        }
    }
    return NULL;
}

static rift_sl_node *node_new(const rift_sublist *sl, rift_sl_node *parent,
                              const char *tok, size_t len) {
    if (len > UINT32_MAX) {
        return NULL;
    }
    rift_sl_node *n = rift_calloc(sl->mem, 1, sizeof(*n) + len + 1);
    if (n == NULL) {
        return NULL;
    }
    n->parent = parent;
    n->token_len = (uint32_t)len;
    memcpy(n->token, tok, len);
    n->kind = NODE_LITERAL;
    if (len == 1 && tok[0] == '*') {
        n->kind = NODE_STAR;
    } else if (len == 1 && tok[0] == '>') {
        n->kind = NODE_GT;
    }
    n->wild = (parent != NULL && parent->wild) || n->kind != NODE_LITERAL;
    return n;
}

/* prune frees |n| and its ancestors while they hold nothing. */
static void prune(rift_sublist *sl, rift_sl_node *n) {
    while (n != sl->root && n->head == NULL && n->nchildren == 0) {
        rift_sl_node *parent = n->parent;
        rift_pmap_remove(&sl->children,
                         child_hash(sl, parent, n->token, n->token_len), n);
        if (parent->star == n) {
            parent->star = NULL;
        } else if (parent->gt == n) {
            parent->gt = NULL;
        }
        parent->nchildren--;
        rift_free(sl->mem, n);
        n = parent;
    }
}

/* ---- Public ---- */

int rift_sublist_init(rift_sublist *sl, const rift_mem *mem, uint64_t seed) {
    sl->mem = mem;
    sl->seed = seed;
    sl->nentries = 0;
    sl->nwild = 0;
    rift_pmap_init(&sl->children);
    sl->root = node_new(sl, NULL, "", 0);
    return sl->root ? 0 : RIFT_ERR_NOMEM;
}

static void detach_entries(rift_sl_node *n) {
    for (rift_sl_entry *e = n->head; e != NULL; e = e->next) {
        e->node = NULL;
    }
}

void rift_sublist_free(rift_sublist *sl) {
    rift_pmap *m = &sl->children;
    for (size_t i = 0; m->slots != NULL && i <= m->mask; i++) {
        if (m->slots[i].item != NULL) {
            detach_entries(m->slots[i].item);
            rift_free(sl->mem, m->slots[i].item);
        }
    }
    rift_pmap_free(m, sl->mem);
    if (sl->root != NULL) {
        detach_entries(sl->root);
        rift_free(sl->mem, sl->root);
        sl->root = NULL;
    }
    sl->nentries = 0;
    sl->nwild = 0;
}

int rift_sublist_insert(rift_sublist *sl, const char *pattern, size_t len,
                        rift_sl_entry *e) {
    rift_sl_node *n = sl->root;
    size_t pos = 0;
    while (pos < len) {
        const char *dot = memchr(pattern + pos, '.', len - pos);
        size_t end = dot ? (size_t)(dot - pattern) : len;
        const char *tok = pattern + pos;
        size_t tlen = end - pos;
        uint64_t h = child_hash(sl, n, tok, tlen);
        rift_sl_node *c = child_find(sl, n, tok, tlen, h);
        if (c == NULL) {
            c = node_new(sl, n, tok, tlen);
            if (c == NULL ||
                rift_pmap_insert(&sl->children, sl->mem, h, c) != 0) {
                rift_free(sl->mem, c);
                prune(sl, n);
                return RIFT_ERR_NOMEM;
            }
            n->nchildren++;
            if (c->kind == NODE_STAR) {
                n->star = c;
            } else if (c->kind == NODE_GT) {
                n->gt = c;
            }
        }
        n = c;
        pos = end + 1;
    }
    e->node = n;
    RIFT_DLIST_APPEND(n->head, n->tail, e, prev, next);
    e->wildcard = n->wild;
    sl->nentries++;
    sl->nwild += e->wildcard;
    return 0;
}

void rift_sublist_remove(rift_sublist *sl, rift_sl_entry *e) {
    rift_sl_node *n = e->node;
    if (n == NULL) {
        return;
    }
    RIFT_DLIST_REMOVE_TAILED(n->head, n->tail, e, prev, next);
    e->node = NULL;
    sl->nentries--;
    sl->nwild -= e->wildcard;
    prune(sl, n);
}

/* ---- Matching ---- */

typedef struct frame {
    const rift_sl_node *node;
    size_t pos; /* start of the next subject token; len + 1 = consumed */
} frame;

static int collect(rift_sl_vec *out, const rift_sl_node *n) {
    for (rift_sl_entry *e = n->head; e != NULL; e = e->next) {
        if (vec_reserve(out, 1) != 0) {
            return RIFT_ERR_NOMEM;
        }
        out->v[out->len++] = e;
    }
    return 0;
}

static int by_seq(const void *a, const void *b) {
    const rift_sl_entry *x = *(rift_sl_entry *const *)a;
    const rift_sl_entry *y = *(rift_sl_entry *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort_by_seq(rift_sl_entry **v, size_t n) {
    if (n > 16) {
        qsort(v, n, sizeof(*v), by_seq);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        rift_sl_entry *x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1]->seq > x->seq) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* Doubles the walk's stack; the first one lives on the C stack and is
 * never freed here. Rare: only subjects deeper than 64 frames get here. */
static int grow_stack(const rift_mem *mem, frame **stack, size_t *cap,
                      size_t depth, const frame *inline_stack) {
    frame *bigger = rift_malloc(mem, *cap * 2 * sizeof(*bigger));
    if (bigger == NULL) {
        return RIFT_ERR_NOMEM;
    }
    memcpy(bigger, *stack, depth * sizeof(*bigger));
    if (*stack != inline_stack) {
        rift_free(mem, *stack);
    }
    *stack = bigger;
    *cap *= 2;
    return 0;
}

/* Pushes the children of n that match the token [pos, end): the star,
 * and the literal child of that name. The caller made room for two. */
static inline size_t push_children(const rift_sublist *sl,
                                   const rift_sl_node *n, const char *subject,
                                   size_t pos, size_t end, frame *stack,
                                   size_t depth) {
    if (n->star != NULL) {
        stack[depth++] = (frame){n->star, end + 1};
    }
    if (n->nchildren > (size_t)(n->star != NULL) + (n->gt != NULL)) {
        const char *tok = subject + pos;
        size_t tlen = end - pos;
        const rift_sl_node *c =
            child_find(sl, n, tok, tlen, child_hash(sl, n, tok, tlen));
        if (c != NULL && c->kind == NODE_LITERAL) {
            stack[depth++] = (frame){c, end + 1};
        }
    }
    return depth;
}

/* Puts the exact node's entries before the wildcard ones collected from
 * base on (those sorted by seq); *nexact is how many exact ones. */
static inline int place_exact(rift_sl_vec *out, size_t base,
                              const rift_sl_node *exact, size_t *nexact) {
    size_t nwild = out->len - base;
    *nexact = 0;
    if (exact != NULL) {
        for (rift_sl_entry *e = exact->head; e != NULL; e = e->next) {
            (*nexact)++;
        }
        int rc = vec_reserve(out, *nexact);
        if (rc != 0) {
            return rc;
        }
        memmove(out->v + base + *nexact, out->v + base,
                nwild * sizeof(*out->v));
        size_t i = base;
        for (rift_sl_entry *e = exact->head; e != NULL; e = e->next) {
            out->v[i++] = e;
        }
        out->len += *nexact;
    }
    sort_by_seq(out->v + base + *nexact, nwild);
    return 0;
}

rift_ssize rift_sublist_match(const rift_sublist *sl, const char *subject,
                              size_t len, rift_sl_vec *out) {
    /* Depth-first walk with an explicit stack: subjects may have hundreds
     * of tokens and callers may run on small thread stacks. Each trie node
     * is visited at most once (a node fixes how many tokens it consumes),
     * so the walk costs O(tokens x matching branches). */
    frame inline_stack[64];
    frame *stack = inline_stack;
    size_t depth = 0, cap = RIFT_ARRAY_LEN(inline_stack);
    const rift_sl_node *exact = NULL;
    size_t base = out->len;
    int rc = 0;

    stack[depth++] = (frame){sl->root, 0};
    while (depth > 0) {
        frame f = stack[--depth];
        const rift_sl_node *n = f.node;
        if (f.pos > len) {
            if (!n->wild) {
                exact = n;
            } else if ((rc = collect(out, n)) != 0) {
                goto done;
            }
            continue;
        }
        const char *dot = memchr(subject + f.pos, '.', len - f.pos);
        size_t end = dot ? (size_t)(dot - subject) : len;
        if (n->gt != NULL && (rc = collect(out, n->gt)) != 0) {
            goto done;
        }
        if (depth + 2 > cap && (rc = grow_stack(out->mem, &stack, &cap, depth,
                                                inline_stack)) != 0) {
            goto done;
        }
        depth = push_children(sl, n, subject, f.pos, end, stack, depth);
    }

    size_t nexact = 0;
    if ((rc = place_exact(out, base, exact, &nexact)) != 0) {
        goto done;
    }

done:
    if (stack != inline_stack) {
        rift_free(out->mem, stack);
    }
    if (rc != 0) {
        out->len = base;
        return rc;
    }
    return (rift_ssize)nexact;
}
