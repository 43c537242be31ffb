/*
 * stream_ext.c — the stream extensions of the protocol server (server
 * layer): STREAM_INFO_GET (28) for any identity that may subscribe to the
 * stream's subjects, and STREAM_CREATE, STREAM_UPDATE, STREAM_PURGE and
 * STREAM_DELETE (30..33) handed to the host's stream administration
 * (rift_server_stream_admin), each a one-shot operation.
 *
 * Reference: docs/protocol-v1.md, "Extensions" E.2 and E.3. A stream the
 * identity may not subscribe to is answered exactly as an unknown one, so
 * its existence does not leak. The administration call runs on this
 * thread (the host's work, see server.h).
 */
#include "server/handlers.h"
#include "server/store_op.h"
#include "server/stream_record.h"

#include "codec/frame_ext_stream.h"
#include "subject/acl.h"
#include "subject/name.h"

#include <string.h>

/* Most subject patterns one stream spec may carry. */
#define MAX_SUBJECTS 64

static const char text_unknown[] = "unknown stream";
static const char text_name[] = "invalid stream name";

/* A run-time stream's name: the wire rule, and dot-separated tokens that
 * are never empty (so no "." or ".." and nothing hidden on disk). */
static bool runtime_name_valid(const char *s, size_t len) {
    if (!rift_name_valid(s, len) || s[0] == '.' || s[len - 1] == '.') {
        return false;
    }
    for (size_t i = 1; i < len; i++) {
        if (s[i] == '.' && s[i - 1] == '.') {
            return false;
        }
    }
    return true;
}

/* Whether |id| may subscribe to every subject pattern of |cfg|. */
static bool may_read(const rift_identity *id, const rift_stream_settings *cfg) {
    for (size_t i = 0; i < cfg->subjects_count; i++) {
        const char *p = cfg->subjects[i];
        if (rift_identity_can_subscribe(id, p, strlen(p), NULL) != 0) {
            return false;
        }
    }
    return true;
}

/* Space-separated list of |cfg|'s subjects into |buf|; its length, or
 * SIZE_MAX when it does not fit a `str`. */
static size_t join_subjects(const rift_stream_settings *cfg, char *buf,
                            size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < cfg->subjects_count; i++) {
        size_t l = strlen(cfg->subjects[i]);
        if (n + l + 1 > cap) {
            return SIZE_MAX;
        }
        if (i > 0) {
            buf[n++] = ' ';
        }
        memcpy(buf + n, cfg->subjects[i], l);
        n += l;
    }
    return n;
}

/* STREAM_INFO_EXT for |st| named |name|; 0, or the stream was failed (or
 * the write did not go out: nonzero, the caller ends the stream). */
static int write_info(srv_stream *ss, rift_stream *st, const char *name,
                      size_t name_len, bool configured) {
    rift_stream_settings cfg;
    rift_stream_get_settings(st, &cfg);
    rift_stream_info info;
    rift_error err;
    if (rift_stream_get_info(st, &info, &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return err.code;
    }
    char subjects[RIFT_FRAME_MAX_STRING];
    size_t sn = join_subjects(&cfg, subjects, sizeof(subjects));
    rift_frame_stream_info f = {
        .spec =
            {
                .stream = name,
                .stream_len = name_len,
                .subjects = subjects,
                .subjects_len = sn,
                .storage = info.durable ? RIFT_EXT_STORAGE_FILE
                                        : RIFT_EXT_STORAGE_MEMORY,
                .max_messages = cfg.max_messages,
                .max_bytes = cfg.max_bytes,
                .max_age_ms = cfg.max_age_ms,
                .max_payload_bytes = cfg.max_payload_bytes,
                .max_consumers = cfg.max_consumers,
            },
        .messages = info.messages,
        .bytes = info.bytes,
        .first_sequence = info.first_sequence,
        .last_sequence = info.last_sequence,
        .consumers = (uint32_t)RIFT_MIN(info.consumer_count, UINT32_MAX),
        .runtime = configured ? 0 : 1,
    };
    rift_stream_info_free(&info);
    rift_server *srv = ss->conn->srv;
    rift_ssize n = sn == SIZE_MAX ? RIFT_ERR_INVALID_ARGUMENT
                                  : rift_frame_encode_stream_info(
                                        srv->scratch, SRV_SCRATCH_BYTES, &f);
    if (n < 0) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "stream info does not fit");
        return (int)n;
    }
    rift_quic_chunk ch = {srv->scratch, (size_t)n, NULL, NULL};
    return rift_srv_write(ss, &ch, 1, false);
}

/* Looks |name| up and answers STREAM_INFO_EXT when the identity may read
 * it; "unknown stream" otherwise. Ends the stream either way. */
static void answer_info(srv_stream *ss, const char *name, size_t len) {
    rift_server *srv = ss->conn->srv;
    srv_pin pin;
    rift_stream *st = rift_srv_lookup_stream(ss, name, len, &pin);
    if (st == NULL) {
        return;
    }
    rift_stream_settings cfg;
    rift_stream_get_settings(st, &cfg);
    if (!may_read(ss->conn->id, &cfg)) {
        rift_srv_unpin(srv, &pin, false);
        rift_srv_fail(ss, RIFT_ERR_UNKNOWN_STREAM, text_unknown);
        return;
    }
    int rc = write_info(ss, st, name, len, !pin.held);
    rift_srv_unpin(srv, &pin, false);
    if (rc == 0) {
        rift_srv_finish(ss);
    } else if (ss->state == SS_OPS) {
        rift_srv_write_failed(ss);
    }
}

static void info_get(srv_stream *ss, const uint8_t *fields, size_t len) {
    const char *name;
    size_t name_len;
    rift_error err;
    if (rift_frame_decode_stream_ref(fields, len, &name, &name_len, &err) !=
        0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (rift_srv_backend_serves(ss->conn->srv, name, name_len) &&
        rift_srv_backend_stream_info(ss, name, name_len)) {
        return; /* a replicated stream: stream_backend_ext.c */
    }
    answer_info(ss, name, name_len);
}

/* ---- Administration ---- */

/* A spec's subjects split into NUL-terminated patterns in |buf|. */
typedef struct subject_list {
    char buf[RIFT_FRAME_MAX_STRING + 1];
    const char *v[MAX_SUBJECTS];
    size_t n;
} subject_list;

static int split_subjects(const rift_identity *id, const char *s, size_t len,
                          subject_list *out, rift_error *err) {
    memcpy(out->buf, s, len);
    out->buf[len] = '\0';
    out->n = 0;
    char *save = NULL;
    for (char *t = strtok_r(out->buf, " ", &save); t != NULL;
         t = strtok_r(NULL, " ", &save)) {
        if (out->n == MAX_SUBJECTS) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "at most 64 stream subjects");
        }
        int rc = rift_identity_can_subscribe(id, t, strlen(t), err);
        if (rc != 0) {
            return rc;
        }
        out->v[out->n++] = t;
    }
    return 0;
}

static void admin(srv_stream *ss, const srv_frame *f) {
    rift_server *srv = ss->conn->srv;
    rift_error err = {0};
    rift_server_stream_request req = {0};
    subject_list subjects;
    char name[RIFT_NAME_MAX + 1];
    const char *s = NULL;
    size_t n = 0;
    rift_frame_stream_spec spec;
    int rc;
    bool spec_op = f->opcode == RIFT_OP_STREAM_CREATE ||
                   f->opcode == RIFT_OP_STREAM_UPDATE;
    if (spec_op) {
        rc = rift_frame_decode_stream_spec(f->fields, f->len, &spec, &err);
        s = spec.stream;
        n = spec.stream_len;
        if (rc != 0 && spec.decoded == 0) {
            rift_srv_fail_err(ss, &err);
            return;
        }
    } else {
        rc = rift_frame_decode_stream_ref(f->fields, f->len, &s, &n, &err);
        if (rc != 0) {
            rift_srv_fail_err(ss, &err);
            return;
        }
    }
    /* The name is checked as soon as it is decoded (E.3). */
    if (!runtime_name_valid(s, n)) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT, text_name);
        return;
    }
    if (rc != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    memcpy(name, s, n);
    name[n] = '\0';
    if (spec_op) {
        if (spec.storage > RIFT_EXT_STORAGE_FILE) {
            rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                          "invalid stream storage");
            return;
        }
        if ((rc = split_subjects(ss->conn->id, spec.subjects, spec.subjects_len,
                                 &subjects, &err)) != 0) {
            rift_srv_fail_err(ss, &err);
            return;
        }
        if (f->opcode == RIFT_OP_STREAM_CREATE && subjects.n == 0) {
            rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                          "a stream needs at least one subject");
            return;
        }
        req.subjects = subjects.v;
        req.subjects_count = subjects.n;
        req.file = spec.storage == RIFT_EXT_STORAGE_FILE;
        req.max_messages = spec.max_messages;
        req.max_bytes = spec.max_bytes;
        req.max_age_ms = spec.max_age_ms;
        req.max_payload_bytes = spec.max_payload_bytes;
        req.max_consumers = spec.max_consumers;
    }
    if (srv->stream_admin.call == NULL) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "stream administration not offered");
        return;
    }
    req.verb = (rift_server_stream_verb)(f->opcode - RIFT_OP_STREAM_CREATE +
                                         RIFT_SERVER_STREAM_CREATE);
    req.identity = ss->conn->id->name;
    req.name = name;
    /* A backend stream's purge: the host grants it, the backend does it. */
    bool backend_purge = f->opcode == RIFT_OP_STREAM_PURGE &&
                         srv->stream_backend.purge != NULL &&
                         rift_srv_backend_serves(srv, name, n);
    req.backend = backend_purge;
    if ((rc = srv->stream_admin.call(srv->stream_admin.ud, &req, &err)) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    if (backend_purge) {
        (void)rift_srv_backend_purge(ss, name, n);
        return;
    }
    if (spec_op) {
        answer_info(ss, name, n);
    } else if (rift_srv_write_ok(ss, false) == 0) {
        rift_srv_finish(ss);
    } else if (ss->state == SS_OPS) {
        rift_srv_write_failed(ss);
    }
}

bool rift_srv_stream_admin_offered(const rift_server *srv) {
    return srv->stream_admin.call != NULL;
}

void rift_srv_stream_ext(srv_stream *ss, const srv_frame *f) {
    if (f->opcode == RIFT_OP_STREAM_INFO_GET) {
        info_get(ss, f->fields, f->len);
    } else {
        admin(ss, f);
    }
}
