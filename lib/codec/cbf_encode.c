/*
 * CBF v0 encoder. Async-signal-safe by construction: no allocation, no
 * locks, no libc calls (bytes are copied by hand), only the encoder and the
 * caller's buffer are touched.
 *
 * Minimality: every frame's encoding is independent of the others' choices
 * (the "previous address" is the computed address, however it was written),
 * so choosing the shortest form per instruction gives the shortest stream.
 * Runs of identical frames are held back as a pending repeat count and
 * written as one `rep` when the run ends, so a run costs its frame plus at
 * most a few bytes.
 */
#include "cbf_internal.h"

/* btp_cbf_encode_addrs checks two 32-bit addresses at a time with SSE2
 * (pair_in_range32) on x86-64, where it is always there. */
#if !BTP_CODEC_SMALL && defined(__x86_64__) && defined(__GNUC__) && defined(__SSE2__)
#define CBF_SSE2 1
#include <emmintrin.h>
#else
#define CBF_SSE2 0
#endif

/* btp_cbf_encode_addrs writes eight 64-bit frames a step with AVX-512 where the
 * processor has it (encode_addrs_avx512, chosen at run time); the
 * compiler must know the instructions. */
#if !BTP_CODEC_SMALL && defined(__x86_64__) && defined(__GNUC__) &&                            \
    (defined(__clang__) || __GNUC__ >= 8)
#define CBF_AVX512 1
#include <immintrin.h>

#include "common/cpu_x86.h"
#else
#define CBF_AVX512 0
#endif

/* The instruction writer: inlined for speed, one copy in the small build
 * (it is called from a few places; inlined, each pays for it). */
#if BTP_CODEC_SMALL
#define CBF_INLINE_FAST BTP_NOINLINE
#else
#define CBF_INLINE_FAST inline
#endif

/* Fewest bytes (>= 1) holding the bits of v, and a sign bit above them
 * when `sign` (0 or 1) is 1. Always inlined, so that a 32-bit value costs
 * 32-bit arithmetic; where counting leading zeros is a libgcc call the
 * small build counts bytes by a loop instead. */
static BTP_ALWAYS_INLINE unsigned byte_count(uint64_t v, const unsigned sign)
{
#if BTP_CODEC_SMALL && BTP_CLZ_IS_CALL
    unsigned n = 1;
    for (; v > (0xffu >> sign); v >>= 8)
        n++;
    return n;
#else
    return (71 + sign - btp_clz64(v | 1)) / 8; /* (bits + sign + 7) / 8 */
#endif
}

/* Fewest bytes (>= 1) holding the unsigned value v. */
static BTP_ALWAYS_INLINE unsigned unsigned_bytes(uint64_t v)
{
    return byte_count(v, 0);
}

/* Fewest bytes n (1..word bytes) whose big-endian value, sign-extended to
 * the word, equals v (v already reduced to the word). Computed in closed
 * form (one count of leading zeros) rather than by trying each n: fold a
 * negative value onto its complement in the word; its bits (fewer than
 * the word's) and a sign bit, rounded up to bytes, are n. With a constant
 * word size of 32 bits or less it is 32-bit arithmetic. */
static BTP_ALWAYS_INLINE unsigned signed_bytes(uint64_t v, const unsigned word_bits)
{
    uint64_t neg = 0 - (v >> (word_bits - 1) & 1);       /* all ones when negative */
    uint64_t mag = (v ^ neg) & btp_word_mask(word_bits); /* ~v when negative */
    return byte_count(mag, 1);
}

/* signed_bytes for a word size known only at run time: one copy. */
static unsigned operand_bytes(uint64_t v, unsigned word_bits)
{
    return signed_bytes(v, word_bits);
}

/* Append one instruction: opcode then the low n bytes of v, big-endian.
 * Instructions are written whole or not at all. */
static CBF_INLINE_FAST void emit(btp_cbf_encoder *e, uint8_t op, uint64_t v, unsigned n)
{
    size_t size = 1 + (size_t)n;
    e->needed += size;
    if (e->closed)
        return;
    if (size > e->limit - e->len) {
        if (e->flags & BTP_CBF_ENC_TRUNCATE_ON_FULL) {
            /* limit is cap - 1: the terminator always has room */
            e->buf[e->len++] = CBF_OP_TRUNC;
            e->closed = 1;
        } else {
            e->closed = 2; /* overflowed: keep counting, write nothing */
        }
        return;
    }
    /* Through a local pointer: stores to uint8_t may alias *e, so writing
     * e->buf[e->len++] would reload both after every byte. */
    uint8_t *p = e->buf + e->len;
    e->len += size;
    *p = op;
    for (; n; n--, v >>= 8)
        p[n] = (uint8_t)v;
}

/* The `rep` instruction for `copies` extra copies: returns the opcode,
 * with the operand's byte count (0: inline) in *n. */
static BTP_ALWAYS_INLINE uint8_t rep_instr(uint64_t copies, unsigned *n)
{
    if (copies <= CBF_REP_INLINE_MAX) {
        *n = 0;
        return (uint8_t)(CBF_OP_REP | (copies - 1));
    }
    *n = unsigned_bytes(copies);
    return (uint8_t)(CBF_OP_REP | CBF_OP_REP_EXT | (*n - 1));
}

static void emit_rep(btp_cbf_encoder *e, uint64_t copies)
{
    unsigned n;
    uint8_t op = rep_instr(copies, &n);
    emit(e, op, copies, n);
}

/* Write `rep`s of the word's maximum while the pending count holds one. An
 * external count must fit the word, so on 16/32-bit words a long run takes
 * several. Once nothing more can be written, the remaining full chunks are
 * only counted, at once: a run of 2^64 copies on a 16-bit word would
 * otherwise loop 2^48 times. They are counted without a division (a 64-bit
 * one is a library call of several hundred bytes on a 32-bit core): the
 * mask is 2^w - 1, so x = hi * 2^w + lo is hi full chunks and hi + lo
 * copies more; folding that while it exceeds the mask takes at most 6
 * steps (16-bit words; on 64-bit words x never exceeds the mask). */
static void flush_full_reps(btp_cbf_encoder *e)
{
    while (e->pending >= e->mask) {
        if (e->closed) {
            uint64_t x = e->pending, chunks = 0;
            while (x > e->mask) {
                chunks += x >> e->word_bits;
                x = (x >> e->word_bits) + (x & e->mask);
            }
            if (x == e->mask) {
                chunks++;
                x = 0;
            }
            /* In size_t: the same as the 64-bit product, truncated. */
            e->needed += (size_t)chunks * (1 + e->word_bits / 8);
            e->pending = x;
            return;
        }
        emit_rep(e, e->mask);
        e->pending -= e->mask;
    }
}

/* Write all pending repeats of the last frame: maximal reps, then the
 * remainder. */
static void flush_reps(btp_cbf_encoder *e)
{
    flush_full_reps(e);
    if (e->pending)
        emit_rep(e, e->pending);
    e->pending = 0;
}

/* The instruction for the address `value` of kind pc/ra/async after the
 * address `prev`: returns the opcode, with the operand and its byte count
 * in *v and *n. Takes the encoder's settings by value so that the fast path
 * can keep them in registers. */
static inline uint8_t address_instr(uint64_t value, btp_frame_kind kind, uint64_t prev, int seen,
                                    unsigned word_bits, uint64_t mask, unsigned flags,
                                    uint64_t *v, unsigned *n)
{
    static const uint8_t base[] = {CBF_OP_PC, CBF_OP_RA, CBF_OP_ASYNC};
    uint64_t delta = (value - prev) & mask;
    unsigned abs_n = operand_bytes(value, word_bits);
    unsigned rel_n = operand_bytes(delta, word_bits);
    /* Relative unless absolute is strictly shorter, except that the first
     * address is absolute as the specification requires (same length: the
     * previous address is 0). Swift mode keeps that one relative too. */
    int absolute = abs_n < rel_n || (!seen && !(flags & BTP_CBF_ENC_SWIFT));
    /* Selects rather than branches: which form wins is unpredictable. */
    *v = absolute ? value : delta;
    *n = absolute ? abs_n : rel_n;
    return (uint8_t)(base[kind] | (absolute ? CBF_OP_ABSOLUTE : 0) | (*n - 1));
}

static inline void emit_frame(btp_cbf_encoder *e, btp_frame f)
{
    if (f.kind == BTP_FRAME_OMIT) {
        unsigned inline_max = (e->flags & BTP_CBF_ENC_SWIFT) ? CBF_OMIT_INLINE_MAX - 1
                                                             : CBF_OMIT_INLINE_MAX;
        if (f.value <= inline_max) {
            emit(e, (uint8_t)(CBF_OP_OMIT | (f.value - 1)), 0, 0);
        } else {
            unsigned n = unsigned_bytes(f.value);
            emit(e, (uint8_t)(CBF_OP_OMIT | CBF_OP_OMIT_EXT | (n - 1)), f.value, n);
        }
        return;
    }
    uint64_t v;
    unsigned n;
    uint8_t op = address_instr(f.value, f.kind, e->prev, e->seen_address, e->word_bits, e->mask,
                               e->flags, &v, &n);
    emit(e, op, v, n);
    e->prev = f.value;
    e->seen_address = 1;
}

/* What every stream starts with (btp_cbf_encoder_init and
 * btp_cbf_encode_chain32): the output's fields of enc set and checked.
 * Returns 0 when the buffer and flags do not go together. */
static int start(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned flags)
{
    int truncating = (flags & BTP_CBF_ENC_TRUNCATE_ON_FULL) != 0;
    enc->buf = buf;
    enc->cap = cap;
    enc->limit = truncating ? cap - 1 : cap;
    enc->len = 0;
    enc->needed = 0;
    enc->flags = flags;
    enc->closed = 0;
    return !(cap && !buf) && !(truncating && cap < 2);
}

/* The bodies of btp_cbf_encoder_init and _finish, static so that
 * btp_cbf_encode inlines them: it calls them once per trace, and on short
 * traces the calls were a noticeable part of the cost. */
static inline btp_status init(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned word_bits,
                              unsigned flags)
{
    if (!enc)
        return BTP_E_INVALID_ARGUMENT;
    /* Field by field: no memset, so no libc at all. */
    enc->prev = 0;
    enc->mask = btp_word_mask(word_bits);
    enc->last.value = 0;
    enc->last.kind = BTP_FRAME_PC;
    enc->pending = 0;
    enc->word_bits = word_bits;
    enc->have_last = 0;
    enc->seen_address = 0;
    int ok = start(enc, buf, cap, flags) && btp_word_bits_valid(word_bits);
    enc->finished = !ok;
    enc->error = ok ? BTP_OK : BTP_E_INVALID_ARGUMENT;
    if (ok)
        emit(enc, cbf_info_byte(word_bits), 0, 0);
    return enc->error;
}

/* The body of btp_cbf_encoder_add, static so that btp_cbf_encode's loop
 * inlines it (an exported function called through the library's own PLT
 * cannot be inlined, and the call was a large part of the cost). */
static inline btp_status add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies)
{
    if (!enc || enc->finished || (unsigned)frame.kind > BTP_FRAME_OMIT)
        return BTP_E_INVALID_ARGUMENT;
    if (copies == 0 || (frame.kind == BTP_FRAME_OMIT && frame.value == 0))
        return BTP_E_ZERO_COUNT;
    if (frame.value > enc->mask)
        return BTP_E_VALUE_TOO_WIDE;
    if (enc->have_last && frame.kind == enc->last.kind && frame.value == enc->last.value) {
        if (enc->pending > UINT64_MAX - copies) {
            /* The count would overflow. Write only reps of the word's
             * maximum, the first of them completed from `copies` if need
             * be, so the run still comes out as maximal reps and one
             * remainder last (spec/cbf.md D9), however it was split
             * across calls. */
            flush_full_reps(enc);
            if (enc->pending > UINT64_MAX - copies) {
                copies -= enc->mask - enc->pending;
                enc->pending = enc->mask;
                flush_full_reps(enc);
            }
        }
        enc->pending += copies;
    } else {
        if (enc->pending)
            flush_reps(enc);
        emit_frame(enc, frame);
        enc->last = frame;
        enc->have_last = 1;
        enc->pending = copies - 1;
    }
    return enc->closed == 1 ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
}

btp_status btp_cbf_encoder_add(btp_cbf_encoder *enc, btp_frame frame, uint64_t copies)
{
    return add(enc, frame, copies);
}

/* What every stream ends with: the terminator, and the result (*len_out
 * is 0 unless it is BTP_OK or a stream closed early by `trunc`). */
static btp_status close_stream(btp_cbf_encoder *enc, int truncated, size_t *len_out)
{
    enc->needed += 1;
    if (!enc->closed) {
        if (enc->len < enc->cap)
            enc->buf[enc->len++] = truncated ? CBF_OP_TRUNC : CBF_OP_END;
        else
            enc->closed = 2;
    }
    enc->finished = 1;
    if (enc->closed == 2)
        return BTP_E_BUFFER_TOO_SMALL;
    if (len_out)
        *len_out = enc->len;
    return enc->closed ? BTP_E_BUFFER_TOO_SMALL : BTP_OK;
}

static inline btp_status finish(btp_cbf_encoder *enc, int truncated, size_t *len_out)
{
    if (len_out)
        *len_out = 0;
    if (!enc || enc->finished)
        return BTP_E_INVALID_ARGUMENT;
    flush_reps(enc);
    return close_stream(enc, truncated, len_out);
}

btp_status btp_cbf_encoder_init(btp_cbf_encoder *enc, void *buf, size_t cap, unsigned word_bits,
                                unsigned flags)
{
    return init(enc, buf, cap, word_bits, flags);
}

btp_status btp_cbf_encoder_finish(btp_cbf_encoder *enc, int truncated, size_t *len_out)
{
    return finish(enc, truncated, len_out);
}

size_t btp_cbf_encoder_needed(const btp_cbf_encoder *enc)
{
    return enc ? enc->needed : 0;
}

/*
 * btp_cbf_encode_chain32: what add() and finish() write for these frames,
 * in 32-bit arithmetic, for fault handlers on small cores (under 512
 * bytes of Thumb-2 built for size, a third of the streaming encoder). The
 * rep is rep_instr's, the address address_instr's rule (relative unless
 * absolute is strictly shorter, the first absolute unless in Swift mode)
 * on signed_bytes at 32 bits; the stream's start, every instruction (room,
 * `trunc` when full, the size needed) and its end go through the
 * encoder's own start, emit and close_stream. tests/test_cbf_chain32.c
 * and the cbf_encode fuzzer check it against btp_cbf_encode byte for
 * byte.
 */
btp_status btp_cbf_encode_chain32(const uint32_t *addrs, size_t n, int truncated, unsigned flags,
                                  void *buf, size_t cap, size_t *len_out, size_t *needed_out)
{
    btp_cbf_encoder e;
    btp_status st = BTP_E_INVALID_ARGUMENT;
    if (len_out)
        *len_out = 0;
    /* start first: it sets e.needed (0), which is reported either way. */
    if (start(&e, buf, cap, flags) && (addrs || !n)) {
        emit(&e, cbf_info_byte(32), 0, 0);
        uint32_t prev = 0;
        /* 0: before the pc, 1: after it, 2: after a return address (a pc
         * is never repeated by one). */
        unsigned state = 0;
        const uint32_t *p = addrs, *const end = addrs + n;
        while (p < end) {
            uint32_t a = *p, v;
            unsigned op, k;
            if (state == 2 && a == prev) {
                /* A run of repeats: one rep, of at most the word's maximum
                 * (a longer run, possible only where size_t is wider than
                 * 32 bits, takes several as in flush_full_reps). */
                const uint32_t *q = p + 1;
                while (q < end && *q == a && !(SIZE_MAX > 0xffffffffu && q - p == 0xffffffff))
                    q++;
                v = (uint32_t)(q - p);
                p = q;
                op = rep_instr(v, &k);
            } else {
                /* address_instr's choice. */
                uint32_t delta = a - prev;
                unsigned abs_n = signed_bytes(a, 32), rel_n = signed_bytes(delta, 32);
                int absolute = abs_n < rel_n || (!state && !(flags & BTP_CBF_ENC_SWIFT));
                k = absolute ? abs_n : rel_n;
                v = absolute ? a : delta;
                op = (state ? CBF_OP_RA : CBF_OP_PC) | (absolute ? CBF_OP_ABSOLUTE : 0) | (k - 1);
                state = state ? 2 : 1;
                prev = a;
                p++;
            }
            emit(&e, (uint8_t)op, v, k);
        }
        st = close_stream(&e, truncated, len_out);
    }
    if (needed_out)
        *needed_out = e.needed;
    return st;
}

#if !BTP_CODEC_SMALL
/*
 * What an address instruction of each kind looks like for t, the index of
 * the top bit of its operand's sign edge (below), whose operand has
 * (t >> 3) + 1 bytes, relative (t) or absolute (64 + t): the opcode, the
 * power of two that moves the operand to the top of a big-endian word,
 * and the instruction's length. Tables, as the fast
 * paths need these a frame: each is one load from the kind's base indexed
 * by t, with no arithmetic on t first. The length and the power are
 * 64-bit words so that each is an operand from memory: the output pointer
 * takes the length in one `add`, and the operand is moved by one
 * multiplication (a shift by a count from a table needs the count loaded
 * into cl first, and the register shuffling that cl's being taken
 * brings).
 */
typedef struct cbf_shapes {
    uint64_t step[128];
    uint64_t scale[128];
    /* For a relative shape t: the absolute form is strictly shorter when
     * the value's sign edge is below this, 2^(8 * (t >> 3)) (0 for t < 8,
     * where nothing is shorter than the relative form's one byte). */
    uint64_t abs_below[64];
    uint8_t op[128];
} cbf_shapes;
/* x(bytes) for each t: bytes = (t >> 3) + 1, eight times each. */
#define CBF_BYTES8(x, bytes) x(bytes), x(bytes), x(bytes), x(bytes), x(bytes), x(bytes), x(bytes), x(bytes)
#define CBF_BYTES64(x)                                                                            \
    CBF_BYTES8(x, 1), CBF_BYTES8(x, 2), CBF_BYTES8(x, 3), CBF_BYTES8(x, 4), CBF_BYTES8(x, 5),      \
        CBF_BYTES8(x, 6), CBF_BYTES8(x, 7), CBF_BYTES8(x, 8)
#define CBF_STEP(bytes) (bytes) + 1
#define CBF_SCALE(bytes) (uint64_t)1 << (64 - 8 * (bytes))
#define CBF_PC(bytes) CBF_OP_PC + (bytes) - 1
#define CBF_RA(bytes) CBF_OP_RA + (bytes) - 1
#define CBF_ASYNC(bytes) CBF_OP_ASYNC + (bytes) - 1
#define CBF_PC_ABS(bytes) CBF_OP_PC + CBF_OP_ABSOLUTE + (bytes) - 1
#define CBF_RA_ABS(bytes) CBF_OP_RA + CBF_OP_ABSOLUTE + (bytes) - 1
#define CBF_ASYNC_ABS(bytes) CBF_OP_ASYNC + CBF_OP_ABSOLUTE + (bytes) - 1
#define CBF_BELOW(bytes) ((bytes) == 1 ? 0 : (uint64_t)1 << (8 * ((bytes) - 1)))
#define CBF_KIND_SHAPES(rel, abs)                                                                 \
    {{CBF_BYTES64(CBF_STEP), CBF_BYTES64(CBF_STEP)},                                              \
     {CBF_BYTES64(CBF_SCALE), CBF_BYTES64(CBF_SCALE)},                                            \
     {CBF_BYTES64(CBF_BELOW)},                                                                    \
     {CBF_BYTES64(rel), CBF_BYTES64(abs)}}
static const cbf_shapes cbf_kind_shapes[3] = {CBF_KIND_SHAPES(CBF_PC, CBF_PC_ABS),
                                              CBF_KIND_SHAPES(CBF_RA, CBF_RA_ABS),
                                              CBF_KIND_SHAPES(CBF_ASYNC, CBF_ASYNC_ABS)};
#undef CBF_KIND_SHAPES
#undef CBF_BELOW
#undef CBF_ASYNC_ABS
#undef CBF_RA_ABS
#undef CBF_PC_ABS
#undef CBF_ASYNC
#undef CBF_RA
#undef CBF_PC
#undef CBF_SCALE
#undef CBF_STEP
#undef CBF_BYTES64
#undef CBF_BYTES8

/* The index of the top set bit of x (not 0), as a 64-bit value: an index
 * into cbf_kind_shapes with no widening (63 ^ clz, which the compiler
 * turns into the same `bsr`, comes out as an int that it then
 * sign-extends). `bsr` leaves its destination as it was when x is 0, so
 * the processor makes it wait for the register's last value: with a
 * register of the compiler's choice that was the shift count loaded for
 * the frame before, a chain through every frame (measured: 40 % more time
 * a frame on a 64-bit corpus). Zeroing it first (an idiom the processor
 * resolves without executing) cuts that. (`bsr` of a register into
 * itself, which depends only on x, measured slower still: the btp_frame
 * path 1.50 -> 2.2 ns a frame on py311_regrtest.) */
static BTP_ALWAYS_INLINE uint64_t top_bit(uint64_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = 0;
    __asm__("bsrq %1, %0" : "+r"(t) : "rm"(x));
    return t;
#else
    return 63 ^ (uint64_t)btp_clz64(x);
#endif
}

/* top_bit of a 32-bit x (not 0), with no widening of x first. */
static BTP_ALWAYS_INLINE uint64_t top_bit32(uint32_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = 0; /* a 32-bit write clears the upper half */
    __asm__("bsrl %1, %k0" : "+r"(t) : "rm"(x));
    return t;
#else
    return top_bit(x);
#endif
}

/* top_bit32 by a `bsr` of x's register into itself: one instruction
 * fewer, for the 32-bit address loop, where it measured as fast as the
 * zeroed form (unlike the btp_frame loop, see top_bit). */
static BTP_ALWAYS_INLINE uint64_t top_bit32_in_place(uint32_t x)
{
#if defined(__GNUC__) && defined(__x86_64__)
    uint64_t t = x; /* bsrl writes it whole (x is not 0) */
    __asm__("bsrl %k0, %k0" : "+r"(t));
    return t;
#else
    return top_bit32(x);
#endif
}

/* Write the instruction of kind shapes and shape t (relative or absolute)
 * for operand v at p
 * (room for CBF_MAX_INSTR bytes); returns its end. All 8 operand bytes
 * (4 on 32-bit words) are stored at once; those past the instruction are
 * overwritten by the next one or lie beyond the stream's length. On
 * 32-bit words the operand is moved in 32 bits, by the high half of the
 * power of two (2^(32 - 8 * bytes)): no zero extension of v first. */
static BTP_ALWAYS_INLINE uint8_t *put_shape(uint8_t *p, const cbf_shapes *shapes, uint64_t t,
                                            uint64_t v, const unsigned word_bits)
{
    *p = shapes->op[t];
    if (word_bits == 32)
        store_be32(p + 1, (uint32_t)v * (uint32_t)(shapes->scale[t] >> 32));
    else
        store_be64(p + 1, v * shapes->scale[t]);
    return p + shapes->step[t];
}

/* value - prev reduced to the word; for 32-bit words in 32-bit
 * arithmetic (see put_address). */
static BTP_ALWAYS_INLINE uint64_t word_delta(uint64_t value, uint64_t prev,
                                             const unsigned word_bits)
{
    if (word_bits == 32)
        return (uint32_t)value - (uint32_t)prev;
    return (value - prev) & btp_word_mask(word_bits);
}

/* A delta from word_delta is 0: on 32-bit words tested in 32 bits, so
 * that the flags of the subtraction serve (a 64-bit test of the
 * zero-extended value takes a copy and a test). */
static BTP_ALWAYS_INLINE int is_zero(uint64_t delta, const unsigned word_bits)
{
    return word_bits == 32 ? (uint32_t)delta == 0 : delta == 0;
}

/*
 * Write the instruction for the address `value` at p, `delta` (reduced
 * to the word; not 0 when `nonzero`) after the address before it; p has
 * room for CBF_MAX_INSTR bytes, shapes is cbf_kind_shapes[kind] for its kind (pc,
 * ra or async). Returns the end of the instruction. Makes the same choice
 * as address_instr for every address after the first (relative unless
 * absolute is strictly shorter; for the first see first_absolute), so the
 * bytes are the same as add()'s, with fewer instructions. The size of an
 * operand comes from its sign edge, x ^ (x << 1) in the word: its top set
 * bit is the highest bit the operand must keep below its sign bit (none
 * for 0 and -1, hence the | 1, for a delta only where the caller does not
 * know it is not 0); its index t gives the bytes. The absolute form is
 * sized only when it is shorter. The caller computes the
 * delta, as it tests it for a repeat (0) anyway. word_bits is a constant
 * in each inlined copy, so the masking of 64-bit words disappears.
 */
static BTP_ALWAYS_INLINE uint8_t *put_address(uint8_t *p, uint64_t value, uint64_t delta,
                                              const cbf_shapes *shapes, const int nonzero,
                                              const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    uint64_t abs_edge, t;
    int abs_shorter; /* absolute may be shorter: its edge is lower */
    if (word_bits == 32) {
        /* In 32-bit arithmetic, which reduces to the word for free (the
         * 64-bit form with a mask costs a zero extension per value). */
        uint32_t d = (uint32_t)delta, v = (uint32_t)value;
        uint32_t re = (d ^ (d << 1)) | (nonzero ? 0 : 1), ae = v ^ (v << 1);
        abs_edge = ae;
        abs_shorter = ae < re;
        t = top_bit32(re);
    } else {
        uint64_t rel_edge = ((delta ^ (delta << 1)) & mask) | (nonzero ? 0 : 1);
        abs_edge = (value ^ (value << 1)) & mask;
        abs_shorter = abs_edge < rel_edge;
        t = top_bit(rel_edge);
    }
    /* Branches, well predicted where the program is mapped high (its
     * absolute addresses longer than most deltas). Where it is mapped low
     * they are not (a quarter of gcc12_cc1_sqlite3's frames), but a
     * choice by conditional moves made every corpus slower: it puts a
     * load and the moves on the way from each value to the output
     * pointer's step (and so did a loop of such choices entered only once
     * a trace had written an absolute form: faster on long streams, slower
     * per trace). The first test is on registers alone; the second,
     * exact, by the table (the absolute form is shorter when its edge is
     * below 2^(8 * (t >> 3))), not by a second `bsr` and a compare of
     * byte counts: fewer instructions on the way to a frame that is not
     * absolute after all. */
    if (abs_shorter && abs_edge < shapes->abs_below[t])
        return put_shape(p, shapes, 64 + top_bit(abs_edge | 1), value, word_bits);
    return put_shape(p, shapes, t, delta, word_bits);
}

/* put_address_fast's write for a 32-bit word's address in [0x800000,
 * 0xff800000), known to be in it: the relative form (delta not 0). */
static BTP_ALWAYS_INLINE uint8_t *put_address_in_range32(uint8_t *p, uint64_t delta,
                                                        const cbf_shapes *shapes)
{
    uint32_t d = (uint32_t)delta;
    return put_shape(p, shapes, top_bit32_in_place(d ^ (d << 1)), d, 32);
}

#if CBF_SSE2
/*
 * Whether both 32-bit words' addresses at a[0] and a[1] (64-bit values)
 * lie in [0x800000, 0xff800000), where put_address_fast needs no more
 * test: for the address loop of btp_cbf_encode_addrs, two frames' tests
 * as a handful of vector steps, one move of a mask and one compare,
 * instead of an address computation and a compare each on the integer
 * units, which that loop keeps busy. Per 32-bit half: the low half minus
 * 0x800000 below 0xff000000 and the high half 0, compared as signed
 * numbers with their top bits flipped (SSE2 compares only signed).
 */
static BTP_ALWAYS_INLINE int pair_in_range32(const uint64_t *a)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)a);
    __m128i t = _mm_xor_si128(_mm_sub_epi32(x, _mm_set_epi32(0, 0x800000, 0, 0x800000)),
                              _mm_set1_epi32(INT32_MIN));
    /* Out of range where t > the last value in range: with t as the
     * compare's destination no copy of the constant is needed (as t < the
     * bound it was), and the mask is tested for 0. */
    __m128i bad = _mm_cmpgt_epi32(
        t, _mm_set_epi32(INT32_MIN, 0x7effffff, INT32_MIN, 0x7effffff));
    return _mm_movemask_epi8(bad) == 0;
}
#endif

/*
 * put_address for a fast loop over an address array: writes the
 * instruction and returns 1, or returns 0 having written nothing when the
 * value is too wide for the word (the caller hands it over) or, on 32-bit
 * words, may have a shorter absolute form (the caller then calls
 * put_address). On 32-bit words that test is on the value alone: an
 * absolute operand of 4 bytes is never shorter than a relative one, and
 * one compare of the 64-bit value finds those (it lies in [0x800000,
 * 0xff800000)) and every value too wide, so the loop needs no sign edge of
 * the value and no collecting of the bits of all values.
 */
static BTP_ALWAYS_INLINE int put_address_fast(uint8_t **pp, uint64_t value, uint64_t delta,
                                              const cbf_shapes *shapes,
                                              const unsigned word_bits)
{
    if (word_bits == 32) {
        if (value - 0x800000u >= 0xff000000u)
            return 0;
        *pp = put_address_in_range32(*pp, delta, shapes);
        return 1;
    }
    if (word_bits < 64 && value > btp_word_mask(word_bits))
        return 0;
    *pp = put_address(*pp, value, delta, shapes, 1, word_bits);
    return 1;
}

/* Write `rep` for `copies` (1 .. word mask - 1) extra copies at p, which
 * has room for CBF_MAX_INSTR bytes, as emit_rep does; returns its end. */
static inline uint8_t *put_rep(uint8_t *p, uint64_t copies)
{
    if (copies <= CBF_REP_INLINE_MAX) {
        *p = (uint8_t)(CBF_OP_REP | (copies - 1));
        return p + 1;
    }
    unsigned n = unsigned_bytes(copies);
    *p = (uint8_t)(CBF_OP_REP | CBF_OP_REP_EXT | (n - 1));
    store_be64(p + 1, copies << (64 - 8 * n));
    return p + 1 + n;
}
#endif

/*
 * Where the one-shot encoders read frames from: an array of btp_frame, or
 * a plain array of addresses that all have one kind (btp_cbf_encode_addrs).
 * The always-inlined readers take `addrs` as a constant, so each copy of a
 * fast path reads its own form with no test of which.
 */
typedef struct frame_src {
    const btp_frame *frames;
    const uint64_t *addrs;
    unsigned kind; /* of every address in addrs */
} frame_src;

static BTP_ALWAYS_INLINE uint64_t src_value(frame_src s, size_t i, const int addrs)
{
    return addrs ? s.addrs[i] : s.frames[i].value;
}

static BTP_ALWAYS_INLINE unsigned src_kind(frame_src s, size_t i, const int addrs)
{
    return addrs ? s.kind : (unsigned)s.frames[i].kind;
}

static inline btp_frame src_frame(frame_src s, size_t i, int addrs)
{
    btp_frame f = {src_value(s, i, addrs), (btp_frame_kind)src_kind(s, i, addrs)};
    return addrs ? f : s.frames[i];
}

#if !BTP_CODEC_SMALL
/*
 * Address frames i..end of src, each different from the one before, while
 * they last: written at *pp, which has room for CBF_MAX_INSTR bytes per
 * frame. *prev and *last_kind are the frame before i (an omit's kind,
 * which no address shares, stands for none) and are updated. Runs of
 * repeats become one rep each, as add() writes them (recursion makes
 * them common). Returns the index of the first frame not taken: an omit,
 * an invalid frame, a run that may go on past end or needs several reps,
 * or end. The state is passed by pointer into this always-inlined loop so
 * that it stays in registers (stores to the byte buffer may alias an
 * encoder struct, which made the compiler reload it after every byte).
 * From an address array (kind checked by the caller) no kind is tested,
 * and on 64-bit words no value is too wide.
 */
static BTP_ALWAYS_INLINE size_t put_addresses(uint8_t **pp, uint64_t *prev, unsigned *last_kind,
                                              frame_src src, size_t i, const size_t end,
                                              const unsigned word_bits, const int addrs)
{
    const uint64_t mask = btp_word_mask(word_bits);
    const size_t first = i;
    if (i >= end)
        return i;
    uint8_t *p = *pp;
    uint64_t pv = *prev;
    unsigned pk = *last_kind;
    /* From an address array every frame has the array's kind, so only a
     * first address equal to the starting prev with no frame before it
     * (pk is an omit's kind) is not a repeat: add() takes it, and the
     * loop needs no kind. */
    if (addrs && pk == BTP_FRAME_OMIT && src_value(src, i, addrs) == pv)
        return i;
    /* By pointer (one of the two, as addrs says), and the table's address
     * in one register: indexes and the table rebuilt from its kind's
     * offset cost a few instructions a frame. */
    const uint64_t *a = addrs ? src.addrs + i : NULL, *const a_end = addrs ? src.addrs + end : NULL;
    const btp_frame *f = addrs ? NULL : src.frames + i;
    const btp_frame *const f_end = addrs ? NULL : src.frames + end;
    const cbf_shapes *shapes = &cbf_kind_shapes[addrs ? src.kind : 0];
    BTP_OPAQUE(shapes);
    /* From an address array a value too wide for the word is found after
     * the loop, from the bits of all: one step a frame instead of a test
     * (the whole run is then left to add(), which reports it). */
    uint64_t all = 0;
    do {
        uint64_t value = addrs ? *a : f->value;
        unsigned kind = addrs ? src.kind : (unsigned)f->kind;
        if (!addrs && (kind > BTP_FRAME_ASYNC || value > mask))
            break;
        all |= value;
        /* A repeat (value, then kind: the value differs almost always, so
         * that branch alone decides). From an address array the only
         * other case is a first address of 0 (prev starts at 0), which
         * goes to add(), so the delta put_address sees is never 0. */
        if (value == pv && (addrs || kind == pk)) {
            size_t left = addrs ? (size_t)(a_end - a) : (size_t)(f_end - f), r = 1;
            while (r < left && (addrs ? a[r] == pv : f[r].value == pv && (unsigned)f[r].kind == pk))
                r++;
            /* The whole run as one rep, as add() writes it; a run that
             * reaches `end` (it may go on) or needs several reps goes to
             * add(). */
            if (r == left || r >= mask)
                break;
            p = put_rep(p, r);
            if (addrs)
                a += r - 1; /* the loop's step takes it past the run */
            else
                f += r - 1;
            continue;
        }
        p = put_address(p, value, word_delta(value, pv, word_bits),
                        addrs ? shapes : shapes + kind, addrs, word_bits);
        pv = value;
        if (!addrs)
            pk = kind;
    } while (addrs ? ++a != a_end : ++f != f_end);
    i = addrs ? (size_t)(a - src.addrs) : (size_t)(f - src.frames);
    if (addrs && all > mask)
        return first;
    *pp = p;
    *prev = pv;
    *last_kind = addrs && i > first ? src.kind : pk;
    return i;
}

#if CBF_AVX512
/* The processor has what encode_addrs_avx512 uses (common/cpu_x86.h). */
static inline int cbf_avx512(void)
{
    return btp_cpu_x86_has(BTP_CPU_AVX512, 1);
}

/*
 * btp_cbf_encode_addrs's frames eight at a time, 64-bit words, from the
 * first on (prev 0): the same choice as put_address for each (relative
 * unless absolute is strictly shorter, sizes from the sign edges), made
 * for eight frames at once with no branch, so that the choice's
 * mispredictions (a quarter of the frames where the program is mapped
 * low) and the per-frame integer work go. Each frame's operand is sized
 * by a leading-zero count of its edge, moved to the top of its lane and
 * byte-swapped; opcodes and operands are interleaved into 16-byte slots
 * (four frames a register), compressed to the instructions' bytes and
 * stored. The last step takes the 1 to 7 frames left under a mask
 * (masked loads read nothing past the array). Stops at the first step
 * with a delta of 0 (a repeat: a rep, which the scalar loop writes); the
 * caller goes on from there. Returns the frames written (a multiple of 8,
 * or n) and advances *pp. room_end is the end of the caller's buffer.
 * (On 32-bit words it measured no faster than the scalar loop with its
 * SSE2 range test, sqlite3_i386's traces being 15 frames deep.)
 */
#define CBF_AVX512_TARGET                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512cd,avx512vl,avx512vbmi,avx512vbmi2,bmi,bmi2,"  \
                          "popcnt")))
CBF_AVX512_TARGET static size_t encode_addrs_avx512(const uint64_t *a, size_t n, unsigned kind,
                                                    uint8_t **pp, const uint8_t *room_end)
{
    const __m512i top = _mm512_set1_epi64(71);
    const __m512i wb = _mm512_set1_epi64(64);
    const __m512i op_base = _mm512_set1_epi64((int64_t)(CBF_OP_PC * (kind + 1)) - 1);
    const __m512i abs_bit = _mm512_set1_epi64(CBF_OP_ABSOLUTE);
    const __m512i one = _mm512_set1_epi64(1);
    /* Byte reversal within each 8-byte lane. */
    const __m512i rev = _mm512_set_epi8(
        56, 57, 58, 59, 60, 61, 62, 63, 48, 49, 50, 51, 52, 53, 54, 55, 40, 41, 42, 43, 44, 45,
        46, 47, 32, 33, 34, 35, 36, 37, 38, 39, 24, 25, 26, 27, 28, 29, 30, 31, 16, 17, 18, 19,
        20, 21, 22, 23, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    /* Slot j of the low register: the opcode (byte 0 of lane j of the
     * opcodes), then the 8 operand bytes (lane j of the second table,
     * indices 64 on); of the high register, lanes 4 + j. The last 7
     * bytes of a slot are never kept. */
#define CBF_SLOT(l) 8 * (l), 64 + 8 * (l), 65 + 8 * (l), 66 + 8 * (l), 67 + 8 * (l), 68 + 8 * (l), \
                    69 + 8 * (l), 70 + 8 * (l), 71 + 8 * (l), 0, 0, 0, 0, 0, 0, 0
#define CBF_LEN(l) 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), \
                   8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l), 8 * (l)
    static const uint8_t slots[2][64] = {{CBF_SLOT(0), CBF_SLOT(1), CBF_SLOT(2), CBF_SLOT(3)},
                                         {CBF_SLOT(4), CBF_SLOT(5), CBF_SLOT(6), CBF_SLOT(7)}};
    static const uint8_t lens[2][64] = {{CBF_LEN(0), CBF_LEN(1), CBF_LEN(2), CBF_LEN(3)},
                                        {CBF_LEN(4), CBF_LEN(5), CBF_LEN(6), CBF_LEN(7)}};
#undef CBF_LEN
#undef CBF_SLOT
    static const uint8_t pos[64] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const __m512i slot_lo = _mm512_loadu_si512(slots[0]), slot_hi = _mm512_loadu_si512(slots[1]);
    const __m512i len_lo = _mm512_loadu_si512(lens[0]), len_hi = _mm512_loadu_si512(lens[1]);
    const __m512i byte_pos = _mm512_loadu_si512(pos);
    uint8_t *p = *pp;
    __m512i prev = _mm512_setzero_si512();
    size_t i = 0;
    while (i < n) {
        size_t left = n - i;
        __mmask8 m = (__mmask8)_bzhi_u32(0xff, (unsigned)(left >= 8 ? 8 : left));
        __m512i v = left >= 8 ? _mm512_loadu_si512(a + i) : _mm512_maskz_loadu_epi64(m, a + i);
        /* The previous address of each lane: the lane before, lane 0 the
         * last of the step before. */
        __m512i pv = _mm512_alignr_epi64(v, prev, 7);
        __m512i d = _mm512_sub_epi64(v, pv);
        /* A repeat (delta 0): the scalar loop's, which writes a rep. */
        if (_mm512_mask_test_epi64_mask(m, d, d) != m)
            break;
        __m512i re = _mm512_or_si512(_mm512_xor_si512(d, _mm512_slli_epi64(d, 1)), one);
        __m512i ae = _mm512_or_si512(_mm512_xor_si512(v, _mm512_slli_epi64(v, 1)), one);
        /* Operand bytes: (63 - leading zeros) / 8 + 1. */
        __m512i rb = _mm512_srli_epi64(_mm512_sub_epi64(top, _mm512_lzcnt_epi64(re)), 3);
        __m512i ab = _mm512_srli_epi64(_mm512_sub_epi64(top, _mm512_lzcnt_epi64(ae)), 3);
        __mmask8 absolute = _mm512_cmplt_epu64_mask(ab, rb);
        __m512i bytes = _mm512_min_epu64(ab, rb);
        __m512i x = _mm512_mask_mov_epi64(d, absolute, v);
        /* The operand's bytes to the top of the lane, then first. */
        x = _mm512_sllv_epi64(x, _mm512_sub_epi64(wb, _mm512_slli_epi64(bytes, 3)));
        x = _mm512_shuffle_epi8(x, rev);
        __m512i op = _mm512_add_epi64(op_base, bytes);
        op = _mm512_mask_or_epi64(op, absolute, op, abs_bit);
        /* Bytes kept of slot j: positions 0 .. bytes_j (opcode and
         * operand), of the frames the step has. */
        __m512i kept = _mm512_maskz_add_epi64(m, bytes, one); /* 0: a lane past the end */
        __mmask64 k_lo = _mm512_cmplt_epu8_mask(byte_pos, _mm512_permutexvar_epi8(len_lo, kept));
        __mmask64 k_hi = _mm512_cmplt_epu8_mask(byte_pos, _mm512_permutexvar_epi8(len_hi, kept));
        __m512i lo = _mm512_maskz_compress_epi8(k_lo, _mm512_permutex2var_epi8(op, slot_lo, x));
        __m512i hi = _mm512_maskz_compress_epi8(k_hi, _mm512_permutex2var_epi8(op, slot_hi, x));
        unsigned n_lo = (unsigned)_mm_popcnt_u64(k_lo), n_hi = (unsigned)_mm_popcnt_u64(k_hi);
        /* Whole registers where the buffer has room for them (the bytes
         * past the instructions are overwritten or lie past the stream,
         * as the scalar writes' do); else under a mask, which measured
         * slower. */
        if (room_end - p >= 64)
            _mm512_storeu_si512(p, lo);
        else
            _mm512_mask_storeu_epi8(p, _bzhi_u64(~(uint64_t)0, n_lo), lo);
        p += n_lo;
        if (room_end - p >= 64)
            _mm512_storeu_si512(p, hi);
        else
            _mm512_mask_storeu_epi8(p, _bzhi_u64(~(uint64_t)0, n_hi), hi);
        p += n_hi;
        prev = v;
        i += left >= 8 ? 8 : left;
    }
    *pp = p;
    return i;
}
#undef CBF_AVX512_TARGET
#endif

/*
 * The first address of a stream, written by put_address after a previous
 * address of 0: the delta is then the address itself, so the relative
 * instruction has the absolute one's operand and differs only in the `a`
 * bit, which this sets (spec/cbf.md: the first address is absolute),
 * except in Swift mode, which writes it relative.
 */
static inline void first_absolute(uint8_t *instr, unsigned flags)
{
    if (!(flags & BTP_CBF_ENC_SWIFT))
        *instr |= CBF_OP_ABSOLUTE;
}

/*
 * The one-shot encoder's fast path through the encoder: frames that are
 * plain addresses and runs of them (see put_addresses), while the buffer
 * has room for the longest instruction. Returns how many frames it took;
 * anything else (omit, invalid frames, a nearly full buffer) is left to
 * add().
 */
static BTP_ALWAYS_INLINE size_t add_fast_w(btp_cbf_encoder *e, frame_src src, size_t i,
                                           size_t n, const int addrs, const unsigned word_bits)
{
    uint8_t *p = e->buf + e->len;
    uint8_t *const begin = p;
    uint8_t *const stop = e->buf + e->limit;
    /* Before the first address prev is 0, and a previous frame, if any,
     * is an omit; with no frame yet, a kind no address has, so nothing is
     * a repeat. */
    uint64_t prev = e->prev;
    unsigned last_kind = e->have_last ? (unsigned)e->last.kind : BTP_FRAME_OMIT;
    const size_t first = i;
    for (;;) {
        /* An instruction takes at most CBF_MAX_INSTR bytes, so with room
         * for m of them the next m frames need no check of room (and none
         * ever reaches the limit). */
        size_t m = (size_t)(stop - p) / CBF_MAX_INSTR;
        if (m > n - i)
            m = n - i;
        if (m == 0)
            break;
        const size_t chunk = i + m;
        i = put_addresses(&p, &prev, &last_kind, src, i, chunk, word_bits, addrs);
        if (i != chunk)
            break;
    }
    size_t taken = i - first;
    if (taken) {
        if (!e->seen_address)
            first_absolute(begin, e->flags);
        e->len += (size_t)(p - begin);
        e->needed += (size_t)(p - begin);
        e->prev = prev;
        e->last.value = prev;
        e->last.kind = (btp_frame_kind)last_kind;
        e->have_last = 1;
        e->seen_address = 1;
    }
    return taken;
}

static btp_status encode_rest(frame_src src, int addrs, size_t i, size_t n, int truncated,
                              unsigned word_bits, unsigned flags, uint8_t *buf, uint8_t *p,
                              size_t cap, size_t *len_out, size_t *needed_out);

/*
 * btp_cbf_encode for the usual call, a buffer of at least BTP_CBF_BOUND(n)
 * bytes: no instruction can reach its end, so there is no encoder struct
 * at all, only registers. Writes the information byte and the leading
 * address frames of src's n frames (runs of repeats as one rep each, as
 * add() writes them), then the terminator; at an omit, an invalid frame, a
 * value too wide or a run that may need more than one rep it hands over to
 * encode_rest. A loop of its own rather than put_addresses' (which the
 * streaming encoder and capture share): the frame before's kind selects
 * the shapes once per change of kind, not once a frame, and the usual
 * frame takes put_address_fast (on 32-bit words one compare of the value
 * instead of its sign edge and a test of its width). Same choices and
 * bytes as add().
 */
static BTP_ALWAYS_INLINE btp_status encode_whole_w(frame_src src, size_t n, int truncated,
                                                   unsigned flags, uint8_t *buf, size_t cap,
                                                   size_t *len_out, size_t *needed_out,
                                                   const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    uint8_t *p = buf;
    *p++ = cbf_info_byte(word_bits);
    size_t i = 0;
    if (n) {
        /* No frame before the first: prev 0 and a kind other than the
         * first frame's (whatever that holds), so the first frame takes
         * the slow branch, which sets shapes. After it last_kind is always
         * an address's. */
        const btp_frame *q = src.frames, *const end = q + n;
        uint64_t prev = 0;
        unsigned last_kind = (unsigned)q->kind + 1;
        const cbf_shapes *shapes = cbf_kind_shapes;
        do {
            uint64_t v = q->value, d = word_delta(v, prev, word_bits);
            unsigned kind = (unsigned)q->kind;
            /* Rare: a change of kind (the first frame, a return address
             * after the pc), a delta of 0 (a repeat, the same address of
             * another kind, or on narrower words a value too wide). */
            if (kind != last_kind || is_zero(d, word_bits)) {
                if (kind > BTP_FRAME_ASYNC || v > mask)
                    break; /* an omit, an invalid frame or a value too wide: add() */
                if (kind == last_kind && v == prev) {
                    /* A run of repeats from q on: one rep, as add() writes
                     * it; a run that reaches the end or needs several
                     * reps goes to add(). */
                    size_t r = 1, left = (size_t)(end - q);
                    while (r < left && q[r].value == prev && (unsigned)q[r].kind == kind)
                        r++;
                    if (r == left || r >= mask)
                        break;
                    p = put_rep(p, r);
                    q += r - 1; /* the loop's step takes it past the run */
                    continue;
                }
                if (kind != last_kind) {
                    shapes = &cbf_kind_shapes[kind];
                    last_kind = kind;
                }
                p = put_address(p, v, d, shapes, 0, word_bits);
            } else if (!put_address_fast(&p, v, d, shapes, word_bits)) {
                if (v > mask)
                    break;
                p = put_address(p, v, d, shapes, 1, word_bits);
            }
            prev = v;
        } while (++q != end);
        i = (size_t)(q - src.frames);
        if (i)
            first_absolute(buf + 1, flags);
    }
    if (i < n)
        return encode_rest(src, 0, i, n, truncated, word_bits, flags, buf, p, cap, len_out,
                           needed_out);
    *p++ = truncated ? CBF_OP_TRUNC : CBF_OP_END;
    if (len_out)
        *len_out = (size_t)(p - buf);
    if (needed_out)
        *needed_out = (size_t)(p - buf);
    return BTP_OK;
}

/*
 * btp_cbf_encode_addrs for the usual call (a buffer of at least
 * BTP_CBF_BOUND(n) bytes): put_addresses' loop for an address array, on
 * its own and unrolled by two, so that its state stays in registers
 * (inside put_addresses, with the state it shares with add_fast, the end
 * of the array went to the stack) and the call costs few instructions
 * beyond the frames' (the traces are short: 15 frames on average in a
 * 32-bit corpus). Same choices and bytes as put_addresses;
 * the same hand-over to encode_rest at anything else (a first address of
 * 0, a run that reaches the end or needs several reps, a value too wide
 * for the word, found frame by frame as the loop goes).
 */
static BTP_ALWAYS_INLINE btp_status encode_addrs_w(const uint64_t *a, size_t n, unsigned kind,
                                                   int truncated, unsigned flags, uint8_t *buf,
                                                   size_t cap, size_t *len_out,
                                                   size_t *needed_out, const unsigned word_bits)
{
    const uint64_t mask = btp_word_mask(word_bits);
    const cbf_shapes *shapes = &cbf_kind_shapes[kind];
    frame_src src = {NULL, a, kind};
    uint8_t *p = buf;
    *p++ = cbf_info_byte(word_bits);
    size_t i = 0;
    /* A first address of 0 equals the starting prev, with no frame before
     * it: add() takes it. */
    if (n && a[0] != 0 && a[0] <= mask) {
        /* Frames by a negative index k from the end, which the loop's step
         * tests for 0 (no compare). */
        const uint64_t *const end = a + n;
        /* The table's address in one register (else it is rebuilt from
         * the table and the kind's offset a frame). */
        BTP_OPAQUE(shapes);
        /* The loop takes two frames a step. With an odd number of frames
         * the first goes on its own first; with an even number it is
         * written on its own all the same and then again by the loop, over
         * the same bytes, as the first of a pair: so that which happens
         * is picked by masks, not by a branch on the parity of the depth,
         * which went either way from trace to trace. (A first address of
         * 0, or too wide for the word, is add()'s.) */
        uint64_t prev;
        ptrdiff_t k;
#if CBF_AVX512
        size_t done =
            word_bits == 64 && cbf_avx512() ? encode_addrs_avx512(a, n, kind, &p, buf + cap) : 0;
        if (done) {
            /* The scalar loop goes on where the vector steps stopped. */
            prev = a[done - 1];
            k = (ptrdiff_t)done - (ptrdiff_t)n;
        } else
#endif
        {
            const uint64_t odd = 0 - (uint64_t)(n & 1); /* all ones when odd */
            uint8_t *const p1 = put_address(p, a[0], a[0], shapes, 1, word_bits);
            prev = a[0] & odd;
            p += (size_t)(p1 - p) & odd;
            k = (ptrdiff_t)(n & 1) - (ptrdiff_t)n;
        }
        /* A delta of 0 is a repeat (`run` makes sure: where the word is
         * narrower than 64 bits a value too wide for it may have the
         * delta 0 too); a frame that put_address_fast leaves goes to
         * `careful`. Both are rare. */
        while (k != 0) {
            /* An odd number of frames left (after `careful` or `run`): one
             * on its own, so that the rest go two a step, where prev needs
             * no copy (each frame's value is the next one's prev) and one
             * test of k serves two frames. */
            if (k & 1) {
#if CBF_SSE2
            one:;
#endif
                uint64_t v = end[k], d = word_delta(v, prev, word_bits);
                if (is_zero(d, word_bits))
                    goto run;
                if (!put_address_fast(&p, v, d, shapes, word_bits))
                    goto careful;
                prev = v;
                if (++k == 0)
                    break;
#if CBF_SSE2
                if (k & 1) /* came from a pair out of range: its second frame */
                    continue;
#endif
            }
#if CBF_SSE2
            if (word_bits == 32) {
                /* Both frames of a step in range by one test (else the
                 * first goes on its own, with its own test, and so does the
                 * next to keep the pairs: k is even there, so `one` comes
                 * back for the second). */
                /* By a pointer, which the vector load and the two
                 * values share (with k as well, the compiler kept both
                 * and a copy), and prev in 32 bits: in range, the values
                 * are their low halves. k and prev are set again only
                 * where the loop leaves. */
                const uint64_t *q = end + k;
                uint32_t pv = (uint32_t)prev;
                do {
                    if (!pair_in_range32(q)) {
                        k = q - end;
                        prev = pv;
                        goto one;
                    }
                    uint32_t v0 = (uint32_t)q[0], d0 = v0 - pv;
                    if (d0 == 0) {
                        k = q - end;
                        prev = pv;
                        goto run;
                    }
                    p = put_address_in_range32(p, d0, shapes);
                    uint32_t v1 = (uint32_t)q[1], d1 = v1 - v0;
                    if (d1 == 0) {
                        k = q + 1 - end;
                        prev = v0;
                        goto run;
                    }
                    p = put_address_in_range32(p, d1, shapes);
                    pv = v1;
                    q += 2;
                } while (q != end);
                k = 0;
                break;
            }
#endif
            do {
                uint64_t v0 = end[k], d0 = word_delta(v0, prev, word_bits);
                if (is_zero(d0, word_bits))
                    goto run;
                if (!put_address_fast(&p, v0, d0, shapes, word_bits))
                    goto careful;
                uint64_t v1 = end[k + 1], d1 = word_delta(v1, v0, word_bits);
                prev = v0;
                k++;
                if (is_zero(d1, word_bits))
                    goto run;
                if (!put_address_fast(&p, v1, d1, shapes, word_bits))
                    goto careful;
                prev = v1;
                k++;
            } while (k != 0);
            break;
        careful:;
            /* The exact choice, or add() for a value too wide. */
            uint64_t v = end[k];
            if (v > mask)
                break;
            p = put_address(p, v, word_delta(v, prev, word_bits), shapes, 1, word_bits);
            prev = v;
            if (++k == 0)
                break;
            continue;
        run:;
            /* A run of repeats of prev from end[k] on (never the first
             * frame): one rep, as in put_addresses. */
            if (end[k] != prev)
                break; /* too wide for the word: add() reports it */
            ptrdiff_t r = k + 1;
            while (r != 0 && end[r] == prev)
                r++;
            if (r == 0 || (uint64_t)(r - k) >= mask)
                break;
            p = put_rep(p, (uint64_t)(r - k));
            k = r;
        }
        i = (size_t)((ptrdiff_t)n + k);
        if (i)
            first_absolute(buf + 1, flags);
    }
    if (i < n)
        return encode_rest(src, 1, i, n, truncated, word_bits, flags, buf, p, cap, len_out,
                           needed_out);
    *p++ = truncated ? CBF_OP_TRUNC : CBF_OP_END;
    size_t len = (size_t)(p - buf);
    if (len_out)
        *len_out = len;
    if (needed_out)
        *needed_out = len;
    return BTP_OK;
}

static size_t add_fast(btp_cbf_encoder *e, frame_src src, int addrs, size_t i, size_t n)
{
    if (e->closed || e->pending || e->finished)
        return 0;
    return addrs ? CBF_BY_WORD_BITS(e->word_bits, add_fast_w, e, src, i, n, 1)
                 : CBF_BY_WORD_BITS(e->word_bits, add_fast_w, e, src, i, n, 0);
}
#endif

/*
 * btp_cbf_encode's general path, through the encoder: frames[i..n) after
 * the first i, which encode_whole wrote up to p (i == 0: nothing written).
 * Kept out of line so that the usual call does not pay for setting up an
 * encoder it does not use.
 */
static BTP_NOINLINE btp_status encode_rest(frame_src src, int addrs, size_t i, size_t n,
                                           int truncated, unsigned word_bits, unsigned flags,
                                           uint8_t *buf, uint8_t *p, size_t cap,
                                           size_t *len_out, size_t *needed_out)
{
    btp_cbf_encoder enc;
    if (len_out)
        *len_out = 0;
    if (needed_out)
        *needed_out = 0;
    if (n && (addrs ? !src.addrs : !src.frames))
        return BTP_E_INVALID_ARGUMENT;
    if (addrs && (src.kind > BTP_FRAME_ASYNC))
        return BTP_E_INVALID_ARGUMENT;
    btp_status st = init(&enc, buf, cap, word_bits, flags);
    if (st != BTP_OK)
        return st;
    if (i) {
        /* Go on in the state encode_whole left (init wrote the same
         * information byte again). */
        enc.len = enc.needed = (size_t)(p - buf);
        enc.last = src_frame(src, i - 1, addrs);
        enc.prev = enc.last.value;
        enc.have_last = 1;
        enc.seen_address = 1;
    }
    for (; i < n; i++) {
#if !BTP_CODEC_SMALL
        i += add_fast(&enc, src, addrs, i, n);
        if (i == n)
            break;
#endif
        st = add(&enc, src_frame(src, i, addrs), 1);
        if (st == BTP_E_BUFFER_TOO_SMALL)
            continue; /* closed with trunc; keep counting the size needed */
        if (st != BTP_OK)
            return st;
    }
    st = finish(&enc, truncated, len_out);
    if (needed_out)
        *needed_out = enc.needed;
    return st;
}

btp_status btp_cbf_encode(const btp_frame *frames, size_t n, int truncated, unsigned word_bits,
                          unsigned flags, void *buf, size_t cap, size_t *len_out,
                          size_t *needed_out)
{
    frame_src src = {frames, NULL, 0};
#if !BTP_CODEC_SMALL
    /* frames NULL (allowed with n == 0) goes the general way: frames + n
     * would be arithmetic on a null pointer. */
    if (buf && frames && btp_word_bits_valid(word_bits) && n <= (SIZE_MAX - 2) / 9 &&
        cap >= BTP_CBF_BOUND(n))
        return CBF_BY_WORD_BITS(word_bits, encode_whole_w, src, n, truncated, flags, buf, cap,
                                len_out, needed_out);
#endif
    return encode_rest(src, 0, 0, n, truncated, word_bits, flags, buf, buf, cap, len_out,
                       needed_out);
}

#if !BTP_CODEC_SMALL
btp_status btp_cbf_encode_bounded(const btp_frame *frames, size_t n, void *buf, size_t *len_out)
{
    frame_src src = {frames, NULL, 0};
    return encode_whole_w(src, n, 0, BTP_CBF_ENC_TRUNCATE_ON_FULL, buf, BTP_CBF_BOUND(n), len_out,
                          NULL, (unsigned)(8 * sizeof(void *)));
}
#endif

btp_status btp_cbf_encode_addrs(const uint64_t *addrs, size_t n, btp_frame_kind kind,
                                int truncated, unsigned word_bits, unsigned flags, void *buf,
                                size_t cap, size_t *len_out, size_t *needed_out)
{
    frame_src src = {NULL, addrs, (unsigned)kind};
#if !BTP_CODEC_SMALL
    /* The word size checked by the dispatch itself (anything else goes
     * the general way, which reports it): on short traces a separate test
     * of it was a noticeable part of the call. */
    if (buf && addrs && (unsigned)kind <= BTP_FRAME_ASYNC && n <= (SIZE_MAX - 2) / 9 &&
        cap >= BTP_CBF_BOUND(n)) {
        if (word_bits == 32)
            return encode_addrs_w(addrs, n, (unsigned)kind, truncated, flags, buf, cap, len_out,
                                  needed_out, 32);
        if (word_bits == 64)
            return encode_addrs_w(addrs, n, (unsigned)kind, truncated, flags, buf, cap, len_out,
                                  needed_out, 64);
        if (word_bits == 16)
            return encode_addrs_w(addrs, n, (unsigned)kind, truncated, flags, buf, cap, len_out,
                                  needed_out, 16);
    }
#endif
    return encode_rest(src, 1, 0, n, truncated, word_bits, flags, buf, buf, cap, len_out,
                       needed_out);
}
