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

/* BTP_LWS_V3=0 leaves the fast path's copy for processors with BMI1, BMI2
 * and MOVBE out (the tests build such a copy to check the other one on
 * processors that have them). */
#ifndef BTP_LWS_V3
#define BTP_LWS_V3 1
#endif
#define LWS_V3 (LWS_X86 && BTP_LWS_V3)

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
/* The last bytes of a blob are read from a copy of them followed by zeros
 * (LWS_TAIL bytes of the blob, LWS_PAD of zeros): every look starts at most
 * 7 bytes past the blob (see decode_fast_w) and is 8 bytes long; a blob
 * shorter than the tail is read from the copy from its start. */
#define LWS_TAIL 24
#define LWS_PAD 16

/* The 8 bytes from byte i of the bytes at address b, big-endian. The fast
 * path's base address is an integer: it may be the tail's address moved
 * back by the blob's bytes before the tail (see decode_fast_w), which no
 * pointer may be; every byte loaded lies in the blob or in the tail. */
static inline uint64_t load_at(uintptr_t b, size_t i)
{
    return load_be64((const uint8_t *)(b + i));
}

/* The 64 bits from bit pos on, MSB first. */
static inline uint64_t look(uintptr_t b, size_t pos)
{
    return load_at(b, pos >> 3) << (pos & 7);
}

/* w rotated right by r (1..63): for a field of the header, one
 * instruction that leaves w as it is (rorx, where the copy has BMI2)
 * instead of a copy and a shift. */
static inline uint64_t rotr(uint64_t w, unsigned r)
{
    return w >> r | w << (64 - r);
}

/* All ones when bit 57 of w (a delta's sign) is set, else 0: a bit test
 * and a subtraction with borrow on x86-64, two instructions where the
 * shifts take three. */
static inline uint64_t sign_mask(uint64_t w)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t m;
    __asm__("btq $57, %1\n\tsbbq %0, %0" : "=r"(m) : "r"(w) : "cc");
    return m;
#else
    return (uint64_t)((int64_t)(w << 6) >> 63);
#endif
}

/* Bits 50..55 of w (a delta's count) by one BMI1 bextr where the copy
 * has it: one operation on the position's chain instead of two. Only the
 * BMI copies call it. */
static inline unsigned bextr_50_6(uint64_t w)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t q;
    __asm__("bextrq %2, %1, %0" : "=r"(q) : "r"(w), "r"((uint64_t)0x0632));
    return (unsigned)q;
#else
    return (unsigned)(w >> 50) & 0x3f;
#endif
}

/* The top n (0..57) bits of w (n = 0 too, which a plain shift by 64 - n
 * would not give). */
static inline uint64_t top(uint64_t w, unsigned n)
{
    return (w >> 1) >> (63 - n);
}

/*
 * The same as decode_careful for blobs of at most BTP_LWS_BLOB_MAX bytes
 * that are well formed, with a value of up to 56 bits in every field,
 * straight into out[0..depth) (the caller has room for the depth, which is
 * the top 5 bits of byte 0). Each field is one 8-byte look with no check of
 * length: the looks read the caller's blob itself up to the position `lim`
 * from which a frame's looks could reach past it, and from there on a copy
 * of the blob's last LWS_TAIL bytes padded with zeros (`tail`; a position
 * is the same bit of the blob in both). A frame starts only while the position is inside the blob, so no look
 * starts more than 7 bytes past it (LWS_PAD covers that); fields may run
 * into the trailer or past it, which the end position shows, and a bad
 * reference or (64-bit words) a count that is too wide stops it; the
 * counts of a 32-bit word are checked after the last frame (see counts).
 * Returns 1 when the blob decoded cleanly, else 0 and the caller runs
 * decode_careful, which finds the fault and its offset; out[0..depth) may
 * then have been written, the frames before the faulty one as decoded. The
 * loop is bounded by the 5-bit depth. v3: the copy for processors with
 * BMI1 (bextr_50_6 may be used).
 */
static BTP_ALWAYS_INLINE int decode_fast_w(const uint8_t *p, size_t len, btp_frame *out,
                                          btp_lws_info *info, const unsigned word_bits,
                                          const int v3)
{
    uint8_t tail[LWS_TAIL + LWS_PAD];
    if (len > BTP_LWS_BLOB_MAX)
        return 0;
    /* Widest count taken here: the word's, and 56 so a value always lies in
     * one look (at least 57 bits). */
    const unsigned widest = word_bits < 56 ? word_bits : 56;
    const int wide = word_bits == 64;
    /* The blob's tail: its last LWS_TAIL bytes (all of it if shorter). */
    memset(tail + LWS_TAIL, 0, LWS_PAD);
    if (len >= LWS_TAIL) {
        memcpy(tail, p + len - LWS_TAIL, LWS_TAIL);
    } else {
        memset(tail, 0, LWS_TAIL);
        memcpy(tail, p, len);
    }
    /* A frame at pos looks at most at bytes (pos + 9) / 8 + 8 .. + 16 (the
     * second look of a wide literal; (pos + 9) / 8 .. + 8 on 32-bit words,
     * whose frames take one look): in the blob while pos <= lim (which
     * needs len >= 17 on 64-bit words, so the tail is 24 bytes). From there
     * on the looks go to the tail through `tb`, the tail's address moved
     * back by the bytes it skips (len - LWS_TAIL), so that a position means
     * the same bit in both (no rebasing of positions, and the end checks
     * are one comparison with the bitstream's length). The switch happens
     * once at most: after it the limit is the bitstream's end, where a
     * frame can no longer start. */
    const size_t reach = wide ? 74 : 10;
    const size_t bitlen = (len - 2) * 8;
    uintptr_t b = (uintptr_t)p, tb = (uintptr_t)tail;
    size_t lim;
    if (len >= LWS_TAIL) {
        lim = (len - 7) * 8 - reach;
        tb -= len - LWS_TAIL;
    } else {
        b = tb;
        lim = bitlen;
    }
    size_t depth = (size_t)(p[0] >> 3), pos = LWS_W_DEPTH + 1;
    uint32_t suspect = 0;
    /* bit 63: suspect != 0 (a delta tests it along with its own bits) */
    uint64_t any_suspect = 0;
    /* 32-bit words: every count c negated and ANDed, checked once after
     * the last frame: bit 5 of -c is set for c in 1..32 (-c is 224..255
     * mod 256) and clear for 0 and 33..63 (0, and 193..223), and -c is the
     * shift that takes the top c bits anyway; the shifts that use a count
     * are taken mod 64 meanwhile. A frame then takes at most 16 + 63 bits, and
     * its looks still start at most 9 bits past the blob or the tail's
     * bitstream, checked at every frame. */
    unsigned counts = ~0u;
    /*
     * The position is the chain every frame waits on: a frame's size comes
     * from its header, and the next header lies that many bits on. So the
     * header is never loaded at its own position: each frame looks at the
     * bits from pos + 9 (a = the literal's value, or from bit 6 on the
     * delta's magnitude) as soon as pos is known, and the next header is a
     * shift of that look once the size is known, with a second look at pos
     * + 30 for frames longer than 51 bits (wide words only): the load
     * overlaps the work on the header instead of following it.
     * Frames are addressed by byte offset (off = 16 i): the reference of a
     * delta is 16 times its field at no cost, and one counter serves the
     * loop, the store and the reference's check.
     */
    uint64_t w = look(b, pos); /* the header's bits at the top */
    const size_t end_off = depth * sizeof(btp_frame);
    char *const o = (char *)out;
    /* p9 = pos + 9, the position of each frame's first look (one addition
     * less on the chain), and lim9 its limit. */
    size_t p9 = pos + 9, lim9 = lim + 9;
    /* prev = the byte offset of the frame before this one (off - 16),
     * which the loop counts: a reference's entry is prev minus 16 times its
     * field, and that subtraction's sign is the reference's check. */
    const ptrdiff_t last = (ptrdiff_t)end_off - (ptrdiff_t)sizeof(btp_frame);
    for (ptrdiff_t prev = -(ptrdiff_t)sizeof(btp_frame); prev != last;
         prev += (ptrdiff_t)sizeof(btp_frame)) {
        const size_t off = (size_t)(prev + (ptrdiff_t)sizeof(btp_frame));
        if (p9 > lim9) {
            /* past the part read in place: on into the tail, or past the
             * bitstream (which the tail's limit is) */
            if (p9 - 9 > bitlen)
                return 0;
            b = tb;
            lim9 = bitlen + 9;
        }
        /* a = raw << k: the look's bytes and its shift within the byte,
         * kept apart so that the next header comes from raw by one shift,
         * by k + 1 + n or k + 7 + q, and the next position as p9 + 10 + n
         * or p9 + 16 + q, each with the constant part added first, off the
         * chain (BTP_OPAQUE keeps that order: the count is known last). */
        uint64_t raw = load_at(b, p9 >> 3), v;
        unsigned k = (unsigned)(p9 & 7);
        uint64_t a = raw << k;
        if (!(w >> 63)) {
            /* literal: kind 0|x, count cccccc|x, then the value; a count of
             * 0 (which no encoder writes) goes the careful way, so the
             * value is the top n bits of a by one shift */
            /* The count without masking on the way that real records take
             * (the mask is an operation on the chain): kind 0 leaves the
             * top bits clear but for the kind's extra bit, which
             * libwebsockets built with gcc writes as 0; where it is 1
             * (clang), n is 64 more than the count and a branch taken
             * only then takes the mask (opaque, so that the compiler keeps
             * the branch instead of masking always). */
            size_t nz = (size_t)(w >> 56);
            if (nz > 63) {
                nz &= 63;
                BTP_OPAQUE(nz);
            }
            /* nz, a word, for the position (no zero extension on the
             * chain) */
            unsigned n = (unsigned)nz;
            unsigned k1 = k + 1;
            size_t p19 = p9 + 10;
            BTP_OPAQUE(k1);
            BTP_OPAQUE(p19);
            if (!wide) {
                /* counts checked after the last frame (see counts) */
                unsigned negn = -n;
                counts &= negn;
                v = a >> (negn & 63);
                w = raw << ((k1 + n) & 63);
            } else if (n - 1 < 32) {
                /* no signature below 33 bits; the next header in raw */
                v = a >> (64 - n);
                w = raw << (k1 + n);
            } else {
                if (n - 1 >= widest)
                    return 0;
                v = a >> (64 - n);
                /* The signature needs n >= 33 and, for n >= 41, the low 8
                 * bits of v >> 32 equal to those of v: a test that real
                 * addresses (47 bits, low bits at random) pass once in
                 * 256. A literal (below 2^63) never has the truncated
                 * form. */
                if ((n <= 40 || !(((v >> 32) ^ v) & 0xff)) && lws_truncation_signature(v, n)) {
                    suspect |= 1u << (off / sizeof(btp_frame));
                    any_suspect = (uint64_t)1 << 63;
                }
                /* the next header: a holds at least 57 bits from pos + 9,
                 * so it lies in raw when 10 + n <= 51, else it straddles
                 * raw and the 8 bytes after them, whose load, like raw's,
                 * waits only for the position (a look at the header's own
                 * position would also wait for the count): the 128 bits
                 * shifted by k + 1 + n (43..64, as 1 + (k + n) and 63 -
                 * (k + n), each in 0..63) */
                if (n <= 41) {
                    w = raw << (k1 + n);
                } else {
                    uint64_t raw2 = load_at(b, (p9 >> 3) + 8);
                    w = ((raw << 1) << (k + n)) | (raw2 >> (63 - k - n));
                }
            }
            p9 = p19 + nz;
        } else {
            /* delta: kind 1|x, ref rrr|x, sign s|x, count qqqqqq|x, then
             * |d|; the reference 16 * (rrr + 1) bytes back */
            ptrdiff_t at = prev - (ptrdiff_t)(rotr(w, 55) & 0x70);
            unsigned q = v3 ? bextr_50_6(w) : (unsigned)rotr(w, 50) & 0x3f;
            if (at < 0)
                return 0;
            const btp_frame *r = (const btp_frame *)(o + at);
            /* the sign bit as a mask: all ones for "reference - |d|" (on
             * 32-bit words by shifts: the compiler allocates the bit test's
             * result worse there, 0.7 instructions a frame more) */
            uint64_t neg = wide ? sign_mask(w) : (uint64_t)((int64_t)(w << 6) >> 63);
            /* the next header as for a literal, 16 + q bits on */
            unsigned k7 = k + 7;
            size_t p25 = p9 + 16;
            BTP_OPAQUE(k7);
            BTP_OPAQUE(p25);
            const uint64_t ref = r->value;
            if (!wide) {
                unsigned negq = -q;
                counts &= negq;
                uint64_t d = (a << 6) >> (negq & 63);
                w = raw << ((k7 + q) & 63);
                /* in 32 bits: no masking after */
                v = (uint32_t)((uint32_t)ref + (uint32_t)((d ^ neg) - neg));
            } else if (q - 1 < 32) {
                uint64_t d = (a << 6) >> (64 - q);
                w = raw << (k7 + q);
                v = ref + ((d ^ neg) - neg);
                /* Suspect only with a suspect frame before it (bit 63 of
                 * any_suspect) or bit 63 set (the truncated form): one
                 * test that real deltas fail. A count of at most 32 has no
                 * signature (it needs 33). */
                if ((int64_t)(v | any_suspect) < 0 &&
                    ((suspect >> (r - out) & 1) || lws_truncated_form(v))) {
                    suspect |= 1u << (off / sizeof(btp_frame));
                    any_suspect = (uint64_t)1 << 63;
                }
            } else {
                if (q - 1 >= widest)
                    return 0;
                uint64_t d = (q <= 51 ? a << 6 : look(b, p9 + 6)) >> (64 - q);
                w = q <= 35 ? raw << (k7 + q) : look(b, p9 + 21) << (q - 14);
                v = ref + ((d ^ neg) - neg);
                if ((suspect >> (r - out) & 1) || lws_truncation_signature(d, q) ||
                    lws_truncated_form(v)) {
                    suspect |= 1u << (off / sizeof(btp_frame));
                    any_suspect = (uint64_t)1 << 63;
                }
            }
            p9 = p25 + q;
        }
        btp_frame *f = (btp_frame *)(o + off);
        f->value = v;
        f->kind = BTP_FRAME_RA;
    }
    if (!wide && !(counts & 32))
        return 0; /* a count of 0 or wider than the word */
    pos = p9 - 9;
    /* The size field's two looks reach (pos + 7) / 8 + 8 at most: in the
     * blob at the frames' limit, else from the tail (or past the
     * bitstream). */
    if (pos > lim9 - 9) {
        if (pos > bitlen)
            return 0;
        b = tb;
    }
    /* size: count cccccc|x (at the top of w, as every header is), then
     * the value */
    unsigned n = (unsigned)(w >> 58);
    if (n > widest)
        return 0;
    uint64_t size = top(look(b, pos + 7), n);
    pos += 8 + n;
    if (pos > bitlen)
        return 0; /* a field ran past the bitstream */
    if (wide && (lws_truncation_signature(size, n) || lws_truncated_form(size)))
        suspect |= BTP_LWS_SUSPECT_SIZE;
    /* every field at once (info may be NULL): the caller has not cleared
     * it (the careful way does, when this returns 0) */
    if (info)
        *info = (btp_lws_info){.depth = depth, .alloc_size = size, .bits = pos, .suspect = suspect};
    return 1;
}

#endif

/*
 * The whole decoder the careful way: the argument and length checks, then
 * every field through the bit reader into a local array (a record may be
 * deeper than the caller's), and copied. What the fast copies below hand
 * back when they do not take a blob; out of line, so that its array is on
 * the stack only when it runs.
 */
static BTP_NOINLINE btp_status decode_slow(const uint8_t *p, size_t len, unsigned word_bits,
                                           btp_frame *out, size_t max_frames,
                                           btp_lws_info *info)
{
    btp_lws_info scratch;
    if (!info)
        info = &scratch;
    *info = (btp_lws_info){0};
    if (!lws_word_ok(word_bits) || (len && !p) || (max_frames && !out))
        return BTP_E_INVALID_ARGUMENT;
    if (len < 2 || load_be16(p + len - 2) != len) {
        info->error_bit = len < 2 ? 0 : (len - 2) * 8;
        return BTP_E_LENGTH_MISMATCH;
    }
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

#if !BTP_CODEC_SMALL
/* decode_fast_w with the word size a constant in each copy (the 32-bit one
 * has no masking and no suspect checks), for blobs btp_lws_decode checked;
 * a blob it does not take goes on the careful way. Each copy is a function
 * of its own that btp_lws_decode jumps to, so that the registers the loop
 * needs are saved once a call; it takes btp_lws_decode's own arguments
 * (word_bits unused), so that the jump needs no moves. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
/* no propagation of the constant word size into a copy (gcc's would drop
 * the argument, and the jump to the copy would move the others down) */
#define LWS_NOIPA __attribute__((noipa))
#else
#define LWS_NOIPA BTP_NOINLINE
#endif
#define LWS_FAST_COPY(name, target, bits, v3)                                                 \
    target static LWS_NOIPA btp_status name(const void *blob, size_t len, unsigned word_bits, \
                                            btp_frame *out, size_t max_frames,                \
                                            btp_lws_info *info)                               \
    {                                                                                         \
        (void)word_bits;                                                                      \
        (void)max_frames;                                                                     \
        if (decode_fast_w(blob, len, out, info, bits, v3))                                    \
            return BTP_OK;                                                                    \
        /* max_frames as the depth: the same result (the depth fits, or                       \
         * the copy would not run), and one value fewer kept across the                       \
         * loop */                                                                            \
        return decode_slow(blob, len, bits, out, ((const uint8_t *)blob)[0] >> 3, info);      \
    }
LWS_FAST_COPY(decode_fast32, , 32, 0)
LWS_FAST_COPY(decode_fast64, , 64, 0)
#if LWS_V3
/* The same for processors with BMI1, BMI2 and MOVBE: shifts by a register
 * count into any register (no copies through cl), rotations for the
 * fields of a header, the byte swap in the load. */
LWS_FAST_COPY(decode_fast32_v3, __attribute__((target("bmi,bmi2,movbe"))), 32, 1)
LWS_FAST_COPY(decode_fast64_v3, __attribute__((target("bmi,bmi2,movbe"))), 64, 1)
#endif
#endif

btp_status btp_lws_decode(const void *blob, size_t len, unsigned word_bits, btp_frame *out,
                          size_t max_frames, btp_lws_info *info)
{
    const uint8_t *p = blob;
#if !BTP_CODEC_SMALL
    /* The fast path writes straight into out, so it takes a well-formed
     * call whose record's depth (the top 5 bits of byte 0) fits there; a
     * record deeper than the caller's array (BTP_E_LIMIT), a bad argument
     * or length go the careful way, which keeps the frames in a local
     * array (a second array of btp_frame here would put this frame over
     * the stack budget of small targets). */
    if (lws_word_ok(word_bits) && p && out && len > 2 && load_be16(p + len - 2) == len &&
        (size_t)(p[0] >> 3) <= max_frames) {
#if LWS_V3
        if (lws_cpu_v3())
            return word_bits == 64 ? decode_fast64_v3(p, len, word_bits, out, max_frames, info)
                                   : decode_fast32_v3(p, len, word_bits, out, max_frames, info);
#endif
        return word_bits == 64 ? decode_fast64(p, len, word_bits, out, max_frames, info)
                               : decode_fast32(p, len, word_bits, out, max_frames, info);
    }
#endif
    return decode_slow(p, len, word_bits, out, max_frames, info);
}
