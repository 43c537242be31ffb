/*
 * test_nats_parse.c — the core NATS protocol parser (src/nats/parse.c):
 * every operation, input split at every byte, and the bounds a hostile
 * client runs into (control line, payload, framing, unknown operations).
 */
#include "nats/parse.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

/* A readable trace of the operations a parse produced, for comparisons. */
typedef struct trace {
    char text[4096];
    size_t len;
    int error;
} trace;

static void put(trace *t, const char *s, size_t n) {
    if (s != NULL && n < sizeof(t->text) - t->len) {
        memcpy(t->text + t->len, s, n);
        t->len += n;
    }
}

static void puts_(trace *t, const char *s) {
    put(t, s, strlen(s));
}

static void record(trace *t, const rift_nats_op *op) {
    char tmp[64];
    switch (op->kind) {
    case RIFT_NATS_OP_PUB:
    case RIFT_NATS_OP_HPUB:
        puts_(t, op->kind == RIFT_NATS_OP_PUB ? "PUB[" : "HPUB[");
        put(t, op->subject, op->subject_len);
        puts_(t, "|");
        put(t, op->reply, op->reply_len);
        snprintf(tmp, sizeof(tmp), "]%zu/%zu:", op->header_len, op->total_len);
        puts_(t, tmp);
        put(t, (const char *)op->data, op->total_len);
        break;
    case RIFT_NATS_OP_SUB:
        puts_(t, "SUB[");
        put(t, op->subject, op->subject_len);
        puts_(t, "|");
        put(t, op->queue, op->queue_len);
        puts_(t, "]sid=");
        put(t, op->sid, op->sid_len);
        puts_(t, ";");
        break;
    case RIFT_NATS_OP_UNSUB:
        puts_(t, "UNSUB[");
        put(t, op->sid, op->sid_len);
        snprintf(tmp, sizeof(tmp), "]max=%llu;",
                 (unsigned long long)op->max_msgs);
        puts_(t, tmp);
        break;
    case RIFT_NATS_OP_CONNECT:
        puts_(t, "CONNECT[");
        put(t, op->args, op->args_len);
        puts_(t, "]");
        break;
    default:
        snprintf(tmp, sizeof(tmp), "op%d;", (int)op->kind);
        puts_(t, tmp);
        break;
    }
}

/* Feeds |chunks| pieces of |in| (cut at |cuts|) and records everything. */
static void run(const char *in, size_t len, const size_t *cuts, size_t ncuts,
                size_t max_line, size_t max_payload, trace *t) {
    rift_nats_parser p;
    memset(t, 0, sizeof(*t));
    if (rift_nats_parser_init(&p, NULL, max_line, max_payload) != 0) {
        t->error = -999;
        return;
    }
    size_t start = 0;
    for (size_t k = 0; k <= ncuts && t->error == 0; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        const uint8_t *d = (const uint8_t *)in + start;
        size_t n = end - start;
        while (n > 0 && t->error == 0) {
            size_t used = 0;
            rift_nats_op op;
            int rc = rift_nats_parse(&p, d, n, &used, &op);
            if (rc < 0) {
                t->error = rc;
            } else if (rc == 1) {
                record(t, &op);
            }
            d += used;
            n -= used;
        }
        start = end;
    }
    rift_nats_parser_free(&p);
}

static const char stream[] =
    "CONNECT {\"verbose\":false,\"auth_token\":\"x y\"}\r\n"
    "PING\r\npong\r\n"
    "PUB foo 5\r\nhello\r\n"
    "PUB foo.bar _INBOX.abc 0\r\n\r\n"
    "HPUB h 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
    "hpub h r 12 12\r\nNATS/1.0\r\n\r\n\r\n"
    "SUB foo 1\r\nSUB foo.* workers 22\r\n"
    "UNSUB 1\r\nUNSUB 22 5\r\n"
    "+OK\r\n-ERR 'x'\r\n"
    "PUB\ttabs\t3\nabc\r\n";

RIFT_TEST(every_operation) {
    trace t;
    run(stream, sizeof(stream) - 1, NULL, 0, 4096, 1024, &t);
    CHECK_EQ_INT(t.error, 0);
    CHECK_EQ_STR(t.text, "CONNECT[{\"verbose\":false,\"auth_token\":\"x y\"}]"
                         "op6;op7;"
                         "PUB[foo|]0/5:hello"
                         "PUB[foo.bar|_INBOX.abc]0/0:"
                         "HPUB[h|]12/14:NATS/1.0\r\n\r\nhi"
                         "HPUB[h|r]12/12:NATS/1.0\r\n\r\n"
                         "SUB[foo|]sid=1;SUB[foo.*|workers]sid=22;"
                         "UNSUB[1]max=0;UNSUB[22]max=5;"
                         "op8;op9;"
                         "PUB[tabs|]0/3:abc");
}

RIFT_TEST(split_at_every_byte) {
    trace whole, part;
    size_t len = sizeof(stream) - 1;
    run(stream, len, NULL, 0, 4096, 1024, &whole);
    CHECK_EQ_INT(whole.error, 0);
    /* Two pieces cut at every offset, then one byte at a time. */
    for (size_t cut = 1; cut < len; cut++) {
        run(stream, len, &cut, 1, 4096, 1024, &part);
        CHECK_MSG(part.error == 0 && strcmp(part.text, whole.text) == 0,
                  "cut at %zu: %s", cut, part.text);
    }
    size_t cuts[sizeof(stream)];
    for (size_t i = 0; i + 1 < len; i++) {
        cuts[i] = i + 1;
    }
    run(stream, len, cuts, len - 1, 4096, 1024, &part);
    CHECK_EQ_INT(part.error, 0);
    CHECK_EQ_STR(part.text, whole.text);
}

RIFT_TEST(control_line_is_bounded) {
    char line[600];
    memset(line, 'a', sizeof(line));
    memcpy(line, "SUB ", 4);
    trace t;
    /* No newline at all: refused once the buffer would pass the bound,
     * not after buffering everything. */
    run(line, sizeof(line), NULL, 0, 256, 1024, &t);
    CHECK_EQ_INT(t.error, RIFT_NATS_PERR_CONTROL_LINE);
    /* Exactly at the bound passes; one more byte does not. */
    char ok[300];
    memset(ok, 'b', sizeof(ok));
    memcpy(ok, "SUB ", 4);
    ok[254] = ' ';
    ok[255] = '1';
    memcpy(ok + 256, "\r\n", 2);
    run(ok, 258, NULL, 0, 256, 1024, &t);
    CHECK_EQ_INT(t.error, 0);
    ok[256] = '1';
    memcpy(ok + 257, "\r\n", 2);
    run(ok, 259, NULL, 0, 256, 1024, &t);
    CHECK_EQ_INT(t.error, RIFT_NATS_PERR_CONTROL_LINE);
    CHECK_EQ_STR(rift_nats_parse_error_text(t.error),
                 "Maximum Control Line Exceeded");
}

RIFT_TEST(payload_is_bounded) {
    trace t;
    const char big[] = "PUB foo 1025\r\n";
    run(big, sizeof(big) - 1, NULL, 0, 4096, 1024, &t);
    CHECK_EQ_INT(t.error, RIFT_NATS_PERR_PAYLOAD);
    CHECK_EQ_STR(rift_nats_parse_error_text(t.error),
                 "Maximum Payload Violation");
    const char hbig[] = "HPUB foo 10 1025\r\n";
    run(hbig, sizeof(hbig) - 1, NULL, 0, 4096, 1024, &t);
    CHECK_EQ_INT(t.error, RIFT_NATS_PERR_PAYLOAD);
    const char huge[] = "PUB foo 99999999999999999999999\r\n";
    run(huge, sizeof(huge) - 1, NULL, 0, 4096, 1024, &t);
    CHECK_EQ_INT(t.error, RIFT_NATS_PERR_SYNTAX);
}

RIFT_TEST(bad_operations_and_framing) {
    static const struct {
        const char *in;
        int error;
    } cases[] = {
        {"FOO\r\n", RIFT_NATS_PERR_UNKNOWN_OP},
        {"MSG a 1 1\r\nx\r\n", RIFT_NATS_PERR_UNKNOWN_OP},
        {"INFO {}\r\n", RIFT_NATS_PERR_UNKNOWN_OP},
        {"PUBX a 1\r\n", RIFT_NATS_PERR_UNKNOWN_OP},
        {"PUB\r\n", RIFT_NATS_PERR_SYNTAX},
        {"PUB a\r\n", RIFT_NATS_PERR_SYNTAX},
        {"PUB a b c 1\r\n", RIFT_NATS_PERR_SYNTAX},
        {"PUB a -1\r\n", RIFT_NATS_PERR_SYNTAX},
        {"PUB a 1x\r\n", RIFT_NATS_PERR_SYNTAX},
        {"PUB a 3\r\nabcXY", RIFT_NATS_PERR_SYNTAX},
        {"PUB a 3\r\nabc\n\r", RIFT_NATS_PERR_SYNTAX},
        {"HPUB a 5 3\r\n", RIFT_NATS_PERR_SYNTAX},
        {"HPUB a 3\r\n", RIFT_NATS_PERR_SYNTAX},
        {"SUB a\r\n", RIFT_NATS_PERR_SYNTAX},
        {"SUB a b c d\r\n", RIFT_NATS_PERR_SYNTAX},
        {"UNSUB\r\n", RIFT_NATS_PERR_SYNTAX},
        {"UNSUB 1 x\r\n", RIFT_NATS_PERR_SYNTAX},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        trace t;
        run(cases[i].in, strlen(cases[i].in), NULL, 0, 4096, 1024, &t);
        CHECK_MSG(t.error == cases[i].error, "%s: %d, expected %d", cases[i].in,
                  t.error, cases[i].error);
    }
}

RIFT_TEST(dead_parser_stays_dead) {
    rift_nats_parser p;
    CHECK_OK(rift_nats_parser_init(&p, NULL, 256, 64));
    size_t used;
    rift_nats_op op;
    CHECK_EQ_INT(rift_nats_parse(&p, (const uint8_t *)"BAD\r\n", 5, &used, &op),
                 RIFT_NATS_PERR_UNKNOWN_OP);
    CHECK_EQ_INT(
        rift_nats_parse(&p, (const uint8_t *)"PING\r\n", 6, &used, &op),
        RIFT_NATS_PERR_SYNTAX);
    CHECK_EQ_INT(used, 0);
    rift_nats_parser_free(&p);
}
