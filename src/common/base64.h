/*
 * base64.h — standard base64 (RFC 4648 §4, padded) for binary payloads
 * inside riftd's JSON control answers (common layer; the rift CLI decodes
 * them with the same functions).
 */
#ifndef RIFT_COMMON_BASE64_H
#define RIFT_COMMON_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Characters rift_base64_encode writes for |len| bytes (no NUL). */
#define RIFT_BASE64_LEN(len) ((((len) + 2) / 3) * 4)

/* rift_base64_encode writes RIFT_BASE64_LEN(len) characters plus a NUL
 * into |out|. */
void rift_base64_encode(const uint8_t *in, size_t len, char *out);

/*
 * rift_base64_decode decodes |len| characters of padded base64 into |out|
 * (room for len / 4 * 3 bytes) and stores the byte count in *outlen.
 * Returns false when |in| is not padded base64.
 */
bool rift_base64_decode(const char *in, size_t len, uint8_t *out,
                        size_t *outlen);

#endif /* RIFT_COMMON_BASE64_H */
