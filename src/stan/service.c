/*
 * service.c — the STAN service's thread, its subscriptions and the
 * dispatch of incoming requests (stan layer; see stan.h). One thread owns
 * all state: it waits on its transport (transport.h: the broker's
 * notifier, or libnats callbacks that wake it) and on a wake fd (publish
 * completions), pumps the subscriptions' push engines and sends the
 * heartbeats.
 */
#include "stan/internal.h"
#include "stan/transport.h"

#include "subject/subject.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* How long the loop sleeps at most: the cadence of the checks that have
 * no event of their own (records a rift client appended, inactivity). */
#define TICK_MS 100

enum inbound {
    IN_DISCOVER,
    IN_PING,
    IN_PUB,
    IN_SUB,
    IN_UNSUB,
    IN_SUBCLOSE,
    IN_CLOSE,
    IN_ACK,
    IN_HB,
    IN_COUNT
};

void rift_stan_settings_default(rift_stan_settings *s) {
    memset(s, 0, sizeof *s);
    s->cluster_id = "test-cluster";
    s->discover_prefix = "_STAN.discover";
    s->sync_on_write = true;
    s->max_channels = 100;
    s->max_subs = 1000;
    s->limits.max_msgs = 1000000;
    s->limits.max_bytes = 1024000000;
    s->hb_interval_ms = 30000;
    s->hb_timeout_ms = 10000;
    s->hb_fail_count = 10;
}

uint64_t stan_mono_ms(void) {
    return (uint64_t)(rift_now_ns() / 1000000);
}

char *stan_strdup(rift_stan *svc, rift_stan_str s) {
    return rift_strndup(svc->s.mem, s.p ? s.p : "", s.len);
}

bool stan_client_id_valid(rift_stan_str id) {
    return rift_stan_id_valid(id.p, id.len);
}

bool rift_stan_id_valid(const char *s, size_t len) {
    if (len == 0) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

void stan_send(rift_stan *svc, const char *subject, size_t subject_len,
               const uint8_t *p, size_t len) {
    rift_error e = {0};
    if (stan_publish(svc, subject, subject_len, NULL, 0, p, len, &e) != 0) {
        rift_log(RIFT_LOG_WARN, "stan: reply not sent: %s", e.text);
    }
}

int stan_publish(rift_stan *svc, const char *subject, size_t subject_len,
                 const char *reply, size_t reply_len, const uint8_t *p,
                 size_t len, rift_error *err) {
    return svc->tp->ops->publish(svc->tp, subject, subject_len, reply,
                                 reply_len, p, len, err);
}

const char *rift_stan_transport_kind(const rift_stan *svc) {
    return svc->tp->ops->kind;
}

void stan_wake(rift_stan *svc) {
    uint64_t one = 1;
    ssize_t r = write(svc->wake_fd, &one, sizeof one);
    (void)r; /* a full counter is still readable: nothing lost */
}

/* join returns a + b + c in a new string (NULL when out of memory). */
static char *join(rift_stan *svc, const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *out = rift_malloc(svc->s.mem, la + lb + lc + 1);
    if (out) {
        memcpy(out, a, la);
        memcpy(out + la, b, lb);
        memcpy(out + la + lb, c, lc + 1);
    }
    return out;
}

static int make_subjects(rift_stan *svc, rift_error *err) {
    const char *cid = svc->cluster_id, *dp = svc->discover_prefix;
    svc->discover = join(svc, dp, ".", cid);
    svc->ping_subj = join(svc, dp, ".", cid);
    char *pings =
        svc->ping_subj ? join(svc, svc->ping_subj, ".pings", "") : NULL;
    rift_free(svc->s.mem, svc->ping_subj);
    svc->ping_subj = pings;
    svc->pub_prefix = join(svc, "_STAN.pub.", cid, "");
    svc->sub_subj = join(svc, "_STAN.sub.", cid, "");
    svc->unsub_subj = join(svc, "_STAN.unsub.", cid, "");
    svc->subclose_subj = join(svc, "_STAN.subclose.", cid, "");
    svc->close_subj = join(svc, "_STAN.close.", cid, "");
    svc->ack_prefix = join(svc, "_STAN.acks.", cid, "");
    svc->hb_prefix = join(svc, "_STAN.hb.", cid, "");
    if (!svc->discover || !svc->ping_subj || !svc->pub_prefix ||
        !svc->sub_subj || !svc->unsub_subj || !svc->subclose_subj ||
        !svc->close_subj || !svc->ack_prefix || !svc->hb_prefix) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static int subscribe_one(rift_stan *svc, enum inbound which, const char *base,
                         bool wildcard, rift_error *err) {
    char pattern[1100];
    int n =
        snprintf(pattern, sizeof pattern, "%s%s", base, wildcard ? ".>" : "");
    if (n < 0 || (size_t)n >= sizeof pattern) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming: subject too long: %s", base);
    }
    return svc->tp->ops->subscribe(svc->tp, svc, (int)which, pattern, err);
}

static int subscribe_all(rift_stan *svc, rift_error *err) {
    static const struct {
        enum inbound which;
        size_t off;
        bool wildcard;
    } plan[] = {
        {IN_DISCOVER, offsetof(rift_stan, discover), false},
        {IN_PING, offsetof(rift_stan, ping_subj), false},
        {IN_PUB, offsetof(rift_stan, pub_prefix), true},
        {IN_SUB, offsetof(rift_stan, sub_subj), false},
        {IN_UNSUB, offsetof(rift_stan, unsub_subj), false},
        {IN_SUBCLOSE, offsetof(rift_stan, subclose_subj), false},
        {IN_CLOSE, offsetof(rift_stan, close_subj), false},
        {IN_ACK, offsetof(rift_stan, ack_prefix), true},
        {IN_HB, offsetof(rift_stan, hb_prefix), true},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(plan); i++) {
        const char *base = *(char *const *)((const char *)svc + plan[i].off);
        int rc = subscribe_one(svc, plan[i].which, base, plan[i].wildcard, err);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static void dispatch(rift_stan *svc, enum inbound which, const rift_msg *m) {
    switch (which) {
    case IN_DISCOVER:
        stan_on_connect(svc, m);
        break;
    case IN_PING:
        stan_on_ping(svc, m);
        break;
    case IN_PUB:
        stan_on_publish(svc, m);
        break;
    case IN_SUB:
        stan_on_subscribe(svc, m);
        break;
    case IN_UNSUB:
        stan_on_unsubscribe(svc, m, false);
        break;
    case IN_SUBCLOSE:
        stan_on_unsubscribe(svc, m, true);
        break;
    case IN_CLOSE:
        stan_on_close(svc, m);
        break;
    case IN_ACK:
        stan_on_ack(svc, m);
        break;
    case IN_HB:
        stan_on_hb_reply(svc, m);
        break;
    default:
        break;
    }
}

void stan_deliver(rift_stan *svc, int which, rift_msg *const *msgs, size_t n) {
    pthread_mutex_lock(&svc->lock);
    for (size_t i = 0; i < n; i++) {
        dispatch(svc, (enum inbound)which, msgs[i]);
        rift_msg_unref(msgs[i]);
    }
    pthread_mutex_unlock(&svc->lock);
}

static void *service_main(void *arg) {
    rift_stan *svc = arg;
    svc->tp->ops->attach(svc->tp);
    while (!atomic_load(&svc->stop)) {
        uint64_t now = stan_mono_ms();
        pthread_mutex_lock(&svc->lock);
        uint64_t due = stan_subs_pump(svc, now);
        uint64_t hb_due = stan_heartbeat_tick(svc, now);
        due = hb_due < due ? hb_due : due;
        stan_channels_expire(svc, now);
        pthread_mutex_unlock(&svc->lock);
        uint64_t wait = TICK_MS;
        if (due <= now) {
            wait = 0;
        } else if (due - now < wait) {
            wait = due - now;
        }
        struct pollfd fds[2] = {
            {svc->tp->ops->fd(svc->tp), POLLIN, 0}, /* -1: ignored */
            {svc->wake_fd, POLLIN, 0},
        };
        if (poll(fds, 2, (int)wait) < 0 && errno != EINTR) {
            rift_log(RIFT_LOG_ERROR, "stan: poll: %s", strerror(errno));
        }
        if (fds[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(svc->wake_fd, &v, sizeof v);
            (void)r;
        }
        svc->tp->ops->drain(svc->tp, svc);
    }
    return NULL;
}

static int copy_settings(rift_stan *svc, const rift_stan_settings *s,
                         rift_error *err) {
    svc->s = *s;
    svc->s.channels = NULL;
    svc->s.channels_count = 0;
    const rift_mem *mem = s->mem;
    const char *cid = s->cluster_id ? s->cluster_id : "test-cluster";
    const char *dp = s->discover_prefix ? s->discover_prefix : "_STAN.discover";
    rift_stan_str id = {cid, strlen(cid)};
    if (!stan_client_id_valid(id) || strlen(cid) > 256) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.cluster_id: only alphanumeric and "
                              "`-` or `_` characters allowed");
    }
    if (!rift_subject_valid(dp, strlen(dp), false, 512)) {
        return rift_error_set(err, RIFT_ERR_INVALID_CONFIG,
                              "streaming.discover_prefix: invalid subject");
    }
    svc->cluster_id = rift_strndup(mem, cid, strlen(cid));
    svc->discover_prefix = rift_strndup(mem, dp, strlen(dp));
    svc->dir = s->dir ? rift_strndup(mem, s->dir, strlen(s->dir)) : NULL;
    rift_stan_channel_limits *cl = NULL;
    if (s->channels_count) {
        cl = rift_calloc(mem, s->channels_count, sizeof *cl);
        for (size_t i = 0; cl && i < s->channels_count; i++) {
            cl[i].limits = s->channels[i].limits;
            cl[i].pattern = rift_strndup(mem, s->channels[i].pattern,
                                         strlen(s->channels[i].pattern));
        }
    }
    svc->s.channels = cl;
    svc->s.channels_count = cl ? s->channels_count : 0;
    if (!svc->cluster_id || !svc->discover_prefix || (s->dir && !svc->dir) ||
        (s->channels_count && !cl)) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    svc->s.cluster_id = svc->cluster_id;
    svc->s.discover_prefix = svc->discover_prefix;
    svc->s.dir = svc->dir;
    return 0;
}

int rift_stan_start(rift_stan **ps, rift_broker *broker,
                    const rift_stan_settings *s, rift_error *err) {
    *ps = NULL;
    rift_stan_settings def;
    if (!s) {
        rift_stan_settings_default(&def);
        s = &def;
    }
    rift_stan *svc = rift_calloc(s->mem, 1, sizeof *svc);
    if (!svc) {
        if (s->transport) {
            s->transport->ops->del(s->transport);
        }
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    svc->broker = broker;
    svc->tp = s->transport;
    svc->wake_fd = -1;
    svc->sessions_fd = -1;
    uint64_t boot = (uint64_t)rift_now_ns() ^ ((uint64_t)time(NULL) << 24) ^
                    ((uint64_t)getpid() << 48);
    snprintf(svc->boot, sizeof svc->boot, "%" PRIx64, boot);
    pthread_mutex_init(&svc->lock, NULL);
    pthread_mutex_init(&svc->reg_lock, NULL);
    int rc = copy_settings(svc, s, err);
    if (rc == 0) {
        rc = make_subjects(svc, err);
    }
    if (rc == 0 &&
        (svc->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        rc = rift_error_set(err, RIFT_ERR_IO, "streaming: eventfd: %s",
                            strerror(errno));
    }
    if (rc == 0 && !svc->tp) {
        rc = stan_transport_broker_new(&svc->tp, broker, s->mem, err);
    }
    if (rc == 0) {
        rc = stan_sessions_open(svc, err);
    }
    if (rc == 0) {
        rc = subscribe_all(svc, err);
    }
    if (rc == 0 && pthread_create(&svc->thread, NULL, service_main, svc) != 0) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "streaming: thread start");
    }
    if (rc != 0) {
        rift_stan_stop(svc);
        return rc;
    }
    svc->running = true;
    *ps = svc;
    return 0;
}

void rift_stan_stop(rift_stan *svc) {
    if (!svc) {
        return;
    }
    if (svc->running) {
        atomic_store(&svc->stop, true);
        stan_wake(svc);
        pthread_join(svc->thread, NULL);
    }
    /* First: no transport callback may wake or deliver after this. */
    if (svc->tp) {
        svc->tp->ops->del(svc->tp);
    }
    stan_subs_free(svc);
    stan_channels_close(svc);
    stan_clients_free(svc);
    stan_sessions_close(svc);
    if (svc->wake_fd >= 0) {
        close(svc->wake_fd);
    }
    const rift_mem *mem = svc->s.mem;
    char *strs[] = {svc->cluster_id, svc->discover_prefix, svc->dir,
                    svc->discover,   svc->ping_subj,       svc->pub_prefix,
                    svc->sub_subj,   svc->unsub_subj,      svc->subclose_subj,
                    svc->close_subj, svc->ack_prefix,      svc->hb_prefix};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(strs); i++) {
        rift_free(mem, strs[i]);
    }
    rift_stan_channel_limits *cl = (rift_stan_channel_limits *)svc->s.channels;
    for (size_t i = 0; i < svc->s.channels_count; i++) {
        rift_free(mem, cl[i].pattern);
    }
    rift_free(mem, cl);
    pthread_mutex_destroy(&svc->lock);
    pthread_mutex_destroy(&svc->reg_lock);
    rift_free(mem, svc);
}

void rift_stan_get_counts(rift_stan *svc, rift_stan_counts *out) {
    pthread_mutex_lock(&svc->lock);
    out->clients = svc->nclients;
    out->channels = svc->nchannels;
    out->subscriptions = svc->nsubs;
    pthread_mutex_unlock(&svc->lock);
}
