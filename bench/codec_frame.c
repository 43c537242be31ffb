/*
 * codec_frame.c — benchmark of the wire codec (bench layer): PUBLISH
 * decode, MESSAGE header encode, and the frame reader on whole chunks
 * (zero copy) and on 1,200-byte QUIC-packet-sized chunks. Prints ns per
 * operation and MB/s; informational only (no thresholds). Times are
 * process CPU time, so a loaded shared machine inflates them less than
 * wall-clock time would.
 *
 *   build/release/bench/codec_frame [iterations]
 */
#include "codec/frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile size_t sink;

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double since_ns(uint64_t t0, size_t ops) {
    return (double)(cpu_ns() - t0) / (double)ops;
}

int main(int argc, char **argv) {
    size_t iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000000;
    static const char subject[] = "orders.eu.created";
    uint8_t payload[128];
    memset(payload, 'p', sizeof(payload));

    /* One PUBLISH body: subject, empty reply, 128-byte payload. */
    uint8_t frame[RIFT_FRAME_HEADER_MAX + sizeof(payload)];
    rift_ssize h = rift_frame_encode_publish_header(
        frame, RIFT_FRAME_HEADER_MAX, subject, sizeof(subject) - 1, NULL, 0,
        sizeof(payload));
    if (h < 0) {
        return 1;
    }
    memcpy(frame + h, payload, sizeof(payload));
    size_t frame_len = (size_t)h + sizeof(payload);

    uint64_t t0 = cpu_ns();
    for (size_t i = 0; i < iters; i++) {
        rift_frame_msg m;
        if (rift_frame_decode_msg(frame + 5, frame_len - 5, &m, NULL) != 0) {
            return 1;
        }
        sink += m.payload_len;
    }
    printf("decode PUBLISH (17-byte subject, 128 B payload): %.1f ns/op\n",
           since_ns(t0, iters));

    uint8_t hdr[RIFT_FRAME_MSG_HEADER_SIZE(1024, 1024)];
    t0 = cpu_ns();
    for (size_t i = 0; i < iters; i++) {
        rift_ssize n = rift_frame_encode_message_header(
            hdr, sizeof(hdr), subject, sizeof(subject) - 1, "_INBOX.x", 8,
            sizeof(payload));
        sink += (size_t)n;
    }
    printf("encode MESSAGE header: %.1f ns/op\n", since_ns(t0, iters));

    /* A stream of 64 such frames, fed whole and in 1,200-byte chunks. */
    size_t nframes = 64;
    size_t stream_len = nframes * frame_len;
    uint8_t *stream = malloc(stream_len);
    if (stream == NULL) {
        return 1;
    }
    for (size_t i = 0; i < nframes; i++) {
        memcpy(stream + i * frame_len, frame, frame_len);
    }
    size_t rounds = iters / nframes + 1;
    static const size_t chunk_sizes[2] = {0, 1200};
    for (int c = 0; c < 2; c++) {
        rift_frame_reader r;
        rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
        size_t frames = 0, copied = 0;
        t0 = cpu_ns();
        for (size_t k = 0; k < rounds; k++) {
            size_t off = 0;
            while (off < stream_len) {
                size_t chunk = stream_len - off;
                if (chunk_sizes[c] && chunk > chunk_sizes[c]) {
                    chunk = chunk_sizes[c];
                }
                size_t used = 0;
                while (used < chunk) {
                    rift_frame_body body;
                    rift_ssize n = rift_frame_reader_feed(
                        &r, stream + off + used, chunk - used, &body, NULL);
                    if (n < 0) {
                        return 1;
                    }
                    used += (size_t)n;
                    if (body.data != NULL) {
                        frames++;
                        copied += body.assembled;
                        sink += body.data[0];
                    }
                }
                off += chunk;
            }
        }
        double ns = (double)(cpu_ns() - t0);
        printf("reader, %s: %.1f ns/frame, %.0f MB/s, %.1f%% assembled\n",
               c == 0 ? "whole chunks" : "1,200-byte chunks",
               ns / (double)frames, (double)(rounds * stream_len) / ns * 1e3,
               100.0 * (double)copied / (double)frames);
        rift_frame_reader_free(&r);
    }
    free(stream);
    return 0;
}
