/*
 * dlist.h — intrusive doubly-linked lists (common layer): the one copy of
 * the link and unlink steps that the broker, the Lua host, the server, the
 * client and the transport all need.
 *
 * The items carry their own links, two pointer fields of any name, so a
 * list costs no allocation, removal is O(1) from the item alone, and an
 * item can be on several lists at once (a subscription is on its broker's
 * registry and on a notifier's ready list, through different fields). A
 * list is a head pointer, or a head and a tail pointer (a "tailed" list)
 * when items are appended in order. The links and heads stay typed
 * pointers of the item's own type, so loops over a list are plain
 * `for (x = head; x != NULL; x = x->next)` and a debugger shows the items.
 *
 * The macros name the fields: RIFT_DLIST_PUSH(srv->conns, c, prev, next).
 * Their arguments are evaluated more than once: pass variables or member
 * accesses without side effects. Not thread-safe: the owner's lock guards
 * the list, as it guards the items.
 */
#ifndef RIFT_COMMON_DLIST_H
#define RIFT_COMMON_DLIST_H

#include <stddef.h>

/* Puts |item| first on the list that starts at |head|. */
#define RIFT_DLIST_PUSH(head, item, prev, next)                                \
 do {                                                                          \
  (item)->prev = NULL;                                                         \
  (item)->next = (head);                                                       \
  if ((head) != NULL) {                                                        \
   (head)->prev = (item);                                                      \
  }                                                                            \
  (head) = (item);                                                             \
 } while (0)

/* Takes |item| (which is on it) off the list that starts at |head| and
 * clears the item's links. */
#define RIFT_DLIST_REMOVE(head, item, prev, next)                              \
 do {                                                                          \
  if ((item)->prev != NULL) {                                                  \
   (item)->prev->next = (item)->next;                                          \
  } else {                                                                     \
   (head) = (item)->next;                                                      \
  }                                                                            \
  if ((item)->next != NULL) {                                                  \
   (item)->next->prev = (item)->prev;                                          \
  }                                                                            \
  (item)->prev = (item)->next = NULL;                                          \
 } while (0)

/* Puts |item| last on the tailed list |head| .. |tail|. */
#define RIFT_DLIST_APPEND(head, tail, item, prev, next)                        \
 do {                                                                          \
  (item)->next = NULL;                                                         \
  (item)->prev = (tail);                                                       \
  if ((tail) != NULL) {                                                        \
   (tail)->next = (item);                                                      \
  } else {                                                                     \
   (head) = (item);                                                            \
  }                                                                            \
  (tail) = (item);                                                             \
 } while (0)

/* Takes |item| (which is on it) off the tailed list |head| .. |tail| and
 * clears the item's links. */
#define RIFT_DLIST_REMOVE_TAILED(head, tail, item, prev, next)                 \
 do {                                                                          \
  if ((item)->prev != NULL) {                                                  \
   (item)->prev->next = (item)->next;                                          \
  } else {                                                                     \
   (head) = (item)->next;                                                      \
  }                                                                            \
  if ((item)->next != NULL) {                                                  \
   (item)->next->prev = (item)->prev;                                          \
  } else {                                                                     \
   (tail) = (item)->prev;                                                      \
  }                                                                            \
  (item)->prev = (item)->next = NULL;                                          \
 } while (0)

#endif /* RIFT_COMMON_DLIST_H */
