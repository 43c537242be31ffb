/*
 * main.c — the nats.c interop client (tests layer): connection helpers and
 * the scenario table. See ni.h.
 */
#include "ni.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char reason[1024];

bool ni_fail(const char *fmt, ...) {
    if (reason[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
    }
    return false;
}

bool ni_ok(natsStatus s, const char *what) {
    if (s == NATS_OK) {
        return true;
    }
    const char *last = nats_GetLastError(NULL);
    return ni_fail("%s: %s (%s)", what, natsStatus_GetText(s),
                   last ? last : "");
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v ? v : "";
}

natsOptions *ni_options(const char *who) {
    natsOptions *o = NULL;
    if (!ni_ok(natsOptions_Create(&o), "options")) {
        return NULL;
    }
    natsOptions_SetURL(o, env("NI_URL"));
    natsOptions_SetTimeout(o, NI_WAIT_MS);
    natsOptions_SetAllowReconnect(o, false);
    natsOptions_SetName(o, who);
    if (env("NI_CA")[0] != '\0') {
        natsOptions_SetSecure(o, true);
        natsOptions_LoadCATrustedCertificates(o, env("NI_CA"));
    }
    if (strcmp(who, "alice") == 0 && strcmp(env("NI_AUTH"), "token") == 0) {
        natsOptions_SetToken(o, env("NI_ALICE_TOKEN"));
    } else if (strcmp(who, "alice") == 0) {
        natsOptions_SetUserInfo(o, "alice", env("NI_ALICE_TOKEN"));
    } else if (strcmp(who, "bob") == 0) {
        natsOptions_SetUserInfo(o, "bob", env("NI_BOB_TOKEN"));
    } else if (strcmp(who, "carol") == 0) {
        natsOptions_SetUserInfo(o, "carol", env("NI_CAROL_TOKEN"));
    }
    return o;
}

bool ni_connect_opts(natsOptions *o, natsConnection **nc) {
    if (o == NULL) {
        return false;
    }
    natsStatus s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    return ni_ok(s, "connect");
}

bool ni_connect(const char *who, natsConnection **nc) {
    return ni_connect_opts(ni_options(who), nc);
}

bool ni_expect(natsSubscription *sub, const char *want) {
    natsMsg *m = NULL;
    if (!ni_ok(natsSubscription_NextMsg(&m, sub, NI_WAIT_MS), "receive")) {
        return false;
    }
    int len = natsMsg_GetDataLength(m);
    bool same = (size_t)len == strlen(want) &&
                memcmp(natsMsg_GetData(m), want, (size_t)len) == 0;
    if (!same) {
        ni_fail("received %.*s, want %s", len, natsMsg_GetData(m), want);
    }
    natsMsg_Destroy(m);
    return same;
}

static const struct {
    const char *name;
    bool (*run)(void);
} scenarios[] = {
    {"tls_ca", ni_tls_ca},
    {"missing_ca", ni_missing_ca},
    {"auth_token", ni_auth_token},
    {"auth_userpass", ni_auth_userpass},
    {"bad_token", ni_bad_token},
    {"wildcards", ni_wildcards},
    {"queue", ni_queue},
    {"headers", ni_headers},
    {"request_reply", ni_request_reply},
    {"no_responders", ni_no_responders},
    {"permissions", ni_permissions},
    {"reconnect", ni_reconnect},
};

int main(int argc, char **argv) {
    size_t n = sizeof(scenarios) / sizeof(scenarios[0]);
    for (size_t i = 0; argc == 2 && i < n; i++) {
        if (strcmp(argv[1], scenarios[i].name) != 0) {
            continue;
        }
        bool ok = scenarios[i].run();
        nats_CloseAndWait(NI_WAIT_MS);
        if (!ok) {
            fprintf(stderr, "FAIL %s against %s: %s\n", argv[1],
                    env("NI_TARGET"), reason);
            return 1;
        }
        printf("ok %s against %s\n", argv[1], env("NI_TARGET"));
        return 0;
    }
    fprintf(stderr, "usage: nats-interop-c SCENARIO\n");
    return 2;
}
