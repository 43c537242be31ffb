/*
 * frame.c — the backbone frame (cluster layer; see frame.h). Input comes
 * from the network and is checked byte by byte, never trusted.
 */
#include "cluster/frame.h"

#include <string.h>

#define HDR_LINE "NATS/1.0"
#define HDR_END  "\r\n\r\n"

size_t rift_frame_put(uint8_t *out, const char *origin, size_t origin_len,
                      const uint8_t *hdr, size_t hlen, const uint8_t *payload,
                      size_t plen) {
    uint8_t *p = out;
    *p++ = RIFT_FRAME_VERSION;
    *p++ = (uint8_t)origin_len;
    memcpy(p, origin, origin_len);
    p += origin_len;
    uint32_t h = (uint32_t)hlen;
    *p++ = (uint8_t)(h >> 24);
    *p++ = (uint8_t)(h >> 16);
    *p++ = (uint8_t)(h >> 8);
    *p++ = (uint8_t)h;
    if (hlen > 0) {
        memcpy(p, hdr, hlen);
        p += hlen;
    }
    if (plen > 0) {
        memcpy(p, payload, plen);
        p += plen;
    }
    return (size_t)(p - out);
}

bool rift_frame_get(const uint8_t *buf, size_t len, rift_frame *f) {
    if (len < RIFT_FRAME_FIXED || buf[0] != RIFT_FRAME_VERSION) {
        return false;
    }
    size_t olen = buf[1];
    if (olen == 0 || olen > RIFT_FRAME_ORIGIN_MAX ||
        len < RIFT_FRAME_FIXED + olen) {
        return false;
    }
    const uint8_t *p = buf + 2 + olen;
    size_t hlen = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 |
                  (size_t)p[3];
    p += 4;
    size_t rest = len - RIFT_FRAME_FIXED - olen;
    if (hlen > rest) {
        return false;
    }
    /* The block goes verbatim into HMSG to NATS clients: at least the
     * version line and the terminating empty line. */
    size_t min = sizeof(HDR_LINE) - 1 + sizeof(HDR_END) - 1;
    if (hlen > 0 &&
        (hlen < min || memcmp(p, HDR_LINE, sizeof(HDR_LINE) - 1) != 0 ||
         memcmp(p + hlen - 4, HDR_END, 4) != 0)) {
        return false;
    }
    f->origin = (const char *)buf + 2;
    f->origin_len = olen;
    f->hdr = hlen > 0 ? p : NULL;
    f->hlen = hlen;
    f->payload = p + hlen;
    f->plen = rest - hlen;
    return true;
}
