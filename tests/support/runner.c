/*
 * runner.c — main() of every test binary (tests layer): runs the registered
 * tests in registration order, or only those named in argv, and prints
 * "N passed, N failed, N skipped" as its last line. Exit status 1 on any
 * failure, RIFT_TEST_SKIPPED when every selected test skipped, else 0.
 */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>

#define MAX_TESTS 1024

static struct {
    const char *name;
    rift_test_fn fn;
} tests[MAX_TESTS];
static int n_tests;
static bool current_failed;
static bool current_skipped;

void rift_test_register(const char *name, rift_test_fn fn) {
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        abort();
    }
    tests[n_tests].name = name;
    tests[n_tests].fn = fn;
    n_tests++;
}

void rift_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    current_failed = true;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void rift_test_skip(const char *fmt, ...) {
    va_list ap;
    current_skipped = true;
    fprintf(stderr, "  skipped: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool rift_test_failed(void) {
    return current_failed;
}

static bool selected(const char *name, int argc, char **argv) {
    if (argc <= 1) {
        return true;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return true;
        }
    }
    return false;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, skipped = 0;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < n_tests; i++) {
            printf("%s\n", tests[i].name);
        }
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < n_tests; i++) {
        if (!selected(tests[i].name, argc, argv)) {
            continue;
        }
        current_failed = false;
        current_skipped = false;
        tests[i].fn();
        if (current_failed) {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        } else if (current_skipped) {
            printf("skip %s\n", tests[i].name);
            skipped++;
        } else {
            printf("ok   %s\n", tests[i].name);
            passed++;
        }
    }
    if (passed + failed + skipped == 0 && argc > 1) {
        fprintf(stderr, "no test matched\n");
        failed = 1;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed) {
        return 1;
    }
    return skipped > 0 && passed == 0 ? RIFT_TEST_SKIPPED : 0;
}
