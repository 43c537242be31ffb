/*
 * proto.c — protobuf wire format for the STAN messages (stan layer; see
 * proto.h). Each message is described by a table of fields (number, kind,
 * offset of its member in the view struct), so one decoder and one encoder
 * serve all thirteen messages; the tables are the only per-message code.
 */
#include "stan/proto.h"

#include <stddef.h>
#include <string.h>

enum kind {
    K_STR,
    K_I32,
    K_I64,
    K_U32,
    K_U64,
    K_BOOL
};

typedef struct field {
    uint32_t num;
    uint8_t kind;
    uint16_t off;
    /* Strings only: no RIFT_STAN_MAX_STRING bound (payloads). */
    bool unbounded;
} field;

#define F(num, kind, type, member)                                             \
 { num, kind, offsetof(type, member), false }
#define FDATA(num, type, member)                                               \
 { num, K_STR, offsetof(type, member), true }

/* ---- Field tables (numbers from the protocol description) ---- */

static const field connect_req_f[] = {
    F(1, K_STR, rift_stan_connect_req, client_id),
    F(2, K_STR, rift_stan_connect_req, heartbeat_inbox),
    F(3, K_I32, rift_stan_connect_req, protocol),
    F(4, K_STR, rift_stan_connect_req, conn_id),
    F(5, K_I32, rift_stan_connect_req, ping_interval),
    F(6, K_I32, rift_stan_connect_req, ping_max_out),
};
static const field connect_resp_f[] = {
    F(1, K_STR, rift_stan_connect_resp, pub_prefix),
    F(2, K_STR, rift_stan_connect_resp, sub_requests),
    F(3, K_STR, rift_stan_connect_resp, unsub_requests),
    F(4, K_STR, rift_stan_connect_resp, close_requests),
    F(5, K_STR, rift_stan_connect_resp, error),
    F(6, K_STR, rift_stan_connect_resp, sub_close_requests),
    F(7, K_STR, rift_stan_connect_resp, ping_requests),
    F(8, K_I32, rift_stan_connect_resp, ping_interval),
    F(9, K_I32, rift_stan_connect_resp, ping_max_out),
    F(10, K_I32, rift_stan_connect_resp, protocol),
    F(100, K_STR, rift_stan_connect_resp, public_key),
};
static const field pub_msg_f[] = {
    F(1, K_STR, rift_stan_pub_msg, client_id),
    F(2, K_STR, rift_stan_pub_msg, guid),
    F(3, K_STR, rift_stan_pub_msg, subject),
    F(4, K_STR, rift_stan_pub_msg, reply),
    FDATA(5, rift_stan_pub_msg, data),
    F(6, K_STR, rift_stan_pub_msg, conn_id),
    F(10, K_STR, rift_stan_pub_msg, sha256),
};
static const field pub_ack_f[] = {
    F(1, K_STR, rift_stan_pub_ack, guid),
    F(2, K_STR, rift_stan_pub_ack, error),
};
static const field msg_proto_f[] = {
    F(1, K_U64, rift_stan_msg_proto, sequence),
    F(2, K_STR, rift_stan_msg_proto, subject),
    F(3, K_STR, rift_stan_msg_proto, reply),
    FDATA(4, rift_stan_msg_proto, data),
    F(5, K_I64, rift_stan_msg_proto, timestamp),
    F(6, K_BOOL, rift_stan_msg_proto, redelivered),
    F(7, K_U32, rift_stan_msg_proto, redelivery_count),
    F(10, K_U32, rift_stan_msg_proto, crc32),
};
static const field ack_f[] = {
    F(1, K_STR, rift_stan_ack, subject),
    F(2, K_U64, rift_stan_ack, sequence),
};
static const field sub_req_f[] = {
    F(1, K_STR, rift_stan_sub_req, client_id),
    F(2, K_STR, rift_stan_sub_req, subject),
    F(3, K_STR, rift_stan_sub_req, q_group),
    F(4, K_STR, rift_stan_sub_req, inbox),
    F(5, K_I32, rift_stan_sub_req, max_in_flight),
    F(6, K_I32, rift_stan_sub_req, ack_wait_in_secs),
    F(7, K_STR, rift_stan_sub_req, durable_name),
    F(10, K_I32, rift_stan_sub_req, start_position),
    F(11, K_U64, rift_stan_sub_req, start_sequence),
    F(12, K_I64, rift_stan_sub_req, start_time_delta),
};
static const field sub_resp_f[] = {
    F(2, K_STR, rift_stan_sub_resp, ack_inbox),
    F(3, K_STR, rift_stan_sub_resp, error),
};
static const field unsub_req_f[] = {
    F(1, K_STR, rift_stan_unsub_req, client_id),
    F(2, K_STR, rift_stan_unsub_req, subject),
    F(3, K_STR, rift_stan_unsub_req, inbox),
    F(4, K_STR, rift_stan_unsub_req, durable_name),
};
static const field ping_f[] = {
    F(1, K_STR, rift_stan_ping, conn_id),
};
static const field one_str_f[] = {
    F(1, K_STR, rift_stan_one_str, value),
};

/* ---- Decoding ---- */

static int truncated(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_PROTOCOL, "stan: truncated protobuf");
}

static int invalid(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_PROTOCOL, "stan: invalid protobuf");
}

/* read_varint: 0, or 1 when truncated, or 2 when longer than 10 bytes. */
static int read_varint(const uint8_t *p, size_t len, size_t *pos,
                       uint64_t *out) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos >= len) {
            return 1;
        }
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return 2;
}

static const field *find_field(const field *fs, size_t n, uint64_t num) {
    for (size_t i = 0; i < n; i++) {
        if (fs[i].num == num) {
            return &fs[i];
        }
    }
    return NULL;
}

static void store_varint(const field *f, void *view, uint64_t v) {
    char *m = (char *)view + f->off;
    switch (f->kind) {
    case K_I32: {
        /* int32 on the wire is sign-extended to 64 bits; keep the low 32. */
        int32_t x = (int32_t)(uint32_t)v;
        memcpy(m, &x, sizeof x);
        break;
    }
    case K_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(m, &x, sizeof x);
        break;
    }
    case K_I64: {
        int64_t x = (int64_t)v;
        memcpy(m, &x, sizeof x);
        break;
    }
    case K_U64:
        memcpy(m, &v, sizeof v);
        break;
    case K_BOOL: {
        bool x = v != 0;
        memcpy(m, &x, sizeof x);
        break;
    }
    default:
        break;
    }
}

/* skip_fixed handles the wire types 1 (8 bytes) and 5 (4 bytes). */
static int skip_fixed(size_t len, size_t *pos, size_t width, rift_error *err) {
    if (len - *pos < width) {
        return truncated(err);
    }
    *pos += width;
    return 0;
}

static int decode_len_field(const uint8_t *p, size_t len, size_t *pos,
                            const field *f, void *view, rift_error *err) {
    uint64_t n;
    int r = read_varint(p, len, pos, &n);
    if (r) {
        return r == 1 ? truncated(err) : invalid(err);
    }
    if (n > len - *pos) {
        return truncated(err);
    }
    if (f && f->kind == K_STR) {
        if (!f->unbounded && n > RIFT_STAN_MAX_STRING) {
            return rift_error_set(err, RIFT_ERR_PROTOCOL,
                                  "stan: protobuf field too large");
        }
        rift_stan_str s = {n ? (const char *)p + *pos : NULL, (size_t)n};
        memcpy((char *)view + f->off, &s, sizeof s);
    } else if (f) {
        return invalid(err); /* a scalar field sent length-delimited */
    }
    *pos += (size_t)n;
    return 0;
}

static int decode(const field *fs, size_t n, const uint8_t *p, size_t len,
                  void *view, size_t view_size, rift_error *err) {
    memset(view, 0, view_size);
    size_t pos = 0;
    while (pos < len) {
        uint64_t key;
        int r = read_varint(p, len, &pos, &key);
        if (r) {
            return r == 1 ? truncated(err) : invalid(err);
        }
        uint64_t num = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (num == 0 || num > 0x1fffffff) {
            return invalid(err);
        }
        const field *f = find_field(fs, n, num);
        if (wt == 0) {
            uint64_t v;
            r = read_varint(p, len, &pos, &v);
            if (r) {
                return r == 1 ? truncated(err) : invalid(err);
            }
            if (f && f->kind == K_STR) {
                return invalid(err);
            }
            if (f) {
                store_varint(f, view, v);
            }
        } else if (wt == 2) {
            r = decode_len_field(p, len, &pos, f, view, err);
            if (r) {
                return r;
            }
        } else if ((wt == 1 || wt == 5) && !f) {
            r = skip_fixed(len, &pos, wt == 1 ? 8 : 4, err);
            if (r) {
                return r;
            }
        } else {
            return invalid(err); /* groups, types 6/7, fixed known fields */
        }
    }
    return 0;
}

#define DECODER(name, type, table)                                             \
 int rift_stan_decode_##name(const uint8_t *p, size_t len, type *out,          \
                             rift_error *err) {                                \
  return decode(table, RIFT_ARRAY_LEN(table), p, len, out, sizeof *out, err);  \
 }

DECODER(connect_req, rift_stan_connect_req, connect_req_f)
DECODER(connect_resp, rift_stan_connect_resp, connect_resp_f)
DECODER(pub_msg, rift_stan_pub_msg, pub_msg_f)
DECODER(pub_ack, rift_stan_pub_ack, pub_ack_f)
DECODER(msg_proto, rift_stan_msg_proto, msg_proto_f)
DECODER(ack, rift_stan_ack, ack_f)
DECODER(sub_req, rift_stan_sub_req, sub_req_f)
DECODER(sub_resp, rift_stan_sub_resp, sub_resp_f)
DECODER(unsub_req, rift_stan_unsub_req, unsub_req_f)
DECODER(ping, rift_stan_ping, ping_f)
DECODER(one_str, rift_stan_one_str, one_str_f)

/* ---- Encoding ---- */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    bool overflow;
} wbuf;

static void put_byte(wbuf *w, uint8_t b) {
    if (w->len >= w->cap) {
        w->overflow = true;
        return;
    }
    w->p[w->len++] = b;
}

static void put_varint(wbuf *w, uint64_t v) {
    while (v >= 0x80) {
        put_byte(w, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put_byte(w, (uint8_t)v);
}

static void put_bytes(wbuf *w, const char *s, size_t n) {
    if (n > w->cap - w->len) {
        w->overflow = true;
        return;
    }
    if (n) {
        memcpy(w->p + w->len, s, n);
    }
    w->len += n;
}

/* encode_field writes one member; proto3 leaves zero values out. */
static void encode_field(wbuf *w, const field *f, const void *view) {
    const char *m = (const char *)view + f->off;
    uint64_t v = 0;
    switch (f->kind) {
    case K_STR: {
        rift_stan_str s;
        memcpy(&s, m, sizeof s);
        if (s.len) {
            put_varint(w, (uint64_t)f->num << 3 | 2);
            put_varint(w, s.len);
            put_bytes(w, s.p, s.len);
        }
        return;
    }
    case K_I32: {
        int32_t x;
        memcpy(&x, m, sizeof x);
        v = (uint64_t)(int64_t)x; /* negative: ten bytes, as protobuf does */
        break;
    }
    case K_U32: {
        uint32_t x;
        memcpy(&x, m, sizeof x);
        v = x;
        break;
    }
    case K_I64: {
        int64_t x;
        memcpy(&x, m, sizeof x);
        v = (uint64_t)x;
        break;
    }
    case K_U64:
        memcpy(&v, m, sizeof v);
        break;
    case K_BOOL: {
        bool x;
        memcpy(&x, m, sizeof x);
        v = x;
        break;
    }
    default:
        return;
    }
    if (v) {
        put_varint(w, (uint64_t)f->num << 3);
        put_varint(w, v);
    }
}

static size_t encode(const field *fs, size_t n, const void *view, uint8_t *out,
                     size_t cap) {
    wbuf w = {out, 0, cap, false};
    for (size_t i = 0; i < n; i++) {
        encode_field(&w, &fs[i], view);
    }
    return w.overflow ? 0 : w.len;
}

size_t rift_stan_encoded_bound(size_t strings_len) {
    /* Per field at most a 3-byte key, a 10-byte varint (value or length). */
    return strings_len + 16 * 13;
}

#define ENCODER(name, type, table)                                             \
 size_t rift_stan_encode_##name(const type *m, uint8_t *out, size_t cap) {     \
  return encode(table, RIFT_ARRAY_LEN(table), m, out, cap);                    \
 }

ENCODER(connect_req, rift_stan_connect_req, connect_req_f)
ENCODER(connect_resp, rift_stan_connect_resp, connect_resp_f)
ENCODER(pub_msg, rift_stan_pub_msg, pub_msg_f)
ENCODER(pub_ack, rift_stan_pub_ack, pub_ack_f)
ENCODER(msg_proto, rift_stan_msg_proto, msg_proto_f)
ENCODER(ack, rift_stan_ack, ack_f)
ENCODER(sub_req, rift_stan_sub_req, sub_req_f)
ENCODER(sub_resp, rift_stan_sub_resp, sub_resp_f)
ENCODER(unsub_req, rift_stan_unsub_req, unsub_req_f)
ENCODER(ping, rift_stan_ping, ping_f)
ENCODER(one_str, rift_stan_one_str, one_str_f)
