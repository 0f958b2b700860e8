/*
 * The benchmark's codec table. Each way of storing backtraces is one entry:
 * it encodes a whole corpus into one buffer and decodes that buffer back
 * into the corpus's flat frame array. The driver (btpack_bench.c) times
 * both, checks the decoded frames against the originals, and divides.
 *
 * Per-trace codecs record where each trace's encoding ends in `ends`; that
 * index is the container's business and is not counted in the size (the
 * same for every per-trace codec). Whole-corpus codecs leave it unused and
 * carry trace boundaries inside their stream.
 */
#ifndef BTPACK_BENCH_CODEC_H
#define BTPACK_BENCH_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "corpus.h"

/* Encoded corpus: data[0..len), trace i's encoding ends at ends[i]. */
typedef struct bench_encoded {
    uint8_t *data;
    size_t cap;
    size_t len;
    size_t *ends; /* ntraces entries, allocated by the driver */
} bench_encoded;

/* Scratch memory a codec may keep between repetitions (freed by the
 * driver): grow it with bench_scratch_reserve outside the hot loops. */
typedef struct bench_scratch {
    void *p;
    size_t cap;
} bench_scratch;

/* Returns s->p with at least `size` bytes, or NULL when out of memory. */
void *bench_scratch_reserve(bench_scratch *s, size_t size);

/* Per-trace codecs give only these two; the driver runs the loop over the
 * traces, keeps `ends` and checks the bounds. `param` is the codec entry's
 * (e.g. encoder flags).
 * Encode trace i of c into out[0..cap) (cap >= bound/ntraces worth):
 * *len gets the bytes written. Returns 0 or a btp_status. */
typedef int (*bench_trace_encode_fn)(const bench_corpus *c, size_t i, unsigned param,
                                     uint8_t *out, size_t cap, size_t *len);
/* Decode in[0..len) as trace i into out[0..depth of trace i). Returns 0
 * only if exactly that trace came out (its depth, and its allocation size
 * where the format has one), BENCH_MISMATCH if something else did, or the
 * decoder's btp_status (BTP_E_OUT_OF_MEMORY if scratch s cannot grow).
 * The bytes are untrusted: reads are bounds-checked. */
typedef int (*bench_trace_decode_fn)(const bench_corpus *c, size_t i, unsigned param,
                                     const uint8_t *in, size_t len, uint64_t *out,
                                     bench_scratch *s);
#define BENCH_MISMATCH (-1)
/* The same for decoders whose native output is btp_frame (the library's:
 * their encoders take btp_frame too, converted from the corpus's words
 * outside the timing). out gets address and kind; the driver checks both
 * against c->bframes, outside the timing. */
typedef int (*bench_trace_bdecode_fn)(const bench_corpus *c, size_t i, unsigned param,
                                      const uint8_t *in, size_t len, btp_frame *out,
                                      bench_scratch *s);

typedef struct bench_codec {
    const char *name;
    const char *what; /* one line for --list and the README */
    /* Deepest trace the format holds (0: any). The driver runs the codec
     * on the traces of at most this many frames and reports the rest. */
    size_t max_depth;
    /* NULL when usable in this build, else why not (printed as n/a). */
    const char *unavailable;
    /* Upper bound on the encoded size of corpus c. */
    size_t (*bound)(const bench_corpus *c);
    /* Either a per-trace codec (encode_trace, one of the decoders, and
     * param)... */
    bench_trace_encode_fn encode_trace;
    bench_trace_decode_fn decode_trace;
    bench_trace_bdecode_fn decode_trace_b;
    unsigned param;
    /* ...or a whole-corpus one. Encode c into out (out->cap >= bound(c)),
     * set out->len. Return 0, or -1 with a message in err. */
    int (*encode)(const bench_corpus *c, bench_encoded *out, bench_scratch *s, char *err,
                  size_t errlen);
    /* Decode `in` into frames[0..c->nframes) (trace i at c->start[i]):
     * exactly c->nframes frames or an error. The encoded bytes are treated
     * as untrusted: every read is bounds-checked. */
    int (*decode)(const bench_corpus *c, const bench_encoded *in, uint64_t *frames,
                  bench_scratch *s, char *err, size_t errlen);
} bench_codec;

/* Encode or decode a whole corpus with a codec of either kind (the driver's
 * entry points; return 0 or -1 with a message). Decoding fills bframes
 * (c->nframes entries) for a codec with decode_trace_b, else frames. */
int bench_encode(const bench_codec *k, const bench_corpus *c, bench_encoded *out,
                 bench_scratch *s, char *err, size_t errlen);
int bench_decode(const bench_codec *k, const bench_corpus *c, const bench_encoded *in,
                 uint64_t *frames, btp_frame *bframes, bench_scratch *s, char *err,
                 size_t errlen);

/* Frames in trace i. */
static inline size_t bench_depth(const bench_corpus *c, size_t i)
{
    return c->start[i + 1] - c->start[i];
}

/* Codec families; each file exports its entries. */
extern const bench_codec bench_codec_raw, bench_codec_varint;
extern const bench_codec bench_codec_gwp_asan;
extern const bench_codec bench_codec_cbf, bench_codec_cbf_addr, bench_codec_cbf_swift;
extern const bench_codec bench_codec_zlib_raw, bench_codec_xz_raw;
extern const bench_codec bench_codec_lws, bench_codec_lws_optimal, bench_codec_lws_bitwise;
extern const bench_codec bench_codec_log, bench_codec_log_zlib;

/* The whole-corpus raw stream (corpus README): per trace a little-endian
 * u16 depth, then the frames as little-endian words. */
size_t bench_raw_stream_size(const bench_corpus *c);
void bench_raw_stream_write(const bench_corpus *c, uint8_t *out);
int bench_raw_stream_read(const bench_corpus *c, const uint8_t *in, size_t len,
                          uint64_t *frames);

/* Report an error from a codec: formats into err, returns -1. */
int bench_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
