/*
 * Fuzz target: parsing `~b#` lines (libwebsockets' decode tool output).
 *
 * Input: byte 0 chooses the word size (bit 0: 32 or 64) and the frame
 * array's size (bit 6 set: bits 1-5 give 0..31, else 31); the rest is the
 * line, in a buffer ending at a guard page, parsed into an array ending at
 * a guard page. Properties:
 *  - the status is documented; syntax, value and depth errors carry a
 *    column inside the line;
 *  - on success the frames are RA within the word, the depth <= 31, and
 *    formatting them again and parsing that gives the same frames, size
 *    and depth (the form is canonical, so the second parse is exact);
 *  - a smaller array gives BTP_E_LIMIT exactly when there are more frames.
 */
#include "fuzz.h"
#include "guard.h"
#include "lws_check.h"
#include "runs.h"

#include <btpack/lws.h>
#include <string.h>

static fuzz_guard in_guard, out_guard, line_guard, exact_guard;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned word_bits;
    size_t max_frames, n;
    const char *text = (const char *)fuzz_lws_input(data, size, &in_guard, &word_bits,
                                                    &max_frames, &n);
    if (!text)
        return 0;
    uint64_t mask = btp_word_mask(word_bits);

    btp_frame full[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    btp_status st = btp_lws_b_parse(text, n, word_bits, full, BTP_LWS_MAX_FRAMES, &info);
    switch (st) {
    case BTP_OK:
        break;
    case BTP_E_SYNTAX:
    case BTP_E_VALUE_TOO_WIDE:
    case BTP_E_DEPTH_TOO_LARGE:
        FUZZ_CHECK(info.error_column <= n, "column %zu of %zu", info.error_column, n);
        return 0;
    default:
        FUZZ_CHECK(0, "undocumented status %d", st);
    }
    FUZZ_CHECK(info.depth <= BTP_LWS_MAX_FRAMES, "depth %zu", info.depth);
    for (size_t i = 0; i < info.depth; i++)
        FUZZ_CHECK(full[i].kind == BTP_FRAME_RA && full[i].value <= mask, "frame %zu", i);

    btp_frame *out = (btp_frame *)fuzz_guard_buf(&out_guard, max_frames * sizeof(btp_frame));
    btp_lws_info small;
    btp_status st2 = btp_lws_b_parse(text, n, word_bits, out, max_frames, &small);
    FUZZ_CHECK(st2 == (info.depth > max_frames ? BTP_E_LIMIT : BTP_OK),
               "%zu frames into %zu: %d", info.depth, max_frames, st2);
    size_t k = info.depth < max_frames ? info.depth : max_frames;
    FUZZ_CHECK(fuzz_frames_equal(out, full, k), "frames differ");

    size_t cap = BTP_LWS_B_LINE_MAX(info.depth), len;
    char *line = (char *)fuzz_guard_buf(&line_guard, cap);
    st = btp_lws_b_format(full, info.depth, info.alloc_size, line, cap, &len);
    FUZZ_CHECK(st == BTP_OK && len <= cap, "b_format: %d", st);
    const char *exact = (const char *)fuzz_guard_copy(&exact_guard, line, len);
    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info binfo;
    st = btp_lws_b_parse(exact, len, word_bits, back, BTP_LWS_MAX_FRAMES, &binfo);
    FUZZ_CHECK(st == BTP_OK && binfo.depth == info.depth && binfo.alloc_size == info.alloc_size,
               "b_parse(b_format(x)): %d", st);
    FUZZ_CHECK(fuzz_frames_equal(back, full, info.depth), "frames changed");
    return 0;
}
