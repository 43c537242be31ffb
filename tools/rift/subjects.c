/*
 * subjects.c — local subject, pattern and queue checks of the rift CLI
 * (tools layer). See subjects.h.
 */
#include "subjects.h"

#include "io.h"

#include "subject/acl.h"
#include "subject/name.h"
#include "subject/subject.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Subjects and patterns on the wire are at most this long (§3). */
#define SUBJECT_MAX 1024

/* Why |s| is not a valid subject or pattern, in the order the broker's
 * scan finds it; NULL when the token rule holds. */
static const char *token_problem(const char *s, size_t len) {
    if (len == 0) {
        return "it is empty";
    }
    if (len > SUBJECT_MAX) {
        return "it is longer than 1024 bytes";
    }
    size_t tok = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f) {
            return "it contains a space or a control character";
        }
        if (c == '.') {
            if (i == tok) {
                return i == 0 ? "it starts with a dot"
                              : "it has an empty token (two dots in a row)";
            }
            tok = i + 1;
        } else if (c == '*' && (i != tok || (i + 1 < len && s[i + 1] != '.'))) {
            return "'*' must be a whole token (as in a.*.c)";
        } else if (c == '>' && (i != tok || i + 1 != len)) {
            return "'>' must be the whole last token (as in a.>)";
        }
    }
    if (tok == len) {
        return "it ends with a dot";
    }
    return NULL;
}

static void print_quoted(const char *s) {
    fputc('"', stderr);
    rift_cli_print_escaped(stderr, (const uint8_t *)s, strlen(s));
    fputc('"', stderr);
}

bool rift_cli_subject_ok(const char *cmd, const char *what, const char *s,
                         bool literal) {
    size_t len = strlen(s);
    rift_subject_kind k = rift_subject_scan(s, len, SUBJECT_MAX);
    if (k == RIFT_SUBJECT_LITERAL || (!literal && k == RIFT_SUBJECT_WILDCARD)) {
        return true;
    }
    fprintf(stderr, "rift %s: ", cmd);
    if (k == RIFT_SUBJECT_WILDCARD) {
        fprintf(stderr, "%s ", what);
        print_quoted(s);
        fprintf(stderr, " has a wildcard token; it must be a literal subject "
                        "(* and > are for rift sub)\n");
        return false;
    }
    const char *why = token_problem(s, len);
    fprintf(stderr, "%s ", what);
    print_quoted(s);
    fprintf(stderr, " is not a valid %s: %s\n",
            literal ? "subject" : "subject or pattern",
            why != NULL ? why : "it is not valid UTF-8");
    return false;
}

bool rift_cli_queue_ok(const char *cmd, const char *q) {
    /* Remote queue groups follow the wire's name rule (§3), stricter than
     * the broker's own. */
    if (rift_name_valid(q, strlen(q))) {
        return true;
    }
    fprintf(stderr, "rift %s: queue group ", cmd);
    print_quoted(q);
    fprintf(stderr, " is not valid: it must be 1..96 letters, digits, '.', "
                    "'_' or '-'\n");
    return false;
}
