/*
 * config_print.c — the readable summary of a rift_config printed by
 * `riftd --check` (config layer). Tokens are never printed, only the
 * variables they come from.
 */
#include "config/config.h"

#include <inttypes.h>

static void print_list(FILE *out, const char *label, char *const *v, size_t n) {
    fprintf(out, "      %s:", label);
    if (n == 0) {
        fprintf(out, " (none)");
    }
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s %s", i ? "," : "", v[i]);
    }
    fputc('\n', out);
}

static const char *level_name(rift_log_level l) {
    switch (l) {
    case RIFT_LOG_DEBUG:
        return "debug";
    case RIFT_LOG_INFO:
        return "info";
    case RIFT_LOG_WARN:
        return "warn";
    case RIFT_LOG_ERROR:
        return "error";
    default:
        return "off";
    }
}

static void print_messaging(const rift_config_messaging *m, FILE *out) {
    fprintf(out, "messaging:\n");
    if (m->listen != NULL) {
        fprintf(out, "  listen: %s (QUIC, certificate %s, private key %s)\n",
                m->listen, m->certificate, m->private_key);
    } else {
        fprintf(out, "  listen: none (local broker only)\n");
    }
    fprintf(out,
            "  broker: subscription_capacity=%" PRIu64
            " max_payload_bytes=%" PRIu64 " max_subject_bytes=%" PRIu64
            " max_subscriptions=%" PRIu64 "\n",
            m->subscription_capacity, m->max_payload_bytes,
            m->max_subject_bytes, m->max_subscriptions);
    fprintf(out,
            "  quic: max_connections=%" PRIu64
            " max_streams_per_connection=%" PRIu64
            " handshake_timeout_ms=%" PRIu64 " io_timeout_ms=%" PRIu64 "\n",
            m->max_connections, m->max_streams_per_connection,
            m->handshake_timeout_ms, m->io_timeout_ms);
    fprintf(out, "  principals (%zu):\n", m->n_principals);
    for (size_t i = 0; i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        fprintf(out, "    %s: token from $%s, control=%s\n", p->name,
                p->token_env, p->control ? "yes" : "no");
        print_list(out, "publish", p->publish, p->n_publish);
        print_list(out, "subscribe", p->subscribe, p->n_subscribe);
        if (p->n_streams > 0) {
            print_list(out, "streams", p->streams, p->n_streams);
        }
    }
    fprintf(out, "  subscriptions (%zu):\n", m->n_subscriptions);
    for (size_t i = 0; i < m->n_subscriptions; i++) {
        const rift_config_subscription *s = &m->subscriptions[i];
        if (s->queue != NULL) {
            fprintf(out, "    %s (queue %s)\n", s->subject, s->queue);
        } else {
            fprintf(out, "    %s\n", s->subject);
        }
    }
    fprintf(out, "  streams (%zu):\n", m->n_streams);
    for (size_t i = 0; i < m->n_streams; i++) {
        const rift_config_stream *s = &m->streams[i];
        if (s->replicas > 1) {
            fprintf(out, "    %s: replicated x%llu (cluster JetStream)\n",
                    s->name, (unsigned long long)s->replicas);
        } else if (s->storage_path != NULL) {
            fprintf(out, "    %s: file %s\n", s->name, s->storage_path);
        } else {
            fprintf(out, "    %s: memory\n", s->name);
        }
        print_list(out, "subjects", s->subjects, s->n_subjects);
        fprintf(out,
                "      max_messages=%" PRIu64 " max_bytes=%" PRIu64
                " max_payload_bytes=%" PRIu64 " max_consumers=%" PRIu64
                " sync_on_write=%s",
                s->max_messages, s->max_bytes, s->max_payload_bytes,
                s->max_consumers, s->sync_on_write ? "yes" : "no");
        if (s->max_age_ms != 0) {
            fprintf(out, " max_age_ms=%" PRIu64, s->max_age_ms);
        }
        fputc('\n', out);
    }
}

void rift_config_print_summary(const rift_config *cfg, FILE *out) {
    fprintf(out, "configuration: %s (revision %s)\n", cfg->source_name,
            cfg->revision);
    fprintf(out, "data_dir: %s\n", cfg->data_dir ? cfg->data_dir : "(none)");
    fprintf(out, "log level: %s\n",
            cfg->log_level_set ? level_name(cfg->log_level) : "(default)");
    print_messaging(&cfg->messaging, out);
    fprintf(out, "quic: retry=%s\n", cfg->quic.retry ? "yes" : "no");
    rift_config_nats_print(&cfg->nats, out);
    rift_config_streaming_print(&cfg->streaming, out);
    rift_config_cluster_print(&cfg->cluster, out);
    if (cfg->monitor.listen != NULL) {
        fprintf(out,
                "monitor: http://%s (/healthz, /status, /metrics; no "
                "authentication)\n",
                cfg->monitor.listen);
    } else {
        fprintf(out, "monitor: none\n");
    }
    rift_config_limits l;
    rift_config_limits_resolve(cfg, &l);
    fprintf(out,
            "limits: per identity connections=%" PRIu64
            " subscriptions=%" PRIu64 " consumers=%" PRIu64
            "; control reserve connections=%" PRIu64 " subscriptions=%" PRIu64
            "\n",
            l.connections, l.subscriptions, l.consumers, l.reserve_connections,
            l.reserve_subscriptions);
    fprintf(out, "lua message handlers: %s%zu\n",
            cfg->has_on_message ? "on_message + " : "",
            cfg->n_message_handlers);
    fprintf(out, "plugins (%zu):\n", cfg->n_plugins);
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        const rift_config_plugin *p = &cfg->plugins[i];
        fprintf(out,
                "    %s: %s/init.lua, memory_mb=%" PRIu32
                " instructions=%" PRIu64 " deadline_ms=%" PRIu32 ", %s\n",
                p->name, p->path, p->memory_mb, p->instructions, p->deadline_ms,
                p->restricted ? "restricted to its grants"
                              : "trusted (no ACL)");
        if (p->restricted) {
            fprintf(out, "      control=%s\n", p->control ? "yes" : "no");
            print_list(out, "publish", p->publish, p->n_publish);
            print_list(out, "subscribe", p->subscribe, p->n_subscribe);
        }
    }
}
