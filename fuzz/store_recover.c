/*
 * store_recover.c — fuzz target for stream-directory recovery (fuzz
 * layer): the input becomes a segment file and/or a state log in a scratch
 * directory, which is then verified, opened (recovered), used a little
 * (fetch, replay, publish) and closed. Recovery must fail cleanly with an
 * error or succeed; it must never crash, leak or read out of bounds.
 *
 * Input: u8 mode (bit 0: a segment file, bit 1: a state log), then for
 * mode 3 a u32 LE split point, then the file contents. Mode bit 2 prepends
 * a valid segment header so the fuzzer starts inside the records.
 */
#include "rift/stream.h"
#include "common/common.h"
#include "store/format.h"
#include "store/vfs.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[4096];
static rift_vfs nosync;

/* Syncs are irrelevant here and would slow fuzzing to the disk's pace. */
static int no_sync(void *ud, int fd) {
    (void)ud;
    (void)fd;
    return 0;
}

static void write_file(const char *name, const uint8_t *p, size_t len,
                       bool header) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", scratch, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        return;
    }
    if (header) {
        uint8_t h[RIFT_SEG_HEADER];
        rift_seg_header_encode(h, 1);
        if (write(fd, h, sizeof(h)) != (ssize_t)sizeof(h)) {
            close(fd);
            return;
        }
    }
    if (len > 0 && write(fd, p, len) != (ssize_t)len) {
        close(fd);
        return;
    }
    close(fd);
}

static void clear_dir(void) {
    const char *names[] = {"00000000000000000001.seg", "state.log", "state.tmp",
                           "stream.lock", "00000000000000000002.seg"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", scratch, names[i]);
        unlink(path);
    }
}

static void exercise(rift_stream *st) {
    rift_stream_info info;
    if (rift_stream_get_info(st, &info, NULL) == 0) {
        for (size_t i = 0; i < info.consumer_count; i++) {
            rift_consumer *c = NULL;
            const char *n = info.consumer_names[i];
            if (rift_stream_consumer_get(st, n, strlen(n), &c, NULL) == 0) {
                rift_batch b = {0};
                if (rift_consumer_fetch(c, 64, &b, NULL) == 0) {
                    for (size_t k = 0; k < b.count; k++) {
                        (void)rift_consumer_ack(c, b.items[k].record.sequence,
                                                NULL);
                    }
                    rift_batch_free(&b);
                }
                rift_consumer_close(c);
            }
        }
        rift_stream_info_free(&info);
    }
    rift_batch b = {0};
    if (rift_stream_replay(st, 1, 64, &b, NULL) == 0) {
        rift_batch_free(&b);
    }
    (void)rift_stream_publish(st, "fuzz.x", 6, NULL, 0, (const uint8_t *)"p", 1,
                              NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (scratch[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(scratch, sizeof(scratch), "%s/rift-fuzz-XXXXXX",
                 base && *base ? base : "/tmp");
        if (mkdtemp(scratch) == NULL) {
            abort();
        }
        rift_log_set_level(RIFT_LOG_OFF);
        nosync = *rift_vfs_posix();
        nosync.fdatasync = no_sync;
        nosync.fsync = no_sync;
    }
    if (size < 1) {
        return 0;
    }
    uint8_t mode = data[0];
    data++;
    size--;
    size_t split = size;
    if ((mode & 3) == 3) {
        if (size < 4) {
            return 0;
        }
        uint32_t s = (uint32_t)data[0] | ((uint32_t)data[1] << 8) |
                     ((uint32_t)data[2] << 16) | ((uint32_t)data[3] << 24);
        data += 4;
        size -= 4;
        split = s % (size + 1);
    }
    clear_dir();
    if (mode & 1) {
        write_file("00000000000000000001.seg", data, split, (mode & 4) != 0);
    }
    if (mode & 2) {
        const uint8_t *p = (mode & 1) ? data + split : data;
        size_t len = (mode & 1) ? size - split : size;
        write_file("state.log", p, len, false);
    }
    rift_store_report rep;
    (void)rift_store_verify(scratch, &rep, NULL);
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = scratch;
    s.sync_on_write = false;
    s.segment_bytes = 4096;
    s.vfs = &nosync;
    /* As lenient as verify, so "repaired" must mean "opens". */
    s.max_consumers = 65536;
    s.max_payload_bytes = RIFT_MAX_PAYLOAD_LIMIT;
    s.max_messages = UINT64_MAX;
    s.max_bytes = UINT64_MAX;
    rift_stream *st = NULL;
    if (rift_stream_open(&st, &s, NULL) == 0) {
        exercise(st);
        rift_stream_close(st);
    }
    if (rift_store_repair(scratch, &rep, NULL) == 0) {
        rift_error err = {0};
        if (rift_stream_open(&st, &s, &err) != 0) {
            fprintf(stderr, "repaired directory does not open: %s\n", err.text);
            abort();
        }
        exercise(st);
        rift_stream_close(st);
    }
    clear_dir();
    return 0;
}
