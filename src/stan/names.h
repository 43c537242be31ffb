/* STAN on-disk and consumer naming, shared by the service and the importer:
 * an imported store must land under the very names the service looks up. */
#ifndef RIFT_STAN_NAMES_H
#define RIFT_STAN_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Longest channel directory name; leaves room under NAME_MAX (255). */
#define STAN_MAX_DIR_NAME 240

/* stan_dir_name writes the directory name of channel |name| into |out|
 * (bytes outside [A-Za-z0-9_-], and a leading '.', as %XX); false when it
 * would not fit |cap| or be longer than STAN_MAX_DIR_NAME. */
bool stan_dir_name(const char *name, size_t len, char *out, size_t cap);

/* stan_append_safe appends |s| to |out| at |*n| with bytes outside
 * [A-Za-z0-9_.-] as %XX; stops short rather than overrun |cap|. */
void stan_append_safe(char *out, size_t cap, size_t *n, const char *s,
                      size_t len);

/* The durable consumer names: "d-<client>-<durable>" for a durable and
 * "q-<durable>:<group>" for a durable queue group, appended at |*n|. */
void stan_durable_name(char *out, size_t cap, size_t *n, const char *client,
                       size_t client_len, const char *durable,
                       size_t durable_len);
void stan_queue_durable_name(char *out, size_t cap, size_t *n,
                             const char *durable, size_t durable_len,
                             const char *group, size_t group_len);

#endif
