/*
 * control_streams.c — riftd's control commands on durable streams and
 * consumers (daemon layer): streams, stream.info, stream.reopen, stream.replay,
 * consumer.open, consumer.info and consumer.delete. They cover what
 * protocol v1 has no opcode for (replay, deletion, the NATS-Streaming
 * start positions); docs/riftd.md documents each request and answer.
 *
 * Consumer names are those of the wire: the name a client chose, scoped
 * by an identity (§3.5). The identity is the "identity" field when given
 * (a control principal administers every identity's consumers), else the
 * requester itself: the identity whose QUIC REQUEST is waiting on the
 * request's reply inbox (rift_server_requester). So `rift consumer delete
 * jobs worker` deletes the consumer the same principal opened with
 * CONSUMER_OPEN "worker".
 */
#include "daemon/daemon_internal.h"

#include "common/base64.h"
#include "stan/views.h"
#include "subject/quota.h"

#include <stdlib.h>
#include <string.h>

/* stream.replay: records per answer by default and at most. */
#define REPLAY_DEFAULT_LIMIT 100
#define REPLAY_MAX_LIMIT     1000
/* Room kept in a replay answer for its envelope. */
#define REPLAY_ENVELOPE 1024
/* Consumer limits of the wire (§2.9 CONSUMER_OPEN 4). */
#define ACK_WAIT_MAX_MS  3600000
#define ACK_PENDING_MAX  65536
#define FILTER_MAX_BYTES 1024

/* ---- Argument helpers ---- */

/* A string field of 1..|max| bytes without NUL; *out NULL when absent and
 * not |required|. */
static int arg_string(const json_t *args, const char *key, size_t max,
                      bool required, const char **out, rift_error *err) {
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (v == NULL && !required) {
        return 0;
    }
    size_t len = json_is_string(v) ? json_string_length(v) : 0;
    if (len == 0 || len > max || strlen(json_string_value(v)) != len) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "%s must be a nonempty string of at most %zu "
                              "bytes",
                              key, max);
    }
    *out = json_string_value(v);
    return 0;
}

/* An integer field in |min|..=|max|; *out keeps its default when
 * absent. */
static int arg_uint(const json_t *args, const char *key, uint64_t min,
                    uint64_t max, uint64_t *out, rift_error *err) {
    json_t *v = json_object_get(args, key);
    if (v == NULL) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < min ||
        (uint64_t)json_integer_value(v) > max) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "%s must be an integer in %llu..=%llu", key,
                              (unsigned long long)min, (unsigned long long)max);
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* The stream |name|, configured or a channel; release |ref| in any
 * case. */
static int find_stream(rift_daemon *d, const char *name,
                       rift_daemon_stream_ref *ref, rift_error *err) {
    if (rift_daemon_stream_acquire(d, name, ref) == NULL) {
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM,
                              "unknown stream \"%s\"; use streams to list "
                              "streams",
                              name);
    }
    return 0;
}

/* The identity a consumer command acts for: "identity", else the
 * requester (see the file comment). */
static int resolve_identity(rift_daemon *d, const rift_control_call *call,
                            const rift_identity **pid, rift_error *err) {
    const char *given;
    char name[RIFT_NAME_MAX + 1];
    int rc =
        arg_string(call->args, "identity", RIFT_NAME_MAX, false, &given, err);
    if (rc != 0) {
        return rc;
    }
    if (given != NULL) {
        snprintf(name, sizeof(name), "%s", given);
    } else if (rift_daemon_quic_requester(d->quic, call->reply, call->reply_len,
                                          name) != 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "identity is required unless the request comes "
                              "from a QUIC client (REQUEST)");
    }
    *pid = rift_daemon_quic_identity(d->quic, name);
    if (*pid == NULL) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "unknown identity \"%s\"; use status to list "
                              "identities",
                              name);
    }
    return 0;
}

/* Stream, consumer name and identity of a consumer command, resolved to
 * the open stream and the scoped internal name. */
typedef struct consumer_ref {
    const char *stream_name;
    const char *name;
    const rift_identity *id;
    rift_stream *stream;
    rift_daemon_stream_ref sref; /* the command releases it */
    char scoped[RIFT_SCOPED_CONSUMER_SIZE];
} consumer_ref;

static int resolve_consumer(rift_daemon *d, const rift_control_call *call,
                            consumer_ref *ref, rift_error *err) {
    int rc;
    ref->sref = (rift_daemon_stream_ref){0};
    if ((rc = arg_string(call->args, "stream", RIFT_NAME_MAX, true,
                         &ref->stream_name, err)) != 0 ||
        (rc = arg_string(call->args, "name", RIFT_NAME_MAX, true, &ref->name,
                         err)) != 0 ||
        (rc = resolve_identity(d, call, &ref->id, err)) != 0) {
        return rc;
    }
    if ((rc = rift_identity_consumer_name(ref->id, ref->name, strlen(ref->name),
                                          ref->scoped, err)) != 0) {
        return rc;
    }
    rc = find_stream(d, ref->stream_name, &ref->sref, err);
    ref->stream = ref->sref.stream;
    return rc;
}

static const char *start_names[] = {
    [RIFT_START_SEQUENCE] = "sequence",  [RIFT_START_FIRST] = "first",
    [RIFT_START_LAST_RECEIVED] = "last", [RIFT_START_NEW_ONLY] = "new",
    [RIFT_START_TIME] = "time",          [RIFT_START_TIME_DELTA] = "since",
};

static json_t *consumer_json(const consumer_ref *ref, rift_consumer *c,
                             rift_error *err) {
    rift_consumer_info info;
    if (rift_consumer_get_info(c, &info, err) != 0) {
        return NULL;
    }
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s%,s:s,s:I,s:I,s:I,s:I,s:I}", "stream",
        ref->stream_name, "name", ref->name, "identity", ref->id->name,
        "filter", info.config.filter ? info.config.filter : ">",
        info.config.filter ? info.config.filter_len : (size_t)1, "start",
        start_names[info.config.start], "start_sequence",
        (json_int_t)info.start_sequence, "next_sequence",
        (json_int_t)info.next_sequence, "pending", (json_int_t)info.pending,
        "ack_wait_ms", (json_int_t)info.config.ack_wait_ms, "max_ack_pending",
        (json_int_t)info.config.max_ack_pending);
    if (o != NULL && info.config.start == RIFT_START_TIME) {
        json_object_set_new(
            o, "start_time_ms",
            json_integer((json_int_t)info.config.start_time_ms));
    } else if (o != NULL && info.config.start == RIFT_START_TIME_DELTA) {
        json_object_set_new(
            o, "since_ms", json_integer((json_int_t)info.config.start_time_ms));
    }
    /* The extension's fields, only when set: older answers stay as they
     * were. */
    if (o != NULL && info.config.max_deliver != 0) {
        json_object_set_new(o, "max_deliver",
                            json_integer((json_int_t)info.config.max_deliver));
    }
    if (o != NULL && info.terminated != 0) {
        json_object_set_new(o, "terminated",
                            json_integer((json_int_t)info.terminated));
    }
    if (o != NULL && info.max_delivered != 0) {
        json_object_set_new(o, "max_delivered",
                            json_integer((json_int_t)info.max_delivered));
    }
    if (o == NULL) {
        rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return o;
}

/* ---- streams, stream.info ---- */

int rift_daemon_cmd_streams(void *ud, const rift_control_call *call,
                            json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    (void)call;
    pthread_mutex_lock(&d->lock);
    *data = json_pack("{s:o}", "streams", rift_daemon_streams_json(d));
    pthread_mutex_unlock(&d->lock);
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

static json_t *string_array(char *const *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++) {
        json_array_append_new(a, json_string(v[i]));
    }
    return a;
}

/* A channel limit: 0 (unlimited) as null, as max_age_ms is for streams. */
static json_t *or_null(uint64_t v) {
    return v ? json_integer((json_int_t)v) : json_null();
}

int rift_daemon_cmd_stream_info(void *ud, const rift_control_call *call,
                                json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    const char *name;
    int rc = arg_string(call->args, "name", RIFT_NAME_MAX, true, &name, err);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&d->lock);
    const rift_config_stream *s = rift_config_find_stream(&d->cfg, name);
    json_t *channel = s == NULL ? rift_daemon_channel_json(d, name) : NULL;
    if (channel != NULL) {
        pthread_mutex_unlock(&d->lock);
        /* A channel's stream takes its subject and limits from the
         * streaming table (docs/streaming.md). */
        rift_stan_channel_settings cs;
        rift_stan_channel_settings_of(d->stan, name, &cs);
        json_object_set_new(channel, "subjects", json_pack("[s]", name));
        json_object_set_new(channel, "storage_path", json_null());
        json_object_set_new(channel, "max_messages",
                            or_null(cs.limits.max_msgs));
        json_object_set_new(channel, "max_bytes", or_null(cs.limits.max_bytes));
        json_object_set_new(channel, "max_age_ms",
                            or_null(cs.limits.max_age_ms));
        json_object_set_new(channel, "max_inactivity_ms",
                            or_null(cs.limits.max_inactivity_ms));
        json_object_set_new(channel, "max_consumers",
                            json_integer((json_int_t)cs.max_consumers));
        json_object_set_new(channel, "sync_on_write",
                            json_boolean(cs.sync_on_write));
        *data = channel;
        return 0;
    }
    if (s == NULL) {
        pthread_mutex_unlock(&d->lock);
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM,
                              "unknown stream \"%s\"; use streams to list "
                              "streams",
                              name);
    }
    json_t *info = rift_daemon_stream_summary(d->streams, s);
    if (info != NULL) {
        json_object_set_new(info, "subjects",
                            string_array(s->subjects, s->n_subjects));
        json_object_set_new(info, "storage_path",
                            s->storage_path ? json_string(s->storage_path)
                                            : json_null());
        json_object_set_new(info, "max_messages",
                            json_integer((json_int_t)s->max_messages));
        json_object_set_new(info, "max_bytes",
                            json_integer((json_int_t)s->max_bytes));
        json_object_set_new(info, "max_payload_bytes",
                            json_integer((json_int_t)s->max_payload_bytes));
        json_object_set_new(info, "max_consumers",
                            json_integer((json_int_t)s->max_consumers));
        json_object_set_new(info, "sync_on_write",
                            json_boolean(s->sync_on_write));
        json_object_set_new(info, "max_age_ms",
                            s->max_age_ms
                                ? json_integer((json_int_t)s->max_age_ms)
                                : json_null());
    }
    pthread_mutex_unlock(&d->lock);
    *data = info;
    return info ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- stream.reopen ---- */

/* Gets a stream that a failed write stopped going again (after a full disk
 * was given space, or an I/O error was dealt with), without a restart:
 * rift_stream_reopen. Answers the stream's summary. */
int rift_daemon_cmd_stream_reopen(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    const char *name;
    int rc = arg_string(call->args, "name", RIFT_NAME_MAX, true, &name, err);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&d->lock);
    const rift_config_stream *s = rift_config_find_stream(&d->cfg, name);
    rift_stream *st = s ? rift_daemon_streams_find(d->streams, name) : NULL;
    if (st == NULL) {
        pthread_mutex_unlock(&d->lock);
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM,
                              "unknown stream \"%s\"; use streams to list "
                              "streams",
                              name);
    }
    rift_error why = {0};
    rc = rift_stream_reopen(st, &why);
    if (rc != 0) {
        pthread_mutex_unlock(&d->lock);
        rift_log(RIFT_LOG_ERROR, "rift: stream %s: reopen: %s", name, why.text);
        return rift_error_set(err, rc, "stream %s: %s", name, why.text);
    }
    rift_log(RIFT_LOG_INFO, "rift: stream %s reopened", name);
    json_t *info = rift_daemon_stream_summary(d->streams, s);
    pthread_mutex_unlock(&d->lock);
    *data = info;
    return info ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- stream.replay ---- */

static json_t *record_json(const rift_record *r) {
    char *b64 = malloc(RIFT_BASE64_LEN(r->payload_len) + 1);
    if (b64 == NULL) {
        return NULL;
    }
    rift_base64_encode(r->payload, r->payload_len, b64);
    json_t *o = json_pack(
        "{s:I,s:I,s:s%,s:s,s:I}", "seq", (json_int_t)r->sequence, "time_ms",
        (json_int_t)r->timestamp_ms, "subject", r->subject, r->subject_len,
        "payload", b64, "size", (json_int_t)r->payload_len);
    free(b64);
    if (o != NULL && r->reply_len > 0) {
        json_object_set_new(o, "reply", json_stringn(r->reply, r->reply_len));
    }
    return o;
}

static int replay(rift_daemon *d, rift_stream *st, const char *name,
                  uint64_t from, uint64_t limit, json_t **data,
                  rift_error *err);

int rift_daemon_cmd_stream_replay(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    const char *name;
    uint64_t from = 1, limit = REPLAY_DEFAULT_LIMIT;
    rift_daemon_stream_ref ref = {0};
    int rc;
    if ((rc = arg_string(call->args, "stream", RIFT_NAME_MAX, true, &name,
                         err)) != 0 ||
        (rc = arg_uint(call->args, "from", 1, UINT64_MAX >> 1, &from, err)) !=
            0 ||
        (rc = arg_uint(call->args, "limit", 1, REPLAY_MAX_LIMIT, &limit,
                       err)) != 0 ||
        (rc = find_stream(d, name, &ref, err)) != 0) {
        rift_daemon_stream_release(&ref);
        return rc;
    }
    rc = replay(d, ref.stream, name, from, limit, data, err);
    rift_daemon_stream_release(&ref);
    return rc;
}

static int replay(rift_daemon *d, rift_stream *st, const char *name,
                  uint64_t from, uint64_t limit, json_t **data,
                  rift_error *err) {
    int rc;
    rift_stream_info info;
    if ((rc = rift_stream_get_info(st, &info, err)) != 0) {
        return rc;
    }
    uint64_t first = info.first_sequence, last = info.last_sequence;
    rift_stream_info_free(&info);
    rift_batch b = {0};
    if ((rc = rift_stream_replay(st, from, (size_t)limit, &b, err)) != 0) {
        return rc;
    }
    /* The answer travels as one message: keep it within the broker's
     * payload limit and the transport's 1 MiB. */
    size_t cap =
        RIFT_MIN(rift_broker_get_settings(d->broker)->max_payload_bytes,
                 (size_t)1048576);
    size_t budget = cap > REPLAY_ENVELOPE ? cap - REPLAY_ENVELOPE : 0;
    size_t used = 0, taken = 0;
    json_t *records = json_array();
    rc = records ? 0 : RIFT_ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < b.count; i++) {
        const rift_record *r = &b.items[i].record;
        json_t *o = record_json(r);
        if (o == NULL) {
            rc = RIFT_ERR_NOMEM;
            break;
        }
        size_t n = json_dumpb(o, NULL, 0, JSON_COMPACT) + 1;
        if (used + n > budget) {
            json_decref(o);
            if (taken == 0) {
                rc = rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE,
                                    "record %llu does not fit a control "
                                    "answer; read it with a consumer",
                                    (unsigned long long)r->sequence);
            }
            break;
        }
        used += n;
        json_array_append_new(records, o);
        taken++;
    }
    uint64_t next = taken > 0 ? b.items[taken - 1].record.sequence + 1
                              : RIFT_MAX(from, last + 1);
    rift_batch_free(&b);
    if (rc != 0) {
        json_decref(records);
        return rc == RIFT_ERR_NOMEM ? rift_error_set(err, rc, "out of memory")
                                    : rc;
    }
    *data = json_pack("{s:s,s:o,s:I,s:I,s:I}", "stream", name, "records",
                      records, "next", (json_int_t)next, "first_seq",
                      (json_int_t)first, "last_seq", (json_int_t)last);
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- consumer.open ---- */

static int parse_start(const json_t *args, rift_consumer_config *cc,
                       rift_error *err) {
    const char *mode = "sequence";
    int rc = arg_string(args, "start", 16, false, &mode, err);
    if (rc != 0) {
        return rc;
    }
    if (mode == NULL) {
        mode = "sequence";
    }
    int start = -1;
    for (size_t i = 0; i < RIFT_ARRAY_LEN(start_names); i++) {
        if (strcmp(mode, start_names[i]) == 0) {
            start = (int)i;
        }
    }
    if (start < 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "start must be one of sequence, first, last, "
                              "new, time, since");
    }
    cc->start = (rift_consumer_start)start;
    /* Each mode takes its own argument and no other. */
    static const struct {
        const char *field;
        int mode;
    } owners[] = {{"start_sequence", RIFT_START_SEQUENCE},
                  {"start_time_ms", RIFT_START_TIME},
                  {"since_ms", RIFT_START_TIME_DELTA}};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(owners); i++) {
        bool present = json_object_get(args, owners[i].field) != NULL;
        if (present && owners[i].mode != start) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "%s applies to start \"%s\" only",
                                  owners[i].field, start_names[owners[i].mode]);
        }
        if (!present && owners[i].mode == start && start != 0) {
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "start \"%s\" needs %s", mode,
                                  owners[i].field);
        }
    }
    if (start == RIFT_START_SEQUENCE) {
        return arg_uint(args, "start_sequence", 1, INT64_MAX,
                        &cc->start_sequence, err);
    }
    if (start == RIFT_START_TIME) {
        return arg_uint(args, "start_time_ms", 0, INT64_MAX, &cc->start_time_ms,
                        err);
    }
    if (start == RIFT_START_TIME_DELTA) {
        return arg_uint(args, "since_ms", 0, INT64_MAX, &cc->start_time_ms,
                        err);
    }
    return 0;
}

static int consumer_open(rift_daemon *d, const rift_control_call *call,
                         consumer_ref *pref, json_t **data, rift_error *err);

int rift_daemon_cmd_consumer_open(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err) {
    consumer_ref ref = {0};
    int rc = consumer_open(ud, call, &ref, data, err);
    rift_daemon_stream_release(&ref.sref);
    return rc;
}

static int consumer_open(rift_daemon *d, const rift_control_call *call,
                         consumer_ref *pref, json_t **data, rift_error *err) {
    consumer_ref ref;
    rift_consumer_config cc;
    rift_consumer_config_default(&cc);
    const char *filter;
    uint64_t ack_wait = cc.ack_wait_ms, pending = cc.max_ack_pending;
    rift_error lim = {0};
    int rc;
    rc = resolve_consumer(d, call, &ref, err);
    pref->sref = ref.sref; /* the caller releases it */
    if (rc != 0 || (rc = arg_string(call->args, "filter", FILTER_MAX_BYTES,
                                    false, &filter, err)) != 0) {
        return rc;
    }
    if (filter == NULL) {
        filter = ">";
    }
    /* The filter is held to the identity's subscribe grants, as on the
     * wire (§2.9 CONSUMER_OPEN 3). */
    if ((rc = rift_identity_can_subscribe(ref.id, filter, strlen(filter),
                                          err)) != 0 ||
        (rc = parse_start(call->args, &cc, err)) != 0) {
        return rc;
    }
    if (arg_uint(call->args, "ack_wait_ms", 1, ACK_WAIT_MAX_MS, &ack_wait,
                 &lim) != 0 ||
        arg_uint(call->args, "max_ack_pending", 1, ACK_PENDING_MAX, &pending,
                 &lim) != 0) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid consumer limits");
    }
    cc.filter = filter;
    cc.filter_len = strlen(filter);
    cc.ack_wait_ms = ack_wait;
    cc.max_ack_pending = (uint32_t)pending;
    rift_consumer *c = NULL;
    if ((rc = rift_stream_consumer_open(
             ref.stream, ref.scoped, strlen(ref.scoped), &cc, &c, err)) != 0) {
        return rc;
    }
    *data = consumer_json(&ref, c, err);
    rift_consumer_close(c);
    return *data ? 0 : err->code;
}

/* ---- consumer.info, consumer.delete ---- */

int rift_daemon_cmd_consumer_info(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    consumer_ref ref;
    rift_consumer *c = NULL;
    int rc;
    if ((rc = resolve_consumer(d, call, &ref, err)) != 0 ||
        (rc = rift_stream_consumer_get(ref.stream, ref.scoped,
                                       strlen(ref.scoped), &c, err)) != 0) {
        rift_daemon_stream_release(&ref.sref);
        return rc;
    }
    *data = consumer_json(&ref, c, err);
    rift_consumer_close(c);
    rift_daemon_stream_release(&ref.sref);
    return *data ? 0 : err->code;
}

int rift_daemon_cmd_consumer_delete(void *ud, const rift_control_call *call,
                                    json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    consumer_ref ref;
    int rc;
    if ((rc = resolve_consumer(d, call, &ref, err)) != 0 ||
        (rc = rift_stream_consumer_delete(ref.stream, ref.scoped,
                                          strlen(ref.scoped), err)) != 0) {
        rift_daemon_stream_release(&ref.sref);
        return rc;
    }
    rift_daemon_stream_release(&ref.sref);
    /* The identity may create another one. */
    rift_quota_give(
        d->quota, rift_quota_find(d->quota, ref.id->name, strlen(ref.id->name)),
        RIFT_QUOTA_CONSUMERS);
    *data = json_pack("{s:s,s:s,s:s,s:b}", "stream", ref.stream_name, "name",
                      ref.name, "identity", ref.id->name, "deleted", 1);
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}
