/*
 * stan_cli.c — the in-process NATS Streaming test client (see stan_cli.h).
 */
#include "stan_cli.h"

#include <stdio.h>
#include <string.h>

static rift_stan_str S(const char *s) {
    return (rift_stan_str){s, s ? strlen(s) : 0};
}

static void copy_str(char *dst, size_t cap, rift_stan_str s) {
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    if (n) {
        memcpy(dst, s.p, n);
    }
    dst[n] = '\0';
}

rift_ssize stan_cli_raw(rift_broker *b, const char *subject,
                        const uint8_t *payload, size_t len, uint8_t *out,
                        size_t cap) {
    rift_msg *r = NULL;
    if (rift_broker_request(b, subject, strlen(subject), payload, len,
                            STAN_CLI_TIMEOUT_NS, &r, NULL) != 0) {
        return -2;
    }
    size_t n;
    const uint8_t *p = rift_msg_payload(r, &n);
    if (n > cap) {
        n = cap;
    }
    if (n) {
        memcpy(out, p, n);
    }
    rift_msg_unref(r);
    return (rift_ssize)n;
}

static void *hb_main(void *arg) {
    stan_cli *cli = arg;
    while (!atomic_load(&cli->hb_stop)) {
        rift_msg *m = NULL;
        if (rift_sub_recv(cli->hb_sub, 50 * 1000000ll, &m, NULL) != 0) {
            continue;
        }
        size_t rl;
        const char *reply = rift_msg_reply(m, &rl);
        if (reply) {
            (void)rift_broker_publish(cli->broker, reply, rl, NULL, 0, NULL, 0,
                                      NULL, NULL);
        }
        rift_msg_unref(m);
    }
    return NULL;
}

int stan_cli_connect(stan_cli *cli, rift_broker *b, const char *cluster,
                     const char *client_id, bool answer_heartbeats) {
    memset(cli, 0, sizeof *cli);
    cli->broker = b;
    snprintf(cli->client_id, sizeof cli->client_id, "%s", client_id);
    char inbox[RIFT_INBOX_LEN + 1];
    rift_broker_new_inbox(inbox, NULL);
    snprintf(cli->conn_id, sizeof cli->conn_id, "%.32s", inbox + 7);
    rift_broker_new_inbox(cli->hb_inbox, NULL);
    if (answer_heartbeats) {
        if (rift_broker_subscribe(b, cli->hb_inbox, strlen(cli->hb_inbox), NULL,
                                  &cli->hb_sub, NULL) != 0 ||
            pthread_create(&cli->hb_thread, NULL, hb_main, cli) != 0) {
            return -2;
        }
        cli->hb_running = true;
    }
    rift_stan_connect_req q = {0};
    q.client_id = S(client_id);
    q.heartbeat_inbox = S(cli->hb_inbox);
    q.conn_id = S(cli->conn_id);
    q.protocol = 1;
    q.ping_interval = 5;
    q.ping_max_out = 3;
    uint8_t buf[2048], resp[4096];
    size_t n = rift_stan_encode_connect_req(&q, buf, sizeof buf);
    char subj[300];
    snprintf(subj, sizeof subj, "_STAN.discover.%s", cluster);
    rift_ssize rn = stan_cli_raw(b, subj, buf, n, resp, sizeof resp);
    rift_stan_connect_resp r;
    if (rn < 0 ||
        rift_stan_decode_connect_resp(resp, (size_t)rn, &r, NULL) != 0) {
        return -2;
    }
    copy_str(cli->error, sizeof cli->error, r.error);
    if (r.error.len) {
        return -1;
    }
    copy_str(cli->pub_prefix, sizeof cli->pub_prefix, r.pub_prefix);
    copy_str(cli->sub_subj, sizeof cli->sub_subj, r.sub_requests);
    copy_str(cli->unsub_subj, sizeof cli->unsub_subj, r.unsub_requests);
    copy_str(cli->subclose_subj, sizeof cli->subclose_subj,
             r.sub_close_requests);
    copy_str(cli->close_subj, sizeof cli->close_subj, r.close_requests);
    copy_str(cli->ping_subj, sizeof cli->ping_subj, r.ping_requests);
    cli->ping_interval = r.ping_interval;
    cli->ping_max_out = r.ping_max_out;
    cli->protocol = r.protocol;
    return 0;
}

void stan_cli_vanish(stan_cli *cli) {
    if (cli->hb_running) {
        atomic_store(&cli->hb_stop, true);
        pthread_join(cli->hb_thread, NULL);
        cli->hb_running = false;
    }
    rift_sub_close(cli->hb_sub);
    cli->hb_sub = NULL;
}

/* one_str_request sends a message and reads a one-string response. */
static int one_str_request(stan_cli *cli, const char *subject, const uint8_t *p,
                           size_t n) {
    uint8_t resp[1024];
    rift_ssize rn = stan_cli_raw(cli->broker, subject, p, n, resp, sizeof resp);
    rift_stan_one_str r;
    if (rn < 0 || rift_stan_decode_one_str(resp, (size_t)rn, &r, NULL) != 0) {
        return -2;
    }
    copy_str(cli->error, sizeof cli->error, r.value);
    return r.value.len ? -1 : 0;
}

int stan_cli_close(stan_cli *cli) {
    rift_stan_one_str q = {S(cli->client_id)};
    uint8_t buf[512];
    size_t n = rift_stan_encode_one_str(&q, buf, sizeof buf);
    int rc = one_str_request(cli, cli->close_subj, buf, n);
    stan_cli_vanish(cli);
    return rc;
}

int stan_cli_ping(stan_cli *cli, const char *conn_id) {
    rift_stan_ping q = {S(conn_id ? conn_id : cli->conn_id)};
    uint8_t buf[512];
    size_t n = rift_stan_encode_ping(&q, buf, sizeof buf);
    return one_str_request(cli, cli->ping_subj, buf, n);
}

int stan_cli_publish(stan_cli *cli, const char *channel, const char *data) {
    char guid[RIFT_INBOX_LEN + 1];
    rift_broker_new_inbox(guid, NULL);
    rift_stan_pub_msg q = {0};
    q.client_id = S(cli->client_id);
    q.conn_id = S(cli->conn_id);
    q.guid = S(guid + 7);
    q.subject = S(channel);
    q.data = S(data);
    uint8_t buf[4096], resp[1024];
    size_t n = rift_stan_encode_pub_msg(&q, buf, sizeof buf);
    char subj[600];
    snprintf(subj, sizeof subj, "%s.%s", cli->pub_prefix, channel);
    rift_ssize rn = stan_cli_raw(cli->broker, subj, buf, n, resp, sizeof resp);
    rift_stan_pub_ack a;
    if (rn < 0 || rift_stan_decode_pub_ack(resp, (size_t)rn, &a, NULL) != 0) {
        return -2;
    }
    copy_str(cli->error, sizeof cli->error, a.error);
    if (a.guid.len != strlen(guid + 7) ||
        memcmp(a.guid.p, guid + 7, a.guid.len)) {
        snprintf(cli->error, sizeof cli->error, "guid mismatch");
        return -1;
    }
    return a.error.len ? -1 : 0;
}

int stan_cli_subscribe(stan_cli *cli, const char *channel,
                       const stan_cli_sub_opts *o, stan_cli_sub *out) {
    memset(out, 0, sizeof *out);
    stan_cli_sub_opts def = {0};
    if (!o) {
        o = &def;
    }
    rift_broker_new_inbox(out->inbox, NULL);
    rift_sub_options so = {0};
    so.capacity = 1 << 16;
    if (rift_broker_subscribe(cli->broker, out->inbox, strlen(out->inbox), &so,
                              &out->inbox_sub, NULL) != 0) {
        return -2;
    }
    rift_stan_sub_req q = {0};
    q.client_id = S(cli->client_id);
    q.subject = S(channel);
    q.q_group = S(o->queue);
    q.inbox = S(out->inbox);
    q.durable_name = S(o->durable);
    q.max_in_flight = o->max_in_flight ? o->max_in_flight : 1024;
    q.ack_wait_in_secs = o->ack_wait_s ? o->ack_wait_s : 30;
    q.start_position = o->start;
    q.start_sequence = o->start_sequence;
    q.start_time_delta = o->start_delta_ns;
    uint8_t buf[4096], resp[1024];
    size_t n = rift_stan_encode_sub_req(&q, buf, sizeof buf);
    rift_ssize rn =
        stan_cli_raw(cli->broker, cli->sub_subj, buf, n, resp, sizeof resp);
    rift_stan_sub_resp r;
    if (rn < 0 || rift_stan_decode_sub_resp(resp, (size_t)rn, &r, NULL) != 0) {
        rift_sub_close(out->inbox_sub);
        out->inbox_sub = NULL;
        return -2;
    }
    copy_str(cli->error, sizeof cli->error, r.error);
    if (r.error.len) {
        rift_sub_close(out->inbox_sub);
        out->inbox_sub = NULL;
        return -1;
    }
    copy_str(out->ack_inbox, sizeof out->ack_inbox, r.ack_inbox);
    return 0;
}

int stan_cli_next(stan_cli_sub *s, int64_t timeout_ns, stan_cli_msg *out) {
    rift_msg *m = NULL;
    if (rift_sub_recv(s->inbox_sub, timeout_ns, &m, NULL) != 0) {
        return -2;
    }
    size_t n;
    const uint8_t *p = rift_msg_payload(m, &n);
    rift_stan_msg_proto mp;
    int rc = rift_stan_decode_msg_proto(p, n, &mp, NULL);
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        out->sequence = mp.sequence;
        copy_str(out->subject, sizeof out->subject, mp.subject);
        copy_str(out->data, sizeof out->data, mp.data);
        out->data_len = mp.data.len;
        out->timestamp = mp.timestamp;
        out->redelivered = mp.redelivered;
        out->redelivery_count = mp.redelivery_count;
    }
    rift_msg_unref(m);
    return rc == 0 ? 0 : -2;
}

void stan_cli_ack(stan_cli *cli, stan_cli_sub *s, const char *channel,
                  uint64_t sequence) {
    rift_stan_ack a = {S(channel), sequence};
    uint8_t buf[1024];
    size_t n = rift_stan_encode_ack(&a, buf, sizeof buf);
    (void)rift_broker_publish(cli->broker, s->ack_inbox, strlen(s->ack_inbox),
                              NULL, 0, buf, n, NULL, NULL);
}

int stan_cli_unsubscribe(stan_cli *cli, stan_cli_sub *s, const char *channel,
                         bool close) {
    rift_stan_unsub_req q = {0};
    q.client_id = S(cli->client_id);
    q.subject = S(channel);
    q.inbox = S(s->ack_inbox);
    uint8_t buf[2048], resp[1024];
    size_t n = rift_stan_encode_unsub_req(&q, buf, sizeof buf);
    rift_ssize rn =
        stan_cli_raw(cli->broker, close ? cli->subclose_subj : cli->unsub_subj,
                     buf, n, resp, sizeof resp);
    rift_sub_close(s->inbox_sub);
    s->inbox_sub = NULL;
    rift_stan_sub_resp r;
    if (rn < 0 || rift_stan_decode_sub_resp(resp, (size_t)rn, &r, NULL) != 0) {
        return -2;
    }
    copy_str(cli->error, sizeof cli->error, r.error);
    return r.error.len ? -1 : 0;
}
