/*
 * libwebsockets' text forms: `~m#` records (base64 of a blob) and the `~b#`
 * lines its decode tool prints; a scanner for records inside log lines.
 */
#include "lws_internal.h"

#include "common/hexdigit.h"

static const char m_lead[3] = {'~', 'm', '#'};

btp_status btp_lws_m_format(const void *blob, size_t len, char *out, size_t cap, size_t *out_len)
{
    size_t b64 = 0;
    if (out_len)
        *out_len = 0;
    if ((len && !blob) || (cap && !out))
        return BTP_E_INVALID_ARGUMENT;
    if (cap < sizeof m_lead)
        return BTP_E_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < sizeof m_lead; i++)
        out[i] = m_lead[i];
    btp_status st = btp_base64_encode(blob, len, out + sizeof m_lead, cap - sizeof m_lead,
                                      BTP_B64_PAD, &b64);
    if (st == BTP_OK && out_len)
        *out_len = sizeof m_lead + b64;
    return st;
}

btp_status btp_lws_m_parse(const char *text, size_t n, void *blob, size_t cap, size_t *blob_len,
                           size_t *err_column)
{
    size_t skip = 0, bad = 0;
    if (blob_len)
        *blob_len = 0;
    if (err_column)
        *err_column = 0;
    if ((n && !text) || (cap && !blob))
        return BTP_E_INVALID_ARGUMENT;
    /* The decode tool's rule: byte 0 '~' and byte 2 '#' mark a lead-in. */
    if (n >= 3 && text[0] == '~' && text[2] == '#')
        skip = 3;
    btp_status st = btp_base64_decode(text + skip, n - skip, blob, cap, BTP_B64_SKIP_SPACE,
                                      blob_len, &bad);
    if (st == BTP_E_BAD_BASE64 && err_column)
        *err_column = skip + bad;
    return st == BTP_E_BUFFER_TOO_SMALL ? BTP_E_LIMIT : st;
}

btp_status btp_lws_m_decode(const char *text, size_t n, unsigned word_bits, btp_frame *out,
                            size_t max_frames, btp_lws_info *info)
{
    uint8_t blob[BTP_LWS_BLOB_MAX];
    size_t len = 0, col = 0;
    btp_status st = btp_lws_m_parse(text, n, blob, sizeof blob, &len, &col);
    if (st != BTP_OK) {
        if (info) {
            *info = (btp_lws_info){0};
            info->error_column = col;
        }
        return st;
    }
    return btp_lws_decode(blob, len, word_bits, out, max_frames, info);
}

/* The characters a record is made of once it started. */
static int record_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_' || c == '=';
}

btp_status btp_lws_scan(const char *text, size_t n, size_t *pos, size_t *start, size_t *len)
{
    if (!pos || !start || !len || (n && !text))
        return BTP_E_INVALID_ARGUMENT;
    for (size_t i = *pos; i + sizeof m_lead <= n; i++) {
        if (text[i] != '~' || text[i + 1] != 'm' || text[i + 2] != '#')
            continue;
        size_t e = i + sizeof m_lead;
        while (e < n && record_char((unsigned char)text[e]))
            e++;
        *start = i;
        *len = e - i;
        *pos = e;
        return BTP_OK;
    }
    *pos = n;
    return BTP_END;
}

/* ---- ~b# ---- */

static const char b_lead[] = "~b#size: ";

/* Append s[0..k) at out[*o], if it fits. */
static int put(char *out, size_t cap, size_t *o, const char *s, size_t k)
{
    if (cap - *o < k)
        return 0;
    for (size_t i = 0; i < k; i++)
        out[(*o)++] = s[i];
    return 1;
}

btp_status btp_lws_b_format(const btp_frame *frames, size_t n, uint64_t alloc_size, char *out,
                            size_t cap, size_t *out_len)
{
    static const char hex[] = "0123456789abcdef";
    char num[24];
    size_t o = 0, k;
    if (out_len)
        *out_len = 0;
    if ((n && !frames) || (cap && !out))
        return BTP_E_INVALID_ARGUMENT;
    if (!put(out, cap, &o, b_lead, sizeof b_lead - 1))
        return BTP_E_BUFFER_TOO_SMALL;
    k = sizeof num;
    num[--k] = ' ';
    num[--k] = ',';
    do {
        num[--k] = (char)('0' + alloc_size % 10);
        alloc_size /= 10;
    } while (alloc_size);
    if (!put(out, cap, &o, num + k, sizeof num - k))
        return BTP_E_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = frames[i].value;
        k = sizeof num;
        num[--k] = ' ';
        do {
            num[--k] = hex[v & 15];
            v >>= 4;
        } while (v);
        num[--k] = 'x';
        num[--k] = '0';
        if (!put(out, cap, &o, num + k, sizeof num - k))
            return BTP_E_BUFFER_TOO_SMALL;
    }
    if (out_len)
        *out_len = o;
    return BTP_OK;
}

static int b_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static btp_status b_fail(btp_lws_info *info, btp_status st, size_t col)
{
    info->error_column = col;
    return st;
}

btp_status btp_lws_b_parse(const char *text, size_t n, unsigned word_bits, btp_frame *out,
                           size_t max_frames, btp_lws_info *info)
{
    if (!info)
        return BTP_E_INVALID_ARGUMENT;
    *info = (btp_lws_info){0};
    if (!lws_word_ok(word_bits) || (n && !text) || (max_frames && !out))
        return BTP_E_INVALID_ARGUMENT;
    size_t i = 0, lead = sizeof b_lead - 1;
    for (; i < lead; i++)
        if (i >= n || text[i] != b_lead[i])
            return b_fail(info, BTP_E_SYNTAX, i);
    /* The size, in decimal. */
    uint64_t size = 0;
    size_t at = i;
    for (; i < n && text[i] >= '0' && text[i] <= '9'; i++) {
        unsigned d = (unsigned)(text[i] - '0');
        if (size > (UINT64_MAX - d) / 10)
            return b_fail(info, BTP_E_VALUE_TOO_WIDE, at);
        size = size * 10 + d;
    }
    if (i == at)
        return b_fail(info, BTP_E_SYNTAX, i);
    if (i >= n || text[i] != ',')
        return b_fail(info, BTP_E_SYNTAX, i);
    i++;
    const uint64_t mask = btp_word_mask(word_bits);
    if (size > mask) {
        /* The x86_64 tool prints a 32-bit device's values >= 2^31
         * sign-extended and computes deltas from those modulo 2^64; the
         * low 32 bits are still the device's value. */
        if (word_bits == 32 && (size >> 32) == 0xffffffffu) {
            size &= mask;
            info->folded++;
        } else {
            return b_fail(info, BTP_E_VALUE_TOO_WIDE, at);
        }
    }
    if (word_bits == 64 && lws_truncated_form(size))
        info->suspect |= BTP_LWS_SUSPECT_SIZE;
    info->alloc_size = size;

    /* Frames: " 0x<hex>" each; white space separates and ends. */
    size_t count = 0;
    for (;;) {
        while (i < n && b_space((unsigned char)text[i]))
            i++;
        if (i >= n)
            break;
        at = i;
        if (n - i < 3 || text[i] != '0' || (text[i + 1] != 'x' && text[i + 1] != 'X') ||
            btp_hex_digit((unsigned char)text[i + 2]) < 0)
            return b_fail(info, BTP_E_SYNTAX, i);
        i += 2;
        uint64_t v = 0;
        for (int d; i < n && (d = btp_hex_digit((unsigned char)text[i])) >= 0; i++) {
            if (v >> 60)
                return b_fail(info, BTP_E_VALUE_TOO_WIDE, at);
            v = v << 4 | (unsigned)d;
        }
        if (i < n && !b_space((unsigned char)text[i]))
            return b_fail(info, BTP_E_SYNTAX, i);
        if (v > mask) {
            if (word_bits == 32 && (v >> 32) == 0xffffffffu) {
                v &= mask;
                info->folded++;
            } else {
                return b_fail(info, BTP_E_VALUE_TOO_WIDE, at);
            }
        }
        /* libwebsockets' tool never prints more than the depth field holds. */
        if (count >= BTP_LWS_MAX_FRAMES)
            return b_fail(info, BTP_E_DEPTH_TOO_LARGE, at);
        if (word_bits == 64 && lws_truncated_form(v))
            info->suspect |= 1u << count;
        if (count < max_frames)
            out[count] = (btp_frame){v, BTP_FRAME_RA};
        count++;
    }
    info->depth = count;
    return count > max_frames ? BTP_E_LIMIT : BTP_OK;
}
