/*
 * stan_cli.h — a minimal NATS Streaming client over the in-process broker
 * (tests layer): it speaks the STAN protobuf messages through broker
 * subjects exactly as a STAN client does through a NATS server, so the
 * service's tests need no network. Blocking calls with timeouts; one
 * thread per client. A heartbeat responder (answers the service's probes
 * to the client's heartbeat inbox) runs when asked.
 */
#ifndef RIFT_TESTS_STAN_CLI_H
#define RIFT_TESTS_STAN_CLI_H

#include "rift/broker.h"
#include "stan/proto.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct stan_cli {
    rift_broker *broker;
    char client_id[128];
    char conn_id[40];
    char hb_inbox[RIFT_INBOX_LEN + 1];
    char pub_prefix[256], sub_subj[256], unsub_subj[256], subclose_subj[256],
        close_subj[256], ping_subj[256];
    int32_t ping_interval, ping_max_out, protocol;
    char error[512]; /* the last error text a request got back */
    rift_sub *hb_sub;
    pthread_t hb_thread;
    atomic_bool hb_stop;
    bool hb_running;
} stan_cli;

typedef struct stan_cli_sub {
    rift_sub *inbox_sub;
    char inbox[RIFT_INBOX_LEN + 1];
    char ack_inbox[256];
} stan_cli_sub;

/* A received MsgProto with its payload copied. */
typedef struct stan_cli_msg {
    uint64_t sequence;
    char subject[256];
    char data[1024];
    size_t data_len;
    int64_t timestamp;
    bool redelivered;
    uint32_t redelivery_count;
} stan_cli_msg;

#define STAN_CLI_TIMEOUT_NS (10ll * 1000000000)

/* stan_cli_connect sends a ConnectRequest to "_STAN.discover.<cluster>".
 * 0 on success, -1 with cli->error set when the response carries an
 * error, -2 on no answer. With |answer_heartbeats| a thread answers the
 * service's heartbeat probes. */
int stan_cli_connect(stan_cli *cli, rift_broker *b, const char *cluster,
                     const char *client_id, bool answer_heartbeats);
/* Stops the heartbeat thread and unsubscribes (no CloseRequest: the
 * client just vanishes). */
void stan_cli_vanish(stan_cli *cli);
/* CloseRequest; 0, -1 (error text) or -2; then as stan_cli_vanish. */
int stan_cli_close(stan_cli *cli);

/* stan_cli_publish publishes |data| to |channel| and waits for the PubAck:
 * 0, -1 (cli->error), -2 (no PubAck). */
int stan_cli_publish(stan_cli *cli, const char *channel, const char *data);

typedef struct stan_cli_sub_opts {
    const char *queue;
    const char *durable;
    int32_t max_in_flight; /* 0 = 1024 */
    int32_t ack_wait_s;    /* 0 = 30 */
    int32_t start;         /* rift_stan_start_position */
    uint64_t start_sequence;
    int64_t start_delta_ns;
} stan_cli_sub_opts;

int stan_cli_subscribe(stan_cli *cli, const char *channel,
                       const stan_cli_sub_opts *o, stan_cli_sub *out);
/* Waits up to |timeout_ns| for the next MsgProto: 0, or -2 on none. */
int stan_cli_next(stan_cli_sub *s, int64_t timeout_ns, stan_cli_msg *out);
void stan_cli_ack(stan_cli *cli, stan_cli_sub *s, const char *channel,
                  uint64_t sequence);
/* Unsubscribe (|close| false) or close (true): 0, -1, -2. The inbox
 * subscription is released either way. */
int stan_cli_unsubscribe(stan_cli *cli, stan_cli_sub *s, const char *channel,
                         bool close);
/* Sends a Ping with |conn_id| (the client's own when NULL): 0 or -1. */
int stan_cli_ping(stan_cli *cli, const char *conn_id);

/* A raw request: |payload| to |subject|, the reply's bytes into |out|;
 * returns the reply length or -2 on no reply. */
rift_ssize stan_cli_raw(rift_broker *b, const char *subject,
                        const uint8_t *payload, size_t len, uint8_t *out,
                        size_t cap);

#endif /* RIFT_TESTS_STAN_CLI_H */
