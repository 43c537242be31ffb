/*
 * transport_nats.h — the STAN service through an external NATS server
 * (stan layer, its own archive rift_stan_nats because it links libnats;
 * see transport.h): nats-streaming-server's `-ns` mode.
 */
#ifndef RIFT_STAN_TRANSPORT_NATS_H
#define RIFT_STAN_TRANSPORT_NATS_H

#include "stan/stan.h"

/*
 * stan_transport_nats_new connects to |url| (rift_stan_nats_url_check's
 * forms; user:password@ or token@ are sent as credentials, tls:// requires
 * TLS verified against the system's CA bundle). It fails when the server
 * cannot be reached now; once connected libnats reconnects forever,
 * buffering publishes meanwhile, and each disconnect and reconnect is
 * logged. The result goes into rift_stan_settings.transport. Errors:
 * RIFT_ERR_INVALID_CONFIG (the URL), RIFT_ERR_CONNECTION (unreachable,
 * refused, authorization), RIFT_ERR_NOMEM; texts show the URL with its
 * credentials masked.
 */
int stan_transport_nats_new(rift_stan_transport **pt, const char *url,
                            const rift_mem *mem, rift_error *err);

#endif /* RIFT_STAN_TRANSPORT_NATS_H */
