/*
 * io.h — input and output helpers of the rift CLI's client commands (tools
 * layer): message bodies from arguments or stdin, number options, message
 * printing, and SIGINT/SIGTERM as a stop request.
 */
#ifndef RIFT_TOOLS_IO_H
#define RIFT_TOOLS_IO_H

#include "rift/client.h"

#include <stdbool.h>
#include <stdio.h>

/*
 * rift_cli_read_data reads a message body: |arg| itself, or all of stdin
 * when |arg| is "-" (binary-safe; at most 1 MiB + 1 bytes are kept, so an
 * oversized body draws the library's "payload exceeds 1 MiB transport
 * limit"). When *owned is set, *pbuf was malloc'ed: free() it.
 * Returns 0, or prints why and returns 1.
 */
int rift_cli_read_data(const char *cmd, const char *arg, uint8_t **pbuf,
                       size_t *plen, bool *owned);

/*
 * rift_cli_parse_u64 parses a decimal number for option |opt|; prints why
 * and returns false when it is not one.
 */
bool rift_cli_parse_u64(const char *cmd, const char *opt, const char *s,
                        uint64_t *out);

/*
 * rift_cli_print_msg writes a received message: "SUBJECT: PAYLOAD\n" or
 * "SUBJECT (reply REPLY): PAYLOAD\n" with the payload's non-printable
 * bytes escaped as \xHH (and '\' as \\), or with |raw| only the payload
 * bytes, unchanged.
 */
void rift_cli_print_msg(FILE *out, const rift_msg *m, bool raw);

/* rift_cli_human_bytes writes |n| bytes with a binary unit: 1536 ->
 * "1.5 KiB" (as `rift status` shows them). */
void rift_cli_human_bytes(long long n, char *out, size_t cap);

/* Longest --sep separator, in bytes. */
#define RIFT_CLI_SEP_MAX 16

/*
 * rift_cli_parse_sep decodes a --sep argument (the separator --raw writes
 * after each payload) into |out|: the text itself with the escapes \n,
 * \r, \t, \0, \\ and \xHH. Prints why and returns false when it is
 * empty, longer than RIFT_CLI_SEP_MAX bytes or has a bad escape.
 */
bool rift_cli_parse_sep(const char *cmd, const char *text,
                        char out[RIFT_CLI_SEP_MAX], size_t *len);

/* rift_cli_print_escaped writes |n| bytes with non-printable ones as
 * \xHH and '\' as \\ (the escaping of rift_cli_print_msg). */
void rift_cli_print_escaped(FILE *out, const uint8_t *p, size_t n);

/* rift_cli_stop_requested is true once SIGINT or SIGTERM arrived (after
 * rift_cli_catch_signals). */
void rift_cli_catch_signals(void);
bool rift_cli_stop_requested(void);

#endif /* RIFT_TOOLS_IO_H */
