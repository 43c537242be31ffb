/*
 * store_recover.c — fuzz target for stream-directory recovery (fuzz
 * layer): the input becomes a segment file and/or a state log in a scratch
 * directory, which is then verified, opened (recovered), used a little
 * (fetch, replay, publish) and closed. Recovery must fail cleanly with an
 * error or succeed; it must never crash, leak or read out of bounds.
 *
 * Input: u8 mode (bit 0: a segment file, bit 1: a state log), then for
 * mode 3 a u32 LE split point, then the file contents. Mode bit 2 prepends
 * a valid segment header so the fuzzer starts inside the records; bit 3
 * recomputes every checksum, so mutations reach the decoders behind them.
 */
#include "rift/stream.h"
#include "common/common.h"
#include "store/crc32c.h"
#include "store/format.h"
#include "store/store.h"
#include "store/vfs.h"

#include <dirent.h>
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

/* Rewrites the checksums of the records of a segment image (from |pos|). */
static void fix_segment(uint8_t *p, size_t len, size_t pos) {
    if (pos == RIFT_SEG_HEADER && len >= RIFT_SEG_HEADER) {
        rift_put_u32(p + 28, rift_crc32c(p, 28));
    }
    while (pos + RIFT_REC_OVERHEAD <= len) {
        uint32_t n = rift_get_u32(p + pos);
        if (n < RIFT_REC_OVERHEAD || n > len - pos) {
            break;
        }
        uint32_t crc = rift_crc32c_update(0, p + pos, 4);
        crc = rift_crc32c_update(crc, p + pos + 8, n - 8);
        rift_put_u32(p + pos + 4, crc);
        pos += n;
    }
}

/* Rewrites the header and event checksums of a state-log image. */
static void fix_state(uint8_t *p, size_t len) {
    if (len < RIFT_STATE_HEADER) {
        return;
    }
    rift_put_u32(p + 12, rift_crc32c(p, 12));
    size_t pos = RIFT_STATE_HEADER;
    while (pos + RIFT_EV_FRAME < len) {
        uint32_t n = rift_get_u32(p + pos);
        if (n <= RIFT_EV_FRAME || n > len - pos) {
            break;
        }
        rift_put_u32(p + pos + 4, rift_crc32c(p + pos, 4));
        uint32_t crc = rift_crc32c_update(0, p + pos, 4);
        crc =
            rift_crc32c_update(crc, p + pos + RIFT_EV_FRAME, n - RIFT_EV_FRAME);
        rift_put_u32(p + pos + 8, crc);
        pos += n;
    }
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

/* Empties the scratch directory (recovery may create any segment name). */
static void clear_dir(void) {
    DIR *d = opendir(scratch);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", scratch, e->d_name);
        unlink(path);
    }
    if (d != NULL) {
        closedir(d);
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

static void remove_scratch(void) {
    clear_dir();
    rmdir(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (scratch[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(scratch, sizeof(scratch), "%s/rift-fuzz-XXXXXX",
                 base && *base ? base : "/tmp");
        if (mkdtemp(scratch) == NULL) {
            abort();
        }
        atexit(remove_scratch);
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
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL) {
        return 0;
    }
    if (size > 0) {
        memcpy(copy, data, size);
    }
    data = copy;
    clear_dir();
    if (mode & 1) {
        if (mode & 8) {
            fix_segment(copy, split, (mode & 4) ? 0 : RIFT_SEG_HEADER);
        }
        write_file("00000000000000000001.seg", data, split, (mode & 4) != 0);
    }
    if (mode & 2) {
        size_t off = (mode & 1) ? split : 0;
        if (mode & 8) {
            fix_state(copy + off, size - off);
        }
        write_file("state.log", data + off, size - off, false);
    }
    free(copy);
    rift_store_report rep;
    (void)rift_store_offline(scratch, &rep, RIFT_OPEN_VERIFY, &nosync, NULL);
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
    if (rift_stream_new(&st, &s, NULL) == 0) {
        exercise(st);
        rift_stream_del(st);
    }
    if (rift_store_offline(scratch, &rep, RIFT_OPEN_REPAIR, &nosync, NULL) ==
            0 &&
        rift_store_offline(scratch, &rep, RIFT_OPEN_VERIFY, &nosync, NULL) ==
            0) {
        rift_error err = {0};
        if (rift_stream_new(&st, &s, &err) != 0) {
            fprintf(stderr, "repaired directory does not open: %s\n", err.text);
            abort();
        }
        exercise(st);
        rift_stream_del(st);
    }
    clear_dir();
    return 0;
}
