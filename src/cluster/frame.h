/*
 * frame.h — what one rift message looks like on the backbone (cluster
 * layer; docs/cluster.md, "On the backbone"): the NATS payload is a small
 * frame naming the origin node and the NATS header block the message
 * carries, then the rift payload. One plain NATS publish per message, no
 * NATS headers: the backbone is riftd's own, and a frame costs a few
 * memcpy where NATS headers cost libnats a map per message each way.
 */
#ifndef RIFT_CLUSTER_FRAME_H
#define RIFT_CLUSTER_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RIFT_FRAME_VERSION    1
#define RIFT_FRAME_ORIGIN_MAX 127
/* version, origin length, header length (u32, big-endian) */
#define RIFT_FRAME_FIXED 6

/* rift_frame_size: the frame's length for these parts, payload included. */
static inline size_t rift_frame_size(size_t origin_len, size_t hlen,
                                     size_t plen) {
    return RIFT_FRAME_FIXED + origin_len + hlen + plen;
}

/*
 * rift_frame_put writes the frame into |out| (rift_frame_size bytes) and
 * returns its length. The caller keeps origin_len in 1..RIFT_FRAME_ORIGIN_MAX
 * and hlen below 4 GiB.
 */
size_t rift_frame_put(uint8_t *out, const char *origin, size_t origin_len,
                      const uint8_t *hdr, size_t hlen, const uint8_t *payload,
                      size_t plen);

/* A frame read back: pointers into the buffer given to rift_frame_get. */
typedef struct rift_frame {
    const char *origin;
    size_t origin_len;
    const uint8_t *hdr; /* NULL when hlen is 0 */
    size_t hlen;
    const uint8_t *payload;
    size_t plen;
} rift_frame;

/*
 * rift_frame_get parses |len| bytes from another node. False for anything
 * that is not a well-formed frame of this version: an empty or oversized
 * origin, lengths past the end, a header block that does not start with
 * "NATS/1.0" and end with an empty line.
 */
bool rift_frame_get(const uint8_t *buf, size_t len, rift_frame *f);

#endif /* RIFT_CLUSTER_FRAME_H */
