/*
 * libwebsockets compressed backtraces: the `~m#` bitstream and `~b#` lines.
 *
 * The wire format as we read and write it is specified in spec/lws.md. In
 * short: a blob is an MSB-first bitstream (depth, one literal or delta per
 * frame, the allocation size), zero-padded to a byte, then a 16-bit
 * big-endian length that counts the whole blob. Every field of nominal width
 * w takes w+1 bits: libwebsockets writes one extra bit after each field
 * (spec/lws.md says what it holds). A `~m#` line is "~m#" + base64 of the
 * blob; a `~b#` line is libwebsockets' decode tool's text form.
 *
 * Word sizes are 32 or 64 bits (the hosts libwebsockets runs on); values wrap
 * at the word size. Frames decoded from the format are return addresses
 * (BTP_FRAME_RA): the format stores no frame kinds.
 *
 * All functions are reentrant and keep no state outside their arguments
 * (but that the encoder, on x86-64, asks the processor once whether it has
 * AVX2 and keeps the answer); none allocates. The encoder and the two
 * formatters are async-signal-safe.
 */
#ifndef BTPACK_LWS_H
#define BTPACK_LWS_H

#include <btpack/btpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The depth field has 5 bits: a record holds 0..31 frames. */
#define BTP_LWS_MAX_FRAMES 31
/* Largest blob any encoder produces: 6 bits of depth, 31 deltas of at most
 * 79 bits, a size of at most 71 bits, padding, 2 bytes of trailer. Parsing
 * refuses longer payloads (see btp_lws_m_parse). */
#define BTP_LWS_BLOB_MAX 320
/* Characters of the longest `~m#` line (lead-in + padded base64), no NUL. */
#define BTP_LWS_M_LINE_MAX (3 + BTP_BASE64_ENCODED_LEN(BTP_LWS_BLOB_MAX))
/* Characters of a `~b#` line with n frames, no NUL:
 * "~b#size: " + 20 digits + ", " + n * ("0x" + 16 digits + " "). */
#define BTP_LWS_B_LINE_MAX(n) ((size_t)31 + (size_t)19 * (size_t)(n))

/* Bit 31 of btp_lws_info.suspect: the allocation size is suspect. Bits
 * 0..30 are the frames. */
#define BTP_LWS_SUSPECT_SIZE (1u << 31)

/* What a decoder or parser learned about a record. */
typedef struct btp_lws_info {
    size_t depth;         /* frames in the record (may exceed what was copied) */
    uint64_t alloc_size;
    size_t bits;          /* bits the fields used, before padding (decode only) */
    size_t error_bit;     /* on a blob error: bit offset of the faulty field from
                           * the start of the blob */
    size_t error_column;  /* on a text error: index of the faulty character */
    /* Values showing libwebsockets' 64-bit truncation signature: its 64-bit
     * encoder keeps only the low 31 bits of values >= 2^31 (spec/lws.md).
     * Bit i: frame i; BTP_LWS_SUSPECT_SIZE: the size. Such values are
     * returned as read, but must not be trusted as addresses. */
    uint32_t suspect;
    /* btp_lws_b_parse with word_bits 32: number of values that the x86_64
     * decode tool had sign-extended and that were folded back to 32 bits
     * (exactly: their low 32 bits are the device's value). */
    unsigned folded;
} btp_lws_info;

/* ------------------------------------------------------------------ */
/* Blob encoder                                                         */
/* ------------------------------------------------------------------ */

enum {
    /* Choose the smallest encoding (best reference and literal/delta by
     * real cost) instead of libwebsockets' own choices. Readable by
     * libwebsockets' decoder all the same. */
    BTP_LWS_ENC_OPTIMAL = 1u << 0,
    /* Accept PC and ASYNC frames as plain addresses (the format cannot say
     * what kind a frame is; they decode as RA). Without it they are
     * BTP_E_UNREPRESENTABLE. */
    BTP_LWS_ENC_ANY_ADDRESS = 1u << 1
};

/*
 * Encode frames[0..n) (innermost first) and alloc_size as a blob into
 * buf[0..cap).
 *
 * Default mode: libwebsockets' choices, byte for byte — for frame i the
 * nearest of frames max(0,i-8)..i-1 (earliest on ties); a delta only if that
 * frame is not frame 0 and sigbits(value) >= sigbits(|delta|) + 5; the extra
 * bit as gcc-built libwebsockets writes it for word_bits. Unlike
 * libwebsockets on 64-bit hosts, values >= 2^31 are written in full. A value
 * with bit 63 set, which no literal can hold, is written as the smallest
 * delta that can express it.
 *
 * word_bits: 32 or 64. flags: BTP_LWS_ENC_*.
 * *len_out (may be NULL) receives the blob's length, or on
 * BTP_E_BUFFER_TOO_SMALL the length needed. *err_frame (may be NULL)
 * receives the index of the frame a frame error is about.
 * Returns:
 *  BTP_OK
 *  BTP_E_INVALID_ARGUMENT  bad word size, NULL with a non-zero count
 *  BTP_E_DEPTH_TOO_LARGE   n > 31
 *  BTP_E_VALUE_TOO_WIDE    a frame or the size does not fit the word
 *  BTP_E_UNREPRESENTABLE   an OMIT frame, a PC/ASYNC frame without
 *                          BTP_LWS_ENC_ANY_ADDRESS, or a 64-bit value with
 *                          bit 63 set that no delta from the 8 frames before
 *                          it can express (frame 0 can only be a literal)
 *  BTP_E_BUFFER_TOO_SMALL  cap is short (BTP_LWS_BLOB_MAX always suffices);
 *                          nothing is written past cap
 * Async-signal-safe: no allocation, no locks, no libc.
 */
BTP_API btp_status btp_lws_encode(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                  unsigned word_bits, unsigned flags, void *buf, size_t cap,
                                  size_t *len_out, size_t *err_frame);

/* ------------------------------------------------------------------ */
/* Blob decoder                                                         */
/* ------------------------------------------------------------------ */

/*
 * Decode one blob (bitstream + 16-bit trailer) from blob[0..len). The extra
 * bit of every field is skipped unread (so blobs from clang-built
 * libwebsockets, which sets it, decode too); bit counts up to 63 are exact;
 * deltas wrap at word_bits (32 or 64). Bits between the size field and the
 * trailer are ignored, as libwebsockets does. Frames come out as
 * BTP_FRAME_RA into out[0..max_frames); info (may be NULL) gets the depth,
 * size, suspect values and, on an error, the bit offset of the faulty field.
 * Returns:
 *  BTP_OK
 *  BTP_E_INVALID_ARGUMENT   bad word size, NULL pointer with non-zero length
 *  BTP_E_LENGTH_MISMATCH    len < 2, or the trailer differs from len
 *  BTP_E_OUT_OF_BITS        a field runs past the bitstream
 *  BTP_E_BAD_REFERENCE      a delta refers to a frame before frame 0
 *  BTP_E_BIT_COUNT_TOO_WIDE a bit count larger than word_bits
 *  BTP_E_LIMIT              the record holds more than max_frames frames;
 *                           the first max_frames are in out, info is complete
 * On the other errors out holds no result, but may have been written to:
 * the entries before the faulty frame may hold that record's frames (as
 * decoded) and the entries from the faulty frame on anything; nothing is
 * written at or after the record's depth (the top 5 bits of blob[0]) or at
 * or after out[max_frames].
 * On malicious input: reads only blob[0..len), whatever depth, counts,
 * references or trailer say; work is bounded by len; never allocates.
 */
BTP_API btp_status btp_lws_decode(const void *blob, size_t len, unsigned word_bits,
                                  btp_frame *out, size_t max_frames, btp_lws_info *info);

/* ------------------------------------------------------------------ */
/* `~m#` text                                                           */
/* ------------------------------------------------------------------ */

/*
 * Write "~m#" and the padded standard base64 of blob[0..len) into
 * out[0..cap) (no NUL). *out_len gets the characters written.
 * BTP_E_BUFFER_TOO_SMALL if cap is short (nothing past cap is written).
 * Async-signal-safe.
 */
BTP_API btp_status btp_lws_m_format(const void *blob, size_t len, char *out, size_t cap,
                                    size_t *out_len);

/*
 * Read the blob from a `~m#` record text[0..n), as libwebsockets' decode
 * tool does: a "~?#" lead-in is skipped if present; base64 may use either
 * alphabet, white space anywhere, missing padding. Writes blob[0..cap),
 * *blob_len gets its length. Returns BTP_OK, BTP_E_BAD_BASE64
 * (*err_column, may be NULL, gets the character's index in text),
 * BTP_E_LIMIT if the payload is longer than cap bytes (give
 * BTP_LWS_BLOB_MAX: no record is longer), BTP_E_INVALID_ARGUMENT.
 */
BTP_API btp_status btp_lws_m_parse(const char *text, size_t n, void *blob, size_t cap,
                                   size_t *blob_len, size_t *err_column);

/*
 * btp_lws_m_parse then btp_lws_decode: one `~m#` record to frames. A base64
 * error sets info->error_column; blob errors set info->error_bit.
 */
BTP_API btp_status btp_lws_m_decode(const char *text, size_t n, unsigned word_bits,
                                    btp_frame *out, size_t max_frames, btp_lws_info *info);

/*
 * Find the next `~m#` record in text[0..n) at or after *pos (a line of log
 * text: timestamps and other words around records are fine). A record is
 * "~m#" followed by base64 characters (both alphabets and '='), and ends at
 * the first other character, white space included. On BTP_OK
 * [*start, *start + *len) is the record including its lead-in and *pos is
 * moved past it; BTP_END when there is none. O(n), reads only text[0..n).
 */
BTP_API btp_status btp_lws_scan(const char *text, size_t n, size_t *pos, size_t *start,
                                size_t *len);

/* ------------------------------------------------------------------ */
/* `~b#` text                                                           */
/* ------------------------------------------------------------------ */

/*
 * Write the line libwebsockets' decode tool prints, byte for byte:
 * "~b#size: <decimal>, " then "0x<lowercase hex> " per frame (trailing
 * space; no newline, no NUL). Frame kinds are not written. *out_len gets
 * the characters written; BTP_E_BUFFER_TOO_SMALL if cap is short
 * (BTP_LWS_B_LINE_MAX(n) always suffices). Async-signal-safe.
 */
BTP_API btp_status btp_lws_b_format(const btp_frame *frames, size_t n, uint64_t alloc_size,
                                    char *out, size_t cap, size_t *out_len);

/*
 * Parse a `~b#` line text[0..n) (starting at its "~b#"; trailing white
 * space and CR/LF allowed; hex digits in either case) into frames (RA) in
 * out[0..max_frames), the size and depth into *info (required).
 * word_bits 64: values of the form 0xffffffff8xxxxxxx (what libwebsockets'
 * 64-bit tool prints for values it truncated) are kept and flagged in
 * info->suspect. word_bits 32: values the x86_64 tool sign-extended
 * (0xffffffff in the high 32 bits; it sign-extends values >= 2^31 and
 * computes deltas from them modulo 2^64, so the low 32 bits are still the
 * device's value) are folded back to 32 bits and counted in info->folded.
 * Returns BTP_OK, BTP_E_SYNTAX (info->error_column), BTP_E_VALUE_TOO_WIDE (a
 * value beyond the word; error_column), BTP_E_DEPTH_TOO_LARGE (more than 31
 * frames, which the tool never prints; error_column), BTP_E_LIMIT (more
 * than max_frames frames; the first max_frames are in out),
 * BTP_E_INVALID_ARGUMENT. Reads only text[0..n); O(n).
 */
BTP_API btp_status btp_lws_b_parse(const char *text, size_t n, unsigned word_bits,
                                   btp_frame *out, size_t max_frames, btp_lws_info *info);

#ifdef __cplusplus
}
#endif

#endif
