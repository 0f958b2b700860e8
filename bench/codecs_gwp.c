/*
 * `gwp-asan`: LLVM gwp_asan's own stack-trace compressor
 * (gwp_asan::compression::pack/unpack, zigzag-delta LEB128 per trace),
 * the compiled one from compiler-rt, linked when the build finds it
 * (bench/meson.build; Debian: libclang-rt-NN-dev). It takes and gives
 * arrays of uintptr_t, so it runs only where those are the corpus's
 * 64-bit words; 32-bit corpora pass their words zero-extended, as a
 * 64-bit process would hold them.
 */
#include "codec.h"

#if BENCH_HAVE_GWP_ASAN

size_t bench_gwp_pack(const uintptr_t *frames, size_t n, uint8_t *out, size_t cap);
size_t bench_gwp_unpack(const uint8_t *in, size_t len, uintptr_t *frames, size_t max);

_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "gwp-asan needs 64-bit uintptr_t");

/* LEB128 of a 64-bit word: at most 10 bytes. */
static size_t gwp_bound(const bench_corpus *c)
{
    return c->nframes * 10;
}

/* pack() stops at the first frame that does not fit and returns the bytes
 * so far, so a short result is a full buffer: never, with gwp_bound. */
static int gwp_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out, size_t cap,
                      size_t *len)
{
    size_t n = bench_depth(c, i);
    *len = bench_gwp_pack((const uintptr_t *)(c->frames + c->start[i]), n, out, cap);
    return *len == 0 && n ? BTP_E_BUFFER_TOO_SMALL : 0;
}

/* unpack() returns the frames it decoded, 0 on a malformed stream. */
static int gwp_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                      size_t len, uint64_t *out, bench_scratch *s)
{
    size_t want = bench_depth(c, i);
    return bench_gwp_unpack(in, len, (uintptr_t *)out, want) == want ? 0 : BENCH_MISMATCH;
}

const bench_codec bench_codec_gwp_asan = {
    .name = "gwp-asan",
    .what = "LLVM gwp_asan's stack-trace compressor (compiler-rt's compiled pack/unpack)",
    .bound = gwp_bound,
    .encode_trace = gwp_encode,
    .decode_trace = gwp_decode,
};
#else
const bench_codec bench_codec_gwp_asan = {
    .name = "gwp-asan",
    .what = "LLVM gwp_asan's stack-trace compressor (compiler-rt's compiled pack/unpack)",
    .unavailable = "libclang_rt.gwp_asan not found at build time",
};
#endif
