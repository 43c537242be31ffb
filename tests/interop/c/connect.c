/*
 * connect.c — nats.c scenarios about connecting (tests layer): TLS with
 * the CA, token and user/password authentication, and the refusals.
 */
#include "ni.h"

#include <stdlib.h>
#include <string.h>

static bool round_trip(natsConnection *nc, const char *subject) {
    natsSubscription *sub = NULL;
    bool ok =
        ni_ok(natsConnection_SubscribeSync(&sub, nc, subject), "sub") &&
        ni_ok(natsConnection_PublishString(nc, subject, "round trip"), "pub") &&
        ni_expect(sub, "round trip");
    natsSubscription_Destroy(sub);
    return ok;
}

static bool connect_and_round_trip(natsOptions *o, const char *subject) {
    natsConnection *nc = NULL;
    bool ok = ni_connect_opts(o, &nc) && round_trip(nc, subject);
    natsConnection_Destroy(nc);
    return ok;
}

bool ni_tls_ca(void) {
    return connect_and_round_trip(ni_options("alice"), "ni.open.tls");
}

bool ni_auth_token(void) {
    natsOptions *o = ni_options("");
    if (o != NULL) {
        natsOptions_SetToken(o, getenv("NI_ALICE_TOKEN"));
    }
    return connect_and_round_trip(o, "ni.open.token");
}

bool ni_auth_userpass(void) {
    return connect_and_round_trip(ni_options("bob"), "ni.open.userpass");
}

/* A connect through |o| must fail with |want|. */
static bool refused(natsOptions *o, natsStatus want, const char *what) {
    natsConnection *nc = NULL;
    if (o == NULL) {
        return false;
    }
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s == NATS_OK) {
        natsConnection_Destroy(nc);
        return ni_fail("connected %s", what);
    }
    if (s != want) {
        return ni_fail("refused %s, but with %s, want %s", what,
                       natsStatus_GetText(s), natsStatus_GetText(want));
    }
    return true;
}

bool ni_missing_ca(void) {
    /* TLS with the system's trust store only, which lacks the test CA. */
    natsOptions *o = NULL;
    if (!ni_ok(natsOptions_Create(&o), "options")) {
        return false;
    }
    natsOptions_SetURL(o, getenv("NI_URL"));
    natsOptions_SetTimeout(o, NI_WAIT_MS);
    natsOptions_SetAllowReconnect(o, false);
    natsOptions_SetSecure(o, true);
    natsOptions_SetToken(o, getenv("NI_ALICE_TOKEN"));
    return refused(o, NATS_SSL_ERROR, "without the server's CA");
}

bool ni_bad_token(void) {
    natsOptions *o = ni_options("");
    if (o != NULL) {
        natsOptions_SetToken(o, "x-not-a-token-0123456789abcdef0123456789");
    }
    return refused(o, NATS_CONNECTION_AUTH_FAILED, "with a bad token");
}
