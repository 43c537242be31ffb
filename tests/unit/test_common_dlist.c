/*
 * test_common_dlist.c — the intrusive doubly-linked list of common/dlist.h
 * (common layer): push, append and removal at the head, in the middle and
 * at the tail keep both directions of the links and the head and tail
 * right, removal clears the item's links, and one item sits on two lists
 * through two pairs of fields.
 */
#include "common/dlist.h"
#include "test.h"

typedef struct item {
    char name;
    struct item *prev, *next;             /* first list */
    struct item *other_prev, *other_next; /* second list */
} item;

/* Renders the list forwards from |head| and backwards from |tail|; the
 * two must agree, and the first item has no prev. */
static void render(const item *head, const item *tail, char *out, size_t cap) {
    size_t n = 0;
    const item *last = NULL;
    for (const item *x = head; x != NULL && n + 1 < cap; x = x->next) {
        CHECK(x->prev == last);
        out[n++] = x->name;
        last = x;
    }
    out[n] = '\0';
    CHECK(last == tail || tail == NULL);
    char back[16];
    size_t m = 0;
    for (const item *x = last; x != NULL && m + 1 < sizeof(back); x = x->prev) {
        back[m++] = x->name;
    }
    CHECK_EQ_INT(m, n);
    for (size_t i = 0; i < m && i < n; i++) {
        CHECK(back[i] == out[n - 1 - i]);
    }
}

static void check_list(const item *head, const item *tail, const char *want) {
    char got[16];
    render(head, tail, got, sizeof(got));
    CHECK_EQ_STR(got, want);
}

RIFT_TEST(push_puts_first_and_remove_anywhere) {
    item a = {.name = 'a'}, b = {.name = 'b'}, c = {.name = 'c'},
         d = {.name = 'd'};
    item *head = NULL;
    RIFT_DLIST_PUSH(head, &a, prev, next);
    RIFT_DLIST_PUSH(head, &b, prev, next);
    RIFT_DLIST_PUSH(head, &c, prev, next);
    RIFT_DLIST_PUSH(head, &d, prev, next);
    check_list(head, NULL, "dcba");

    RIFT_DLIST_REMOVE(head, &c, prev, next); /* middle */
    check_list(head, NULL, "dba");
    CHECK(c.prev == NULL && c.next == NULL);
    RIFT_DLIST_REMOVE(head, &d, prev, next); /* head */
    check_list(head, NULL, "ba");
    RIFT_DLIST_REMOVE(head, &a, prev, next); /* last */
    check_list(head, NULL, "b");
    CHECK(a.prev == NULL && a.next == NULL);
    RIFT_DLIST_REMOVE(head, &b, prev, next); /* only */
    CHECK(head == NULL);
    CHECK(b.prev == NULL && b.next == NULL);
}

RIFT_TEST(append_keeps_order_and_tail) {
    item a = {.name = 'a'}, b = {.name = 'b'}, c = {.name = 'c'};
    item *head = NULL, *tail = NULL;
    RIFT_DLIST_APPEND(head, tail, &a, prev, next);
    CHECK(head == &a && tail == &a);
    RIFT_DLIST_APPEND(head, tail, &b, prev, next);
    RIFT_DLIST_APPEND(head, tail, &c, prev, next);
    check_list(head, tail, "abc");

    RIFT_DLIST_REMOVE_TAILED(head, tail, &c, prev, next); /* tail */
    CHECK(tail == &b);
    check_list(head, tail, "ab");
    RIFT_DLIST_APPEND(head, tail, &c, prev, next);
    RIFT_DLIST_REMOVE_TAILED(head, tail, &b, prev, next); /* middle */
    check_list(head, tail, "ac");
    CHECK(b.prev == NULL && b.next == NULL);
    RIFT_DLIST_REMOVE_TAILED(head, tail, &a, prev, next); /* head */
    CHECK(head == &c && tail == &c);
    RIFT_DLIST_REMOVE_TAILED(head, tail, &c, prev, next); /* only */
    CHECK(head == NULL && tail == NULL);
    CHECK(c.prev == NULL && c.next == NULL);

    /* A removed item can be appended again. */
    RIFT_DLIST_APPEND(head, tail, &b, prev, next);
    check_list(head, tail, "b");
}

RIFT_TEST(one_item_on_two_lists) {
    item a = {.name = 'a'}, b = {.name = 'b'};
    item *first = NULL;
    item *second = NULL, *second_tail = NULL;
    RIFT_DLIST_PUSH(first, &a, prev, next);
    RIFT_DLIST_PUSH(first, &b, prev, next);
    RIFT_DLIST_APPEND(second, second_tail, &a, other_prev, other_next);
    RIFT_DLIST_APPEND(second, second_tail, &b, other_prev, other_next);
    check_list(first, NULL, "ba");
    CHECK(second == &a && a.other_next == &b && b.other_prev == &a);

    RIFT_DLIST_REMOVE_TAILED(second, second_tail, &a, other_prev, other_next);
    CHECK(second == &b && second_tail == &b);
    check_list(first, NULL, "ba"); /* the first list is untouched */
    CHECK(a.next == NULL && a.prev == &b);
}
