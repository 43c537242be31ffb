/*
 * msg.c — immutable, reference-counted messages (broker layer). A message
 * is one allocation: header, subject, reply and (unless external) payload,
 * so fan-out to any number of receivers shares one buffer. Threads that
 * enabled it take small blocks from their slab (broker_face.h, common/slab.h).
 */
#include "broker/broker_internal.h"
#include "broker/broker_face.h"
#include "broker/msg_ext.h"
#include "common/slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Per-thread block cache ---- */

#if defined(__SANITIZE_ADDRESS__)
# define MSG_CACHE_OFF 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define MSG_CACHE_OFF 1
# endif
#endif

/* The |mem| of a message whose block came from a slab (common/slab.h): its
 * address alone marks it, nothing reads it. */
static const rift_mem slab_mem;

void rift_msg_cache_enable(size_t max_bytes) {
#ifndef MSG_CACHE_OFF
    rift_slab_enable(max_bytes);
#else
    (void)max_bytes;
#endif
}

void rift_msg_cache_trim(void) {
    rift_slab_trim();
}

void rift_msg_cache_disable(void) {
    rift_slab_disable();
}

/* ---- Messages ---- */

/* Where an external message keeps its payload's release callback: past
 * its names, aligned. */
typedef struct msg_ext {
    rift_msg_release_cb release;
    void *ud;
} msg_ext;

/* Longest subject or reply a message can hold (the length fields). */
#define NAME_MAX_LEN ((size_t)INT32_MAX)
/* The reply's length field is 30 bits wide (broker_internal.h). */
#define REPLY_MAX_LEN (((size_t)1 << 30) - 1)

static char *names_end(const rift_msg *m) {
    size_t n = (size_t)m->subject_len + 1;
    if (m->reply_len > 0) {
        n += (size_t)m->reply_len + 1;
    }
    return (char *)m->subject + n;
}

static msg_ext *ext_of(const rift_msg *m) {
    uintptr_t p = (uintptr_t)names_end(m);
    p = (p + _Alignof(msg_ext) - 1) & ~(uintptr_t)(_Alignof(msg_ext) - 1);
    return (msg_ext *)p;
}

/* Makes a message with |tail| bytes after its names: the inline payload,
 * or room for an external payload's release record. */
static rift_msg *msg_make(const rift_mem *mem, size_t refs, const char *subject,
                          size_t subject_len, const char *reply,
                          size_t reply_len, size_t tail) {
    if (reply == NULL) {
        reply_len = 0;
    }
    if (subject_len > NAME_MAX_LEN || reply_len > REPLY_MAX_LEN) {
        return NULL;
    }
    size_t extra = subject_len + 1 + (reply_len ? reply_len + 1 : 0);
    if (tail > SIZE_MAX - extra || sizeof(rift_msg) > SIZE_MAX - extra - tail) {
        return NULL;
    }
    size_t size = sizeof(rift_msg) + extra + tail;
    rift_msg *m = NULL;
    if (mem == NULL && (m = rift_slab_alloc(size)) != NULL) {
        mem = &slab_mem;
    } else if ((m = rift_malloc(mem, size)) == NULL) {
        return NULL;
    }
    atomic_init(&m->refs, refs);
    m->mem = mem;
    m->external = 0;
    m->no_responders = 0;
    m->ext_len = 0;
    m->subject_len = (uint32_t)subject_len;
    if (subject_len > 0) {
        memcpy(m->subject, subject, subject_len);
    }
    m->subject[subject_len] = '\0';
    m->reply_len = (uint32_t)reply_len;
    if (reply_len > 0) {
        char *r = m->subject + subject_len + 1;
        memcpy(r, reply, reply_len);
        r[reply_len] = '\0';
    }
    m->payload = (const uint8_t *)names_end(m);
    m->payload_len = tail;
    return m;
}

rift_msg *rift_msg_alloc(const rift_mem *mem, size_t refs, const char *subject,
                         size_t subject_len, const char *reply,
                         size_t reply_len, const uint8_t *payload,
                         size_t payload_len) {
    rift_msg *m = msg_make(mem, refs, subject, subject_len, reply, reply_len,
                           payload_len);
    if (m != NULL && payload_len > 0) {
        memcpy((uint8_t *)m->payload, payload, payload_len);
    }
    return m;
}

rift_msg *rift_msg_alloc_ext(const rift_mem *mem, size_t refs,
                             const char *subject, size_t subject_len,
                             const char *reply, size_t reply_len,
                             const rift_msg_block *blk, const uint8_t *payload,
                             size_t payload_len) {
    size_t ext_len = blk != NULL ? blk->len[0] + blk->len[1] : 0;
    if (ext_len > UINT32_MAX || payload_len > SIZE_MAX - ext_len) {
        return NULL;
    }
    rift_msg *m = msg_make(mem, refs, subject, subject_len, reply, reply_len,
                           ext_len + payload_len);
    if (m == NULL) {
        return NULL;
    }
    uint8_t *tail = (uint8_t *)m->payload;
    for (int i = 0; blk != NULL && i < 2; i++) {
        if (blk->len[i] > 0) {
            memcpy(tail, blk->part[i], blk->len[i]);
            tail += blk->len[i];
        }
    }
    if (payload_len > 0) {
        memcpy(tail, payload, payload_len);
    }
    m->ext_len = (uint32_t)ext_len;
    m->payload = tail;
    m->payload_len = payload_len;
    return m;
}

int rift_msg_new_ext(rift_msg **pmsg, const char *subject, size_t subject_len,
                     const char *reply, size_t reply_len, const uint8_t *ext,
                     size_t ext_len, const uint8_t *payload,
                     size_t payload_len) {
    if (ext_len > UINT32_MAX || payload_len > SIZE_MAX - ext_len) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    rift_msg_block blk = {{ext, NULL}, {ext_len, 0}};
    rift_msg *m = rift_msg_alloc_ext(NULL, 1, subject, subject_len, reply,
                                     reply_len, &blk, payload, payload_len);
    if (m == NULL) {
        return RIFT_ERR_NOMEM;
    }
    *pmsg = m;
    return 0;
}

const uint8_t *rift_msg_ext(const rift_msg *msg, size_t *len) {
    *len = msg->ext_len;
    return msg->ext_len > 0 ? msg->payload - msg->ext_len : NULL;
}

int rift_msg_new(rift_msg **pmsg, const rift_mem *mem, const char *subject,
                 size_t subject_len, const char *reply, size_t reply_len,
                 const uint8_t *payload, size_t payload_len, rift_error *err) {
    rift_msg *m = rift_msg_alloc(mem, 1, subject, subject_len, reply, reply_len,
                                 payload, payload_len);
    if (m == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    *pmsg = m;
    return 0;
}

int rift_msg_new_external(rift_msg **pmsg, const rift_mem *mem,
                          const char *subject, size_t subject_len,
                          const char *reply, size_t reply_len,
                          const uint8_t *payload, size_t payload_len,
                          rift_msg_release_cb release, void *user_data,
                          rift_error *err) {
    rift_msg *m = msg_make(mem, 1, subject, subject_len, reply, reply_len,
                           sizeof(msg_ext) + _Alignof(msg_ext) - 1);
    if (m == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    m->payload = payload;
    m->payload_len = payload_len;
    m->external = 1;
    *ext_of(m) = (msg_ext){release, user_data};
    *pmsg = m;
    return 0;
}

rift_msg *rift_msg_ref(rift_msg *msg) {
    /* Relaxed is enough to add: the caller already holds a reference, so
     * the message cannot be freed concurrently. */
    atomic_fetch_add_explicit(&msg->refs, 1, memory_order_relaxed);
    return msg;
}

static void msg_free(rift_msg *msg) {
    if (msg->external) {
        msg_ext *e = ext_of(msg);
        if (e->release != NULL) {
            e->release(e->ud);
        }
    }
    if (msg->mem == &slab_mem) {
        rift_slab_free(msg);
    } else {
        rift_free(msg->mem, msg);
    }
}

void rift_msg_unref_n(rift_msg *msg, size_t n) {
    if (msg == NULL || n == 0) {
        return;
    }
    /* A holder of every remaining reference frees without an atomic
     * read-modify-write: nobody else can add one. That is the common case
     * of a message with a single receiver. Otherwise, release on every
     * drop and acquire on the last, so the freeing thread sees every other
     * holder's reads as finished. */
    if (atomic_load_explicit(&msg->refs, memory_order_acquire) == n ||
        atomic_fetch_sub_explicit(&msg->refs, n, memory_order_acq_rel) == n) {
        msg_free(msg);
    }
}

void rift_msg_unref(rift_msg *msg) {
    rift_msg_unref_n(msg, 1);
}

const char *rift_msg_subject(const rift_msg *msg, size_t *len) {
    if (len != NULL) {
        *len = msg->subject_len;
    }
    return msg->subject;
}

const char *rift_msg_reply(const rift_msg *msg, size_t *len) {
    if (len != NULL) {
        *len = msg->reply_len;
    }
    return msg->reply_len > 0 ? msg->subject + msg->subject_len + 1 : NULL;
}

const uint8_t *rift_msg_payload(const rift_msg *msg, size_t *len) {
    if (len != NULL) {
        *len = msg->payload_len;
    }
    return msg->payload;
}

bool rift_msg_no_responders(const rift_msg *msg) {
    return msg->no_responders;
}
