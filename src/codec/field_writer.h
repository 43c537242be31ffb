/*
 * field_writer.h — the cursor frame encoders write a body's fields with
 * (codec layer, private to src/codec): big-endian integers and `str`
 * fields into a caller's buffer, a frame's prefix written last. A field
 * that does not fit (or a string above 4,096 bytes) marks the cursor bad
 * and the encoder answers RIFT_ERR_INVALID_ARGUMENT.
 */
#ifndef RIFT_CODEC_FIELD_WRITER_H
#define RIFT_CODEC_FIELD_WRITER_H

#include "codec/frame.h"
#include "codec/wire.h"

#include <string.h>

typedef struct wcur {
    uint8_t *p;
    size_t cap;
    size_t pos;
    bool bad;
} wcur;

static inline bool wcur_need(wcur *w, size_t n) {
    if (w->bad || w->cap - w->pos < n) {
        w->bad = true;
        return false;
    }
    return true;
}

static inline void wcur_u8(wcur *w, uint8_t v) {
    if (wcur_need(w, 1)) {
        w->p[w->pos++] = v;
    }
}

static inline void wcur_u16(wcur *w, uint16_t v) {
    if (wcur_need(w, 2)) {
        rift_be16_store(w->p + w->pos, v);
        w->pos += 2;
    }
}

static inline void wcur_u32(wcur *w, uint32_t v) {
    if (wcur_need(w, 4)) {
        rift_be32_store(w->p + w->pos, v);
        w->pos += 4;
    }
}

static inline void wcur_u64(wcur *w, uint64_t v) {
    if (wcur_need(w, 8)) {
        rift_be64_store(w->p + w->pos, v);
        w->pos += 8;
    }
}

static inline void wcur_str(wcur *w, const char *s, size_t n) {
    if (n > RIFT_FRAME_MAX_STRING) {
        w->bad = true;
        return;
    }
    wcur_u16(w, (uint16_t)n);
    if (n > 0 && wcur_need(w, n)) {
        memcpy(w->p + w->pos, s, n);
        w->pos += n;
    }
}

/* Starts a frame: room for the prefix, then the opcode. */
static inline wcur wcur_start(uint8_t *buf, size_t cap, uint8_t opcode) {
    wcur w = {buf, cap, 0, cap < RIFT_FRAME_PREFIX_BYTES + 1};
    if (!w.bad) {
        w.pos = RIFT_FRAME_PREFIX_BYTES;
        w.p[w.pos++] = opcode;
    }
    return w;
}

/* Ends a frame: writes the prefix; the byte count or
 * RIFT_ERR_INVALID_ARGUMENT. */
static inline rift_ssize wcur_end(wcur *w) {
    if (w->bad) {
        return RIFT_ERR_INVALID_ARGUMENT;
    }
    rift_be32_store(w->p, (uint32_t)(w->pos - RIFT_FRAME_PREFIX_BYTES));
    return (rift_ssize)w->pos;
}

#endif /* RIFT_CODEC_FIELD_WRITER_H */
