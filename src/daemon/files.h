/*
 * files.h — small file helpers of the daemon (daemon layer): whole-file
 * reads with a size cap, atomic writes with an explicit mode, private
 * directories. All return 0 or -errno; none logs.
 */
#ifndef RIFT_DAEMON_FILES_H
#define RIFT_DAEMON_FILES_H

#include "common/common.h"

#include <sys/types.h>

/*
 * rift_file_read reads |path| whole into a new NUL-terminated buffer
 * (*pbuf, freed with rift_free(NULL, ...)) of *plen bytes. Files longer
 * than |max| fail with -EFBIG.
 */
int rift_file_read(const char *path, size_t max, char **pbuf, size_t *plen);

/*
 * rift_file_write_atomic writes |data| to "<path>.tmp" created with |mode|,
 * syncs it and renames it over |path|, so readers see the old or the new
 * content, never a mix.
 */
int rift_file_write_atomic(const char *path, const void *data, size_t len,
                           mode_t mode);

/*
 * rift_dir_ensure_private creates |path| with mode 0700 when it is absent
 * (*created tells), and fails with -ENOTDIR when it exists as another kind
 * of file. An existing directory is left as it is.
 */
int rift_dir_ensure_private(const char *path, bool *created);

#endif /* RIFT_DAEMON_FILES_H */
