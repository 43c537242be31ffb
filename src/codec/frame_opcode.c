/*
 * frame_opcode.c — opcode names and direction checks (codec layer), §2.4.
 *
 * Direction is a table lookup: bit 0 means "sent by the client", bit 1
 * "sent by the server", bit 2 "valid on an operation stream".
 */
#include "codec/frame.h"

enum {
    FROM_CLIENT = 1,
    FROM_SERVER = 2,
    OPERATION = 4,
};

static const uint8_t op_flags[RIFT_OP_MAX + 1] = {
    [RIFT_OP_AUTH] = FROM_CLIENT,
    [RIFT_OP_OK] = FROM_SERVER,
    [RIFT_OP_ERROR] = FROM_SERVER,
    [RIFT_OP_PUBLISH] = FROM_CLIENT | OPERATION,
    [RIFT_OP_PUBLISH_ACK] = FROM_CLIENT | OPERATION,
    [RIFT_OP_SUBSCRIBE] = FROM_CLIENT | OPERATION,
    [RIFT_OP_MESSAGE] = FROM_SERVER,
    [RIFT_OP_PING] = FROM_CLIENT | OPERATION,
    [RIFT_OP_REQUEST] = FROM_CLIENT | OPERATION,
    [RIFT_OP_STREAM_PUBLISH] = FROM_CLIENT | OPERATION,
    [RIFT_OP_STORED] = FROM_SERVER,
    [RIFT_OP_CONSUMER_OPEN] = FROM_CLIENT | OPERATION,
    [RIFT_OP_CONSUMER_FETCH] = FROM_CLIENT | OPERATION,
    [RIFT_OP_DELIVERY] = FROM_SERVER,
    [RIFT_OP_ACK] = FROM_CLIENT | OPERATION,
};

static const char *const op_names[RIFT_OP_MAX + 1] = {
    [RIFT_OP_AUTH] = "AUTH",
    [RIFT_OP_OK] = "OK",
    [RIFT_OP_ERROR] = "ERROR",
    [RIFT_OP_PUBLISH] = "PUBLISH",
    [RIFT_OP_PUBLISH_ACK] = "PUBLISH_ACK",
    [RIFT_OP_SUBSCRIBE] = "SUBSCRIBE",
    [RIFT_OP_MESSAGE] = "MESSAGE",
    [RIFT_OP_PING] = "PING",
    [RIFT_OP_REQUEST] = "REQUEST",
    [RIFT_OP_STREAM_PUBLISH] = "STREAM_PUBLISH",
    [RIFT_OP_STORED] = "STORED",
    [RIFT_OP_CONSUMER_OPEN] = "CONSUMER_OPEN",
    [RIFT_OP_CONSUMER_FETCH] = "CONSUMER_FETCH",
    [RIFT_OP_DELIVERY] = "DELIVERY",
    [RIFT_OP_ACK] = "ACK",
};

static uint8_t flags_of(uint8_t opcode) {
    return opcode <= RIFT_OP_MAX ? op_flags[opcode] : 0;
}

const char *rift_opcode_name(uint8_t opcode) {
    if (opcode == 0 || opcode > RIFT_OP_MAX) {
        return "UNKNOWN";
    }
    return op_names[opcode];
}

bool rift_opcode_known(uint8_t opcode) {
    return flags_of(opcode) != 0;
}

int rift_frame_check_opcode(uint8_t opcode, rift_frame_dir from,
                            rift_error *err) {
    unsigned want = from == RIFT_FRAME_FROM_CLIENT ? FROM_CLIENT : FROM_SERVER;
    if ((flags_of(opcode) & want) == 0) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "%s",
                              RIFT_FRAME_ERR_OPCODE);
    }
    return 0;
}

int rift_frame_check_operation(uint8_t opcode, rift_error *err) {
    if ((flags_of(opcode) & OPERATION) == 0) {
        return rift_error_set(err, RIFT_ERR_PROTOCOL, "%s",
                              RIFT_FRAME_ERR_OPCODE);
    }
    return 0;
}
