/*
 * daemon.c — riftd's runtime (daemon layer): configuration loading,
 * start-up order, reload, signals, shutdown. See daemon.h.
 */
#include "daemon/daemon_internal.h"

#include "daemon/banner.h"
#include "daemon/events.h"
#include "daemon/files.h"
#include "daemon/runtime_streams.h"
#include "daemon/credentials.h"
#include "lua/config_eval.h"
#include "stan/stan.h"
#include "subject/quota.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How long shutdown waits for remote subscribers to acknowledge the
 * draining event. */
#define DRAIN_FLUSH_MS 1000

/* ---- Configuration ---- */

const char *rift_daemon_config_path(const char *arg) {
    if (arg != NULL) {
        return arg;
    }
    if (access(RIFT_DAEMON_DEFAULT_CONFIG, F_OK) == 0) {
        return RIFT_DAEMON_DEFAULT_CONFIG;
    }
    return NULL;
}

static int evaluate(rift_config *cfg, const char *path,
                    const rift_config_options *o, rift_error *err) {
    if (path != NULL) {
        return rift_config_load_file(cfg, path, o, err);
    }
    size_t len;
    const char *src = rift_dev_config_source(&len);
    return rift_config_load_string(cfg, src, len, RIFT_DEV_LABEL, false, o,
                                   err);
}

int rift_daemon_load_config(rift_config *cfg, const char *path, bool create_dev,
                            rift_dev_state *dev,
                            const rift_daemon_options *opts, rift_error *err) {
    int rc;
    memset(dev, 0, sizeof(*dev));
    memset(cfg, 0, sizeof(*cfg));
    if (path == NULL && (rc = rift_dev_prepare(dev, create_dev, err)) != 0) {
        return rc;
    }
    if ((rc = evaluate(cfg, path, NULL, err)) != 0) {
        return rc;
    }
    rift_config_getenv_fn fn = opts ? opts->getenv_fn : NULL;
    void *ud = opts ? opts->getenv_ud : NULL;
    if (fn == NULL && path == NULL) {
        fn = rift_dev_getenv;
        ud = dev;
    }
    if (path == NULL && !create_dev && dev->token[0] == '\0') {
        return 0; /* generated at the first start */
    }
    return rift_config_load_tokens(cfg, fn, ud, err);
}

/* The configuration's log.level, or the default when it has none (a
 * reload that removes the key goes back to info), unless the command line
 * fixed the level. */
static void apply_log_level(const rift_daemon *d) {
    if (!d->opts.log_level_forced) {
        rift_log_set_level(d->cfg.log_level_set ? d->cfg.log_level
                                                : RIFT_LOG_INFO);
    }
}

static void warn_dev(void) {
    rift_log(RIFT_LOG_WARN,
             "rift: ==============================================="
             "=========");
    rift_log(RIFT_LOG_WARN,
             "rift: DEVELOPMENT CONFIGURATION - NOT FOR PRODUCTION");
    rift_log(RIFT_LOG_WARN,
             "rift: principal \"dev\" may publish, subscribe and control "
             "everything");
    rift_log(RIFT_LOG_WARN, "rift: token: %s, CA: %s/%s", RIFT_DEV_TOKEN_FILE,
             RIFT_DEV_TLS_DIR, RIFT_DEV_CA_CERT);
    rift_log(RIFT_LOG_WARN, "rift: run riftd -c FILE with your own "
                            "configuration for anything else");
    rift_log(RIFT_LOG_WARN,
             "rift: ==============================================="
             "=========");
}

static void log_warning(void *ud, const char *text) {
    (void)ud;
    rift_log(RIFT_LOG_WARN, "rift: %s", text);
}

/* What a newcomer types next, once the development broker is up. */
static void banner(const rift_daemon *d) {
    bool echo = false;
    for (size_t i = 0; i < d->cfg.n_plugins; i++) {
        echo = echo || strcmp(d->cfg.plugins[i].name, "echo") == 0;
    }
    rift_daemon_banner(d->quic ? rift_daemon_quic_address(d->quic) : NULL,
                       echo);
}

/* ---- Start-up ---- */

static int broker_from(rift_daemon *d, rift_error *err) {
    const rift_config_messaging *m = &d->cfg.messaging;
    rift_broker_settings s;
    rift_broker_settings_default(&s);
    s.subscription_capacity = (size_t)m->subscription_capacity;
    s.max_payload_bytes = (size_t)m->max_payload_bytes;
    s.max_subject_bytes = (size_t)m->max_subject_bytes;
    s.max_subscriptions = (size_t)m->max_subscriptions;
    return rift_broker_new(&d->broker, &s, err);
}

static int ensure_data_dir(const rift_config *cfg, rift_error *err) {
    bool created;
    if (cfg->data_dir == NULL) {
        return 0;
    }
    int rc = rift_dir_ensure_private(cfg->data_dir, &created);
    if (rc != 0) {
        return rift_error_set(err, rc, "data_dir: cannot create %s: %s",
                              cfg->data_dir, strerror(-rc));
    }
    return 0;
}

int rift_daemon_start(rift_daemon **pd, const rift_daemon_options *opts,
                      rift_error *err) {
    int rc;
    rift_daemon *d = rift_calloc(NULL, 1, sizeof(*d));
    if (d == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    d->opts = *opts;
    d->started_ns = rift_now_ns();
    pthread_mutex_init(&d->lock, NULL);
    if (opts->config_path != NULL &&
        (d->config_path = rift_strndup(NULL, opts->config_path,
                                       strlen(opts->config_path))) == NULL) {
        rc = rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    d->opts.config_path = d->config_path;
    if ((rc = rift_daemon_load_config(&d->cfg, d->config_path, true, &d->dev,
                                      &d->opts, err)) != 0 ||
        (rc = ensure_data_dir(&d->cfg, err)) != 0) {
        goto fail;
    }
    apply_log_level(d);
    if (d->config_path == NULL) {
        warn_dev();
    }
    rift_log(RIFT_LOG_INFO, "rift: configuration %s (revision %s)",
             d->cfg.source_name, d->cfg.revision);
    rift_config_warn(&d->cfg, log_warning, NULL);
    /* §5.2: streams, then TLS and the listener, then Lua, then control. */
    if ((rc = broker_from(d, err)) != 0) {
        goto fail;
    }
    if (opts->on_broker != NULL) {
        opts->on_broker(opts->on_broker_ud, d->broker);
    }
    if ((rc = rift_daemon_cluster_start(&d->cluster, d->broker, &d->cfg,
                                        err)) != 0 ||
        (rc = rift_daemon_streams_open(&d->streams, &d->cfg, err)) != 0) {
        goto fail;
    }
    rift_daemon_streams_advise(d->streams, d->broker);
    if ((rc = rift_runtime_streams_open(&d->runtime, &d->cfg, d->broker,
                                        err)) != 0 ||
        (rc = rift_daemon_stan_start(&d->stan, d->broker, &d->cfg, err)) != 0 ||
        (rc = rift_daemon_quota_new(&d->quota, &d->cfg, err)) != 0 ||
        (rc = rift_daemon_quic_start(&d->quic, d->broker, d->streams,
                                     rift_daemon_stream_source(d),
                                     rift_daemon_stream_admin(d),
                                     rift_daemon_cluster_backend(&d->cluster),
                                     &d->cfg, d->quota, err)) != 0 ||
        (rc = rift_daemon_nats_start(&d->nats, d->broker, &d->cfg, d->quota,
                                     err)) != 0 ||
        (rc = rift_daemon_lua_start(&d->lua, d->broker, d->streams,
                                    rift_daemon_stream_source(d), &d->cfg,
                                    err)) != 0) {
        goto fail;
    }
    rift_control_settings cs = {
        .commands = rift_daemon_commands,
        .n_commands = rift_daemon_n_commands,
        .user_data = d,
        .timeout_ms = opts->control_timeout_ms,
    };
    if ((rc = rift_control_start(&d->control, d->broker, &cs, err)) != 0 ||
        (rc = rift_daemon_monitor_start(d, err)) != 0) {
        goto fail;
    }
    if (d->quic != NULL) {
        /* The bound address, so that port 0 shows the real port (tests and
         * bench/compare.sh read this line). */
        rift_log(RIFT_LOG_INFO, "rift: messaging QUIC on %s",
                 rift_daemon_quic_address(d->quic));
    }
    if (d->nats != NULL) {
        rift_log(RIFT_LOG_INFO, "rift: NATS on %s",
                 rift_daemon_nats_address(d->nats));
    }
    rift_events_lifecycle(d->broker, "ready");
    /* The bridge runs from here on, and a reload may replace cfg. */
    pthread_mutex_lock(&d->lock);
    rift_log(RIFT_LOG_INFO, "rift: ready (revision %s)", d->cfg.revision);
    if (d->config_path == NULL) {
        banner(d);
    }
    pthread_mutex_unlock(&d->lock);
    *pd = d;
    return 0;
fail:
    rift_daemon_stop(d);
    return rc;
}

/* ---- Reload ---- */

static bool same_str(const char *a, const char *b) {
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int rift_daemon_reload(rift_daemon *d, rift_tstamp deadline_ns,
                       char revision[17], rift_error *err) {
    rift_config next;
    rift_error why = {0};
    rift_config_options o;
    rift_config_options_default(&o);
    o.deadline_ns = deadline_ns;
    pthread_mutex_lock(&d->lock);
    int rc = evaluate(&next, d->config_path, &o, &why);
    const char *changed = NULL;
    if (rc == 0) {
        const char *key =
            rift_config_messaging_diff(&d->cfg.messaging, &next.messaging);
        char path[64];
        if (key != NULL) {
            snprintf(path, sizeof(path), "messaging.%s", key);
        }
        changed = key != NULL                            ? path
                  : d->cfg.quic.retry != next.quic.retry ? "quic.retry"
                  : !rift_config_nats_equal(&d->cfg.nats, &next.nats) ? "nats"
                  : !same_str(d->cfg.monitor.listen, next.monitor.listen)
                      ? "monitor.listen"
                  : !rift_config_limits_equal(&d->cfg.limits, &next.limits)
                      ? "limits"
                  : (d->cfg.data_dir == NULL) != (next.data_dir == NULL) ||
                          (d->cfg.data_dir != NULL &&
                           strcmp(d->cfg.data_dir, next.data_dir) != 0)
                      ? "data_dir"
                      : NULL;
        if (changed == NULL &&
            !rift_config_streaming_equal(&d->cfg.streaming, &next.streaming)) {
            changed = "streaming";
        }
        if (changed == NULL &&
            !rift_config_cluster_equal(&d->cfg.cluster, &next.cluster)) {
            changed = "cluster";
        }
        if (changed != NULL) {
            /* The answer's text is the protocol's (§5.2) and names no key:
             * the log says which one. */
            rift_log(RIFT_LOG_WARN,
                     "rift: reload: %s changed, which needs a restart; the "
                     "running configuration stays",
                     changed);
            rc = rift_error_set(&why, RIFT_ERR_INVALID_CONFIG, "%s",
                                RIFT_DAEMON_RESTART_TEXT);
        }
    }
    if (rc == 0) {
        rc = rift_daemon_lua_reload(d->lua, &next, &why);
    }
    if (rc != 0) {
        pthread_mutex_unlock(&d->lock);
        rift_config_free(&next);
        if (rc == RIFT_ERR_TIMEOUT) {
            return rift_error_set(err, rc, "%s", why.text);
        }
        return rift_error_set(err, rc,
                              "reload rejected; previous configuration "
                              "retained: %s",
                              why.text);
    }
    /* Messaging is unchanged, so the tokens read at start-up still belong
     * to the same principals, in the same order. */
    for (size_t i = 0; i < next.messaging.n_principals; i++) {
        rift_config_principal *np = &next.messaging.principals[i];
        rift_config_principal *op = &d->cfg.messaging.principals[i];
        np->token = op->token;
        np->token_len = op->token_len;
        op->token = NULL;
        op->token_len = 0;
    }
    rift_config_free(&d->cfg);
    d->cfg = next;
    apply_log_level(d);
    memcpy(revision, d->cfg.revision, 17);
    pthread_mutex_unlock(&d->lock);
    rift_events_reload(d->broker, revision);
    rift_log(RIFT_LOG_INFO, "rift: configuration reloaded (revision %s)",
             revision);
    return 0;
}

/* ---- Signals ---- */

void rift_daemon_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

int rift_daemon_wait_signals(rift_daemon *d) {
    sigset_t set;
    rift_daemon_signals(&set);
    for (;;) {
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig < 0) {
            if (errno == EAGAIN && !rift_daemon_quic_alive(d->quic)) {
                rift_log(RIFT_LOG_ERROR,
                         "rift: QUIC messaging listener stopped "
                         "unexpectedly");
                return 1;
            }
            if (errno == EAGAIN && !rift_daemon_nats_alive(d->nats)) {
                rift_log(RIFT_LOG_ERROR,
                         "rift: NATS listener stopped unexpectedly");
                return 1;
            }
            continue;
        }
        if (sig == SIGHUP) {
            char rev[17];
            rift_error err = {0};
            if (rift_daemon_reload(d, 0, rev, &err) != 0) {
                rift_log(RIFT_LOG_ERROR, "rift: %s", err.text);
            }
            continue;
        }
        rift_log(RIFT_LOG_INFO, "rift: %s received, shutting down",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return 0;
    }
}

/* ---- Shutdown ---- */

void rift_daemon_shutdown(rift_daemon *d) {
    if (d == NULL || d->shut_down) {
        return;
    }
    d->shut_down = true;
    atomic_store(&d->draining, true);
    if (d->broker != NULL && d->control != NULL) {
        rift_events_lifecycle(d->broker, "draining");
        /* The server closes connections at once: let remote subscribers
         * receive the event first (bounded). */
        rift_daemon_quic_flush(d->quic, DRAIN_FLUSH_MS);
    }
    /* The monitor and the bridge read (and the bridge reloads) the other
     * components: they stop before those go away. */
    rift_monitor_stop(d->monitor);
    d->monitor = NULL;
    rift_control_stop(d->control);
    d->control = NULL;
    rift_daemon_lua_stop(d->lua);
    d->lua = NULL;
    rift_daemon_nats_stop(d->nats);
    d->nats = NULL;
    /* The server waits for its backend operations: a replicated stream's
     * waiting fetch would hold the stop for up to its 120 s (measured:
     * a 60 s wait held riftd's SIGTERM for 30 s without this). */
    rift_daemon_cluster_end_waits(&d->cluster);
    rift_daemon_quic_stop(d->quic);
    d->quic = NULL;
    rift_stan_stop(d->stan);
    d->stan = NULL;
    rift_runtime_streams_close(d->runtime);
    d->runtime = NULL;
    rift_daemon_cluster_stop(&d->cluster);
    rift_daemon_streams_close(d->streams);
    d->streams = NULL;
}

void rift_daemon_del(rift_daemon *d) {
    if (d == NULL) {
        return;
    }
    rift_daemon_shutdown(d);
    rift_quota_del(d->quota); /* after every front end stopped */
    rift_broker_del(d->broker);
    rift_config_free(&d->cfg);
    explicit_bzero(&d->dev, sizeof(d->dev));
    rift_free(NULL, d->config_path);
    pthread_mutex_destroy(&d->lock);
    rift_free(NULL, d);
}

void rift_daemon_stop(rift_daemon *d) {
    rift_daemon_del(d);
}

rift_broker *rift_daemon_broker(rift_daemon *d) {
    return d->broker;
}

void rift_daemon_revision(rift_daemon *d, char revision[17]) {
    pthread_mutex_lock(&d->lock);
    memcpy(revision, d->cfg.revision, 17);
    pthread_mutex_unlock(&d->lock);
}
