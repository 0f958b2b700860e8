/*
 * Base64 as the formats around backtraces use it: Swift writes the standard
 * alphabet without padding, libwebsockets pads with '='. Readers accept both
 * alphabets (standard and URL-safe) and optional padding.
 */
#ifndef BTPACK_BASE64_H
#define BTPACK_BASE64_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    BTP_B64_PAD = 1u << 0,        /* encode: append '=' padding */
    BTP_B64_SKIP_SPACE = 1u << 1  /* decode: ignore ASCII white space anywhere */
};

/* Characters needed to encode n bytes (with padding; without is <= this). */
#define BTP_BASE64_ENCODED_LEN(n) ((((size_t)(n) + 2) / 3) * 4)
/* Bytes decoding n characters can give at most. */
#define BTP_BASE64_DECODED_MAX(n) ((((size_t)(n) + 3) / 4) * 3)

/*
 * Encode in[0..n) as base64 into out[0..cap); no NUL is written.
 * *out_len receives the characters written. BTP_E_BUFFER_TOO_SMALL if cap
 * is short (nothing is written past cap). Async-signal-safe.
 */
BTP_API btp_status btp_base64_encode(const void *in, size_t n, char *out, size_t cap,
                                     unsigned flags, size_t *out_len);

/*
 * Decode text[0..n) into out[0..cap). Accepts '+' '/' and '-' '_', stops at
 * the first '=' (only '=' may follow it). A final group of 1 character or a
 * character outside the alphabets is
 * BTP_E_BAD_BASE64 with *err_offset (may be NULL) set to the character's
 * index (leftover bits of a final partial group are ignored, as the
 * reference decoders do). BTP_E_BUFFER_TOO_SMALL if cap is short.
 */
BTP_API btp_status btp_base64_decode(const char *text, size_t n, void *out, size_t cap,
                                     unsigned flags, size_t *out_len, size_t *err_offset);

#ifdef __cplusplus
}
#endif

#endif
