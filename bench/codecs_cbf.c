/*
 * CBF through the library: `cbf` (the minimal encoder) and `cbf-swift`
 * (Swift's encoder choices). One stream per trace, information byte and
 * `end` included; decoded with the run cursor straight into the frame
 * array, as a consumer that wants addresses would.
 */
#include <btpack/cbf.h>

#include "codec.h"

static size_t cbf_bound(const bench_corpus *c)
{
    return c->ntraces * BTP_CBF_BOUND(0) + c->nframes * (BTP_CBF_BOUND(1) - BTP_CBF_BOUND(0));
}

static int cbf_encode_flags(const bench_corpus *c, bench_encoded *out, unsigned flags,
                            char *err, size_t errlen)
{
    size_t len = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n;
        btp_status st = btp_cbf_encode(c->bframes + c->start[i], c->start[i + 1] - c->start[i],
                                       0, c->word_bits, flags, out->data + len, out->cap - len,
                                       &n, NULL);
        if (st != BTP_OK)
            return bench_fail(err, errlen, "cbf: trace %zu: %s", i, btp_strerror(st));
        len += n;
        out->ends[i] = len;
    }
    out->len = len;
    return 0;
}

static int cbf_encode_minimal(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                              char *err, size_t errlen)
{
    return cbf_encode_flags(c, out, 0, err, errlen);
}

static int cbf_encode_swift(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                            char *err, size_t errlen)
{
    return cbf_encode_flags(c, out, BTP_CBF_ENC_SWIFT, err, errlen);
}

static int cbf_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                            bench_scratch *s, char *err, size_t errlen)
{
    btp_frame *tmp = bench_scratch_reserve(s, (c->max_depth ? c->max_depth : 1) * sizeof *tmp);
    if (!tmp)
        return bench_fail(err, errlen, "out of memory");
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i];
        if (end < pos || end > in->len)
            return bench_fail(err, errlen, "cbf: bad trace index");
        size_t want = c->start[i + 1] - c->start[i];
        btp_cbf_info info;
        btp_status st = btp_cbf_decode(in->data + pos, end - pos, BTP_CBF_POLICY_DEFAULT, tmp,
                                       want, &info);
        if (st != BTP_OK || info.frames != want || info.consumed != end - pos)
            return bench_fail(err, errlen, "cbf: trace %zu: %s", i, btp_strerror(st));
        uint64_t *f = frames + c->start[i];
        for (size_t k = 0; k < want; k++)
            f[k] = tmp[k].value;
        pos = end;
    }
    return 0;
}

const bench_codec bench_codec_cbf = {
    .name = "cbf",
    .what = "Compact Backtrace Format v0, btpack's minimal encoder, one stream per trace",
    .bound = cbf_bound,
    .encode = cbf_encode_minimal,
    .decode = cbf_decode,
};

const bench_codec bench_codec_cbf_swift = {
    .name = "cbf-swift",
    .what = "CBF v0 with Swift's encoder choices (BTP_CBF_ENC_SWIFT)",
    .bound = cbf_bound,
    .encode = cbf_encode_swift,
    .decode = cbf_decode,
};
