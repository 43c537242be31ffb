/*
 * subjects.h — local checks of the subjects, patterns and queue groups
 * given on the rift CLI's command line (tools layer). The library checks
 * them too, with the protocol's fixed texts ("publication subject must be
 * literal", "invalid subject pattern"), which name neither the argument nor
 * what is wrong with it; these say both, before anything connects.
 */
#ifndef RIFT_TOOLS_SUBJECTS_H
#define RIFT_TOOLS_SUBJECTS_H

#include <stdbool.h>

/*
 * rift_cli_subject_ok checks |s|, the argument |what| ("subject",
 * "--reply", "pattern", ...): a literal subject when |literal|, else a
 * pattern ('*' tokens, a final '>'). Prints "rift CMD: ..." naming the
 * argument, the subject and the reason, and returns false when it is not
 * one.
 */
bool rift_cli_subject_ok(const char *cmd, const char *what, const char *s,
                         bool literal);

/* rift_cli_queue_ok checks a queue group name (the wire's name rule: 1..96
 * letters, digits, '.', '_', '-'); prints why and returns false when it is not
 * one. */
bool rift_cli_queue_ok(const char *cmd, const char *q);

#endif /* RIFT_TOOLS_SUBJECTS_H */
