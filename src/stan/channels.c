/*
 * channels.c — STAN channels as rift streams, and publishing (stan layer;
 * see internal.h). A channel is created on first use within max_channels:
 * a memory stream, or a stream directory under the service's dir named
 * after the channel (bytes outside [A-Za-z0-9._-] written as %XX). A
 * PubAck goes out only once the stream reports the record durable: at
 * once for memory, from the writer thread's completion for files.
 */
#include "stan/internal.h"
#include "stan/names.h"

#include "subject/subject.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIR_NAME STAN_MAX_DIR_NAME

typedef struct pub_ctx {
    rift_stan *svc;
    stan_channel *ch;
    char *reply;
    char *guid;
} pub_ctx;

static stan_channel *channel_find(rift_stan *svc, rift_stan_str name) {
    for (stan_channel *c = svc->channels; c; c = c->next) {
        if (strlen(c->name) == name.len &&
            memcmp(c->name, name.p, name.len) == 0) {
            return c;
        }
    }
    return NULL;
}

rift_stan_limits stan_limits_for(const rift_stan *svc, rift_stan_str name) {
    for (size_t i = 0; i < svc->s.channels_count; i++) {
        const char *pat = svc->s.channels[i].pattern;
        if (rift_subject_matches(pat, strlen(pat), name.p, name.len)) {
            return svc->s.channels[i].limits;
        }
    }
    return svc->s.limits;
}

static uint64_t or_unlimited(uint64_t v) {
    return v ? v : UINT64_MAX;
}

void stan_channel_drop_leftovers(rift_stan *svc, stan_channel *ch) {
    (void)svc;
    rift_stream_info info;
    if (rift_stream_get_info(ch->stream, &info, NULL) != 0) {
        return;
    }
    for (size_t i = 0; i < info.consumer_count; i++) {
        const char *n = info.consumer_names[i];
        bool live = false;
        for (stan_feed *f = ch->feeds; f && !live; f = f->next) {
            live = strcmp(f->name, n) == 0;
        }
        if (!live && (strncmp(n, "s-", 2) == 0 || strncmp(n, "g-", 2) == 0)) {
            (void)rift_stream_consumer_delete(ch->stream, n, strlen(n), NULL);
        }
    }
    rift_stream_info_free(&info);
}

static int open_stream(rift_stan *svc, stan_channel *ch, rift_stan_str name,
                       rift_error *err) {
    rift_stan_limits l = stan_limits_for(svc, name);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subjects[1] = {ch->name};
    ss.subjects = subjects;
    ss.subjects_count = 1;
    ss.max_messages = or_unlimited(l.max_msgs);
    ss.max_bytes = or_unlimited(l.max_bytes);
    ss.max_age_ms = l.max_age_ms;
    ss.max_consumers = svc->s.max_subs ? svc->s.max_subs : 1;
    ss.sync_on_write = svc->s.sync_on_write;
    ss.mem = svc->s.mem;
    char path[4096];
    if (svc->dir) {
        char dn[MAX_DIR_NAME + 4];
        if (!stan_dir_name(name.p, name.len, dn, sizeof dn)) {
            return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                                  STAN_ERR_INVALID_SUBJECT);
        }
        int n = snprintf(path, sizeof path, "%s/%s", svc->dir, dn);
        if (n < 0 || (size_t)n >= sizeof path) {
            return rift_error_set(err, RIFT_ERR_INVALID_SUBJECT,
                                  STAN_ERR_INVALID_SUBJECT);
        }
        ss.storage_path = path;
    }
    int rc = rift_stream_new(&ch->stream, &ss, err);
    if (rc == 0 && svc->dir && !svc->restoring) {
        /* While restoring, sessions.c drops them once the restored
         * subscriptions hold theirs. */
        stan_channel_drop_leftovers(svc, ch);
    }
    return rc;
}

stan_channel *stan_channel_get(rift_stan *svc, rift_stan_str name,
                               const char **errtext) {
    stan_channel *ch = channel_find(svc, name);
    if (ch) {
        return ch;
    }
    if (!rift_subject_valid(name.p, name.len, false, RIFT_MAX_SUBJECT_BYTES)) {
        *errtext = STAN_ERR_INVALID_SUBJECT;
        return NULL;
    }
    if (svc->nchannels >= svc->s.max_channels) {
        *errtext = STAN_ERR_TOO_MANY_CHANNELS;
        return NULL;
    }
    ch = rift_calloc(svc->s.mem, 1, sizeof *ch);
    if (!ch || !(ch->name = stan_strdup(svc, name))) {
        rift_free(svc->s.mem, ch);
        *errtext = "stan: out of memory";
        return NULL;
    }
    ch->svc = svc;
    rift_error e = {0};
    if (open_stream(svc, ch, name, &e) != 0) {
        rift_log(RIFT_LOG_ERROR, "stan: channel %s: %s", ch->name, e.text);
        rift_free(svc->s.mem, ch->name);
        rift_free(svc->s.mem, ch);
        /* The store's text may name server paths: the client gets the
         * error's general description only. */
        *errtext = rift_strerror(e.code);
        return NULL;
    }
    ch->last_activity_ms = stan_mono_ms();
    pthread_mutex_lock(&svc->reg_lock);
    ch->next = svc->channels;
    svc->channels = ch;
    pthread_mutex_unlock(&svc->reg_lock);
    svc->nchannels++;
    return ch;
}

/* ---- Publish ---- */

static void send_pub_ack(rift_stan *svc, const char *reply, size_t reply_len,
                         rift_stan_str guid, const char *error) {
    if (!reply || !reply_len) {
        return;
    }
    rift_stan_pub_ack a = {guid, {error, error ? strlen(error) : 0}};
    uint8_t buf[RIFT_STAN_MAX_STRING + 1024];
    size_t n = rift_stan_encode_pub_ack(&a, buf, sizeof buf);
    stan_send(svc, reply, reply_len, buf, n);
}

static void pub_ctx_free(pub_ctx *c) {
    const rift_mem *mem = c->svc->s.mem;
    rift_free(mem, c->reply);
    rift_free(mem, c->guid);
    rift_free(mem, c);
}

/* pub_done runs on a writer thread: it touches only the transport (thread
 * safe), the channel's atomic flag and the wake fd. */
static void pub_done(void *ud, int status, const rift_error *err) {
    (void)err;
    pub_ctx *c = ud;
    rift_stan_str guid = {c->guid, strlen(c->guid)};
    send_pub_ack(c->svc, c->reply, c->reply ? strlen(c->reply) : 0, guid,
                 status == 0 ? NULL : rift_strerror(status));
    atomic_store(&c->ch->dirty, true);
    stan_wake(c->svc);
    pub_ctx_free(c);
}

static void publish_record(rift_stan *svc, stan_channel *ch,
                           const rift_stan_pub_msg *pm, const char *reply,
                           size_t reply_len) {
    pub_ctx *c = rift_calloc(svc->s.mem, 1, sizeof *c);
    if (c) {
        c->svc = svc;
        c->ch = ch;
        c->reply =
            reply_len ? rift_strndup(svc->s.mem, reply, reply_len) : NULL;
        c->guid = stan_strdup(svc, pm->guid);
    }
    if (!c || !c->guid || (reply_len && !c->reply)) {
        if (c) {
            pub_ctx_free(c);
        }
        send_pub_ack(svc, reply, reply_len, pm->guid, "stan: out of memory");
        return;
    }
    rift_stored st;
    rift_error e = {0};
    bool completed = false;
    int rc =
        rift_stream_publish_async(ch->stream, ch->name, strlen(ch->name), NULL,
                                  0, (const uint8_t *)pm->data.p, pm->data.len,
                                  &st, &completed, pub_done, c, &e);
    ch->last_activity_ms = stan_mono_ms();
    if (rc == 0 && completed) {
        send_pub_ack(svc, reply, reply_len, pm->guid, NULL);
        atomic_store(&ch->dirty, true);
        pub_ctx_free(c);
    } else if (rc < 0) {
        rift_log(RIFT_LOG_WARN, "stan: publish to %s: %s", ch->name, e.text);
        send_pub_ack(svc, reply, reply_len, pm->guid, rift_strerror(rc));
        pub_ctx_free(c);
    }
}

void stan_on_publish(rift_stan *svc, const rift_msg *m) {
    size_t len, reply_len;
    const uint8_t *p = rift_msg_payload(m, &len);
    const char *reply = rift_msg_reply(m, &reply_len);
    rift_stan_pub_msg pm;
    if (rift_stan_decode_pub_msg(p, len, &pm, NULL) != 0) {
        send_pub_ack(svc, reply, reply_len, (rift_stan_str){0},
                     STAN_ERR_PUB_REQ);
        return;
    }
    stan_client *c = pm.conn_id.len ? stan_client_by_conn(svc, pm.conn_id)
                                    : stan_client_find(svc, pm.client_id);
    if (!c || pm.guid.len == 0) {
        send_pub_ack(svc, reply, reply_len, pm.guid, STAN_ERR_PUB_REQ);
        return;
    }
    stan_client_heard(svc, c);
    const char *errtext = NULL;
    stan_channel *ch = stan_channel_get(svc, pm.subject, &errtext);
    if (!ch) {
        send_pub_ack(svc, reply, reply_len, pm.guid, errtext);
        return;
    }
    publish_record(svc, ch, &pm, reply, reply_len);
}

/* ---- Inactivity and shutdown ---- */

/* remove_dir deletes a channel directory's files and the directory (a
 * stream directory holds plain files only). */
static void remove_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        return;
    }
    struct dirent *e;
    char f[4400];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        (void)unlink(f);
    }
    closedir(d);
    (void)rmdir(path);
}

/* An offline durable (or durable queue shadow) keeps its channel. */
static bool has_durables(rift_stream *st) {
    rift_stream_info info;
    if (rift_stream_get_info(st, &info, NULL) != 0) {
        return true;
    }
    bool any = info.consumer_count > 0;
    rift_stream_info_free(&info);
    return any;
}

static void channel_free(rift_stan *svc, stan_channel *ch) {
    rift_stream_del(ch->stream);
    rift_free(svc->s.mem, ch->name);
    rift_free(svc->s.mem, ch);
}

void stan_channels_expire(rift_stan *svc, uint64_t now_ms) {
    for (stan_channel **pp = &svc->channels; *pp;) {
        stan_channel *ch = *pp;
        rift_stan_limits l =
            stan_limits_for(svc, (rift_stan_str){ch->name, strlen(ch->name)});
        if (!l.max_inactivity_ms || ch->subs || ch->feeds ||
            now_ms - ch->last_activity_ms < l.max_inactivity_ms ||
            has_durables(ch->stream)) {
            pp = &ch->next;
            continue;
        }
        /* A pin is taken under reg_lock: none can come after this check. */
        pthread_mutex_lock(&svc->reg_lock);
        bool pinned = atomic_load(&ch->pins) > 0;
        if (!pinned) {
            *pp = ch->next;
        }
        pthread_mutex_unlock(&svc->reg_lock);
        if (pinned) {
            pp = &ch->next;
            continue;
        }
        svc->nchannels--;
        char path[4400] = "";
        char dn[MAX_DIR_NAME + 4];
        if (svc->dir &&
            stan_dir_name(ch->name, strlen(ch->name), dn, sizeof dn)) {
            snprintf(path, sizeof path, "%s/%s", svc->dir, dn);
        }
        rift_log(RIFT_LOG_INFO, "stan: channel %s removed after inactivity",
                 ch->name);
        channel_free(svc, ch);
        if (path[0]) {
            remove_dir(path);
        }
    }
}

void stan_channels_close(rift_stan *svc) {
    pthread_mutex_lock(&svc->reg_lock);
    stan_channel *list = svc->channels;
    svc->channels = NULL;
    pthread_mutex_unlock(&svc->reg_lock);
    while (list) {
        stan_channel *ch = list;
        list = ch->next;
        if (atomic_load(&ch->pins) > 0) {
            /* The owner stops every user first (riftd: the front ends). */
            rift_log(RIFT_LOG_ERROR, "stan: channel %s closed while in use",
                     ch->name);
        }
        channel_free(svc, ch);
    }
    svc->nchannels = 0;
}
