/*
 * cluster_client.c — the cluster tests' client calls (tests layer; see
 * cluster_client.h).
 */
#include "cluster_client.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t cl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool cl_pub(rift_client *c, const char *subject, const char *payload) {
    rift_error err = {0};
    int rc =
        rift_client_publish(c, subject, strlen(subject),
                            (const uint8_t *)payload, strlen(payload), &err);
    if (rc != 0) {
        fprintf(stderr, "  publish %s: %s\n", subject, err.text);
    }
    return rc == 0;
}

rift_client_sub *cl_sub(rift_client *c, const char *pattern,
                        const char *queue) {
    rift_client_sub *s = NULL;
    rift_error err = {0};
    if (rift_client_subscribe(c, pattern, strlen(pattern), queue,
                              queue ? strlen(queue) : 0, &s, &err) != 0) {
        fprintf(stderr, "  subscribe %s: %s\n", pattern, err.text);
        return NULL;
    }
    return s;
}

bool cl_next(rift_client_sub *s, int ms, char *buf, size_t cap) {
    rift_msg *m = NULL;
    rift_error err = {0};
    if (rift_client_sub_recv(s, ms * RIFT_MSEC, &m, &err) != 0) {
        return false;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    snprintf(buf, cap, "%.*s", (int)len, (const char *)p);
    rift_msg_unref(m);
    return true;
}

int cl_spub(rift_client *c, const char *subject, const char *payload,
            uint64_t *seq, rift_error *err) {
    rift_stored st = {0};
    int rc = rift_client_stream_publish(
        c, CL_STREAM, strlen(CL_STREAM), subject, strlen(subject), NULL, 0,
        (const uint8_t *)payload, strlen(payload), &st, err);
    if (seq != NULL) {
        *seq = rc == 0 ? st.sequence : 0;
    }
    return rc;
}

uint64_t cl_spub1(rift_client *c, const char *payload) {
    uint64_t seq = 0;
    rift_error err = {0};
    if (cl_spub(c, CL_SUBJECT, payload, &seq, &err) != 0) {
        fprintf(stderr, "  stream publish %s: %s\n", payload, err.text);
    }
    return seq;
}

int cl_fetch(rift_client *c, const char *name, uint32_t limit, uint32_t wait_ms,
             cl_rec *out) {
    rift_client_delivery d[CL_FETCH_MAX];
    size_t n = 0;
    rift_error err = {0};
    if (limit > CL_FETCH_MAX) {
        limit = CL_FETCH_MAX;
    }
    int rc =
        wait_ms > 0
            ? rift_client_fetch_wait(c, CL_STREAM, strlen(CL_STREAM), name,
                                     strlen(name), limit, wait_ms, d, &n, &err)
            : rift_client_fetch(c, CL_STREAM, strlen(CL_STREAM), name,
                                strlen(name), limit, d, &n, &err);
    if (rc != 0) {
        fprintf(stderr, "  fetch %s: %s\n", name, err.text);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t plen, slen;
        const uint8_t *p = rift_msg_payload(d[i].msg, &plen);
        const char *s = rift_msg_subject(d[i].msg, &slen);
        out[i].seq = d[i].sequence;
        out[i].ts = d[i].timestamp_ms;
        out[i].count = d[i].delivery_count;
        snprintf(out[i].payload, sizeof out[i].payload, "%.*s", (int)plen,
                 (const char *)p);
        snprintf(out[i].subject, sizeof out[i].subject, "%.*s", (int)slen, s);
        rift_msg_unref(d[i].msg);
    }
    return (int)n;
}

int cl_ack(rift_client *c, const char *name, uint64_t seq, rift_error *err) {
    return rift_client_ack(c, CL_STREAM, strlen(CL_STREAM), name, strlen(name),
                           seq, err);
}

bool cl_ack1(rift_client *c, const char *name, uint64_t seq) {
    rift_error err = {0};
    if (cl_ack(c, name, seq, &err) != 0) {
        fprintf(stderr, "  ack %s %" PRIu64 ": %s\n", name, seq, err.text);
        return false;
    }
    return true;
}
