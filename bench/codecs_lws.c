/*
 * libwebsockets' compressed backtrace blob (spec/lws.md) through the
 * library: `lws` (libwebsockets' own encoder choices), `lws-optimal` (the
 * smallest encoding), and `lws-bitwise`, the same blobs as `lws` read by a
 * decoder written here the way libwebsockets reads them, one bit per loop
 * iteration, as the speed reference for the library's decoder.
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

static int lws_encode_flags(const bench_corpus *c, bench_encoded *out, unsigned flags,
                            char *err, size_t errlen)
{
    size_t len = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t n;
        btp_status st = btp_lws_encode(c->bframes + c->start[i], c->start[i + 1] - c->start[i],
                                       c->alloc_size[i], c->word_bits, flags, out->data + len,
                                       out->cap - len, &n, NULL);
        if (st != BTP_OK)
            return bench_fail(err, errlen, "lws: trace %zu: %s", i, btp_strerror(st));
        len += n;
        out->ends[i] = len;
    }
    out->len = len;
    return 0;
}

static int lws_encode_default(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                              char *err, size_t errlen)
{
    return lws_encode_flags(c, out, 0, err, errlen);
}

static int lws_encode_optimal(const bench_corpus *c, bench_encoded *out, bench_scratch *s,
                              char *err, size_t errlen)
{
    return lws_encode_flags(c, out, BTP_LWS_ENC_OPTIMAL, err, errlen);
}

static int lws_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                      bench_scratch *s, char *err, size_t errlen)
{
    btp_frame tmp[BTP_LWS_MAX_FRAMES];
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i], want = c->start[i + 1] - c->start[i];
        if (end < pos || end > in->len || want > BTP_LWS_MAX_FRAMES)
            return bench_fail(err, errlen, "lws: bad trace index");
        btp_lws_info info;
        btp_status st = btp_lws_decode(in->data + pos, end - pos, c->word_bits, tmp,
                                       BTP_LWS_MAX_FRAMES, &info);
        if (st != BTP_OK || info.depth != want || info.alloc_size != c->alloc_size[i])
            return bench_fail(err, errlen, "lws: trace %zu: %s", i,
                              st == BTP_OK ? "other depth or size" : btp_strerror(st));
        uint64_t *f = frames + c->start[i];
        for (size_t k = 0; k < want; k++)
            f[k] = tmp[k].value;
        pos = end;
    }
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

static int lws_bitwise_decode(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                              bench_scratch *s, char *err, size_t errlen)
{
    size_t pos = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        size_t end = in->ends[i], want = c->start[i + 1] - c->start[i];
        uint64_t vals[BTP_LWS_MAX_FRAMES], size;
        if (end < pos || end > in->len)
            return bench_fail(err, errlen, "lws-bitwise: bad trace index");
        long depth = bitwise_decode(in->data + pos, end - pos, c->word_bits, vals, &size);
        if (depth < 0 || (size_t)depth != want || size != c->alloc_size[i])
            return bench_fail(err, errlen, "lws-bitwise: trace %zu does not decode", i);
        uint64_t *f = frames + c->start[i];
        for (size_t k = 0; k < want; k++)
            f[k] = vals[k];
        pos = end;
    }
    return 0;
}

const bench_codec bench_codec_lws = {
    .name = "lws",
    .what = "libwebsockets' ~m# bitstream with its encoder's choices (btp_lws_encode), "
            "traces of <= 31 frames, alloc size included",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode = lws_encode_default,
    .decode = lws_decode,
};

const bench_codec bench_codec_lws_optimal = {
    .name = "lws-optimal",
    .what = "the same bitstream with the smallest choices (BTP_LWS_ENC_OPTIMAL)",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode = lws_encode_optimal,
    .decode = lws_decode,
};

const bench_codec bench_codec_lws_bitwise = {
    .name = "lws-bitwise",
    .what = "lws's blobs read one bit at a time as libwebsockets does (decode speed reference; "
            "encode is lws's)",
    .max_depth = BTP_LWS_MAX_FRAMES,
    .bound = lws_bound,
    .encode = lws_encode_default,
    .decode = lws_bitwise_decode,
};
