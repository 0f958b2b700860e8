/*
 * General-purpose compressors over the whole raw corpus (per trace a u16
 * depth and its words, one stream): `zlib-raw` (zlib level 9) and `xz-raw`
 * (xz preset 9, CRC64 check, as `xz -9` writes). Encode times include
 * writing the raw stream, decode times include reading it back into the
 * frame array, so all codecs go from frames to frames.
 */
#include <stdint.h>

#include "codec.h"

#if BENCH_HAVE_ZLIB
#include <zlib.h>
#endif
#if BENCH_HAVE_LZMA
#include <lzma.h>
#endif

#if BENCH_HAVE_ZLIB
static const char *zlib_unavailable(void)
{
    return NULL;
}

static size_t zlib_bound(const bench_corpus *c)
{
    return compressBound((uLong)bench_raw_stream_size(c));
}

static int zlib_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                       size_t errlen)
{
    size_t n = bench_raw_stream_size(c);
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    bench_raw_stream_write(c, raw);
    uLongf len = (uLongf)out->cap;
    int r = compress2(out->data, &len, raw, (uLong)n, 9);
    if (r != Z_OK)
        return bench_fail(err, errlen, "zlib: compress2 failed (%d)", r);
    out->len = len;
    return 0;
}

static int zlib_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                       bench_scratch *s, char *err, size_t errlen)
{
    size_t n = bench_raw_stream_size(c);
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    uLongf len = (uLongf)n;
    int r = uncompress(raw, &len, in->data, (uLong)in->len);
    if (r != Z_OK)
        return bench_fail(err, errlen, "zlib: uncompress failed (%d)", r);
    if (bench_raw_stream_read(c, raw, len, frames) != 0)
        return bench_fail(err, errlen, "zlib-raw: stream does not match the corpus");
    return 0;
}
#else
static const char *zlib_unavailable(void)
{
    return "built without zlib";
}
#define zlib_bound NULL
#define zlib_encode NULL
#define zlib_decode NULL
#endif

const bench_codec bench_codec_zlib_raw = {
    .name = "zlib-raw",
    .what = "zlib level 9 of the whole raw corpus (u16 depth + words per trace, one stream)",
    .unavailable = zlib_unavailable,
    .bound = zlib_bound,
    .encode = zlib_encode,
    .decode = zlib_decode,
};

#if BENCH_HAVE_LZMA
static const char *xz_unavailable(void)
{
    return NULL;
}

static size_t xz_bound(const bench_corpus *c)
{
    return lzma_stream_buffer_bound(bench_raw_stream_size(c));
}

static int xz_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                     size_t errlen)
{
    size_t n = bench_raw_stream_size(c);
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    bench_raw_stream_write(c, raw);
    /* The streaming encoder, as `xz -9` uses: the single-call buffer
     * encoder also stores the block's sizes and so comes out a few bytes
     * longer than what xz writes. */
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_easy_encoder(&z, 9, LZMA_CHECK_CRC64) != LZMA_OK)
        return bench_fail(err, errlen, "liblzma: cannot start the encoder");
    z.next_in = raw;
    z.avail_in = n;
    z.next_out = out->data;
    z.avail_out = out->cap;
    lzma_ret r = lzma_code(&z, LZMA_FINISH);
    out->len = out->cap - z.avail_out;
    lzma_end(&z);
    if (r != LZMA_STREAM_END)
        return bench_fail(err, errlen, "liblzma: encode failed (%d)", (int)r);
    return 0;
}

static int xz_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                     bench_scratch *s, char *err, size_t errlen)
{
    size_t n = bench_raw_stream_size(c);
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    uint64_t memlimit = UINT64_MAX;
    size_t in_pos = 0, len = 0;
    lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, in->data, &in_pos, in->len, raw,
                                           &len, n);
    if (r != LZMA_OK || in_pos != in->len)
        return bench_fail(err, errlen, "liblzma: decode failed (%d)", (int)r);
    if (bench_raw_stream_read(c, raw, len, frames) != 0)
        return bench_fail(err, errlen, "xz-raw: stream does not match the corpus");
    return 0;
}
#else
static const char *xz_unavailable(void)
{
    return "built without liblzma";
}
#define xz_bound NULL
#define xz_encode NULL
#define xz_decode NULL
#endif

const bench_codec bench_codec_xz_raw = {
    .name = "xz-raw",
    .what = "xz preset 9 (CRC64) of the whole raw corpus, the same stream as zlib-raw",
    .unavailable = xz_unavailable,
    .bound = xz_bound,
    .encode = xz_encode,
    .decode = xz_decode,
};
