/*
 * msg.c — messages received by the Rift client (client layer): MESSAGE
 * frames of subscriptions and requests, DELIVERY frames of fetches.
 *
 * A message is one allocation holding the struct and NUL-terminated copies
 * of its subject and reply. The payload is copied after them when the
 * frame body was handed out in place (it lives only during the QUIC
 * callback); when the frame reader had to assemble the body (large or
 * fragmented frames), the message takes that buffer over instead, so a
 * payload is copied at most once on its way to the application.
 */
#include "client/client_internal.h"

#include <string.h>

int rift_client_msg_build(rift_client_msg **pm, const rift_mem *mem,
                          const rift_frame_msg *f, uint8_t *detached,
                          uint32_t wire_len) {
    size_t extra =
        f->subject_len + 1 + (f->reply_len > 0 ? f->reply_len + 1 : 0);
    if (detached == NULL) {
        extra += f->payload_len;
    }
    rift_client_msg *m = rift_malloc(mem, sizeof(*m) + extra);
    if (m == NULL) {
        rift_free(mem, detached);
        return RIFT_ERR_NOMEM;
    }
    char *p = (char *)(m + 1);
    m->mem = mem;
    m->next = NULL;
    m->subject = p;
    m->subject_len = f->subject_len;
    memcpy(p, f->subject, f->subject_len);
    p[f->subject_len] = '\0';
    p += f->subject_len + 1;
    if (f->reply_len > 0) {
        m->reply = p;
        m->reply_len = f->reply_len;
        memcpy(p, f->reply, f->reply_len);
        p[f->reply_len] = '\0';
        p += f->reply_len + 1;
    } else {
        m->reply = NULL;
        m->reply_len = 0;
    }
    m->payload_len = f->payload_len;
    if (detached != NULL) {
        m->body = detached;
        m->payload = f->payload;
    } else {
        m->body = NULL;
        if (f->payload_len > 0) {
            memcpy(p, f->payload, f->payload_len);
        }
        m->payload = (const uint8_t *)p;
    }
    m->sequence = 0;
    m->timestamp_ms = 0;
    m->delivery_count = 0;
    m->wire_len = wire_len;
    *pm = m;
    return 0;
}

const char *rift_client_msg_subject(const rift_client_msg *m, size_t *len) {
    if (len != NULL) {
        *len = m->subject_len;
    }
    return m->subject;
}

const char *rift_client_msg_reply(const rift_client_msg *m, size_t *len) {
    if (len != NULL) {
        *len = m->reply_len;
    }
    return m->reply;
}

const uint8_t *rift_client_msg_payload(const rift_client_msg *m, size_t *len) {
    if (len != NULL) {
        *len = m->payload_len;
    }
    return m->payload_len > 0 ? m->payload : NULL;
}

uint64_t rift_client_msg_sequence(const rift_client_msg *m) {
    return m->sequence;
}

uint64_t rift_client_msg_timestamp_ms(const rift_client_msg *m) {
    return m->timestamp_ms;
}

uint32_t rift_client_msg_delivery_count(const rift_client_msg *m) {
    return m->delivery_count;
}

void rift_client_msg_del(rift_client_msg *m) {
    if (m == NULL) {
        return;
    }
    rift_free(m->mem, m->body);
    rift_free(m->mem, m);
}
