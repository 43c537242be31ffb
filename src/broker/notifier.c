/*
 * notifier.c — one readiness fd for many subscriptions (broker layer): an
 * eventfd plus a ready list, so an event loop (the QUIC server, a Lua
 * worker) waits on any number of subscriptions with one descriptor.
 *
 * The eventfd is written only when the list goes from empty to non-empty
 * and read back when rift_notifier_poll empties it, so a burst of
 * publications costs at most one write syscall per poll cycle.
 */
#include "broker/internal.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

int rift_notifier_new(rift_notifier **pn, const rift_mem *mem,
                      rift_error *err) {
    rift_notifier *n = rift_calloc(mem, 1, sizeof(*n));
    if (n == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    n->mem = mem;
    n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (n->efd < 0) {
        int rc = -errno;
        rift_free(mem, n);
        return rift_error_set(err, rc, "notifier eventfd: %s",
                              rift_strerror(rc));
    }
    pthread_mutex_init(&n->lock, NULL);
    *pn = n;
    return 0;
}

void rift_notifier_set_owner(rift_notifier *n) {
    pthread_mutex_lock(&n->lock);
    n->owner = pthread_self();
    n->has_owner = true;
    pthread_mutex_unlock(&n->lock);
}

int rift_notifier_fd(const rift_notifier *n) {
    return n->efd;
}

void rift_notifier_push(rift_notifier *n, rift_sub *sub) {
    pthread_mutex_lock(&n->lock);
    if (!sub->on_ready) {
        sub->on_ready = true;
        sub->ready_next = NULL;
        sub->ready_prev = n->tail;
        if (n->tail != NULL) {
            n->tail->ready_next = sub;
        } else {
            n->head = sub;
        }
        n->tail = sub;
        /* The owner polls after its own publications: no wake-up (two
         * syscalls per message for an event loop publishing to itself). */
        if (!n->signalled &&
            !(n->has_owner && pthread_equal(n->owner, pthread_self()))) {
            (void)eventfd_write(n->efd, 1);
            n->signalled = true;
        }
    }
    pthread_mutex_unlock(&n->lock);
}

static void unlink_sub(rift_notifier *n, rift_sub *sub) {
    if (sub->ready_prev != NULL) {
        sub->ready_prev->ready_next = sub->ready_next;
    } else {
        n->head = sub->ready_next;
    }
    if (sub->ready_next != NULL) {
        sub->ready_next->ready_prev = sub->ready_prev;
    } else {
        n->tail = sub->ready_prev;
    }
    sub->ready_prev = sub->ready_next = NULL;
    sub->on_ready = false;
}

/* reset_if_idle clears the fd once nothing is ready (n->lock held). */
static void reset_if_idle(rift_notifier *n) {
    if (n->head == NULL && n->signalled) {
        eventfd_t v;
        (void)eventfd_read(n->efd, &v);
        n->signalled = false;
    }
}

void rift_notifier_forget(rift_notifier *n, rift_sub *sub) {
    pthread_mutex_lock(&n->lock);
    if (sub->on_ready) {
        unlink_sub(n, sub);
        reset_if_idle(n);
    }
    pthread_mutex_unlock(&n->lock);
}

size_t rift_notifier_poll(rift_notifier *n, rift_sub **subs, size_t max) {
    size_t k = 0;
    pthread_mutex_lock(&n->lock);
    while (k < max && n->head != NULL) {
        rift_sub *sub = n->head;
        unlink_sub(n, sub);
        subs[k++] = sub;
    }
    reset_if_idle(n);
    pthread_mutex_unlock(&n->lock);
    return k;
}

void rift_notifier_del(rift_notifier *n) {
    if (n == NULL) {
        return;
    }
    close(n->efd);
    pthread_mutex_destroy(&n->lock);
    rift_free(n->mem, n);
}
