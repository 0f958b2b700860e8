/*
 * Fuzz target: CBF decoding under one policy (FUZZ_CBF_POLICY, set by the
 * build: default, strict or swift).
 *
 * Input: any bytes, taken as a CBF stream (then the streams stored after
 * it, back to back, as Swift's ring buffer holds them). Properties:
 *  - the cursor decoder keeps its contract (see fuzz_cbf_decode in runs.c);
 *  - the one-shot btp_cbf_decode() agrees with the cursor, writes only
 *    out[0..max_frames) (the array ends at a guard page) and reports
 *    BTP_E_LIMIT exactly when the stream holds more frames;
 *  - btp_cbf_decode_addrs() gives btp_cbf_decode()'s addresses, status and
 *    summary, except that an omit among the frames it would write stops
 *    it with BTP_E_UNREPRESENTABLE at the omit (its array also ends at a
 *    guard page);
 *  - the policies nest: whatever strict accepts, default accepts with the
 *    same result, and whatever default accepts, swift does; where the
 *    stricter one fails, its frames are a prefix of the laxer one's.
 */
#include "fuzz.h"
#include "guard.h"
#include "runs.h"

#ifndef FUZZ_CBF_POLICY
#error "build with -DFUZZ_CBF_POLICY=<policy flags>"
#endif

/* The most frames the one-shot decode is asked to expand. */
#define MAX_EXPAND 4096

static fuzz_guard in_guard, out_guard, addr_guard;

/* btp_cbf_decode_addrs against what btp_cbf_decode wrote (st, info, out). */
static void check_addrs(const uint8_t *buf, size_t len, size_t max_frames, btp_status st,
                        const btp_cbf_info *info, const btp_frame *out)
{
    uint64_t *addrs = (uint64_t *)fuzz_guard_buf(&addr_guard, max_frames * sizeof(uint64_t));
    btp_cbf_info ai;
    btp_status ast = btp_cbf_decode_addrs(buf, len, FUZZ_CBF_POLICY, addrs, max_frames, &ai);
    size_t omit = 0;
    while (omit < info->frames && out[omit].kind != BTP_FRAME_OMIT)
        omit++;
    if (omit < info->frames) {
        FUZZ_CHECK(ast == BTP_E_UNREPRESENTABLE && ai.frames == omit,
                   "omit at frame %zu: status %d, %zu frames", omit, ast, ai.frames);
        FUZZ_CHECK(ai.error_offset < len && (buf[ai.error_offset] & 0xc0) == 0x40,
                   "omit's offset %zu", ai.error_offset);
    } else {
        FUZZ_CHECK(ast == st && ai.frames == info->frames && ai.consumed == info->consumed &&
                       ai.error_offset == info->error_offset &&
                       ai.terminator == info->terminator && ai.word_bits == info->word_bits,
                   "address decode: status %d (frames: %d), frames %zu (%zu)", ast, st,
                   ai.frames, info->frames);
    }
    for (size_t i = 0; i < ai.frames && i < omit; i++)
        FUZZ_CHECK(addrs[i] == out[i].value, "address %zu differs", i);
}

static void check_one_shot(const uint8_t *buf, size_t len, const fuzz_cbf_stream *s,
                           size_t max_frames)
{
    btp_frame *out = (btp_frame *)fuzz_guard_buf(&out_guard, max_frames * sizeof(btp_frame));
    btp_cbf_info info;
    btp_status st = btp_cbf_decode(buf, len, FUZZ_CBF_POLICY, out, max_frames, &info);
    fuzz_count total = fuzz_runs_total(&s->runs);
    if (total > max_frames) {
        FUZZ_CHECK(st == BTP_E_LIMIT, "status %d, expected limit (%zu frames max)", st,
                   max_frames);
        FUZZ_CHECK(info.frames == max_frames, "frames %zu of max %zu", info.frames, max_frames);
    } else {
        FUZZ_CHECK(st == s->status, "one-shot status %d, cursor %d", st, s->status);
        FUZZ_CHECK(info.frames == (size_t)total, "one-shot frames %zu", info.frames);
        FUZZ_CHECK(info.consumed == s->consumed, "one-shot consumed %zu, cursor %zu",
                   info.consumed, s->consumed);
        FUZZ_CHECK(info.error_offset == s->err_offset, "one-shot error offset");
        FUZZ_CHECK(info.terminator == s->terminator, "one-shot terminator");
        FUZZ_CHECK(info.truncated == (s->terminator == BTP_CBF_TERM_TRUNC), "truncated flag");
    }
    if (s->status != BTP_E_EMPTY_INPUT && s->status != BTP_E_BAD_VERSION &&
        s->status != BTP_E_RESERVED_SIZE)
        FUZZ_CHECK(info.word_bits == s->word_bits, "word bits");
    check_addrs(buf, len, max_frames, st, &info, out);
    /* The frames written are the cursor's runs expanded. */
    size_t k = 0;
    for (size_t i = 0; i < s->runs.n && k < info.frames; i++)
        for (fuzz_count c = 0; c < s->runs.v[i].count && k < info.frames; c++, k++)
            FUZZ_CHECK(out[k].kind == s->runs.v[i].frame.kind &&
                           out[k].value == s->runs.v[i].frame.value,
                       "frame %zu differs", k);
}

/* stricter must accept nothing laxer rejects, and agree where both accept. */
static void check_nesting(const fuzz_cbf_stream *stricter, const fuzz_cbf_stream *laxer)
{
    if (stricter->status == BTP_OK) {
        FUZZ_CHECK(laxer->status == BTP_OK, "laxer policy rejects (%d) what stricter accepts",
                   laxer->status);
        FUZZ_CHECK(fuzz_runs_equal(&stricter->runs, &laxer->runs), "policies disagree");
        FUZZ_CHECK(stricter->consumed == laxer->consumed, "consumed differs");
        FUZZ_CHECK(stricter->terminator == laxer->terminator, "terminator differs");
    } else {
        FUZZ_CHECK(fuzz_runs_is_prefix(&stricter->runs, &laxer->runs),
                   "stricter policy's frames are not a prefix of laxer's");
    }
}

static fuzz_cbf_stream mine, other;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *buf = fuzz_guard_copy(&in_guard, data, size);
    size_t at = 0;
    /* Stream after stream while one ends with end/trunc and bytes remain
     * (each stream takes at least 2 bytes, so this ends). */
    for (;;) {
        const uint8_t *p = buf + at;
        size_t len = size - at;
        fuzz_cbf_decode(p, len, FUZZ_CBF_POLICY, &mine);

        fuzz_count total = fuzz_runs_total(&mine.runs);
        if (total <= MAX_EXPAND) {
            check_one_shot(p, len, &mine, (size_t)total);
            if (total > 0)
                check_one_shot(p, len, &mine, (size_t)total - 1);
        } else {
            check_one_shot(p, len, &mine, MAX_EXPAND);
        }

        unsigned policy = FUZZ_CBF_POLICY;
        if (policy == BTP_CBF_POLICY_STRICT) {
            fuzz_cbf_decode(p, len, BTP_CBF_POLICY_DEFAULT, &other);
            check_nesting(&mine, &other);
        } else if (policy == BTP_CBF_POLICY_DEFAULT) {
            fuzz_cbf_decode(p, len, BTP_CBF_POLICY_STRICT, &other);
            check_nesting(&other, &mine);
            fuzz_cbf_decode(p, len, BTP_CBF_POLICY_SWIFT, &other);
            check_nesting(&mine, &other);
        } else {
            fuzz_cbf_decode(p, len, BTP_CBF_POLICY_DEFAULT, &other);
            check_nesting(&other, &mine);
        }

        if (mine.status != BTP_OK || mine.terminator == BTP_CBF_TERM_NONE ||
            mine.consumed >= len)
            break;
        at += mine.consumed;
    }
    return 0;
}
