/*
 * libwebsockets' compressed backtrace blob (spec/lws.md) through the
 * library: `lws` (libwebsockets' own encoder choices), `lws-optimal` (the
 * smallest encoding), and `lws-bitwise`, the same blobs as `lws` written
 * and read by an encoder and a decoder written here the way libwebsockets
 * writes and reads them, one bit per loop iteration, as the speed
 * reference for the library's encoder and decoder.
 *
 * The format holds at most 31 frames, so these codecs run on the corpus's
 * traces of at most 31 frames (the driver gives them that subset and says
 * how many traces it left out). Each blob also carries the allocation size
 * (the format has the field); its bytes are counted, and the decoders check
 * it.
 */
#include <btpack/lws.h>

#include "codec.h"

static size_t lws_bound(const bench_corpus *c)
{
    return c->ntraces * BTP_LWS_BLOB_MAX;
}

/* param: the encoder flags. */
static int lws_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out, size_t cap,
                      size_t *len)
{
    return btp_lws_encode(c->bframes + c->start[i], bench_depth(c, i), c->alloc_size[i],
                          c->word_bits, param, out, cap, len, NULL);
}

/* Straight into the caller's frames: btp_frame is the decoder's output.
 * Room for exactly the frames expected: a deeper record is BTP_E_LIMIT. */
static int lws_decode(const bench_corpus *c, size_t i, unsigned param, const uint8_t *in,
                      size_t len, btp_frame *out, bench_scratch *s)
{
    size_t want = bench_depth(c, i);
    btp_lws_info info;
    btp_status st = btp_lws_decode(in, len, c->word_bits, out, want, &info);
    if (st != BTP_OK)
        return st;
    if (info.depth != want || info.alloc_size != c->alloc_size[i])
        return BENCH_MISMATCH;
    return 0;
}

/* ---- lws-bitwise --------------------------------------------------------- */

/* A bit reader in libwebsockets' manner: every bit is fetched on its own,
 * with its byte index, mask and bounds check, and shifted into the value.
 * Each field has the nominal width w and then the extra bit that
 * libwebsockets' loop reads one iteration too far (here read and dropped,
 * as a correct reader must; libwebsockets ORs it into bit 31). */
typedef struct bitwise_reader {
    const uint8_t *p;
    size_t nbits;
    size_t bit;
} bitwise_reader;

static int read_field(bitwise_reader *r, unsigned w, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i <= w; i++) {
        if (r->bit >= r->nbits)
            return -1;
        unsigned b = (r->p[r->bit >> 3] >> (7 - (r->bit & 7))) & 1u;
        r->bit++;
        if (i < w)
            v = v << 1 | b;
    }
    *out = v;
    return 0;
}

/* One blob: trailer, depth, literal or delta per frame, size. Returns the
 * depth, or -1 on any fault (same faults as the library's decoder). */
static long bitwise_decode(const uint8_t *p, size_t len, unsigned word_bits, uint64_t *vals,
                           uint64_t *size)
{
    if (len < 2 || ((size_t)p[len - 2] << 8 | p[len - 1]) != len)
        return -1;
    bitwise_reader r = {p, (len - 2) * 8, 0};
    uint64_t mask = btp_word_mask(word_bits), depth, kind, n, v;
    if (read_field(&r, 5, &depth) != 0)
        return -1;
    for (uint64_t i = 0; i < depth; i++) {
        if (read_field(&r, 1, &kind) != 0)
            return -1;
        if (!kind) {
            if (read_field(&r, 6, &n) != 0 || n > word_bits || read_field(&r, (unsigned)n, &v))
                return -1;
        } else {
            uint64_t ref, sign, d;
            if (read_field(&r, 3, &ref) != 0 || ref + 1 > i || read_field(&r, 1, &sign) != 0 ||
                read_field(&r, 6, &n) != 0 || n > word_bits || read_field(&r, (unsigned)n, &d))
                return -1;
            uint64_t base = vals[i - 1 - ref];
            v = (sign ? base - d : base + d) & mask;
        }
        vals[i] = v;
    }
    if (read_field(&r, 6, &n) != 0 || n > word_bits || read_field(&r, (unsigned)n, size) != 0)
        return -1;
    return (long)depth;
}

/* A bit writer in libwebsockets' manner: every bit is stored on its own
 * (clearing each byte as it is entered), with its byte index, mask and
 * bounds check. Each field has the nominal width w and then the extra
 * bit, written as btp_lws_encode writes it (libwebsockets computes it from
 * `1 << -1`; spec/lws.md); the mask is 64-bit, where libwebsockets' int
 * mask loses bits 31..63, so that the blobs are lws's. */
typedef struct bitwise_writer {
    uint8_t *p;
    size_t cap;
    size_t bit;
} bitwise_writer;

static int write_field(bitwise_writer *w, uint64_t v, unsigned width, unsigned word_bits)
{
    for (int b = (int)width; b-- > -1;) {
        if (!(w->bit & 7))
            w->p[w->bit >> 3] = 0;
        int set = b >= 0 ? (int)((v >> b) & 1)
                         : word_bits == 32 ? (int)((v >> 31) & 1) : (v >> 31) != 0;
        if (set)
            w->p[w->bit >> 3] |= (uint8_t)(1u << (7 - (w->bit & 7)));
        w->bit++;
        if ((w->bit >> 3) == w->cap)
            return -1;
    }
    return 0;
}

/* libwebsockets' bit count: a loop over the value's bits, at least 1. */
static unsigned bitwise_sigbits(uint64_t v)
{
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n ? n : 1;
}

/* One blob as libwebsockets' encoder makes it: for each frame the nearest
 * of the 8 before it, a delta when that is not frame 0 and saves 5 bits,
 * else a literal; then the size, the padding and the 16-bit length.
 * Returns the blob's length, 0 when it does not fit. */
static size_t bitwise_encode(const uint64_t *st, size_t n, uint64_t size, unsigned word_bits,
                             uint8_t *out, size_t cap)
{
    bitwise_writer w = {out, cap, 0};
    if (write_field(&w, n, 5, word_bits))
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t delta = UINT64_MAX, d1;
        size_t hit = 0;
        int sign = 0, sign1;
        for (size_t m = i > 8 ? i - 8 : 0; m < i; m++) {
            if (st[i] > st[m]) {
                d1 = st[i] - st[m];
                sign1 = 0;
            } else {
                d1 = st[m] - st[i];
                sign1 = 1;
            }
            if (d1 < delta) {
                delta = d1;
                hit = m;
                sign = sign1;
            }
        }
        unsigned q = bitwise_sigbits(delta), ql = bitwise_sigbits(st[i]);
        if (i && hit && q + 11 < ql + 7) {
            if (write_field(&w, 1, 1, word_bits) || write_field(&w, i - hit - 1, 3, word_bits) ||
                write_field(&w, (uint64_t)sign, 1, word_bits) || write_field(&w, q, 6, word_bits) ||
                write_field(&w, delta, q, word_bits))
                return 0;
        } else if (write_field(&w, 0, 1, word_bits) || write_field(&w, ql, 6, word_bits) ||
                   write_field(&w, st[i], ql, word_bits)) {
            return 0;
        }
    }
    unsigned qs = bitwise_sigbits(size);
    if (write_field(&w, qs, 6, word_bits) || write_field(&w, size, qs, word_bits))
        return 0;
    size_t q = (w.bit + 7) >> 3;
    if (q + 2 > cap)
        return 0;
    out[q] = (uint8_t)((q + 2) >> 8);
    out[q + 1] = (uint8_t)(q + 2);
    return q + 2;
}

static int lws_bitwise_encode(const bench_corpus *c, size_t i, unsigned param, uint8_t *out,
                              size_t cap, size_t *len)
{
    *len = bitwise_encode(c->frames + c->start[i], bench_depth(c, i), c->alloc_size[i],
                          c->word_bits, out, cap < BTP_LWS_BLOB_MAX ? cap : BTP_LWS_BLOB_MAX);
    return *len ? 0 : BTP_E_BUFFER_TOO_SMALL;
}

static int lws_bitwise_decode(const bench_corpus *c, size_t i, unsigned param,
                              const uint8_t *in, size_t len, uint64_t *out, bench_scratch *s)
{
    uint64_t vals[BTP_LWS_MAX_FRAMES], size;
    size_t want = bench_depth(c, i);
    long depth = bitwise_decode(in, len, c->word_bits, vals, &size);
    if (depth < 0 || (size_t)depth != want || size != c->alloc_size[i])
        return BENCH_MISMATCH;
    for (size_t k = 0; k < want; k++)
        out[k] = vals[k];
    return 0;
}

const bench_codec bench_codec_lws = {
    .name = "lws",
    .what = "libwebsockets' ~m# bitstream with its encoder's choices (btp_lws_encode), "
            "traces of <= 31 frames, alloc size included",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode_trace = lws_encode,
    .decode_trace_b = lws_decode,
    .param = 0,
};

const bench_codec bench_codec_lws_optimal = {
    .name = "lws-optimal",
    .what = "the same bitstream with the smallest choices (BTP_LWS_ENC_OPTIMAL)",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode_trace = lws_encode,
    .decode_trace_b = lws_decode,
    .param = BTP_LWS_ENC_OPTIMAL,
};

const bench_codec bench_codec_lws_bitwise = {
    .name = "lws-bitwise",
    .what = "lws's blobs written and read one bit at a time as libwebsockets does (the speed "
            "reference for lws)",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode_trace = lws_bitwise_encode,
    .decode_trace = lws_bitwise_decode,
    .param = 0,
};
