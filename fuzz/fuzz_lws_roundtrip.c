/*
 * Fuzz target: lws decode -> encode -> decode, through the text forms too.
 *
 * Input: byte 0 bit 0 chooses the word size (32 or 64); the rest is a blob.
 * When it decodes, the frames and size are encoded again in both modes
 * (libwebsockets' choices and optimal), each into a buffer of exactly the
 * length needed (ending at a guard page; one byte less must fail cleanly),
 * and every re-encoding must:
 *  - decode to the same frames and size;
 *  - survive `~m#` formatting and parsing byte for byte;
 * the optimal one must never be longer than libwebsockets' choice, and the
 * `~b#` line of the frames must parse back to them.
 * The only frames that may refuse to be encoded are 64-bit values with bit
 * 63 set (reachable by a wrapping delta in the input) that no delta from the
 * 8 frames before them can express: BTP_E_UNREPRESENTABLE.
 */
#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#include <btpack/lws.h>
#include <string.h>

static fuzz_guard in_guard, out_guard, text_guard, exact_guard, back_guard;

/* Encode in one mode and check the way back; returns the blob length, or 0
 * when the frames cannot be encoded. */
static size_t reencode(const btp_frame *frames, const btp_lws_info *info, unsigned word_bits,
                       unsigned flags)
{
    size_t need = 0, err_frame = 0;
    btp_status st = btp_lws_encode(frames, info->depth, info->alloc_size, word_bits, flags, NULL,
                                   0, &need, &err_frame);
    if (st == BTP_E_UNREPRESENTABLE) {
        FUZZ_CHECK(word_bits == 64 && err_frame < info->depth &&
                       (frames[err_frame].value >> 63) != 0,
                   "frame %zu unrepresentable", err_frame);
        return 0;
    }
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && need >= 2 && need <= BTP_LWS_BLOB_MAX,
               "size query: %d, need %zu", st, need);
    uint8_t *blob = fuzz_guard_buf(&out_guard, need);
    size_t len;
    st = btp_lws_encode(frames, info->depth, info->alloc_size, word_bits, flags, blob, need,
                        &len, NULL);
    FUZZ_CHECK(st == BTP_OK && len == need, "encode into %zu bytes: %d, %zu", need, st, len);
    uint8_t *small = fuzz_guard_buf(&back_guard, need - 1);
    size_t len2;
    st = btp_lws_encode(frames, info->depth, info->alloc_size, word_bits, flags, small, need - 1,
                        &len2, NULL);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len2 == need, "one byte short: %d, %zu", st,
               len2);

    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info binfo;
    st = btp_lws_decode(blob, len, word_bits, back, BTP_LWS_MAX_FRAMES, &binfo);
    FUZZ_CHECK(st == BTP_OK && binfo.depth == info->depth &&
                   binfo.alloc_size == info->alloc_size && fuzz_frames_equal(back, frames, info->depth),
               "re-encoding decodes differently: %d", st);

    /* ~m# text and back. */
    size_t tcap = BTP_LWS_M_LINE_MAX, tlen;
    char *text = (char *)fuzz_guard_buf(&text_guard, tcap);
    st = btp_lws_m_format(blob, len, text, tcap, &tlen);
    FUZZ_CHECK(st == BTP_OK && tlen <= tcap, "m_format: %d", st);
    const char *exact = (const char *)fuzz_guard_copy(&exact_guard, text, tlen);
    uint8_t *parsed = fuzz_guard_buf(&back_guard, BTP_LWS_BLOB_MAX);
    size_t plen, col;
    st = btp_lws_m_parse(exact, tlen, parsed, BTP_LWS_BLOB_MAX, &plen, &col);
    FUZZ_CHECK(st == BTP_OK && plen == len && memcmp(parsed, blob, len) == 0,
               "m_parse(m_format(blob)) differs: %d", st);
    btp_lws_info minfo;
    st = btp_lws_m_decode(exact, tlen, word_bits, back, BTP_LWS_MAX_FRAMES, &minfo);
    FUZZ_CHECK(st == BTP_OK && minfo.depth == info->depth && fuzz_frames_equal(back, frames, info->depth),
               "m_decode: %d", st);
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned word_bits = (data[0] & 1) ? 64 : 32;
    size_t len = size - 1;
    const uint8_t *blob = fuzz_guard_copy(&in_guard, data + 1, len);
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    if (btp_lws_decode(blob, len, word_bits, frames, BTP_LWS_MAX_FRAMES, &info) != BTP_OK)
        return 0;

    size_t lws_len = reencode(frames, &info, word_bits, 0);
    size_t opt_len = reencode(frames, &info, word_bits, BTP_LWS_ENC_OPTIMAL);
    if (lws_len && opt_len)
        FUZZ_CHECK(opt_len <= lws_len, "optimal %zu bytes, libwebsockets' choice %zu", opt_len,
                   lws_len);

    /* ~b# line and back. */
    size_t cap = BTP_LWS_B_LINE_MAX(info.depth), blen;
    char *line = (char *)fuzz_guard_buf(&text_guard, cap);
    btp_status st = btp_lws_b_format(frames, info.depth, info.alloc_size, line, cap, &blen);
    FUZZ_CHECK(st == BTP_OK && blen <= cap, "b_format: %d", st);
    const char *exact = (const char *)fuzz_guard_copy(&exact_guard, line, blen);
    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info binfo;
    st = btp_lws_b_parse(exact, blen, word_bits, back, BTP_LWS_MAX_FRAMES, &binfo);
    FUZZ_CHECK(st == BTP_OK && binfo.depth == info.depth && binfo.alloc_size == info.alloc_size &&
                   fuzz_frames_equal(back, frames, info.depth),
               "b_parse(b_format(frames)) differs: %d", st);
    return 0;
}
