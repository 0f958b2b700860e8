/*
 * Fuzz target: CBF decode -> encode -> decode.
 *
 * Input: any bytes, decoded under the default policy. When they decode
 * cleanly, the frames are encoded again (as runs, through the streaming
 * encoder, with the input's word size and terminator) and the result must:
 *  - decode under the strict policy to the same frames, with `end` (or
 *    `trunc` when the input ended with trunc) and nothing left over;
 *  - be exactly btp_cbf_encoder_needed() bytes, fit a buffer of exactly
 *    that size (ending at a guard page) and fail cleanly in one byte less;
 *  - be no longer than the input stream it came from (the encoder is
 *    minimal, and any valid input is itself an encoding of the same
 *    frames). The input stream counts up to and including its terminator;
 *    an input without a terminator gets one byte of allowance, since the
 *    re-encoding always writes one. Bytes after the terminator are not part
 *    of the stream.
 * The one kind of clean input that cannot be encoded again is an external
 * `omit` of 0 frames (the default policy reads it, the encoder refuses
 * BTP_E_ZERO_COUNT): such inputs must fail with exactly that status, and
 * are otherwise skipped. Swift-encoded output (BTP_CBF_ENC_SWIFT) must
 * decode to the same frames under the default policy too.
 */
#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#include <string.h>

static fuzz_guard in_guard, out_guard;
static fuzz_cbf_stream first, second;

/* Encode runs into buf[0..cap); returns the status of finish. */
static btp_status encode_runs(const fuzz_runs *runs, unsigned word_bits, int truncated,
                              unsigned flags, uint8_t *buf, size_t cap, size_t *len,
                              size_t *needed)
{
    btp_cbf_encoder enc;
    btp_status st = btp_cbf_encoder_init(&enc, buf, cap, word_bits, flags);
    FUZZ_CHECK(st == BTP_OK, "encoder init %d", st);
    for (size_t i = 0; i < runs->n; i++) {
        fuzz_count left = runs->v[i].count;
        while (left) {
            uint64_t copies = left > UINT64_MAX ? UINT64_MAX : (uint64_t)left;
            st = btp_cbf_encoder_add(&enc, runs->v[i].frame, copies);
            if (st != BTP_OK) {
                *needed = 0;
                return st;
            }
            left -= copies;
        }
    }
    st = btp_cbf_encoder_finish(&enc, truncated, len);
    *needed = btp_cbf_encoder_needed(&enc);
    return st;
}

static int has_omit_zero(const fuzz_runs *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].frame.kind == BTP_FRAME_OMIT && r->v[i].frame.value == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *in = fuzz_guard_copy(&in_guard, data, size);
    if (fuzz_cbf_decode(in, size, BTP_CBF_POLICY_DEFAULT, &first) != BTP_OK)
        return 0;
    int truncated = first.terminator == BTP_CBF_TERM_TRUNC;
    size_t allowance = first.consumed + (first.terminator == BTP_CBF_TERM_NONE);

    /* Size query: a zero-capacity encoder counts what it needs. */
    size_t len, needed;
    btp_status st = encode_runs(&first.runs, first.word_bits, truncated, 0, NULL, 0, &len,
                                &needed);
    if (has_omit_zero(&first.runs)) {
        FUZZ_CHECK(st == BTP_E_ZERO_COUNT, "omit 0 gave %d", st);
        return 0;
    }
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL, "size query gave %d", st);
    FUZZ_CHECK(needed <= allowance, "re-encoding needs %zu bytes, input stream was %zu",
               needed, first.consumed);

    uint8_t *out = fuzz_guard_buf(&out_guard, needed);
    st = encode_runs(&first.runs, first.word_bits, truncated, 0, out, needed, &len, &needed);
    FUZZ_CHECK(st == BTP_OK && len == needed, "encode into %zu bytes: %d, len %zu", needed, st,
               len);
    fuzz_cbf_decode(out, len, BTP_CBF_POLICY_STRICT, &second);
    FUZZ_CHECK(second.status == BTP_OK, "re-encoding fails strict decoding: %d at %zu",
               second.status, second.err_offset);
    FUZZ_CHECK(second.consumed == len, "re-encoding has trailing bytes");
    FUZZ_CHECK(second.terminator == (truncated ? BTP_CBF_TERM_TRUNC : BTP_CBF_TERM_END),
               "terminator %d", second.terminator);
    FUZZ_CHECK(second.word_bits == first.word_bits, "word size changed");
    FUZZ_CHECK(fuzz_runs_equal(&first.runs, &second.runs), "frames changed in the round trip");

    /* One byte less must not fit (and must not be written past). */
    size_t short_len, short_needed;
    uint8_t *small = fuzz_guard_buf(&out_guard, needed - 1);
    st = encode_runs(&first.runs, first.word_bits, truncated, 0, small, needed - 1, &short_len,
                     &short_needed);
    FUZZ_CHECK(st == BTP_E_BUFFER_TOO_SMALL && short_len == 0 && short_needed == needed,
               "one byte short: %d, len %zu, needed %zu", st, short_len, short_needed);

    /* Swift's choices: never shorter than minimal, same frames. */
    size_t swift_needed;
    encode_runs(&first.runs, first.word_bits, truncated, BTP_CBF_ENC_SWIFT, NULL, 0, &len,
                &swift_needed);
    FUZZ_CHECK(swift_needed >= needed, "swift encoding shorter than minimal");
    out = fuzz_guard_buf(&out_guard, swift_needed);
    st = encode_runs(&first.runs, first.word_bits, truncated, BTP_CBF_ENC_SWIFT, out,
                     swift_needed, &len, &swift_needed);
    FUZZ_CHECK(st == BTP_OK && len == swift_needed, "swift encode %d", st);
    fuzz_cbf_decode(out, len, BTP_CBF_POLICY_DEFAULT, &second);
    FUZZ_CHECK(second.status == BTP_OK && fuzz_runs_equal(&first.runs, &second.runs),
               "swift re-encoding decodes differently");
    return 0;
}
