/* Base64 encode/decode (standard and URL-safe alphabets). */
#include <btpack/base64.h>

static const char alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

btp_status btp_base64_encode(const void *in, size_t n, char *out, size_t cap, unsigned flags,
                             size_t *out_len)
{
    const uint8_t *p = in;
    size_t full = n / 3, rest = n % 3;
    size_t need = full * 4 + (rest ? ((flags & BTP_B64_PAD) ? 4 : rest + 1) : 0);
    if (out_len)
        *out_len = 0;
    if ((n && !in) || (cap && !out))
        return BTP_E_INVALID_ARGUMENT;
    if (need > cap)
        return BTP_E_BUFFER_TOO_SMALL;
    size_t o = 0;
    for (size_t i = 0; i < full; i++, p += 3) {
        uint32_t v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (rest) {
        uint32_t v = (uint32_t)p[0] << 16 | (rest == 2 ? (uint32_t)p[1] << 8 : 0);
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        if (rest == 2)
            out[o++] = alphabet[(v >> 6) & 63];
        if (flags & BTP_B64_PAD)
            while (o % 4)
                out[o++] = '=';
    }
    if (out_len)
        *out_len = o;
    return BTP_OK;
}

/* 0..63 for an alphabet character (either alphabet), -1 otherwise. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

btp_status btp_base64_decode(const char *text, size_t n, void *out, size_t cap, unsigned flags,
                             size_t *out_len, size_t *err_offset)
{
    uint8_t *o = out;
    size_t olen = 0, group = 0, last_char = 0;
    uint32_t acc = 0;
    size_t i;
    if (out_len)
        *out_len = 0;
    if (err_offset)
        *err_offset = 0;
    if ((n && !text) || (cap && !out))
        return BTP_E_INVALID_ARGUMENT;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((flags & BTP_B64_SKIP_SPACE) && is_space(c))
            continue;
        if (c == '=')
            break;
        int v = sextet(c);
        if (v < 0) {
            if (err_offset)
                *err_offset = i;
            return BTP_E_BAD_BASE64;
        }
        last_char = i;
        acc = acc << 6 | (uint32_t)v;
        if (++group == 4) {
            if (olen + 3 > cap)
                return BTP_E_BUFFER_TOO_SMALL;
            o[olen++] = (uint8_t)(acc >> 16);
            o[olen++] = (uint8_t)(acc >> 8);
            o[olen++] = (uint8_t)acc;
            group = 0;
            acc = 0;
        }
    }
    /* After the first '=' only padding (and white space if allowed). */
    for (; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c != '=' && !((flags & BTP_B64_SKIP_SPACE) && is_space(c))) {
            if (err_offset)
                *err_offset = i;
            return BTP_E_BAD_BASE64;
        }
    }
    if (group == 1) {
        if (err_offset)
            *err_offset = last_char;
        return BTP_E_BAD_BASE64;
    }
    if (group) {
        size_t extra = group - 1; /* 2 chars -> 1 byte, 3 chars -> 2 bytes */
        if (olen + extra > cap)
            return BTP_E_BUFFER_TOO_SMALL;
        acc <<= 6 * (4 - group);
        o[olen++] = (uint8_t)(acc >> 16);
        if (extra == 2)
            o[olen++] = (uint8_t)(acc >> 8);
    }
    if (out_len)
        *out_len = olen;
    return BTP_OK;
}
