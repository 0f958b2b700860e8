/*
 * libwebsockets `~m#` blob decoder.
 *
 * Hostile input: the trailer is checked against the real length before
 * anything else, every field goes through the bounds-checked bit reader, the
 * depth is a 5-bit field (at most 31 frames, held in a local array), a
 * reference is checked against the frames decoded so far, a bit count
 * against the word. Work is bounded by the blob's length.
 */
#include "bitio.h"
#include "lws_internal.h"

typedef struct lws_reader {
    bit_reader br;
    btp_lws_info *info;
} lws_reader;

static btp_status fail(lws_reader *r, btp_status st, size_t bit)
{
    r->info->error_bit = bit;
    return st;
}

/* A field of nominal width w followed by its extra bit, which is skipped
 * unread: gcc-built libwebsockets writes it as a copy of a value bit,
 * clang-built as 1, and neither means anything. */
static inline btp_status field(lws_reader *r, unsigned w, uint64_t *v)
{
    size_t at = r->br.pos;
    /* One read of w + 1 bits (w <= 63: widths and counts are 6-bit), the
     * extra bit shifted out: half the reads of two calls. */
    *v = br_get(&r->br, w + 1) >> 1;
    return r->br.failed ? fail(r, BTP_E_OUT_OF_BITS, at) : BTP_OK;
}

/* A bit count, then that many value bits (plus the extra bit). */
static btp_status counted(lws_reader *r, unsigned word_bits, uint64_t *v, unsigned *n_out)
{
    size_t at = r->br.pos;
    uint64_t n;
    btp_status st = field(r, LWS_W_COUNT, &n);
    if (st != BTP_OK)
        return st;
    if (n > word_bits)
        return fail(r, BTP_E_BIT_COUNT_TOO_WIDE, at);
    *n_out = (unsigned)n;
    return field(r, (unsigned)n, v);
}

btp_status btp_lws_decode(const void *blob, size_t len, unsigned word_bits, btp_frame *out,
                          size_t max_frames, btp_lws_info *info)
{
    btp_lws_info scratch;
    lws_reader r;
    if (!info)
        info = &scratch;
    *info = (btp_lws_info){0};
    r.info = info;
    if (!lws_word_ok(word_bits) || (len && !blob) || (max_frames && !out))
        return BTP_E_INVALID_ARGUMENT;
    const uint8_t *p = blob;
    if (len < 2)
        return fail(&r, BTP_E_LENGTH_MISMATCH, 0);
    if (((size_t)p[len - 2] << 8 | p[len - 1]) != len)
        return fail(&r, BTP_E_LENGTH_MISMATCH, (len - 2) * 8);
    br_init(&r.br, p, len - 2);

    const uint64_t mask = btp_word_mask(word_bits);
    uint64_t vals[BTP_LWS_MAX_FRAMES];
    uint32_t suspect = 0;
    uint64_t depth, v, kind;
    unsigned n;
    btp_status st = field(&r, LWS_W_DEPTH, &depth);
    if (st != BTP_OK)
        return st;
    info->depth = (size_t)depth;
    for (size_t i = 0; i < depth; i++) {
        if ((st = field(&r, LWS_W_KIND, &kind)) != BTP_OK)
            return st;
        if (!kind) {
            if ((st = counted(&r, word_bits, &v, &n)) != BTP_OK)
                return st;
            if (word_bits == 64 && lws_truncation_signature(v, n))
                suspect |= 1u << i;
        } else {
            uint64_t ref, sign, d;
            size_t at = r.br.pos;
            if ((st = field(&r, LWS_W_REF, &ref)) != BTP_OK)
                return st;
            if (ref + 1 > i)
                return fail(&r, BTP_E_BAD_REFERENCE, at);
            size_t ri = i - 1 - (size_t)ref;
            if ((st = field(&r, LWS_W_SIGN, &sign)) != BTP_OK)
                return st;
            if ((st = counted(&r, word_bits, &d, &n)) != BTP_OK)
                return st;
            v = (sign ? vals[ri] - d : vals[ri] + d) & mask;
            /* A value built on a suspect one, or from a suspect delta, is
             * no better. */
            if ((suspect >> ri & 1) || (word_bits == 64 && lws_truncation_signature(d, n)))
                suspect |= 1u << i;
        }
        if (word_bits == 64 && lws_truncated_form(v))
            suspect |= 1u << i;
        vals[i] = v;
    }
    if ((st = counted(&r, word_bits, &v, &n)) != BTP_OK)
        return st;
    if (word_bits == 64 && (lws_truncation_signature(v, n) || lws_truncated_form(v)))
        suspect |= BTP_LWS_SUSPECT_SIZE;
    info->alloc_size = v;
    info->bits = r.br.pos;
    info->suspect = suspect;

    size_t copy = depth < max_frames ? (size_t)depth : max_frames;
    for (size_t i = 0; i < copy; i++)
        out[i] = (btp_frame){vals[i], BTP_FRAME_RA};
    return copy < depth ? BTP_E_LIMIT : BTP_OK;
}
