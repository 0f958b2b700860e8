/* The lws encoder checked from frames: see lws_check.h. */
#include "lws_check.h"

#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#include <string.h>

static fuzz_guard out_guard, text_guard, exact_guard, back_guard;

const uint8_t *fuzz_lws_input(const uint8_t *data, size_t size, fuzz_guard *guard,
                              unsigned *word_bits, size_t *max_frames, size_t *len)
{
    if (size < 1)
        return NULL;
    *word_bits = (data[0] & 1) ? 64 : 32;
    *max_frames = (data[0] & 0x40) ? (size_t)((data[0] >> 1) & 31) : BTP_LWS_MAX_FRAMES;
    *len = size - 1;
    return fuzz_guard_copy(guard, data + 1, size - 1);
}

size_t fuzz_lws_reencode(const btp_frame *frames, size_t depth, uint64_t alloc_size,
                         unsigned word_bits, unsigned flags)
{
    size_t need = 0, err_frame = 0;
    btp_status st = btp_lws_encode(frames, depth, alloc_size, word_bits, flags, NULL,
                                   0, &need, &err_frame);
    if (st == BTP_E_UNREPRESENTABLE) {
        FUZZ_CHECK(word_bits == 64 && err_frame < depth &&
                       (frames[err_frame].value >> 63) != 0,
                   "frame %zu unrepresentable", err_frame);
        return 0;
    }
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && need >= 2 && need <= BTP_LWS_BLOB_MAX,
               "size query: %d, need %zu", st, need);
    uint8_t *blob = fuzz_guard_buf(&out_guard, need);
    size_t len;
    st = btp_lws_encode(frames, depth, alloc_size, word_bits, flags, blob, need,
                        &len, NULL);
    FUZZ_CHECK(st == BTP_OK && len == need, "encode into %zu bytes: %d, %zu", need, st, len);
    uint8_t *small = fuzz_guard_buf(&back_guard, need - 1);
    size_t len2;
    st = btp_lws_encode(frames, depth, alloc_size, word_bits, flags, small, need - 1,
                        &len2, NULL);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && len2 == need, "one byte short: %d, %zu", st,
               len2);

    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info binfo;
    st = btp_lws_decode(blob, len, word_bits, back, BTP_LWS_MAX_FRAMES, &binfo);
    FUZZ_CHECK(st == BTP_OK && binfo.depth == depth &&
                   binfo.alloc_size == alloc_size && fuzz_frames_equal(back, frames, depth),
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
    FUZZ_CHECK(st == BTP_OK && minfo.depth == depth && fuzz_frames_equal(back, frames, depth),
               "m_decode: %d", st);
    return len;
}
