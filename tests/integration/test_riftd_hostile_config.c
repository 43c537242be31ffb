/*
 * test_riftd_hostile_config.c — riftd given hostile or broken Lua
 * (integration tests of the program): an endless loop at the top level, a
 * memory bomb, deep recursion, error values that are not strings (one
 * whose __tostring would loop), a huge error text, and plugins doing the
 * same in init.lua; and a corrupt stream directory. Each must end riftd
 * before anything binds with exactly one clear line on stderr,
 * "riftd: <reason>", and exit status 1.
 */
#include "common/common.h"
#include "procs.h"
#include "rift/stream.h"
#include "test.h"

#include <fcntl.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct hostile_case {
    const char *name;
    const char *config;
    const char *plugin; /* init.lua of plugin "p", or NULL */
    const char *want;   /* the line's start after "riftd: " */
} hostile_case;

static const hostile_case cases[] = {
    {"loop", "while true do end", NULL,
     "config: evaluation exceeded 100000000 instructions"},
    {"loop_in_pcall",
     "while true do pcall(function() while true do end end) end", NULL,
     "config: evaluation exceeded 100000000 instructions"},
    {"memory", "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end",
     NULL, "config: evaluation exceeded its 64 MiB memory budget"},
    {"string_bomb", "local s = 'x' while true do s = s .. s end", NULL,
     "config: evaluation exceeded its 64 MiB memory budget"},
    {"recursion", "local function f() return 1 + f() end f()", NULL,
     "config: evaluation exceeded its 64 MiB memory budget"},
    {"error_table", "error({})", NULL, "config: error object is a table"},
    {"error_nil", "error()", NULL, "config: error object is a nil"},
    {"error_tostring_loops",
     "error(setmetatable({}, { __tostring = function() while true do end "
     "end }))",
     NULL, "config: error object is a table"},
    {"error_huge", "error(('e'):rep(1000000))", NULL, "rift.lua:1: eeee"},
    {"returns_junk", "return 42", NULL,
     "config: the file must return a table (or assign rift.config fields)"},
    {"plugin_loop", "return { plugins = { 'p' } }", "while true do end",
     "p: init: script "}, /* instruction budget or 1 s deadline */
    {"plugin_memory", "return { plugins = { 'p' } }",
     "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end",
     "p: init: "},
    {"plugin_error_table", "return { plugins = { 'p' } }", "error({})",
     "p: init: (error object is a table value)"},
};

/* True when |text| is exactly one line starting with |prefix|. */
static bool one_line(const char *text, const char *prefix) {
    if (text == NULL || strncmp(text, prefix, strlen(prefix)) != 0) {
        return false;
    }
    const char *nl = strchr(text, '\n');
    return nl != NULL && nl[1] == '\0';
}

/* Runs riftd over case |name| in a fresh directory. */
static bool run_case(const char *name) {
    const hostile_case *c = NULL;
    for (size_t i = 0; i < RIFT_ARRAY_LEN(cases); i++) {
        if (strcmp(cases[i].name, name) == 0) {
            c = &cases[i];
        }
    }
    char *dir = rift_test_tmpdir();
    if (c == NULL || dir == NULL || rift_proc_riftd()[0] == '\0' ||
        !rift_proc_write_file(dir, "rift.lua", c->config)) {
        return false;
    }
    if (c->plugin != NULL) {
        char pd[800];
        snprintf(pd, sizeof(pd), "%s/plugins", dir);
        mkdir(pd, 0700);
        snprintf(pd, sizeof(pd), "%s/plugins/p", dir);
        mkdir(pd, 0700);
        if (!rift_proc_write_file(pd, "init.lua", c->plugin)) {
            return false;
        }
    }
    rift_proc p;
    const char *args[] = {"-c", "rift.lua", "--log-level", "off", NULL};
    if (!rift_proc_start(&p, rift_proc_riftd(), dir, "riftd", args, NULL, NULL,
                         0)) {
        return false;
    }
    int rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    char *err = rift_proc_read(p.err);
    char want[256];
    snprintf(want, sizeof(want), "riftd: %s", c->want);
    bool ok = rc == 1 && one_line(err, want) && strlen(err) < 1200;
    if (!ok) {
        fprintf(stderr, "  %s: exit %d, stderr [%.300s]\n", c->name, rc,
                err ? err : "(none)");
    }
    free(err);
    rift_test_rmdir(dir);
    return ok;
}

RIFT_TEST(endless_loop) {
    CHECK(run_case("loop"));
}

RIFT_TEST(endless_loop_inside_pcall) {
    CHECK(run_case("loop_in_pcall"));
}

RIFT_TEST(memory_bombs) {
    CHECK(run_case("memory"));
    CHECK(run_case("string_bomb"));
    CHECK(run_case("recursion"));
}

RIFT_TEST(error_values_that_are_not_strings) {
    CHECK(run_case("error_table"));
    CHECK(run_case("error_nil"));
    CHECK(run_case("error_tostring_loops"));
    CHECK(run_case("error_huge"));
    CHECK(run_case("returns_junk"));
}

RIFT_TEST(hostile_plugin_init) {
    CHECK(run_case("plugin_loop"));
    CHECK(run_case("plugin_memory"));
    CHECK(run_case("plugin_error_table"));
}

RIFT_TEST(corrupt_stream_directory) {
    char *dir = rift_test_tmpdir();
    CHECK(dir != NULL);
    char path[700];
    snprintf(path, sizeof(path), "%s/jobs-data", dir);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    ss.storage_path = path;
    rift_stream *st;
    CHECK_OK(rift_stream_new(&st, &ss, NULL));
    for (int i = 0; i < 3; i++) {
        rift_stored out;
        CHECK_OK(rift_stream_publish(st, "jobs.x", 6, NULL, 0,
                                     (const uint8_t *)"payload", 7, &out,
                                     NULL));
    }
    rift_stream_del(st);
    /* Flip a byte inside the first record of the first segment. */
    char seg[800];
    snprintf(seg, sizeof(seg), "%s/00000000000000000001.seg", path);
    int fd = open(seg, O_RDWR);
    CHECK(fd >= 0);
    off_t size = lseek(fd, 0, SEEK_END);
    CHECK(size > 100);
    uint8_t b;
    CHECK(pread(fd, &b, 1, size - 20) == 1);
    b ^= 0x5a;
    CHECK(pwrite(fd, &b, 1, size - 20) == 1);
    close(fd);
    CHECK(rift_proc_write_file(
        dir, "rift.lua",
        "return { messaging = { streams = { jobs = { subjects = "
        "{ 'jobs.>' }, storage_path = 'jobs-data' } } } }"));
    rift_proc p;
    const char *args[] = {"-c", "rift.lua", "--log-level", "off", NULL};
    CHECK(rift_proc_start(&p, rift_proc_riftd(), dir, "riftd", args, NULL, NULL,
                          0));
    int rc = rift_proc_wait(&p, RIFT_PROC_WAIT_MS);
    char *err = rift_proc_read(p.err);
    bool ok = rc == 1 &&
              one_line(err, "riftd: messaging.streams.jobs: stream "
                            "storage: ") &&
              strstr(err, ".seg") != NULL;
    if (!ok) {
        fprintf(stderr, "  exit %d, stderr [%s]\n", rc, err ? err : "");
    }
    free(err);
    rift_test_rmdir(dir);
    CHECK(ok);
}
