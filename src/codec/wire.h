/*
 * wire.h — big-endian integer load/store helpers (codec layer), inline so
 * the frame decoders and encoders compile to plain loads, byte swaps and
 * stores. Callers check bounds first; these never do.
 */
#ifndef RIFT_CODEC_WIRE_H
#define RIFT_CODEC_WIRE_H

#include <stdint.h>

static inline uint16_t rift_be16_load(const uint8_t *p) {
    return (uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static inline uint32_t rift_be32_load(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static inline uint64_t rift_be64_load(const uint8_t *p) {
    return (uint64_t)rift_be32_load(p) << 32 | (uint64_t)rift_be32_load(p + 4);
}

static inline void rift_be16_store(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void rift_be32_store(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void rift_be64_store(uint8_t *p, uint64_t v) {
    rift_be32_store(p, (uint32_t)(v >> 32));
    rift_be32_store(p + 4, (uint32_t)v);
}

#endif /* RIFT_CODEC_WIRE_H */
