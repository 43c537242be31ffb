/*
 * import_out.c — writes one rift stream directory offline (stan layer; see
 * import_internal.h) in the format of docs/storage-format.md, through the
 * store's own encoders (src/store/format.h): segments whose records keep
 * the imported sequence numbers and timestamps, and a state log with the
 * holes between non-contiguous sequences and the durable consumers. The
 * stream is opened by nothing while this runs (the import works on a
 * directory no server uses); import.c verifies the result with
 * rift_store_verify before it is put in place.
 */
#include "stan/import_internal.h"

#include "rift/stream.h"
#include "store/format.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Segments are sealed at the store's default size. */
#define SEG_BYTES (64u << 20)

static int io_err(rift_error *err, const char *what, const char *path) {
    return rift_error_set(err, RIFT_ERR_IO, "%s %s: %s", what, path,
                          strerror(errno));
}

static FILE *create(const char *dir, const char *name, rift_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  RIFT_STORE_FILE_MODE);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        io_err(err, "create", path);
        if (fd >= 0) {
            close(fd);
        }
    }
    return f;
}

/* close_synced flushes, fdatasyncs and closes |*f|. */
static int close_synced(FILE **f, const char *dir, rift_error *err) {
    if (!*f) {
        return 0;
    }
    int rc = 0;
    if (fflush(*f) != 0 || fdatasync(fileno(*f)) != 0) {
        rc = io_err(err, "write in", dir);
    }
    if (fclose(*f) != 0 && rc == 0) {
        rc = io_err(err, "close in", dir);
    }
    *f = NULL;
    return rc;
}

static int put(FILE *f, const void *p, size_t n, const char *dir,
               rift_error *err) {
    return fwrite(p, 1, n, f) == n ? 0 : io_err(err, "write in", dir);
}

int stan_imp_out_open(stan_imp_out *o, const char *dir, const rift_mem *mem,
                      rift_error *err) {
    memset(o, 0, sizeof *o);
    o->mem = mem;
    o->next_cid = 1;
    rift_sbuf_init(&o->rec, mem);
    rift_sbuf_init(&o->ev, mem);
    if (mkdir(dir, RIFT_STORE_DIR_MODE) != 0) {
        return io_err(err, "mkdir", dir);
    }
    if (!(o->dir = rift_strndup(mem, dir, strlen(dir)))) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    if (!(o->state = create(dir, RIFT_STATE_FILE, err))) {
        return err ? err->code : RIFT_ERR_IO;
    }
    uint8_t h[RIFT_STATE_HEADER];
    rift_state_header_encode(h);
    return put(o->state, h, sizeof h, dir, err);
}

static int new_segment(stan_imp_out *o, uint64_t base, rift_error *err) {
    int rc = close_synced(&o->seg, o->dir, err);
    if (rc != 0) {
        return rc;
    }
    char name[RIFT_SEG_NAME_LEN + 1];
    rift_seg_name(name, sizeof name, base);
    if (!(o->seg = create(o->dir, name, err))) {
        return err ? err->code : RIFT_ERR_IO;
    }
    uint8_t h[RIFT_SEG_HEADER];
    rift_seg_header_encode(h, base);
    o->seg_bytes = RIFT_SEG_HEADER;
    return put(o->seg, h, sizeof h, o->dir, err);
}

static int put_event(stan_imp_out *o, rift_error *err) {
    int rc = put(o->state, o->ev.data, o->ev.len, o->dir, err);
    o->ev.len = 0;
    return rc;
}

int stan_imp_out_record(stan_imp_out *o, uint64_t seq, uint64_t ts_ms,
                        const char *subject, size_t subject_len,
                        const char *reply, size_t reply_len,
                        const uint8_t *payload, size_t payload_len,
                        rift_error *err) {
    if (subject_len == 0 || subject_len > RIFT_REC_MAX_SUBJECT ||
        reply_len > RIFT_REC_MAX_SUBJECT ||
        payload_len > RIFT_MAX_PAYLOAD_LIMIT) {
        return rift_error_set(
            err, RIFT_ERR_STORAGE,
            "sequence %" PRIu64 ": subject, reply or payload too long", seq);
    }
    if (seq == 0 || (o->first_seq && seq < o->next_seq)) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "sequence %" PRIu64
                              " out of order (expected %" PRIu64 " or more)",
                              seq, o->next_seq);
    }
    int rc = 0;
    size_t len = RIFT_REC_OVERHEAD + subject_len + reply_len + payload_len;
    if (!o->first_seq) {
        o->first_seq = seq;
        rc = new_segment(o, seq, err);
    } else if (seq > o->next_seq) {
        /* A gap (slices the original deleted, or lost): the sequences
         * between are a hole, and the next segment starts at |seq|. */
        int64_t s = rift_ev_begin(&o->ev, RIFT_EV_HOLE);
        if (s < 0 || rift_ev_put_u64(&o->ev, o->next_seq) != 0 ||
            rift_ev_put_u64(&o->ev, seq) != 0) {
            return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
        rift_ev_finish(&o->ev, s);
        o->holes++;
        rc = put_event(o, err);
        if (rc == 0) {
            rc = new_segment(o, seq, err);
        }
    } else if (o->seg_bytes + len > SEG_BYTES &&
               o->seg_bytes > RIFT_SEG_HEADER) {
        rc = new_segment(o, seq, err);
    }
    if (rc != 0) {
        return rc;
    }
    o->rec.len = 0;
    uint8_t *p = rift_sbuf_grow(&o->rec, len);
    if (!p) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    uint32_t crc = rift_rec_prepare(p, subject, subject_len, reply, reply_len,
                                    payload, payload_len);
    memcpy(p + RIFT_REC_HEAD, subject, subject_len);
    if (reply_len) {
        memcpy(p + RIFT_REC_HEAD + subject_len, reply, reply_len);
    }
    if (payload_len) {
        memcpy(p + RIFT_REC_HEAD + subject_len + reply_len, payload,
               payload_len);
    }
    rift_rec_finish(p, (uint32_t)len, crc, seq, ts_ms);
    rc = put(o->seg, p, len, o->dir, err);
    rift_sbuf_reset(&o->rec, 1u << 20);
    o->seg_bytes += len;
    o->next_seq = seq + 1;
    o->records++;
    return rc;
}

int stan_imp_out_consumer(stan_imp_out *o, const char *name,
                          uint64_t ack_wait_ms, uint64_t next_seq,
                          const uint64_t *pending, size_t n, uint64_t now_ms,
                          rift_error *err) {
    /* The configuration subs.c gives its consumers, starting at the first
     * record: the STAN service resumes a durable by name and never
     * compares it. */
    uint64_t first = o->first_seq ? o->first_seq : 1;
    int64_t s = rift_ev_begin(&o->ev, RIFT_EV_CONSUMER);
    int rc = s < 0 ? RIFT_ERR_NOMEM : 0;
    if (rc == 0) {
        rc = rift_ev_put_u32(&o->ev, o->next_cid);
    }
    if (rc == 0) {
        rc = rift_ev_put_str(&o->ev, name, strlen(name));
    }
    if (rc == 0) {
        rc = rift_ev_put_str(&o->ev, ">", 1);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(&o->ev, ack_wait_ms);
    }
    if (rc == 0) {
        rc = rift_ev_put_u32(&o->ev, STAN_IMP_MAX_PENDING);
    }
    if (rc == 0) {
        rc = rift_ev_put_u8(&o->ev, (uint8_t)RIFT_START_FIRST);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(&o->ev, 0);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(&o->ev, first);
    }
    if (rc == 0) {
        rc = rift_ev_put_u64(&o->ev, next_seq);
    }
    if (rc == 0) {
        rc = rift_ev_put_u32(&o->ev, (uint32_t)n);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = rift_ev_put_u64(&o->ev, pending[i]);
        if (rc == 0) {
            rc = rift_ev_put_u64(&o->ev, now_ms);
        }
        if (rc == 0) {
            /* Delivered once: the original marks what it resends after a
             * restart as redelivered, and so does this. */
            rc = rift_ev_put_u32(&o->ev, 1);
        }
    }
    if (rc != 0) {
        o->ev.len = 0;
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    rift_ev_finish(&o->ev, s);
    o->next_cid++;
    return put_event(o, err);
}

int stan_imp_out_finish(stan_imp_out *o, rift_error *err) {
    int rc = close_synced(&o->seg, o->dir, err);
    int rc2 = close_synced(&o->state, o->dir, err);
    if (rc == 0 && rc2 != 0) {
        rc = rc2;
    }
    if (rc == 0) {
        int fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            rc = io_err(err, "sync", o->dir);
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    return rc;
}

void stan_imp_out_free(stan_imp_out *o) {
    if (o->seg) {
        fclose(o->seg);
    }
    if (o->state) {
        fclose(o->state);
    }
    rift_sbuf_free(&o->rec);
    rift_sbuf_free(&o->ev);
    rift_free(o->mem, o->dir);
    memset(o, 0, sizeof *o);
}
