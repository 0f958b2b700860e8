/*
 * CBF through the library: `cbf` (the minimal encoder) and `cbf-swift`
 * (Swift's encoder choices). One stream per trace, information byte and
 * `end` included; decoded with btp_cbf_decode into an array of frames.
 */
#include <btpack/cbf.h>

#include "codec.h"

static size_t cbf_bound(const bench_corpus *c)
{
    return c->ntraces * BTP_CBF_BOUND(0) + c->nframes * (BTP_CBF_BOUND(1) - BTP_CBF_BOUND(0));
}

/* param: the encoder flags. */
static int cbf_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out, size_t cap,
                      size_t *len)
{
    return btp_cbf_encode(c->bframes + c->start[i], bench_depth(c, i), 0, c->word_bits, param,
                          out, cap, len, NULL);
}

/* A decoder's result for trace i: it decoded exactly the trace's frames
 * (given room for exactly those: more is BTP_E_LIMIT) from all len bytes. */
static int cbf_result(btp_status st, const btp_cbf_info *info, size_t want, size_t len)
{
    if (st != BTP_OK)
        return st;
    return info->frames == want && info->consumed == len ? 0 : BENCH_MISMATCH;
}

/* Straight into the caller's frames: btp_frame is the decoder's output. */
static int cbf_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                      size_t len, btp_frame *out, bench_scratch *s)
{
    btp_cbf_info info;
    size_t want = bench_depth(c, i);
    return cbf_result(btp_cbf_decode(in, len, BTP_CBF_POLICY_DEFAULT, out, want, &info), &info,
                      want, len);
}

const bench_codec bench_codec_cbf = {
    .name = "cbf",
    .what = "Compact Backtrace Format v0, btpack's minimal encoder, one stream per trace",
    .bound = cbf_bound,
    .encode_trace = cbf_encode,
    .decode_trace_b = cbf_decode,
    .param = 0,
};

const bench_codec bench_codec_cbf_swift = {
    .name = "cbf-swift",
    .what = "CBF v0 with Swift's encoder choices (BTP_CBF_ENC_SWIFT)",
    .bound = cbf_bound,
    .encode_trace = cbf_encode,
    .decode_trace_b = cbf_decode,
    .param = BTP_CBF_ENC_SWIFT,
};

/* ---- cbf-addr: from and to plain address arrays ------------------------- */

/* The corpus's words as return addresses, in one call. */
static int cbf_addr_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out,
                           size_t cap, size_t *len)
{
    return btp_cbf_encode_addrs(c->frames + c->start[i], bench_depth(c, i), BTP_FRAME_RA, 0,
                                c->word_bits, param, out, cap, len, NULL);
}

static int cbf_addr_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                           size_t len, uint64_t *out, bench_scratch *s)
{
    btp_cbf_info info;
    size_t want = bench_depth(c, i);
    return cbf_result(btp_cbf_decode_addrs(in, len, BTP_CBF_POLICY_DEFAULT, out, want, &info),
                      &info, want, len);
}

const bench_codec bench_codec_cbf_addr = {
    .name = "cbf-addr",
    .what = "the same CBF streams from and to plain address arrays (btp_cbf_encode_addrs, "
            "btp_cbf_decode_addrs), as gwp-asan takes and gives them",
    .bound = cbf_bound,
    .encode_trace = cbf_addr_encode,
    .decode_trace = cbf_addr_decode,
    .param = 0,
};
