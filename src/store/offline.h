/*
 * offline.h — verify and repair of a stream directory nobody has open
 * (store layer, offline.c), through a given vfs (the fault tests and the
 * recovery fuzzer pass their own).
 */
#ifndef RIFT_STORE_OFFLINE_H
#define RIFT_STORE_OFFLINE_H

#include "store/stream_types.h"

/* rift_store_verify (VERIFY) or one repair pass (REPAIR) through |vfs|
 * (NULL = POSIX). */
int rift_store_offline(const char *path, rift_store_report *report,
                       rift_open_mode mode, const rift_vfs *vfs,
                       rift_error *err);

#endif /* RIFT_STORE_OFFLINE_H */
