/*
 * sublist.h — the subscription trie (broker layer): one node per pattern
 * prefix, literal children found through one hash table keyed by (parent,
 * token), plus dedicated '*' and '>' child pointers per node. Each node
 * keeps the entries registered on exactly its pattern in an intrusive
 * list, in registration order.
 *
 * Matching a literal subject walks the literal, '*' and '>' branches token
 * by token, so its cost grows with the number of subject tokens (and the
 * number of matching entries), not with the number of subscriptions. The
 * broker caches match results on top of this (match cache in broker.c).
 *
 * Not thread-safe: the broker mutates it under its write lock and matches
 * under its read lock; matching never writes.
 */
#ifndef RIFT_BROKER_SUBLIST_H
#define RIFT_BROKER_SUBLIST_H

#include "common/pmap.h"
#include "common/common.h"

typedef struct rift_sl_node rift_sl_node;

/* Embedded in each subscription. |seq| orders candidates. */
typedef struct rift_sl_entry {
    struct rift_sl_entry *prev, *next;
    rift_sl_node *node; /* NULL while not inserted */
    uint64_t seq;       /* registration sequence, set by the caller */
    bool wildcard;      /* pattern has a '*' or '>' token */
} rift_sl_entry;

typedef struct rift_sublist {
    const rift_mem *mem;
    uint64_t seed;
    rift_sl_node *root;
    rift_pmap children; /* (parent, token) -> literal child node */
    size_t nentries;
    size_t nwild; /* entries whose pattern has a wildcard */
} rift_sublist;

/* A growable vector of entries with inline storage for small results. */
#define RIFT_SL_VEC_INLINE 32
typedef struct rift_sl_vec {
    rift_sl_entry **v;
    size_t len, cap;
    const rift_mem *mem;
    rift_sl_entry *inline_buf[RIFT_SL_VEC_INLINE];
} rift_sl_vec;

void rift_sl_vec_init(rift_sl_vec *vec, const rift_mem *mem);
void rift_sl_vec_free(rift_sl_vec *vec);

/* rift_sublist_init: 0 or RIFT_ERR_NOMEM. */
int rift_sublist_init(rift_sublist *sl, const rift_mem *mem, uint64_t seed);

/* rift_sublist_free frees every node; inserted entries are left dangling
 * with node = NULL (the caller owns them). */
void rift_sublist_free(rift_sublist *sl);

/*
 * rift_sublist_insert registers |e| on |pattern| (already validated),
 * appending it to the node's list. 0 or RIFT_ERR_NOMEM (nothing changed).
 */
int rift_sublist_insert(rift_sublist *sl, const char *pattern, size_t len,
                        rift_sl_entry *e);

/* rift_sublist_remove unlinks |e| and prunes nodes left empty. */
void rift_sublist_remove(rift_sublist *sl, rift_sl_entry *e);

/*
 * rift_sublist_match appends to |out| every entry whose pattern matches the
 * literal |subject| (already validated): first the entries of the exact
 * (wildcard-free) pattern in registration order, then the wildcard ones
 * sorted by seq. Returns the number of exact entries, or RIFT_ERR_NOMEM.
 */
rift_ssize rift_sublist_match(const rift_sublist *sl, const char *subject,
                              size_t len, rift_sl_vec *out);

#endif /* RIFT_BROKER_SUBLIST_H */
