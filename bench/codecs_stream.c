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

#if BENCH_HAVE_ZLIB || BENCH_HAVE_LZMA
/* A compressor: whole buffer in, whole buffer out; 0 or -1. */
typedef int (*squeeze_fn)(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len);

static int stream_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                         squeeze_fn compress, const char *name, char *err, size_t errlen)
{
    size_t n = bench_raw_stream_size(c);
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    bench_raw_stream_write(c, raw);
    if (compress(raw, n, out->data, out->cap, &out->len) != 0)
        return bench_fail(err, errlen, "%s: compression failed", name);
    return 0;
}

static int stream_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                         bench_scratch *s, squeeze_fn decompress, const char *name, char *err,
                         size_t errlen)
{
    size_t n = bench_raw_stream_size(c), len;
    uint8_t *raw = bench_scratch_reserve(s, n);
    if (!raw)
        return bench_fail(err, errlen, "out of memory");
    if (decompress(in->data, in->len, raw, n, &len) != 0)
        return bench_fail(err, errlen, "%s: decompression failed", name);
    if (bench_raw_stream_read(c, raw, len, frames) != 0)
        return bench_fail(err, errlen, "%s: stream does not match the corpus", name);
    return 0;
}
#endif

#if BENCH_HAVE_ZLIB
static int zlib_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    uLongf z = (uLongf)cap;
    int r = compress2(out, &z, in, (uLong)n, 9);
    *len = z;
    return r == Z_OK ? 0 : -1;
}

static int zlib_decompress(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    uLongf z = (uLongf)cap;
    int r = uncompress(out, &z, in, (uLong)n);
    *len = z;
    return r == Z_OK ? 0 : -1;
}

static size_t zlib_bound(const bench_corpus *c)
{
    return compressBound((uLong)bench_raw_stream_size(c));
}

static int zlib_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                       size_t errlen)
{
    return stream_encode(c, out, s, zlib_compress, "zlib", err, errlen);
}

static int zlib_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                       bench_scratch *s, char *err, size_t errlen)
{
    return stream_decode(c, in, frames, s, zlib_decompress, "zlib", err, errlen);
}
#define ZLIB_RAW_FUNCTIONS .bound = zlib_bound, .encode = zlib_encode, .decode = zlib_decode
#else
#define ZLIB_RAW_FUNCTIONS .unavailable = "built without zlib"
#endif

const bench_codec bench_codec_zlib_raw = {
    .name = "zlib-raw",
    .what = "zlib level 9 of the whole raw corpus (u16 depth + words per trace, one stream)",
    ZLIB_RAW_FUNCTIONS,
};

#if BENCH_HAVE_LZMA
/* The streaming encoder, as `xz -9` uses: the single-call buffer encoder
 * also stores the block's sizes and so comes out a few bytes longer than
 * what xz writes. */
static int xz_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_easy_encoder(&z, 9, LZMA_CHECK_CRC64) != LZMA_OK)
        return -1;
    z.next_in = in;
    z.avail_in = n;
    z.next_out = out;
    z.avail_out = cap;
    lzma_ret r = lzma_code(&z, LZMA_FINISH);
    *len = cap - z.avail_out;
    lzma_end(&z);
    return r == LZMA_STREAM_END ? 0 : -1;
}

static int xz_decompress(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    uint64_t memlimit = UINT64_MAX;
    size_t in_pos = 0;
    *len = 0;
    lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &in_pos, n, out, len, cap);
    return r == LZMA_OK && in_pos == n ? 0 : -1;
}

static size_t xz_bound(const bench_corpus *c)
{
    return lzma_stream_buffer_bound(bench_raw_stream_size(c));
}

static int xz_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                     size_t errlen)
{
    return stream_encode(c, out, s, xz_compress, "liblzma", err, errlen);
}

static int xz_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                     bench_scratch *s, char *err, size_t errlen)
{
    return stream_decode(c, in, frames, s, xz_decompress, "liblzma", err, errlen);
}
#define XZ_RAW_FUNCTIONS .bound = xz_bound, .encode = xz_encode, .decode = xz_decode
#else
#define XZ_RAW_FUNCTIONS .unavailable = "built without liblzma"
#endif

const bench_codec bench_codec_xz_raw = {
    .name = "xz-raw",
    .what = "xz preset 9 (CRC64) of the whole raw corpus, the same stream as zlib-raw",
    XZ_RAW_FUNCTIONS,
};
