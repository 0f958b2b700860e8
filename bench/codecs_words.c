/*
 * Word codecs: `raw` (fixed-width words, the physical reference for speed)
 * and `varint` (zigzag-delta LEB128 per trace, the documented scheme of
 * LLVM's gwp_asan stack-trace compressor, written here from that
 * description), plus the whole-corpus raw stream the stream compressors
 * take as input.
 */
#include <string.h>

#include "codec.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

/* ---- little-endian words ---------------------------------------------- */

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = bytes; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* Words of `bytes` bytes, little-endian: memcpy when the host layout is
 * already that, so raw measures the cost of moving the bytes and no more. */
static void words_write(uint8_t *out, const uint64_t *f, size_t n, unsigned bytes)
{
    if (HOST_LE && bytes == 8) {
        memcpy(out, f, n * 8);
    } else if (bytes == 4) {
        for (size_t i = 0; i < n; i++) {
            uint32_t w = (uint32_t)f[i];
            if (HOST_LE)
                memcpy(out + 4 * i, &w, 4);
            else
                put_le(out + 4 * i, w, 4);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            put_le(out + bytes * i, f[i], bytes);
    }
}

static void words_read(uint64_t *f, const uint8_t *in, size_t n, unsigned bytes)
{
    if (HOST_LE && bytes == 8) {
        memcpy(f, in, n * 8);
    } else if (HOST_LE && bytes == 4) {
        for (size_t i = 0; i < n; i++) {
            uint32_t w;
            memcpy(&w, in + 4 * i, 4);
            f[i] = w;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            f[i] = get_le(in + bytes * i, bytes);
    }
}

/* ---- raw ----------------------------------------------------------------- */

static size_t raw_bound(const bench_corpus *c)
{
    return c->nframes * (c->word_bits / 8);
}

static int raw_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out, size_t cap,
                      size_t *len)
{
    unsigned bytes = c->word_bits / 8;
    size_t n = bench_depth(c, i);
    if (n * bytes > cap)
        return BTP_E_BUFFER_TOO_SMALL;
    words_write(out, c->frames + c->start[i], n, bytes);
    *len = n * bytes;
    return 0;
}

static int raw_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                      size_t len, uint64_t *out, bench_scratch *s)
{
    unsigned bytes = c->word_bits / 8;
    if (len % bytes != 0 || len / bytes != bench_depth(c, i))
        return BENCH_MISMATCH;
    words_read(out, in, len / bytes, bytes);
    return 0;
}

const bench_codec bench_codec_raw = {
    .name = "raw",
    .what = "fixed-width little-endian words, 4 or 8 bytes a frame (memcpy)",
    .bound = raw_bound,
    .encode_trace = raw_encode,
    .decode_trace = raw_decode,
};

/* ---- varint: zigzag-delta LEB128 per trace ------------------------------ */

/* LEB128 bytes of a word of `bits` bits: 5 for 32, 10 for 64. */
static unsigned leb_max(unsigned bits)
{
    return (bits + 6) / 7;
}

static size_t varint_bound(const bench_corpus *c)
{
    return c->nframes * leb_max(c->word_bits);
}

/* Each frame minus the previous one (frame 0 minus 0), wrapped to the word,
 * zigzag-encoded in the word so small negative steps stay small, then
 * LEB128: 7 bits a byte, low first, high bit = more follows. */
static int varint_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out,
                         size_t cap, size_t *len)
{
    unsigned bits = c->word_bits;
    const uint64_t *f = c->frames + c->start[i];
    size_t n = bench_depth(c, i);
    /* One check per trace for the worst case, as a packer into a caller's
     * buffer would do. */
    if (n * leb_max(bits) > cap)
        return BTP_E_BUFFER_TOO_SMALL;
    uint64_t mask = btp_word_mask(bits);
    uint64_t prev = 0;
    uint8_t *p = out;
    for (size_t k = 0; k < n; k++) {
        uint64_t d = (f[k] - prev) & mask;
        uint64_t sign = (d >> (bits - 1)) ? mask : 0;
        uint64_t z = ((d << 1) ^ sign) & mask;
        while (z >= 0x80) {
            *p++ = (uint8_t)(z | 0x80);
            z >>= 7;
        }
        *p++ = (uint8_t)z;
        prev = f[k];
    }
    *len = (size_t)(p - out);
    return 0;
}

/* Fails on a truncated varint, one longer than the word needs, a value
 * wider than the word, or another number of frames. */
static int varint_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                         size_t len, uint64_t *f, bench_scratch *s)
{
    unsigned bits = c->word_bits, most = leb_max(bits);
    uint64_t mask = btp_word_mask(bits);
    uint64_t prev = 0;
    size_t pos = 0, n = 0, want = bench_depth(c, i);
    while (pos < len) {
        uint64_t z = 0;
        unsigned shift = 0, k = 0;
        for (;;) {
            if (pos >= len || k == most)
                return BENCH_MISMATCH;
            uint8_t b = in[pos++];
            z |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            k++;
            if (!(b & 0x80))
                break;
        }
        if (z > mask || n == want)
            return BENCH_MISMATCH;
        uint64_t d = (z >> 1) ^ ((z & 1) ? mask : 0);
        prev = (prev + d) & mask;
        f[n++] = prev;
    }
    return n == want ? 0 : BENCH_MISMATCH;
}

const bench_codec bench_codec_varint = {
    .name = "varint",
    .what = "zigzag-delta LEB128 per trace (the scheme of LLVM gwp_asan's stack-trace "
            "compressor)",
    .bound = varint_bound,
    .encode_trace = varint_encode,
    .decode_trace = varint_decode,
};

/* ---- the whole-corpus raw stream ---------------------------------------- */

size_t bench_raw_stream_size(const bench_corpus *c)
{
    return 2 * c->ntraces + c->nframes * (c->word_bits / 8);
}

void bench_raw_stream_write(const bench_corpus *c, uint8_t *out)
{
    unsigned bytes = c->word_bits / 8;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n = bench_depth(c, i); /* <= BENCH_MAX_DEPTH, fits u16 */
        put_le(out, n, 2);
        words_write(out + 2, c->frames + c->start[i], n, bytes);
        out += 2 + n * bytes;
    }
}

int bench_raw_stream_read(const bench_corpus *c, const uint8_t *in, size_t len, uint64_t *frames)
{
    unsigned bytes = c->word_bits / 8;
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        if (len - pos < 2)
            return -1;
        size_t n = (size_t)get_le(in + pos, 2);
        pos += 2;
        if (n != bench_depth(c, i) || (len - pos) / bytes < n)
            return -1;
        words_read(frames + c->start[i], in + pos, n, bytes);
        pos += n * bytes;
    }
    return pos == len ? 0 : -1;
}
