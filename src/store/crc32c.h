/*
 * crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of every segment record and state event (store layer). Uses
 * the SSE4.2 crc32 instruction when the CPU has it (checked once at run
 * time), else slicing-by-8 tables.
 */
#ifndef RIFT_STORE_CRC32C_H
#define RIFT_STORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * rift_crc32c_update extends |crc| (0 to start) over |data|[0..len).
 * Chunked updates give the same value as one call over the concatenation;
 * crc32c("123456789") == 0xE3069283.
 */
uint32_t rift_crc32c_update(uint32_t crc, const void *data, size_t len);

static inline uint32_t rift_crc32c(const void *data, size_t len) {
    return rift_crc32c_update(0, data, len);
}

/* The portable path alone, so tests can compare both. */
uint32_t rift_crc32c_update_sw(uint32_t crc, const void *data, size_t len);

/* rift_crc32c_hw reports whether the hardware path is in use. */
int rift_crc32c_hw(void);

#endif /* RIFT_STORE_CRC32C_H */
