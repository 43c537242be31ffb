/*
 * format.c — encoding and checking of segment headers, records, the
 * state-log header and state events (store layer). No I/O here.
 */
#include "store/format.h"
#include "store/crc32c.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- File names ---- */

void rift_seg_name(char *out, size_t len, uint64_t base) {
    snprintf(out, len, "%020" PRIu64 RIFT_SEG_SUFFIX, base);
}

bool rift_seg_name_parse(const char *name, uint64_t *base) {
    if (strlen(name) != RIFT_SEG_NAME_LEN ||
        strcmp(name + 20, RIFT_SEG_SUFFIX) != 0) {
        return false;
    }
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return false;
        }
        unsigned d = (unsigned)(name[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *base = v;
    return true;
}

/* ---- Segment header ---- */

void rift_seg_header_encode(uint8_t out[RIFT_SEG_HEADER], uint64_t base) {
    memcpy(out, RIFT_SEG_MAGIC, 8);
    rift_put_u32(out + 8, RIFT_SEG_VERSION);
    rift_put_u32(out + 12, 0);
    rift_put_u64(out + 16, base);
    rift_put_u32(out + 24, 0);
    rift_put_u32(out + 28, rift_crc32c(out, 28));
}

int rift_seg_header_decode(const uint8_t in[RIFT_SEG_HEADER], uint64_t *base) {
    if (memcmp(in, RIFT_SEG_MAGIC, 8) != 0 ||
        rift_get_u32(in + 8) != RIFT_SEG_VERSION ||
        rift_get_u32(in + 28) != rift_crc32c(in, 28)) {
        return -1;
    }
    *base = rift_get_u64(in + 16);
    return 0;
}

/* ---- Records ---- */

uint32_t rift_rec_prepare(uint8_t head[RIFT_REC_HEAD], const char *subject,
                          size_t subject_len, const char *reply,
                          size_t reply_len, const uint8_t *payload,
                          size_t payload_len) {
    uint32_t len =
        (uint32_t)(RIFT_REC_OVERHEAD + subject_len + reply_len + payload_len);
    rift_put_u32(head, len);
    rift_put_u32(head + 4, 0);
    rift_put_u16(head + 8, (uint16_t)subject_len);
    rift_put_u16(head + 10, (uint16_t)reply_len);
    rift_put_u32(head + 12, (uint32_t)payload_len);
    uint32_t crc = rift_crc32c_update(0, head, 4);
    crc = rift_crc32c_update(crc, head + 8, 8);
    crc = rift_crc32c_update(crc, subject, subject_len);
    if (reply_len > 0) {
        crc = rift_crc32c_update(crc, reply, reply_len);
    }
    if (payload_len > 0) {
        crc = rift_crc32c_update(crc, payload, payload_len);
    }
    return crc;
}

void rift_rec_finish(uint8_t *rec, uint32_t len, uint32_t partial_crc,
                     uint64_t seq, uint64_t ts) {
    uint8_t *t = rec + len - RIFT_REC_TRAILER;
    rift_put_u64(t, seq);
    rift_put_u64(t + 8, ts);
    rift_put_u32(rec + 4, rift_crc32c_update(partial_crc, t, 16));
}

bool rift_rec_head_valid(const uint8_t head[RIFT_REC_HEAD]) {
    uint64_t len = rift_get_u32(head);
    uint64_t s = rift_get_u16(head + 8);
    uint64_t r = rift_get_u16(head + 10);
    uint64_t p = rift_get_u32(head + 12);
    return s > 0 && s <= RIFT_REC_MAX_SUBJECT && r <= RIFT_REC_MAX_SUBJECT &&
           p <= RIFT_MAX_PAYLOAD_LIMIT && len == RIFT_REC_OVERHEAD + s + r + p;
}

int rift_rec_decode(const uint8_t *rec, size_t len, rift_rec_view *v,
                    const char **why) {
    if (len < RIFT_REC_OVERHEAD || !rift_rec_head_valid(rec) ||
        rift_get_u32(rec) != len) {
        *why = "invalid record header";
        return -1;
    }
    uint32_t crc = rift_crc32c_update(0, rec, 4);
    crc = rift_crc32c_update(crc, rec + 8, len - 8);
    if (crc != rift_get_u32(rec + 4)) {
        *why = "checksum mismatch";
        return -1;
    }
    v->len = (uint32_t)len;
    v->subject_len = rift_get_u16(rec + 8);
    v->reply_len = rift_get_u16(rec + 10);
    v->payload_len = rift_get_u32(rec + 12);
    v->subject = (const char *)rec + RIFT_REC_HEAD;
    v->reply = v->subject + v->subject_len;
    v->payload = (const uint8_t *)v->reply + v->reply_len;
    v->seq = rift_get_u64(rec + len - RIFT_REC_TRAILER);
    v->ts = rift_get_u64(rec + len - 8);
    return 0;
}

/* ---- State log ---- */

void rift_state_header_encode(uint8_t out[RIFT_STATE_HEADER]) {
    memcpy(out, RIFT_STATE_MAGIC, 8);
    rift_put_u32(out + 8, 1);
    rift_put_u32(out + 12, rift_crc32c(out, 12));
}

int rift_state_header_decode(const uint8_t in[RIFT_STATE_HEADER]) {
    if (memcmp(in, RIFT_STATE_MAGIC, 8) != 0 || rift_get_u32(in + 8) != 1 ||
        rift_get_u32(in + 12) != rift_crc32c(in, 12)) {
        return -1;
    }
    return 0;
}

int64_t rift_ev_begin(rift_sbuf *b, uint8_t type) {
    size_t start = b->len;
    uint8_t *p = rift_sbuf_grow(b, RIFT_EV_FRAME + 1);
    if (p == NULL) {
        return -1;
    }
    memset(p, 0, RIFT_EV_FRAME);
    p[RIFT_EV_FRAME] = type;
    return (int64_t)start;
}

void rift_ev_finish(rift_sbuf *b, int64_t start) {
    uint8_t *p = b->data + start;
    uint32_t len = (uint32_t)(b->len - (size_t)start);
    rift_put_u32(p, len);
    rift_put_u32(p + 4, rift_crc32c(p, 4));
    uint32_t crc = rift_crc32c_update(0, p, 4);
    crc = rift_crc32c_update(crc, p + RIFT_EV_FRAME, len - RIFT_EV_FRAME);
    rift_put_u32(p + 8, crc);
}

int rift_ev_put_u8(rift_sbuf *b, uint8_t v) {
    uint8_t *p = rift_sbuf_grow(b, 1);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    *p = v;
    return 0;
}

int rift_ev_put_u32(rift_sbuf *b, uint32_t v) {
    uint8_t *p = rift_sbuf_grow(b, 4);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_put_u32(p, v);
    return 0;
}

int rift_ev_put_u64(rift_sbuf *b, uint64_t v) {
    uint8_t *p = rift_sbuf_grow(b, 8);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_put_u64(p, v);
    return 0;
}

int rift_ev_put_str(rift_sbuf *b, const char *s, size_t len) {
    uint8_t *p = rift_sbuf_grow(b, 2 + len);
    if (p == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_put_u16(p, (uint16_t)len);
    if (len > 0) {
        memcpy(p + 2, s, len);
    }
    return 0;
}

static bool reader_need(rift_ev_reader *r, size_t n) {
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return false;
    }
    return true;
}

uint8_t rift_ev_get_u8(rift_ev_reader *r) {
    if (!reader_need(r, 1)) {
        return 0;
    }
    return r->p[r->pos++];
}

uint32_t rift_ev_get_u32(rift_ev_reader *r) {
    if (!reader_need(r, 4)) {
        return 0;
    }
    uint32_t v = rift_get_u32(r->p + r->pos);
    r->pos += 4;
    return v;
}

uint64_t rift_ev_get_u64(rift_ev_reader *r) {
    if (!reader_need(r, 8)) {
        return 0;
    }
    uint64_t v = rift_get_u64(r->p + r->pos);
    r->pos += 8;
    return v;
}

const char *rift_ev_get_str(rift_ev_reader *r, size_t *len) {
    *len = 0;
    if (!reader_need(r, 2)) {
        return NULL;
    }
    size_t n = rift_get_u16(r->p + r->pos);
    r->pos += 2;
    if (!reader_need(r, n)) {
        return NULL;
    }
    const char *s = (const char *)r->p + r->pos;
    r->pos += n;
    *len = n;
    return s;
}

static bool all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

int rift_ev_frame_check(const uint8_t *p, size_t avail, uint32_t *len,
                        const char **why) {
    if (avail < RIFT_EV_FRAME + 1) {
        return 1;
    }
    uint32_t n = rift_get_u32(p);
    if (rift_get_u32(p + 4) != rift_crc32c(p, 4) || n < RIFT_EV_FRAME + 1 ||
        n > RIFT_EV_MAX_LEN) {
        /* A file system may leave zeros after a crash where an append
         * never landed: that is a torn tail, not corruption. */
        if (all_zero(p, avail)) {
            return 1;
        }
        *why = "invalid state event length";
        return -1;
    }
    if (n > avail) {
        return 1;
    }
    uint32_t crc = rift_crc32c_update(0, p, 4);
    crc = rift_crc32c_update(crc, p + RIFT_EV_FRAME, n - RIFT_EV_FRAME);
    if (crc != rift_get_u32(p + 8)) {
        *why = "checksum mismatch";
        return -1;
    }
    *len = n;
    return 0;
}
