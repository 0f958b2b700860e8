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
#include "lws_check.h"
#include "runs.h"

#include <btpack/lws.h>
#include <string.h>

static fuzz_guard in_guard, text_guard, exact_guard;

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

    size_t lws_len = fuzz_lws_reencode(frames, info.depth, info.alloc_size, word_bits, 0);
    size_t opt_len = fuzz_lws_reencode(frames, info.depth, info.alloc_size, word_bits,
                                       BTP_LWS_ENC_OPTIMAL);
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
