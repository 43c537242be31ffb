/*
 * import_rec.c — the record reader and protobuf decoders for a
 * nats-streaming-server file store (stan layer; see import_rec.h).
 */
#include "stan/import_rec.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[i] = c;
    }
}

uint32_t stan_imp_crc32(uint32_t crc, const uint8_t *p, size_t len) {
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* read_full reads |len| bytes; returns the count read (short at EOF) or -1
 * on a read error. */
static long read_full(FILE *f, uint8_t *p, size_t len) {
    size_t n = fread(p, 1, len, f);
    if (n < len && ferror(f)) {
        return -1;
    }
    return (long)n;
}

int stan_imp_reader_init(stan_imp_reader *r, FILE *f, const char *path,
                         bool typed, size_t max, const rift_mem *mem,
                         rift_error *err) {
    memset(r, 0, sizeof *r);
    r->f = f;
    r->path = path;
    r->typed = typed;
    r->max = max;
    r->mem = mem;
    uint8_t v[4];
    long n = read_full(f, v, 4);
    if (n < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: read: %s", path,
                              strerror(errno));
    }
    if (n != 4) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset 0: file shorter than its 4-byte "
                              "version header",
                              path);
    }
    uint32_t ver = get_u32(v);
    if (ver == 0 || ver > STAN_IMP_FILE_VERSION) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset 0: unsupported file version %" PRIu32
                              " (supported: 1)",
                              path, ver);
    }
    r->off = 4;
    return 0;
}

bool stan_imp_reader_more(stan_imp_reader *r, uint8_t *type, const uint8_t **p,
                          size_t *len, int *rc, rift_error *err) {
    if (*rc != 0) {
        return false;
    }
    int n = stan_imp_reader_next(r, type, p, len, err);
    if (n <= 0) {
        *rc = n;
        return false;
    }
    return true;
}

int stan_imp_reader_next(stan_imp_reader *r, uint8_t *type, const uint8_t **p,
                         size_t *len, rift_error *err) {
    uint8_t h[STAN_IMP_REC_HEADER];
    long n = read_full(r->f, h, sizeof h);
    r->at = r->off;
    if (n < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: offset %" PRIu64 ": %s",
                              r->path, r->at, strerror(errno));
    }
    if (n == 0) {
        return 0;
    }
    if (n != (long)sizeof h) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset %" PRIu64
                              ": truncated record header (%ld of 8 bytes)",
                              r->path, r->at, n);
    }
    uint32_t first = get_u32(h), crc = get_u32(h + 4);
    if (first == 0 && crc == 0) {
        return 0; /* where the original stopped writing */
    }
    *type = r->typed ? (uint8_t)(first >> 24) : 0;
    size_t size = r->typed ? (first & 0xFFFFFFu) : first;
    if (size > r->max) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset %" PRIu64
                              ": record size %zu exceeds the limit %zu",
                              r->path, r->at, size, r->max);
    }
    /* The buffer grows with the bytes actually read, not with the size
     * field: a damaged size near the limit at the end of a file costs no
     * more memory than the file holds. */
    size_t got = 0;
    while (got < size) {
        size_t want = got < 65536 ? 65536 : got * 2;
        want = want < size ? want : size;
        if (want > r->cap) {
            size_t alloc = want < 65536 ? 65536 : want;
            uint8_t *nb = rift_realloc(r->mem, r->buf, alloc);
            if (!nb) {
                return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
            }
            r->buf = nb;
            r->cap = alloc;
        }
        size_t ask = want - got;
        long k = read_full(r->f, r->buf + got, ask);
        if (k < 0) {
            return rift_error_set(err, RIFT_ERR_IO,
                                  "%s: offset %" PRIu64 ": %s", r->path, r->at,
                                  strerror(errno));
        }
        got += (size_t)k;
        if ((size_t)k < ask) {
            break; /* end of file */
        }
    }
    if (got != size) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset %" PRIu64
                              ": truncated record (%zu of %zu payload bytes)",
                              r->path, r->at, got, size);
    }
    uint32_t sum = stan_imp_crc32(0, r->buf, size);
    if (sum != crc) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "%s: offset %" PRIu64
                              ": CRC mismatch (stored 0x%08" PRIx32
                              ", computed 0x%08" PRIx32 ")",
                              r->path, r->at, crc, sum);
    }
    r->off += sizeof h + size;
    *p = r->buf;
    *len = size;
    return 1;
}

void stan_imp_reader_free(stan_imp_reader *r) {
    rift_free(r->mem, r->buf);
    r->buf = NULL;
    r->cap = 0;
}

/* ---- Protobuf: varints and length-delimited fields only ---- */

typedef struct pb {
    const uint8_t *p;
    size_t len, pos;
} pb;

/* -1 bad, 0 end, 1 field. */
static int varint(pb *b, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (b->pos >= b->len) {
            return -1;
        }
        uint8_t c = b->p[b->pos++];
        x |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* next_field: 1 with the field's number and either *|v| (varint) or *|s|
 * (bytes), 0 at the end, -1 with *|why|. Fixed-width fields are skipped. */
static int next_field(pb *b, uint32_t *num, uint64_t *v, stan_imp_str *s,
                      bool *is_bytes, const char **why) {
    while (b->pos < b->len) {
        uint64_t key;
        if (varint(b, &key) != 0) {
            *why = "truncated protobuf";
            return -1;
        }
        uint32_t wt = (uint32_t)(key & 7);
        uint64_t fn = key >> 3;
        if (fn == 0 || fn > 0x1FFFFFFF) {
            *why = "invalid protobuf field number";
            return -1;
        }
        *num = (uint32_t)fn;
        switch (wt) {
        case 0:
            if (varint(b, v) != 0) {
                *why = "truncated protobuf";
                return -1;
            }
            *is_bytes = false;
            return 1;
        case 2: {
            uint64_t l;
            if (varint(b, &l) != 0 || l > b->len - b->pos) {
                *why = "truncated protobuf";
                return -1;
            }
            s->p = (const char *)b->p + b->pos;
            s->len = (size_t)l;
            b->pos += (size_t)l;
            *is_bytes = true;
            return 1;
        }
        case 1:
        case 5: {
            size_t w = wt == 1 ? 8 : 4;
            if (w > b->len - b->pos) {
                *why = "truncated protobuf";
                return -1;
            }
            b->pos += w;
            continue;
        }
        default:
            *why = "invalid protobuf wire type";
            return -1;
        }
    }
    return 0;
}

/* Strings of the original's records (ids, subjects, names) are short; a
 * longer one is damage, not data. */
#define MAX_FIELD 4096

int stan_imp_decode_sub_state(const uint8_t *p, size_t len,
                              stan_imp_sub_state *out, const char **why) {
    memset(out, 0, sizeof *out);
    pb b = {p, len, 0};
    uint32_t num;
    uint64_t v = 0;
    stan_imp_str s = {0};
    bool is_bytes;
    int rc;
    while ((rc = next_field(&b, &num, &v, &s, &is_bytes, why)) == 1) {
        stan_imp_str *dst = NULL;
        switch (num) {
        case 2:
            dst = &out->client_id;
            break;
        case 3:
            dst = &out->q_group;
            break;
        case 4:
            dst = &out->inbox;
            break;
        case 5:
            dst = &out->ack_inbox;
            break;
        case 8:
            dst = &out->durable_name;
            break;
        default:
            break;
        }
        if (dst) {
            if (!is_bytes || s.len > MAX_FIELD) {
                *why = "invalid SubState string field";
                return -1;
            }
            *dst = s;
            continue;
        }
        if (num > 11) {
            continue; /* a later version's field */
        }
        if (is_bytes) {
            *why = "invalid SubState field type";
            return -1;
        }
        switch (num) {
        case 1:
            out->id = v;
            break;
        case 6:
            out->max_in_flight = (int32_t)v;
            break;
        case 7:
            out->ack_wait_secs = (int32_t)v;
            break;
        case 9:
            out->last_sent = v;
            break;
        case 10:
            out->is_durable = v != 0;
            break;
        case 11:
            out->is_closed = v != 0;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

int stan_imp_decode_sub_update(const uint8_t *p, size_t len,
                               stan_imp_sub_update *out, const char **why) {
    memset(out, 0, sizeof *out);
    pb b = {p, len, 0};
    uint32_t num;
    uint64_t v = 0;
    stan_imp_str s = {0};
    bool is_bytes;
    int rc;
    while ((rc = next_field(&b, &num, &v, &s, &is_bytes, why)) == 1) {
        if (num > 2) {
            continue;
        }
        if (is_bytes) {
            *why = "invalid SubStateUpdate field type";
            return -1;
        }
        if (num == 1) {
            out->id = v;
        } else {
            out->seqno = v;
        }
    }
    return rc < 0 ? -1 : 0;
}

int stan_imp_decode_str_field(const uint8_t *p, size_t len, uint32_t field,
                              stan_imp_str *out, const char **why) {
    out->p = NULL;
    out->len = 0;
    pb b = {p, len, 0};
    uint32_t num;
    uint64_t v = 0;
    stan_imp_str s = {0};
    bool is_bytes;
    int rc;
    while ((rc = next_field(&b, &num, &v, &s, &is_bytes, why)) == 1) {
        if (num == field) {
            if (!is_bytes || s.len > MAX_FIELD) {
                *why = "invalid string field";
                return -1;
            }
            *out = s;
        }
    }
    return rc < 0 ? -1 : 0;
}
