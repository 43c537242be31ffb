/*
 * mem.c — allocation through an embedder-supplied rift_mem (common layer).
 * NULL means the C library allocator.
 */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

static void *default_malloc(size_t size, void *ud) {
    (void)ud;
    return malloc(size);
}

static void default_free(void *ptr, void *ud) {
    (void)ud;
    free(ptr);
}

static void *default_calloc(size_t nmemb, size_t size, void *ud) {
    (void)ud;
    return calloc(nmemb, size);
}

static void *default_realloc(void *ptr, size_t size, void *ud) {
    (void)ud;
    return realloc(ptr, size);
}

static const rift_mem mem_default = {
    .user_data = NULL,
    .malloc = default_malloc,
    .free = default_free,
    .calloc = default_calloc,
    .realloc = default_realloc,
};

const rift_mem *rift_mem_default(void) {
    return &mem_default;
}

void *rift_malloc(const rift_mem *mem, size_t size) {
    if (mem == NULL) {
        return malloc(size);
    }
    return mem->malloc(size, mem->user_data);
}

void *rift_calloc(const rift_mem *mem, size_t nmemb, size_t size) {
    if (mem == NULL) {
        return calloc(nmemb, size);
    }
    return mem->calloc(nmemb, size, mem->user_data);
}

void *rift_realloc(const rift_mem *mem, void *ptr, size_t size) {
    if (mem == NULL) {
        return realloc(ptr, size);
    }
    return mem->realloc(ptr, size, mem->user_data);
}

void rift_free(const rift_mem *mem, void *ptr) {
    if (mem == NULL) {
        free(ptr);
        return;
    }
    mem->free(ptr, mem->user_data);
}

char *rift_strndup(const rift_mem *mem, const char *s, size_t len) {
    char *p = rift_malloc(mem, len + 1);
    if (p == NULL) {
        return NULL;
    }
    if (len > 0) {
        memcpy(p, s, len);
    }
    p[len] = '\0';
    return p;
}
