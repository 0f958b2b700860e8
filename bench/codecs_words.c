/*
 * Word codecs: `raw` (fixed-width words, the physical reference for speed)
 * and `varint` (zigzag-delta LEB128 per trace, the documented scheme of
 * LLVM's gwp_asan stack-trace compressor, written here from that
 * description), plus the whole-corpus raw stream the stream compressors
 * take as input.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

int bench_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void *bench_scratch_reserve(bench_scratch *s, size_t size)
{
    if (size <= s->cap)
        return s->p;
    void *p = realloc(s->p, size ? size : 1);
    if (!p)
        return NULL;
    s->p = p;
    s->cap = size;
    return p;
}

static size_t trace_depth(const bench_corpus *c, size_t i)
{
    return c->start[i + 1] - c->start[i];
}

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

static int raw_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                      size_t errlen)
{
    unsigned bytes = c->word_bits / 8;
    size_t len = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n = trace_depth(c, i);
        if (n * bytes > out->cap - len)
            return bench_fail(err, errlen, "raw: output full");
        words_write(out->data + len, c->frames + c->start[i], n, bytes);
        len += n * bytes;
        out->ends[i] = len;
    }
    out->len = len;
    return 0;
}

static int raw_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                      bench_scratch *s, char *err, size_t errlen)
{
    unsigned bytes = c->word_bits / 8;
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i];
        if (end < pos || end > in->len || (end - pos) % bytes != 0 ||
            (end - pos) / bytes != trace_depth(c, i))
            return bench_fail(err, errlen, "raw: trace %zu has the wrong length", i);
        words_read(frames + c->start[i], in->data + pos, (end - pos) / bytes, bytes);
        pos = end;
    }
    return 0;
}

const bench_codec bench_codec_raw = {
    .name = "raw",
    .what = "fixed-width little-endian words, 4 or 8 bytes a frame (memcpy)",
    .bound = raw_bound,
    .encode = raw_encode,
    .decode = raw_decode,
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
static size_t varint_encode_trace(uint8_t *out, const uint64_t *f, size_t n, unsigned bits)
{
    uint64_t mask = btp_word_mask(bits);
    uint64_t prev = 0;
    uint8_t *p = out;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (f[i] - prev) & mask;
        uint64_t sign = (d >> (bits - 1)) ? mask : 0;
        uint64_t z = ((d << 1) ^ sign) & mask;
        while (z >= 0x80) {
            *p++ = (uint8_t)(z | 0x80);
            z >>= 7;
        }
        *p++ = (uint8_t)z;
        prev = f[i];
    }
    return (size_t)(p - out);
}

static int varint_encode(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                         size_t errlen)
{
    unsigned most = leb_max(c->word_bits);
    size_t len = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n = trace_depth(c, i);
        /* One check per trace for the worst case, as a packer into a
         * caller's buffer would do. */
        if (n * most > out->cap - len)
            return bench_fail(err, errlen, "varint: output full");
        len += varint_encode_trace(out->data + len, c->frames + c->start[i], n, c->word_bits);
        out->ends[i] = len;
    }
    out->len = len;
    return 0;
}

/* Decode in[0..len) into exactly `want` frames. Returns 0 or -1 (truncated
 * varint, a value wider than the word, or the wrong frame count). */
static int varint_decode_trace(const uint8_t *in, size_t len, uint64_t *f, size_t want,
                               unsigned bits)
{
    uint64_t mask = btp_word_mask(bits);
    unsigned most = leb_max(bits);
    uint64_t prev = 0;
    size_t pos = 0, n = 0;
    while (pos < len) {
        uint64_t z = 0;
        unsigned shift = 0, k = 0;
        for (;;) {
            if (pos >= len || k == most)
                return -1;
            uint8_t b = in[pos++];
            z |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            k++;
            if (!(b & 0x80))
                break;
        }
        if (z > mask || n == want)
            return -1;
        uint64_t d = (z >> 1) ^ ((z & 1) ? mask : 0);
        prev = (prev + d) & mask;
        f[n++] = prev;
    }
    return n == want ? 0 : -1;
}

static int varint_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                         bench_scratch *s, char *err, size_t errlen)
{
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i];
        if (end < pos || end > in->len ||
            varint_decode_trace(in->data + pos, end - pos, frames + c->start[i],
                                trace_depth(c, i), c->word_bits) != 0)
            return bench_fail(err, errlen, "varint: trace %zu is malformed", i);
        pos = end;
    }
    return 0;
}

const bench_codec bench_codec_varint = {
    .name = "varint",
    .what = "zigzag-delta LEB128 per trace (the scheme of LLVM gwp_asan's stack-trace "
            "compressor)",
    .bound = varint_bound,
    .encode = varint_encode,
    .decode = varint_decode,
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
        size_t n = trace_depth(c, i); /* <= BENCH_MAX_DEPTH, fits u16 */
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
        if (n != trace_depth(c, i) || (len - pos) / bytes < n)
            return -1;
        words_read(frames + c->start[i], in + pos, n, bytes);
        pos += n * bytes;
    }
    return pos == len ? 0 : -1;
}
