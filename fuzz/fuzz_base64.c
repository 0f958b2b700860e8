/*
 * Fuzz target: base64 decoding (and encoding).
 *
 * Input: byte 0 holds flags (bit 0: decode with BTP_B64_SKIP_SPACE, bit 1:
 * encode with BTP_B64_PAD); the rest is taken both as text to decode and as
 * bytes to encode. Properties, with every buffer ending at a guard page:
 *  - decoding into BTP_BASE64_DECODED_MAX(n) bytes gives the status,
 *    length and error offset of a plain model of the documented rules
 *    (either alphabet, stop at '=' and allow only '=' after it, optional
 *    white space, a final group of one character is an error);
 *  - a successful decode fits a buffer of exactly its length, and one byte
 *    less gives BTP_E_BUFFER_TOO_SMALL;
 *  - encoding the decoded bytes and decoding that gives them back;
 *  - encoding any bytes needs exactly the documented length (with padding,
 *    BTP_BASE64_ENCODED_LEN), one character less is BTP_E_BUFFER_TOO_SMALL,
 *    and decoding gives the bytes back.
 */
#include "fuzz.h"
#include "guard.h"

#include <btpack/base64.h>
#include <string.h>

static fuzz_guard text_guard, out_guard, enc_guard, back_guard;

static int in_alphabet(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_';
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The decoder's contract as a plain model (the oracle): status, decoded
 * length and error offset. */
static btp_status model_decode(const char *text, size_t n, unsigned flags, size_t *len,
                               size_t *err)
{
    int skip = (flags & BTP_B64_SKIP_SPACE) != 0;
    const char *eq = memchr(text, '=', n);
    size_t data_end = eq ? (size_t)(eq - text) : n, chars = 0, last = 0;
    *len = *err = 0;
    /* Before the first '=': alphabet characters (and spaces if skipped). */
    for (size_t i = 0; i < data_end; i++) {
        if (in_alphabet((unsigned char)text[i])) {
            chars++;
            last = i;
        } else if (!(skip && is_space((unsigned char)text[i]))) {
            *err = i;
            return BTP_E_BAD_BASE64;
        }
    }
    /* From it on: only '=' (and spaces if skipped). */
    for (size_t i = data_end; i < n; i++) {
        if (text[i] != '=' && !(skip && is_space((unsigned char)text[i]))) {
            *err = i;
            return BTP_E_BAD_BASE64;
        }
    }
    if (chars % 4 == 1) {
        *err = last;
        return BTP_E_BAD_BASE64;
    }
    *len = chars / 4 * 3 + (chars % 4 ? chars % 4 - 1 : 0);
    return BTP_OK;
}

/* Encode bytes[0..n) and check the length contract and the way back. */
static void round_trip(const uint8_t *bytes, size_t n, unsigned enc_flags)
{
    size_t full = n / 3 * 4, rest = n % 3;
    size_t want = full + (rest ? ((enc_flags & BTP_B64_PAD) ? 4 : rest + 1) : 0);
    FUZZ_CHECK(want <= BTP_BASE64_ENCODED_LEN(n), "bound");
    char *text = (char *)fuzz_guard_buf(&enc_guard, want);
    size_t len;
    btp_status st = btp_base64_encode(bytes, n, text, want, enc_flags, &len);
    FUZZ_CHECK(st == BTP_OK && len == want, "encode %zu bytes: %d, %zu chars", n, st, len);
    if (want) {
        char *small = (char *)fuzz_guard_buf(&back_guard, want - 1);
        st = btp_base64_encode(bytes, n, small, want - 1, enc_flags, &len);
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len == 0, "encode one short: %d", st);
    }
    uint8_t *back = fuzz_guard_buf(&back_guard, n);
    size_t back_len, err;
    st = btp_base64_decode(text, want, back, n, 0, &back_len, &err);
    FUZZ_CHECK(st == BTP_OK && back_len == n && memcmp(back, bytes, n) == 0,
               "decode(encode(x)) != x: %d, %zu bytes", st, back_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned dec_flags = (data[0] & 1) ? BTP_B64_SKIP_SPACE : 0;
    unsigned enc_flags = (data[0] & 2) ? BTP_B64_PAD : 0;
    size_t n = size - 1;
    const char *text = (const char *)fuzz_guard_copy(&text_guard, data + 1, n);

    size_t cap = BTP_BASE64_DECODED_MAX(n);
    uint8_t *out = fuzz_guard_buf(&out_guard, cap);
    size_t len, err;
    btp_status st = btp_base64_decode(text, n, out, cap, dec_flags, &len, &err);
    size_t want_len, want_err;
    btp_status want = model_decode(text, n, dec_flags, &want_len, &want_err);
    FUZZ_CHECK(st == want, "decode status %d, expected %d", st, want);
    if (st == BTP_E_BAD_BASE64) {
        FUZZ_CHECK(err == want_err, "error offset %zu, expected %zu", err, want_err);
        return 0;
    }
    FUZZ_CHECK(len == want_len, "decoded %zu bytes, expected %zu", len, want_len);
    FUZZ_CHECK(st == BTP_OK, "decode status %d", st);
    FUZZ_CHECK(len <= cap, "decoded %zu of max %zu", len, cap);
    FUZZ_CHECK(len <= n / 4 * 3 + 2, "decoded %zu from %zu chars", len, n);

    /* Exactly len bytes are enough, one less is not. */
    uint8_t *exact = fuzz_guard_buf(&back_guard, len);
    size_t len2;
    st = btp_base64_decode(text, n, exact, len, dec_flags, &len2, &err);
    FUZZ_CHECK(st == BTP_OK && len2 == len && memcmp(exact, out, len) == 0,
               "decode into exactly %zu bytes: %d", len, st);
    if (len) {
        uint8_t *small = fuzz_guard_buf(&back_guard, len - 1);
        st = btp_base64_decode(text, n, small, len - 1, dec_flags, &len2, &err);
        FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL, "decode one byte short: %d", st);
    }

    /* The decoded bytes and the raw input both survive encode -> decode.
     * out must be copied first: round_trip reuses back_guard. */
    round_trip(out, len, enc_flags);
    round_trip((const uint8_t *)text, n, enc_flags);
    return 0;
}
