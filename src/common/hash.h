/*
 * hash.h — a seeded byte-string hash (common layer): a seeded 64-bit
 * multiply/rotate mix, 8 bytes per step, used for subject tokens in the
 * trie, the match cache and queue-group names.
 *
 * The seed is drawn from the CSPRNG per broker so that remote clients, who
 * choose subjects, cannot precompute colliding tokens. It is not a
 * cryptographic MAC; it only makes collision flooding impractical.
 */
#ifndef RIFT_COMMON_HASH_H
#define RIFT_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RIFT_HASH_K1 0x9E3779B97F4A7C15ULL
#define RIFT_HASH_K2 0xBF58476D1CE4E5B9ULL
#define RIFT_HASH_K3 0x94D049BB133111EBULL

static inline uint64_t rift_hash_rotl(uint64_t x, unsigned r) {
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t rift_hash_bytes(const void *data, size_t len,
                                       uint64_t seed) {
    const uint8_t *p = data;
    uint64_t h = seed ^ ((uint64_t)len * RIFT_HASH_K1);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = rift_hash_rotl((h ^ w) * RIFT_HASH_K2, 31);
        p += 8;
        len -= 8;
    }
    /* Tail of 0..7 bytes, assembled without reading past the end. */
    uint64_t w = 0;
    if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + len - 4, 4);
        w = ((uint64_t)b << 32) | a;
    } else if (len > 0) {
        w = ((uint64_t)p[0] << 16) | ((uint64_t)p[len / 2] << 8) | p[len - 1];
    }
    h = (h ^ w ^ 0xA5) * RIFT_HASH_K3;
    h ^= h >> 32;
    h *= RIFT_HASH_K1;
    h ^= h >> 29;
    return h;
}

#endif /* RIFT_COMMON_HASH_H */
