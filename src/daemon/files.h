/*
 * files.h — small file helpers of the daemon (daemon layer): whole-file
 * reads with a size cap, atomic writes with an explicit mode, private
 * directories, the mode check of secret files. They return 0 or -errno
 * (rift_file_check_private: a rift error code).
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
 * of file. An existing directory goes through rift_dir_narrow.
 */
int rift_dir_ensure_private(const char *path, bool *created);

/*
 * rift_dir_narrow changes the existing directory |path| to 0700 when group
 * or others have any access, and logs a warning naming the old mode (the
 * one helper here that logs: the fix must not go unnoticed). -ENOTDIR when
 * |path| is another kind of file.
 */
int rift_dir_narrow(const char *path);

/*
 * rift_file_check_private refuses (RIFT_ERR_PERMISSION) a secret file that
 * group or others may access, like ssh does with keys: "<what> (<path>) is
 * accessible by group or others (mode 0644); run chmod 600 <path>". A
 * missing file passes (its reader reports that).
 */
int rift_file_check_private(const char *path, const char *what,
                            rift_error *err);

#endif /* RIFT_DAEMON_FILES_H */
