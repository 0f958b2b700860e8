/*
 * libwebsockets `~m#` blob decoder.
 *
 * Hostile input: the trailer is checked against the real length before
 * anything else, every field goes through the bounds-checked bit reader, the
 * depth is a 5-bit field (at most 31 frames, held in a local array), a
 * reference is checked against the frames decoded so far, a bit count
 * against the word. Work is bounded by the blob's length.
 */
#include <string.h>

#include "bitio.h"
#include "common/compiler.h"
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

/*
 * The fields of blob p[0..len) from bit 0 on, checked one by one through
 * the bit reader: exact offsets for every fault. Fills vals[0..depth) and
 * info (depth, size, bits, suspect, or error_bit).
 */
static btp_status decode_careful(const uint8_t *p, size_t len, unsigned word_bits,
                                 uint64_t vals[BTP_LWS_MAX_FRAMES], btp_lws_info *info)
{
    lws_reader r;
    r.info = info;
    br_init(&r.br, p, len - 2);
    const uint64_t mask = btp_word_mask(word_bits);
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
    return BTP_OK;
}

#if !BTP_CODEC_SMALL
/*
 * The fast path reads the blob from a copy of it followed by zeros, in a
 * buffer long enough for every look any record of at most 31 frames can
 * make, whatever its counts say: so no frame checks its position, only the
 * end position is checked, once. A frame takes at most 16 + 63 bits (a
 * delta; the count of a 32-bit word is checked only after the last frame,
 * so it may be any 6-bit count until then), so frame 30 starts before bit
 * 6 + 30 * 79 and the size field before bit 6 + 31 * 79 = 2455; each look
 * is 8 bytes from the byte of its first bit, and the last one starts 7
 * bits into the size field: bytes up to (2455 + 7) / 8 + 8 = 315.
 */
/* The widest count the fast path takes on 64-bit words: a value then lies
 * in two looks at most. */
#define LWS_WIDEST_64 56
/* End of the looks of a record of depth d whose counts are checked to be at
 * most w (a delta is then at most 16 + w bits), or for 32-bit words, whose
 * counts are checked at the end, any 6-bit count (w = 63): the size field
 * starts before bit 6 + d * (16 + w); the last look starts 7 bits into it
 * and is 8 bytes long. */
#define LWS_LOOK_END_OF(d, w) ((6 + (d) * (16 + (w)) + 7) / 8 + 8)
/* The buffer: the looks of 31 frames, and the 32-byte step that zeroes
 * them may go 31 bytes past their end. */
#define LWS_COPY (LWS_LOOK_END_OF(31, 63) + 31)
_Static_assert(LWS_COPY >= BTP_LWS_BLOB_MAX, "the buffer holds the longest blob");

/* The 64 bits of b from bit pos on, MSB first. */
static inline uint64_t look(const uint8_t *b, size_t pos)
{
    return load_be64(b + (pos >> 3)) << (pos & 7);
}

/* The top n (0..63) bits of w (n = 0 too, which a plain shift by 64 - n
 * would not give). */
static inline uint64_t top(uint64_t w, unsigned n)
{
    return (w >> 1) >> (63 - n);
}

/*
 * The same as decode_careful for blobs of at most BTP_LWS_BLOB_MAX bytes
 * that are well formed, straight into out[0..depth) (the caller has room
 * for the depth, which is the top 5 bits of byte 0), with every count in
 * 1..32 on 32-bit words and in 1..56 on 64-bit ones. Returns 1 when the
 * blob decoded cleanly, else 0 and the caller runs decode_careful, which
 * finds the fault and its offset; out[0..depth) may then have been written.
 *
 * Each frame is one 8-byte look at its first bit (a second one only for a
 * 64-bit value too long for the first) and no check of position (see
 * LWS_LOOK_END). A reference is checked before it is read; a 64-bit count
 * at once (it also picks the look); the counts of a 32-bit word are ORed
 * together as count - 1 (0 becomes all ones) and checked once at the end,
 * the shifts that use them meanwhile taken mod 64. The loop is bounded by
 * the 5-bit depth.
 */
static BTP_ALWAYS_INLINE int decode_fast_w(const uint8_t *p, size_t len, btp_frame *out,
                                          btp_lws_info *info, const unsigned word_bits)
{
    uint8_t b[LWS_COPY];
    if (len > BTP_LWS_BLOB_MAX)
        return 0;
    const int wide = word_bits == 64;
    const uint64_t mask = btp_word_mask(word_bits);
    const size_t depth = (size_t)(p[0] >> 3);
    /* Zeros from the blob's last 16-byte block up to the end of this
     * depth's looks, in 32-byte steps, then the blob over them: the looks
     * read nothing else. */
    const size_t look_end = LWS_LOOK_END_OF(depth, wide ? LWS_WIDEST_64 : 63);
    for (size_t i = len & ~(size_t)15; i < look_end; i += 32) {
        BTP_OPAQUE(i); /* stores, not a memset call */
        memset(b + i, 0, 32);
    }
    memcpy(b, p, len);
    size_t pos = LWS_W_DEPTH + 1;
    uint32_t suspect = 0;
    /* bit 63: some frame is suspect (deltas test it with their own bits) */
    uint64_t any_suspect = 0;
    unsigned counts = 0; /* 32-bit words: every count - 1, ORed */
    char *const o = (char *)out;
    /* Frames are addressed by byte offset: the reference of a delta is 16
     * times its field, and one counter serves the loop, the store and the
     * reference's check. */
    const size_t end_off = depth * sizeof(btp_frame);
    for (size_t off = 0; off != end_off; off += sizeof(btp_frame)) {
        uint64_t a = look(b, pos), v;
        if (!(a >> 63)) {
            /* literal: kind 0|x, count cccccc|x, then the value from bit 9
             * (in a for counts up to 48) */
            unsigned n = (unsigned)(a >> 56) & 0x3f;
            if (!wide) {
                counts |= n - 1;
                v = (a << 9) >> ((64 - n) & 63);
            } else if (n - 1 < 32) {
                v = (a << 9) >> (64 - n);
            } else {
                if (n - 1 >= 56)
                    return 0;
                v = n <= 48 ? (a << 9) >> (64 - n) : look(b, pos + 9) >> (64 - n);
                /* The signature needs n >= 33 and, for n >= 41, the low 8
                 * bits of v >> 32 equal to those of v: a test that real
                 * addresses (47 bits, low bits at random) pass once in 256.
                 * A literal (below 2^63) never has the truncated form. */
                if ((n <= 40 || !(((v >> 32) ^ v) & 0xff)) && lws_truncation_signature(v, n)) {
                    suspect |= 1u << (off / sizeof(btp_frame));
                    any_suspect = (uint64_t)1 << 63;
                }
            }
            pos += 10 + n;
        } else {
            /* delta: kind 1|x, ref rrr|x, sign s|x, count qqqqqq|x, then
             * |d| from bit 15 (in a for counts up to 42); the reference
             * 16 * (rrr + 1) bytes back */
            size_t ref_off = (size_t)(a >> 55) & 0x70;
            unsigned q = (unsigned)(a >> 50) & 0x3f;
            if (ref_off >= off)
                return 0;
            const btp_frame *r = (const btp_frame *)(o + (off - ref_off)) - 1;
            uint64_t d;
            if (!wide) {
                counts |= q - 1;
                d = (a << 15) >> ((64 - q) & 63);
            } else if (q - 1 < 42) {
                d = (a << 15) >> (64 - q);
            } else {
                if (q - 1 >= 56)
                    return 0;
                d = look(b, pos + 15) >> (64 - q);
            }
            v = ((a >> 57) & 1 ? r->value - d : r->value + d) & mask;
            /* One test first, which real deltas fail: no suspect frame
             * yet, a count of at most 32 (the signature needs 33) and bit
             * 63 clear (the truncated form has it set). */
            if (wide && (int64_t)(v | any_suspect | (uint64_t)(q + 31) << 57) < 0 &&
                ((suspect >> (r - out) & 1) || lws_truncation_signature(d, q) ||
                 lws_truncated_form(v))) {
                suspect |= 1u << (off / sizeof(btp_frame));
                any_suspect = (uint64_t)1 << 63;
            }
            pos += 16 + q;
        }
        btp_frame *f = (btp_frame *)(o + off);
        f->value = v;
        f->kind = BTP_FRAME_RA;
    }
    if (!wide && counts >= 32)
        return 0; /* a count of 0 or wider than the word */
    /* size: count cccccc|x, then the value */
    unsigned n = (unsigned)(look(b, pos) >> 58);
    if (n > (wide ? 56u : 32u))
        return 0;
    uint64_t size = top(look(b, pos + 7), n);
    pos += 8 + n;
    if (pos > (len - 2) * 8)
        return 0; /* a field ran past the bitstream */
    if (wide && (lws_truncation_signature(size, n) || lws_truncated_form(size)))
        suspect |= BTP_LWS_SUSPECT_SIZE;
    info->depth = depth;
    info->alloc_size = size;
    info->bits = pos;
    info->suspect = suspect;
    return 1;
}

/* decode_fast_w with the word size a constant in each copy: the 32-bit
 * one has no masking and no suspect checks. */
static int decode_fast(const uint8_t *p, size_t len, unsigned word_bits, btp_frame *out,
                       btp_lws_info *info)
{
    return word_bits == 64 ? decode_fast_w(p, len, out, info, 64)
                           : decode_fast_w(p, len, out, info, 32);
}
#else
/* The small build has no fast path: every blob goes the careful way. */
static inline int decode_fast(const uint8_t *p, size_t len, unsigned word_bits, btp_frame *out,
                              btp_lws_info *info)
{
    return 0;
}
#endif

btp_status btp_lws_decode(const void *blob, size_t len, unsigned word_bits, btp_frame *out,
                          size_t max_frames, btp_lws_info *info)
{
    btp_lws_info scratch;
    if (!info)
        info = &scratch;
    *info = (btp_lws_info){0};
    if (!lws_word_ok(word_bits) || (len && !blob) || (max_frames && !out))
        return BTP_E_INVALID_ARGUMENT;
    const uint8_t *p = blob;
    if (len < 2) {
        info->error_bit = 0;
        return BTP_E_LENGTH_MISMATCH;
    }
    if (((size_t)p[len - 2] << 8 | p[len - 1]) != len) {
        info->error_bit = (len - 2) * 8;
        return BTP_E_LENGTH_MISMATCH;
    }
    /* The fast path writes straight into out, so it runs when the record's
     * depth (the top 5 bits of byte 0) fits there; a record deeper than the
     * caller's array (BTP_E_LIMIT) goes the careful way, which keeps the
     * frames in a local array (a second array of btp_frame here would put
     * this frame over the stack budget of small targets). */
    if (len > 2 && (size_t)(p[0] >> 3) <= max_frames &&
        decode_fast(p, len, word_bits, out, info))
        return BTP_OK;
    *info = (btp_lws_info){0};
    uint64_t vals[BTP_LWS_MAX_FRAMES];
    btp_status st = decode_careful(p, len, word_bits, vals, info);
    if (st != BTP_OK)
        return st;
    size_t depth = info->depth;
    size_t copy = depth < max_frames ? depth : max_frames;
    for (size_t i = 0; i < copy; i++)
        out[i] = (btp_frame){vals[i], BTP_FRAME_RA};
    return copy < depth ? BTP_E_LIMIT : BTP_OK;
}
