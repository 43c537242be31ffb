/*
 * ext_decode.c — libFuzzer target of the extension frames' decoders (fuzz
 * layer): opcodes 16..35 of docs/protocol-v1.md "Extensions" E.2, the
 * requests the server decodes (EXT_HELLO, CONSUMER_OPEN_EXT, _INFO_GET,
 * _DELETE, _FETCH_WAIT, _NAK, _TERM, _PROGRESS, _LIST, STREAM_INFO_GET,
 * _CREATE, _UPDATE, _PURGE, _DELETE, PUSH_OPEN, PUSH_ACK) and the answers
 * the C client decodes (EXT_INFO, CONSUMER_INFO, CONSUMER_LIST_RESULT,
 * STREAM_INFO_EXT).
 *
 * Input: one frame body as a decoder gets it, the opcode byte then its
 * fields (no length prefix); other opcodes are ignored. Invariants, each
 * a REQUIRE (abort):
 * - a decoder fails only with RIFT_ERR_PROTOCOL and one of the codec's
 *   texts ("invalid consumer list" only for CONSUMER_LIST_RESULT);
 * - every string of the result lies inside the fields, is at most 4,096
 *   bytes and is UTF-8;
 * - `decoded`, which the server reads even when the decoder failed (it
 *   scopes the name once `decoded` >= 2), counts only fields that were
 *   decoded: each string it counts is set; a success counts every field,
 *   a failure fewer unless bytes followed the last one;
 * - a body that decodes re-encodes with the C client's encoder to exactly
 *   its own bytes, the encoder refuses a buffer one byte short, and the
 *   re-encoding decodes to the same values (decode(encode(x)) == x);
 * - CONSUMER_LIST_RESULT with room for one consumer fewer than its count
 *   fails with "invalid consumer list" and writes nothing past that room.
 */
#include "codec/frame.h"
#include "codec/frame_ext.h"
#include "codec/frame_ext_ack.h"
#include "codec/frame_ext_push.h"
#include "codec/frame_ext_stream.h"
#include "codec/wire.h"
#include "common/common.h"
#include "fuzz_require.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One decoded body. */
typedef struct view {
    union {
        rift_frame_ext_info info;
        rift_frame_consumer_open_ext open;
        rift_frame_consumer_ref ref;
        rift_frame_fetch_wait wait;
        rift_frame_consumer_info cinfo;
        rift_frame_consumer_list list;
        rift_frame_consumer_settle settle;
        rift_frame_stream_spec spec;
        rift_frame_stream_info sinfo;
        rift_frame_push_open push;
        rift_frame_push_ack pack;
        struct {
            const char *s;
            size_t n;
        } sref;
    } u;
    /* CONSUMER_LIST_RESULT */
    rift_frame_consumer_info *items;
    size_t count;
    bool more;
} view;

/* One field of a view in wire order: a string (s, its length in v) or
 * a scalar (v). */
typedef struct field {
    const char *s;
    uint64_t v;
    bool str;
} field;

/* count:u32, 256 x 13 fields, more:u8 at most. */
#define MAX_FIELDS (2 + RIFT_EXT_MAX_LIST * 13)

typedef struct fields {
    field f[MAX_FIELDS];
    size_t n;
    /* The view's `decoded` and what it reads after a success; -1 when the
     * layout has none. */
    long decoded;
    long full;
} fields;

static void put_s(fields *fl, const char *s, size_t n) {
    REQUIRE(fl->n < MAX_FIELDS);
    fl->f[fl->n++] = (field){s, n, true};
}

static void put_v(fields *fl, uint64_t v) {
    REQUIRE(fl->n < MAX_FIELDS);
    fl->f[fl->n++] = (field){NULL, v, false};
}

static void info_fields(fields *fl, const rift_frame_consumer_info *c) {
    put_s(fl, c->name, c->name_len);
    put_s(fl, c->filter, c->filter_len);
    put_v(fl, c->start);
    put_v(fl, c->start_value);
    put_v(fl, c->ack_wait_ms);
    put_v(fl, c->max_ack_pending);
    put_v(fl, c->start_sequence);
    put_v(fl, c->next_sequence);
    put_v(fl, c->pending);
    put_v(fl, c->created);
    put_v(fl, c->max_deliver);
    put_v(fl, c->terminated);
    put_v(fl, c->max_delivered);
}

static void spec_fields(fields *fl, const rift_frame_stream_spec *s) {
    put_s(fl, s->stream, s->stream_len);
    put_s(fl, s->subjects, s->subjects_len);
    put_v(fl, s->storage);
    put_v(fl, s->max_messages);
    put_v(fl, s->max_bytes);
    put_v(fl, s->max_age_ms);
    put_v(fl, s->max_payload_bytes);
    put_v(fl, s->max_consumers);
}

/* The fields of |x| (decoded from a body of |op|), in wire order. With
 * |ok| false only the ones a failed decode may have set (everything but
 * a list result's consumers). */
static void view_fields(uint8_t op, const view *x, bool ok, fields *fl) {
    fl->n = 0;
    fl->decoded = -1;
    fl->full = -1;
    switch (op) {
    case RIFT_OP_EXT_HELLO:
        break;
    case RIFT_OP_EXT_INFO:
        put_v(fl, x->u.info.version);
        put_s(fl, x->u.info.features, x->u.info.features_len);
        break;
    case RIFT_OP_CONSUMER_OPEN_EXT: {
        const rift_frame_consumer_open_ext *f = &x->u.open;
        put_s(fl, f->stream, f->stream_len);
        put_s(fl, f->name, f->name_len);
        put_s(fl, f->filter, f->filter_len);
        put_v(fl, f->start);
        put_v(fl, f->start_value);
        put_v(fl, f->ack_wait_ms);
        put_v(fl, f->max_ack_pending);
        put_v(fl, f->max_deliver);
        fl->decoded = f->decoded;
        break;
    }
    case RIFT_OP_CONSUMER_INFO:
        info_fields(fl, &x->u.cinfo);
        break;
    case RIFT_OP_CONSUMER_INFO_GET:
    case RIFT_OP_CONSUMER_DELETE:
        put_s(fl, x->u.ref.stream, x->u.ref.stream_len);
        put_s(fl, x->u.ref.name, x->u.ref.name_len);
        fl->decoded = x->u.ref.decoded;
        break;
    case RIFT_OP_CONSUMER_FETCH_WAIT:
        put_s(fl, x->u.wait.stream, x->u.wait.stream_len);
        put_s(fl, x->u.wait.name, x->u.wait.name_len);
        put_v(fl, x->u.wait.limit);
        put_v(fl, x->u.wait.max_wait_ms);
        fl->decoded = x->u.wait.decoded;
        break;
    case RIFT_OP_CONSUMER_NAK:
    case RIFT_OP_CONSUMER_TERM:
    case RIFT_OP_CONSUMER_PROGRESS:
        put_s(fl, x->u.settle.stream, x->u.settle.stream_len);
        put_s(fl, x->u.settle.name, x->u.settle.name_len);
        put_v(fl, x->u.settle.sequence);
        if (op == RIFT_OP_CONSUMER_NAK) {
            put_v(fl, x->u.settle.delay_ms);
        } else {
            /* TERM and PROGRESS carry no delay: it stays 0. */
            REQUIRE(x->u.settle.delay_ms == 0);
        }
        fl->decoded = x->u.settle.decoded;
        break;
    case RIFT_OP_CONSUMER_LIST:
        put_s(fl, x->u.list.stream, x->u.list.stream_len);
        put_s(fl, x->u.list.after, x->u.list.after_len);
        put_v(fl, x->u.list.limit);
        fl->decoded = x->u.list.decoded;
        break;
    case RIFT_OP_CONSUMER_LIST_RESULT:
        if (ok) {
            put_v(fl, x->count);
            for (size_t i = 0; i < x->count; i++) {
                info_fields(fl, &x->items[i]);
            }
            put_v(fl, x->more ? 1 : 0);
        }
        break;
    case RIFT_OP_STREAM_INFO_GET:
    case RIFT_OP_STREAM_PURGE:
    case RIFT_OP_STREAM_DELETE:
        put_s(fl, x->u.sref.s, x->u.sref.n);
        break;
    case RIFT_OP_STREAM_INFO_EXT: {
        const rift_frame_stream_info *f = &x->u.sinfo;
        spec_fields(fl, &f->spec);
        put_v(fl, f->messages);
        put_v(fl, f->bytes);
        put_v(fl, f->first_sequence);
        put_v(fl, f->last_sequence);
        put_v(fl, f->consumers);
        put_v(fl, f->runtime);
        fl->decoded = f->spec.decoded;
        fl->full = 8; /* `decoded` counts the spec's fields only */
        break;
    }
    case RIFT_OP_STREAM_CREATE:
    case RIFT_OP_STREAM_UPDATE:
        spec_fields(fl, &x->u.spec);
        fl->decoded = x->u.spec.decoded;
        break;
    case RIFT_OP_PUSH_OPEN:
        put_s(fl, x->u.push.stream, x->u.push.stream_len);
        put_s(fl, x->u.push.name, x->u.push.name_len);
        put_v(fl, x->u.push.max_in_flight);
        put_v(fl, x->u.push.ack_wait_ms);
        fl->decoded = x->u.push.decoded;
        break;
    case RIFT_OP_PUSH_ACK:
        put_s(fl, x->u.pack.stream, x->u.pack.stream_len);
        put_s(fl, x->u.pack.name, x->u.pack.name_len);
        put_v(fl, x->u.pack.sequence);
        fl->decoded = x->u.pack.decoded;
        break;
    default:
        REQUIRE(0);
    }
    if (fl->decoded >= 0 && fl->full < 0) {
        fl->full = (long)fl->n;
    }
}

/* Decodes the fields of a body of |op| into |x| (its list result into
 * |items|, room for |cap|). */
static int decode(uint8_t op, const uint8_t *p, size_t len, view *x,
                  rift_frame_consumer_info *items, size_t cap,
                  rift_error *err) {
    memset(x, 0, sizeof(*x));
    switch (op) {
    case RIFT_OP_EXT_HELLO:
        return rift_frame_decode_empty(p, len, err);
    case RIFT_OP_EXT_INFO:
        return rift_frame_decode_ext_info(p, len, &x->u.info, err);
    case RIFT_OP_CONSUMER_OPEN_EXT:
        return rift_frame_decode_consumer_open_ext(p, len, &x->u.open, err);
    case RIFT_OP_CONSUMER_INFO:
        return rift_frame_decode_consumer_info(p, len, &x->u.cinfo, err);
    case RIFT_OP_CONSUMER_INFO_GET:
    case RIFT_OP_CONSUMER_DELETE:
        return rift_frame_decode_consumer_ref(p, len, &x->u.ref, err);
    case RIFT_OP_CONSUMER_FETCH_WAIT:
        return rift_frame_decode_fetch_wait(p, len, &x->u.wait, err);
    case RIFT_OP_CONSUMER_NAK:
    case RIFT_OP_CONSUMER_TERM:
    case RIFT_OP_CONSUMER_PROGRESS:
        return rift_frame_decode_consumer_settle(op, p, len, &x->u.settle, err);
    case RIFT_OP_CONSUMER_LIST:
        return rift_frame_decode_consumer_list(p, len, &x->u.list, err);
    case RIFT_OP_CONSUMER_LIST_RESULT:
        x->items = items;
        return rift_frame_decode_consumer_list_result(p, len, items, cap,
                                                      &x->count, &x->more, err);
    case RIFT_OP_STREAM_INFO_GET:
    case RIFT_OP_STREAM_PURGE:
    case RIFT_OP_STREAM_DELETE:
        return rift_frame_decode_stream_ref(p, len, &x->u.sref.s, &x->u.sref.n,
                                            err);
    case RIFT_OP_STREAM_INFO_EXT:
        return rift_frame_decode_stream_info(p, len, &x->u.sinfo, err);
    case RIFT_OP_STREAM_CREATE:
    case RIFT_OP_STREAM_UPDATE:
        return rift_frame_decode_stream_spec(p, len, &x->u.spec, err);
    case RIFT_OP_PUSH_OPEN:
        return rift_frame_decode_push_open(p, len, &x->u.push, err);
    case RIFT_OP_PUSH_ACK:
        return rift_frame_decode_push_ack(p, len, &x->u.pack, err);
    default:
        REQUIRE(0);
        return 0;
    }
}

/* Encodes |x| as a whole frame of |op|. */
static rift_ssize encode(uint8_t op, const view *x, uint8_t *buf, size_t cap) {
    switch (op) {
    case RIFT_OP_EXT_HELLO:
        return rift_frame_encode_ext_hello(buf, cap);
    case RIFT_OP_EXT_INFO:
        return rift_frame_encode_ext_info(buf, cap, x->u.info.version,
                                          x->u.info.features,
                                          x->u.info.features_len);
    case RIFT_OP_CONSUMER_OPEN_EXT:
        return rift_frame_encode_consumer_open_ext(buf, cap, &x->u.open);
    case RIFT_OP_CONSUMER_INFO:
        return rift_frame_encode_consumer_info(buf, cap, &x->u.cinfo);
    case RIFT_OP_CONSUMER_INFO_GET:
    case RIFT_OP_CONSUMER_DELETE:
        return rift_frame_encode_consumer_ref(buf, cap, op, x->u.ref.stream,
                                              x->u.ref.stream_len,
                                              x->u.ref.name, x->u.ref.name_len);
    case RIFT_OP_CONSUMER_FETCH_WAIT:
        return rift_frame_encode_fetch_wait(buf, cap, &x->u.wait);
    case RIFT_OP_CONSUMER_NAK:
    case RIFT_OP_CONSUMER_TERM:
    case RIFT_OP_CONSUMER_PROGRESS:
        return rift_frame_encode_consumer_settle(buf, cap, op, &x->u.settle);
    case RIFT_OP_CONSUMER_LIST:
        return rift_frame_encode_consumer_list(buf, cap, &x->u.list);
    case RIFT_OP_CONSUMER_LIST_RESULT:
        return rift_frame_encode_consumer_list_result(buf, cap, x->items,
                                                      x->count, x->more);
    case RIFT_OP_STREAM_INFO_GET:
    case RIFT_OP_STREAM_PURGE:
    case RIFT_OP_STREAM_DELETE:
        return rift_frame_encode_stream_ref(buf, cap, op, x->u.sref.s,
                                            x->u.sref.n);
    case RIFT_OP_STREAM_INFO_EXT:
        return rift_frame_encode_stream_info(buf, cap, &x->u.sinfo);
    case RIFT_OP_STREAM_CREATE:
    case RIFT_OP_STREAM_UPDATE:
        return rift_frame_encode_stream_spec(buf, cap, op, &x->u.spec);
    case RIFT_OP_PUSH_OPEN:
        return rift_frame_encode_push_open(buf, cap, &x->u.push);
    case RIFT_OP_PUSH_ACK:
        return rift_frame_encode_push_ack(buf, cap, &x->u.pack);
    default:
        REQUIRE(0);
        return 0;
    }
}

/* A string field that is set lies inside [p, p + len), is at most 4,096
 * bytes and is UTF-8; one that is not set is empty. */
static void check_string(const field *f, const uint8_t *p, size_t len) {
    const uint8_t *s = (const uint8_t *)f->s;
    if (s == NULL) {
        REQUIRE(f->v == 0);
        return;
    }
    REQUIRE(f->v <= RIFT_FRAME_MAX_STRING);
    REQUIRE(s >= p + 2 && s <= p + len);
    REQUIRE(f->v <= (uint64_t)(p + len - s));
    REQUIRE(rift_utf8_valid(s, (size_t)f->v));
}

static bool known_text(uint8_t op, const char *text) {
    return strcmp(text, RIFT_FRAME_ERR_TRUNC) == 0 ||
           strcmp(text, RIFT_FRAME_ERR_STRLEN) == 0 ||
           strcmp(text, RIFT_FRAME_ERR_UTF8) == 0 ||
           strcmp(text, RIFT_FRAME_ERR_TRAILING) == 0 ||
           (op == RIFT_OP_CONSUMER_LIST_RESULT &&
            strcmp(text, RIFT_EXT_ERR_LIST_COUNT) == 0);
}

/* Same fields, same values, same string bytes. */
static void require_same(const fields *a, const fields *b) {
    REQUIRE(a->n == b->n);
    REQUIRE(a->decoded == b->decoded);
    for (size_t i = 0; i < a->n; i++) {
        REQUIRE(a->f[i].str == b->f[i].str);
        REQUIRE(a->f[i].v == b->f[i].v);
        if (a->f[i].str && a->f[i].v > 0) {
            REQUIRE(memcmp(a->f[i].s, b->f[i].s, (size_t)a->f[i].v) == 0);
        }
    }
}

static rift_frame_consumer_info items_x[RIFT_EXT_MAX_LIST];
static rift_frame_consumer_info items_y[RIFT_EXT_MAX_LIST];
static fields fx, fy;

/* A list result of |count| >= 1 consumers, decoded with room for one
 * fewer (exactly sized, so ASan sees a write past it). */
static void check_list_short(const uint8_t *p, size_t len, size_t count) {
    size_t cap = count - 1;
    rift_frame_consumer_info *few = malloc((cap ? cap : 1) * sizeof(*few));
    if (few == NULL) {
        return;
    }
    view s;
    rift_error err = {0};
    REQUIRE(decode(RIFT_OP_CONSUMER_LIST_RESULT, p, len, &s, few, cap, &err) ==
            RIFT_ERR_PROTOCOL);
    REQUIRE(strcmp(err.text, RIFT_EXT_ERR_LIST_COUNT) == 0);
    free(few);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || data[0] < RIFT_OP_EXT_HELLO || data[0] > RIFT_OP_PUSH_ACK) {
        return 0;
    }
    uint8_t op = data[0];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    view x;
    rift_error err = {0};
    int rc = decode(op, p, len, &x, items_x, RIFT_EXT_MAX_LIST, &err);
    view_fields(op, &x, rc == 0, &fx);
    for (size_t i = 0; i < fx.n; i++) {
        if (fx.f[i].str) {
            check_string(&fx.f[i], p, len);
            /* A string `decoded` counts is set. */
            REQUIRE((long)i >= fx.decoded || fx.f[i].s != NULL);
        }
    }
    if (rc != 0) {
        REQUIRE(rc == RIFT_ERR_PROTOCOL && err.code == RIFT_ERR_PROTOCOL);
        REQUIRE(known_text(op, err.text));
        /* Every field counted and still a failure: bytes followed. */
        REQUIRE(fx.decoded <= fx.full);
        REQUIRE(fx.decoded < 0 || fx.decoded < (long)fx.n ||
                strcmp(err.text, RIFT_FRAME_ERR_TRAILING) == 0);
        return 0;
    }
    REQUIRE(fx.decoded == fx.full);
    if (op == RIFT_OP_CONSUMER_LIST_RESULT) {
        REQUIRE(x.count <= RIFT_EXT_MAX_LIST);
        if (x.count > 0) {
            check_list_short(p, len, x.count);
        }
    }

    /* Re-encoding: exactly the body's bytes behind a prefix of its
     * length, in a buffer of exactly that size; one byte less is refused. */
    size_t want = RIFT_FRAME_PREFIX_BYTES + size;
    uint8_t *out = malloc(want);
    uint8_t *shorter = malloc(want - 1);
    if (out == NULL || shorter == NULL) {
        free(out);
        free(shorter);
        return 0;
    }
    REQUIRE(encode(op, &x, shorter, want - 1) == RIFT_ERR_INVALID_ARGUMENT);
    free(shorter);
    rift_ssize n = encode(op, &x, out, want);
    REQUIRE(n == (rift_ssize)want);
    REQUIRE(rift_be32_load(out) == size);
    REQUIRE(memcmp(out + RIFT_FRAME_PREFIX_BYTES, data, size) == 0);

    /* decode(encode(x)) == x */
    view y;
    rift_error err2 = {0};
    REQUIRE(decode(op, out + RIFT_FRAME_PREFIX_BYTES + 1, len, &y, items_y,
                   RIFT_EXT_MAX_LIST, &err2) == 0);
    view_fields(op, &y, true, &fy);
    require_same(&fx, &fy);
    free(out);
    return 0;
}
