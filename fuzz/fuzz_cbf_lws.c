/*
 * Fuzz target: the CBF <-> lws transcoder, differentially. (The library has
 * no pairwise transcoder: a conversion is decode one, encode the other,
 * which is what `btpack convert` does through its trace model; this target
 * does the same with the library calls.)
 *
 * Input: byte 0 bit 0 chooses the direction, bit 1 the lws encoder's mode
 * (libwebsockets' choices or optimal), bit 2 the lws word size (32/64) for
 * blobs, bits 3-7 an allocation size for CBF input; the rest is the source
 * record. Properties:
 *  - CBF -> lws -> CBF: a CBF trace (default policy, 32/64-bit word, <= 31
 *    frames after expanding runs, no omit) converts to lws
 *    unless a 64-bit frame has bit 63 set that no delta can reach
 *    (BTP_E_UNREPRESENTABLE); anything else is refused with the documented
 *    status (depth_too_large, unrepresentable for omit). What converts comes
 *    back with the same addresses, all as RA (lws stores no kinds), and
 *    encoding that as CBF and decoding it gives those frames again.
 *  - lws -> CBF -> lws: a decodable blob converts to CBF at its word size and
 *    back without loss: the same frames, and the same size when the size is
 *    carried alongside (CBF has no field for it).
 * All buffers end at guard pages.
 */
#include "fuzz.h"
#include "guard.h"
#include "lws_check.h"
#include "runs.h"

#include <btpack/lws.h>
#include <string.h>

#define MAX_EXPAND 64

static fuzz_guard in_guard, cbf_guard, lws_guard;
static fuzz_cbf_stream stream;

/* frames -> CBF -> back[0..n) must be the identity. */
static void via_cbf(const btp_frame *frames, size_t n, unsigned word_bits, btp_frame *back)
{
    size_t need = 0, len;
    btp_status st = btp_cbf_encode(frames, n, 0, word_bits, 0, NULL, 0, &len, &need);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL, "CBF size query %d", st);
    uint8_t *buf = fuzz_guard_buf(&cbf_guard, need);
    st = btp_cbf_encode(frames, n, 0, word_bits, 0, buf, need, &len, NULL);
    FUZZ_CHECK(st == BTP_OK && len == need, "CBF encode %d", st);
    btp_cbf_info info;
    st = btp_cbf_decode(buf, len, BTP_CBF_POLICY_STRICT, back, BTP_LWS_MAX_FRAMES, &info);
    FUZZ_CHECK(st == BTP_OK && info.frames == n && fuzz_frames_equal(back, frames, n),
               "frames -> CBF -> frames differs: %d", st);
}

static void from_cbf(const uint8_t *buf, size_t len, unsigned flags, uint64_t alloc_size)
{
    if (fuzz_cbf_decode(buf, len, BTP_CBF_POLICY_DEFAULT, &stream) != BTP_OK)
        return;
    unsigned word_bits = stream.word_bits;
    fuzz_count total = fuzz_runs_total(&stream.runs);
    if (total > MAX_EXPAND)
        return;
    btp_frame frames[MAX_EXPAND];
    size_t n = 0;
    int omit = 0, bit63 = 0;
    for (size_t i = 0; i < stream.runs.n; i++)
        for (fuzz_count c = 0; c < stream.runs.v[i].count; c++) {
            btp_frame f = stream.runs.v[i].frame;
            omit |= f.kind == BTP_FRAME_OMIT;
            bit63 |= btp_frame_is_address(f) && (f.value >> 63);
            frames[n++] = f;
        }
    size_t need = 0, err_frame = 0;
    btp_status st = btp_lws_encode(frames, n, alloc_size, word_bits,
                                   flags | BTP_LWS_ENC_ANY_ADDRESS, NULL, 0, &need, &err_frame);
    if (word_bits == 16) {
        FUZZ_CHECK(st == BTP_E_INVALID_ARGUMENT, "16-bit word into lws: %d", st);
        return;
    }
    if (n > BTP_LWS_MAX_FRAMES || omit) {
        FUZZ_CHECK(st == BTP_E_DEPTH_TOO_LARGE || st == BTP_E_UNREPRESENTABLE,
                   "%zu frames, omit %d: %d", n, omit, st);
        return;
    }
    if (st == BTP_E_UNREPRESENTABLE) {
        FUZZ_CHECK(bit63 && err_frame < n && (frames[err_frame].value >> 63),
                   "frame %zu refused", err_frame);
        return;
    }
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL, "lws size query %d", st);
    uint8_t *blob = fuzz_guard_buf(&lws_guard, need);
    size_t blen;
    st = btp_lws_encode(frames, n, alloc_size, word_bits, flags | BTP_LWS_ENC_ANY_ADDRESS, blob,
                        need, &blen, NULL);
    FUZZ_CHECK(st == BTP_OK && blen == need, "lws encode %d", st);

    btp_frame back[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    st = btp_lws_decode(blob, blen, word_bits, back, BTP_LWS_MAX_FRAMES, &info);
    FUZZ_CHECK(st == BTP_OK && info.depth == n && info.alloc_size == alloc_size,
               "lws decode of the conversion: %d", st);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(back[i].kind == BTP_FRAME_RA && back[i].value == frames[i].value,
                   "frame %zu: 0x%llx became 0x%llx", i, (unsigned long long)frames[i].value,
                   (unsigned long long)back[i].value);
    }
    via_cbf(back, n, word_bits, frames);
}

static void from_lws(const uint8_t *blob, size_t len, unsigned word_bits, unsigned flags)
{
    btp_frame frames[BTP_LWS_MAX_FRAMES];
    btp_lws_info info;
    if (btp_lws_decode(blob, len, word_bits, frames, BTP_LWS_MAX_FRAMES, &info) != BTP_OK)
        return;
    btp_frame back[BTP_LWS_MAX_FRAMES];
    via_cbf(frames, info.depth, word_bits, back);
    /* What came back from CBF goes into lws again, with the size carried
     * alongside: the same frames and size must come out. */
    fuzz_lws_reencode(back, info.depth, info.alloc_size, word_bits, flags);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = (data[0] & 2) ? BTP_LWS_ENC_OPTIMAL : 0;
    const uint8_t *buf = fuzz_guard_copy(&in_guard, data + 1, size - 1);
    if (data[0] & 1)
        from_lws(buf, size - 1, (data[0] & 4) ? 64 : 32, flags);
    else
        from_cbf(buf, size - 1, flags, (uint64_t)(data[0] >> 3) * 1000);
    return 0;
}
