/*
 * field_cursor.h — the cursor every frame decoder walks over a body's
 * fields (codec layer, private to src/codec): v1's decoders
 * (frame_decode.c) and the extensions' (frame_ext.c) share one set of
 * checks, error texts and error precedence.
 */
#ifndef RIFT_CODEC_FIELD_CURSOR_H
#define RIFT_CODEC_FIELD_CURSOR_H

#include "codec/frame.h"
#include "codec/wire.h"

typedef struct cursor {
    const uint8_t *p;
    size_t len;
    size_t pos;
} cursor;

/* Error paths are cold: keep the formatting out of the inlined checks. */
static int __attribute__((noinline, cold))
fail(rift_error *err, const char *text) {
    return rift_error_set(err, RIFT_ERR_PROTOCOL, "%s", text);
}

static inline int take_str(cursor *c, const char **s, size_t *n,
                           rift_error *err) {
    size_t left = c->len - c->pos;
    if (RIFT_UNLIKELY(left < 2)) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    size_t slen = rift_be16_load(c->p + c->pos);
    if (RIFT_UNLIKELY(slen > RIFT_FRAME_MAX_STRING || slen > left - 2)) {
        return fail(err, RIFT_FRAME_ERR_STRLEN);
    }
    const uint8_t *sp = c->p + c->pos + 2;
    if (RIFT_UNLIKELY(!rift_utf8_valid(sp, slen))) {
        return fail(err, RIFT_FRAME_ERR_UTF8);
    }
    *s = (const char *)sp;
    *n = slen;
    c->pos += 2 + slen;
    return 0;
}

static inline int take_u8(cursor *c, uint8_t *v, rift_error *err) {
    if (RIFT_UNLIKELY(c->len - c->pos < 1)) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    *v = c->p[c->pos];
    c->pos += 1;
    return 0;
}

static inline int take_u16(cursor *c, uint16_t *v, rift_error *err) {
    if (RIFT_UNLIKELY(c->len - c->pos < 2)) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    *v = rift_be16_load(c->p + c->pos);
    c->pos += 2;
    return 0;
}

static inline int take_u32(cursor *c, uint32_t *v, rift_error *err) {
    if (RIFT_UNLIKELY(c->len - c->pos < 4)) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    *v = rift_be32_load(c->p + c->pos);
    c->pos += 4;
    return 0;
}

static inline int take_u64(cursor *c, uint64_t *v, rift_error *err) {
    if (RIFT_UNLIKELY(c->len - c->pos < 8)) {
        return fail(err, RIFT_FRAME_ERR_TRUNC);
    }
    *v = rift_be64_load(c->p + c->pos);
    c->pos += 8;
    return 0;
}

/* The payload is the rest of the body; it may be empty. The cursor is
 * never at a NULL base here because a string was taken before. */
static inline void take_rest(cursor *c, const uint8_t **p, size_t *n) {
    *p = c->p + c->pos;
    *n = c->len - c->pos;
    c->pos = c->len;
}

static inline int take_end(const cursor *c, rift_error *err) {
    if (RIFT_UNLIKELY(c->pos != c->len)) {
        return fail(err, RIFT_FRAME_ERR_TRAILING);
    }
    return 0;
}

#endif /* RIFT_CODEC_FIELD_CURSOR_H */
