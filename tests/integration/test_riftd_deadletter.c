/*
 * test_riftd_deadletter.c — max_deliver end to end through riftd: a
 * consumer opened over the wire (CONSUMER_OPEN_EXT with max_deliver) by a
 * principal without control rights gives up on a record, riftd publishes
 * the advisory on rift.events.consumer (the client's consumer name, the
 * stream, the sequence, the deliveries), and the example plugin
 * examples/plugins/deadletter stores it in the stream "deadletter". The
 * same advisory for a stream made at run time (STREAM_CREATE_EXT).
 */
// labels: threads
#include "riftd_fix.h"
#include "test.h"

#include <stdlib.h>
#include <time.h>

static const char config_fmt[] =
    "return {\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'orders.>', '_INBOX.>' },\n"
    "        subscribe = { 'orders.>', 'deadletter.>', 'rift.events.>',\n"
    "                      '_INBOX.>' } },\n"
    "    },\n"
    "    streams = {\n"
    "      orders = { subjects = { 'orders.>' } },\n"
    "      deadletter = { subjects = { 'deadletter.>' } },\n"
    "    },\n"
    "  },\n"
    "  plugins = { { name = 'deadletter', path = '%s/examples/plugins/"
    "deadletter' } },\n"
    "}\n";

/* No configured stream: the principal makes "orders" at run time. */
static const char runtime_config[] =
    "return {\n"
    "  data_dir = 'data',\n"
    "  messaging = {\n"
    "    listen = '127.0.0.1:0',\n"
    "    certificate = 'tls/server.pem',\n"
    "    private_key = 'tls/server.key',\n"
    "    principals = {\n"
    "      { name = 'plugin', token_env = 'RIFT_TEST_TOKEN',\n"
    "        publish = { 'orders.>', '_INBOX.>' },\n"
    "        subscribe = { 'orders.>', 'rift.events.>', '_INBOX.>' },\n"
    "        streams = { 'orders' } },\n"
    "    },\n"
    "  },\n"
    "}\n";

/* Starts riftd on |config| and a client subscribed to
 * rift.events.consumer; |*sub| stays NULL on a failure. */
static void start_watching(riftd_fix *f, const char *config, rift_client **c,
                           rift_client_sub **sub) {
    *sub = NULL;
    CHECK(riftd_fix_init(f, config));
    CHECK(riftd_fix_start(f, NULL));
    CHECK(riftd_fix_connect(f, RIFTD_FIX_TOKEN, c));
    rift_error err;
    CHECK_OK(rift_client_subscribe(*c, "rift.events.consumer", 20, NULL, 0, sub,
                                   &err));
}

/* Opens consumer "billing" on "orders" (max_deliver 2, ack wait 1 ms),
 * publishes one record and fetches without acking until the consumer
 * gives it up; |*adv| is the advisory |sub| received (malloc'd), or NULL. */
static void give_up_one_record(riftd_fix *f, rift_client *c,
                               rift_client_sub *sub, char **adv) {
    *adv = NULL;
    rift_error err;
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "orders.>";
    cfg.filter_len = 8;
    cfg.ack_wait_ms = 1;
    cfg.max_deliver = 2;
    CHECK_MSG(rift_client_consumer_open_ext(c, "orders", 6, "billing", 7, &cfg,
                                            NULL, &err) == 0,
              "%s", err.text);
    rift_stored st;
    CHECK_OK(rift_client_stream_publish(c, "orders", 6, "orders.new", 10, NULL,
                                        0, (const uint8_t *)"{}", 2, &st,
                                        &err));
    rift_client_consumer_info info = {0};
    int deliveries = 0;
    for (int i = 0; i < 2000 && info.max_delivered == 0; i++) {
        rift_client_delivery d[4];
        size_t n = 0;
        CHECK_OK(
            rift_client_fetch(c, "orders", 6, "billing", 7, 4, d, &n, &err));
        for (size_t k = 0; k < n; k++) {
            deliveries++;
            rift_msg_unref(d[k].msg);
        }
        CHECK_OK(rift_client_consumer_get_info(c, "orders", 6, "billing", 7,
                                               &info, &err));
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_U64(info.max_delivered, 1);
    CHECK_EQ_INT(deliveries, 2);
    CHECK_EQ_INT(info.pending, 0);
    *adv = riftd_fix_next(sub);
    if (*adv == NULL) {
        char *log = rift_proc_read(f->p.err);
        fprintf(stderr, "  riftd's log:\n%s\n", log ? log : "(none)");
        free(log);
    }
}

static const char advisory[] =
    "{\"advisory\":\"max_deliver\",\"consumer\":\"billing\","
    "\"deliveries\":2,\"sequence\":1,\"stream\":\"orders\"}";

RIFT_TEST(max_deliver_advisory_lands_in_the_deadletter_stream) {
    const char *src = getenv("RIFT_SOURCE_DIR");
    CHECK(src != NULL);
    char config[4096];
    snprintf(config, sizeof(config), config_fmt, src);
    riftd_fix f;
    rift_client *c;
    rift_client_sub *sub;
    start_watching(&f, config, &c, &sub);
    CHECK(sub != NULL);
    rift_error err;
    char *adv;
    give_up_one_record(&f, c, sub, &adv);
    CHECK(adv != NULL);
    CHECK_EQ_STR(adv, advisory);
    /* The plugin stored it. */
    rift_consumer_config first;
    rift_consumer_config_default(&first);
    first.start = RIFT_START_FIRST;
    first.filter = "deadletter.>";
    first.filter_len = 12;
    CHECK_OK(rift_client_consumer_open_ext(c, "deadletter", 10, "ops", 3,
                                           &first, NULL, &err));
    rift_client_delivery d[1];
    size_t n = 0;
    CHECK_MSG(rift_client_fetch_wait(c, "deadletter", 10, "ops", 3, 1, 10000, d,
                                     &n, &err) == 0,
              "%s", err.text);
    CHECK_EQ_INT(n, 1);
    size_t len;
    const char *subject = rift_msg_subject(d[0].msg, &len);
    CHECK_EQ_MEM(subject, len, "deadletter.orders", 17);
    const uint8_t *p = rift_msg_payload(d[0].msg, &len);
    CHECK_EQ_MEM(p, len, adv, strlen(adv));
    rift_msg_unref(d[0].msg);
    free(adv);
    rift_client_sub_close(sub);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}

RIFT_TEST(max_deliver_advisory_for_a_stream_made_at_run_time) {
    riftd_fix f;
    rift_client *c;
    rift_client_sub *sub;
    start_watching(&f, runtime_config, &c, &sub);
    CHECK(sub != NULL);
    rift_error err;
    const char *subjects[] = {"orders.>"};
    rift_client_stream_spec spec = {.subjects = subjects, .subjects_count = 1};
    CHECK_MSG(rift_client_stream_create(c, "orders", 6, &spec, NULL, &err) == 0,
              "%s", err.text);
    char *adv;
    give_up_one_record(&f, c, sub, &adv);
    CHECK(adv != NULL);
    CHECK_EQ_STR(adv, advisory);
    free(adv);
    rift_client_sub_close(sub);
    rift_client_del(c);
    CHECK_EQ_INT(riftd_fix_stop(&f), 0);
    riftd_fix_free(&f);
}
