/*
 * name.h — the name rules of Rift v1 (subject layer): identity, consumer and
 * remote queue names, broker queue names, configuration stream names,
 * plugin names, environment-variable names. Pure predicates over
 * length-delimited bytes; no allocation.
 *
 * Reference: docs/protocol-v1.md §2.2 (valid_name), §1.6 (broker queue
 * names), §4.7 (store-local consumer names), §5 (configuration), §7.1
 * (plugin names).
 */
#ifndef RIFT_SUBJECT_NAME_H
#define RIFT_SUBJECT_NAME_H

#include "common/common.h"

/* Longest valid_name (§2.2) and configuration stream name (§5). */
#define RIFT_NAME_MAX 96
/* Longest broker queue name (§1.6), plugin name (§7.1), store consumer. */
#define RIFT_LONG_NAME_MAX 128

/*
 * rift_name_valid is the wire's valid_name: 1–96 bytes of ASCII letters,
 * digits, '_', '-' and '.'. Used for identity names, remote consumer names,
 * remote queue groups and stream names at server start.
 */
bool rift_name_valid(const char *s, size_t len);

/*
 * rift_queue_name_valid is the broker's queue-group rule (also the Lua
 * configuration's `queue`): 1–128 ASCII graphic bytes (0x21–0x7E) other than
 * '*' and '>'.
 */
bool rift_queue_name_valid(const char *s, size_t len);

/*
 * rift_config_stream_name_valid: stream names in the Lua configuration,
 * 1–96 bytes of ASCII letters, digits, '_' and '-' (no dot, unlike the wire).
 */
bool rift_config_stream_name_valid(const char *s, size_t len);

/* rift_plugin_name_valid: 1–128 bytes of ASCII letters, digits, '_', '-'. */
bool rift_plugin_name_valid(const char *s, size_t len);

/*
 * rift_env_name_valid: an environment-variable name for `token_env`: first
 * byte an ASCII letter or '_', the rest ASCII letters, digits or '_'.
 */
bool rift_env_name_valid(const char *s, size_t len);

/*
 * rift_store_consumer_name_valid is the durable store's local consumer-name
 * rule (§4.7): 1–128 bytes of well-formed UTF-8 without Unicode whitespace
 * or control characters.
 */
bool rift_store_consumer_name_valid(const char *s, size_t len);

#endif /* RIFT_SUBJECT_NAME_H */
