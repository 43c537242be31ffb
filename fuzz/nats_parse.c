/*
 * nats_parse.c — libFuzzer target for the core NATS parser (src/nats/
 * nats_parse.c).
 *
 * The first input byte picks where the rest is cut into pieces (a cut
 * every 1..256 bytes); the rest is parsed whole and in pieces, with a
 * small control-line and payload bound so the limits are reached. The
 * target aborts when an invariant breaks:
 * - both feeds produce the same operations and the same final error;
 * - every returned operation's fields lie inside the fed bytes or the
 *   parser's buffers and respect the bounds (control line, payload,
 *   header length at most total length);
 * - a parse consumes no more than it was given and never returns 0 with
 *   bytes left over.
 */
#include "nats/nats_parse.h"
#include "fuzz_require.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MAX_LINE    300
#define MAX_PAYLOAD 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A running hash of the operations, so two feeds can be compared. */
typedef struct digest {
    uint64_t h;
    size_t ops;
    int error;
} digest;

static void mix(digest *d, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        d->h = (d->h ^ b[i]) * 1099511628211ull;
    }
    d->h = (d->h ^ n) * 1099511628211ull;
}

static void check_op(const rift_nats_op *op, digest *d) {
    REQUIRE(op->kind >= RIFT_NATS_OP_CONNECT && op->kind <= RIFT_NATS_OP_ERR);
    REQUIRE(op->subject_len + op->reply_len + op->queue_len + op->sid_len +
                op->args_len <=
            MAX_LINE);
    mix(d, &op->kind, sizeof(op->kind));
    mix(d, op->subject, op->subject_len);
    mix(d, op->reply, op->reply_len);
    mix(d, op->queue, op->queue_len);
    mix(d, op->sid, op->sid_len);
    mix(d, op->args, op->args_len);
    mix(d, &op->max_msgs, sizeof(op->max_msgs));
    if (op->kind == RIFT_NATS_OP_PUB || op->kind == RIFT_NATS_OP_HPUB) {
        REQUIRE(op->total_len <= MAX_PAYLOAD);
        REQUIRE(op->header_len <= op->total_len);
        REQUIRE(op->subject_len > 0);
        mix(d, op->data, op->total_len);
        mix(d, &op->header_len, sizeof(op->header_len));
    }
    d->ops++;
}

static void feed(const uint8_t *in, size_t len, size_t step, digest *d) {
    rift_nats_parser p;
    memset(d, 0, sizeof(*d));
    if (rift_nats_parser_init(&p, NULL, MAX_LINE, MAX_PAYLOAD) != 0) {
        abort();
    }
    size_t off = 0;
    while (off < len && d->error == 0) {
        size_t n = len - off < step ? len - off : step;
        const uint8_t *chunk = in + off;
        while (n > 0 && d->error == 0) {
            size_t used = 0;
            rift_nats_op op;
            int rc = rift_nats_parse(&p, chunk, n, &used, &op);
            REQUIRE(used <= n);
            if (rc < 0) {
                d->error = rc;
            } else if (rc == 1) {
                check_op(&op, d);
            } else {
                REQUIRE(used == n);
            }
            chunk += used;
            n -= used;
            off += used;
        }
    }
    rift_nats_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) {
        return 0;
    }
    size_t step = (size_t)data[0] + 1;
    digest whole, parts;
    feed(data + 1, size - 1, size, &whole);
    feed(data + 1, size - 1, step, &parts);
    REQUIRE(whole.ops == parts.ops);
    REQUIRE(whole.h == parts.h);
    REQUIRE(whole.error == parts.error);
    return 0;
}
