/*
 * request.c — request/reply over the broker (broker layer): inbox subjects
 * and the blocking request helper (rift-v1-behaviour.md §1.9).
 */
#include "broker/internal.h"

#include <string.h>

int rift_broker_new_inbox(char out[RIFT_INBOX_LEN + 1], rift_error *err) {
    static const char hex[] = "0123456789abcdef";
    uint8_t r[16];
    if (rift_random(r, sizeof(r)) != 0) {
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
    if (report.delivered == 0) {
        rc = rift_error_set(err, RIFT_ERR_NO_RESPONDERS,
                            "no responders available");
        goto out;
    }
    rc = rift_sub_recv(sub, timeout_ns, preply, err);
    if (rc == RIFT_ERR_AGAIN) {
        rc = rift_error_set(err, RIFT_ERR_TIMEOUT, "request timed out");
    }
out:
    rift_sub_close(sub);
    return rc;
}
