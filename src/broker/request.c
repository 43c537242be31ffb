/*
 * request.c — request/reply over the broker (broker layer): inbox subjects
 * and the blocking request helper (docs/protocol-v1.md §1.9).
 */
#include "broker/broker_internal.h"

#include <pthread.h>
#include <string.h>

/* ---- Inbox entropy ---- */

/*
 * One GnuTLS random call costs close to a microsecond here, a fifth of the
 * request round-trip budget, so inbox bytes come from a pool refilled 1 KiB
 * at a time (64 inboxes per call). Bytes are wiped as they are handed out.
 * A forked child starts with an empty pool so parent and child never
 * share inbox names.
 */
static rift_spin pool_lock;
static uint8_t pool[1024];
static size_t pool_left;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_forget(void) {
    rift_spin_init(&pool_lock);
    memset(pool, 0, sizeof(pool));
    pool_left = 0;
}

static void pool_setup(void) {
    pthread_atfork(NULL, NULL, pool_forget);
}

static int inbox_entropy(uint8_t out[16]) {
    int rc = 0;
    pthread_once(&pool_once, pool_setup);
    rift_spin_lock(&pool_lock);
    if (pool_left < 16) {
        rc = rift_random(pool, sizeof(pool));
        pool_left = rc == 0 ? sizeof(pool) : 0;
    }
    if (rc == 0) {
        uint8_t *p = pool + sizeof(pool) - pool_left;
        memcpy(out, p, 16);
        memset(p, 0, 16);
        pool_left -= 16;
    }
    rift_spin_unlock(&pool_lock);
    return rc;
}

int rift_broker_new_inbox(char out[RIFT_INBOX_LEN + 1], rift_error *err) {
    static const char hex[] = "0123456789abcdef";
    uint8_t r[16];
    if (inbox_entropy(r) != 0) {
        return rift_error_set(
            err, RIFT_ERR_STORAGE,
            "stream storage: request inbox entropy unavailable");
    }
    /* The reference reads the bytes as a little-endian u128 and prints it
     * as 32 zero-padded hex digits, most significant first: so the last
     * byte comes first. */
    memcpy(out, "_INBOX.", 7);
    for (size_t i = 0; i < 16; i++) {
        uint8_t byte = r[15 - i];
        out[7 + 2 * i] = hex[byte >> 4];
        out[8 + 2 * i] = hex[byte & 15];
    }
    out[RIFT_INBOX_LEN] = '\0';
    return 0;
}

int rift_broker_request(rift_broker *b, const char *subject, size_t subject_len,
                        const uint8_t *payload, size_t payload_len,
                        int64_t timeout_ns, rift_msg **preply,
                        rift_error *err) {
    char inbox[RIFT_INBOX_LEN + 1];
    rift_sub *sub;
    rift_publish_report report;
    int rc = rift_broker_new_inbox(inbox, err);
    if (rc != 0) {
        return rc;
    }
    rc = rift_broker_subscribe(b, inbox, RIFT_INBOX_LEN, NULL, &sub, err);
    if (rc != 0) {
        return rc;
    }
    rc = rift_broker_publish(b, subject, subject_len, inbox, RIFT_INBOX_LEN,
                             payload, payload_len, &report, err);
    if (rc != 0) {
        goto out;
    }
    if (report.delivered == 0 && report.forwarded == 0) {
        rc = rift_error_set(err, RIFT_ERR_NO_RESPONDERS,
                            "no responders available");
        goto out;
    }
    rc = rift_sub_recv(sub, timeout_ns, preply, err);
    if (rc == RIFT_ERR_AGAIN) {
        rc = rift_error_set(err, RIFT_ERR_TIMEOUT, "request timed out");
    } else if (rc == 0 && (*preply)->no_responders) {
        rift_msg_unref(*preply);
        *preply = NULL;
        rc = rift_error_set(err, RIFT_ERR_NO_RESPONDERS,
                            "no responders available");
    }
out:
    rift_sub_close(sub);
    return rc;
}
