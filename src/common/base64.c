/*
 * base64.c — padded standard base64 (common layer). See base64.h.
 */
#include "common/base64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void rift_base64_encode(const uint8_t *in, size_t len, char *out) {
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v =
            (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len) {
            v |= (uint32_t)in[i + 1] << 8;
        }
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
}

static int value(char c) {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

bool rift_base64_decode(const char *in, size_t len, uint8_t *out,
                        size_t *outlen) {
    size_t o = 0;
    if (len % 4 != 0) {
        return false;
    }
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
        if (pad == 1 && in[i + 2] == '=') {
            return false; /* "x=y=" */
        }
        int v[4];
        for (int k = 0; k < 4 - pad; k++) {
            if ((v[k] = value(in[i + k])) < 0) {
                return false;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12;
        if (pad < 2) {
            w |= (uint32_t)v[2] << 6;
        }
        if (pad < 1) {
            w |= (uint32_t)v[3];
        }
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2) {
            out[o++] = (uint8_t)(w >> 8);
        }
        if (pad < 1) {
            out[o++] = (uint8_t)w;
        }
    }
    *outlen = o;
    return true;
}
