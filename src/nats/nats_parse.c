/*
 * nats_parse.c — the incremental core NATS protocol parser (nats layer); see
 * nats_parse.h. Operation names are case-insensitive and arguments are
 * separated by spaces or tabs, as nats-server reads them; a control line
 * ends with LF, an optional CR before it is dropped; a payload must be
 * followed by exactly CRLF.
 */
#include "nats/nats_parse.h"

#include <string.h>

enum {
    ST_LINE = 0,
    ST_PAYLOAD = 1,
    ST_DEAD = 2
};

/* parse_line's answer for PUB and HPUB: the payload comes next. */
#define NEED_PAYLOAD 2

/* Most arguments any operation takes (HPUB: subject reply hdr total). */
#define MAX_ARGS 4

/* Longest decimal number accepted (well below 2^63). */
#define MAX_DIGITS 18

int rift_nats_parser_init(rift_nats_parser *p, const rift_mem *mem,
                          size_t max_line, size_t max_payload) {
    memset(p, 0, sizeof(*p));
    p->mem = mem;
    p->max_line = max_line;
    p->max_payload = max_payload;
    p->line = rift_malloc(mem, max_line + 2);
    return p->line == NULL ? RIFT_ERR_NOMEM : 0;
}

void rift_nats_parser_free(rift_nats_parser *p) {
    rift_free(p->mem, p->line);
    rift_free(p->mem, p->pay);
    memset(p, 0, sizeof(*p));
}

const char *rift_nats_parse_error_text(int error) {
    switch (error) {
    case RIFT_NATS_PERR_UNKNOWN_OP:
        return "Unknown Protocol Operation";
    case RIFT_NATS_PERR_CONTROL_LINE:
        return "Maximum Control Line Exceeded";
    case RIFT_NATS_PERR_PAYLOAD:
        return "Maximum Payload Violation";
    case RIFT_ERR_NOMEM:
        return "Server Out Of Memory";
    default:
        return "Protocol Error";
    }
}

static bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

/* Splits |s| at blanks into at most MAX_ARGS tokens; returns how many,
 * or MAX_ARGS + 1 when there are more. */
static size_t split(const char *s, size_t len, const char **tok, size_t *tlen) {
    size_t n = 0;
    size_t i = 0;
    for (;;) {
        while (i < len && is_blank(s[i])) {
            i++;
        }
        if (i == len) {
            return n;
        }
        if (n == MAX_ARGS) {
            return MAX_ARGS + 1;
        }
        size_t start = i;
        while (i < len && !is_blank(s[i])) {
            i++;
        }
        tok[n] = s + start;
        tlen[n] = i - start;
        n++;
    }
}

static bool parse_u64(const char *s, size_t len, uint64_t *out) {
    if (len == 0 || len > MAX_DIGITS) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

static char upper(char c) {
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* Is |s| the operation |name| (upper case), ignoring case? Inline byte
 * compares: this runs for every operation, and strlen + strncasecmp per
 * candidate name was a visible part of a small PUB. */
static bool op_is(const char *s, size_t len, const char *name) {
    size_t i = 0;
    for (; i < len && name[i] != '\0'; i++) {
        if (upper(s[i]) != name[i]) {
            return false;
        }
    }
    return i == len && name[i] == '\0';
}

static const char *skip_blanks(const char *s, const char *end) {
    while (s < end && is_blank(*s)) {
        s++;
    }
    return s;
}

/* PUB subject [reply] size, HPUB subject [reply] hdr_size total_size. */
static int parse_pub(const rift_nats_parser *p, const char **tok,
                     const size_t *tlen, size_t n, bool hpub,
                     rift_nats_op *op) {
    size_t sizes = hpub ? 2 : 1;
    if (n != sizes + 1 && n != sizes + 2) {
        return RIFT_NATS_PERR_SYNTAX;
    }
    op->kind = hpub ? RIFT_NATS_OP_HPUB : RIFT_NATS_OP_PUB;
    op->subject = tok[0];
    op->subject_len = tlen[0];
    if (n == sizes + 2) {
        op->reply = tok[1];
        op->reply_len = tlen[1];
    }
    uint64_t hdr = 0;
    uint64_t total = 0;
    if (!parse_u64(tok[n - 1], tlen[n - 1], &total) ||
        (hpub && (!parse_u64(tok[n - 2], tlen[n - 2], &hdr) || hdr > total))) {
        return RIFT_NATS_PERR_SYNTAX;
    }
    if (total > p->max_payload) {
        return RIFT_NATS_PERR_PAYLOAD;
    }
    op->header_len = (size_t)hdr;
    op->total_len = (size_t)total;
    return NEED_PAYLOAD;
}

static int parse_line(const rift_nats_parser *p, const char *line, size_t len,
                      rift_nats_op *op) {
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    if (len > p->max_line) {
        return RIFT_NATS_PERR_CONTROL_LINE;
    }
    const char *end = line + len;
    size_t name_len = 0;
    while (name_len < len && !is_blank(line[name_len])) {
        name_len++;
    }
    const char *rest = line + name_len;
    memset(op, 0, sizeof(*op));
    const char *tok[MAX_ARGS];
    size_t tlen[MAX_ARGS];
    size_t n = split(rest, (size_t)(end - rest), tok, tlen);
    if (op_is(line, name_len, "PUB") || op_is(line, name_len, "HPUB")) {
        return parse_pub(p, tok, tlen, n, name_len == 4, op);
    }
    if (op_is(line, name_len, "SUB")) {
        if (n != 2 && n != 3) {
            return RIFT_NATS_PERR_SYNTAX;
        }
        op->kind = RIFT_NATS_OP_SUB;
        op->subject = tok[0];
        op->subject_len = tlen[0];
        if (n == 3) {
            op->queue = tok[1];
            op->queue_len = tlen[1];
        }
        op->sid = tok[n - 1];
        op->sid_len = tlen[n - 1];
        return 1;
    }
    if (op_is(line, name_len, "UNSUB")) {
        if ((n != 1 && n != 2) ||
            (n == 2 && !parse_u64(tok[1], tlen[1], &op->max_msgs))) {
            return RIFT_NATS_PERR_SYNTAX;
        }
        op->kind = RIFT_NATS_OP_UNSUB;
        op->sid = tok[0];
        op->sid_len = tlen[0];
        return 1;
    }
    if (op_is(line, name_len, "CONNECT") || op_is(line, name_len, "-ERR")) {
        op->kind = name_len == 7 ? RIFT_NATS_OP_CONNECT : RIFT_NATS_OP_ERR;
        op->args = skip_blanks(rest, end);
        op->args_len = (size_t)(end - op->args);
        return 1;
    }
    if (op_is(line, name_len, "PING")) {
        op->kind = RIFT_NATS_OP_PING;
    } else if (op_is(line, name_len, "PONG")) {
        op->kind = RIFT_NATS_OP_PONG;
    } else if (op_is(line, name_len, "+OK")) {
        op->kind = RIFT_NATS_OP_OK;
    } else {
        return RIFT_NATS_PERR_UNKNOWN_OP;
    }
    return 1;
}

static void rebase(const char **ptr, const char *from, const char *to) {
    if (*ptr != NULL) {
        *ptr = to + (*ptr - from);
    }
}

/* Keeps a PUB/HPUB whose payload is still to come: its line moves into
 * the parser's buffer (it may point into the caller's bytes) and the
 * payload buffer grows to hold payload and CRLF. */
static int hold_pending(rift_nats_parser *p, const char *line, size_t n,
                        const rift_nats_op *op) {
    p->pending = *op;
    if (line != p->line) {
        memcpy(p->line, line, n);
        rebase(&p->pending.subject, line, p->line);
        rebase(&p->pending.reply, line, p->line);
    }
    size_t need = op->total_len + 2;
    if (need > p->pay_cap) {
        uint8_t *b = rift_realloc(p->mem, p->pay, need);
        if (b == NULL) {
            return RIFT_ERR_NOMEM;
        }
        p->pay = b;
        p->pay_cap = need;
    }
    p->pay_len = 0;
    p->state = ST_PAYLOAD;
    return 0;
}

/* Takes the next control line: in place when it is whole in |data|,
 * else through the line buffer. Sets *line (NULL: need more). */
static int take_line(rift_nats_parser *p, const uint8_t *data, size_t len,
                     size_t *used, const char **line, size_t *n) {
    const uint8_t *start = data + *used;
    size_t avail = len - *used;
    const uint8_t *nl = memchr(start, '\n', avail);
    size_t body = nl != NULL ? (size_t)(nl - start) : avail;
    /* max_line + 1: room for the CR that parse_line drops. */
    if (p->line_len + body > p->max_line + 1) {
        return RIFT_NATS_PERR_CONTROL_LINE;
    }
    *line = NULL;
    if (nl != NULL && p->line_len == 0) {
        *line = (const char *)start;
        *n = body;
        *used += body + 1;
        return 0;
    }
    memcpy(p->line + p->line_len, start, body);
    p->line_len += body;
    *used += nl != NULL ? body + 1 : body;
    if (nl != NULL) {
        *line = p->line;
        *n = p->line_len;
        p->line_len = 0;
    }
    return 0;
}

static int fail(rift_nats_parser *p, int rc) {
    p->state = ST_DEAD;
    return rc;
}

static int payload_step(rift_nats_parser *p, const uint8_t *data, size_t len,
                        size_t *used, rift_nats_op *op) {
    size_t need = p->pending.total_len + 2;
    size_t take = need - p->pay_len;
    if (take > len - *used) {
        take = len - *used;
    }
    memcpy(p->pay + p->pay_len, data + *used, take);
    p->pay_len += take;
    *used += take;
    if (p->pay_len < need) {
        return 0;
    }
    if (p->pay[need - 2] != '\r' || p->pay[need - 1] != '\n') {
        return fail(p, RIFT_NATS_PERR_SYNTAX);
    }
    *op = p->pending;
    op->data = p->pay;
    p->pay_len = 0;
    p->state = ST_LINE;
    return 1;
}

int rift_nats_parse(rift_nats_parser *p, const uint8_t *data, size_t len,
                    size_t *consumed, rift_nats_op *op) {
    size_t used = 0;
    int rc = 0;
    if (p->state == ST_DEAD) {
        *consumed = 0;
        return RIFT_NATS_PERR_SYNTAX;
    }
    while (rc == 0 && used < len) {
        if (p->state == ST_PAYLOAD) {
            rc = payload_step(p, data, len, &used, op);
            continue;
        }
        const char *line;
        size_t n = 0;
        if ((rc = take_line(p, data, len, &used, &line, &n)) != 0) {
            rc = fail(p, rc);
            break;
        }
        if (line == NULL || n == 0 || (n == 1 && line[0] == '\r')) {
            continue; /* need more, or an empty line (ignored) */
        }
        rc = parse_line(p, line, n, op);
        if (rc < 0) {
            rc = fail(p, rc);
        } else if (rc == NEED_PAYLOAD) {
            size_t need = op->total_len + 2;
            if (len - used >= need) {
                const uint8_t *d = data + used;
                used += need;
                rc = d[need - 2] == '\r' && d[need - 1] == '\n'
                         ? 1
                         : fail(p, RIFT_NATS_PERR_SYNTAX);
                op->data = d;
            } else if ((rc = hold_pending(p, line, n, op)) != 0) {
                rc = fail(p, rc);
            }
        }
    }
    *consumed = used;
    return rc;
}
