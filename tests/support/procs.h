/*
 * procs.h — child processes for tests of the riftd and rift programs
 * (tests layer): start one in a directory with a clean environment and
 * its output in files, wait for a log line, parse the address riftd
 * bound, signal it and collect its exit status. Waits poll conditions
 * (rift_test_wait_until); nothing sleeps for a fixed time.
 */
#ifndef RIFT_TESTS_PROCS_H
#define RIFT_TESTS_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How long a test waits for a process event before giving up. */
#define RIFT_PROC_WAIT_MS 30000

typedef struct rift_proc {
    pid_t pid;
    int status; /* exit status once reaped, -1 when killed or unknown */
    bool reaped;
    char out[600]; /* stdout and stderr files */
    char err[600];
    char address[64]; /* riftd: "IP:PORT" from "messaging QUIC on" */
} rift_proc;

/*
 * rift_proc_start runs |prog| with |args| (NULL-ended, without argv[0])
 * in directory |cwd|. The environment is the test's minus every variable
 * the programs read (RIFT_SERVER, RIFT_CA, RIFT_SERVER_NAME, RIFT_TOKEN,
 * RIFT_HOME, RIFT_DEV_LISTEN), plus |env| ("NAME=value", NULL-ended, may
 * be NULL). stdin is /dev/null unless |input| is given (written to a file
 * first); stdout and stderr go to <cwd>/<tag>.out and <cwd>/<tag>.err.
 * Returns false when the program is unknown (empty |prog|) or fork fails.
 */
bool rift_proc_start(rift_proc *p, const char *prog, const char *cwd,
                     const char *tag, const char *const *args,
                     const char *const *env, const char *input,
                     size_t input_len);

/* $RIFT_TEST_RIFTD and $RIFT_TEST_CLI, or "" when unset. */
const char *rift_proc_riftd(void);
const char *rift_proc_cli(void);

/* Waits until the process exits (at most |timeout_ms|, then SIGKILL);
 * returns its exit status, or -1 when it was killed by a signal. */
int rift_proc_wait(rift_proc *p, int timeout_ms);

/* Sends |sig| and waits for the exit status as rift_proc_wait. */
int rift_proc_stop(rift_proc *p, int sig);

/* Kills the process if it still runs (SIGKILL) and reaps it. */
void rift_proc_kill(rift_proc *p);

/* Reads a whole output file into a new NUL-terminated buffer (free()),
 * or NULL. */
char *rift_proc_read(const char *path);

/* Waits until stderr (|in_err|) or stdout contains |needle|. */
bool rift_proc_wait_text(rift_proc *p, bool in_err, const char *needle,
                         int timeout_ms);

/* Counts the occurrences of |needle| in stdout. */
size_t rift_proc_count_out(rift_proc *p, const char *needle);

/*
 * rift_proc_riftd_ready waits for riftd's "rift: ready" line and copies
 * the address of "rift: messaging QUIC on <addr>" into p->address (empty
 * when there is no listener). False when riftd exited or timed out first.
 */
bool rift_proc_riftd_ready(rift_proc *p);

/*
 * rift_proc_run runs the CLI (|prog|) to completion in |cwd| and returns
 * its exit status; *out and *err (may be NULL) receive its output (free()).
 */
int rift_proc_run(const char *prog, const char *cwd, const char *const *args,
                  const char *const *env, char **out, char **err);

/* Writes |text| to <dir>/<name> (mode 0644). */
bool rift_proc_write_file(const char *dir, const char *name, const char *text);

#endif /* RIFT_TESTS_PROCS_H */
