/*
 * frame_reader.c — the incremental frame reader (codec layer), §2.3: cuts
 * a byte stream fed in arbitrary chunks into frame bodies.
 *
 * States: collecting the 4-byte length prefix (prefix_have < 4); prefix
 * complete, body not started (assembling false); assembling a body that
 * straddles chunks. A body found whole inside the chunk being fed is handed
 * out in place; only a straddling body is copied, into one buffer sized to
 * the declared length, which is allocated only after the length passed the
 * limit check and only once body bytes are actually present (so a chunk
 * that ends right after the prefix allocates nothing, and the next chunk
 * may still carry the whole body for a zero-copy hand-out).
 */
#include "codec/frame.h"
#include "codec/wire.h"

#include <string.h>

void rift_frame_reader_init(rift_frame_reader *r, uint32_t limit,
                            const rift_mem *mem) {
    memset(r, 0, sizeof(*r));
    r->limit = limit;
    r->mem = mem;
}

void rift_frame_reader_free(rift_frame_reader *r) {
    rift_free(r->mem, r->buf);
    r->buf = NULL;
    r->buf_cap = 0;
    r->prefix_have = 0;
    r->body_have = 0;
    r->assembling = false;
    r->held = false;
}

/* Drops a large buffer once its body is no longer needed, so a stream that
 * carried one big frame does not pin a megabyte while it idles. */
static void trim(rift_frame_reader *r) {
    if (r->buf_cap > RIFT_FRAME_READER_KEEP_BYTES) {
        rift_free(r->mem, r->buf);
        r->buf = NULL;
        r->buf_cap = 0;
    }
}

void rift_frame_reader_reset(rift_frame_reader *r) {
    r->prefix_have = 0;
    r->body_have = 0;
    r->assembling = false;
    r->held = false;
    trim(r);
}

/* Completes the 4-byte length prefix from data, moving *pos and counting
 * the bytes this chunk gave in *taken; false while it is still short. */
static inline bool take_prefix(rift_frame_reader *r, const uint8_t *data,
                               size_t len, size_t *pos, uint8_t *taken) {
    if (r->prefix_have == 0 && len >= 4) {
        /* The common case, a whole prefix in the chunk: no byte loop. */
        r->body_len = rift_be32_load(data);
        r->prefix_have = 4;
        *pos = *taken = 4;
    } else if (r->prefix_have < 4) {
        while (r->prefix_have < 4 && *pos < len) {
            r->prefix[r->prefix_have++] = data[(*pos)++];
            (*taken)++;
        }
        if (r->prefix_have < 4) {
            return false;
        }
        r->body_len = rift_be32_load(r->prefix);
    }
    return true;
}

/* Makes the assembly buffer hold body_len bytes. */
static int reserve_body(rift_frame_reader *r, uint8_t taken, rift_error *err) {
    if (r->buf_cap >= r->body_len) {
        return 0;
    }
    /* Free first: peak memory stays at one frame per reader. */
    rift_free(r->mem, r->buf);
    r->buf = NULL;
    r->buf_cap = 0;
    uint8_t *nb = rift_malloc(r->mem, r->body_len);
    if (nb == NULL) {
        /* Give back the prefix bytes of this chunk: the caller may
         * feed the same chunk again. */
        r->prefix_have = (uint8_t)(r->prefix_have - taken);
        return rift_error_set(err, RIFT_ERR_NOMEM,
                              "out of memory for a %u-byte frame",
                              (unsigned)r->body_len);
    }
    r->buf = nb;
    r->buf_cap = r->body_len;
    return 0;
}

rift_ssize rift_frame_reader_feed(rift_frame_reader *r, const uint8_t *data,
                                  size_t len, rift_frame_body *out,
                                  rift_error *err) {
    out->data = NULL;
    out->len = 0;
    out->assembled = false;
    if (r->held) {
        /* The body handed out last time is now dead. */
        r->held = false;
        trim(r);
    }

    size_t pos = 0;
    uint8_t taken = 0; /* prefix bytes taken from this chunk */
    if (!take_prefix(r, data, len, &pos, &taken)) {
        return (rift_ssize)pos;
    }
    /* Checked on every call, before any allocation: a bad length stays in
     * the prefix, which makes the error final. */
    if (r->body_len == 0 || r->body_len > r->limit) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "%s",
                              RIFT_FRAME_ERR_LENGTH);
    }

    size_t left = len - pos;
    if (!r->assembling) {
        if (left >= r->body_len) {
            out->data = data + pos;
            out->len = r->body_len;
            r->prefix_have = 0;
            return (rift_ssize)(pos + r->body_len);
        }
        if (left == 0) {
            return (rift_ssize)pos;
        }
        int rc = reserve_body(r, taken, err);
        if (rc != 0) {
            return rc;
        }
        r->assembling = true;
        r->body_have = 0;
    }

    size_t want = (size_t)r->body_len - r->body_have;
    size_t n = left < want ? left : want;
    memcpy(r->buf + r->body_have, data + pos, n);
    pos += n;
    r->body_have += (uint32_t)n;
    if (r->body_have == r->body_len) {
        out->data = r->buf;
        out->len = r->body_len;
        out->assembled = true;
        r->held = true;
        r->assembling = false;
        r->body_have = 0;
        r->prefix_have = 0;
    }
    return (rift_ssize)pos;
}

uint8_t *rift_frame_reader_detach(rift_frame_reader *r) {
    if (!r->held) {
        return NULL;
    }
    uint8_t *p = r->buf;
    r->buf = NULL;
    r->buf_cap = 0;
    r->held = false;
    return p;
}

bool rift_frame_reader_mid_frame(const rift_frame_reader *r) {
    return r->prefix_have > 0;
}

size_t rift_frame_reader_buffered(const rift_frame_reader *r) {
    return (size_t)r->prefix_have + (r->assembling ? r->body_have : 0);
}
