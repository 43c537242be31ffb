/*
 * msg_ext.h — a front end's own block in a message (broker layer): opaque
 * bytes stored in the message's allocation just before the payload. The
 * NATS listener keeps a message's headers and its origin there
 * (src/nats/); the broker routes the message as any other, and protocol v1,
 * Lua and in-process subscribers see only the payload
 * (rift_msg_payload), never the block.
 */
#ifndef RIFT_BROKER_MSG_EXT_H
#define RIFT_BROKER_MSG_EXT_H

#include "rift/broker.h"

/*
 * The block's layout, shared by the NATS listener and the cluster bridge:
 * an origin of RIFT_MSG_EXT_ORIGIN bytes (the publishing connection's id
 * in the NATS listener; all zero for a message from the backbone, which
 * no local connection published) and then a NATS header block
 * ("NATS/1.0\r\n...\r\n\r\n") or nothing. The bridge carries only the
 * header block to other nodes (docs/cluster.md, "Headers").
 */
#define RIFT_MSG_EXT_ORIGIN 8

/*
 * rift_msg_new_ext is rift_msg_new with |ext_len| bytes of |ext| kept
 * before the payload (at most 4 GiB). Errors: RIFT_ERR_NOMEM,
 * RIFT_ERR_INVALID_ARGUMENT.
 */
int rift_msg_new_ext(rift_msg **pmsg, const char *subject, size_t subject_len,
                     const char *reply, size_t reply_len, const uint8_t *ext,
                     size_t ext_len, const uint8_t *payload,
                     size_t payload_len);

/*
 * rift_broker_publish_ext is rift_broker_publish for a message that carries
 * the block |ext| then |ext2| (either may be empty; together at most
 * 4 GiB) before the payload. Like rift_broker_publish it builds the message
 * only when a subscription matches, so a publication nobody receives costs
 * no allocation and no copy.
 */
int rift_broker_publish_ext(rift_broker *b, const char *subject,
                            size_t subject_len, const char *reply,
                            size_t reply_len, const uint8_t *ext,
                            size_t ext_len, const uint8_t *ext2,
                            size_t ext2_len, const uint8_t *payload,
                            size_t payload_len, rift_publish_report *report,
                            rift_error *err);

/* rift_msg_ext returns the block and its length, or NULL (*len = 0) for a
 * message made without one. */
const uint8_t *rift_msg_ext(const rift_msg *msg, size_t *len);

#endif /* RIFT_BROKER_MSG_EXT_H */
