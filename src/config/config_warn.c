/*
 * config_warn.c — warnings about a valid configuration (config layer):
 * grants the protocol allows but advises against. See config.h.
 */
#include "config/config.h"

#include "subject/subject.h"

#include <stdio.h>
#include <string.h>

/* A reply subject as the server generates them (§2.6: _INBOX. and 32 hex
 * digits): a grant that matches it matches every identity's. */
static const char sample_inbox[] = "_INBOX.0123456789abcdef0123456789abcdef";

size_t rift_config_warn(const rift_config *cfg,
                        void (*emit)(void *ud, const char *text), void *ud) {
    const rift_config_messaging *m = &cfg->messaging;
    size_t n = 0;
    for (size_t i = 0; i < m->n_principals; i++) {
        const rift_config_principal *p = &m->principals[i];
        if (p->control) {
            continue; /* an operator sees everything by design */
        }
        for (size_t k = 0; k < p->n_subscribe; k++) {
            const char *g = p->subscribe[k];
            if (!rift_subject_matches(g, strlen(g), sample_inbox,
                                      sizeof(sample_inbox) - 1)) {
                continue;
            }
            char text[1024];
            snprintf(text, sizeof(text),
                     "principal \"%s\": subscribe grant \"%s\" covers every "
                     "_INBOX reply subject, so it can read the replies meant "
                     "for other identities (control and status answers "
                     "included); grant a private namespace such as "
                     "\"_INBOX.%s.>\" instead%s",
                     p->name, g, p->name,
                     strcmp(g, ">") == 0
                         ? ". Note that without control = true subscribing "
                           "to \">\" itself is refused (it covers "
                           "rift.control): subscribe to narrower patterns"
                         : "");
            emit(ud, text);
            n++;
            break;
        }
    }
    return n;
}
