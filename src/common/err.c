/*
 * err.c — the error table (common layer): names, texts and fatality of
 * every RIFT_ERR_* code, generated from the RIFT_ERRORS X-macro, plus the
 * rift_error detail record helpers.
 */
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *rift_strerror(int code) {
    if (code == 0) {
        return "success";
    }
    switch (code) {
#define RIFT_ERR_TEXT_(name, value, text)                                      \
 case (value):                                                                 \
  return (text);
        RIFT_ERRORS(RIFT_ERR_TEXT_)
#undef RIFT_ERR_TEXT_
    default:
        break;
    }
    if (code < 0 && code > -1000) {
        return strerror(-code);
    }
    return "unknown error";
}

const char *rift_err_name(int code) {
    if (code == 0) {
        return "RIFT_OK";
    }
    switch (code) {
#define RIFT_ERR_NAME_(name, value, text)                                      \
 case (value):                                                                 \
  return "RIFT_ERR_" #name;
        RIFT_ERRORS(RIFT_ERR_NAME_)
#undef RIFT_ERR_NAME_
    default:
        break;
    }
    if (code < 0 && code > -1000) {
        const char *n = strerrorname_np(-code);
        return n ? n : "UNKNOWN";
    }
    return "UNKNOWN";
}

int rift_err_is_fatal(int code) {
    return code <= RIFT_ERR_FATAL && code > -2000;
}

uint16_t rift_error_wire_code(int code) {
    return code == RIFT_ERR_PERMISSION ? 1 : 2;
}

size_t rift_text_cut(const char *s, size_t len, size_t max) {
    if (len <= max) {
        return len;
    }
    /* Step back over continuation bytes so the cut lands before a lead
     * byte: the kept prefix then ends with a whole character. */
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) {
        cut--;
    }
    return cut;
}

int rift_error_setv(rift_error *err, int code, const char *fmt, va_list ap) {
    if (err == NULL) {
        return code;
    }
    char tmp[RIFT_ERROR_TEXT_MAX * 2 + 64];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len >= sizeof(tmp)) {
        len = sizeof(tmp) - 1;
    }
    len = rift_text_cut(tmp, len, RIFT_ERROR_TEXT_MAX);
    memcpy(err->text, tmp, len);
    err->text[len] = '\0';
    err->code = code;
    return code;
}

int rift_error_set(rift_error *err, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rift_error_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void rift_error_copy(rift_error *dst, const rift_error *src) {
    if (dst == NULL || src == NULL || dst == src) {
        return;
    }
    dst->code = src->code;
    size_t len = strnlen(src->text, RIFT_ERROR_TEXT_MAX);
    memcpy(dst->text, src->text, len);
    dst->text[len] = '\0';
}

const char *rift_version(void) {
    return RIFT_VERSION;
}
