/*
 * identity.c — identities and their access-control checks (subject layer):
 * lifecycle of rift_identity and the can_publish / can_subscribe rules of
 * docs/protocol-v1.md §3.3–3.4. See acl.h.
 */
#include "subject/acl.h"

#include <gnutls/gnutls.h>
#include <string.h>

/* ---- Lifecycle ---- */

void rift_identity_init(rift_identity *id, const rift_mem *mem) {
    memset(id, 0, sizeof(*id));
    id->mem = mem;
}

static void grants_free(const rift_mem *mem, rift_grant *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rift_free(mem, g[i].pattern);
    }
    rift_free(mem, g);
}

static void token_drop(rift_identity *id) {
    if (id->token != NULL) {
        /* Tokens are secrets: wipe before handing the memory back. */
        gnutls_memset(id->token, 0, id->token_len);
        rift_free(id->mem, id->token);
    }
    id->token = NULL;
    id->token_len = 0;
}

void rift_identity_free(rift_identity *id) {
    if (id == NULL) {
        return;
    }
    token_drop(id);
    rift_free(id->mem, id->name);
    grants_free(id->mem, id->publish, id->npublish);
    grants_free(id->mem, id->subscribe, id->nsubscribe);
    const rift_mem *mem = id->mem;
    rift_identity_init(id, mem);
}

int rift_identity_set_name(rift_identity *id, const char *name, size_t len) {
    char *copy = rift_strndup(id->mem, name, len);
    if (copy == NULL) {
        return RIFT_ERR_NOMEM;
    }
    rift_free(id->mem, id->name);
    id->name = copy;
    id->name_len = len;
    return 0;
}

int rift_identity_set_token(rift_identity *id, const char *token, size_t len) {
    char *copy = rift_strndup(id->mem, token, len);
    if (copy == NULL) {
        return RIFT_ERR_NOMEM;
    }
    token_drop(id);
    id->token = copy;
    id->token_len = len;
    return 0;
}

static int grant_append(const rift_mem *mem, rift_grant **list, size_t *n,
                        const char *pattern, size_t len) {
    char *copy = rift_strndup(mem, pattern, len);
    if (copy == NULL) {
        return RIFT_ERR_NOMEM;
    }
    /* Grow one slot at a time: grants are few and set once at start-up. */
    rift_grant *grown = rift_realloc(mem, *list, (*n + 1) * sizeof(**list));
    if (grown == NULL) {
        rift_free(mem, copy);
        return RIFT_ERR_NOMEM;
    }
    grown[*n].pattern = copy;
    grown[*n].len = len;
    *list = grown;
    (*n)++;
    return 0;
}

int rift_identity_allow_publish(rift_identity *id, const char *pattern,
                                size_t len) {
    return grant_append(id->mem, &id->publish, &id->npublish, pattern, len);
}

int rift_identity_allow_subscribe(rift_identity *id, const char *pattern,
                                  size_t len) {
    return grant_append(id->mem, &id->subscribe, &id->nsubscribe, pattern, len);
}

int rift_identity_copy(rift_identity *dst, const rift_identity *src,
                       const rift_mem *mem, bool with_token) {
    rift_identity_init(dst, mem);
    dst->control = src->control;
    if (src->name != NULL &&
        rift_identity_set_name(dst, src->name, src->name_len) != 0) {
        goto fail;
    }
    if (with_token && src->token != NULL &&
        rift_identity_set_token(dst, src->token, src->token_len) != 0) {
        goto fail;
    }
    for (size_t i = 0; i < src->npublish; i++) {
        if (rift_identity_allow_publish(dst, src->publish[i].pattern,
                                        src->publish[i].len) != 0) {
            goto fail;
        }
    }
    for (size_t i = 0; i < src->nsubscribe; i++) {
        if (rift_identity_allow_subscribe(dst, src->subscribe[i].pattern,
                                          src->subscribe[i].len) != 0) {
            goto fail;
        }
    }
    return 0;
fail:
    rift_identity_free(dst);
    return RIFT_ERR_NOMEM;
}

/* ---- Access control ---- */

#define LIT(s) (s), (sizeof(s) - 1)

/*
 * reserved: |subject| equals |prefix| or continues it with a dot. So
 * "rift.eventsX" is not reserved, while "rift.events" and "rift.events.a"
 * are.
 */
static inline bool reserved(const char *subject, size_t len, const char *prefix,
                            size_t plen) {
    return len >= plen && memcmp(subject, prefix, plen) == 0 &&
           (len == plen || subject[plen] == '.');
}

static bool any_covers(const rift_grant *g, size_t n, const char *s,
                       size_t len) {
    for (size_t i = 0; i < n; i++) {
        if (rift_subject_covers(g[i].pattern, g[i].len, s, len)) {
            return true;
        }
    }
    return false;
}

int rift_identity_can_publish(const rift_identity *id, const char *subject,
                              size_t slen, const char *reply, size_t rlen,
                              rift_error *err) {
    int rc = rift_subject_validate_literal(subject, slen, err);
    if (rc != 0) {
        return rc;
    }
    if (reserved(subject, slen, LIT("rift.events")) ||
        (!id->control && reserved(subject, slen, LIT("rift.control"))) ||
        !any_covers(id->publish, id->npublish, subject, slen)) {
        return rift_error_set(err, RIFT_ERR_PERMISSION,
                              "publication not permitted");
    }
    if (rlen == 0) {
        return 0;
    }
    rc = rift_subject_validate_literal(reply, rlen, err);
    if (rc != 0) {
        return rc;
    }
    static const char inbox[] = "_INBOX.";
    if (rlen < sizeof(inbox) - 1 ||
        memcmp(reply, inbox, sizeof(inbox) - 1) != 0 ||
        !any_covers(id->subscribe, id->nsubscribe, reply, rlen)) {
        return rift_error_set(err, RIFT_ERR_PERMISSION,
                              "reply must be an authorized _INBOX subject");
    }
    return 0;
}

int rift_identity_can_subscribe(const rift_identity *id, const char *pattern,
                                size_t len, rift_error *err) {
    int rc = rift_subject_validate_pattern(pattern, len, err);
    if (rc != 0) {
        return rc;
    }
    /* Without the control flag, anything that could receive a control
     * request is refused: overlapping rift.control.> catches ">", "rift.>",
     * "*.control.>"; covering the bare subject catches "rift.*" and
     * "rift.control" itself. */
    if ((!id->control &&
         (rift_subject_overlaps(pattern, len, LIT("rift.control.>")) ||
          rift_subject_covers(pattern, len, LIT("rift.control")))) ||
        !any_covers(id->subscribe, id->nsubscribe, pattern, len)) {
        return rift_error_set(err, RIFT_ERR_PERMISSION,
                              "subscription not permitted");
    }
    return 0;
}
