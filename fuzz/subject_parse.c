/*
 * subject_parse.c — libFuzzer target for the subject layer (fuzz layer).
 *
 * The input is split on 0xFF bytes (never part of well-formed UTF-8) into
 * up to three parts A, B, C; the parity of the input length picks the
 * control flag. Every validator runs on every part and the target aborts
 * when an invariant breaks:
 * - the one-pass classifier agrees with a naive split-based re-statement of
 *   validate_pattern (§3.6), and the wire, broker and config rules agree
 *   with each other and report the documented texts;
 * - a valid pattern covers and overlaps itself, '>' covers every valid
 *   pattern, and only '>' covers '>';
 * - covers implies overlaps, overlaps is symmetric, covers is transitive,
 *   mutual containment means equality, and against a literal covers,
 *   overlaps and matches agree; containment implies matching;
 * - can_publish / can_subscribe give exactly the result of §3.3 / §3.4
 *   recomputed from the relations;
 * - name rules nest as documented; scoped consumer names are 71 bytes;
 *   the Debug rendering is snprintf-consistent.
 */
#include "subject/acl.h"
#include "common/debug_str.h"
#include "subject/name.h"
#include "subject/subject.h"
#include "fuzz_require.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define LIT(s) (s), (sizeof(s) - 1)

typedef struct part {
    const char *p;
    size_t len;
    bool pattern; /* passes validate_pattern */
    bool literal; /* passes validate_literal */
} part;

/* validate_pattern restated naively: split, then check each token. */
static bool naive_pattern(const char *s, size_t len) {
    if (len == 0 || len > 1024 || !rift_utf8_valid((const uint8_t *)s, len)) {
        return false;
    }
    size_t start = 0;
    for (;;) {
        const char *dot = memchr(s + start, '.', len - start);
        size_t end = dot ? (size_t)(dot - s) : len;
        size_t tl = end - start;
        const char *t = s + start;
        if (tl == 0) {
            return false;
        }
        size_t pos = 0;
        while (pos < tl) {
            if (rift_char_is_space_or_control(
                    rift_utf8_next((const uint8_t *)t, tl, &pos))) {
                return false;
            }
        }
        bool wild = memchr(t, '*', tl) || memchr(t, '>', tl);
        bool star = tl == 1 && t[0] == '*';
        bool gt = tl == 1 && t[0] == '>';
        if (wild && !star && !gt) {
            return false;
        }
        if (gt && end != len) {
            return false;
        }
        if (end == len) {
            return true;
        }
        start = end + 1;
    }
}

static bool all_graphic(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if ((uint8_t)s[i] < 0x21 || (uint8_t)s[i] > 0x7E) {
            return false;
        }
    }
    return true;
}

static bool covers(const part *a, const part *b) {
    return rift_subject_covers(a->p, a->len, b->p, b->len);
}

static bool overlaps(const part *a, const part *b) {
    return rift_subject_overlaps(a->p, a->len, b->p, b->len);
}

static bool matches(const part *a, const part *b) {
    return rift_subject_matches(a->p, a->len, b->p, b->len);
}

static void check_part(part *x) {
    rift_error err;
    int rp = rift_subject_validate_pattern(x->p, x->len, &err);
    bool len_ok = x->len >= 1 && x->len <= 1024;
    if (rp != 0) {
        REQUIRE(rp == RIFT_ERR_PROTOCOL && err.code == rp);
        REQUIRE(strcmp(err.text, len_ok ? "invalid subject pattern"
                                        : "invalid subject length") == 0);
    }
    int rl = rift_subject_validate_literal(x->p, x->len, &err);
    if (rl != 0) {
        REQUIRE(rl == RIFT_ERR_PROTOCOL);
        if (rp == 0) {
            REQUIRE(strcmp(err.text, "publication subject must be literal") ==
                    0);
        }
    }
    x->pattern = rp == 0;
    x->literal = rl == 0;
    rift_subject_kind k = rift_subject_scan(x->p, x->len, 1024);
    REQUIRE(x->pattern == naive_pattern(x->p, x->len));
    REQUIRE(x->pattern == (k != RIFT_SUBJECT_INVALID));
    REQUIRE(x->literal == (k == RIFT_SUBJECT_LITERAL));
    REQUIRE(x->pattern == rift_subject_valid(x->p, x->len, true, 1024));
    REQUIRE(x->literal == rift_subject_valid(x->p, x->len, false, 1024));
    bool cfg = rift_subject_config_valid(x->p, x->len, 1024);
    REQUIRE(cfg == (x->pattern && all_graphic(x->p, x->len)));
    if (!cfg) {
        rift_subject_config_error(&err, x->p, x->len);
        REQUIRE(err.code == RIFT_ERR_INVALID_CONFIG);
        REQUIRE(strncmp(err.text, "messaging: invalid subject pattern \"",
                        36) == 0);
    }

    if (x->pattern) {
        static const part gt = {">", 1, true, false};
        REQUIRE(rift_subject_has_wildcard(x->p, x->len) == !x->literal);
        REQUIRE(covers(x, x) && overlaps(x, x));
        REQUIRE(covers(&gt, x) && overlaps(&gt, x));
        REQUIRE(covers(x, &gt) == (x->len == 1 && x->p[0] == '>'));
        if (x->literal) {
            REQUIRE(matches(x, x));
            REQUIRE(matches(&gt, x));
        }
    }

    /* Name rules nest. */
    bool name = rift_name_valid(x->p, x->len);
    bool stream = rift_config_stream_name_valid(x->p, x->len);
    bool plugin = rift_plugin_name_valid(x->p, x->len);
    bool queue = rift_queue_name_valid(x->p, x->len);
    bool store = rift_store_consumer_name_valid(x->p, x->len);
    (void)rift_env_name_valid(x->p, x->len);
    REQUIRE(!name || (queue && store));
    REQUIRE(!stream || (name && plugin));
    REQUIRE(!plugin || queue);
    if (name) {
        char out[RIFT_SCOPED_CONSUMER_SIZE];
        REQUIRE(rift_consumer_scope(LIT("fuzz"), x->p, x->len, out) == 0);
        REQUIRE(strlen(out) == RIFT_SCOPED_CONSUMER_LEN);
        REQUIRE(memcmp(out, "remote_", 7) == 0);
        for (size_t i = 7; i < RIFT_SCOPED_CONSUMER_LEN; i++) {
            REQUIRE((out[i] >= '0' && out[i] <= '9') ||
                    (out[i] >= 'a' && out[i] <= 'f'));
        }
    }

    /* Debug rendering: snprintf-consistent, at least the input plus
     * quotes, and verbatim for quote-free graphic ASCII. */
    size_t n = rift_debug_str(NULL, 0, x->p, x->len);
    REQUIRE(n >= x->len + 2);
    char *buf = malloc(n + 1);
    if (buf != NULL) {
        REQUIRE(rift_debug_str(buf, n + 1, x->p, x->len) == n);
        REQUIRE(strlen(buf) == n);
        if (all_graphic(x->p, x->len) && !memchr(x->p, '"', x->len) &&
            !memchr(x->p, '\\', x->len)) {
            REQUIRE(n == x->len + 2 && memcmp(buf + 1, x->p, x->len) == 0);
        }
        free(buf);
    }
}

static void check_pair(const part *a, const part *b) {
    /* Memory safety on any bytes. */
    (void)matches(a, b);
    bool c = covers(a, b), o = overlaps(a, b);
    if (!a->pattern || !b->pattern) {
        return;
    }
    REQUIRE(!c || o);
    REQUIRE(o == overlaps(b, a));
    if (c && covers(b, a)) {
        REQUIRE(a->len == b->len && memcmp(a->p, b->p, a->len) == 0);
    }
    if (b->literal) {
        REQUIRE(matches(a, b) == c);
        REQUIRE(matches(a, b) == o);
    }
    if (a->literal && b->literal) {
        REQUIRE(matches(a, b) ==
                (a->len == b->len && memcmp(a->p, b->p, a->len) == 0));
    }
}

static void check_triple(const part *a, const part *b, const part *c) {
    if (!a->pattern || !b->pattern || !c->pattern) {
        return;
    }
    if (covers(a, b) && covers(b, c)) {
        REQUIRE(covers(a, c));
    }
    if (c->literal) {
        if (covers(a, b) && matches(b, c)) {
            REQUIRE(matches(a, c));
        }
        if (matches(a, c) && matches(b, c)) {
            REQUIRE(overlaps(a, b));
        }
    }
}

static bool reserved(const part *x, const char *prefix) {
    size_t n = strlen(prefix);
    return x->len >= n && memcmp(x->p, prefix, n) == 0 &&
           (x->len == n || x->p[n] == '.');
}

static bool touches_control(const part *x) {
    static const part ctl = {"rift.control.>", 14, true, false};
    static const part bare = {"rift.control", 12, true, true};
    return overlaps(x, &ctl) || covers(x, &bare);
}

/* Identity granted |grant| for both directions; check B as a
 * subscription, B with reply C as a publication. */
static void check_acl(const part *grant, const part *b, const part *c,
                      bool control) {
    rift_identity id;
    rift_identity_init(&id, NULL);
    if (rift_identity_allow_publish(&id, grant->p, grant->len) != 0 ||
        rift_identity_allow_subscribe(&id, grant->p, grant->len) != 0) {
        rift_identity_free(&id);
        return;
    }
    id.control = control;
    rift_error err;

    int rs = rift_identity_can_subscribe(&id, b->p, b->len, &err);
    int want = !b->pattern ? RIFT_ERR_PROTOCOL
               : ((!control && touches_control(b)) || !covers(grant, b))
                   ? RIFT_ERR_PERMISSION
                   : 0;
    REQUIRE(rs == want);
    if (rs == RIFT_ERR_PERMISSION) {
        REQUIRE(strcmp(err.text, "subscription not permitted") == 0);
    }

    int rpub = rift_identity_can_publish(&id, b->p, b->len, c->p, c->len, &err);
    if (!b->literal) {
        want = RIFT_ERR_PROTOCOL;
    } else if (reserved(b, "rift.events") ||
               (!control && reserved(b, "rift.control")) || !covers(grant, b)) {
        want = RIFT_ERR_PERMISSION;
    } else if (c->len == 0) {
        want = 0;
    } else if (!c->literal) {
        want = RIFT_ERR_PROTOCOL;
    } else if (c->len < 7 || memcmp(c->p, "_INBOX.", 7) != 0 ||
               !covers(grant, c)) {
        want = RIFT_ERR_PERMISSION;
    } else {
        want = 0;
    }
    REQUIRE(rpub == want);
    rift_identity_free(&id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    part parts[3];
    memset(parts, 0, sizeof(parts));
    size_t np = 0, start = 0;
    const char *s = (const char *)data;
    for (size_t i = 0; i <= size && np < 3; i++) {
        if (i == size || data[i] == 0xFF) {
            parts[np].p = s + start;
            parts[np].len = i - start;
            np++;
            start = i + 1;
        }
    }
    /* Missing parts are empty strings (still a valid "no reply"). */
    for (size_t i = np; i < 3; i++) {
        parts[i].p = "";
        parts[i].len = 0;
    }
    bool control = (size & 1) != 0;

    for (size_t i = 0; i < 3; i++) {
        check_part(&parts[i]);
    }
    for (size_t i = 0; i < 3; i++) {
        for (size_t j = 0; j < 3; j++) {
            check_pair(&parts[i], &parts[j]);
        }
    }
    check_triple(&parts[0], &parts[1], &parts[2]);
    check_triple(&parts[1], &parts[0], &parts[2]);
    check_triple(&parts[2], &parts[1], &parts[0]);
    check_acl(&parts[0], &parts[1], &parts[2], control);
    check_acl(&parts[1], &parts[0], &parts[2], !control);
    return 0;
}
