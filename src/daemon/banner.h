/*
 * banner.h — what riftd prints once its development default is up
 * (daemon layer): the commands a newcomer types next, exact for the
 * directory riftd runs in and the rift it was built or installed with.
 */
#ifndef RIFT_DAEMON_BANNER_H
#define RIFT_DAEMON_BANNER_H

#include <stdbool.h>
#include <stddef.h>

/*
 * rift_daemon_banner_format writes the banner for a broker bound to
 * |address| (NULL: no listener), |echo| when the echo plugin is
 * configured, into |buf|. Returns the length (cut to |size| - 1).
 */
size_t rift_daemon_banner_format(char *buf, size_t size, const char *address,
                                 bool echo);

/* rift_daemon_banner prints the banner on stderr in one write, without
 * log prefixes, so each command line can be copied as it stands. */
void rift_daemon_banner(const char *address, bool echo);

#endif /* RIFT_DAEMON_BANNER_H */
