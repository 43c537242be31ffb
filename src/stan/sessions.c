/*
 * sessions.c — the file store's STAN sessions (stan layer; see
 * internal.h): client registrations (client ID, heartbeat inbox, conn_id,
 * protocol) and live subscriptions (inbox, ack inbox, consumer, durable,
 * queue group, maxInFlight, ack wait), so that after a restart a client
 * keeps publishing and pinging with its old conn_id and its
 * subscriptions keep delivering to their inboxes, as nats-streaming-server
 * with a file store does. Messages and consumer positions are the
 * channels' streams'; this file only says who is connected to what.
 *
 * <dir>/.sessions (0600; a channel's directory never starts with '.') is
 * a magic and then records appended one per change:
 *   u32 body length, u32 CRC-32C of the body, body = u8 type + fields,
 * strings as u32 length + bytes. At start the records are read up to the
 * first torn or corrupt one (what follows is dropped and reported, the
 * start never refused), replayed, and the file rewritten with the live
 * state only (temp file, fdatasync, rename, directory fsync); it is
 * rewritten the same way when dead records outnumber live ones.
 */
#include "stan/internal.h"

#include "store/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC     "RSTANS1\n"
#define MAGIC_LEN 8u
#define HDR_LEN   8u
/* Bounds a reader applies: the protocol's string limit and a record that
 * holds at most ten of them. */
#define MAX_STR  RIFT_STAN_MAX_STRING
#define MAX_BODY (16u * (MAX_STR + 4u))
/* Dead records tolerated beyond the live ones before a rewrite. */
#define SLACK 256u

enum {
    REC_CLIENT = 1,
    REC_CLIENT_GONE = 2,
    REC_SUB = 3,
    REC_SUB_GONE = 4
};

/* ---- Encoding ---- */

typedef struct enc {
    uint8_t buf[MAX_BODY + HDR_LEN];
    size_t n;
    bool over;
} enc;

static void put(enc *e, const void *p, size_t len) {
    if (e->over || e->n + len > sizeof e->buf) {
        e->over = true;
        return;
    }
    memcpy(e->buf + e->n, p, len);
    e->n += len;
}

static void put_u32(enc *e, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                    (uint8_t)(v >> 24)};
    put(e, b, 4);
}

static void put_u64(enc *e, uint64_t v) {
    put_u32(e, (uint32_t)v);
    put_u32(e, (uint32_t)(v >> 32));
}

static void put_str(enc *e, const char *s, size_t len) {
    if (len > MAX_STR) {
        e->over = true;
        return;
    }
    put_u32(e, (uint32_t)len);
    put(e, s ? s : "", len);
}

static void put_cstr(enc *e, const char *s) {
    put_str(e, s, s ? strlen(s) : 0);
}

static void begin(enc *e, uint8_t type) {
    e->n = HDR_LEN;
    e->over = false;
    put(e, &type, 1);
}

/* finish fills the header; false when the record did not fit. */
static bool finish(enc *e) {
    if (e->over) {
        return false;
    }
    uint32_t len = (uint32_t)(e->n - HDR_LEN);
    uint32_t crc = rift_crc32c(e->buf + HDR_LEN, len);
    size_t n = e->n;
    e->n = 0;
    put_u32(e, len);
    put_u32(e, crc);
    e->n = n;
    return true;
}

static bool enc_client(enc *e, const stan_client *c) {
    begin(e, REC_CLIENT);
    put_cstr(e, c->id);
    put_cstr(e, c->hb_inbox);
    put_str(e, (const char *)c->conn_id, c->conn_id_len);
    put_u32(e, (uint32_t)c->protocol);
    put_u32(e, (uint32_t)c->ping_interval);
    put_u32(e, (uint32_t)c->ping_max_out);
    return finish(e);
}

static bool enc_sub(enc *e, const stan_sub *s) {
    begin(e, REC_SUB);
    put_u64(e, s->id);
    put_cstr(e, s->client->id);
    put_cstr(e, s->feed->ch->name);
    put_cstr(e, s->inbox);
    put_cstr(e, s->ack_inbox);
    put_cstr(e, s->feed->name);
    put_cstr(e, s->durable);
    put_cstr(e, s->q_group);
    put_u32(e, (uint32_t)s->max_in_flight);
    put_u32(e, (uint32_t)s->ack_wait_s);
    return finish(e);
}

/* ---- Decoding ---- */

typedef struct dec {
    const uint8_t *p;
    size_t len, off;
    bool bad;
} dec;

static uint32_t get_u32(dec *d) {
    if (d->bad || d->len - d->off < 4) {
        d->bad = true;
        return 0;
    }
    const uint8_t *b = d->p + d->off;
    d->off += 4;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static uint64_t get_u64(dec *d) {
    uint64_t lo = get_u32(d);
    return lo | (uint64_t)get_u32(d) << 32;
}

static rift_stan_str get_str(dec *d) {
    uint32_t n = get_u32(d);
    if (d->bad || n > MAX_STR || d->len - d->off < n) {
        d->bad = true;
        return (rift_stan_str){"", 0};
    }
    rift_stan_str s = {(const char *)d->p + d->off, n};
    d->off += n;
    return s;
}

typedef struct crec {
    rift_stan_connect_req q;
    bool gone;
} crec;

typedef struct srec {
    uint64_t id;
    rift_stan_sub_req q;
    rift_stan_str ack_inbox, feed;
    bool gone;
} srec;

typedef struct loaded {
    crec *c;
    size_t nc, capc;
    srec *s;
    size_t ns, caps;
    uint64_t records;
} loaded;

static bool str_eq(rift_stan_str a, rift_stan_str b) {
    return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

static void *grow(rift_stan *svc, void *arr, size_t *cap, size_t n,
                  size_t size) {
    if (n < *cap) {
        return arr;
    }
    size_t nc = *cap ? *cap * 2 : 16;
    void *na = rift_realloc(svc->s.mem, arr, nc * size);
    if (na) {
        *cap = nc;
    }
    return na;
}

/* apply_record replays one record; false when it is malformed. */
static bool apply_record(rift_stan *svc, loaded *l, dec *d) {
    uint8_t type = d->len ? d->p[0] : 0;
    d->off = 1;
    if (type == REC_CLIENT) {
        crec r = {0};
        r.q.client_id = get_str(d);
        r.q.heartbeat_inbox = get_str(d);
        r.q.conn_id = get_str(d);
        r.q.protocol = (int32_t)get_u32(d);
        r.q.ping_interval = (int32_t)get_u32(d);
        r.q.ping_max_out = (int32_t)get_u32(d);
        crec *na = d->bad ? NULL : grow(svc, l->c, &l->capc, l->nc, sizeof r);
        if (!na) {
            return false;
        }
        l->c = na;
        l->c[l->nc++] = r;
    } else if (type == REC_CLIENT_GONE) {
        rift_stan_str id = get_str(d);
        for (size_t i = 0; !d->bad && i < l->nc; i++) {
            l->c[i].gone |= str_eq(l->c[i].q.client_id, id);
        }
    } else if (type == REC_SUB) {
        srec r = {0};
        r.id = get_u64(d);
        r.q.client_id = get_str(d);
        r.q.subject = get_str(d);
        r.q.inbox = get_str(d);
        r.ack_inbox = get_str(d);
        r.feed = get_str(d);
        r.q.durable_name = get_str(d);
        r.q.q_group = get_str(d);
        r.q.max_in_flight = (int32_t)get_u32(d);
        r.q.ack_wait_in_secs = (int32_t)get_u32(d);
        srec *na = d->bad ? NULL : grow(svc, l->s, &l->caps, l->ns, sizeof r);
        if (!na) {
            return false;
        }
        l->s = na;
        l->s[l->ns++] = r;
    } else if (type == REC_SUB_GONE) {
        uint64_t id = get_u64(d);
        for (size_t i = 0; !d->bad && i < l->ns; i++) {
            l->s[i].gone |= l->s[i].id == id;
        }
    } else {
        return false;
    }
    return !d->bad && d->off == d->len;
}

/* parse replays |buf|; returns the offset of the first record it could
 * not use (|len| when all were good). */
static size_t parse(rift_stan *svc, loaded *l, const uint8_t *buf, size_t len) {
    size_t off = MAGIC_LEN;
    while (len - off >= HDR_LEN) {
        dec h = {buf + off, HDR_LEN, 0, false};
        uint32_t blen = get_u32(&h), crc = get_u32(&h);
        if (blen == 0 || blen > MAX_BODY || len - off - HDR_LEN < blen ||
            rift_crc32c(buf + off + HDR_LEN, blen) != crc) {
            return off;
        }
        dec d = {buf + off + HDR_LEN, blen, 0, false};
        if (!apply_record(svc, l, &d)) {
            return off;
        }
        l->records++;
        off += HDR_LEN + blen;
    }
    return off;
}

/* ---- Files ---- */

static int path_of(const rift_stan *svc, const char *name, char *out,
                   size_t cap) {
    int n = snprintf(out, cap, "%s/%s", svc->dir, name);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static bool write_all(int fd, const uint8_t *p, size_t len) {
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* read_file reads |path| whole into a new buffer; ENOENT gives len 0. */
static int read_file(rift_stan *svc, const char *path, uint8_t **pbuf,
                     size_t *plen, rift_error *err) {
    *pbuf = NULL;
    *plen = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? 0
                               : rift_error_set(err, RIFT_ERR_IO, "%s: %s",
                                                path, strerror(errno));
    }
    struct stat st;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fstat(fd, &st) == 0 ? 0 : RIFT_ERR_IO;
    if (rc == 0 && st.st_size > 0) {
        buf = rift_malloc(svc->s.mem, (size_t)st.st_size);
        rc = buf ? 0 : RIFT_ERR_NOMEM;
    }
    while (rc == 0 && buf && len < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break; /* shorter than stat said: parse what there is */
        }
        len += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        rift_free(svc->s.mem, buf);
        return rift_error_set(err, rc, "%s: %s", path, rift_strerror(rc));
    }
    *pbuf = buf;
    *plen = len;
    return 0;
}

static void sync_dir(const rift_stan *svc) {
    int fd = open(svc->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* rewrite replaces the file with the live state and reopens it for
 * appending. */
static int rewrite(rift_stan *svc, rift_error *err) {
    char path[4200], tmp[4200];
    if (path_of(svc, ".sessions", path, sizeof path) != 0 ||
        path_of(svc, ".sessions.tmp", tmp, sizeof tmp) != 0) {
        return rift_error_set(err, RIFT_ERR_IO, "streaming: dir too long");
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", tmp, strerror(errno));
    }
    /* Its own buffer: append's may hold the record being appended. */
    enc *e = rift_malloc(svc->s.mem, sizeof *e);
    bool ok = e && write_all(fd, (const uint8_t *)MAGIC, MAGIC_LEN);
    uint64_t records = 0;
    for (stan_client *c = svc->clients; ok && c; c = c->next, records++) {
        ok = enc_client(e, c) && write_all(fd, e->buf, e->n);
    }
    /* Oldest first, as they were appended: restored in that order, a
     * queue group's first member (whose ack wait the group takes) is the
     * same again. */
    stan_sub **subs = rift_malloc(svc->s.mem, (svc->nsubs + 1) * sizeof *subs);
    size_t ns = 0;
    ok = ok && subs;
    for (stan_sub *s = svc->sub_list; ok && s && ns < svc->nsubs; s = s->next) {
        subs[ns++] = s;
    }
    while (ok && ns > 0) {
        ok = enc_sub(e, subs[--ns]) && write_all(fd, e->buf, e->n);
        records++;
    }
    rift_free(svc->s.mem, subs);
    rift_free(svc->s.mem, e);
    ok = ok && fdatasync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        saved = ok ? errno : saved;
        (void)unlink(tmp);
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", path,
                              strerror(saved));
    }
    sync_dir(svc);
    if (svc->sessions_fd >= 0) {
        close(svc->sessions_fd);
    }
    svc->sessions_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (svc->sessions_fd < 0) {
        return rift_error_set(err, RIFT_ERR_IO, "%s: %s", path,
                              strerror(errno));
    }
    svc->sessions_records = records;
    svc->sessions_broken = false;
    return 0;
}

/* append writes one encoded record (or rewrites the file when it holds
 * too many dead ones or an earlier append failed). A failure is logged:
 * the registration stands, only its survival of a restart is at risk. */
static void append(rift_stan *svc, enc *e, bool encoded) {
    uint64_t live = svc->nclients + svc->nsubs;
    if (svc->sessions_broken || svc->sessions_fd < 0 ||
        svc->sessions_records > 2 * live + SLACK) {
        rift_error err = {0};
        if (rewrite(svc, &err) != 0) {
            rift_log(RIFT_LOG_ERROR, "stan: sessions not saved: %s", err.text);
            svc->sessions_broken = true;
        }
        return; /* the rewrite holds the change */
    }
    if (!encoded || !write_all(svc->sessions_fd, e->buf, e->n) ||
        (svc->s.sync_on_write && fdatasync(svc->sessions_fd) != 0)) {
        rift_log(RIFT_LOG_ERROR, "stan: sessions: append: %s",
                 encoded ? strerror(errno) : "record too large");
        svc->sessions_broken = true;
        return;
    }
    svc->sessions_records++;
}

/* ---- API ---- */

void stan_sessions_client_added(rift_stan *svc, const stan_client *c) {
    enc *e = svc->sessions_enc;
    if (e && !svc->restoring) {
        append(svc, e, enc_client(e, c));
    }
}

void stan_sessions_client_removed(rift_stan *svc, const stan_client *c) {
    enc *e = svc->sessions_enc;
    if (e && !svc->restoring) {
        begin(e, REC_CLIENT_GONE);
        put_cstr(e, c->id);
        append(svc, e, finish(e));
    }
}

void stan_sessions_sub_added(rift_stan *svc, const stan_sub *s) {
    enc *e = svc->sessions_enc;
    if (e && !svc->restoring) {
        append(svc, e, enc_sub(e, s));
    }
}

void stan_sessions_sub_removed(rift_stan *svc, const stan_sub *s) {
    enc *e = svc->sessions_enc;
    if (e && !svc->restoring) {
        begin(e, REC_SUB_GONE);
        put_u64(e, s->id);
        append(svc, e, finish(e));
    }
}

/* restore registers what |l| holds; a client or subscription that cannot
 * come back (its channel is gone past max_channels, ...) is logged. */
static void restore(rift_stan *svc, const loaded *l) {
    for (size_t i = 0; i < l->nc; i++) {
        if (!l->c[i].gone && !stan_client_restore(svc, &l->c[i].q)) {
            rift_log(RIFT_LOG_WARN, "stan: client %.*s not restored",
                     (int)l->c[i].q.client_id.len, l->c[i].q.client_id.p);
        }
    }
    for (size_t i = 0; i < l->ns; i++) {
        const srec *r = &l->s[i];
        if (r->gone) {
            continue;
        }
        char ack[MAX_STR + 1], feed[MAX_STR + 1];
        snprintf(ack, sizeof ack, "%.*s", (int)r->ack_inbox.len,
                 r->ack_inbox.p);
        snprintf(feed, sizeof feed, "%.*s", (int)r->feed.len, r->feed.p);
        const char *why = stan_sub_restore(svc, &r->q, r->id, ack, feed);
        if (why) {
            rift_log(RIFT_LOG_WARN,
                     "stan: subscription of %.*s on %.*s not restored: %s",
                     (int)r->q.client_id.len, r->q.client_id.p,
                     (int)r->q.subject.len, r->q.subject.p, why);
        }
    }
    for (stan_channel *ch = svc->channels; ch; ch = ch->next) {
        stan_channel_drop_leftovers(svc, ch);
    }
}

int stan_sessions_open(rift_stan *svc, rift_error *err) {
    if (!svc->dir) {
        return 0;
    }
    if (mkdir(svc->dir, 0700) != 0 && errno != EEXIST) {
        return rift_error_set(err, RIFT_ERR_IO, "streaming: %s: %s", svc->dir,
                              strerror(errno));
    }
    char path[4200];
    if (path_of(svc, ".sessions", path, sizeof path) != 0) {
        return rift_error_set(err, RIFT_ERR_IO, "streaming: dir too long");
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_file(svc, path, &buf, &len, err);
    if (rc != 0) {
        return rc;
    }
    svc->sessions_enc = rift_malloc(svc->s.mem, sizeof(enc));
    if (!svc->sessions_enc) {
        rift_free(svc->s.mem, buf);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    loaded l = {0};
    if (len >= MAGIC_LEN && memcmp(buf, MAGIC, MAGIC_LEN) == 0) {
        size_t good = parse(svc, &l, buf, len);
        if (good < len) {
            rift_log(RIFT_LOG_WARN,
                     "stan: %s: torn or corrupt tail at byte %zu: %zu bytes "
                     "dropped (%" PRIu64 " records kept)",
                     path, good, len - good, l.records);
        }
    } else if (len > 0) {
        rift_log(RIFT_LOG_WARN,
                 "stan: %s: not a session file (%zu bytes): sessions of the "
                 "previous run dropped",
                 path, len);
    }
    svc->restoring = true;
    restore(svc, &l);
    svc->restoring = false;
    rift_free(svc->s.mem, l.c);
    rift_free(svc->s.mem, l.s);
    rift_free(svc->s.mem, buf);
    if (svc->nclients || svc->nsubs) {
        rift_log(RIFT_LOG_INFO,
                 "stan: %zu clients and %zu subscriptions restored",
                 svc->nclients, svc->nsubs);
    }
    return rewrite(svc, err);
}

void stan_sessions_close(rift_stan *svc) {
    if (svc->sessions_fd >= 0) {
        close(svc->sessions_fd);
        svc->sessions_fd = -1;
    }
    rift_free(svc->s.mem, svc->sessions_enc);
    svc->sessions_enc = NULL;
}
